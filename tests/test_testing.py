from __future__ import annotations

import json
import math

import pytest

import envharness
import envharness.testing
from envharness import (
    Action,
    BridgeError,
    ConformanceError,
    EpisodeError,
    Evaluation,
    InvalidActionError,
    StepResult,
    ToolSpec,
    UnknownTaskError,
    load_bridge,
)
from envharness.bridges import registry
from envharness.harness import Rules, Setups
from envharness.testing import CHECKS, ConformanceReport, FakeEnv, check_bridge

SAY_HELLO = Action("say", {"text": "hello"})


@pytest.fixture
def fake_registered():
    envharness.register("fake", FakeEnv)
    yield
    registry._REGISTERED.pop("fake", None)


def failures_of(excinfo: pytest.ExceptionInfo[ConformanceError]) -> list[str]:
    return excinfo.value.failures


def checks_failed(excinfo: pytest.ExceptionInfo[ConformanceError]) -> set[str]:
    return {f.split(":", 1)[0] for f in failures_of(excinfo)}


def test_every_public_name_imports():
    for name in envharness.testing.__all__:
        assert getattr(envharness.testing, name) is not None


# -- FakeEnv -------------------------------------------------------------------------------------


def test_fake_env_plays_to_success():
    env = FakeEnv(target="hello")
    observation, info = env.reset(seed=3)
    assert observation == "A quiet room. Say something." == env.observe()
    assert info == {"seed": 3}
    assert env.instruction == "Say the word 'hello'."
    result = env.step(Action("say", {"text": "hi"}))
    assert result == StepResult("You said 'hi'. Nothing happens.", 0.0, False, False, {})
    assert env.evaluate() == Evaluation(False, 0.0, {"target": "hello", "said": 1})
    result = env.step(SAY_HELLO)
    assert result.terminated and result.reward == 1.0
    assert env.evaluate().success
    assert env.get_env_state() == {"said": ["hi", "hello"], "steps": 2, "done": True}
    assert env.oracle_actions() == []


def test_fake_env_noop_and_empty_say():
    env = FakeEnv()
    env.reset()
    assert env.step(Action("noop")).observation == "You wait. Nothing happens."
    result = env.step(Action("say", {"text": "  "}))
    assert result.info == {"invalid_action": "nothing to say"}
    assert env.get_env_state() == {"said": [], "steps": 2, "done": False}


def test_fake_env_oracle_says_the_target():
    env = FakeEnv(target="xyzzy")
    env.reset()
    assert env.oracle_actions() == [Action("say", {"text": "xyzzy"})]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"task_id": ""}, "expected a non-empty str task_id, got ''"),
        ({"target": " "}, "expected a non-empty str target"),
        ({"max_steps": 0}, "expected a positive int max_steps, got 0"),
        ({"max_steps": True}, "expected a positive int max_steps, got True"),
        ({"instruction": 3}, "expected a str instruction, got int"),
    ],
)
def test_fake_env_checks_its_arguments(kwargs, match):
    with pytest.raises(BridgeError, match=match):
        FakeEnv(**kwargs)


def test_fake_env_episode_errors():
    env = FakeEnv()
    with pytest.raises(EpisodeError, match=r"call reset\(\) before step\(\)"):
        env.step(SAY_HELLO)
    with pytest.raises(EpisodeError, match=r"call reset\(\) before observe\(\)"):
        env.observe()
    env.reset()
    env.step(SAY_HELLO)
    with pytest.raises(EpisodeError, match="the episode has ended"):
        env.step(Action("noop"))
    env.close()
    env.close()
    assert env.closed
    with pytest.raises(EpisodeError, match="closed"):
        env.reset()
    with pytest.raises(EpisodeError, match="closed"):
        env.step(SAY_HELLO)


def test_fake_env_rejects_bad_actions():
    env = FakeEnv()
    env.reset()
    with pytest.raises(InvalidActionError, match="unknown tool"):
        env.step(Action("shout", {"text": "x"}))
    with pytest.raises(InvalidActionError, match="missing required argument 'text'"):
        env.step(Action("say"))


