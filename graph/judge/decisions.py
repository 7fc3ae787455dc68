"""The judge: one decision on one candidate's fresh rollouts, with a stated error rate.

:func:`judge` turns the candidate's :class:`Outcomes` (and the baseline's, for comparisons)
into a :class:`Judgement`: ``accept``, ``refine`` (confidently wrong, with the side to move to)
or ``continue`` (not yet sure: sample more). The validator calls it after every batch of
rollouts; a candidate whose budget runs out while the judge still says ``continue`` is
*undecided*, never accepted.

The rules, with ``c`` the confidence and ``f`` the futility threshold of :class:`JudgeSettings`
(a two-sample claim whose probability falls to ``f`` is refined):

- **success band** ``[low, high]``: accept when ``P(low <= p <= high) >= c`` under the
  ``Beta(1 + s, 1 + n - s)`` posterior; refine only when the rate is confidently outside, on one
  side: ``P(p > high) >= c`` is ``too_easy``, ``P(p < low) >= c`` is ``too_hard`` (a narrow
  band's small mass alone is no reason to give up).
- **steps band**: at least ``min_successes`` successful episodes, then the same rule on the
  Student-t posterior of their mean steps; ``too_easy`` means too short (make it longer).
- **scaffold** (``auto``, a failing baseline): accept when
  ``P(p - p_base >= min_effect) >= c``, both rates with their own posterior, so the baseline's
  uncertainty is counted, *and* the one-sided Fisher exact test rejects "no change" at
  ``alpha`` over the most looks the budget allows (Bonferroni); refine at ``<= f``.
- **harden** (``auto``, a baseline the policy always solves): accept when
  ``P(p_base - p >= min_effect) >= c``, the Fisher test agrees at the same level, and the
  policy still succeeds sometimes; a candidate with
  no success in ``2 * batch`` episodes is ``too_hard`` (unsolvable for this policy).
- **fix-behaviour**: accept when the share of episodes showing a behaviour failure (loop,
  invalid or blocked actions) fell by ``min_effect`` with probability ``>= c`` and success did
  not fall by more than ``min_effect`` with probability ``>= c``.

Example:
    >>> from envharness.graph.objective import Objective
    >>> band = Objective.parse("sr:0.4-0.6")
    >>> judge(band, "harden", Outcomes(5, 3), Outcomes(5, 5)).decision  # 3/5 is not enough
    'continue'
    >>> judge(band, "harden", Outcomes(40, 20), Outcomes(5, 5)).decision
    'accept'
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from envharness.errors import RiggerError
from envharness.graph.judge import posterior as post
from envharness.graph.objective import Objective
from envharness.rollout.stats import failure_category
from envharness.rollout.trajectory import Trajectory

__all__ = [
    "BEHAVIOUR_FAILURES",
    "Decision",
    "JudgeSettings",
    "Judgement",
    "Outcomes",
    "Side",
    "judge",
]

Decision = Literal["accept", "refine", "continue"]
Side = Literal["too_easy", "too_hard"]
"""Which way a refined candidate is off: ``too_easy`` asks for a harder (or longer) harness."""

BEHAVIOUR_FAILURES: tuple[str, ...] = ("loop", "invalid_actions", "blocked")
"""Failure categories that point at behaviour rather than at the task's difficulty."""


def _check_fraction(name: str, value: object, *, closed: bool = False) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if ok and closed:
        ok = 0.0 <= value <= 1.0  # type: ignore[operator]
    elif ok:
        ok = 0.0 < value < 1.0  # type: ignore[operator]
    if not ok:
        interval = "[0, 1]" if closed else "(0, 1)"
        raise RiggerError(f"expected {name} to be a number in {interval}, got {value!r}")
    return float(value)  # type: ignore[arg-type]


def _check_count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RiggerError(f"expected {name} to be a positive int, got {value!r}")
    return value


