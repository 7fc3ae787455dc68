"""What an arm scored on the original test tasks, and paired differences between arms.

Per evaluation run (every test task played once), the success rate, the mean steps, the mean
steps of successful episodes and the tokens per episode; over runs, their mean and standard
deviation. Two arms are compared task by task: each task's success averaged over runs, the
mean of the per-task differences, and a percentile bootstrap over tasks for its 95% interval
(tasks are the unit that varies between benchmarks; runs only re-sample the policy).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from envharness.rollout.trajectory import Trajectory

__all__ = ["ArmScore", "PairedDifference", "paired_difference", "score_arm", "task_success"]

BOOTSTRAP_RESAMPLES = 2000


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _std(values: Sequence[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else 0.0


def _tokens(trajectory: Trajectory) -> int:
    usage = trajectory.usage or {}
    total = usage.get("total_tokens") or 0
    return int(total or (usage.get("input_tokens", 0) + usage.get("output_tokens", 0)))


@dataclass(frozen=True)
class ArmScore:
    """One arm after some rounds, evaluated on the test tasks.

    Attributes:
        arm: The arm.
        round: Rounds of learning behind it (0: no skills).
        envs: Train environments its bank was learned from.
        episodes: Test episodes played (runs × test tasks).
        success_by_run: The success rate of each run.
        success_mean: Their mean.
        success_std: Their standard deviation (0 for one run).
        steps_mean: Mean steps per episode, over all runs.
        success_steps_mean: Mean steps of the successful episodes (``None`` without any).
        tokens_per_episode: Mean tokens per episode (``None`` when the policy reports none).
        skills: Skills in the arm's bank.
    """

    arm: str
    round: int
    envs: int
    episodes: int
    success_by_run: tuple[float, ...]
    success_mean: float
    success_std: float
    steps_mean: float
    success_steps_mean: float | None
    tokens_per_episode: float | None
    skills: int


def score_arm(
    arm: str, round_index: int, envs: int, runs: Sequence[Sequence[Trajectory]], skills: int
) -> ArmScore:
    """Scores the test episodes of one arm, grouped by run."""
    rates = [statistics.fmean(t.success for t in run) if run else 0.0 for run in runs]
    episodes = [t for run in runs for t in run]
    steps = [float(len(t.steps)) for t in episodes]
    won = [float(len(t.steps)) for t in episodes if t.success]
    tokens = [_tokens(t) for t in episodes]
    return ArmScore(
        arm=arm,
        round=round_index,
        envs=envs,
        episodes=len(episodes),
        success_by_run=tuple(rates),
        success_mean=statistics.fmean(rates) if rates else 0.0,
        success_std=_std(rates),
        steps_mean=_mean(steps) or 0.0,
        success_steps_mean=_mean(won),
        tokens_per_episode=_mean([float(t) for t in tokens]) if any(tokens) else None,
        skills=skills,
    )


def task_success(runs: Sequence[Sequence[Trajectory]]) -> dict[str, float]:
    """Each test task's success rate over the runs."""
    by_task: dict[str, list[float]] = {}
    for run in runs:
        for t in run:
            by_task.setdefault(t.task_id, []).append(float(t.success))
    return {task: statistics.fmean(values) for task, values in by_task.items()}


@dataclass(frozen=True)
class PairedDifference:
    """``arm`` minus ``baseline``, task by task.

    Attributes:
        arm: The arm compared.
        baseline: The arm it is compared with.
        round: The rounds behind both.
        tasks: Test tasks compared.
        mean: The mean per-task success difference.
        low: The 2.5th percentile of the bootstrap means.
        high: The 97.5th percentile.
        better: Tasks where ``arm`` scored higher.
        worse: Tasks where it scored lower.
    """

    arm: str
    baseline: str
    round: int
    tasks: int
    mean: float
    low: float
    high: float
    better: int
    worse: int


def paired_difference(
    arm: str,
    baseline: str,
    round_index: int,
    scores: Mapping[str, float],
    baseline_scores: Mapping[str, float],
    *,
    seed: int = 0,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> PairedDifference:
    """The per-task difference of two arms with a percentile-bootstrap 95% interval.

    Only tasks both arms played are compared. The bootstrap draws tasks with replacement
    (``resamples`` times, from ``random.Random(seed)``), so the interval is
    reproducible.
    """
    tasks = sorted(set(scores) & set(baseline_scores))
    diffs = [scores[t] - baseline_scores[t] for t in tasks]
    if not diffs:
        return PairedDifference(arm, baseline, round_index, 0, 0.0, 0.0, 0.0, 0, 0)
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(statistics.fmean(rng.choices(diffs, k=n)) for _ in range(resamples))
    return PairedDifference(
        arm=arm,
        baseline=baseline,
        round=round_index,
        tasks=n,
        mean=statistics.fmean(diffs),
        low=_percentile(means, 0.025),
        high=_percentile(means, 0.975),
        better=sum(d > 0 for d in diffs),
        worse=sum(d < 0 for d in diffs),
    )


def _percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values, interpolated linearly between neighbours."""
    position = q * (len(ordered) - 1)
    below = int(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)
