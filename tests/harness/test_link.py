from __future__ import annotations

import pytest
from conftest import SOLVE_4_4_10_10, combine

from envharness import Action, BridgeError, SpecError, StepResult, ToolSpec
from envharness.harness import HandoverCondition, HarnessSpec, Link
from envharness.testing import FakeEnv

SOLVE_3_3_8_8 = [combine("8", "/", "3"), combine("3", "-", "8/3"), combine("8", "/", "1/3")]


def play(env, actions):
    return [env.step(a) for a in actions]


def test_sequential_masks_the_first_end_and_needs_both(make_toy):
    env = Link(make_toy("4-4-10-10"), make_toy("3-3-8-8"))
    env.reset(seed=0)
    assert env.task_id == "4-4-10-10+3-3-8-8"
    assert "Part 2" in env.instruction
    assert env.max_steps == 24
    results = play(env, SOLVE_4_4_10_10)
    handover = results[-1]
    assert handover.reward == 1.0  # the first bridge's own reward passes through
    assert (handover.terminated, handover.truncated) == (False, False)  # its end is masked
    assert handover.info["handover"] == "next"
    assert "Part 2" in handover.observation
    assert env.get_env_state()["active"] == "second"
    assert not env.evaluate().success  # the second verifier has not passed yet
    results = play(env, SOLVE_3_3_8_8)
    assert results[-1].terminated
    evaluation = env.evaluate()
    assert evaluation.success and evaluation.score == 1.0
    assert evaluation.details["first"]["success"] and evaluation.details["second"]["success"]


def test_first_unsolved_means_no_success(make_toy):
    env = Link(make_toy("4-4-10-10"), make_toy("3-3-8-8"), "switch", condition={"after_steps": 1})
    env.reset(seed=0)
    assert env.step(combine("4", "+", "4")).info["handover"] == "next"
    play(env, SOLVE_3_3_8_8)
    evaluation = env.evaluate()
    assert not evaluation.success and evaluation.score == 0.5


def test_switch_on_tool_and_on_state(make_toy):
    on_tool = Link(make_toy(), make_toy("3-3-8-8"), "switch", condition={"on_tool": "undo"})
    on_tool.reset(seed=0)
    on_tool.step(combine("10", "*", "10"))
    assert on_tool.get_env_state()["active"] == "first"
    assert on_tool.step(Action("undo")).info["link_stage"] == "second"

    on_state = Link(
        make_toy(),
        make_toy("3-3-8-8"),
        "switch",
        condition=HandoverCondition(state_key="numbers", equals=["4", "4", "100"]),
    )
    on_state.reset(seed=0)
    assert "handover" in on_state.step(combine("10", "*", "10")).info
    assert on_state.get_env_state()["second"]["numbers"] == ["3", "3", "8", "8"]


def test_branch_picks_the_second_env_by_outcome(make_toy):
    def branch():
        return Link(
            make_toy("4-4-10-10"),
            {"success": make_toy("3-3-8-8"), "failure": make_toy("1-1-4-6")},
            "branch",
            condition={"after_steps": 3},
        )

    won = branch()
    won.reset(seed=0)
    play(won, SOLVE_4_4_10_10)
    assert won.get_env_state()["branch"] == "success"
    assert won.get_env_state()["second"]["start"] == ["3", "3", "8", "8"]

    lost = branch()
    lost.reset(seed=0)
    play(lost, [combine("4", "+", "4"), combine("10", "+", "10"), combine("8", "+", "20")])
    assert lost.get_env_state()["branch"] == "failure"
    assert lost.get_env_state()["second"]["start"] == ["1", "1", "4", "6"]


def test_interleave_alternates_until_both_end(make_toy):
    env = Link(make_toy("4-4-10-10"), make_toy("3-3-8-8"), "interleave")
    observation, _ = env.reset(seed=0)
    assert "[Task A]" in observation and "[Task B]" in observation
    stages = []
    for a, b in zip(SOLVE_4_4_10_10, SOLVE_3_3_8_8, strict=True):
        stages.append(env.step(a).info["link_stage"])
        result = env.step(b)
        stages.append(result.info["link_stage"])
    assert stages == ["B", "A", "B", "A", "B", "done"]
    assert result.terminated
    assert env.evaluate().success