@dataclass(frozen=True)
class JudgeSettings:
    """How sure a decision must be, and what it may spend.

    Attributes:
        confidence: The posterior probability a claim needs to be accepted (``--confidence``).
        futility: A two-sample claim (``auto``) whose probability falls to this or below is
            refined; bands are refined only when confidently outside.
        max_rollouts: Policy rollouts one candidate may spend, knob calibration included
            (``--max-rollouts``).
        batch: Rollouts between two looks at the data.
        min_effect: The smallest change in success rate (or behaviour-failure rate) ``auto``
            counts as scaffolding, hardening or a behaviour fix.
        min_successes: Successful episodes a steps band needs before it is judged.
        alpha: The two-sample test's level for ``auto``: a candidate is accepted only when the
            one-sided Fisher exact test rejects "no change" at ``alpha`` divided by the most
            looks the budget allows (Bonferroni), so a candidate that changes nothing is
            accepted with probability at most ``alpha`` however often the judge looks.

    Raises:
        RiggerError: A setting out of range, named (e.g. ``confidence=1.5``).
    """

    confidence: float = 0.8
    futility: float = 0.1
    max_rollouts: int = 200
    batch: int = 5
    min_effect: float = 0.2
    min_successes: int = 5
    alpha: float = 0.05

    def __post_init__(self) -> None:
        _check_fraction("confidence", self.confidence)
        _check_fraction("futility", self.futility)
        _check_fraction("min_effect", self.min_effect)
        _check_fraction("alpha", self.alpha)
        for name in ("max_rollouts", "batch", "min_successes"):
            _check_count(name, getattr(self, name))
        if self.futility >= self.confidence:
            raise RiggerError(
                f"expected futility < confidence, got futility={self.futility} and "
                f"confidence={self.confidence}"
            )

    @property
    def level_per_look(self) -> float:
        """``alpha`` spread over the most looks ``max_rollouts`` allows (Bonferroni)."""
        return self.alpha / math.ceil(self.max_rollouts / self.batch)

    def to_dict(self) -> dict[str, Any]:
        """The settings as a plain dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgeSettings:
        """Rebuilds settings from :meth:`to_dict` output."""
        return cls(**dict(data))


@dataclass(frozen=True)
class Outcomes:
    """What the judge reads from a batch of episodes.

    Attributes:
        n: Episodes.
        successes: Episodes the bridge's verifier accepted.
        success_steps: Steps of each successful episode.
        behaviour: Failed episodes whose failure is a behaviour (:data:`BEHAVIOUR_FAILURES`).
    """

    n: int = 0
    successes: int = 0
    success_steps: tuple[int, ...] = field(default=())
    behaviour: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.successes <= self.n or not 0 <= self.behaviour <= self.n:
            raise RiggerError(
                f"expected 0 <= successes, behaviour <= n, got n={self.n}, "
                f"successes={self.successes}, behaviour={self.behaviour}"
            )

    @classmethod
    def from_trajectories(cls, trajectories: Iterable[Trajectory]) -> Outcomes:
        """The outcomes of finished episodes.

        A success counts only when the agent's own actions ran: an episode in which a rule
        replaced an action (``Trajectory.n_rewritten``, Rules with ``allow_rewrite``) is judged
        a failure, since the rule may have played for the agent.
        """
        batch = list(trajectories)
        won = [t for t in batch if t.success and not t.n_rewritten]
        return cls(
            n=len(batch),
            successes=len(won),
            success_steps=tuple(t.n_steps for t in won),
            behaviour=sum(failure_category(t) in BEHAVIOUR_FAILURES for t in batch),
        )

    def __add__(self, other: Outcomes) -> Outcomes:
        return Outcomes(
            self.n + other.n,
            self.successes + other.successes,
            self.success_steps + other.success_steps,
            self.behaviour + other.behaviour,
        )

    @property
    def rate(self) -> float:
        """The observed success rate (0 without episodes)."""
        return self.successes / self.n if self.n else 0.0

    @property
    def steps_mean(self) -> float | None:
        """Mean steps of the successful episodes (``None`` without any)."""
        steps = self.success_steps
        return math.fsum(steps) / len(steps) if steps else None

    def to_dict(self) -> dict[str, Any]:
        """The outcomes as a plain dict."""
        return {**asdict(self), "success_steps": list(self.success_steps)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Outcomes:
        """Rebuilds outcomes from :meth:`to_dict` output."""
        return cls(
            int(data["n"]),
            int(data["successes"]),
            tuple(int(s) for s in data.get("success_steps", ())),
            int(data.get("behaviour", 0)),
        )


@dataclass(frozen=True)
class Judgement:
    """One decision and the evidence behind it.

    Attributes:
        decision: ``accept``, ``refine`` or ``continue``.
        side: For a refine, which way the candidate is off (``None`` when it has no side).
        method: The rule that decided (``band``, ``steps-band``, ``scaffold``, ``harden``,
            ``fix-behaviour``, ``none``).
        n: Episodes judged.
        successes: Their successes.
        rate: The observed success rate.
        interval: The 95% credible interval of the success rate.
        probability: The posterior probability of the claim (in the band, or shifted by at
            least ``min_effect``).
        p_value: The one-sided Fisher exact p-value against the baseline (``auto``).
        effect: The observed change in success rate against the baseline (``auto``).
        confidence: The confidence the claim had to reach.
        steps_mean: Mean steps of the successful episodes.
        reason: The decision in a sentence a designer can act on.
        pooled_n: For ``band-pooled`` (a knob setting accepted on the calibration model's
            posterior), the rollouts of every setting the model pooled; ``None`` otherwise.
    """

    decision: Decision
    side: Side | None
    method: str
    n: int
    successes: int
    rate: float
    interval: tuple[float, float]
    probability: float | None
    p_value: float | None
    effect: float | None
    confidence: float
    steps_mean: float | None
    reason: str
    pooled_n: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The judgement as a plain (JSON-able) dict."""
        return {**asdict(self), "interval": list(self.interval)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Judgement:
        """Rebuilds a judgement from :meth:`to_dict` output."""
        fields = dict(data)
        fields["interval"] = tuple(fields["interval"])
        return cls(**fields)


def _verdict(
    decision: Decision,
    side: Side | None,
    method: str,
    outcomes: Outcomes,
    settings: JudgeSettings,
    reason: str,
    *,
    probability: float | None = None,
    baseline: Outcomes | None = None,
    alternative: str | None = None,
) -> Judgement:
    p_value = effect = None
    if baseline is not None and alternative is not None:
        p_value = post.fisher_p_value(
            outcomes.successes, outcomes.n, baseline.successes, baseline.n, alternative
        )
        effect = outcomes.rate - baseline.rate
    return Judgement(
        decision=decision,
        side=side,
        method=method,
        n=outcomes.n,
        successes=outcomes.successes,
        rate=outcomes.rate,
        interval=post.credible_interval(outcomes.successes, outcomes.n),
        probability=probability,
        p_value=p_value,
        effect=effect,
        confidence=settings.confidence,
        steps_mean=outcomes.steps_mean,
        reason=reason,
    )


def _decide(probability: float, settings: JudgeSettings) -> Decision:
    if probability >= settings.confidence:
        return "accept"
    if probability <= settings.futility:
        return "refine"
    return "continue"


def _counts(o: Outcomes) -> str:
    return f"{o.successes}/{o.n} successes"


def _banded(
    inside: float, below: float, above: float, settings: JudgeSettings
) -> tuple[Decision, Side | None]:
    """Accept on the band's mass; refine only when confidently on one side of it."""
    if inside >= settings.confidence:
        return "accept", None
    if below >= settings.confidence:
        return "refine", "too_hard"
    if above >= settings.confidence:
        return "refine", "too_easy"
    return "continue", None


def _band(objective: Objective, o: Outcomes, settings: JudgeSettings) -> Judgement:
    low, high = float(objective.low), float(objective.high)  # type: ignore[arg-type]
    probability = post.band_probability(o.successes, o.n, low, high)
    below = post.band_probability(o.successes, o.n, 0.0, low)
    above = post.band_probability(o.successes, o.n, high, 1.0)
    decision, side = _banded(probability, below, above, settings)
    claim = f"P(success rate in {low:g}-{high:g}) = {probability:.2f}"
    if decision == "accept":
        reason = f"{claim} >= {settings.confidence:g} on {_counts(o)}"
    elif side is not None:
        where = "above" if side == "too_easy" else "below"
        reason = (
            f"{claim} on {_counts(o)}: the rate is {where} the band "
            f"(P = {max(above, below):.2f}); the harness is {side.replace('_', ' ')}"
        )
    else:
        reason = f"{claim} on {_counts(o)}: not yet sure either way"
    return _verdict(decision, side, "band", o, settings, reason, probability=probability)


def _steps(objective: Objective, o: Outcomes, settings: JudgeSettings) -> Judgement:
    low, high = float(objective.low), float(objective.high)  # type: ignore[arg-type]
    m = len(o.success_steps)
    if m < settings.min_successes:
        if o.successes == 0 and o.n >= 2 * settings.batch:
            reason = f"no successful episode in {o.n}: no steps to put in the band"
            return _verdict("refine", "too_hard", "steps-band", o, settings, reason)
        reason = (
            f"{m} successful episode(s) of {o.n}; a steps band needs "
            f"{settings.min_successes} before it is judged"
        )
        return _verdict("continue", None, "steps-band", o, settings, reason)
    probability = post.mean_band_probability(o.success_steps, low, high)
    shorter = post.mean_band_probability(o.success_steps, -math.inf, low)
    longer = post.mean_band_probability(o.success_steps, high, math.inf)
    decision, side = _banded(probability, longer, shorter, settings)
    mean = o.steps_mean or 0.0
    claim = f"P(mean steps of successes in {low:g}-{high:g}) = {probability:.2f}"
    if decision == "accept":
        reason = f"{claim} >= {settings.confidence:g} ({m} successes, mean {mean:.1f})"
    elif side is not None:
        word = "short" if side == "too_easy" else "long"
        reason = f"{claim}: successful episodes are too {word} (mean {mean:.1f} over {m})"
    else:
        reason = f"{claim} ({m} successes, mean {mean:.1f}): not yet sure either way"
    return _verdict(decision, side, "steps-band", o, settings, reason, probability=probability)


def _shift(direction: str, o: Outcomes, base: Outcomes, settings: JudgeSettings) -> Judgement:
    d = settings.min_effect
    if direction == "scaffold":
        probability = post.shift_probability(o.successes, o.n, base.successes, base.n, d)
        claim = f"P(success rose by >= {d:g}) = {probability:.2f}"
        alternative, side = "greater", "too_hard"
    else:
        probability = 1.0 - post.shift_probability(o.successes, o.n, base.successes, base.n, -d)
        claim = f"P(success fell by >= {d:g}) = {probability:.2f}"
        alternative, side = "less", "too_easy"
        if o.successes == 0 and o.n >= 2 * settings.batch:
            reason = (
                f"0/{o.n} successes: the candidate made the task unsolvable for this policy; "
                "make a smaller change"
            )
            return _verdict(
                "refine", "too_hard", direction, o, settings, reason,
                probability=probability, baseline=base, alternative=alternative,
            )  # fmt: skip
    versus = f"{_counts(o)} against the baseline's {_counts(base)}"
    decision = _decide(probability, settings)
    if decision == "accept" and direction == "harden" and o.successes == 0:
        decision = "continue"  # reliably harder, but is it still solvable? sample more
    p_value = post.fisher_p_value(o.successes, o.n, base.successes, base.n, alternative)
    level = settings.level_per_look
    if decision == "accept" and p_value > level:
        decision = "continue"  # a large effect, not yet told apart from no change
        claim += f", Fisher p = {p_value:.2g} > {level:.2g}"
    if decision == "accept":
        reason = f"{claim} >= {settings.confidence:g} and Fisher p = {p_value:.2g}: {versus}"
    elif decision == "refine":
        more = "scaffold more" if direction == "scaffold" else "harden more"
        reason = f"{claim}: {versus}; {more}"
    else:
        reason = f"{claim}: {versus}; not yet sure either way"
    return _verdict(
        decision,
        side if decision == "refine" else None,  # type: ignore[arg-type]
        direction,
        o,
        settings,
        reason,
        probability=probability,
        baseline=base,
        alternative=alternative,
    )


def _behaviour(o: Outcomes, base: Outcomes, settings: JudgeSettings) -> Judgement:
    d = settings.min_effect
    fewer = 1.0 - post.shift_probability(o.behaviour, o.n, base.behaviour, base.n, -d)
    kept = post.shift_probability(o.successes, o.n, base.successes, base.n, -d)
    probability = min(fewer, kept)
    decision = _decide(probability, settings)
    behaviour_p = post.fisher_p_value(o.behaviour, o.n, base.behaviour, base.n, "less")
    if decision == "accept" and behaviour_p > settings.level_per_look:
        decision = "continue"
    claim = (
        f"P(behaviour failures fell by >= {d:g}) = {fewer:.2f}, "
        f"P(success fell by < {d:g}) = {kept:.2f}"
    )
    counts = (
        f"{o.behaviour}/{o.n} episodes with a behaviour failure "
        f"(baseline {base.behaviour}/{base.n})"
    )
    if decision == "accept":
        reason = f"{claim}, both >= {settings.confidence:g}: {counts}"
    elif decision == "refine":
        reason = f"{claim}: {counts}; target the diagnosed behaviour more directly"
    else:
        reason = f"{claim}: {counts}; not yet sure either way"
    verdict = _verdict(
        decision, None, "fix-behaviour", o, settings, reason, probability=probability
    )
    return replace(verdict, p_value=behaviour_p, effect=o.rate - base.rate)


def judge(
    objective: Objective | str,
    direction: str,
    candidate: Outcomes,
    baseline: Outcomes,
    settings: JudgeSettings | None = None,
) -> Judgement:
    """Judges a candidate from its fresh rollouts.

    Args:
        objective: The rig's objective.
        direction: The diagnosis's direction (used by ``auto`` and plain-language objectives).
        candidate: Outcomes of the candidate's rollouts, on seeds nothing else used.
        baseline: Outcomes of the baseline rollouts (compared against by ``auto``).
        settings: Confidence and budget (the defaults when omitted).

    Returns:
        The :class:`Judgement`; ``continue`` asks for more rollouts.
    """
    settings = settings or JudgeSettings()
    objective = Objective.parse(objective)
    if candidate.n == 0:
        return _verdict(
            "continue", None, "none", candidate, settings, "no rollouts of the candidate yet"
        )
    if objective.kind == "success_band":
        return _band(objective, candidate, settings)
    if objective.kind == "steps_band":
        return _steps(objective, candidate, settings)
    if direction in ("scaffold", "harden"):
        return _shift(direction, candidate, baseline, settings)
    if direction == "fix-behaviour":
        return _behaviour(candidate, baseline, settings)
    reason = "the diagnosis found nothing to change"
    return _verdict("refine", None, "none", candidate, settings, reason)
