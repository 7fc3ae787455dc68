from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from envharness import Action, InvalidActionError, StepResult, ToolSpec, load_bridge
from envharness.harness import EnvHarness, HarnessSpec, Rules
from envharness.rollout.loop import invalid_action_feedback, rollout
from envharness.rollout.trajectory import Trajectory
from envharness.testing import FakeEnv


def combine(a: str, op: str, b: str) -> Action:
    return Action("combine", {"a": a, "op": op, "b": b})


SOLVE_4_4_10_10 = [combine("10", "*", "10"), combine("100", "-", "4"), combine("96", "/", "4")]
UNDO = Action("undo")


class Script:
    """Plays a list: an Action (or dict) is returned, an exception is raised, a callable is
    called with the observation. Past the end it repeats the last item."""

    def __init__(self, items: Sequence[Any]) -> None:
        self.items = list(items)
        self.observations: list[str] = []
        self.started: tuple[str, list[ToolSpec]] | None = None

    def start(self, instruction: str, tools: Sequence[ToolSpec]) -> None:
        self.started = (instruction, list(tools))
        self.queue = list(self.items)

    def act(self, observation: str) -> Action:
        self.observations.append(observation)
        item = self.queue.pop(0) if len(self.queue) > 1 else self.queue[0]
        if isinstance(item, BaseException):
            raise item
        if callable(item):
            return item(observation)
        return item


@pytest.fixture
def toy():
    return load_bridge("toy24", task_id="4-4-10-10")


def test_scripted_solution_succeeds(toy):
    policy = Script(SOLVE_4_4_10_10)
    trajectory = rollout(toy, policy, seed=7)
    assert trajectory.end_reason == "terminated"
    assert trajectory.success and trajectory.evaluation.score == 1.0
    assert [s.action for s in trajectory.steps] == [a.to_dict() for a in SOLVE_4_4_10_10]
    assert [s.reward for s in trajectory.steps] == [0.0, 0.0, 1.0]
    assert trajectory.steps[-1].terminated and trajectory.error is None
    assert trajectory.seed == 7 and trajectory.task_id == "4-4-10-10"
    assert trajectory.bridge == "toy24" and trajectory.max_steps == toy.max_steps
    assert trajectory.spec_id == HarnessSpec.from_env(toy).spec_id
    assert trajectory.spec == HarnessSpec.from_env(toy).to_dict()
    assert trajectory.policy == "Script"
    assert trajectory.instruction == toy.instruction
    assert trajectory.first_observation.startswith("Numbers left: 4 4 10 10")
    assert policy.started == (toy.instruction, toy.tools())
    assert policy.observations[0] == trajectory.first_observation
    assert policy.observations[1] == trajectory.steps[0].observation
    assert all(s.policy_seconds >= 0 and s.env_seconds >= 0 for s in trajectory.steps)
    assert trajectory.duration_seconds > 0 and trajectory.started_at > 0
    assert sum(trajectory.usage.values()) == 0


def test_budget_ends_the_episode(toy):
    trajectory = rollout(toy, Script([UNDO]), max_steps=4)
    assert trajectory.end_reason == "budget"
    assert len(trajectory.steps) == 4 and trajectory.max_steps == 4
    assert not trajectory.success and trajectory.evaluation is not None


def test_budget_defaults_to_the_env_max_steps():
    trajectory = rollout(FakeEnv(max_steps=3), Script([Action("noop")]))
    assert trajectory.end_reason == "budget" and len(trajectory.steps) == 3


def test_success_on_the_last_step_of_the_budget_is_terminated(toy):
    trajectory = rollout(toy, Script(SOLVE_4_4_10_10), max_steps=3)
    assert trajectory.end_reason == "terminated" and trajectory.success


def test_invalid_action_from_the_policy_becomes_feedback(toy):
    policy = Script([InvalidActionError("no tool call in the reply"), *SOLVE_4_4_10_10])
    trajectory = rollout(toy, policy)
    first = trajectory.steps[0]
    assert first.action is None
    assert first.invalid == "invalid action: no tool call in the reply"
    assert "no tool call in the reply" in first.observation
    assert "Nothing changed" in first.observation
    assert "combine(a, op, b)" in first.observation and "undo()" in first.observation
    assert "Now: Numbers left: 4 4 10 10" in first.observation  # the state it is still in
    assert len(first.observation) < 300
    assert policy.observations[1] == first.observation  # the policy saw the feedback next
    assert trajectory.success and len(trajectory.steps) == 4  # the invalid step counts


