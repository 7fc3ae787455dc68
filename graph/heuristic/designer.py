"""``HeuristicDesigner``: a deterministic search over templates, steered by the verdicts.

The designer places what it can build on one **difficulty axis** (for a steps band, a length
axis): the *rungs* of :func:`~envharness.graph.heuristic.ladder.build_rungs`, from head starts
along a known solution, through the plain task, to perturbed starts, tool bans and links to
sibling tasks. On top of any rung, :func:`~envharness.graph.heuristic.templates.drop_actions`
is a fine, continuous knob: each action fails with probability ``p``.

Each call reads the attempts so far (the baseline is the plain task's result) and classifies each
as *too easy* (success above the target, or episodes too short), *too hard* (success below it,
too long, or no success at all) or on target. Then it:

1. brackets the target between the hardest rung found too easy and the next rung found too hard;
2. tries an untested rung inside the bracket that is predicted on target (for ``auto``: the
   mildest next rung, small changes first), predictions being priors scaled by what the rung's
   family did so far;
3. otherwise tunes ``p`` on the too-easy rung closest to the target, bisecting between the
   probabilities found too easy and too hard, guided by a simple model (success ``r (1 - p)``,
   steps ``s / (1 - p)``) calibrated on the results seen.

It dry-runs each candidate on a fresh env (one that cannot start is skipped) and proposes no
candidate twice, with one exception per rig: when the ladder has nothing left, the candidate
refined on at most :data:`RETEST_MAX_ROLLOUTS` rollouts that came closest to the target is
played once more on fresh seeds (a refine is sure only to the judge's confidence, and one unlucky
batch must not end a rig whose right rung was found). It returns ``None`` when nothing is left.
Behaviour fixes (``fix-behaviour`` under ``auto``) are a short ladder ordered by the diagnosed
weakness.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from envharness.errors import DesignerError, EnvHarnessError, RiggerError
from envharness.graph.heuristic import templates as t
from envharness.graph.heuristic.design_context import DesignContext
from envharness.graph.heuristic.ladder import (
    Rung,
    Side,
    Target,
    build_rungs,
    candidate_key,
    inert,
    observed_value,
    predict,
    smoothed_rate,
)
from envharness.graph.heuristic.rules_code import DROP_KNOB, parts_of, render_rules
from envharness.graph.objective import Objective
from envharness.graph.records import Candidate, Diagnosis, Verdict

__all__ = ["RETEST_MAX_ROLLOUTS", "HeuristicDesigner"]

_log = logging.getLogger("envharness.graph")

RETEST_MAX_ROLLOUTS = 10
"""A candidate refined on at most this many rollouts may be retested once on fresh seeds."""

_P_MAX = 0.9
_P_MIN_GAP = 0.02
_DRY_RUN_TRIES = 12
_NONE_RATIONALE = (
    "heuristic template none: the baseline already meets the objective; no component is needed"
)


@dataclass
class _Result:
    """One validated point: rung, drop probability, side and statistics."""

    rung: int
    p: float
    side: Side
    stats: dict[str, Any]


class HeuristicDesigner:
    """The offline, rule-based designer: template candidates chosen by a bracketing search.

    Args:
        dry_run: Build and reset each candidate on a fresh env before proposing it, skipping
            those that cannot start (a Setups action the env rejects, rules that fail).

    Example:
        >>> from envharness.graph.heuristic.design_context import DesignContext
        >>> from envharness.graph.heuristic.diagnose import heuristic_diagnosis
        >>> from envharness.harness.spec import BridgeSpec, HarnessSpec
        >>> from envharness.rollout import OraclePolicy, rollout
        >>> spec = HarnessSpec(BridgeSpec("toy24", "4-4-10-10"))
        >>> baseline = [rollout(spec.build(), OraclePolicy(1.0, s), seed=s) for s in range(5)]
        >>> objective = Objective.parse("sr:0.4-0.6")
        >>> diagnosis = heuristic_diagnosis(baseline, objective)
        >>> context = DesignContext.from_spec(spec, baseline, siblings=[])
        >>> candidate = HeuristicDesigner().propose(context, diagnosis, objective, [])
        >>> candidate.template, candidate.rationale.startswith("heuristic template")
        ('drop_actions(0.45)', True)
    """

    def __init__(self, *, dry_run: bool = True) -> None:
        self.dry_run = dry_run

    @staticmethod
    def supports(objective: Objective | str) -> bool:
        """Whether the heuristic can pursue ``objective`` (anything but a plain-language one)."""
        return Objective.parse(objective).kind != "deficiency"

    def propose(
        self,
        context: DesignContext,
        diagnosis: Diagnosis,
        objective: Objective | str,
        attempts: Sequence[tuple[Candidate, Verdict]] = (),
    ) -> Candidate | None:
        """The next candidate to validate, or ``None`` when the templates are exhausted.

        Args:
            context: The task (tools, schema, oracle plan, stage candidates, siblings, baseline).
            diagnosis: The baseline's diagnosis; its direction and statistics steer the search.
            objective: The rig's objective.
            attempts: Earlier candidates and their verdicts, oldest first.

        Raises:
            DesignerError: For a plain-language deficiency objective (it needs a model designer).
            RiggerError: If ``context`` or ``diagnosis`` has the wrong type.
        """
        objective = Objective.parse(objective)
        if not self.supports(objective):
            raise DesignerError(
                "the heuristic designer cannot target a plain-language deficiency "
                f"({objective.text!r}); configure a model designer, or use 'auto' or a band"
            )
        if not isinstance(context, DesignContext):
            raise RiggerError(f"expected a DesignContext, got {type(context).__name__}")
        if not isinstance(diagnosis, Diagnosis):
            raise RiggerError(f"expected a Diagnosis, got {type(diagnosis).__name__}")
        history = list(attempts)
        excluded = {candidate_key(c) for c, _ in history}
        for _ in range(_DRY_RUN_TRIES):
            candidate = self._choose(context, diagnosis, objective, history, excluded)
            if candidate is None or self._starts(context, candidate):
                return candidate
            excluded.add(candidate_key(candidate))  # skipped, not judged: nothing was learned
        return None

    # -- choosing ---------------------------------------------------------------------------------

    def _choose(
        self,
        context: DesignContext,
        diagnosis: Diagnosis,
        objective: Objective,
        history: list[tuple[Candidate, Verdict]],
        excluded: set[str],
    ) -> Candidate | None:
        """Dispatches on the direction: nothing to do, behaviour fixes, or the ladder search."""
        if diagnosis.direction == "none":
            empty = Candidate(rationale=_NONE_RATIONALE, template="none")
            return empty if candidate_key(empty) not in excluded else None
        if diagnosis.direction == "fix-behaviour" and not objective.is_band:
            return self._behaviour_fix(context, diagnosis, excluded)
        target = Target.for_objective(objective, diagnosis.direction, diagnosis.stats)
        found = self._search(context, diagnosis, target, history, excluded)
        return found if found is not None else _retest(context, target, history)

    @staticmethod
    def _behaviour_fix(
        context: DesignContext, diagnosis: Diagnosis, excluded: set[str]
    ) -> Candidate | None:
        """Block repeats and answer invalid steps, the diagnosed one first, then both."""
        episodes = {w.kind: w.episodes for w in diagnosis.weaknesses}
        block = t.block_repeated_action(context, 2)
        answer = t.answer_invalid_with_options(context)
        confused = episodes.get("invalid_actions", 0) + episodes.get("blocked", 0)
        ladder = [answer, block] if confused > episodes.get("loop", 0) else [block, answer]
        ladder += [t.combine(block, answer), t.combine(t.block_repeated_action(context, 1), answer)]
        return next((c for c in ladder if candidate_key(c) not in excluded), None)

    def _search(
        self,
        context: DesignContext,
        diagnosis: Diagnosis,
        target: Target,
        history: list[tuple[Candidate, Verdict]],
        excluded: set[str],
    ) -> Candidate | None:
        """Brackets the target on the ladder, then tries a rung inside or tunes ``p``."""
        rungs, base_index = build_rungs(context, diagnosis, target)
        baseline = diagnosis.stats
        base_successes = int(baseline.get("successes") or 0)
        results = [_Result(base_index, 0.0, target.side(baseline, base_successes), baseline)]
        results += _placed(rungs, history, target, base_successes)
        plain = [r for r in results if r.p == 0.0]
        fallback = float(context.max_steps or 1)
        values = {r.rung: observed_value(target, r.stats, fallback) for r in plain}
        e = max((r.rung for r in plain if r.side == "easy"), default=-1)
        h = min((r.rung for r in plain if r.side == "hard" and r.rung > e), default=len(rungs))
        inside = [
            i
            for i in range(e + 1, h)
            if i not in values and candidate_key(rungs[i].candidate) not in excluded
        ]
        anchor = self._anchor(plain, target, base_index, len(context.baseline) or 5, fallback)
        base = values[base_index]
        if inside and target.gentle:
            mildest_first = inside if e >= base_index else inside[::-1]
            for i in mildest_first:
                if not inert(rungs, i, base, values):
                    return rungs[i].candidate
        elif inside:
            n = int(baseline.get("n") or 0)
            censored = base_successes in (0, n)
            guess = {i: predict(rungs, i, target, base, values, censored=censored) for i in inside}
            on_target = [i for i in inside if target.low <= guess[i] <= target.high]
            if on_target or anchor is None:
                pool = on_target or inside
                best = min(pool, key=lambda i: (abs(guess[i] - target.aim), abs(i - base_index)))
                return rungs[best].candidate
        if anchor is None:
            return None
        return self._tune(context, rungs[anchor.rung], anchor, results, target, excluded)

    @staticmethod
    def _anchor(
        plain: list[_Result], target: Target, base_index: int, k: int, fallback: float
    ) -> _Result | None:
        """The too-easy rung to tune: the closest to the aim, the mildest among near ties."""
        easy = [r for r in plain if r.side == "easy"]
        if not easy:
            return None
        tolerance = 1.0 / k if target.axis == "success" else 0.5

        def gap(r: _Result) -> float:
            return abs(observed_value(target, r.stats, fallback) - target.aim)

        best = min(gap(r) for r in easy)
        near = [r for r in easy if gap(r) <= best + tolerance]
        return min(near, key=lambda r: (abs(r.rung - base_index), r.rung))

    def _tune(
        self,
        context: DesignContext,
        rung: Rung,
        anchor: _Result,
        results: list[_Result],
        target: Target,
        excluded: set[str],
    ) -> Candidate | None:
        """``rung`` plus ``drop_actions(p)``, ``p`` bisected and steered by the model."""
        tuned = [r for r in results if r.rung == anchor.rung and r.p > 0.0]
        p_low = max((r.p for r in tuned if r.side == "easy"), default=0.0)
        p_high = min((r.p for r in tuned if r.side == "hard" and r.p > p_low), default=1.0)
        ceiling = min(p_high, _P_MAX)
        if ceiling - p_low < _P_MIN_GAP or _knob_backfires(anchor, tuned, target):
            return None
        width = ceiling - p_low
        midpoint = p_low + width / 2
        guess = _model_p(anchor, tuned, target)
        lo_edge, hi_edge = p_low + 0.15 * width, ceiling - 0.15 * width
        if p_high >= 1.0:  # nothing too hard seen yet: never jump past the midpoint
            hi_edge = min(hi_edge, max(midpoint, lo_edge))
        if guess is None or not lo_edge <= guess <= hi_edge:
            guess = midpoint  # the model is off the bracket: bisect
        for p in _nearby(guess, p_low, ceiling):
            candidate = _with_drop(context, rung.candidate, p)
            if candidate_key(candidate) not in excluded:
                return candidate
        return None

    # -- checking ---------------------------------------------------------------------------------

    def _starts(self, context: DesignContext, candidate: Candidate) -> bool:
        """Whether the candidate's env builds and resets (a dry run on a fresh env)."""
        if not self.dry_run or candidate.is_empty():
            return True
        try:
            env = candidate.apply(context.base_spec).build()
        except EnvHarnessError as e:
            _log.info("heuristic candidate %s cannot be built: %s", candidate.template, e)
            return False
        try:
            env.reset(seed=0)
            return True
        except EnvHarnessError as e:
            _log.info("heuristic candidate %s cannot start: %s", candidate.template, e)
            return False
        finally:
            env.close()


