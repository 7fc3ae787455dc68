from __future__ import annotations

import pytest

from envharness.core import Evaluation
from envharness.errors import RiggerError
from envharness.graph.decision import (
    HARDEN_ABOVE,
    SCAFFOLD_BELOW,
    auto_direction,
    decide,
    settled,
)
from envharness.graph.objective import Objective
from envharness.rollout.stats import RolloutStats
from envharness.rollout.trajectory import Step, Trajectory


def episode(success: bool, steps: int = 3, *, seed: int = 0, loop: bool = False) -> Trajectory:
    """A synthetic Toy24-like episode; ``loop`` repeats one action for every step."""
    actions = [
        {"tool": "undo", "args": {}}
        if loop
        else {"tool": "combine", "args": {"a": str(i), "op": "+", "b": "1"}}
        for i in range(steps)
    ]
    return Trajectory(
        "1-1-4-6",
        "toy24",
        "spec",
        {},
        seed,
        "test",
        steps=[Step(i, a, f"obs {i}") for i, a in enumerate(actions)],
        evaluation=Evaluation(success, float(success), {}),
        end_reason="terminated" if success else "budget",
    )


def batch(successes: int, n: int = 5, steps: int = 3, **kwargs: object) -> list[Trajectory]:
    return [episode(i < successes, steps, seed=i, **kwargs) for i in range(n)]  # type: ignore[arg-type]


def stats(successes: int, n: int = 5, steps: int = 3, **kwargs: object) -> RolloutStats:
    return RolloutStats.from_trajectories(batch(successes, n, steps, **kwargs))


# -- Objective ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "low", "high"),
    [
        ("auto", "auto", None, None),
        ("  AUTO ", "auto", None, None),
        ("sr:0.4-0.6", "success_band", 0.4, 0.6),
        ("SR: .2 - .4", "success_band", 0.2, 0.4),
        ("steps:25-35", "steps_band", 25.0, 35.0),
        ("sr:0.5-0.5", "success_band", 0.5, 0.5),
    ],
)
def test_objective_parses_auto_and_bands(text, kind, low, high):
    objective = Objective.parse(text)
    assert (objective.kind, objective.low, objective.high) == (kind, low, high)
    assert Objective.parse(objective) is objective


def test_objective_other_text_is_a_deficiency():
    objective = Objective.parse("  gets stuck repeating the same move ")
    assert objective.kind == "deficiency"
    assert objective.text == "gets stuck repeating the same move"
    assert str(objective) == objective.text
    assert not objective.is_band and not objective.contains(0.5)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("sr:0.7-0.2", "0 <= low <= high"),
        ("sr:0.5", "malformed band"),
        ("steps:ten-20", "malformed band"),
        ("sr:0.5-1.5", r"lies in \[0, 1\]"),
        ("", "expected an objective"),
        ("   ", "expected an objective"),
    ],
)
def test_objective_rejects_malformed_text(text, match):
    with pytest.raises(RiggerError, match=match):
        Objective.parse(text)


def test_objective_rejects_non_text_and_bad_fields():
    with pytest.raises(RiggerError, match="expected an objective"):
        Objective.parse(0.5)  # type: ignore[arg-type]
    with pytest.raises(RiggerError, match="unknown objective kind"):
        Objective("sometimes")  # type: ignore[arg-type]
    with pytest.raises(RiggerError, match="needs the weakness in words"):
        Objective("deficiency", text=" ")
    with pytest.raises(RiggerError, match="0 <= low <= high"):
        Objective("steps_band", None, 5)


def test_objective_band_contains_describe_and_round_trip():
    band = Objective.parse("sr:0.4-0.6")
    assert band.contains(0.4) and band.contains(0.6) and not band.contains(0.61)
    assert str(band) == "sr:0.4-0.6"
    assert "0.4-0.6" in band.describe()
    steps = Objective.parse("steps:5-8")
    assert str(steps) == "steps:5-8" and "steps" in steps.describe()
    assert "auto" in Objective().describe() and str(Objective()) == "auto"
    for objective in (band, steps, Objective(), Objective.parse("loops a lot")):
        assert Objective.from_dict(objective.to_dict()) == objective


# -- auto_direction -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("successes", "direction"),
    [(0, "scaffold"), (1, "scaffold"), (2, "fix-behaviour"), (3, "fix-behaviour"), (4, "harden")],
)
def test_auto_direction_thresholds(successes, direction):
    assert SCAFFOLD_BELOW == 0.2 and HARDEN_ABOVE == 0.8
    assert auto_direction(stats(successes)) == direction


# -- decide: bands --------------------------------------------------------------------------------


def test_success_band_accepts_inside_and_says_which_side_outside():
    band = Objective.parse("sr:0.4-0.6")
    baseline = stats(5)
    accepted = decide(band, "harden", baseline, batch(3))
    assert accepted.decision == "accept" and accepted.rollouts == 5
    assert "inside the band" in accepted.reason
    easy = decide(band, "harden", baseline, batch(4))
    assert easy.decision == "refine" and "too easy" in easy.reason
    hard = decide(band, "harden", baseline, batch(1))
    assert hard.decision == "refine" and "too hard" in hard.reason
    assert hard.stats["successes"] == 1