def test_invalid_steps_count_against_the_budget(toy):
    trajectory = rollout(toy, Script([InvalidActionError("nope")]), max_steps=5)
    assert trajectory.end_reason == "budget"
    assert [s.invalid for s in trajectory.steps] == ["invalid action: nope"] * 5


def test_schema_mismatch_raised_by_the_env_is_an_invalid_step(toy):
    policy = Script([Action("teleport", {"to": "24"}), *SOLVE_4_4_10_10])
    trajectory = rollout(toy, policy)
    first = trajectory.steps[0]
    assert first.action == {"tool": "teleport", "args": {"to": "24"}}
    assert "unknown tool" in first.invalid and "teleport" in first.invalid
    assert first.observation.startswith("Error in teleport: unknown tool")
    assert policy.observations[1] == first.observation
    assert trajectory.success


def test_bad_arguments_are_an_invalid_step(toy):
    trajectory = rollout(toy, Script([Action("combine", {"a": "4"}), *SOLVE_4_4_10_10]))
    assert "op" in trajectory.steps[0].invalid and trajectory.success


def test_semantic_invalid_from_the_env_is_recorded(toy):
    trajectory = rollout(toy, Script([combine("5", "*", "5"), *SOLVE_4_4_10_10]))
    first = trajectory.steps[0]
    assert first.action == combine("5", "*", "5").to_dict()
    assert first.invalid is not None and "5" in first.invalid
    assert first.observation.startswith("Invalid action: 5 is not one of the numbers left")
    assert "Rejected:" not in first.observation  # the env's own feedback already says why
    assert trajectory.success


def test_the_envs_reason_is_shown_when_its_observation_lacks_it():
    env = FakeEnv(target="hi")
    trajectory = rollout(env, Script([Action("say", {"text": ""}), Action("say", {"text": "hi"})]))
    first = trajectory.steps[0]
    assert first.invalid == "nothing to say"
    assert first.observation.endswith("Rejected: nothing to say.")
    assert trajectory.success


def test_feedback_after_a_rejected_step_digests_the_last_real_observation(toy):
    policy = Script([combine("5", "*", "5"), InvalidActionError("no tool call"), *SOLVE_4_4_10_10])
    trajectory = rollout(toy, policy)
    second = trajectory.steps[1].observation
    assert "Now: Numbers left: 4 4 10 10" in second and "Invalid action" not in second


def test_the_budget_reaches_a_start_that_accepts_it(toy):
    class Budgeted(Script):
        def start(self, instruction, tools, *, max_steps=None):
            super().start(instruction, tools)
            self.budget = max_steps

    policy = Budgeted(SOLVE_4_4_10_10)
    rollout(toy, policy, max_steps=7)
    assert policy.budget == 7
    plain = Script(SOLVE_4_4_10_10)  # a start without the keyword still works
    assert rollout(load_bridge("toy24", task_id="4-4-10-10"), plain).success


def test_policy_may_return_a_dict_but_not_garbage(toy):
    plan = [a.to_dict() for a in SOLVE_4_4_10_10]
    assert rollout(toy, Script(plan)).success
    trajectory = rollout(load_bridge("toy24", task_id="4-4-10-10"), Script([None]), max_steps=2)
    assert trajectory.steps[0].action is None
    assert "expected {'tool'" in trajectory.steps[0].invalid


def test_policy_raising_every_step_is_a_policy_error(toy):
    trajectory = rollout(toy, Script([RuntimeError("model exploded")]))
    assert trajectory.end_reason == "policy_error"
    assert trajectory.error == "RuntimeError: model exploded"
    assert trajectory.steps == []
    assert trajectory.evaluation is not None and not trajectory.success


def test_policy_error_after_some_steps_keeps_them(toy):
    trajectory = rollout(toy, Script([UNDO, KeyError("k")]))
    assert trajectory.end_reason == "policy_error" and len(trajectory.steps) == 1
    assert trajectory.error == "KeyError: 'k'"