# -- helpers ---------------------------------------------------------------------------------------


def _placed(
    rungs: list[Rung],
    history: list[tuple[Candidate, Verdict]],
    target: Target,
    base_successes: int,
) -> list[_Result]:
    """Each attempt as (rung, drop probability, side); attempts off the ladder are left out."""
    index = {candidate_key(r.candidate): i for i, r in enumerate(rungs)}
    results = []
    for candidate, verdict in history:
        split = _split_drop(candidate)
        if split is None:
            continue
        rest, p = split
        i = index.get(candidate_key(rest))
        if i is None:
            continue
        p = float(verdict.knobs.get(DROP_KNOB, p))
        side: Side
        if verdict.side is not None:
            side = "easy" if verdict.side == "too_easy" else "hard"
        elif verdict.decision == "accept":
            side = "on"
        else:  # undecided (or refined without a side): read the numbers
            side = target.side(verdict.stats, base_successes)
        results.append(_Result(i, p, side, verdict.stats))
    return results


def _retest(
    context: DesignContext,
    target: Target,
    history: list[tuple[Candidate, Verdict]],
) -> Candidate | None:
    """The refined candidate to play once more, when the ladder has nothing left (else ``None``).

    At most one retest per rig. Only a non-empty candidate refined on at most
    :data:`RETEST_MAX_ROLLOUTS` rollouts qualifies; of those, the one whose result came closest
    to the target's aim (the most recent among ties). The validator draws fresh seeds for it,
    so the retest is judged on rollouts that played no part in the refine.
    """
    tried = Counter(candidate_key(c) for c, _ in history)
    if any(count > 1 for count in tried.values()):
        return None  # one retest per rig
    fallback = float(context.max_steps or 1)
    options = []
    for order, (candidate, verdict) in enumerate(history):
        if (
            verdict.decision != "refine"
            or candidate.is_empty()
            or verdict.rollouts > RETEST_MAX_ROLLOUTS
            or not verdict.stats.get("n")
        ):
            continue
        gap = abs(observed_value(target, verdict.stats, fallback) - target.aim)
        options.append((gap, -order, candidate))
    if not options:
        return None
    candidate = min(options, key=lambda option: option[:2])[2]
    return replace(
        candidate,
        rationale=f"{candidate.rationale} (retested on fresh seeds: it was refined on only a "
        f"few rollouts and nothing else is left to try)",
        template=f"retest({candidate.template})",
    )


