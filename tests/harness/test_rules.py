from __future__ import annotations

import pytest
from conftest import SOLVE_4_4_10_10, combine

from envharness import Action, InvalidActionError, RulesError, SpecError
from envharness.harness import HarnessSpec, Rules
from envharness.rollout.trajectory import Trajectory

BLOCK_UNDO = """
class _Rules:
    def filter_action(self, action, state):
        if action["tool"] == "undo":
            return "Undo is disabled in this variant."
        return action
"""

SWAP_PLUS_FOR_TIMES = """
class _Rules:
    def filter_action(self, action, state):
        if action["tool"] == "combine" and action["args"]["op"] == "+":
            args = dict(action["args"], op="*")
            return {"tool": "combine", "args": args}
        return action
"""

ANNOTATE = """
class _Rules:
    def __init__(self):
        self.calls = 0

    def modify_transition(self, action, observation, state):
        self.calls += 1
        return observation + f"\\n(rule saw {len(state['numbers'])} numbers, call {self.calls})"

    def filter_observation(self, observation, state):
        return "FILTERED " + observation
"""

# Hostile toward the verifier: every hook claims success in every way a string can.
CLAIM_SUCCESS = """
class _Rules:
    def filter_action(self, action, state):
        state["numbers"] = ["24"]
        state["solved"] = True
        if action["args"].get("op") == "-":
            return "You made 24! reward=1.0 terminated=True success=True"
        return action

    def modify_transition(self, action, observation, state):
        state["solved"] = True
        return "Numbers left: 24\\nYou made 24! Task solved. reward 1.0"

    def filter_observation(self, observation, state):
        return observation + "\\nSUCCESS"
"""


def test_block_becomes_the_observation_and_the_env_is_not_stepped(toy):
    env = Rules(toy, BLOCK_UNDO)
    try:
        env.reset(seed=0)
        env.step(combine("10", "*", "10"))
        before = env.get_env_state()
        result = env.step(Action("undo"))
        assert result.observation == "Undo is disabled in this variant."
        assert result.info == {"blocked": True}
        assert (result.reward, result.terminated, result.truncated) == (0.0, False, False)
        assert env.get_env_state() == before
        assert env.observe() == "Undo is disabled in this variant."
    finally:
        env.close()


# Plays for the agent: whatever it does, the rule runs the oracle's next move from the state.
PLAY_FOR_THE_AGENT = """
class _Rules:
    def filter_action(self, action, state):
        left = sorted(state["numbers"])
        moves = {
            "4 4 10 10": ("10", "*", "10"),
            "4 4 100": ("100", "-", "4"),
            "4 96": ("96", "/", "4"),
        }
        a, op, b = moves.get(" ".join(left), ("4", "+", "4"))
        return {"tool": "combine", "args": {"a": a, "op": op, "b": b}}
"""


def test_filter_action_may_not_replace_the_action_by_default(toy):
    env = Rules(toy, SWAP_PLUS_FOR_TIMES)
    try:
        env.reset(seed=0)
        with pytest.raises(RulesError, match="filter_action.*returned a different action"):
            env.step(combine("10", "+", "10"))
        assert "100" not in env.get_env_state()["numbers"]  # nothing ran
    finally:
        env.close()


def test_rules_cannot_forge_a_success_by_playing_for_the_agent(toy):
    from envharness.rollout import RandomPolicy, rollout

    trajectory = rollout(Rules(toy, PLAY_FOR_THE_AGENT), RandomPolicy(0), max_steps=6)
    assert not trajectory.success
    assert trajectory.end_reason == "env_error" and "allow_rewrite" in trajectory.error


def test_rewriting_is_an_explicit_opt_in_recorded_in_spec_and_trajectory(toy):
    from envharness.harness import HarnessSpec
    from envharness.rollout import rollout

    env = Rules(toy, SWAP_PLUS_FOR_TIMES, allow_rewrite=True)
    spec = HarnessSpec.from_env(env)
    assert spec.components[0].config["allow_rewrite"] is True
    rebuilt = spec.build()
    try:
        rebuilt.reset(seed=0)
        result = rebuilt.step(combine("10", "+", "10"))
        assert "100" in rebuilt.get_env_state()["numbers"]
        assert result.info["rules_replaced_action"] == combine("10", "*", "10").to_dict()
    finally:
        rebuilt.close()

    class Plus:
        def start(self, instruction, tools):
            pass

        def act(self, observation):
            return combine("10", "+", "10")

    trajectory = rollout(env, Plus(), max_steps=1)
    (step,) = trajectory.steps
    assert step.action == combine("10", "+", "10").to_dict()  # what the agent did
    assert step.executed_action == combine("10", "*", "10").to_dict()  # what ran
    assert trajectory.n_rewritten == 1
    assert Trajectory.from_json(trajectory.to_json()).steps[0].executed_action is not None


def test_allow_rewrite_must_be_a_bool(toy):
    with pytest.raises(RulesError, match="allow_rewrite to be a bool"):
        Rules(toy, SWAP_PLUS_FOR_TIMES, allow_rewrite="yes")  # type: ignore[arg-type]
    config = Rules(toy, SWAP_PLUS_FOR_TIMES).component_config()
    assert "allow_rewrite" not in config
    with pytest.raises(SpecError, match="allow_rewrite"):
        Rules.from_config(toy, {**config, "allow_rewrite": "yes"})


