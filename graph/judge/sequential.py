"""Sequential validation of one candidate: fresh seeds, a look after every batch, knob tuning.

:func:`validate_candidate` draws batches of rollouts through a *sampler* (the caller's way of
playing ``n`` episodes of the candidate at given knob values from a first seed) and asks the
judge after each batch. Every batch gets seeds no earlier batch of the task used: the caller
passes the first free seed and gets the next one back. With a knob, a setting the judge
refines goes into the pool of everything sampled, the monotone model of
:mod:`~envharness.graph.judge.calibration` proposes the next value, and the judge starts afresh
there; so does a setting the pooled model (its own rollouts included) predicts more than a
quarter of the band's width from the aim at a checkpoint (every two batches), or whose claim is
still unlikely after four.

A success band is accepted either on the current setting's own rollouts (the judge's flat-prior
rule) or, once that setting has :data:`MIN_FRESH_BATCHES` batches of its own drawn after it was
chosen, on the pooled model's full posterior at that value
(:func:`~envharness.graph.judge.calibration.band_probability_at`, method ``band-pooled``) when
it reaches the confidence and the model's rate there lies inside the setting's own credible
interval at :data:`AGREEMENT_LEVEL` (80%). The pooled posterior stays valid although earlier
settings chose the value: which values were sampled depends only on rollouts already in the
likelihood, so the adaptive design does not bias it; what it does rely on is the monotone
logistic model, which the fresh batches at the accepted value must agree with and which
``envharness audit`` checks on fresh seeds.
Every other decision (refine, ``auto``, steps bands) is made on the rollouts of one setting.

Example:
    >>> import random
    >>> from envharness.graph.judge.calibration import Knob
    >>> from envharness.graph.objective import Objective
    >>> def sample(values, first_seed, n):  # a simulated policy: success 1 - DROP_P
    ...     wins = sum(random.Random(s).random() < 1 - values["DROP_P"]
    ...                for s in range(first_seed, first_seed + n))
    ...     return Outcomes(n, wins, (3,) * wins)
    >>> run = validate_candidate(Objective.parse("sr:0.4-0.6"), "harden", Outcomes(5, 5), sample,
    ...                          first_seed=100, knobs=[Knob("DROP_P", 0.0, 0.9, "high", 0.1)])
    >>> run.decision, 0.3 < run.values["DROP_P"] < 0.7
    ('accept', True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from envharness.errors import RiggerError
from envharness.graph.judge.calibration import (
    Knob,
    Point,
    band_probability_at,
    predict,
    propose_value,
)
from envharness.graph.judge.decisions import Judgement, JudgeSettings, Outcomes, judge
from envharness.graph.judge.posterior import credible_interval, posterior
from envharness.graph.objective import Objective

__all__ = [
    "AGREEMENT_LEVEL",
    "MIN_FRESH_BATCHES",
    "BaselineSampler",
    "Sampler",
    "SettingRecord",
    "ValidationRun",
    "knob_aim",
    "validate_candidate",
]

MIN_FRESH_BATCHES = 2
"""Batches a knob setting needs of its own before the pooled model may accept it."""

AGREEMENT_LEVEL = 0.8
"""The pooled model may accept a setting only if its rate there lies inside the setting's own
central credible interval at this level (its fresh batches agree with the model)."""

_ABANDON_BELOW = 0.3
"""A knob setting whose claim probability is below this after four batches is left
for a recalibrated one (its rollouts stay in the pool)."""

Sampler = Callable[[dict[str, float], int, int], Outcomes]
"""``sample(knob_values, first_seed, n) -> Outcomes`` of ``n`` fresh episodes."""

BaselineSampler = Callable[[int, int], Outcomes]
"""``sample_baseline(first_seed, n) -> Outcomes`` of ``n`` fresh episodes of the baseline."""


@dataclass
class SettingRecord:
    """The rollouts of one knob setting and the judge's last word on them.

    Attributes:
        values: The knob values.
        outcomes: What the rollouts showed.
        seeds: The seeds played, in order.
        judgement: The judge's decision after the last batch.
    """

    values: dict[str, float]
    outcomes: Outcomes
    seeds: list[int]
    judgement: Judgement

    def to_dict(self) -> dict[str, Any]:
        """The record as a plain dict."""
        return {
            "values": dict(self.values),
            "outcomes": self.outcomes.to_dict(),
            "seeds": list(self.seeds),
            "judgement": self.judgement.to_dict(),
        }


@dataclass
class ValidationRun:
    """How a candidate's validation ended.

    Attributes:
        decision: ``accept``, ``refine`` or ``undecided`` (the budget ran out first).
        judgement: The judge's last judgement (on the final setting's rollouts).
        values: The final knob values (empty without knobs).
        settings: Every setting sampled, the final one last.
        next_seed: The first seed no rollout of this validation used.
        calibrated: Whether the knob was moved from the designer's start value.
        baseline: The fresh baseline rollouts the candidate was compared with (``None`` when
            it was compared with the observe rollouts, or with a band).
        baseline_seeds: Their seeds.
    """

    decision: Literal["accept", "refine", "undecided"]
    judgement: Judgement
    values: dict[str, float] = field(default_factory=dict)
    settings: list[SettingRecord] = field(default_factory=list)
    next_seed: int = 0
    calibrated: bool = False
    baseline: Outcomes | None = None
    baseline_seeds: list[int] = field(default_factory=list)

    @property
    def rollouts(self) -> int:
        """Policy rollouts spent (fresh baseline rollouts included)."""
        return sum(s.outcomes.n for s in self.settings) + len(self.baseline_seeds)

    @property
    def seeds(self) -> list[int]:
        """Every seed the candidate was played on."""
        return [seed for s in self.settings for seed in s.seeds]


def knob_aim(
    objective: Objective, direction: str, baseline: Outcomes, settings: JudgeSettings
) -> tuple[str, float] | None:
    """``(axis, aim)`` a knob is calibrated to, or ``None`` when the objective has no aim.

    Bands aim at their centre. ``auto`` hardening aims ``min_effect + 0.2`` below the
    baseline's posterior mean (at least 0.2, so the task stays solvable), scaffolding as far
    above it (at most 0.9): far enough that the two-sample rule can accept.
    """
    if objective.kind == "success_band":
        return "success", (float(objective.low) + float(objective.high)) / 2  # type: ignore[arg-type]
    if objective.kind == "steps_band":
        return "steps", (float(objective.low) + float(objective.high)) / 2  # type: ignore[arg-type]
    a, b = posterior(baseline.successes, baseline.n)
    mean = a / (a + b)
    if direction == "harden":
        return "success", max(0.2, mean - settings.min_effect - 0.2)
    if direction == "scaffold":
        return "success", min(0.9, mean + settings.min_effect + 0.2)
    return None


def _points(knob: Knob, records: Sequence[SettingRecord]) -> list[Point]:
    points = []
    for r in records:
        side = r.judgement.side if r.judgement.decision == "refine" else None
        o = r.outcomes
        points.append(Point(r.values[knob.name], o.successes, o.n, o.success_steps, side))
    return points


def validate_candidate(
    objective: Objective | str,
    direction: str,
    baseline: Outcomes,
    sample: Sampler,
    *,
    first_seed: int,
    settings: JudgeSettings | None = None,
    knobs: Sequence[Knob] = (),
    start: Mapping[str, float] | None = None,
    sample_baseline: BaselineSampler | None = None,
) -> ValidationRun:
    """Validates one candidate on fresh seeds, tuning its first knob if it has one.

    With ``sample_baseline``, a comparison with the baseline (``auto``: scaffold, harden,
    fix-behaviour) is made against fresh baseline rollouts drawn batch by batch beside the
    candidate's, never against the observe rollouts that chose the direction.

    Args:
        objective: The rig's objective.
        direction: The diagnosis's direction.
        baseline: The baseline's outcomes (``auto`` compares against them).
        sample: Plays episodes of the candidate (see :data:`Sampler`).
        first_seed: The first seed nothing else in this task's rig used.
        settings: Confidence and budget.
        knobs: The candidate's knobs; the first one is calibrated, the others stay put.
        start: Knob values to start from instead of the knobs' own.
        sample_baseline: Plays ``n`` fresh episodes of the baseline from a first seed.

    Returns:
        The :class:`ValidationRun`.

    Raises:
        RiggerError: If two knobs share a name, or ``start`` names an unknown knob.
    """
    objective = Objective.parse(objective)
    settings = settings or JudgeSettings()
    names = [k.name for k in knobs]
    if len(set(names)) != len(names):
        raise RiggerError(f"expected distinct knob names, got {names}")
    values = {k.name: k.value for k in knobs}
    for name, value in (start or {}).items():
        if name not in values:
            raise RiggerError(f"unknown knob {name!r}; the candidate's knobs are {names}")
        values[name] = next(k for k in knobs if k.name == name).clamp(value)
    knob = knobs[0] if knobs else None
    aim = knob_aim(objective, direction, baseline, settings) if knob is not None else None
    tolerance = _tolerance(objective)
    records: list[SettingRecord] = []
    seed, spent, calibrated = first_seed, 0, False
    current = _fresh(values, objective, direction, baseline, settings)
    paired = (
        sample_baseline is not None
        and not objective.is_band
        and direction in ("scaffold", "harden", "fix-behaviour")
    )
    fresh_baseline, baseline_seeds = Outcomes(), []

    def finish(decision: Literal["accept", "refine", "undecided"]) -> ValidationRun:
        done = [*records, current] if current.outcomes.n else records
        last = done[-1] if done else current
        return ValidationRun(
            decision, last.judgement, last.values, done, seed, calibrated,
            fresh_baseline if paired else None, baseline_seeds,
        )  # fmt: skip

    per_batch = 2 if paired else 1
    while spent + per_batch <= settings.max_rollouts:
        n = min(settings.batch, (settings.max_rollouts - spent) // per_batch)
        if paired:
            assert sample_baseline is not None
            drawn = sample_baseline(seed, n)
            if drawn.n != n:
                raise RiggerError(f"the baseline sampler returned {drawn.n} episodes, expected {n}")
            fresh_baseline += drawn
            baseline_seeds += list(range(seed, seed + n))
            seed += n
        outcomes = sample(dict(current.values), seed, n)
        if outcomes.n != n:
            raise RiggerError(f"the sampler returned {outcomes.n} episodes, expected {n}")
        current.outcomes += outcomes
        current.seeds += list(range(seed, seed + n))
        seed += n
        spent += per_batch * n
        reference = fresh_baseline if paired else baseline
        verdict = judge(objective, direction, current.outcomes, reference, settings)
        if verdict.decision == "continue" and knob is not None and aim is not None:
            pooled = [*records, current]
            verdict = _pooled_band(objective, knob, baseline, pooled, verdict, settings)
        current.judgement = verdict
        if verdict.decision == "accept":
            return finish("accept")
        if verdict.decision == "refine" and (knob is None or aim is None or verdict.side is None):
            return finish("refine")
        if verdict.decision == "continue":
            n_here = current.outcomes.n
            if knob is None or aim is None:
                continue
            if n_here < 2 * settings.batch or n_here % (2 * settings.batch):
                continue  # checkpoints every two batches
        assert knob is not None and aim is not None
        pool = _pool(knob, baseline, [*records, current])
        if verdict.decision == "continue":  # keep sampling here, or move the dial
            predicted = predict(knob, pool, current.values[knob.name], axis=aim[0])
            near = predicted is None or abs(predicted - aim[1]) <= tolerance
            unlikely = (
                current.outcomes.n >= 4 * settings.batch
                and (verdict.probability or 0.0) < _ABANDON_BELOW
            )
            if near and not unlikely:
                continue
        proposal = propose_value(knob, pool, aim[1], axis=aim[0])
        if proposal is None or proposal == current.values[knob.name]:
            if verdict.decision == "refine":
                return finish("refine")
            continue  # nothing better to try: confirm this setting
        records.append(current)
        current = _fresh(
            {**current.values, knob.name: proposal}, objective, direction, baseline, settings
        )
        calibrated = True
    return finish("undecided")


def _pool(knob: Knob, baseline: Outcomes, records: Sequence[SettingRecord]) -> list[Point]:
    """Every setting's rollouts as model points, the baseline's at the knob's neutral value."""
    pool = _points(knob, records)
    if knob.neutral is not None and baseline.n:  # the baseline is the knob at neutral
        o = baseline
        pool.insert(0, Point(knob.neutral, o.successes, o.n, o.success_steps))
    return pool