def test_start_or_attach_raising_is_a_policy_error(toy):
    class BadStart(Script):
        def start(self, instruction, tools):
            raise ValueError("no model")

    class BadAttach(Script):
        def attach(self, env):
            raise PermissionError("not privileged")

    first = rollout(toy, BadStart([UNDO]))
    assert (first.end_reason, first.error) == ("policy_error", "ValueError: no model")
    second = rollout(load_bridge("toy24", task_id="4-4-10-10"), BadAttach([UNDO]))
    assert second.end_reason == "policy_error" and "not privileged" in second.error


def test_step_timeout_ends_the_episode_without_waiting(toy):
    release = threading.Event()

    def sleepy(observation: str) -> Action:
        release.wait(5)
        return UNDO

    try:
        clock = time.perf_counter()
        trajectory = rollout(toy, Script([UNDO, sleepy]), step_timeout=0.2)
        elapsed = time.perf_counter() - clock
    finally:
        release.set()
    assert trajectory.end_reason == "timeout"
    assert trajectory.error == "the policy did not act within 0.2 s at step 1"
    assert len(trajectory.steps) == 1
    assert 0.2 <= elapsed < 2


def test_step_timeout_passes_results_and_errors_through(toy):
    assert rollout(toy, Script(SOLVE_4_4_10_10), step_timeout=5).success
    policy = Script([InvalidActionError("bad"), RuntimeError("boom")])
    trajectory = rollout(load_bridge("toy24", task_id="4-4-10-10"), policy, step_timeout=5)
    assert trajectory.steps[0].invalid == "invalid action: bad"
    assert (trajectory.end_reason, trajectory.error) == ("policy_error", "RuntimeError: boom")


def test_env_raising_in_step_is_an_env_error_and_the_env_is_closed():
    def explode(env: FakeEnv, action: Action) -> StepResult | None:
        if action.tool == "noop":
            raise RuntimeError("the container died")
        return None

    env = FakeEnv(step_fn=explode)
    trajectory = rollout(env, Script([Action("say", {"text": "hm"}), Action("noop")]))
    assert trajectory.end_reason == "env_error"
    assert trajectory.error == "RuntimeError: the container died"
    last = trajectory.steps[-1]
    assert last.action == {"tool": "noop", "args": {}} and last.error == trajectory.error
    assert len(trajectory.steps) == 2 and trajectory.evaluation is not None
    assert env.closed


def test_env_raising_in_reset_is_an_env_error_without_evaluation():
    def broken(env: FakeEnv, seed: int | None) -> str:
        raise OSError("no display")

    env = FakeEnv(reset_fn=broken)
    policy = Script([Action("noop")])
    trajectory = rollout(env, policy)
    assert (trajectory.end_reason, trajectory.error) == ("env_error", "OSError: no display")
    assert trajectory.evaluation is None and trajectory.steps == []
    assert policy.started is None and env.closed


def test_evaluate_raising_is_an_env_error():
    class NoVerdict(FakeEnv):
        def evaluate(self):
            raise RuntimeError("verifier crashed")

    env = NoVerdict()
    trajectory = rollout(env, Script([Action("say", {"text": "hello"})]))
    assert trajectory.end_reason == "env_error"
    assert trajectory.error == "evaluate() failed: RuntimeError: verifier crashed"
    assert trajectory.evaluation is None and len(trajectory.steps) == 1 and env.closed


def test_evaluate_failing_after_a_policy_error_keeps_the_first_error():
    class NoVerdict(FakeEnv):
        def evaluate(self):
            raise RuntimeError("verifier crashed")

    trajectory = rollout(NoVerdict(), Script([ValueError("first")]))
    assert (trajectory.end_reason, trajectory.error) == ("policy_error", "ValueError: first")
    assert trajectory.evaluation is None


