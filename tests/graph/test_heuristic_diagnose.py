from __future__ import annotations

import pytest

from envharness.core import Evaluation
from envharness.errors import RiggerError
from envharness.graph.heuristic import diagnosis_direction, heuristic_diagnosis
from envharness.graph.objective import Objective
from envharness.graph.records import Diagnosis
from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.rollout import OraclePolicy, rollout
from envharness.rollout.stats import RolloutStats
from envharness.rollout.trajectory import Step, Trajectory

UNDO = {"tool": "undo", "args": {}}


def combine(a: str, b: str = "1", op: str = "+") -> dict:
    return {"tool": "combine", "args": {"a": a, "op": op, "b": b}}


def episode(
    steps: list[Step],
    *,
    success: bool = False,
    seed: int = 0,
    end_reason: str | None = None,
    error: str | None = None,
) -> Trajectory:
    return Trajectory(
        "4-4-10-10",
        "toy24",
        "spec",
        {},
        seed,
        "test",
        steps=steps,
        evaluation=Evaluation(success, float(success), {}),
        end_reason=end_reason or ("terminated" if success else "budget"),
        error=error,
    )


def solved(seed: int = 0, n: int = 3) -> Trajectory:
    steps = [Step(i, combine(str(i)), f"obs {i}") for i in range(n)]
    return episode(steps, success=True, seed=seed)


def unsolved(seed: int = 0, n: int = 12) -> Trajectory:
    steps = [Step(i, combine(str(i)), f"obs {i}") for i in range(n)]
    return episode(steps, seed=seed)


def looping(seed: int = 0) -> Trajectory:
    steps = [Step(0, combine("4", "4"), "Numbers left: 8 10 10")]
    steps += [
        Step(i, UNDO, "Undid") if i % 2 else Step(i, combine("4", "4"), "x") for i in range(1, 9)
    ]
    return episode(steps, seed=seed)


def invalid(seed: int = 0) -> Trajectory:
    steps = [
        Step(
            0,
            combine("7"),
            "Invalid action: 7 is not one of the numbers left.",
            invalid="7 is not left",
        ),
        Step(1, combine("10", "10", "*"), "Numbers left: 4 4 100"),
        Step(2, combine("9"), "Invalid action", invalid="9 is not left"),
        Step(3, combine("7"), "Invalid action", invalid="7 is not left"),
    ]
    return episode(steps, seed=seed)


def test_always_solving_policy_is_hardened_with_mean_steps():
    diagnosis = heuristic_diagnosis([solved(s, 3) for s in range(4)] + [solved(4, 5)], "auto")
    assert diagnosis.direction == "harden"
    assert diagnosis.source == "heuristic"
    (weakness,) = diagnosis.weaknesses
    assert weakness.kind == "always_solves" and weakness.episodes == 5
    assert "3.4 steps on average (3-5)" in weakness.description
    assert diagnosis.stats["successes"] == 5
    assert "Direction: harden" in diagnosis.summary


def test_failing_policy_is_scaffolded_with_budget_evidence():
    diagnosis = heuristic_diagnosis([unsolved(s) for s in range(5)], Objective())
    assert diagnosis.direction == "scaffold"
    budget = next(w for w in diagnosis.weaknesses if w.kind == "budget")
    assert budget.episodes == 5
    assert budget.evidence[0] == "episode 0 (seed 0) used all 12 steps without success"


def test_loops_give_step_numbers_and_the_repeated_actions():
    batch = [looping(0), looping(1), solved(2), solved(3), unsolved(4)]
    diagnosis = heuristic_diagnosis(batch, "auto")
    assert diagnosis.direction == "fix-behaviour"  # 2 of 3 failures are loops
    loop = next(w for w in diagnosis.weaknesses if w.kind == "loop")
    assert loop.episodes == 2
    assert loop.evidence[0] == (
        "episode 0 (seed 0): steps 0-7 repeat [combine(a='4', op='+', b='4'), undo()] 4 times"
    )
    assert "loop" in diagnosis.summary


def test_invalid_messages_are_deduplicated_with_step_numbers():
    batch = [invalid(0), invalid(1), solved(2), solved(3), solved(4)]
    diagnosis = heuristic_diagnosis(batch, "auto")
    weakness = next(w for w in diagnosis.weaknesses if w.kind == "invalid_actions")
    assert weakness.episodes == 2
    assert "6 invalid actions in 2 of 5 episodes (2 distinct messages)" == weakness.description
    assert weakness.evidence[0] == (
        "'7 is not left' at episode 0 step 0, episode 0 step 3, episode 1 step 0 (+1 more)"
    )
    assert weakness.evidence[1].startswith("'9 is not left' at episode 0 step 2")