def _split_drop(candidate: Candidate) -> tuple[Candidate, float] | None:
    """The candidate without its ``drop_actions`` part, and that part's probability (or 0)."""
    try:
        parts = parts_of(candidate.rules_code)
    except ValueError:
        return None
    drops = [p for p in parts if p.kind == "drop_actions"]
    if len(drops) > 1:
        return None
    rest = [p for p in parts if p.kind != "drop_actions"]
    stripped = Candidate(
        in_env_actions=candidate.in_env_actions,
        rules_code=render_rules(rest) if rest else None,
        link_task_ids=candidate.link_task_ids,
    )
    return stripped, float(drops[0].params["probability"]) if drops else 0.0


def _with_drop(context: DesignContext, candidate: Candidate, p: float) -> Candidate:
    drop = t.drop_actions(context, p)
    return drop if candidate.is_empty() else t.combine(candidate, drop)


def _knob_backfires(anchor: _Result, tuned: list[_Result], target: Target) -> bool:
    """Whether failing actions twice failed to lengthen successful episodes (steps axis).

    A weak policy's successes under failing actions are its lucky short episodes, so the knob
    cannot lengthen them; tuning it further would only spend rollouts.
    """
    if target.axis != "steps":
        return False
    start = float(anchor.stats.get("success_steps_mean") or 0.0)
    not_longer = [r for r in tuned if 0 < float(r.stats.get("success_steps_mean") or 0.0) <= start]
    return start > 0 and len(not_longer) >= 2


