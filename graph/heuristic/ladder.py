"""The designer's ladder: structural options on one difficulty axis, and what it aims for.

A :class:`Target` is the range the search aims for on its axis (success rate, or mean steps of
successful episodes). A :class:`Rung` is one structural option with a prior guess of its effect;
:func:`build_rungs` lists them easiest (shortest) first with the plain task among them, and
:func:`predict` turns a rung's prior into a prediction, scaled by what rungs of the same family
actually did (a family that changed nothing stops being predicted to change much).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from envharness.graph.heuristic import templates as t
from envharness.graph.heuristic.design_context import DesignContext
from envharness.graph.objective import Objective
from envharness.graph.records import Candidate, Diagnosis
from envharness.rollout.stats import wilson_interval

__all__ = [
    "Rung",
    "Side",
    "Target",
    "build_rungs",
    "candidate_key",
    "inert",
    "observed_value",
    "predict",
    "smoothed_rate",
]

Side = Literal["easy", "hard", "on"]
"""Where a result lies: ``easy`` needs a harder (longer) task, ``hard`` an easier (shorter) one."""

VERBOSE_OBSERVATION = 200
"""Median observation length (characters) from which truncating observations is a natural
hardening."""

MAX_LINKS = 3
"""The most sibling tasks a rung links."""


def candidate_key(candidate: Candidate) -> str:
    """What makes two candidates the same harness (rationale, template name and knob values aside).

    Two candidates that differ only in where their knobs start are one structure: the validator
    calibrates the knob either way.

    Example:
        >>> candidate_key(Candidate(rationale="a")) == candidate_key(Candidate(rationale="b"))
        True
    """
    code = candidate.rules_code
    names = sorted(k["name"] for k in candidate.knobs)
    if code is not None and names:
        from envharness.harness.knobs import apply_knobs, rules_knobs

        declared = rules_knobs(code)
        code = apply_knobs(code, {n: 0 for n in names if n in declared})
        if code.startswith("# envharness heuristic rule parts: "):
            code = code.split("\n", 1)[1]  # the header repeats the parameters
    return json.dumps(
        [candidate.in_env_actions, code, candidate.link_task_ids, candidate.components, names],
        sort_keys=True,
        default=str,
    )


def smoothed_rate(stats: dict[str, Any]) -> float:
    """``(successes + 0.5) / (n + 1)``: a success rate that is never exactly 0 or 1.

    Example:
        >>> smoothed_rate({"n": 5, "successes": 5})
        0.9166666666666666
    """
    n = int(stats.get("n") or 0)
    return (int(stats.get("successes") or 0) + 0.5) / (n + 1)


def _steps(stats: dict[str, Any], fallback: float) -> float:
    steps = stats.get("success_steps_mean")
    if steps:
        return float(steps)
    return float(stats.get("steps_mean") or fallback or 1.0)


@dataclass(frozen=True)
class Target:
    """What the search aims for on its axis.

    Attributes:
        axis: ``success`` (success rate) or ``steps`` (mean steps of successful episodes).
        low: Lowest value on target.
        high: Highest value on target.
        aim: The value the model steers to.
        gentle: Prefer the mildest next rung over the best predicted one (``auto``).

    Example:
        >>> Target.for_objective(Objective.parse("sr:0.4-0.6"), "harden", {}).aim
        0.5
    """

    axis: Literal["success", "steps"]
    low: float
    high: float
    aim: float
    gentle: bool = False

    @classmethod
    def for_objective(
        cls, objective: Objective, direction: str, baseline: dict[str, Any]
    ) -> Target:
        """The band's target, or for ``auto`` the success counts the validator accepts.

        ``auto`` scaffolding needs a success count whose Wilson interval lies above the
        baseline rate; hardening one whose interval lies below it, with at least one success.
        Both aim half a success inside that range, at its mild end.
        """
        if objective.kind in ("success_band", "steps_band"):
            low, high = float(objective.low), float(objective.high)  # type: ignore[arg-type]
            axis: Literal["success", "steps"] = (
                "success" if objective.kind == "success_band" else "steps"
            )
            return cls(axis, low, high, (low + high) / 2)
        n = max(1, int(baseline.get("n") or 0))
        rate = float(baseline.get("success_rate") or 0.0)
        if direction == "harden":
            counts = [k for k in range(1, n + 1) if wilson_interval(k, n)[1] < rate] or [1]
            low, high = 1 / n, max(counts) / n
            return cls("success", low, high, max(low, high - 0.5 / n), gentle=True)
        counts = [k for k in range(n + 1) if wilson_interval(k, n)[0] > rate] or [n]
        low = min(counts) / n
        return cls("success", low, 1.0, min(1.0, low + 0.5 / n), gentle=True)

    def side(self, stats: dict[str, Any], baseline_successes: int) -> Side:
        """Where a result (a ``RolloutStats`` dict) lies relative to the target.

        No success at all is ``hard`` when the baseline had some (the task became unsolvable),
        and always on the steps axis (there are no steps to judge).
        """
        n = int(stats.get("n") or 0)
        successes = int(stats.get("successes") or 0)
        if n == 0 or (successes == 0 and (baseline_successes > 0 or self.axis == "steps")):
            return "hard"
        value = successes / n if self.axis == "success" else _steps(stats, 0.0)
        if value < self.low:
            return "hard" if self.axis == "success" else "easy"
        if value > self.high:
            return "easy" if self.axis == "success" else "hard"
        return "on"


def observed_value(target: Target, stats: dict[str, Any], fallback_steps: float) -> float:
    """A result's value on the target's axis (the smoothed rate, or the steps)."""
    if target.axis == "success":
        return smoothed_rate(stats)
    return _steps(stats, fallback_steps)


@dataclass(frozen=True)
class Rung:
    """A structural option and the prior guess of its effect.

    Attributes:
        candidate: What to validate (empty for the plain task).
        family: Rungs of one family share what is learned about their effect.
        success_power: Predicted success ``r ** success_power * success_factor``.
        success_factor: See ``success_power``.
        steps_factor: Predicted steps ``s * steps_factor``.
        skip_if_inert: Under ``auto``, skip this rung once a rung of its family changed nothing
            (one more sibling task or ban is not worth an iteration); head starts never skip.
    """

    candidate: Candidate
    family: str = "base"
    success_power: float = 1.0
    success_factor: float = 1.0
    steps_factor: float = 1.0
    skip_if_inert: bool = False

    def shift(self, target: Target, rate: float) -> float:
        """The prior's log-shift of the axis value from the plain task's."""
        if target.axis == "success":
            return (self.success_power - 1.0) * math.log(rate) + math.log(self.success_factor)
        return math.log(self.steps_factor)


def predict(
    rungs: Sequence[Rung],
    index: int,
    target: Target,
    base: float,
    observed: dict[int, float],
    *,
    censored: bool = False,
) -> float:
    """Rung ``index``'s predicted value, its family's prior scaled by the family's results.

    Args:
        rungs: The ladder.
        index: The rung to predict.
        target: The target (its axis).
        base: The plain task's value (smoothed success rate, or steps).
        observed: Values seen so far, by rung index.
        censored: The plain task succeeded always or never, so a family member that also did
            says nothing about the family's strength (it is not used to scale it).
    """
    rung = rungs[index]
    rate = base if target.axis == "success" else 0.5
    prior = rung.shift(target, rate)
    scales = []
    for i, value in observed.items():
        other = rungs[i]
        if other.family != rung.family or i == index:
            continue
        if censored and abs(value - base) < 1e-9:
            continue
        expected = other.shift(target, rate)
        if abs(expected) > 1e-9 and value > 0:
            scales.append(math.log(value / base) / expected)
    scale = min(4.0, max(0.0, statistics.median(scales))) if scales else 1.0
    value = base * math.exp(scale * prior)
    return min(1.0, value) if target.axis == "success" else value


def inert(rungs: Sequence[Rung], index: int, base: float, observed: dict[int, float]) -> bool:
    """Whether rung ``index`` may be skipped: a tried rung of its family changed nothing."""
    rung = rungs[index]
    return rung.skip_if_inert and any(
        rungs[i].family == rung.family and i != index and abs(value - base) < 1e-9
        for i, value in observed.items()
    )


def build_rungs(
    context: DesignContext, diagnosis: Diagnosis, target: Target
) -> tuple[list[Rung], int]:
    """The structural options, easiest (shortest) first, and the plain task's index among them.

    Easier than the plain task: head starts of ``L - 1`` down to 1 actions of the oracle's plan
    (or of the shortest successful baseline episode), then, on the success axis, a one-time hint
    and, when the baseline shows loops or invalid actions, the behaviour fixes. Harder: a
    perturbed start (the first ``stage_candidates()`` entry that is not a head start), forbidding
    the most-used forbiddable tool, truncating verbose observations, the start and the ban
    together, then links to 1..3 sibling tasks. Duplicates (a stage candidate equal to a head
    start) are kept once.
    """
    rungs = [
        *_easier(context, diagnosis, target),
        Rung(Candidate(template="base")),
        *_harder(context),
    ]
    seen: set[str] = set()
    unique = []
    for rung in rungs:
        key = candidate_key(rung.candidate)
        if key not in seen:
            seen.add(key)
            unique.append(rung)
    base_index = next(i for i, r in enumerate(unique) if r.candidate.is_empty())
    return unique, base_index


def _easier(context: DesignContext, diagnosis: Diagnosis, target: Target) -> list[Rung]:
    plan = context.oracle_actions or t.success_actions(context)
    prefix = t.setups_oracle_prefix if context.oracle_actions else t.setups_success_prefix
    family = "oracle_prefix" if context.oracle_actions else "success_prefix"
    length = len(plan)
    rungs = [
        Rung(
            prefix(context, k),
            family,
            success_power=(length - k) / length,
            steps_factor=(length - k) / length,
        )
        for k in range(length - 1, 0, -1)
    ]
    if target.axis == "success" and plan:
        rungs.append(Rung(t.hint_rule(context), "hint", success_power=0.9))
    kinds = {w.kind for w in diagnosis.weaknesses}
    if kinds & {"loop", "invalid_actions", "blocked"}:
        fix = t.combine(t.block_repeated_action(context, 2), t.answer_invalid_with_options(context))
        rungs.append(Rung(fix, "behaviour", success_power=0.9))
    return rungs


def _harder(context: DesignContext) -> list[Rung]:
    natural: list[tuple[str, Candidate]] = []
    stages = [
        i for i in range(len(context.stage_candidates)) if not t.stage_is_scaffold(context, i)
    ]
    stage = t.setups_stage_candidate(context, stages[0]) if stages else None
    tools = t.forbiddable_tools(context)
    used = {s.action["tool"] for tr in context.successes for s in tr.steps if s.action}
    forbid = t.forbid_tool(context, tools[0]) if tools and tools[0] in used else None
    if stage is not None:
        natural.append(("stage", stage))
    if forbid is not None:
        natural.append(("forbid", forbid))
    lengths = sorted(t.observation_lengths(context))
    if lengths and lengths[len(lengths) // 2] >= VERBOSE_OBSERVATION:
        natural.append(("truncate", t.truncate_observation(context)))
    if stage is not None and forbid is not None:
        natural.append(("stage", t.combine(stage, forbid)))  # a stronger perturbed start
    rungs = [
        Rung(
            c,
            family,
            success_factor=0.9 - 0.05 * i,
            steps_factor=1.1 + 0.05 * i,
            skip_if_inert=True,
        )
        for i, (family, c) in enumerate(natural)
    ]
    for n in range(1, min(MAX_LINKS, len(context.sibling_task_ids)) + 1):
        link = t.link_siblings(context, n)
        rungs.append(
            Rung(link, "link", success_power=1.0 + n, steps_factor=1.0 + n, skip_if_inert=True)
        )
    return rungs
