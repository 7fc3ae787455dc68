"""Statistics over a batch of rollouts: what EnvRigger decides from.

:class:`RolloutStats` summarizes K trajectories (success rate with a Wilson interval, step counts,
invalid and blocked rates, time-outs, errors, repeated-action loops and failure categories);
:func:`find_loop` locates a loop in one action sequence so a report can cite its step numbers.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from envharness.rollout.trajectory import END_REASONS, Trajectory

__all__ = [
    "FAILURE_CATEGORIES",
    "RolloutStats",
    "failure_category",
    "find_loop",
    "stats_by_task",
    "wilson_interval",
]

FAILURE_CATEGORIES: tuple[str, ...] = (
    "timeout",
    "policy_error",
    "env_error",
    "loop",
    "invalid_actions",
    "blocked",
    "budget",
    "wrong_end",
)
"""Failure categories, in the priority order :func:`failure_category` applies them."""

_MIN_REPEATS = 3
_PERIODS = (1, 2, 3)


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval for ``k`` successes in ``n`` trials.

    Unlike the normal approximation it stays inside [0, 1] and is informative at ``k = 0`` or
    ``k = n``, which is where small-K rollout batches often land. ``n = 0`` gives ``(0.0, 1.0)``
    (nothing is known).

    Args:
        k: Successes.
        n: Trials.
        z: The normal quantile; 1.96 for a 95% interval.

    Raises:
        ValueError: If ``k`` or ``n`` is not an int with ``0 <= k <= n``, or ``z`` is not positive.

    Example:
        >>> lo, hi = wilson_interval(0, 5)
        >>> round(lo, 4), round(hi, 4)
        (0.0, 0.4345)
    """
    for name, value in (("k", k), ("n", n)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an int {name}, got {value!r}")
    if not 0 <= k <= n:
        raise ValueError(f"expected 0 <= k <= n, got k={k}, n={n}")
    if not (isinstance(z, int | float) and z > 0):
        raise ValueError(f"expected a positive z, got {z!r}")
    if n == 0:
        return 0.0, 1.0
    p = k / n
    z2 = z * z
    denominator = 1.0 + z2 / n
    center = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n)) / denominator
    return max(0.0, center - half), min(1.0, center + half)


def find_loop(actions: Sequence[Hashable | None]) -> tuple[int, int, int] | None:
    """Finds the first repeated-action loop in an action sequence.

    A loop is the same action 3 or more times in a row (period 1), or a cycle of 2 or 3 actions
    repeated 3 or more times in a row (``a b a b a b``). ``None`` entries (steps without an action)
    never take part in a loop. The loop reported is the one starting earliest, with its smallest
    period and every consecutive repeat counted.

    Args:
        actions: One hashable per step, e.g. :meth:`Trajectory.action_keys` output.

    Returns:
        ``(start, period, repeats)``: the loop covers steps ``start`` to
        ``start + period * repeats - 1``; ``None`` if there is no loop.

    Example:
        >>> find_loop(["a", "b", "c", "b", "c", "b", "c", "d"])
        (1, 2, 3)
        >>> find_loop(["a", "a", "b"]) is None
        True
    """
    items = list(actions)
    n = len(items)
    for start in range(n):
        for period in _PERIODS:
            if start + period * _MIN_REPEATS > n:
                break
            block = items[start : start + period]
            if any(item is None for item in block) or _has_shorter_period(block):
                continue
            repeats = 1
            while items[start + repeats * period : start + (repeats + 1) * period] == block:
                repeats += 1
            if repeats >= _MIN_REPEATS:
                return start, period, repeats
    return None


def _has_shorter_period(block: list[Any]) -> bool:
    """Whether ``block`` (length 2 or 3) is one action repeated, i.e. really period 1."""
    return len(block) > 1 and all(item == block[0] for item in block)


def failure_category(trajectory: Trajectory) -> str | None:
    """Why an episode failed, as one of :data:`FAILURE_CATEGORIES`; ``None`` if it succeeded.

    The first that applies, in order: ``timeout``, ``policy_error``, ``env_error`` (the end
    reason), ``loop`` (:func:`find_loop` finds one), ``invalid_actions`` (at least half the steps
    invalid), ``blocked`` (at least half the steps blocked by a rule), ``budget`` (the steps ran
    out), ``wrong_end`` (the env ended the episode without success).

    Example:
        >>> failure_category(Trajectory("t", "toy24", "id", {}, 0, "p", end_reason="timeout"))
        'timeout'
    """
    if trajectory.success:
        return None
    if trajectory.end_reason in ("timeout", "policy_error", "env_error"):
        return trajectory.end_reason
    if find_loop(trajectory.action_keys()) is not None:
        return "loop"
    n = trajectory.n_steps
    if n and 2 * trajectory.n_invalid >= n:
        return "invalid_actions"
    if n and 2 * trajectory.n_blocked >= n:
        return "blocked"
    if trajectory.end_reason == "budget":
        return "budget"
    return "wrong_end"