def test_rules_error_from_a_hook_is_an_env_error_naming_the_hook(toy):
    code = """
class _Rules:
    def filter_action(self, action, state):
        if action["tool"] == "undo":
            raise ValueError("boom")
        return action
"""
    env = Rules(toy, code)
    trajectory = rollout(env, Script([combine("10", "*", "10"), UNDO]))
    assert trajectory.end_reason == "env_error"
    assert trajectory.error.startswith("RulesError: hook 'filter_action' failed")
    assert "boom" in trajectory.error
    assert len(trajectory.steps) == 2 and trajectory.steps[-1].error == trajectory.error
    assert trajectory.spec_id == HarnessSpec.from_env(env).spec_id
    assert trajectory.spec["components"][0]["type"] == "rules"


def test_blocked_steps_are_recorded_through_rules(toy):
    code = """
class _Rules:
    def filter_action(self, action, state):
        if action["tool"] == "undo":
            return "Undo is disabled in this variant."
        return action
"""
    trajectory = rollout(Rules(toy, code), Script([UNDO, UNDO, *SOLVE_4_4_10_10]))
    assert [s.blocked for s in trajectory.steps] == [True, True, False, False, False]
    assert trajectory.steps[0].observation == "Undo is disabled in this variant."
    assert trajectory.success and trajectory.n_blocked == 2


def test_blocked_and_truncated_flags_from_info():
    def gate(env: FakeEnv, action: Action) -> StepResult | None:
        if action.tool == "noop":
            return StepResult("A rule stops you.", 0.0, False, False, {"blocked": True})
        return StepResult("Time is up.", 0.0, False, True, {})

    trajectory = rollout(
        FakeEnv(step_fn=gate), Script([Action("noop"), Action("say", {"text": "x"})])
    )
    assert [s.blocked for s in trajectory.steps] == [True, False]
    assert trajectory.end_reason == "truncated" and trajectory.steps[-1].truncated


def test_trajectory_json_round_trip_is_lossless(toy):
    policy = Script([InvalidActionError("x"), Action("teleport"), combine("5", "*", "5"), UNDO])
    trajectory = rollout(toy, policy, max_steps=6, seed=3, policy_name="scripted:mix")
    assert trajectory.policy == "scripted:mix"
    again = Trajectory.from_json(trajectory.to_json())
    assert again == trajectory
    assert again.to_json() == trajectory.to_json()


def test_close_is_always_called_unless_disabled():
    cases: list[tuple[Callable[[FakeEnv, Action], Any] | None, list[Any]]] = [
        (None, [Action("say", {"text": "hello"})]),
        (None, [RuntimeError("policy")]),
        (lambda env, action: 1 / 0, [Action("noop")]),
    ]
    for step_fn, items in cases:
        env = FakeEnv(step_fn=step_fn)
        rollout(env, Script(items))
        assert env.closed
    env = FakeEnv()
    rollout(env, Script([Action("noop")]), max_steps=1, close=False)
    assert not env.closed


def test_close_failing_does_not_lose_the_trajectory(caplog):
    class StickyClose(FakeEnv):
        def close(self):
            raise RuntimeError("cannot close")

    trajectory = rollout(StickyClose(), Script([Action("say", {"text": "hello"})]))
    assert trajectory.success
    assert "cannot close" in caplog.text


def test_attach_usage_and_describe_are_used(toy):
    class Privileged(Script):
        def attach(self, env):
            self.plan = env.oracle_actions()

        def act(self, observation):
            return self.plan.pop(0)

        def usage(self):
            return {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}

        def describe(self):
            return "privileged:test"

    trajectory = rollout(toy, Privileged([]))
    assert trajectory.success and trajectory.policy == "privileged:test"
    assert trajectory.usage == {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}


def test_unserializable_stack_gets_a_minimal_spec(toy, caplog):
    class Unregistered(EnvHarness):
        component_type = "mine"

    trajectory = rollout(Unregistered(toy), Script(SOLVE_4_4_10_10))
    assert trajectory.success
    assert trajectory.spec_id == "unserializable"
    assert trajectory.spec["bridge"] == {"name": "toy24", "task_id": "4-4-10-10"}
    assert "not a registered component type" in trajectory.spec["error"]
    assert Trajectory.from_json(trajectory.to_json()) == trajectory