def test_fake_env_injected_callables():
    def step_fn(env, action):
        if action.tool == "noop":
            env.state["steps"] += 10
            return StepResult("custom", 0.5, False, False, {"custom": True})
        return None

    def reset_fn(env, seed):
        env.state["said"].append(f"seed {seed}")
        return f"custom start {seed}"

    env = FakeEnv(step_fn=step_fn, reset_fn=reset_fn)
    assert env.reset(seed=7)[0] == "custom start 7"
    assert env.get_env_state()["said"] == ["seed 7"]
    assert env.step(Action("noop")) == StepResult("custom", 0.5, False, False, {"custom": True})
    assert env.observe() == "custom"
    assert env.step(SAY_HELLO).terminated  # None falls through to the default
    assert env.get_env_state()["steps"] == 11


def test_fake_env_reset_fn_returning_none_keeps_the_default_observation():
    env = FakeEnv(reset_fn=lambda env, seed: None)
    assert env.reset()[0] == "A quiet room. Say something."


def test_fake_env_save_and_restore_round_trip():
    env = FakeEnv(target="w", max_steps=4, instruction="Say w.")
    env.reset()
    env.step(Action("say", {"text": "v"}))
    saved = json.loads(json.dumps(env.save_state()))
    clone = FakeEnv.from_state(saved)
    assert clone.get_env_state() == env.get_env_state()
    assert clone.observe() == env.observe()
    assert (clone.target, clone.max_steps, clone.instruction) == ("w", 4, "Say w.")
    assert clone.step(Action("say", {"text": "w"})) == env.step(Action("say", {"text": "w"}))


@pytest.mark.parametrize("state", [None, {"task_id": "fake"}])
def test_fake_env_from_state_rejects_other_data(state):
    with pytest.raises(BridgeError, match="expected a snapshot with keys"):
        FakeEnv.from_state(state)


def test_fake_env_list_tasks_and_schema():
    assert FakeEnv.list_tasks() == ["fake"]
    assert FakeEnv.list_tasks("test") == ["fake"]
    with pytest.raises(UnknownTaskError, match="no split 'dev'; splits: train, test"):
        FakeEnv.list_tasks("dev")
    schema = FakeEnv().env_state_schema()
    assert set(schema["properties"]) == {"said", "steps", "done"}


def test_fake_env_loads_by_name_once_registered(fake_registered):
    env = load_bridge("fake", task_id="any-task", target="yo")
    assert (env.task_id, env.target, env.bridge_name) == ("any-task", "yo", "fake")
    assert envharness.list_tasks("fake") == ["fake"]
    rebuilt = load_bridge("fake", task_id=env.task_id, **env.bridge_options())
    assert rebuilt.instruction == env.instruction


def test_fake_env_is_not_registered_at_import():
    assert "fake" not in registry._REGISTERED


# -- check_bridge: passing bridges -----------------------------------------------------------------


def test_check_bridge_passes_fake_env_with_the_oracle():
    report = check_bridge(FakeEnv)
    assert isinstance(report, ConformanceReport)
    assert report == ConformanceReport("fake", CHECKS, (SAY_HELLO,), 0)
    assert "passed 13 conformance checks" in str(report)
    assert "say(text='hello')" in str(report)


def test_check_bridge_plays_given_actions_and_stops_at_the_end():
    actions = [{"tool": "noop", "args": {}}, SAY_HELLO, Action("noop")]
    report = check_bridge(FakeEnv(), actions=actions, seed=None)
    assert report.actions == (Action("noop"), SAY_HELLO)
    assert report.seed is None


def test_check_bridge_with_no_actions():
    report = check_bridge(FakeEnv, actions=[])
    assert report.actions == ()
    assert "no actions" in str(report)