def _pooled_band(
    objective: Objective,
    knob: Knob,
    baseline: Outcomes,
    records: Sequence[SettingRecord],
    verdict: Judgement,
    settings: JudgeSettings,
) -> Judgement:
    """Accepts the current setting on the pooled model's posterior, when it is sure enough.

    Only for success bands, and only once the setting has :data:`MIN_FRESH_BATCHES` batches of
    its own (sampled after it was chosen) that agree with the model: the model's rate there
    lies inside the setting's own :data:`AGREEMENT_LEVEL` credible interval. Otherwise
    ``verdict`` is returned unchanged.
    """
    current = records[-1]
    o = current.outcomes
    if objective.kind != "success_band" or o.n < MIN_FRESH_BATCHES * settings.batch:
        return verdict
    pool = _pool(knob, baseline, records)
    value = current.values[knob.name]
    low, high = float(objective.low), float(objective.high)  # type: ignore[arg-type]
    probability = band_probability_at(knob, pool, value, low, high)
    predicted = predict(knob, pool, value)
    if probability is None or predicted is None or probability < settings.confidence:
        return verdict
    own_low, own_high = credible_interval(o.successes, o.n, level=AGREEMENT_LEVEL)
    if not own_low <= predicted <= own_high:
        return verdict
    pooled_n = sum(p.n for p in pool)
    reason = (
        f"P(success rate in {low:g}-{high:g}) = {probability:.2f} >= {settings.confidence:g} "
        f"under the knob model pooled over {pooled_n} rollouts at {len(pool)} settings "
        f"({knob.name} = {value:g}: {o.successes}/{o.n} successes here, model {predicted:.2f})"
    )
    return replace(
        verdict,
        decision="accept",
        method="band-pooled",
        probability=probability,
        reason=reason,
        pooled_n=pooled_n,
    )


def _fresh(
    values: Mapping[str, float],
    objective: Objective,
    direction: str,
    baseline: Outcomes,
    settings: JudgeSettings,
) -> SettingRecord:
    empty = judge(objective, direction, Outcomes(), baseline, settings)
    return SettingRecord(dict(values), Outcomes(), [], empty)


def _tolerance(objective: Objective) -> float:
    """How far from the aim the model may predict a setting and still have it confirmed."""
    if objective.is_band:
        return (float(objective.high) - float(objective.low)) / 4  # type: ignore[arg-type]
    return 0.1