def test_blocked_steps_errors_and_wrong_ends_are_reported():
    blocked = episode(
        [Step(i, UNDO, "Undo is disabled in this variant.", blocked=True) for i in range(2)]
    )
    crashed = episode(
        [Step(0, combine("4"), "", error="RulesError: boom")],
        end_reason="env_error",
        error="RulesError: filter_action raised ZeroDivisionError",
        seed=1,
    )
    stuck = episode([], end_reason="policy_error", error="PolicyError: no model", seed=2)
    slow = episode([], end_reason="timeout", error="did not act within 5 s", seed=3)
    wrong = episode(
        [Step(0, combine("4"), "One number is left and it is not 24.", terminated=True)],
        end_reason="terminated",
        seed=4,
    )
    diagnosis = heuristic_diagnosis([blocked, crashed, stuck, slow, wrong], "auto")
    kinds = {w.kind: w for w in diagnosis.weaknesses}
    assert kinds["blocked"].evidence[0] == (
        "episode 0 step 0: undo() was blocked: 'Undo is disabled in this variant.'"
    )
    assert kinds["env_error"].evidence == [
        "episode 1 (seed 1) at step 1: RulesError: filter_action raised ZeroDivisionError"
    ]
    assert kinds["policy_error"].evidence == ["episode 2 (seed 2) at step 0: PolicyError: no model"]
    assert kinds["timeout"].episodes == 1
    assert kinds["wrong_end"].evidence[0].startswith("episode 4 (seed 4) ended at step 0")
    assert diagnosis.direction == "scaffold"


@pytest.mark.parametrize(
    ("successes", "objective", "direction"),
    [
        (1, "sr:0.4-0.6", "scaffold"),
        (2, "sr:0.4-0.6", "none"),
        (3, "sr:0.4-0.6", "none"),
        (4, "sr:0.4-0.6", "harden"),
        (0, "sr:0-0.2", "none"),
    ],
)
def test_success_band_direction(successes, objective, direction):
    batch = [solved(i) if i < successes else unsolved(i) for i in range(5)]
    assert heuristic_diagnosis(batch, objective).direction == direction


def test_steps_band_direction_and_weaknesses():
    short = heuristic_diagnosis([solved(s, 3) for s in range(5)], "steps:5-8")
    assert short.direction == "harden"
    assert any(w.kind == "too_fast" for w in short.weaknesses)
    long = heuristic_diagnosis([solved(s, 11) for s in range(5)], "steps:5-8")
    assert long.direction == "scaffold"
    assert any(w.kind == "too_slow" for w in long.weaknesses)
    inside = heuristic_diagnosis([solved(s, 6) for s in range(5)], "steps:5-8")
    assert inside.direction == "none"
    nothing = heuristic_diagnosis([unsolved(s) for s in range(5)], "steps:5-8")
    assert nothing.direction == "scaffold"


def test_middling_baseline_without_behaviour_failures_scaffolds_or_hardens():
    low = [solved(0), solved(1)] + [unsolved(s) for s in range(2, 5)]
    assert heuristic_diagnosis(low, "auto").direction == "scaffold"
    high = [solved(s) for s in range(3)] + [unsolved(3), unsolved(4)]
    assert heuristic_diagnosis(high, "auto").direction == "harden"
    # with 10 rollouts both sides can be shown: the side of 50% decides
    ten = [solved(s) for s in range(6)] + [unsolved(s) for s in range(6, 10)]
    direction, why = diagnosis_direction(RolloutStats.from_trajectories(ten), Objective())
    assert direction == "harden" and "not behavioural" in why
    four = [solved(s) for s in range(4)] + [unsolved(s) for s in range(4, 10)]
    assert diagnosis_direction(RolloutStats.from_trajectories(four), Objective())[0] == "scaffold"


def test_deficiency_is_diagnosed_as_auto_and_says_so():
    diagnosis = heuristic_diagnosis([solved(s) for s in range(5)], "keeps undoing good moves")
    assert diagnosis.direction == "harden"
    assert "cannot read a plain-language deficiency" in diagnosis.summary


def test_diagnosis_round_trips_through_a_dict():
    diagnosis = heuristic_diagnosis([looping(0), invalid(1), solved(2)], "sr:0.4-0.6")
    assert Diagnosis.from_dict(diagnosis.to_dict()) == diagnosis


def test_diagnosis_direction_explains_itself():
    direction, why = diagnosis_direction(
        RolloutStats.from_trajectories([solved(0)]), Objective.parse("sr:0.4-0.6")
    )
    assert direction == "harden" and "above the band" in why


def test_diagnosis_needs_trajectories():
    with pytest.raises(RiggerError, match="no baseline trajectories"):
        heuristic_diagnosis([], "auto")
    with pytest.raises(RiggerError, match="expected a Trajectory"):
        heuristic_diagnosis(["nope"], "auto")  # type: ignore[list-item]
    with pytest.raises(RiggerError, match="malformed band"):
        heuristic_diagnosis([solved()], "sr:high")


def test_real_toy24_rollouts():
    spec = HarnessSpec(BridgeSpec("toy24", "4-4-10-10"))
    expert = [rollout(spec.build(), OraclePolicy(1.0, s), seed=s) for s in range(5)]
    assert heuristic_diagnosis(expert, "auto").direction == "harden"
    novice = [rollout(spec.build(), OraclePolicy(0.0, s), seed=s) for s in range(5)]
    diagnosis = heuristic_diagnosis(novice, "auto")
    assert diagnosis.direction == "scaffold"
    assert diagnosis.stats["successes"] == 0
    assert diagnosis.weaknesses and all(w.evidence for w in diagnosis.weaknesses)