def test_check_bridge_synthesises_actions_without_an_oracle():
    class NoOracle(FakeEnv):
        def oracle_actions(self):
            raise BridgeError("no oracle", bridge="fake")

    report = check_bridge(NoOracle)
    say_1 = Action("say", {"text": "1"})
    assert report.actions == (say_1, Action("noop"), say_1, Action("noop"))


def test_check_bridge_synthesises_from_every_schema_type():
    pick = ToolSpec(
        "pick",
        "Pick things.",
        {
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "n": {"type": "integer"},
                "x": {"type": "number"},
                "flag": {"type": "boolean"},
                "items": {"type": "array", "items": {"type": "string"}},
                "where": {
                    "type": "object",
                    "properties": {"row": {"type": "integer"}, "note": {"type": "string"}},
                    "required": ["row"],
                },
                "optional": {"type": "string"},
            },
            "required": ["mode", "n", "x", "flag", "items", "where"],
        },
    )

    class Picker(FakeEnv):
        def tools(self):
            return [pick]

        def oracle_actions(self):
            return []  # unsolvable from here: fall back to synthesis

        def step(self, action):
            action = self.check_action(action)
            self.state["steps"] += 1
            self.observation = f"picked {action.args}"
            return StepResult(self.observation, 0.0, False, False, {})

    report = check_bridge(Picker)
    expected = Action(
        "pick",
        {"mode": "fast", "n": 1, "x": 1, "flag": True, "items": [], "where": {"row": 1}},
    )
    assert report.actions == (expected,) * 4


def test_check_bridge_passes_toy24_with_its_oracle():
    report = check_bridge(lambda: load_bridge("toy24", task_id="4-4-10-10"))
    assert report.bridge == "toy24"
    assert report.passed == CHECKS
    assert len(report.actions) == 3


def test_check_bridge_passes_a_harness_stack(fake_registered):
    first = {"tool": "say", "args": {"text": "warm-up"}}
    report = check_bridge(lambda: Setups(FakeEnv(), [first]))
    assert report.actions == (SAY_HELLO,)


RULES = """
class _Rules:
    def filter_action(self, action, state):
        if action["tool"] == "undo":
            return "Undo is disabled."
        return action

    def filter_observation(self, observation, state):
        return observation + " (rules on)"
"""


def test_check_bridge_passes_a_rules_stack():
    undo = {"tool": "undo", "args": {}}
    report = check_bridge(
        lambda: Rules(load_bridge("toy24", task_id="4-4-10-10"), RULES),
        actions=[undo, {"tool": "combine", "args": {"a": "10", "op": "*", "b": "10"}}, undo],
    )
    assert report.passed == CHECKS
    assert len(report.actions) == 3


def test_check_bridge_closes_every_env_it_builds():
    made: list[FakeEnv] = []

    class Tracked(FakeEnv):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    check_bridge(Tracked)
    assert len(made) > 1  # the factory's env plus the from_state copies
    assert all(env.closed for env in made)


def test_check_bridge_leaves_a_given_env_open_but_closes_its_copies():
    made: list[FakeEnv] = []

    class Tracked(FakeEnv):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    env = Tracked()
    check_bridge(env)
    assert not env.closed
    assert len(made) > 1
    assert all(copy.closed for copy in made[1:])


# -- check_bridge: failures ------------------------------------------------------------------------


def test_conformance_error_lists_every_failure():
    class Broken(FakeEnv):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.max_steps = 0

        def get_env_state(self):
            return self.state  # the live dict, not a copy

        def close(self):
            if self.closed:
                raise RuntimeError("already closed")
            super().close()

    with pytest.raises(ConformanceError, match=r"bridge 'fake' failed \d+ conformance check") as e:
        check_bridge(Broken)
    # from_state rebuilds through the constructor, which refuses max_steps=0
    assert checks_failed(e) == {"attributes", "env_state_copy", "save_state", "close"}
    assert "attributes: expected max_steps to be a positive int, got 0" in failures_of(e)
    assert any("raised RuntimeError: already closed" in f for f in failures_of(e))


