from __future__ import annotations

import pytest
from conftest import combine

from envharness import Action, InvalidActionError, SetupError
from envharness.harness import EnvHarness, HarnessSpec, Link, Rules, Setups

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


def test_start_observation_describes_the_staged_state(toy):
    env = Setups(toy, [combine("10", "*", "10")])
    observation, _ = env.reset(seed=0)
    # a start in the staged state, not the setup step's answer ("Last: 10 * 10 = 100")
    assert observation == "Numbers left: 4 4 100\nStart: make 24 from 4 4 100."
    assert "Last:" not in observation and env.observe() == observation
    result = env.step(combine("100", "-", "4"))
    assert result.observation == "Numbers left: 4 96\nLast: 100 - 4 = 96"
    assert env.observe() == "Numbers left: 4 96"  # the state, not the step's answer


def test_setup_steps_are_not_counted_by_the_bridge(toy):
    env = Setups(toy, [combine("10", "*", "10"), combine("100", "-", "4")])
    env.reset(seed=0)
    assert env.get_env_state()["steps"] == 0 == env.evaluate().details["steps"]
    assert len(env.get_env_state()["history"]) == 2  # the world keeps what the setup did
    env.step(Action("undo"))
    assert env.get_env_state()["steps"] == 1
    restored = EnvHarness.from_state(env.save_state())
    try:
        assert restored.get_env_state() == env.get_env_state()
        assert restored.observe() == env.observe()
    finally:
        restored.close()
    bridge = type(toy).from_state(toy.save_state())  # the bridge's own snapshot keeps the count
    assert bridge.get_env_state() == toy.get_env_state()


def test_the_mark_goes_down_every_stack(make_toy):
    inner = Setups(make_toy(), [combine("10", "*", "10")])
    outer = Setups(inner, [combine("100", "-", "4")])
    observation, info = outer.reset(seed=0)
    assert info["setup_steps"] == 1 and outer.get_env_state()["steps"] == 0
    assert observation == "Numbers left: 4 96\nStart: make 24 from 4 96."
    linked = Setups(Link(make_toy(), make_toy("3-3-8-8")), [combine("10", "*", "10")])
    observation, _ = linked.reset(seed=0)
    assert observation == "Numbers left: 4 4 100\nStart: make 24 from 4 4 100."
    assert linked.get_env_state()["first"]["steps"] == 0
    linked.close()


def test_mark_episode_start_is_saved_with_the_episode(make_toy):
    env = Rules(make_toy(), "class _Rules:\n    pass\n")
    try:
        env.reset(seed=0)
        env.step(combine("10", "*", "10"))
        env.mark_episode_start()  # as Setups(env) would after its replay
        assert env.get_env_state()["steps"] == 0
        env.step(combine("4", "+", "4"))
        snapshot = env.save_state()
        assert snapshot["mark"] == 1
        restored = EnvHarness.from_state(snapshot)
        try:
            assert restored.get_env_state() == env.get_env_state()
            assert restored.get_env_state()["steps"] == 1
        finally:
            restored.close()
    finally:
        env.close()


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
    rebuilt = HarnessSpec.from_env(env).build()
    assert isinstance(rebuilt, Setups)
    assert rebuilt.in_env_actions == env.in_env_actions
    rebuilt.reset(seed=0)
    env.reset(seed=0)
    assert rebuilt.get_env_state() == env.get_env_state()


# -- Setups may not do the agent's task -------------------------------------------------------


def test_a_setup_that_solves_the_task_is_refused():
    pytest.importorskip("formulas")
    from envharness import load_bridge

    env = load_bridge("spreadsheet", task_id="sales-line-totals")
    answer = {"tool": "write_cells", "args": {"range": "Sales!F2:F41", "values": [["=D2*E2"]]}}
    staged = Setups(env, [answer])
    try:
        with pytest.raises(SetupError, match="#0 write_cells.*already solved"):
            staged.reset(seed=0)
    finally:
        staged.close()


def test_a_replay_into_a_links_second_task_needs_cross_link(make_toy):
    from envharness.harness import HarnessSpec, Link

    solve_first = [combine("10", "*", "10"), combine("100", "-", "4"), combine("96", "/", "4")]
    into_second = [*solve_first, combine("8", "/", "3")]
    link = Link(make_toy(), make_toy("3-3-8-8"))
    with pytest.raises(SetupError, match="#2 .*Link's second task.*cross_link=True"):
        Setups(link, into_second).reset(seed=0)
    interleaved = Link(make_toy(), make_toy("3-3-8-8"), "interleave")
    with pytest.raises(SetupError, match="#0 .*second task"):
        Setups(interleaved, [combine("10", "*", "10"), combine("8", "/", "3")]).reset(seed=0)
    allowed = Setups(Link(make_toy(), make_toy("3-3-8-8")), into_second, cross_link=True)
    allowed.reset(seed=0)
    assert allowed.get_env_state()["active"] == "second"
    spec = HarnessSpec.from_env(allowed)
    assert spec.components[-1].config["cross_link"] is True
    rebuilt = spec.build()
    try:
        rebuilt.reset(seed=0)
        assert rebuilt.get_env_state()["active"] == "second"
    finally:
        rebuilt.close()
    with pytest.raises(SetupError, match="cross_link must be a bool"):
        Setups(make_toy(), [], cross_link="yes")  # type: ignore[arg-type]


def test_setups_over_rules_start_from_the_rules_view_of_the_staged_state(make_toy):
    shout = (
        "class _Rules:\n"
        "    def filter_observation(self, observation, state):\n"
        "        return 'RULES SAY: ' + observation\n"
    )
    env = Setups(Rules(make_toy(), shout), [combine("10", "*", "10")])
    try:
        observation, _ = env.reset(seed=0)
        assert observation.startswith("RULES SAY: Numbers left: 4 4 100")
        assert "Last:" not in observation  # not the setup step's own answer
        assert env.observe() == observation
    finally:
        env.close()
