from __future__ import annotations

import re
from pathlib import Path

import pytest

from envharness import BridgeError, UnknownTaskError
from envharness.bridgekit import checks
from envharness.bridgekit.checks import (
    check_nothing_recorded,
    check_options,
    check_path,
    check_positive_int,
    check_saved_state,
    check_split,
    state_error,
)

_KEYS = ("bridge", "task_id", "options", "started", "actions")
_OPTIONS = ("cache_dir", "max_steps")


def _saved(**changes):
    state = {
        "bridge": "demo",
        "task_id": "t1",
        "options": {"max_steps": 5},
        "started": True,
        "actions": [],
    }
    state.update(changes)
    return state


def test_every_public_name_imports():
    for name in checks.__all__:
        assert callable(getattr(checks, name)), name


# -- check_options --------------------------------------------------------------------------------


@pytest.mark.parametrize("options", [{}, {"max_steps": 3}, {"cache_dir": "/c", "max_steps": 3}])
def test_check_options_accepts_known_options(options):
    assert check_options(options, _OPTIONS, bridge="demo") is None


def test_check_options_accepts_names_as_well_as_a_mapping():
    check_options(["max_steps"], _OPTIONS, bridge="demo")
    with pytest.raises(BridgeError, match=r"unknown option\(s\) \['seed'\]"):
        check_options(["seed"], _OPTIONS, bridge="demo")


def test_check_options_names_the_unknown_options_and_the_valid_ones():
    with pytest.raises(BridgeError) as info:
        check_options({"seed": 1, "level": 2, "max_steps": 3}, _OPTIONS, bridge="demo")
    assert str(info.value) == (
        "[demo] unknown option(s) ['level', 'seed']; valid options: cache_dir, max_steps"
    )
    assert info.value.bridge == "demo"
    assert not isinstance(info.value, UnknownTaskError)


def test_check_options_names_the_call():
    with pytest.raises(
        BridgeError,
        match=re.escape("unknown option(s) ['seed'] for list_tasks; valid options: max_steps"),
    ):
        check_options({"seed": 1}, ("max_steps",), bridge="demo", where="list_tasks")


def test_check_options_with_no_valid_options():
    check_options({}, (), bridge="demo")
    with pytest.raises(BridgeError, match=r"unknown option\(s\) \['seed'\]; valid options: $"):
        check_options({"seed": 1}, (), bridge="demo")


# -- check_split ----------------------------------------------------------------------------------


@pytest.mark.parametrize("split", ["train", "test", "all"])
def test_check_split_returns_a_valid_split(split):
    assert check_split(split, ("train", "test", "all"), bridge="demo") == split


def test_check_split_takes_a_mapping_of_splits():
    splits = {"train": range(3), "test": range(3, 5)}
    assert check_split("test", splits, bridge="demo") == "test"
    with pytest.raises(UnknownTaskError, match="valid splits: train, test$"):
        check_split("all", splits, bridge="demo")


@pytest.mark.parametrize("split", ["dev", "", "TRAIN", None, 3, ["train"]])
def test_check_split_names_the_split_and_the_valid_ones(split):
    with pytest.raises(UnknownTaskError) as info:
        check_split(split, ("train", "test", "all"), bridge="demo")
    assert str(info.value) == (f"[demo] unknown split {split!r}; valid splits: train, test, all")
    assert info.value.bridge == "demo" and info.value.task_id is None


def test_check_split_adds_the_note():
    with pytest.raises(
        UnknownTaskError,
        match=re.escape("unknown split 'dev'; valid splits: train, test ('test' is valid_unseen)"),
    ):
        check_split("dev", ("train", "test"), bridge="demo", note="'test' is valid_unseen")


# -- check_positive_int and check_path --------------------------------------------------------


@pytest.mark.parametrize("value", [1, 20, 10**9])
def test_check_positive_int_returns_the_value(value):
    assert check_positive_int("max_steps", value, bridge="demo") == value


@pytest.mark.parametrize("value", [0, -1, True, False, 2.0, "3", None])
def test_check_positive_int_names_the_option_and_the_value(value):
    expected = f"[demo] max_steps: expected a positive int, got {value!r}"
    with pytest.raises(BridgeError) as info:
        check_positive_int("max_steps", value, bridge="demo")
    assert str(info.value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, None), ("~/cache", "~/cache"), (Path("/tmp/cache"), "/tmp/cache")],
)
def test_check_path_returns_a_str_as_given(value, expected):
    assert check_path("cache_dir", value, bridge="demo") == expected