def test_check_attribute_types():
    class BadAttributes(FakeEnv):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.instruction = None
            self.max_steps = 2.5

        def bridge_options(self):  # keeps save_state/from_state working
            return {"instruction": None, "max_steps": 10, "target": self.target}

    with pytest.raises(ConformanceError, match="expected instruction to be a str, got None") as e:
        check_bridge(BadAttributes)
    assert "attributes: expected max_steps to be a positive int, got 2.5" in failures_of(e)
    assert checks_failed(e) == {"attributes"}


def test_check_attribute_task_id():
    env = FakeEnv()
    env.task_id = ""
    with pytest.raises(ConformanceError, match="expected a non-empty task_id"):
        check_bridge(env)


def test_check_tools_duplicates_and_schemas():
    say = FakeEnv().tools()[0]
    loose = ToolSpec("loose", "", {"type": "object", "properties": {}})
    loose.parameters["properties"]["x"] = {"anyOf": [{"type": "string"}]}
    weird = ToolSpec("weird", "", {"type": "object", "properties": {}, "default": {1, 2}})

    class BadTools(FakeEnv):
        def tools(self):
            return [say, say, loose, weird, "noop"]

    with pytest.raises(ConformanceError) as e:
        check_bridge(BadTools, actions=[])
    failures = [f for f in failures_of(e) if f.startswith("tools:")]
    assert "tools: expected unique tool names, got duplicates ['say']" in failures
    assert any("keyword 'anyOf' is not allowed" in f for f in failures)
    assert any("expected weird.to_openai() to be JSON-able" in f for f in failures)
    assert "tools: expected ToolSpec items, got str" in failures


@pytest.mark.parametrize(
    ("tools", "match"),
    [
        ([], "tools: expected at least one tool, got an empty list"),
        ("say", "tools: expected tools\\(\\) to return a list, got str"),
    ],
)
def test_check_tools_shape(tools, match):
    class Shapeless(FakeEnv):
        def tools(self):
            return tools

        def step(self, action):
            raise InvalidActionError("no tools", tool=action.tool)

    with pytest.raises(ConformanceError, match=match):
        check_bridge(Shapeless, actions=[])


def test_one_check_raising_does_not_abort_the_others():
    class Exploding(FakeEnv):
        def tools(self):
            raise RuntimeError("boom")

        def evaluate(self):
            raise ValueError("no verdict")

    with pytest.raises(ConformanceError) as e:
        check_bridge(Exploding)
    failures = failures_of(e)
    assert "tools: tools() raised RuntimeError: boom" in failures
    assert "evaluate: after reset: raised ValueError: no verdict" in failures
    assert "evaluate: at the end: raised ValueError: no verdict" in failures
    assert {"tools", "evaluate", "step", "unknown_tool"} <= checks_failed(e)


def test_check_reset_shape():
    class BadReset(FakeEnv):
        def reset(self, *, seed=None):
            return super().reset(seed=seed)[0]

    with pytest.raises(
        ConformanceError, match=r"reset: expected reset\(\) to return \(str, dict\)"
    ):
        check_bridge(BadReset)


def test_check_reset_field_types():
    class BadResetTypes(FakeEnv):
        def reset(self, *, seed=None):
            super().reset(seed=seed)
            return 7, []

        def observe(self):
            return 7

    with pytest.raises(ConformanceError) as e:
        check_bridge(BadResetTypes)
    assert "reset: expected a str observation, got int" in failures_of(e)
    assert "reset: expected a dict info, got list" in failures_of(e)


def test_check_observe_after_reset_is_the_reset_observation():
    class Forgetful(FakeEnv):
        def observe(self):
            return "static"

    with pytest.raises(ConformanceError, match="observe: expected observe\\(\\) after reset"):
        check_bridge(Forgetful)