def test_observe_describes_the_active_part(make_toy):
    env = Link(make_toy("4-4-10-10"), make_toy("3-3-8-8"))
    observation, _ = env.reset(seed=0)
    assert env.observe() == observation
    play(env, SOLVE_4_4_10_10[:2])
    assert env.observe() == "Numbers left: 4 96"  # the first part's state, not the last answer
    result = env.step(SOLVE_4_4_10_10[2])
    assert "Part 2" in result.observation
    assert env.observe() == "Numbers left: 3 3 8 8\nStart: make 24 from 3 3 8 8."
    interleaved = Link(make_toy("4-4-10-10"), make_toy("3-3-8-8"), "interleave")
    observation, _ = interleaved.reset(seed=0)
    assert interleaved.observe() == observation
    interleaved.step(SOLVE_4_4_10_10[0])
    assert interleaved.observe() == (
        "[Task A]\nNumbers left: 4 4 100\n\n[Task B]\nNumbers left: 3 3 8 8\nStart: make 24 "
        "from 3 3 8 8.\n\nYour next action applies to task B."
    )


def test_mark_episode_start_restarts_the_playing_envs_counts(make_toy):
    first, second = make_toy("4-4-10-10"), make_toy("3-3-8-8")
    env = Link(first, second, "switch", condition={"after_steps": 2})
    env.reset(seed=0)
    env.step(SOLVE_4_4_10_10[0])
    env.mark_episode_start()
    assert first.get_env_state()["steps"] == 0
    env.step(combine("4", "+", "4"))  # one step since the mark: no handover yet
    assert env.get_env_state()["active"] == "first"
    result = env.step(Action("undo"))
    assert env.get_env_state()["active"] == "second" and result.info["handover"] == "next"


def test_interleave_skips_an_env_that_ended(make_toy):
    env = Link(make_toy("4-4-10-10"), make_toy("3-3-8-8"), "interleave", every=3)
    env.reset(seed=0)
    stages = [r.info["link_stage"] for r in play(env, SOLVE_4_4_10_10)]
    assert stages == ["A", "A", "B"]
    stages = [r.info["link_stage"] for r in play(env, SOLVE_3_3_8_8)]
    assert stages == ["B", "B", "done"]


def test_tools_are_the_union_and_missing_tools_get_feedback(make_toy):
    fake = FakeEnv(task_id="fake")
    env = Link(make_toy(), fake)
    names = [t.name for t in env.tools()]
    assert names == ["combine", "undo", *[t.name for t in fake.tools()]]
    env.reset(seed=0)
    tool = fake.tools()[0]
    result = env.step(Action(tool.name, {p: "x" for p in tool.parameters.get("required", [])}))
    assert "not available" in result.info["invalid_action"]


def test_conflicting_tool_schemas_refuse_to_link(make_toy):
    class Clash(FakeEnv):
        def tools(self):
            return [
                ToolSpec(
                    "undo",
                    "undo n steps",
                    {
                        "type": "object",
                        "properties": {"n": {"type": "integer"}},
                        "required": ["n"],
                    },
                )
            ]

    with pytest.raises(BridgeError, match="'undo' has different schemas"):
        Link(make_toy(), Clash(task_id="fake"))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mode": "zigzag"}, "expected mode to be one of"),
        ({"mode": "switch"}, "needs a condition"),
        ({"mode": "sequential", "condition": {"after_steps": 2}}, "takes no condition"),
        ({"mode": "switch", "condition": {}}, "needs after_steps, on_tool or state_key"),
        ({"mode": "switch", "condition": {"after_steps": 0}}, "positive int"),
        ({"mode": "interleave", "every": 0}, "every to be a positive int"),
        ({"mode": "branch"}, "success"),
        ({"mode": "switch", "condition": {"after_step": 2}}, "unknown handover condition field"),
        ({"mode": "switch", "condition": {"after_steps": True}}, "positive int, got True"),
        ({"mode": "switch", "condition": {"on_tool": 3}}, "on_tool to be a non-empty str"),
        ({"mode": "switch", "condition": {"state_key": ["a"]}}, "state_key to be a non-empty"),
        (
            {"mode": "switch", "condition": {"state_key": "a", "equals": {1, 2}}},
            "equals to be a JSON value",
        ),
        ({"mode": "switch", "condition": "after 3 steps"}, "expected condition to be a"),
    ],
)
def test_bad_arguments(make_toy, kwargs, match):
    with pytest.raises(SpecError, match=match):
        Link(make_toy(), make_toy("3-3-8-8"), **kwargs)


