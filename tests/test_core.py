from __future__ import annotations

import json

import pytest

from envharness import (
    Action,
    ActionableEnv,
    BridgeError,
    Evaluation,
    InvalidActionError,
    StepResult,
    ToolSpec,
)

ACT = ToolSpec(
    "act",
    "Run a text command.",
    {
        "type": "object",
        "properties": {"command": {"type": "string", "description": "The command."}},
        "required": ["command"],
    },
)


def test_action_is_frozen_hashable_and_round_trips():
    action = Action("combine", {"a": "4", "op": "*", "b": "6"})
    with pytest.raises(AttributeError):
        action.tool = "undo"
    assert Action.from_dict(action.to_dict()) == action
    same = Action("combine", {"b": "6", "op": "*", "a": "4"})
    assert hash(same) == hash(action) and same.key() == action.key()
    assert len({action, same, Action("undo")}) == 2
    assert str(action) == "combine(a='4', op='*', b='6')"


def test_action_args_are_copied():
    args = {"command": "look"}
    action = Action("act", args)
    args["command"] = "go north"
    assert action.args == {"command": "look"}


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"args": {}}, "expected {'tool'"),
        ("act look", "expected {'tool'"),
        ({"tool": "act", "args": {}, "extra": 1}, "unexpected keys \\['extra'\\]"),
        ({"tool": "", "args": {}}, "non-empty tool name"),
        ({"tool": "act", "args": ["look"]}, "expected args to be a dict"),
    ],
)
def test_action_from_bad_dicts(data, match):
    with pytest.raises(InvalidActionError, match=match):
        Action.from_dict(data)


def test_toolspec_exports():
    openai = ACT.to_openai()
    assert openai == {
        "type": "function",
        "function": {
            "name": "act",
            "description": "Run a text command.",
            "parameters": ACT.parameters,
        },
    }
    openai["function"]["parameters"]["properties"].clear()
    assert ACT.parameters["properties"], "exports must be copies"
    assert ToolSpec.from_dict(ACT.to_dict()) == ACT
    lc = ACT.to_langchain()
    assert lc["title"] == "act" and lc["properties"]["command"]["type"] == "string"


def test_to_langchain_converts_to_the_same_function_declaration():
    convert = pytest.importorskip("langchain_core.utils.function_calling").convert_to_openai_tool
    assert convert(ACT.to_langchain()) == ACT.to_openai()


@pytest.mark.parametrize(
    ("name", "parameters", "match"),
    [
        ("bad name", {"type": "object", "properties": {}}, "expected a tool name"),
        ("t", {"type": "array", "items": {"type": "string"}}, "expected type 'object'"),
        ("t", {"type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}}, "'\\$ref'"),
        ("t", {"type": "object", "properties": {"x": {"anyOf": []}}}, "'anyOf'"),
        ("t", {"type": "object", "properties": {"x": {"type": ["string", "null"]}}}, "x: expected"),
        ("t", {"type": "object", "properties": {"x": {"type": "array"}}}, "must declare 'items'"),
        ("t", {"type": "object", "properties": {}, "required": ["x"]}, "'required' must list"),
    ],
)
def test_toolspec_rejects_schemas_outside_the_gemini_subset(name, parameters, match):
    with pytest.raises(BridgeError, match=match):
        ToolSpec(name, "d", parameters)


def test_step_result_unpacks_and_reads_by_name():
    result = StepResult("obs", 1.0, True, False, {"k": 1})
    observation, reward, terminated, truncated, info = result
    assert (observation, reward, terminated, truncated, info) == ("obs", 1.0, True, False, {"k": 1})
    assert result.reward == 1.0 and result._replace(reward=0.0).reward == 0.0


def test_evaluation_round_trip():
    evaluation = Evaluation(True, 1.0, {"steps": 3})
    assert Evaluation.from_dict(json.loads(json.dumps(evaluation.to_dict()))) == evaluation


def test_actionable_env_is_abstract():
    with pytest.raises(TypeError, match="abstract"):
        ActionableEnv()


def test_check_action_names_the_problem(toy_env):
    with pytest.raises(InvalidActionError, match="unknown tool; available tools: combine, undo"):
        toy_env.check_action({"tool": "fly", "args": {}})
    with pytest.raises(InvalidActionError, match="missing required argument 'op'"):
        toy_env.check_action(Action("combine", {"a": "1", "b": "2"}))
    with pytest.raises(InvalidActionError, match="args.op: expected one of"):
        toy_env.check_action(Action("combine", {"a": "1", "op": "^", "b": "2"}))
    with pytest.raises(InvalidActionError, match="unexpected argument 'c'"):
        toy_env.check_action(Action("undo", {"c": 1}))
    assert toy_env.check_action({"tool": "undo", "args": {}}) == Action("undo")


def test_default_capabilities(toy_env):
    class Bare(type(toy_env)):
        oracle_actions = ActionableEnv.oracle_actions
        stage_candidates = ActionableEnv.stage_candidates
        mark_episode_start = ActionableEnv.mark_episode_start

    bare = Bare("4-4-10-10")
    with pytest.raises(BridgeError, match="offers no oracle"):
        bare.oracle_actions()
    assert bare.stage_candidates() == []
    bare.reset()
    bare.step(Action("combine", {"a": "4", "op": "+", "b": "4"}))
    assert bare.mark_episode_start() is None  # the default changes nothing
    assert bare.get_env_state()["steps"] == 1
    with bare as entered:
        assert entered is bare


@pytest.fixture
def toy_env():
    from envharness import load_bridge

    return load_bridge("toy24", task_id="4-4-10-10")


def test_task_fingerprint_defaults_to_none_and_stacks_report_their_bridges(toy_env):
    from envharness.harness import Setups

    class Bare(type(toy_env)):
        task_fingerprint = ActionableEnv.task_fingerprint

    bare = Bare("4-4-10-10")
    assert bare.task_fingerprint() is None  # "this bridge cannot say"
    assert Setups(bare, []).task_fingerprint() is None
    fingerprint = toy_env.task_fingerprint()
    assert isinstance(fingerprint, str) and len(fingerprint) == 64
    assert Setups(Setups(toy_env, []), []).task_fingerprint() == fingerprint
