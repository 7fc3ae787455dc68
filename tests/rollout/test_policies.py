from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

from envharness import Action, ActionableEnv, BridgeError, ToolSpec, load_bridge
from envharness.bridges.toy24 import Toy24Env
from envharness.errors import PolicyError, SandboxUnavailableError
from envharness.harness import Rules, Setups
from envharness.rollout.policies import (
    OraclePolicy,
    OraclePolicyFactory,
    RandomPolicy,
    RandomPolicyFactory,
    Script,
    ScriptedPolicy,
    ScriptedPolicyFactory,
    load_script,
)
from envharness.rollout.policy import Policy, PrivilegedPolicy, describe_policy, policy_usage
from envharness.testing import FakeEnv


def combine(a: str, op: str, b: str) -> Action:
    return Action("combine", {"a": a, "op": op, "b": b})


SOLVE_4_4_10_10 = [combine("10", "*", "10"), combine("100", "-", "4"), combine("96", "/", "4")]
TOY_TOOLS = Toy24Env("4-4-10-10").tools()
TRAIN = Toy24Env.list_tasks("train")


def play(env: ActionableEnv, policy: Any, budget: int, seed: int = 0) -> tuple[bool, list[Any]]:
    """A small local loop: reset, start, attach, act/step until terminated or out of budget."""
    observation, _ = env.reset(seed=seed)
    policy.start(env.instruction, env.tools())
    if isinstance(policy, PrivilegedPolicy):
        policy.attach(env)
    steps = []
    for _ in range(budget):
        action = policy.act(observation)
        result = env.step(action)
        steps.append((action, result))
        observation = result.observation
        if result.terminated:
            return True, steps
    return False, steps


# -- the protocol helpers --------------------------------------------------------------------------


def test_policies_satisfy_the_protocol():
    for policy in (ScriptedPolicy([]), RandomPolicy(0), OraclePolicy(0.5, 0)):
        assert isinstance(policy, Policy)
    assert isinstance(OraclePolicy(), PrivilegedPolicy)
    assert not isinstance(RandomPolicy(0), PrivilegedPolicy)


def test_describe_policy_and_usage():
    assert describe_policy(OraclePolicy(0.5, 1)) == "oracle:0.5"
    assert describe_policy(OraclePolicyFactory()) == "oracle:1"
    assert describe_policy(RandomPolicyFactory()) == "random"
    assert describe_policy(object()) == "object"
    assert policy_usage(RandomPolicy(0)) == {
        "input_tokens": 0,
        "output_tokens": 0,
        "total_tokens": 0,
    }

    class Counting:
        def usage(self):
            return {"input_tokens": 3, "output_tokens": 2}

    assert policy_usage(Counting()) == {"input_tokens": 3, "output_tokens": 2, "total_tokens": 0}


# -- scripted --------------------------------------------------------------------------------------


def test_scripted_plays_actions_and_dicts_then_raises():
    policy = ScriptedPolicy([combine("10", "*", "10"), {"tool": "undo", "args": {}}])
    assert policy.act("a") == combine("10", "*", "10")
    assert policy.act("b") == Action("undo")
    assert policy.played == 2
    with pytest.raises(PolicyError, match="script exhausted after 2 actions"):
        policy.act("c")


def test_scripted_repeat_last():
    policy = ScriptedPolicy([Action("noop")], on_exhausted="repeat_last")
    assert [policy.act("") for _ in range(3)] == [Action("noop")] * 3


def test_scripted_bad_arguments():
    with pytest.raises(PolicyError, match="on_exhausted: expected one of error, repeat_last"):
        ScriptedPolicy([], on_exhausted="loop")  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="empty script has no last action"):
        ScriptedPolicy([], on_exhausted="repeat_last")
    with pytest.raises(PolicyError, match="step 2: expected an Action"):
        ScriptedPolicy([Action("noop"), 42])  # type: ignore[list-item]
    with pytest.raises(PolicyError, match=r"step 1: unexpected keys \['extra'\]"):
        ScriptedPolicy([{"tool": "x", "extra": 1}])
    with pytest.raises(PolicyError, match="expected a list of actions"):
        ScriptedPolicy("combine 4 * 6")  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="step 1: expected an action, got an empty line"):
        ScriptedPolicy(["  "])