def test_spec_round_trip_of_every_mode(make_toy):
    links = [
        Link(make_toy(), make_toy("3-3-8-8")),
        Link(make_toy(), make_toy("3-3-8-8"), "switch", condition={"on_tool": "undo"}),
        Link(
            make_toy(), {"success": make_toy("3-3-8-8"), "failure": make_toy("1-1-4-6")}, "branch"
        ),
        Link(make_toy(), make_toy("3-3-8-8"), "interleave", every=2),
    ]
    for link in links:
        rebuilt = HarnessSpec.from_env(link).build()
        assert HarnessSpec.from_env(rebuilt).to_dict() == HarnessSpec.from_env(link).to_dict()
        assert repr(rebuilt) == repr(link)
        rebuilt.close()


def test_save_and_restore_mid_second_part(make_toy):
    env = Link(make_toy(), make_toy("3-3-8-8"))
    env.reset(seed=0)
    play(env, [*SOLVE_4_4_10_10, SOLVE_3_3_8_8[0]])
    restored = Link.from_state(env.save_state())
    assert restored.get_env_state() == env.get_env_state()
    assert restored.step(SOLVE_3_3_8_8[1]) == env.step(SOLVE_3_3_8_8[1])
    restored.close()


SOLVE_1_1_4_6 = [combine("4", "*", "6"), combine("24", "*", "1"), combine("24", "*", "1")]


def _ends_unsolved(env, action):
    """A FakeEnv step that ends the episode without the task done."""
    return StepResult("The room collapses. You failed.", 0.0, True, False, {})


def _lost_links(make_toy):
    """Links whose composite verdict is a failure although the part played last is solved."""
    yield (
        "switch, handed over before part 1 was solved",
        Link(make_toy(), make_toy("3-3-8-8"), "switch", condition={"after_steps": 1}),
        [combine("4", "+", "4"), *SOLVE_3_3_8_8],
    )
    yield (
        "branch, the failure branch",
        Link(
            make_toy(),
            {"success": make_toy("3-3-8-8"), "failure": make_toy("1-1-4-6")},
            "branch",
            condition={"after_steps": 1},
        ),
        [combine("4", "+", "4"), *SOLVE_1_1_4_6],
    )
    yield (
        "sequential, part 1 ended unsolved",
        Link(FakeEnv(step_fn=_ends_unsolved), make_toy("3-3-8-8"), "sequential"),
        [Action("noop"), *SOLVE_3_3_8_8],
    )


@pytest.mark.parametrize("case", range(3))
def test_rewards_never_contradict_a_failed_composite_verdict(make_toy, case):
    name, env, moves = list(_lost_links(make_toy))[case]
    env.reset(seed=0)
    results = play(env, moves)
    assert results[-1].terminated, name
    assert not env.evaluate().success, name
    after = [r for r in results if "handover" not in r.info]
    assert all(r.reward == 0.0 for r in after[-3:]), name  # the solved part 2 pays nothing
    assert results[-1].info["link_withheld_reward"] == 1.0, name  # the bridge's own reward


def test_interleaved_rewards_are_withheld_once_a_task_ended_unsolved(make_toy):
    env = Link(FakeEnv(step_fn=_ends_unsolved), make_toy("3-3-8-8"), "interleave")
    env.reset(seed=0)
    results = play(env, [Action("noop"), *SOLVE_3_3_8_8])
    assert results[-1].terminated and not env.evaluate().success
    assert results[-1].reward == 0.0 and results[-1].info["link_withheld_reward"] == 1.0


def test_a_won_composite_keeps_every_reward(make_toy):
    env = Link(make_toy(), make_toy("3-3-8-8"))
    env.reset(seed=0)
    results = play(env, [*SOLVE_4_4_10_10, *SOLVE_3_3_8_8])
    assert env.evaluate().success and results[-1].reward == 1.0
    assert not any("link_withheld_reward" in r.info for r in results)


def test_a_malformed_condition_in_a_spec_is_refused_at_build(make_toy):
    from envharness.harness import HarnessSpec

    link = Link(make_toy(), make_toy("3-3-8-8"), "switch", condition={"on_tool": "undo"})
    data = HarnessSpec.from_env(link).to_dict()
    data.pop("spec_id")
    data["components"][0]["config"]["condition"] = {"on_tool": {"name": "undo"}}
    with pytest.raises(SpecError, match="on_tool to be a non-empty str"):
        HarnessSpec.from_dict(data).build()  # at build, not at the first step