@pytest.mark.parametrize(("value", "kind"), [(3, "int"), (["/tmp"], "list"), (b"/tmp", "bytes")])
def test_check_path_names_the_option_and_the_type(value, kind):
    with pytest.raises(BridgeError) as info:
        check_path("cache_dir", value, bridge="demo")
    assert str(info.value) == f"[demo] cache_dir: expected a path, got {kind}"


# -- saved states ---------------------------------------------------------------------------------


def test_state_error_names_the_env_or_says_saved():
    error = state_error("'steps' must be an int", bridge="demo", env_name="DemoEnv")
    assert isinstance(error, BridgeError) and error.bridge == "demo"
    assert str(error) == "[demo] malformed DemoEnv state: 'steps' must be an int"
    assert str(state_error("bad", bridge="demo")) == "[demo] malformed saved state: bad"


def test_check_saved_state_returns_the_state():
    state = _saved()
    assert check_saved_state(state, bridge="demo", keys=_KEYS, options=_OPTIONS) is state
    assert check_saved_state(_saved(options={}), bridge="demo", keys=_KEYS) is not None


def test_check_saved_state_allows_any_options_when_not_given():
    state = _saved(options={"anything": 1})
    assert check_saved_state(state, bridge="demo", keys=_KEYS) is state


def test_check_saved_state_requires_bridge_and_options_even_when_not_listed():
    with pytest.raises(BridgeError, match=re.escape("missing key(s) ['options']")):
        check_saved_state({"bridge": "demo", "task_id": "t1"}, bridge="demo", keys=("task_id",))
    with pytest.raises(BridgeError, match=re.escape("missing key(s) ['bridge']")):
        check_saved_state({"task_id": "t1", "options": {}}, bridge="demo", keys=("task_id",))


@pytest.mark.parametrize(
    ("state", "options", "problem"),
    [
        ([1, 2], _OPTIONS, "expected a dict, got list"),
        (None, _OPTIONS, "expected a dict, got NoneType"),
        (
            {"bridge": "demo"},
            _OPTIONS,
            "missing key(s) ['task_id', 'options', 'started', 'actions']",
        ),
        (
            {"bridge": "demo", "task_id": "t1", "options": {}, "started": False},
            _OPTIONS,
            "missing key(s) ['actions']",
        ),
        (_saved(bridge="toy24"), _OPTIONS, "'bridge' is 'toy24', expected 'demo'"),
        (
            _saved(options=["max_steps"]),
            _OPTIONS,
            "'options' must be a dict with keys from ('cache_dir', 'max_steps'), got ['max_steps']",
        ),
        (
            _saved(options={"max_steps": 5, "seed": 1}),
            _OPTIONS,
            "'options' must be a dict with keys from ('cache_dir', 'max_steps'), got "
            "{'max_steps': 5, 'seed': 1}; unknown option(s) ['seed']",
        ),
        (
            _saved(options={"level": 2}),
            ("max_steps",),
            "'options' must be a dict with at most 'max_steps', got {'level': 2}; "
            "unknown option(s) ['level']",
        ),
        (
            _saved(options={"level": 2}),
            (),
            "'options' must be an empty dict, got {'level': 2}; unknown option(s) ['level']",
        ),
        (_saved(options="max_steps=5"), None, "'options' must be a dict, got 'max_steps=5'"),
    ],
)
def test_check_saved_state_names_the_problem(state, options, problem):
    with pytest.raises(BridgeError) as info:
        check_saved_state(state, bridge="demo", keys=_KEYS, options=options, env_name="DemoEnv")
    assert str(info.value) == f"[demo] malformed DemoEnv state: {problem}"
    assert info.value.bridge == "demo"


def test_check_saved_state_without_env_name_says_saved_state():
    with pytest.raises(BridgeError, match=r"^\[demo\] malformed saved state: 'bridge' is 'x'"):
        check_saved_state(_saved(bridge="x"), bridge="demo", keys=_KEYS)


def test_check_nothing_recorded_accepts_empty_records():
    state = {"actions": [], "steps": 0, "changes": {}, "observation": None}
    check_nothing_recorded(state, ("actions", "steps", "changes", "observation"), bridge="demo")


@pytest.mark.parametrize(
    ("state", "keys", "named"),
    [
        ({"actions": [{"tool": "undo"}]}, ("actions",), "actions"),
        ({"commands": ["look"], "steps": 0}, ("commands", "steps"), "commands or steps"),
        ({"changes": {}, "steps": 2}, ("changes", "steps"), "changes or steps"),
    ],
)
def test_check_nothing_recorded_names_the_keys(state, keys, named):
    with pytest.raises(BridgeError) as info:
        check_nothing_recorded(state, keys, bridge="demo", env_name="DemoEnv")
    assert str(info.value) == (
        f"[demo] malformed DemoEnv state: {named} were recorded but the episode has not started"
    )