def _model_p(anchor: _Result, tuned: list[_Result], target: Target) -> float | None:
    """The drop probability the calibrated model expects to hit ``target.aim`` (or ``None``).

    Success ``r (1 - p) ** power``, steps ``s / (1 - p) ** power``, ``power`` fitted on the
    informative result closest to the aim (1 without one).
    """
    if target.axis == "success":
        start = smoothed_rate(anchor.stats)
        informative = [
            (r.p, smoothed_rate(r.stats))
            for r in tuned
            if 0 < int(r.stats.get("successes") or 0) < int(r.stats.get("n") or 0)
        ]
        ratio_to_aim = target.aim / start
    else:
        start = float(anchor.stats.get("success_steps_mean") or 0.0)
        if start <= 0:
            return None
        informative = [
            (r.p, start**2 / float(r.stats["success_steps_mean"]))
            for r in tuned
            if r.stats.get("success_steps_mean")
        ]
        ratio_to_aim = start / target.aim
    power = 1.0
    if informative:
        p, value = min(informative, key=lambda item: abs(item[1] / start - ratio_to_aim))
        ratio = value / start
        if 0 < ratio < 1:
            power = min(8.0, max(0.125, math.log(ratio) / math.log(1 - p)))
    if not 0 < ratio_to_aim < 1:
        return None
    return 1 - ratio_to_aim ** (1 / power)


def _nearby(guess: float, low: float, high: float) -> list[float]:
    """Probabilities on a 0.01 grid strictly inside ``(low, high]``, nearest ``guess`` first."""
    start = round(guess, 2)
    values: list[float] = []
    for step in range(100):
        for value in (round(start + step / 100, 2), round(start - step / 100, 2)):
            if low < value <= high and 0 < value < 1 and value not in values:
                values.append(value)
        if len(values) >= 12:
            break
    return values
