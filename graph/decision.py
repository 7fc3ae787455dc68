"""Validation decisions from K-rollout statistics, with early stopping.

A candidate is judged on the statistics of K fresh rollouts, compared with the baseline and the
objective; never on one trajectory. Success rates of K samples are uncertain, so comparisons with
the baseline use the Wilson interval, and a band is judged on the point estimate (the band itself
is the tolerance the user chose). Zero successes on a task the policy could solve is a rejection:
an unsolvable task teaches nothing.

Early stopping: after m of K rollouts, :func:`settled` tries every way the remaining K - m could
go (as success counts) and stops when the decision is the same for all of them.
"""

from __future__ import annotations

from collections.abc import Sequence

from envharness.graph.objective import Objective
from envharness.graph.records import Verdict
from envharness.rollout.stats import RolloutStats, wilson_interval
from envharness.rollout.trajectory import Trajectory

__all__ = ["SCAFFOLD_BELOW", "HARDEN_ABOVE", "auto_direction", "decide", "settled"]

SCAFFOLD_BELOW = 0.2
"""``auto`` scaffolds a task whose baseline success rate is at most this."""

HARDEN_ABOVE = 0.8
"""``auto`` hardens a task whose baseline success rate is at least this."""


def auto_direction(baseline: RolloutStats) -> str:
    """What ``auto`` does with a baseline: ``scaffold``, ``harden`` or ``fix-behaviour``."""
    if baseline.success_rate <= SCAFFOLD_BELOW:
        return "scaffold"
    if baseline.success_rate >= HARDEN_ABOVE:
        return "harden"
    return "fix-behaviour"


def _behaviour_score(stats: RolloutStats) -> float:
    """Failures that point at behaviour (loops, invalid or blocked actions) per episode."""
    if stats.n == 0:
        return 0.0
    behaviour = sum(stats.failures.get(k, 0) for k in ("loop", "invalid_actions", "blocked"))
    return behaviour / stats.n


def _judge(
    objective: Objective,
    direction: str,
    baseline: RolloutStats,
    candidate: RolloutStats,
    successes: int,
    n: int,
) -> tuple[str, str]:
    """The decision on ``successes`` of ``n`` (success-rate view) plus the other statistics."""
    rate = successes / n if n else 0.0
    lo, hi = wilson_interval(successes, n)
    if successes == 0 and baseline.successes > 0:
        return "refine", (
            f"0/{n} successes on a task the policy solved {baseline.successes}/{baseline.n} "
            "times: the candidate made it unsolvable for this policy; make a smaller change"
        )
    if objective.kind == "success_band":
        if objective.contains(rate):
            return "accept", f"success rate {rate:.0%} is inside the band {objective}"
        side = "too hard" if rate < objective.low else "too easy"  # type: ignore[operator]
        return "refine", (
            f"success rate {rate:.0%} ({successes}/{n}) is outside the band {objective}: "
            f"the harness is {side}"
        )
    if objective.kind == "steps_band":
        steps = candidate.success_steps_mean
        if successes == 0 or steps is None:
            return "refine", "no successful episode, so no steps to put in the band"
        if objective.contains(steps):
            return "accept", f"successful episodes take {steps:.1f} steps, inside {objective}"
        side = "too short" if steps < objective.low else "too long"  # type: ignore[operator]
        return "refine", f"successful episodes take {steps:.1f} steps: {side} for {objective}"
    if direction == "scaffold":
        if lo > baseline.success_rate:
            return "accept", (
                f"success rose from {baseline.success_rate:.0%} to {rate:.0%} "
                f"(95% CI {lo:.0%}-{hi:.0%} lies above the baseline)"
            )
        return "refine", (
            f"success {rate:.0%} ({successes}/{n}) is not reliably above the baseline "
            f"{baseline.success_rate:.0%}: scaffold more"
        )
    if direction == "harden":
        if hi < baseline.success_rate and successes > 0:
            return "accept", (
                f"success fell from {baseline.success_rate:.0%} to {rate:.0%} "
                f"(95% CI {lo:.0%}-{hi:.0%} lies below the baseline) and stays above zero"
            )
        return "refine", (
            f"success {rate:.0%} ({successes}/{n}) is not reliably below the baseline "
            f"{baseline.success_rate:.0%}: harden more"
        )
    if direction == "fix-behaviour":
        before, after = _behaviour_score(baseline), _behaviour_score(candidate)
        if after < before and hi >= baseline.ci_low:
            return "accept", (
                f"behaviour failures fell from {before:.2f} to {after:.2f} per episode without "
                "losing success"
            )
        return "refine", (
            f"behaviour failures {after:.2f} per episode (baseline {before:.2f}), success "
            f"{rate:.0%}: target the diagnosed behaviour more directly"
        )
    return "reject", "the diagnosis found nothing to change"


def decide(
    objective: Objective,
    direction: str,
    baseline: RolloutStats,
    trajectories: Sequence[Trajectory],
) -> Verdict:
    """Judges a candidate from its validation trajectories.

    Args:
        objective: The rig's objective.
        direction: The diagnosis's direction (used by ``auto`` and plain-language objectives).
        baseline: Statistics of the baseline rollouts.
        trajectories: The candidate's validation rollouts.

    Returns:
        ``accept`` or ``refine`` with a reason the writer can act on (``reject`` only when the
        direction is ``none``); the router turns ``refine`` into ``reject`` when no iterations
        remain.

    Example:
        >>> from envharness.rollout import RolloutStats
        >>> none = RolloutStats.from_trajectories([])
        >>> decide(Objective.parse("sr:0.4-0.6"), "scaffold", none, []).decision
        'refine'
    """
    stats = RolloutStats.from_trajectories(trajectories)
    decision, reason = _judge(objective, direction, baseline, stats, stats.successes, stats.n)
    return Verdict(decision, reason, stats.to_dict(), rollouts=stats.n)  # type: ignore[arg-type]


def settled(
    objective: Objective,
    direction: str,
    baseline: RolloutStats,
    trajectories: Sequence[Trajectory],
    k: int,
) -> bool:
    """Whether the decision on K rollouts is already fixed by the first ``len(trajectories)``.

    Every completion of the remaining rollouts (0 to all of them successful) is tried on the
    success-rate view; the decision is settled when all agree. Objectives judged on more than
    success (steps bands, behaviour fixes) settle only when the rollouts are done.
    """
    m = len(trajectories)
    if m >= k:
        return True
    if objective.kind == "steps_band" or (
        objective.kind != "success_band" and direction == "fix-behaviour"
    ):
        return False
    stats = RolloutStats.from_trajectories(trajectories)
    outcomes = {
        _judge(objective, direction, baseline, stats, stats.successes + extra, k)[0]
        for extra in range(k - m + 1)
    }
    return len(outcomes) == 1
