from __future__ import annotations

import pytest
from conftest import combine

from envharness import Action, InvalidActionError, SetupError
from envharness.harness import Rules, Setups

BLOCK_MULTIPLY = """
class _Rules:
    def filter_action(self, action, state):
        if action["args"].get("op") == "*":
            return "Multiplication is not allowed here."
        return action
"""


def test_replays_actions_into_the_start_state(toy):
    env = Setups(toy, [combine("10", "*", "10")])
    observation, info = env.reset(seed=0)
    assert sorted(env.get_env_state()["numbers"]) == ["100", "4", "4"]
    assert info["setup_steps"] == 1
    assert observation == toy.observe()


def test_setup_steps_are_not_agent_steps(toy):
    env = Setups(toy, [combine("10", "*", "10"), combine("100", "-", "4")])
    env.reset(seed=0)
    assert env.max_steps == toy.max_steps  # the budget is untouched
    assert env.save_state()["actions"] == []  # nothing for the agent to replay
    result = env.step(combine("96", "/", "4"))
    assert result.terminated and env.evaluate().success
    assert env.save_state()["actions"] == [combine("96", "/", "4").to_dict()]


def test_same_seed_same_post_setup_state(make_toy):
    actions = [combine("10", "*", "10")]
    a, b = Setups(make_toy(), actions), Setups(make_toy(), actions)
    assert a.reset(seed=7) == b.reset(seed=7)
    assert a.get_env_state() == b.get_env_state()
    a.step(combine("4", "+", "4"))
    a.reset(seed=7)
    assert a.get_env_state() == b.get_env_state()


def test_accepts_dicts_and_checks_schemas_up_front(toy):
    env = Setups(toy, [{"tool": "combine", "args": {"a": "10", "op": "*", "b": "10"}}])
    assert env.in_env_actions == (combine("10", "*", "10"),)
    with pytest.raises(SetupError, match=r"#1 .*unknown tool") as info:
        Setups(toy, [combine("10", "*", "10"), Action("fly", {})])
    assert info.value.index == 1
    assert isinstance(info.value.__cause__, InvalidActionError)
    with pytest.raises(SetupError, match="expected a list of actions"):
        Setups(toy, "combine 4 * 6")


def test_rejected_setup_action_raises_naming_it(toy):
    env = Setups(toy, [combine("10", "*", "10"), combine("7", "+", "1")])
    with pytest.raises(SetupError, match=r"#1 combine\(a='7'.*rejected"):
        env.reset(seed=0)


def test_setup_that_ends_the_episode_raises(toy):
    solve = [combine("10", "*", "10"), combine("100", "-", "4"), combine("96", "/", "4")]
    with pytest.raises(SetupError, match="#2 .*ended the episode"):
        Setups(toy, solve).reset(seed=0)


def test_order_matters_with_rules(make_toy):
    actions = [combine("10", "*", "10")]
    # Setups below Rules: the setup replays on the bare bridge, then rules apply to the agent.
    ok = Rules(Setups(make_toy(), actions), BLOCK_MULTIPLY)
    try:
        ok.reset(seed=0)
        assert sorted(ok.get_env_state()["numbers"]) == ["100", "4", "4"]
        assert ok.step(combine("4", "*", "4")).info["blocked"]
    finally:
        ok.close()
    # Setups above Rules: the setup action itself goes through the rules and is blocked.
    blocked = Setups(Rules(make_toy(), BLOCK_MULTIPLY), actions)
    try:
        with pytest.raises(SetupError, match="a rule blocked it"):
            blocked.reset(seed=0)
    finally:
        blocked.close()


def test_spec_round_trip(toy):
    env = Setups(toy, [combine("10", "*", "10")])
    rebuilt = env.spec().build()
    assert isinstance(rebuilt, Setups)
    assert rebuilt.in_env_actions == env.in_env_actions
    rebuilt.reset(seed=0)
    env.reset(seed=0)
    assert rebuilt.get_env_state() == env.get_env_state()