def test_check_observe_describes_the_state_without_changing_it():
    class Counting(FakeEnv):
        def observe(self):
            if self.state["steps"]:
                self.state["looks"] = self.state.get("looks", 0) + 1
                return f"looked {self.state['looks']} times"
            return super().observe()

    with pytest.raises(ConformanceError) as e:
        check_bridge(Counting)
    failures = failures_of(e)
    assert any("to describe the state the same way twice" in f for f in failures), failures
    assert any("to change nothing; get_env_state() went from" in f for f in failures), failures


def test_check_step_result_types():
    class SloppyStep(FakeEnv):
        def step(self, action):
            result = super().step(action)
            return StepResult(result.observation, math.nan, 1, None, None)

    with pytest.raises(ConformanceError) as e:
        check_bridge(SloppyStep, actions=[Action("noop")])
    failures = failures_of(e)
    where = "step: step 1 noop()"
    assert f"{where}: expected a finite float reward, got nan" in failures
    assert f"{where}: expected terminated to be a bool, got 1" in failures
    assert f"{where}: expected truncated to be a bool, got None" in failures
    assert f"{where}: expected a dict info, got NoneType" in failures


def test_check_step_returns_a_step_result():
    class TupleStep(FakeEnv):
        def step(self, action):
            return tuple(super().step(action))

    with pytest.raises(ConformanceError, match="step: step 1 .*expected a StepResult, got"):
        check_bridge(TupleStep)


def test_check_step_non_tuple_result_stops_the_play():
    class NoneStep(FakeEnv):
        def step(self, action):
            super().step(action)

    with pytest.raises(ConformanceError, match="expected a StepResult, got None") as e:
        check_bridge(NoneStep)
    assert "determinism" not in checks_failed(e)


def test_check_step_that_raises_is_reported():
    with pytest.raises(ConformanceError, match="step: step 1 say\\(text=1\\): raised") as e:
        check_bridge(FakeEnv, actions=[Action("say", {"text": 1})])
    assert "InvalidActionError" in failures_of(e)[0]


def test_check_oracle_that_raises_something_else():
    class BadOracle(FakeEnv):
        def oracle_actions(self):
            raise KeyError("oops")

    with pytest.raises(ConformanceError, match="step: oracle_actions\\(\\) raised KeyError"):
        check_bridge(BadOracle)


def test_check_unknown_tool_must_raise_invalid_action():
    class Lenient(FakeEnv):
        def check_action(self, action):
            return Action.from_dict(action)

        def step(self, action):
            if action.tool not in ("say", "noop"):
                self.state["steps"] += 1
                return StepResult("?", 0.0, False, False, {})
            return super().step(action)

    with pytest.raises(ConformanceError) as e:
        check_bridge(Lenient)
    assert "unknown_tool: expected step(no_such_tool()) to raise InvalidActionError" in failures_of(
        e
    )
    assert any(
        "expected a rejected action to leave the state unchanged" in f for f in failures_of(e)
    )


def test_check_unknown_tool_wrong_exception():
    class WrongError(FakeEnv):
        def step(self, action):
            if action.tool not in ("say", "noop"):
                raise KeyError(action.tool)
            return super().step(action)

    with pytest.raises(
        ConformanceError, match="expected .* to raise InvalidActionError, got KeyError"
    ):
        check_bridge(WrongError)


def test_check_unknown_tool_avoids_real_tool_names():
    class HasNoSuchTool(FakeEnv):
        def tools(self):
            return [*super().tools(), ToolSpec("no_such_tool", "", {"type": "object"})]

    check_bridge(HasNoSuchTool)


def test_check_evaluate_is_stable_and_read_only():
    class Drifting(FakeEnv):
        def evaluate(self):
            self.state["steps"] += 1
            return Evaluation(False, float(self.state["steps"]), {})

    with pytest.raises(ConformanceError) as e:
        check_bridge(Drifting)
    failures = failures_of(e)
    assert any(f.startswith("evaluate: after reset: expected two calls to agree") for f in failures)
    assert any("expected evaluate() to leave the state unchanged" in f for f in failures)


