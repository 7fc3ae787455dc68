from __future__ import annotations

from types import SimpleNamespace

import pytest

import envharness
from envharness import BridgeError, UnknownBridgeError, UnknownTaskError
from envharness.bridges import registry
from envharness.testing import FakeEnv


@pytest.fixture(autouse=True)
def clean_registry(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTERED", {})


def test_builtin_bridges_are_listed_and_load():
    assert "toy24" in envharness.list_bridges()
    env = envharness.load_bridge("toy24", task_id="3-3-8-8")
    assert env.bridge_name == "toy24" and env.task_id == "3-3-8-8"
    assert len(envharness.list_tasks("toy24", split="all")) == 1362


def test_unknown_bridge_lists_the_registered_ones():
    with pytest.raises(UnknownBridgeError, match="no bridge named 'nope'.*toy24.*entry-point"):
        envharness.load_bridge("nope", task_id="x")
    with pytest.raises(UnknownBridgeError):
        envharness.list_tasks("nope")


def test_unknown_task_and_split_are_bridge_errors():
    with pytest.raises(UnknownTaskError):
        envharness.load_bridge("toy24", task_id="1-1-1-1")
    with pytest.raises(UnknownTaskError, match="split"):
        envharness.list_tasks("toy24", split="validation")


def test_register_a_class_and_a_path():
    envharness.register("fake", FakeEnv)
    assert isinstance(envharness.load_bridge("fake", task_id="t"), FakeEnv)
    envharness.register("fake-path", "envharness.testing:FakeEnv")
    assert envharness.get_bridge("fake-path") is FakeEnv
    assert {"fake", "fake-path"} <= set(envharness.list_bridges())


@pytest.mark.parametrize(
    ("name", "bridge", "match"),
    [
        ("", FakeEnv, "non-empty bridge name"),
        ("x", object, "ActionableEnv subclass"),
        ("x", "no_colon_path", "ActionableEnv subclass"),
    ],
)
def test_register_checks_its_arguments(name, bridge, match):
    with pytest.raises(BridgeError, match=match):
        envharness.register(name, bridge)


def test_bad_paths_are_reported():
    envharness.register("missing-attr", "envharness.testing:NoSuchEnv")
    with pytest.raises(BridgeError, match="has no attribute 'NoSuchEnv'"):
        envharness.get_bridge("missing-attr")
    envharness.register("not-env", "envharness.core:Action")
    with pytest.raises(BridgeError, match="not an ActionableEnv subclass"):
        envharness.get_bridge("not-env")


def test_entry_point_bridges(monkeypatch):
    point = SimpleNamespace(name="from-plugin", value="envharness.testing:FakeEnv")

    def fake_entry_points(group):
        assert group == "envharness.bridges"
        return [point]

    monkeypatch.setattr(registry, "entry_points", fake_entry_points)
    assert "from-plugin" in envharness.list_bridges()
    assert envharness.get_bridge("from-plugin") is FakeEnv