def test_programmer_errors_raise(toy):
    policy = Script([UNDO])
    with pytest.raises(TypeError, match="expected an ActionableEnv, got str"):
        rollout("toy24", policy)
    with pytest.raises(TypeError, match="expected a Policy .*got object"):
        rollout(toy, object())
    with pytest.raises(ValueError, match="expected max_steps to be a positive int"):
        rollout(toy, policy, max_steps=0)
    with pytest.raises(ValueError, match="expected step_timeout to be a positive number"):
        rollout(toy, policy, step_timeout=0)
    with pytest.raises(ValueError, match="expected step_timeout to be a positive number"):
        rollout(toy, policy, step_timeout=float("inf"))
    with pytest.raises(TypeError, match="expected an int seed"):
        rollout(toy, policy, seed="1")
    with pytest.raises(TypeError, match="expected policy_name to be a non-empty str"):
        rollout(toy, policy, policy_name="")


def test_feedback_lists_optional_parameters():
    tool = ToolSpec(
        "say",
        "Say it.\nMore text.",
        {
            "type": "object",
            "properties": {"text": {"type": "string"}, "loud": {"type": "boolean"}},
            "required": ["text"],
        },
    )
    text = invalid_action_feedback("bad", [tool])
    assert "Tools: say(text, loud?)" in text and "Say it" not in text
    named = invalid_action_feedback(InvalidActionError("missing 'text'", tool="say"), [tool], "Hi.")
    assert (
        named == "Error in say: missing 'text'. Nothing changed.\nUsage: say(text, loud?)\nNow: Hi."
    )
    long = invalid_action_feedback("bad", [tool], "x " * 500)
    assert len(long) < 300 and long.endswith("…")


def _without_timings(trajectory: Trajectory) -> dict:
    data = trajectory.to_dict()
    for key in ("started_at", "duration_seconds"):
        data.pop(key)
    for step in data["steps"]:
        step.pop("policy_seconds")
        step.pop("env_seconds")
    return data


def test_oracle_policy_is_attached_and_solves(toy):
    from envharness.rollout.policies import OraclePolicy

    trajectory = rollout(toy, OraclePolicy(skill=1.0, seed=0))
    assert trajectory.end_reason == "terminated" and trajectory.success
    assert trajectory.policy == "oracle:1" and len(trajectory.steps) == 3


def test_rollouts_are_deterministic_for_a_seeded_policy():
    from envharness.rollout.policies import OraclePolicy

    runs = [
        rollout(load_bridge("toy24", task_id="3-3-8-8"), OraclePolicy(skill=0.4, seed=5), seed=5)
        for _ in range(2)
    ]
    assert _without_timings(runs[0]) == _without_timings(runs[1])


def test_env_returning_garbage_from_step_is_an_env_error():
    env = FakeEnv(step_fn=lambda env, action: "not a StepResult")
    trajectory = rollout(env, Script([Action("noop")]))
    assert trajectory.end_reason == "env_error"
    assert trajectory.error.startswith("TypeError: expected env.step() to return a StepResult")
    assert env.closed


def test_huge_observations_are_cut_before_the_policy_and_the_record():
    from envharness.rollout.loop import MAX_OBSERVATION_CHARS

    huge = "spam " * 1_000_000  # 5 MB a step

    def flood(env, action):
        return StepResult(huge, 0.0, False, False, {})

    env = FakeEnv(step_fn=flood, reset_fn=lambda env, seed: huge)
    policy = Script([Action("noop")])
    trajectory = rollout(env, policy, max_steps=3)
    assert len(trajectory.first_observation) < MAX_OBSERVATION_CHARS + 100
    assert all(len(s.observation) < MAX_OBSERVATION_CHARS + 100 for s in trajectory.steps)
    assert "more characters cut" in trajectory.steps[0].observation
    assert all(len(seen) < MAX_OBSERVATION_CHARS + 100 for seen in policy.observations)
    assert len(trajectory.to_json()) < 4 * (MAX_OBSERVATION_CHARS + 100) + 10_000
    whole = rollout(
        FakeEnv(step_fn=flood), Script([Action("noop")]), max_steps=1, max_observation_chars=None
    )
    assert whole.steps[0].observation == huge
    with pytest.raises(ValueError, match="max_observation_chars"):
        rollout(FakeEnv(), Script([Action("noop")]), max_observation_chars=0)