def test_check_evaluate_types():
    class BadVerdict(FakeEnv):
        def evaluate(self):
            return Evaluation(1, math.inf, {"x": {1, 2}})

    with pytest.raises(ConformanceError) as e:
        check_bridge(BadVerdict)
    failures = failures_of(e)
    assert "evaluate: after reset: expected a bool success, got 1" in failures
    assert "evaluate: after reset: expected a finite float score, got inf" in failures
    assert any("expected JSON-able details" in f for f in failures)


def test_check_evaluate_returns_an_evaluation():
    class DictVerdict(FakeEnv):
        def evaluate(self):
            return {"success": True}

    with pytest.raises(ConformanceError, match="evaluate: after reset: expected an Evaluation"):
        check_bridge(DictVerdict)


def test_check_env_state_is_json_able():
    class NanState(FakeEnv):
        def get_env_state(self):
            return {**super().get_env_state(), "score": math.nan}

        def env_state_schema(self):
            schema = super().env_state_schema()
            schema["properties"]["score"] = {"type": "number"}
            return schema

    with pytest.raises(ConformanceError, match="env_state: after reset: expected get_env_state"):
        check_bridge(NanState)


def test_check_env_state_is_a_dict():
    class ListState(FakeEnv):
        def get_env_state(self):
            return [1]

    with pytest.raises(ConformanceError, match="env_state: after reset: expected a dict, got list"):
        check_bridge(ListState)


def test_check_env_state_is_a_deep_copy():
    class Shallow(FakeEnv):
        def get_env_state(self):
            return dict(self.state)  # the "said" list is shared

    with pytest.raises(
        ConformanceError, match="env_state_copy: after reset: expected .* fresh copy"
    ):
        check_bridge(Shallow)


def test_check_env_state_schema_declares_the_keys_and_types():
    class Undeclared(FakeEnv):
        def env_state_schema(self):
            schema = super().env_state_schema()
            del schema["properties"]["said"]
            schema["properties"]["steps"] = {"type": ["string", "null"]}
            return schema

    with pytest.raises(ConformanceError) as e:
        check_bridge(Undeclared)
    failures = failures_of(e)
    assert (
        "env_state_schema: after reset: expected every state key in the schema's properties, "
        "got undeclared ['said']"
    ) in failures
    assert (
        "env_state_schema: after reset: expected state['steps'] of type string|null, got int"
        in (failures)
    )


def test_check_env_state_schema_accepts_nullable_and_untyped_properties():
    class Nullable(FakeEnv):
        def get_env_state(self):
            return {**super().get_env_state(), "note": None, "blob": {"x": 1}}

        def env_state_schema(self):
            schema = super().env_state_schema()
            schema["properties"]["note"] = {"type": "string", "nullable": True}
            schema["properties"]["blob"] = {"description": "anything"}
            return schema

    assert check_bridge(Nullable).passed == CHECKS


@pytest.mark.parametrize(
    ("schema", "match"),
    [
        ({"type": "array"}, "expected a JSON-Schema object, got"),
        ({"type": "object", "properties": []}, "expected 'properties' to be a dict"),
        (
            {"type": "object", "properties": {}, "default": {1}},
            "expected a JSON-able schema",
        ),
    ],
)
def test_check_env_state_schema_shape(schema, match):
    class BadSchema(FakeEnv):
        def env_state_schema(self):
            return schema

    with pytest.raises(ConformanceError, match=match):
        check_bridge(BadSchema)


def test_check_determinism():
    counter = iter(range(1000))

    class Drifty(FakeEnv):
        def reset(self, *, seed=None):
            observation, info = super().reset(seed=seed)
            self.observation = f"{observation} (episode {next(counter)})"
            return self.observation, info

    with pytest.raises(ConformanceError) as e:
        check_bridge(Drifty)
    assert checks_failed(e) == {"determinism"}
    assert failures_of(e)[0].startswith(
        "determinism: reset(seed=0) and replay differ after reset: expected"
    )


