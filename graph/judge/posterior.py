"""Posteriors on success rates and step means: the numbers every rigger decision rests on.

A success rate ``p`` observed as ``s`` successes in ``n`` episodes has, under the uniform prior
``Beta(1, 1)``, the posterior ``Beta(1 + s, 1 + n - s)``. From it:

- :func:`band_probability` — ``P(low <= p <= high | s, n)``, the posterior mass of a band;
- :func:`credible_interval` — the equal-tailed interval holding ``level`` of the mass;
- :func:`shift_probability` — ``P(p_1 - p_0 >= delta)`` for two independent rates (a candidate
  against the baseline, each with its own uncertainty), by numerical integration of
  ``∫ f_0(x) · (1 - F_1(x + delta)) dx`` on a fine grid;
- :func:`fisher_p_value` — the one-sided Fisher exact test, reported beside the posterior;
- :func:`mean_band_probability` — the posterior of a mean (mean steps of successful episodes)
  under the reference prior for a normal sample, a Student t with ``m - 1`` degrees of freedom,
  centred on the sample mean with scale ``max(sd, STEPS_SD_FLOOR) / sqrt(m)``.

Why the uniform prior: a decision "accept when ``P(p in band | data) >= c``" then has a stated
error rate that optional stopping cannot break — over tasks whose rates are spread uniformly,
at least a share ``c`` of accepted candidates truly lies in the band, however many looks were
taken. For one fixed rate just outside a band edge the per-rate error can be higher; the audit
(:mod:`envharness.graph.judge.audit`) measures what happens on real tasks.

Example:
    >>> round(band_probability(3, 5, 0.4, 0.6), 3)
    0.365
    >>> round(shift_probability(4, 5, 5, 5, 0.0), 3)  # P(candidate rate >= baseline rate)
    0.227
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats as _stats

__all__ = [
    "PRIOR",
    "STEPS_SD_FLOOR",
    "band_probability",
    "credible_interval",
    "fisher_p_value",
    "mean_band_probability",
    "mean_interval",
    "posterior",
    "shift_probability",
]

PRIOR: tuple[float, float] = (1.0, 1.0)
"""The ``Beta(a, b)`` prior on a success rate: uniform."""

STEPS_SD_FLOOR = 0.5
"""The smallest standard deviation (in steps) a mean's posterior assumes, so that a handful of
episodes of exactly equal length does not claim certainty."""

_GRID = 4001


def _check_counts(successes: int, n: int) -> None:
    for name, value in (("successes", successes), ("n", n)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise ValueError(f"expected an int {name}, got {value!r}")
    if not 0 <= successes <= n:
        raise ValueError(f"expected 0 <= successes <= n, got successes={successes}, n={n}")


def posterior(successes: int, n: int) -> tuple[float, float]:
    """The ``Beta(a, b)`` posterior parameters of a rate after ``successes`` of ``n``.

    Raises:
        ValueError: If the counts are not ints with ``0 <= successes <= n``.
    """
    _check_counts(successes, n)
    return PRIOR[0] + successes, PRIOR[1] + n - successes


def band_probability(successes: int, n: int, low: float, high: float) -> float:
    """``P(low <= p <= high)`` under the posterior after ``successes`` of ``n``."""
    a, b = posterior(successes, n)
    if not 0.0 <= low <= high <= 1.0:
        raise ValueError(f"expected 0 <= low <= high <= 1, got {low}-{high}")
    dist = _stats.beta(a, b)
    return float(max(0.0, dist.cdf(high) - dist.cdf(low)))


def credible_interval(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The equal-tailed ``level`` credible interval of the rate after ``successes`` of ``n``."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"expected a level in (0, 1), got {level!r}")
    a, b = posterior(successes, n)
    tail = (1.0 - level) / 2
    lo, hi = _stats.beta.ppf([tail, 1.0 - tail], a, b)
    return float(lo), float(hi)


def shift_probability(
    successes: int, n: int, base_successes: int, base_n: int, delta: float
) -> float:
    """``P(p - p_base >= delta)``: the probability that the rate rose by at least ``delta``.

    With ``delta < 0`` it is the probability that the rate fell by at most ``-delta``; for
    "fell by at least d" ask ``1 - shift_probability(..., -d)``.

    Both rates have their own posterior (the baseline's uncertainty counts as much as the
    candidate's); the integral runs over a grid of :data:`_GRID` points.
    """
    a1, b1 = posterior(successes, n)
    a0, b0 = posterior(base_successes, base_n)
    if not -1.0 <= delta <= 1.0:
        raise ValueError(f"expected a delta in [-1, 1], got {delta!r}")
    x = np.linspace(0.0, 1.0, _GRID)
    density = _stats.beta.pdf(x, a0, b0)
    above = _stats.beta.sf(np.clip(x + delta, 0.0, 1.0), a1, b1)
    above = np.where(x + delta > 1.0, 0.0, np.where(x + delta < 0.0, 1.0, above))
    value = float(np.trapezoid(density * above, x))
    return min(1.0, max(0.0, value))


def fisher_p_value(
    successes: int, n: int, base_successes: int, base_n: int, alternative: str
) -> float:
    """The one-sided Fisher exact p-value: the candidate's rate is ``less``/``greater``."""
    if alternative not in ("less", "greater"):
        raise ValueError(f"expected alternative 'less' or 'greater', got {alternative!r}")
    _check_counts(successes, n)
    _check_counts(base_successes, base_n)
    if n == 0 or base_n == 0:
        return 1.0
    table = [[successes, n - successes], [base_successes, base_n - base_successes]]
    return float(_stats.fisher_exact(table, alternative=alternative).pvalue)


def _mean_posterior(values: Sequence[float]) -> tuple[int, float, float]:
    m = len(values)
    if m < 2:
        raise ValueError(f"expected at least 2 values for a mean's posterior, got {m}")
    mean = math.fsum(values) / m
    sd = max(float(np.std(values, ddof=1)), STEPS_SD_FLOOR)
    return m - 1, mean, sd / math.sqrt(m)


def mean_band_probability(values: Sequence[float], low: float, high: float) -> float:
    """``P(low <= mu <= high)`` for the mean ``mu`` of ``values`` (a Student t posterior)."""
    if low > high:
        raise ValueError(f"expected low <= high, got {low}-{high}")
    df, loc, scale = _mean_posterior(values)
    dist = _stats.t(df, loc=loc, scale=scale)
    return float(max(0.0, dist.cdf(high) - dist.cdf(low)))


def mean_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """The equal-tailed ``level`` credible interval of the mean of ``values``."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"expected a level in (0, 1), got {level!r}")
    df, loc, scale = _mean_posterior(values)
    lo, hi = _stats.t.ppf([(1 - level) / 2, (1 + level) / 2], df, loc=loc, scale=scale)
    return float(lo), float(hi)