def test_scripted_text_steps_are_parsed_at_start():
    policy = ScriptedPolicy(["combine 10 * 10", 'combine(a="100", op="-", b="4")', "undo"])
    with pytest.raises(PolicyError, match="call start"):
        policy.act("")
    policy.start("Make 24.", TOY_TOOLS)
    assert [policy.act("") for _ in range(3)] == [
        combine("10", "*", "10"),
        combine("100", "-", "4"),
        Action("undo"),
    ]
    bad = ScriptedPolicy(["combine 10 * 10", "fly away"])
    with pytest.raises(PolicyError, match=r"<script>, step 2: cannot read 'fly away'"):
        bad.start("Make 24.", TOY_TOOLS)


def test_scripted_restarts_each_episode():
    policy = ScriptedPolicy(SOLVE_4_4_10_10)
    env = load_bridge("toy24", task_id="4-4-10-10")
    assert play(env, policy, 3)[0]
    assert play(env, policy, 3)[0]


def test_load_script_formats(tmp_path):
    json_file = tmp_path / "moves.json"
    json_file.write_text(json.dumps([a.to_dict() for a in SOLVE_4_4_10_10]))
    assert load_script(json_file).steps == tuple(SOLVE_4_4_10_10)

    jsonl = tmp_path / "moves.jsonl"
    jsonl.write_text("\n".join(json.dumps(a.to_dict()) for a in SOLVE_4_4_10_10) + "\n\n")
    assert load_script(jsonl).steps == tuple(SOLVE_4_4_10_10)

    text = tmp_path / "moves.txt"
    text.write_text("# solve it\ncombine 10 * 10\n\ncombine 100 - 4\ncombine 96 / 4\n")
    script = load_script(text)
    assert script.steps == ("combine 10 * 10", "combine 100 - 4", "combine 96 / 4")
    assert script.lines == (2, 4, 5)
    factory = ScriptedPolicyFactory.from_file(text)
    assert factory.describe() == f"scripted:{text}"
    env = load_bridge("toy24", task_id="4-4-10-10")
    assert play(env, factory(0), 3)[0]


def test_load_script_bad_files(tmp_path):
    with pytest.raises(PolicyError, match="cannot read the script file"):
        load_script(tmp_path / "missing.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n\n")
    with pytest.raises(PolicyError, match="has no actions"):
        load_script(empty)
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('[\n{"tool": "undo"},\n{"tool": \n')
    with pytest.raises(PolicyError, match=r"bad.json, line \d+: not valid JSON"):
        load_script(bad_json)
    not_list = tmp_path / "object.json"
    not_list.write_text('{"tool": "undo"}')
    with pytest.raises(PolicyError, match="expected a JSON list of actions, got dict"):
        load_script(not_list)
    bad_item = tmp_path / "item.json"
    bad_item.write_text('[{"tool": "undo"}, {"args": {}}]')
    with pytest.raises(PolicyError, match="item.json, item 2"):
        load_script(bad_item)
    bad_line = tmp_path / "bad.jsonl"
    bad_line.write_text('{"tool": "undo"}\n{"tool": "undo"\n')
    with pytest.raises(PolicyError, match=r"bad.jsonl, line 2: not valid JSON"):
        load_script(bad_line)
    not_object = tmp_path / "list.jsonl"
    not_object.write_text('{"tool": "undo"}\n[1]\n')
    with pytest.raises(PolicyError, match=r"list.jsonl, line 2: expected a \{'tool', 'args'\}"):
        load_script(not_object)
    text = tmp_path / "moves.txt"
    text.write_text("combine 10 * 10\n# comment\ncombine 10 x 10\n")
    policy = ScriptedPolicy(load_script(text))
    with pytest.raises(PolicyError, match=r"moves.txt, line 3: cannot read 'combine 10 x 10'"):
        policy.start("", TOY_TOOLS)


def test_scripted_factory_pickles():
    factory = ScriptedPolicyFactory(["combine 10 * 10"], on_exhausted="repeat_last")
    copy = pickle.loads(pickle.dumps(factory))
    policy = copy(3)
    policy.start("", TOY_TOOLS)
    assert policy.act("") == policy.act("") == combine("10", "*", "10")
    assert "1 steps" in repr(factory)
    assert Script.of(factory.script) is factory.script


# -- random ----------------------------------------------------------------------------------------


def test_random_is_deterministic_by_seed():
    observations = ["Numbers left: 4 4 10 10", "Numbers left: 4 4 100\nLast: 10 * 10 = 100"] * 20

    def run(seed: int) -> list[Action]:
        policy = RandomPolicy(seed)
        policy.start("", TOY_TOOLS)
        return [policy.act(o) for o in observations]

    assert run(1) == run(1)
    assert run(1) != run(2)
    assert RandomPolicyFactory()(1).seed == 1