def test_check_determinism_names_the_step():
    calls = iter(range(1000))

    class LateDrift(FakeEnv):
        def step(self, action):
            result = super().step(action)
            return result._replace(observation=f"{result.observation} #{next(calls)}")

    with pytest.raises(ConformanceError) as e:
        check_bridge(LateDrift, actions=[Action("noop"), Action("noop")])
    assert any(
        f.startswith("determinism: reset(seed=0) and replay differ at step 1 noop()")
        for f in failures_of(e)
    )


def test_check_save_state_must_restore_an_equal_env():
    class Amnesiac(FakeEnv):
        @classmethod
        def from_state(cls, state):
            env = super().from_state(state)
            env.state["said"] = []
            return env

    with pytest.raises(ConformanceError) as e:
        check_bridge(Amnesiac, actions=[Action("say", {"text": "a"}), Action("say", {"text": "b"})])
    failures = failures_of(e)
    assert checks_failed(e) == {"save_state"}
    assert any(
        f.startswith("save_state: before step 2 say(text='b'): from_state(save_state()): expected")
        for f in failures
    )
    assert any("from_state(json round trip) then step(say(text='b'))" in f for f in failures)
    assert any(f.startswith("save_state: at the end:") for f in failures)


def test_check_save_state_json_round_trip():
    class TupleSnapshot(FakeEnv):
        def save_state(self):
            return {**super().save_state(), "observation": ("not", "json")}

        @classmethod
        def from_state(cls, state):
            if not isinstance(state["observation"], tuple):
                raise BridgeError("lost the tuple", bridge="fake")
            return super().from_state({**state, "observation": " ".join(state["observation"])})

    with pytest.raises(ConformanceError) as e:
        check_bridge(TupleSnapshot)
    assert any(
        "from_state(json round trip) raised BridgeError: [fake] lost the tuple" in f
        for f in failures_of(e)
    )


def test_check_save_state_must_be_json_able():
    class SetSnapshot(FakeEnv):
        def save_state(self):
            return {**super().save_state(), "extra": {1}}

        @classmethod
        def from_state(cls, state):
            return super().from_state({k: v for k, v in state.items() if k != "extra"})

    with pytest.raises(ConformanceError, match="expected save_state\\(\\) to be JSON-able"):
        check_bridge(SetSnapshot)


def test_check_save_state_that_raises():
    class NoSnapshot(FakeEnv):
        def save_state(self):
            raise NotImplementedError("later")

    with pytest.raises(
        ConformanceError, match="save_state\\(\\) raised NotImplementedError: later"
    ):
        check_bridge(NoSnapshot())


def test_check_from_state_must_return_an_env():
    class NotAnEnv(FakeEnv):
        @classmethod
        def from_state(cls, state):
            return dict(state)

    with pytest.raises(
        ConformanceError, match="from_state\\(save_state\\(\\)\\): expected an ActionableEnv"
    ):
        check_bridge(NotAnEnv)


def test_check_close_on_a_given_env_uses_a_copy():
    class CloseOnce(FakeEnv):
        def close(self):
            if self.closed:
                raise RuntimeError("twice")
            super().close()

    env = CloseOnce()
    with pytest.raises(ConformanceError) as e:
        check_bridge(env)
    assert checks_failed(e) == {"close"}
    assert not env.closed


@pytest.mark.parametrize(
    ("subject", "match"),
    [
        (42, "construct: expected an ActionableEnv or a zero-argument callable .*, got int"),
        (lambda: "env", "construct: expected the factory to return an ActionableEnv, got 'env'"),
    ],
)
def test_check_bridge_rejects_what_is_not_an_env(subject, match):
    with pytest.raises(ConformanceError, match=match):
        check_bridge(subject)


def test_check_bridge_reports_a_failing_factory():
    def factory():
        raise UnknownTaskError("no task 'x'", bridge="fake")

    with pytest.raises(ConformanceError, match="bridge 'factory'") as e:
        check_bridge(factory)
    assert failures_of(e) == ["construct: the factory raised UnknownTaskError: [fake] no task 'x'"]