@dataclass(frozen=True)
class RolloutStats:
    """Statistics over a batch of trajectories (build them with :meth:`from_trajectories`).

    Empty input is well defined: ``n = 0``, a success rate of 0, the interval ``(0, 1)`` and
    zeros elsewhere (``success_steps_mean`` is ``None`` whenever nothing succeeded).

    Attributes:
        n: Episodes.
        successes: Episodes the verifier accepted.
        success_rate: ``successes / n`` (0 when ``n = 0``).
        ci_low: Lower end of the Wilson 95% interval of the success rate.
        ci_high: Upper end of it.
        steps_mean: Mean agent steps per episode.
        steps_std: Population standard deviation of the steps.
        steps_min: Fewest steps.
        steps_max: Most steps.
        success_steps_mean: Mean steps of the successful episodes (``None`` without any).
        invalid_rate: Invalid steps over all steps (0 without steps).
        blocked_rate: Blocked steps over all steps (0 without steps).
        timeouts: Episodes that ended in a policy time-out.
        errors: Episodes that ended in a policy or env error.
        loops: Episodes with a repeated-action loop (:func:`find_loop`), successful ones included.
        end_reasons: Episodes per end reason (every reason listed, zeros included).
        failures: Failed episodes per :func:`failure_category` (only categories that occur).

    Example:
        >>> stats = RolloutStats.from_trajectories([
        ...     Trajectory("t", "toy24", "id", {}, seed, "p", end_reason="budget")
        ...     for seed in range(4)
        ... ])
        >>> stats.success_rate, round(stats.ci_high, 3), stats.failures
        (0.0, 0.49, {'budget': 4})
        >>> stats.summary()[:40]
        'n=4 success 0/4 (0%, 95% CI 0-49%) steps'
    """

    n: int
    successes: int
    success_rate: float
    ci_low: float
    ci_high: float
    steps_mean: float
    steps_std: float
    steps_min: int
    steps_max: int
    success_steps_mean: float | None
    invalid_rate: float
    blocked_rate: float
    timeouts: int
    errors: int
    loops: int
    end_reasons: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_trajectories(cls, trajectories: Iterable[Trajectory]) -> RolloutStats:
        """Computes the statistics of a batch.

        Raises:
            TypeError: If an item is not a :class:`Trajectory`.
        """
        batch = list(trajectories)
        for i, item in enumerate(batch):
            if not isinstance(item, Trajectory):
                raise TypeError(f"item {i}: expected a Trajectory, got {type(item).__name__}")
        n = len(batch)
        steps = [t.n_steps for t in batch]
        total_steps = sum(steps)
        successes = [t for t in batch if t.success]
        lo, hi = wilson_interval(len(successes), n)
        reasons = Counter(t.end_reason for t in batch)
        failures = Counter(c for t in batch if (c := failure_category(t)) is not None)
        return cls(
            n=n,
            successes=len(successes),
            success_rate=len(successes) / n if n else 0.0,
            ci_low=lo,
            ci_high=hi,
            steps_mean=statistics.fmean(steps) if n else 0.0,
            steps_std=statistics.pstdev(steps) if n else 0.0,
            steps_min=min(steps, default=0),
            steps_max=max(steps, default=0),
            success_steps_mean=(
                statistics.fmean(t.n_steps for t in successes) if successes else None
            ),
            invalid_rate=sum(t.n_invalid for t in batch) / total_steps if total_steps else 0.0,
            blocked_rate=sum(t.n_blocked for t in batch) / total_steps if total_steps else 0.0,
            timeouts=reasons["timeout"],
            errors=reasons["policy_error"] + reasons["env_error"],
            loops=sum(1 for t in batch if find_loop(t.action_keys()) is not None),
            end_reasons={reason: reasons[reason] for reason in END_REASONS}
            | {r: c for r, c in sorted(reasons.items()) if r not in END_REASONS},
            failures={c: failures[c] for c in FAILURE_CATEGORIES if failures[c]},
        )

    def to_dict(self) -> dict[str, Any]:
        """The statistics as a JSON-able dict (the field names as keys)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RolloutStats:
        """Rebuilds statistics from :meth:`to_dict` output.

        Raises:
            ValueError: If fields are missing or unknown.
        """
        try:
            return cls(**dict(data))
        except TypeError as e:
            raise ValueError(f"malformed RolloutStats dict: {e}") from e

    def summary(self) -> str:
        """A one-line summary for logs and tables."""
        return (
            f"n={self.n} success {self.successes}/{self.n} ({self.success_rate:.0%}, "
            f"95% CI {self.ci_low * 100:.0f}-{self.ci_high * 100:.0f}%) "
            f"steps {self.steps_mean:.1f}±{self.steps_std:.1f} "
            f"invalid {self.invalid_rate:.0%} blocked {self.blocked_rate:.0%} "
            f"loops {self.loops} timeouts {self.timeouts} errors {self.errors}"
        )


def stats_by_task(trajectories: Iterable[Trajectory]) -> dict[str, RolloutStats]:
    """:class:`RolloutStats` per task id, in sorted task order.

    Raises:
        TypeError: If an item is not a :class:`Trajectory`.

    Example:
        >>> batch = [Trajectory(task, "toy24", "id", {}, 0, "p") for task in ("b", "a", "b")]
        >>> {task: stats.n for task, stats in stats_by_task(batch).items()}
        {'a': 1, 'b': 2}
    """
    groups: dict[str, list[Trajectory]] = {}
    for i, item in enumerate(trajectories):
        if not isinstance(item, Trajectory):
            raise TypeError(f"item {i}: expected a Trajectory, got {type(item).__name__}")
        groups.setdefault(item.task_id, []).append(item)
    return {task: RolloutStats.from_trajectories(groups[task]) for task in sorted(groups)}
