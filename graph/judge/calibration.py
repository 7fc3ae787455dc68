"""Knob calibration: statistics sets a candidate's numeric dial, the designer only its structure.

A :class:`Knob` is a number a candidate exposes (``DROP_P`` in rules code, the number of
head-start steps, a truncation length) with its range and the end that makes the task harder.
:func:`propose_value` pools **every** rollout of the candidate across the knob values tried so
far into a monotone model and returns the value predicted to hit the aim:

- success rate: a logistic model ``P(success) = sigmoid(a + b * u)`` on the knob scaled to
  ``u in [0, 1]``, fitted by maximum a posteriori (Newton's method) with normal priors
  ``a ~ N(0, 2.5)`` and ``b ~ N(-4, 2.5)`` — a declared knob is expected to matter: over its
  whole range it moves success by about four logits (0.73 to 0.05, say), which is what lets
  one tried value already point somewhere sensible — and ``b`` constrained to the knob's
  declared direction (success never rises toward the harder end);
- mean steps of successful episodes: a least-squares line ``steps = a + b * u`` with the same
  sign constraint (episodes never get shorter toward the harder end).

Refined settings stay in the pool as data; only a refined end of the range stops the search
when the model asks to go past it (then :func:`propose_value` returns ``None``).

Example:
    >>> knob = Knob("DROP_P", 0.0, 0.9, "high", 0.3)
    >>> points = [Point(0.3, 9, 10), Point(0.6, 4, 10)]
    >>> round(propose_value(knob, points, 0.5), 2)
    0.57
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from envharness.errors import RiggerError

__all__ = [
    "Knob",
    "Point",
    "band_probability_at",
    "fit_logistic",
    "fit_steps",
    "predict",
    "propose_value",
]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PRIOR_MEAN = (0.0, -4.0)
_PRIOR_SD = (2.5, 2.5)


@dataclass(frozen=True)
class Knob:
    """A candidate's numeric dial.

    Attributes:
        name: For rules code, a module-level constant (``DROP_P = 0.3``) the spec overrides;
            for Setups, ``SETUP_STEPS`` (how many of the in-env actions are replayed).
        low: The smallest value allowed.
        high: The largest value allowed.
        harder: Which end makes the task harder: ``high`` or ``low``.
        value: The value to start from (the designer's guess).
        integer: Whether only whole numbers are allowed.
        neutral: The value at which the candidate changes nothing (``DROP_P = 0`` on the bare
            task), so the baseline's rollouts count as calibration data there; ``None`` when
            no value is neutral.

    Raises:
        RiggerError: A bad name, an empty range, a start outside it, or an unknown ``harder``.
    """

    name: str
    low: float
    high: float
    harder: Literal["high", "low"]
    value: float
    integer: bool = False
    neutral: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise RiggerError(
                f"expected a knob name that is a Python identifier, got {self.name!r}"
            )
        for attr in ("low", "high", "value"):
            value = getattr(self, attr)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise RiggerError(f"expected knob {self.name} {attr} to be a number, got {value!r}")
            if not math.isfinite(value):
                raise RiggerError(f"expected knob {self.name} {attr} to be finite, got {value!r}")
        if not self.low < self.high:
            raise RiggerError(
                f"expected knob {self.name} to have low < high, got {self.low}..{self.high}"
            )
        if not self.low <= self.value <= self.high:
            raise RiggerError(
                f"knob {self.name} starts at {self.value}, outside its range "
                f"{self.low}..{self.high}"
            )
        if self.neutral is not None and not (
            isinstance(self.neutral, int | float) and self.low <= self.neutral <= self.high
        ):
            raise RiggerError(
                f"knob {self.name} neutral={self.neutral!r} must be a number in its range"
            )
        if self.harder not in ("high", "low"):
            raise RiggerError(
                f"expected knob {self.name} harder='high' or 'low', got {self.harder!r}"
            )

    def clamp(self, value: float) -> float:
        """``value`` inside the range (rounded for an integer knob)."""
        value = min(self.high, max(self.low, float(value)))
        return float(round(value)) if self.integer else round(value, 4)

    def scale(self, value: float) -> float:
        """``value`` on ``[0, 1]``, 0 at the easy end and 1 at the hard end."""
        u = (float(value) - self.low) / (self.high - self.low)
        return u if self.harder == "high" else 1.0 - u

    def unscale(self, u: float) -> float:
        """The knob value at ``u`` of :meth:`scale`."""
        u = u if self.harder == "high" else 1.0 - u
        return self.low + u * (self.high - self.low)

    def to_dict(self) -> dict[str, Any]:
        """The knob as a plain dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Knob:
        """Rebuilds a knob from :meth:`to_dict` output (raises ``RiggerError`` on bad keys)."""
        allowed = {"name", "low", "high", "harder", "value", "integer", "neutral"}
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise RiggerError(f"unknown knob field(s) {unknown}; allowed: {sorted(allowed)}")
        try:
            return cls(**dict(data))
        except TypeError as e:
            raise RiggerError(f"a knob needs name, low, high, harder and value: {e}") from None


@dataclass(frozen=True)
class Point:
    """The rollouts at one knob value.

    Attributes:
        value: The knob value.
        successes: Successful episodes.
        n: Episodes.
        success_steps: Steps of each successful episode.
        side: ``too_easy`` or ``too_hard`` when the judge refined this value, else ``None``.
    """

    value: float
    successes: int
    n: int
    success_steps: tuple[int, ...] = field(default=())
    side: str | None = None


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def fit_logistic(data: Sequence[tuple[float, int, int]]) -> tuple[float, float]:
    """MAP ``(a, b)`` of ``P(success at u) = sigmoid(a + b u)`` with ``b <= 0``.

    Args:
        data: ``(u, successes, n)`` triples, ``u`` on the knob's 0 (easy) to 1 (hard) scale.
    """

    def fit(free_b: bool) -> tuple[float, float]:
        a = b = 0.0
        for _ in range(100):
            (ga, gb), (haa, hab, hbb) = _log_posterior_derivatives(a, b, data)
            if free_b:
                det = haa * hbb - hab * hab
                da, db = (hbb * ga - hab * gb) / det, (haa * gb - hab * ga) / det
            else:
                da, db = ga / haa, -b
            a, b = a + da, b + db
            if abs(da) + abs(db) < 1e-9:
                break
        return a, b

    a, b = fit(True)
    if b > 0:  # the data say "harder is easier": noise; the constrained optimum has b = 0
        a, b = fit(False)
    return a, b


def _log_posterior_derivatives(
    a: float, b: float, data: Sequence[tuple[float, int, int]]
) -> tuple[tuple[float, float], tuple[float, float, float]]:
    """Gradient ``(ga, gb)`` and negated Hessian ``(haa, hab, hbb)`` of the log posterior."""
    ga = -(a - _PRIOR_MEAN[0]) / _PRIOR_SD[0] ** 2
    gb = -(b - _PRIOR_MEAN[1]) / _PRIOR_SD[1] ** 2
    haa, hab, hbb = 1 / _PRIOR_SD[0] ** 2, 0.0, 1 / _PRIOR_SD[1] ** 2
    for u, s, n in data:
        p = _sigmoid(a + b * u)
        w = n * p * (1 - p)
        ga += s - n * p
        gb += (s - n * p) * u
        haa += w
        hab += w * u
        hbb += w * u * u
    return (ga, gb), (haa, hab, hbb)


def fit_steps(data: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    """Least-squares ``(a, b)`` of ``steps = a + b u`` with ``b >= 0`` (``None`` without data).

    Args:
        data: ``(u, steps)`` pairs, one per successful episode.
    """
    if not data:
        return None
    m = len(data)
    mu = math.fsum(u for u, _ in data) / m
    ms = math.fsum(s for _, s in data) / m
    suu = math.fsum((u - mu) ** 2 for u, _ in data)
    b = math.fsum((u - mu) * (s - ms) for u, s in data) / suu if suu > 0 else 0.0
    b = max(0.0, b)
    return ms - b * mu, b


def _exhausted(knob: Knob, points: Sequence[Point], u: float) -> bool:
    """Whether the knob cannot reach ``u``: its end on that side was already refined."""
    if u >= 1.0:
        return any(knob.scale(p.value) >= 1.0 - 1e-9 and p.side == "too_easy" for p in points)
    if u <= 0.0:
        return any(knob.scale(p.value) <= 1e-9 and p.side == "too_hard" for p in points)
    return False


def propose_value(
    knob: Knob, points: Sequence[Point], aim: float, *, axis: str = "success"
) -> float | None:
    """The knob value the pooled model predicts for ``aim``, or ``None`` when none is left.

    Refined values are data like any other (a refine is sure only to the judge's confidence, so
    one unlucky refine must not wall off the right value); only a refined *end* of the range
    stops the search when the model asks to go past it.

    Args:
        knob: The knob.
        points: Every setting sampled so far, with its rollouts and (if refined) its side.
        aim: The success rate (``axis="success"``) or mean steps (``axis="steps"``) to hit.
        axis: ``success`` or ``steps``.

    Returns:
        The proposed value (rounded for an integer knob); ``None`` when the aim lies beyond an
        end of the range that was already tried and refined.
    """
    if axis not in ("success", "steps"):
        raise RiggerError(f"expected axis 'success' or 'steps', got {axis!r}")
    tried = [knob.scale(p.value) for p in points if p.n]
    u = _model_u(knob, points, aim, axis)
    if u is None:  # a flat model: step halfway to the end the data point to
        harder = _pooled_above(knob, points, aim, axis)
        edge = max(tried, default=0.0) if harder else min(tried, default=1.0)
        u = (edge + 1.0) / 2 if harder else edge / 2
    u = min(1.0, max(0.0, u))
    if _exhausted(knob, points, u):
        return None
    if not knob.integer:
        return knob.clamp(knob.unscale(u))
    # Whole numbers: the nearer of the two around the model's value not refined yet; when
    # both were refined (a too-easy and a too-hard neighbour), no whole number is left between.
    exact = knob.unscale(u)
    refined = {p.value for p in points if p.side is not None}
    options = sorted(
        {knob.clamp(math.floor(exact)), knob.clamp(math.ceil(exact))}, key=lambda v: abs(v - exact)
    )
    return next((v for v in options if v not in refined), None)


def _pooled_above(knob: Knob, points: Sequence[Point], aim: float, axis: str) -> bool:
    """Whether the pooled data lie on the easy side of the aim (the task needs hardening)."""
    if axis == "success":
        n = sum(p.n for p in points)
        return n > 0 and sum(p.successes for p in points) / n > aim
    steps = [s for p in points for s in p.success_steps]
    return bool(steps) and sum(steps) / len(steps) < aim


def predict(
    knob: Knob, points: Sequence[Point], value: float, *, axis: str = "success"
) -> float | None:
    """The pooled model's success rate (or mean steps) at ``value`` (``None`` without data)."""
    u = knob.scale(value)
    if axis == "success":
        data = [(knob.scale(p.value), p.successes, p.n) for p in points if p.n]
        if not data:
            return None
        a, b = fit_logistic(data)
        return _sigmoid(a + b * u)
    fit = fit_steps([(knob.scale(p.value), s) for p in points for s in p.success_steps])
    return None if fit is None else fit[0] + fit[1] * u


def _model_u(knob: Knob, points: Sequence[Point], aim: float, axis: str) -> float | None:
    if axis == "success":
        if not 0.0 < aim < 1.0:
            raise RiggerError(f"expected a success aim in (0, 1), got {aim!r}")
        a, b = fit_logistic([(knob.scale(p.value), p.successes, p.n) for p in points if p.n])
        if b > -1e-6:
            return None
        return (math.log(aim / (1 - aim)) - a) / b
    fit = fit_steps([(knob.scale(p.value), s) for p in points for s in p.success_steps])
    if fit is None or fit[1] <= 1e-9:
        return None
    return (aim - fit[0]) / fit[1]


_POSTERIOR_GRID = 201
"""Grid points per axis of :func:`band_probability_at`'s posterior integration."""


def _log_sigmoid(z: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -z)


def band_probability_at(
    knob: Knob, points: Sequence[Point], value: float, low: float, high: float
) -> float | None:
    """``P(low <= p(value) <= high)`` under the pooled logistic model's full posterior.

    The posterior of ``(a, b)`` is the likelihood of every point times the priors of
    :func:`fit_logistic`, restricted to ``b <= 0``; it is integrated on a
    ``201 x 201`` grid spanning eight Laplace standard deviations around the MAP fit, and the
    band's mass is the posterior share of grid points whose rate at ``value`` lies in the band.

    Returns:
        The probability, or ``None`` without data.
    """
    data = [(knob.scale(p.value), p.successes, p.n) for p in points if p.n]
    if not data:
        return None
    if not 0.0 <= low <= high <= 1.0:
        raise RiggerError(f"expected 0 <= low <= high <= 1, got {low}-{high}")
    u_at = knob.scale(value)
    a0, b0 = fit_logistic(data)
    _, (haa, hab, hbb) = _log_posterior_derivatives(a0, b0, data)  # Laplace: sizes the grid
    det = haa * hbb - hab * hab
    sd_a, sd_b = math.sqrt(hbb / det), math.sqrt(haa / det)
    b_hi = min(0.0, b0 + 8 * sd_b)
    b_lo = min(b0 - 8 * sd_b, b_hi - 1e-3)
    a = np.linspace(a0 - 8 * sd_a - 8 * sd_b, a0 + 8 * sd_a + 8 * sd_b, _POSTERIOR_GRID)
    b = np.linspace(b_lo, b_hi, _POSTERIOR_GRID)
    aa, bb = np.meshgrid(a, b, indexing="ij")
    log_post = -0.5 * ((aa - _PRIOR_MEAN[0]) / _PRIOR_SD[0]) ** 2
    log_post -= 0.5 * ((bb - _PRIOR_MEAN[1]) / _PRIOR_SD[1]) ** 2
    for u, s, n in data:
        z = aa + bb * u
        log_post += s * _log_sigmoid(z) + (n - s) * _log_sigmoid(-z)
    weight = np.exp(log_post - log_post.max())
    rate = 1.0 / (1.0 + np.exp(-(aa + bb * u_at)))
    inside = (rate >= low) & (rate <= high)
    return float(weight[inside].sum() / weight.sum())