@pytest.mark.parametrize(
    "make", [lambda: load_bridge("toy24", task_id="4-4-10-10"), FakeEnv], ids=["toy24", "fake"]
)
def test_random_actions_always_fit_the_schemas(make):
    env = make()
    tools = {tool.name: tool for tool in env.tools()}
    policy = RandomPolicy(seed=11)
    observation, _ = env.reset(seed=0)
    policy.start(env.instruction, env.tools())
    used = set()
    for _ in range(200):
        action = policy.act(observation)
        assert tools[action.tool].check(action.args) == []
        used.add(action.tool)
        result = env.step(action)
        observation = result.observation
        if result.terminated:
            observation, _ = env.reset(seed=0)
    assert used == set(tools)


def test_random_draws_strings_from_the_observation():
    policy = RandomPolicy(seed=0)
    policy.start("", TOY_TOOLS)
    observation = "Numbers left: 4 8/3 -2 100\nLast: 10 * 10 = 100"
    tokens = {"4", "8/3", "-2", "100", "10", "Numbers", "left", "Last"}
    seen = set()
    for _ in range(200):
        action = policy.act(observation)
        if action.tool == "combine":
            assert action.args["a"] in tokens and action.args["b"] in tokens
            seen |= {action.args["a"], action.args["b"]}
    assert {"4", "8/3", "-2", "100"} <= seen


def test_random_covers_the_schema_subset():
    tool = ToolSpec(
        "configure",
        "Many kinds of arguments.",
        {
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "count": {"type": "integer", "minimum": 3, "maximum": 5},
                "ratio": {"type": "number", "minimum": -1, "maximum": 1},
                "level": {"type": "integer", "enum": [1, 2]},
                "flag": {"type": "boolean"},
                "names": {"type": "array", "items": {"type": "string"}},
                "nested": {
                    "type": "object",
                    "properties": {"x": {"type": "integer"}, "y": {"type": "string"}},
                    "required": ["x"],
                },
                "note": {"type": "string"},
            },
            "required": ["mode", "count", "ratio", "nested"],
        },
    )
    policy = RandomPolicy(seed=5)
    policy.start("", [tool])
    optional_seen = set()
    for i in range(200):
        action = policy.act("" if i % 2 else "count 4 or 7 please")
        assert tool.check(action.args) == [], action
        assert 3 <= action.args["count"] <= 5
        assert -1 <= action.args["ratio"] <= 1
        optional_seen |= set(action.args) - {"mode", "count", "ratio", "nested"}
    assert optional_seen == {"level", "flag", "names", "note"}


def test_random_errors():
    with pytest.raises(PolicyError, match="seed: expected an int, got str"):
        RandomPolicy("1")  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="call start"):
        RandomPolicy(0).act("")
    with pytest.raises(PolicyError, match="offers no tools"):
        RandomPolicy(0).start("", [])


def test_random_factory_pickles():
    factory = pickle.loads(pickle.dumps(RandomPolicyFactory()))
    assert isinstance(factory(4), RandomPolicy) and factory.describe() == "random"


# -- oracle ----------------------------------------------------------------------------------------


def test_oracle_with_full_skill_solves_50_tasks():
    for index in range(50):
        task = TRAIN[index * 21]
        env = load_bridge("toy24", task_id=task)
        solved, steps = play(env, OraclePolicy(1.0, seed=index), budget=3)
        assert solved, task
        assert env.evaluate().success
        assert len(steps) == 3


def _success_rate(skill: float, episodes: int = 200) -> float:
    wins = 0
    for index in range(episodes):
        env = load_bridge("toy24", task_id=TRAIN[(index * 7) % len(TRAIN)])
        wins += play(env, OraclePolicy(skill, seed=index), budget=12)[0]
    return wins / episodes


def test_oracle_skill_calibrates_the_success_rate():
    low, mid, high = _success_rate(0.0), _success_rate(0.5), _success_rate(1.0)
    assert high == 1.0
    assert high > mid > low
    assert low < 0.1


class CountingFake(FakeEnv):
    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.oracle_calls = 0

    def oracle_actions(self) -> list[Action]:
        self.oracle_calls += 1
        return super().oracle_actions()


def test_oracle_with_no_skill_plays_random():
    env = CountingFake()
    oracle = OraclePolicy(0.0, seed=3)
    solved, steps = play(env, oracle, budget=30)
    assert not solved and env.oracle_calls == 0
    assert oracle.random_moves == 30 and oracle.oracle_moves == 0


