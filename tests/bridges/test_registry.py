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
    monkeypatch.setattr(registry, "_scanned", None)  # entry points are read again, then restored


def point(name, value, dist="some-plugin"):
    return SimpleNamespace(name=name, value=value, dist=SimpleNamespace(name=dist))


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


def test_entry_points_are_read_once_and_again_for_an_unknown_name(monkeypatch):
    calls = []
    points = [point("toy24", "envharness.bridges.toy24:Toy24Env", "envharness")]

    def counting_entry_points(group):
        calls.append(group)
        return list(points)

    monkeypatch.setattr(registry, "entry_points", counting_entry_points)
    for _ in range(3):
        envharness.get_bridge("toy24")
    assert len(calls) == 1
    points.append(point("late", "envharness.testing:FakeEnv"))  # installed while running
    assert envharness.get_bridge("late") is FakeEnv
    assert len(calls) == 2


def test_built_ins_come_only_from_entry_points(monkeypatch):
    monkeypatch.setattr(registry, "entry_points", lambda group: [])
    with pytest.raises(BridgeError, match="stale envharness.egg-info") as info:
        envharness.get_bridge("toy24")
    assert not isinstance(info.value, UnknownBridgeError)
    assert "none of envharness's built-in bridges is registered" in str(info.value)
    assert envharness.list_bridges() == []

    def not_installed(name):
        raise registry.PackageNotFoundError(name)

    monkeypatch.setattr(registry, "distribution", not_installed)
    with pytest.raises(BridgeError, match=r"metadata was not found\. Install the package"):
        envharness.load_bridge("toy24", task_id="3-3-8-8")
    envharness.register("toy24", "envharness.bridges.toy24:Toy24Env")  # run time still works
    assert envharness.load_bridge("toy24", task_id="3-3-8-8").task_id == "3-3-8-8"


def test_two_distributions_declaring_one_name_are_named(monkeypatch):
    points = [
        point("toy24", "envharness.bridges.toy24:Toy24Env", "envharness"),
        point("twin", "envharness.testing:FakeEnv", "plugin-a"),
        point("twin", "envharness.testing:FakeEnv", "plugin-a-again"),  # same class: no clash
        point("clash", "envharness.testing:FakeEnv", "plugin-a"),
        point("clash", "envharness.bridges.toy24:Toy24Env", "plugin-b"),
    ]
    monkeypatch.setattr(registry, "entry_points", lambda group: points)
    assert envharness.get_bridge("twin") is FakeEnv
    with pytest.raises(BridgeError, match=r"2 installed distributions declare") as info:
        envharness.get_bridge("clash")
    message = str(info.value)
    assert "envharness.testing:FakeEnv (from plugin-a)" in message
    assert "envharness.bridges.toy24:Toy24Env (from plugin-b)" in message
    assert "envharness.register('clash', 'module:Class')" in message
    envharness.register("clash", FakeEnv)  # the way out the message names
    assert envharness.get_bridge("clash") is FakeEnv