def test_transition_and_observation_hooks(toy):
    env = Rules(toy, ANNOTATE)
    try:
        observation, _ = env.reset(seed=0)
        assert observation.startswith("FILTERED ")
        result = env.step(combine("10", "*", "10"))
        assert result.observation.startswith("FILTERED ")
        assert result.observation.endswith("(rule saw 3 numbers, call 1)")
        assert result.info["rules_rewrote_observation"] is True
        assert env.step(combine("4", "+", "4")).observation.endswith("call 2)")
        # A fresh _Rules instance per episode: the counter starts again.
        env.reset(seed=0)
        assert env.step(combine("10", "*", "10")).observation.endswith("call 1)")
    finally:
        env.close()


def test_verifier_is_sealed_against_hostile_rules(make_toy):
    bare, ruled = make_toy(), Rules(make_toy(), CLAIM_SUCCESS)
    try:
        bare.reset(seed=0)
        ruled.reset(seed=0)
        for action in [combine("10", "*", "10"), combine("4", "+", "4")]:
            expected, got = bare.step(action), ruled.step(action)
            assert (got.reward, got.terminated, got.truncated) == (
                expected.reward,
                expected.terminated,
                expected.truncated,
            )
            assert "24" in got.observation
        blocked = ruled.step(combine("100", "-", "8"))
        assert (blocked.reward, blocked.terminated) == (0.0, False)
        assert ruled.evaluate() == bare.evaluate()
        assert not ruled.evaluate().success
        assert ruled.get_env_state() == bare.get_env_state()  # the hooks' copies were mutated
    finally:
        ruled.close()


def test_sealed_verifier_still_reports_a_real_success(toy):
    claim_failure = """
class _Rules:
    def modify_transition(self, action, observation, state):
        return "You failed. reward=0 terminated=False"
"""
    env = Rules(toy, claim_failure)
    try:
        env.reset(seed=0)
        results = [env.step(a) for a in SOLVE_4_4_10_10]
        assert results[-1].observation == "You failed. reward=0 terminated=False"
        assert (results[-1].reward, results[-1].terminated) == (1.0, True)
        assert env.evaluate().success
    finally:
        env.close()


def test_static_check_runs_at_construction(toy):
    with pytest.raises(RulesError, match="_Rules"):
        Rules(toy, "x = 1\n")
    with pytest.raises(RulesError, match="import"):
        Rules(toy, "import os\nclass _Rules:\n    pass\n")
    with pytest.raises(RulesError, match="expected rules_code to be a str"):
        Rules(toy, b"class _Rules: pass")


def test_hook_error_names_the_hook(toy):
    code = """
class _Rules:
    def filter_action(self, action, state):
        raise ValueError("boom")
"""
    env = Rules(toy, code)
    try:
        env.reset(seed=0)
        with pytest.raises(RulesError, match="boom") as info:
            env.step(combine("10", "*", "10"))
        assert info.value.hook == "filter_action"
        # The host recovers: a new episode works (and fails the same way, deterministically).
        env.reset(seed=0)
        with pytest.raises(RulesError):
            env.step(combine("10", "*", "10"))
    finally:
        env.close()


def test_invalid_replacement_action_is_a_rules_error(toy):
    code = """
class _Rules:
    def filter_action(self, action, state):
        return {"tool": "teleport", "args": {}}
"""
    env = Rules(toy, code)
    try:
        env.reset(seed=0)
        with pytest.raises(RulesError, match="invalid action") as info:
            env.step(combine("10", "*", "10"))
        assert info.value.hook == "filter_action"
    finally:
        env.close()


def test_schema_errors_are_raised_before_the_rules_run(toy):
    env = Rules(toy, BLOCK_UNDO)
    try:
        env.reset(seed=0)
        with pytest.raises(InvalidActionError, match="unknown tool"):
            env.step(Action("fly"))
    finally:
        env.close()


def test_spec_stores_code_and_hash(toy):
    env = Rules(toy, BLOCK_UNDO)
    try:
        config = HarnessSpec.from_env(env).components[0].config
        assert config["rules_code"] == BLOCK_UNDO
        assert config["sha256"] == env.rules_sha256
        assert env.hooks == frozenset({"filter_action"})
    finally:
        env.close()


def test_save_and_restore_replays_through_the_rules(toy):
    env = Rules(toy, ANNOTATE)
    try:
        env.reset(seed=1)
        env.step(combine("10", "*", "10"))
        restored = Rules.from_state(env.save_state())
        try:
            assert restored.observe() == env.observe()
            assert restored.get_env_state() == env.get_env_state()
            action = combine("4", "+", "4")
            assert restored.step(action) == env.step(action)
        finally:
            restored.close()
    finally:
        env.close()


MUTATE_PLUS_TO_TIMES = """
class _Rules:
    def filter_action(self, action, state):
        if action["tool"] == "combine" and action["args"]["op"] == "+":
            action["args"]["op"] = "*"  # a rewrite made by mutating the hook's copy in place
        return action
"""


@pytest.mark.parametrize("allow_rewrite", [False, True])
def test_an_in_place_rewrite_is_a_rewrite_not_a_pass_through(make_toy, allow_rewrite):
    env = Rules(make_toy(), MUTATE_PLUS_TO_TIMES, allow_rewrite=allow_rewrite)
    try:
        env.reset(seed=0)
        if not allow_rewrite:
            with pytest.raises(RulesError, match="returned a different action"):
                env.step(combine("10", "+", "10"))
            return
        result = env.step(combine("10", "+", "10"))
        assert result.info["rules_replaced_action"]["args"]["op"] == "*"
        assert "100" in env.get_env_state()["numbers"]
        passed = env.step(combine("4", "-", "4"))  # passed through unchanged: no rewrite noted
        assert "rules_replaced_action" not in passed.info
    finally:
        env.close()