def test_zero_successes_on_a_solvable_task_is_never_accepted():
    band = Objective.parse("sr:0-0.2")
    verdict = decide(band, "harden", stats(5), batch(0))
    assert verdict.decision == "refine" and "unsolvable" in verdict.reason
    # a task the policy never solved may stay at zero
    assert decide(band, "harden", stats(0), batch(0)).decision == "accept"


def test_steps_band_judges_successful_episodes_only():
    band = Objective.parse("steps:5-8")
    baseline = stats(5, steps=3)
    assert decide(band, "harden", baseline, batch(5, steps=6)).decision == "accept"
    short = decide(band, "harden", baseline, batch(5, steps=3))
    assert short.decision == "refine" and "too short" in short.reason
    long = decide(band, "scaffold", baseline, batch(5, steps=10))
    assert long.decision == "refine" and "too long" in long.reason
    none = decide(band, "harden", stats(0), batch(0, steps=12))
    assert none.decision == "refine" and "no successful episode" in none.reason


# -- decide: auto directions ----------------------------------------------------------------------


def test_scaffold_needs_success_reliably_above_the_baseline():
    auto = Objective()
    assert decide(auto, "scaffold", stats(0), batch(1)).decision == "accept"
    assert decide(auto, "scaffold", stats(1), batch(2)).decision == "refine"
    verdict = decide(auto, "scaffold", stats(1), batch(3))
    assert verdict.decision == "accept" and "rose from 20%" in verdict.reason


def test_harden_needs_success_reliably_below_the_baseline_but_above_zero():
    auto = Objective()
    assert decide(auto, "harden", stats(5), batch(4)).decision == "accept"
    assert decide(auto, "harden", stats(5), batch(5)).decision == "refine"
    zero = decide(auto, "harden", stats(5), batch(0))
    assert zero.decision == "refine" and "unsolvable" in zero.reason
    assert decide(auto, "harden", stats(4), batch(3)).decision == "refine"


def test_fix_behaviour_accepts_fewer_behaviour_failures_without_losing_success():
    auto = Objective()
    baseline = RolloutStats.from_trajectories(batch(2, steps=6, loop=True))
    assert baseline.failures == {"loop": 3}
    better = decide(auto, "fix-behaviour", baseline, batch(2, steps=6))
    assert better.decision == "accept" and "behaviour failures fell" in better.reason
    same = decide(auto, "fix-behaviour", baseline, batch(2, steps=6, loop=True))
    assert same.decision == "refine"


def test_direction_none_under_auto_rejects():
    verdict = decide(Objective(), "none", stats(3), batch(3))
    assert verdict.decision == "reject"


def test_decide_on_no_rollouts_refines():
    verdict = decide(Objective.parse("sr:0.4-0.6"), "scaffold", stats(0), [])
    assert verdict.decision == "refine" and verdict.rollouts == 0


def test_decide_rejects_things_that_are_not_trajectories():
    with pytest.raises(TypeError, match="expected a Trajectory"):
        decide(Objective(), "harden", stats(5), ["not a trajectory"])  # type: ignore[list-item]


# -- settled --------------------------------------------------------------------------------------


def test_settled_stops_once_no_completion_can_change_the_decision():
    band = Objective.parse("sr:0.4-0.6")
    baseline = stats(5)
    # 4 successes of 4: 4/5 or 5/5, too easy either way
    assert settled(band, "harden", baseline, batch(4, n=4), 5)
    # 2 of 3: 2/5 .. 4/5 — not settled
    assert not settled(band, "harden", baseline, batch(2, n=3), 5)
    # 0 of 4: at most 1/5, too hard either way
    assert settled(band, "harden", baseline, batch(0, n=4), 5)
    assert settled(band, "harden", baseline, batch(2, n=5), 5)


def test_settled_waits_for_steps_bands_and_behaviour_fixes():
    baseline = stats(5)
    assert not settled(Objective.parse("steps:5-8"), "harden", baseline, batch(4, n=4), 5)
    assert not settled(Objective(), "fix-behaviour", baseline, batch(4, n=4), 5)
    assert settled(Objective.parse("steps:5-8"), "harden", baseline, batch(5), 5)


def test_settled_auto_harden_stops_on_a_clear_failure_to_harden():
    # baseline 5/5, 2 successes of 2: 2/5 (accepted) up to 5/5 (refined) are still possible
    assert not settled(Objective(), "harden", stats(5), batch(2, n=2), 5)
    # 0 of 4: 0/5 (unsolvable) or 1/5 (accepted) are still possible
    assert not settled(Objective(), "harden", stats(5), batch(0, n=4), 5)
    # 4 of 4: 4/5 (accepted) or 5/5 (refined)
    assert not settled(Objective(), "harden", stats(5), batch(4, n=4), 5)
    assert settled(Objective(), "harden", stats(5), batch(5, n=5), 5)