def test_oracle_is_deterministic_by_seed():
    def actions(seed: int) -> list[Action]:
        env = load_bridge("toy24", task_id="3-3-8-8")
        return [a for a, _ in play(env, OraclePolicy(0.5, seed), budget=12)[1]]

    assert actions(4) == actions(4)
    assert any(actions(4) != actions(s) for s in range(5, 10))


def test_oracle_recovers_with_undo_when_unsolvable():
    env = load_bridge("toy24", task_id="4-4-10-10")
    observation, _ = env.reset(seed=0)
    observation = env.step(combine("4", "+", "4")).observation  # 8 10 10: no way to 24
    assert env.oracle_actions() == []
    policy = OraclePolicy(1.0, seed=0)
    policy.start(env.instruction, env.tools())
    policy.attach(env)
    assert policy.act(observation) == Action("undo")
    observation = env.step(Action("undo")).observation
    for _ in range(3):
        result = env.step(policy.act(observation))
        observation = result.observation
    assert result.terminated


class NoUndoFake(FakeEnv):
    def oracle_actions(self) -> list[Action]:
        return []


def test_oracle_without_undo_plays_random_when_unsolvable():
    env = NoUndoFake()
    policy = OraclePolicy(1.0, seed=0)
    _, steps = play(env, policy, budget=10)
    assert policy.random_moves == 10
    assert all(env.check_action(a) == a for a, _ in steps)


class NoOracleFake(FakeEnv):
    def oracle_actions(self) -> list[Action]:
        raise BridgeError("this bridge offers no oracle", bridge="fake")


def test_oracle_errors():
    for skill in (-0.1, 1.5, float("nan"), "0.5", True, None):
        with pytest.raises(PolicyError, match=r"skill: expected a number in \[0, 1\]"):
            OraclePolicy(skill)  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match=r"skill: expected a number in \[0, 1\]"):
        OraclePolicyFactory(2)
    policy = OraclePolicy(1.0)
    policy.start("", FakeEnv().tools())
    with pytest.raises(PolicyError, match=r"must call policy.attach\(env\)"):
        policy.act("")
    with pytest.raises(PolicyError, match="expected an ActionableEnv, got str"):
        policy.attach("env")  # type: ignore[arg-type]
    unstarted = OraclePolicy(1.0)
    unstarted.attach(FakeEnv())
    with pytest.raises(PolicyError, match="call start"):
        unstarted.act("")
    with pytest.raises(PolicyError, match="needs an environment with an oracle"):
        play(NoOracleFake(), OraclePolicy(1.0), budget=1)


def test_oracle_plays_through_setups():
    base = load_bridge("toy24", task_id="1-2-3-4")
    for candidate in base.stage_candidates():
        env = Setups(load_bridge("toy24", task_id="1-2-3-4"), candidate)
        solved, steps = play(env, OraclePolicy(1.0, seed=0), budget=3)
        assert solved and len(steps) == 3 - len(candidate)
        assert env.evaluate().success


NO_SUBTRACTION = """
class _Rules:
    def filter_action(self, action, state):
        if action["tool"] == "combine" and action["args"]["op"] == "-":
            return "Subtraction is disabled."
        return action
"""


def test_oracle_does_not_loop_on_a_blocked_move():
    try:
        env = Rules(load_bridge("toy24", task_id="2-3-4-6"), NO_SUBTRACTION)
    except SandboxUnavailableError as e:
        pytest.skip(f"no sandbox here: {e}")
    env.reset(seed=0)
    assert env.oracle_actions()[0].args["op"] == "-"  # the oracle's own plan gets blocked
    solved_any = False
    try:
        for seed in range(6):
            policy = OraclePolicy(1.0, seed=seed)
            solved, steps = play(env, policy, budget=40, seed=seed)
            solved_any |= solved
            blocked = [a for a, r in steps if r.info.get("blocked")]
            assert blocked, "the rule never fired"
            assert len(blocked) < len(steps) / 2
            for (a, first), (b, second) in zip(steps, steps[1:], strict=False):
                assert not (first.info.get("blocked") and second.info.get("blocked") and a == b)
    finally:
        env.close()
    assert solved_any


def test_oracle_factory_pickles_and_describes():
    factory = pickle.loads(pickle.dumps(OraclePolicyFactory(0.25)))
    policy = factory(9)
    assert (policy.skill, policy.seed, policy.describe()) == (0.25, 9, "oracle:0.25")
    assert factory.describe() == "oracle:0.25"
