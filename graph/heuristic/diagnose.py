"""``heuristic_diagnosis``: the offline diagnoser, from K-rollout statistics and step evidence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from envharness.core import Action
from envharness.errors import EnvHarnessError, RiggerError
from envharness.graph.objective import Objective
from envharness.graph.records import Diagnosis, Weakness
from envharness.rollout.stats import RolloutStats, failure_category, find_loop, wilson_interval
from envharness.rollout.trajectory import Step, Trajectory

__all__ = [
    "BEHAVIOUR_FAILURES",
    "HARDEN_ABOVE",
    "SCAFFOLD_BELOW",
    "auto_direction",
    "diagnosis_direction",
    "heuristic_diagnosis",
]

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


BEHAVIOUR_FAILURES: tuple[str, ...] = ("loop", "invalid_actions", "blocked")
"""Failure categories that point at the policy's behaviour rather than the task's difficulty."""

_MAX_EVIDENCE = 5
_MAX_TEXT = 160


def _clip(text: str, limit: int = _MAX_TEXT) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _action_text(action: dict[str, Any] | None) -> str:
    if action is None:
        return "(no action)"
    try:
        return str(Action.from_dict(action))
    except EnvHarnessError:
        return _clip(repr(action), 80)


def _where(index: int, trajectory: Trajectory) -> str:
    return f"episode {index} (seed {trajectory.seed})"


def diagnosis_direction(stats: RolloutStats, objective: Objective) -> tuple[str, str]:
    """The direction the baseline calls for, and why.

    ``auto`` (and a plain-language deficiency, which the heuristic reads as ``auto``) follows
    :func:`auto_direction`; a middling baseline is a ``fix-behaviour``
    case only when loops, invalid or blocked actions cause at least half of its failures,
    otherwise it is scaffolded (success at most 50%) or hardened, whichever K rollouts can show
    (a Wilson interval clear of the baseline rate). A success band scaffolds below
    the band, hardens above it and does nothing inside; a steps band hardens (lengthens) when
    successful episodes are shorter than the band, scaffolds (shortens) when longer or when
    nothing succeeded, and does nothing inside.

    Example:
        >>> stats = RolloutStats.from_trajectories([])
        >>> diagnosis_direction(stats, Objective.parse("sr:0.4-0.6"))[0]
        'scaffold'
    """
    rate = stats.success_rate
    if objective.kind == "success_band":
        if rate < objective.low:  # type: ignore[operator]
            return "scaffold", f"success {rate:.0%} is below the band {objective}"
        if rate > objective.high:  # type: ignore[operator]
            return "harden", f"success {rate:.0%} is above the band {objective}"
        return "none", f"success {rate:.0%} is already inside the band {objective}"
    if objective.kind == "steps_band":
        steps = stats.success_steps_mean
        if steps is None:
            return "scaffold", "no baseline episode succeeded, so there are no steps to lengthen"
        if steps < objective.low:  # type: ignore[operator]
            return "harden", f"successful episodes take {steps:.1f} steps, shorter than {objective}"
        if steps > objective.high:  # type: ignore[operator]
            return (
                "scaffold",
                f"successful episodes take {steps:.1f} steps, longer than {objective}",
            )
        return "none", f"successful episodes take {steps:.1f} steps, inside {objective}"
    direction = auto_direction(stats)
    if direction == "scaffold":
        return direction, f"success {rate:.0%} is low: make the task easier"
    if direction == "harden":
        return direction, f"success {rate:.0%} is high: make the task harder"
    failed = stats.n - stats.successes
    behaviour = sum(stats.failures.get(k, 0) for k in BEHAVIOUR_FAILURES)
    if behaviour and 2 * behaviour >= failed:
        return "fix-behaviour", (
            f"success {rate:.0%} is middling and {behaviour} of its {failed} failures are loops, "
            "invalid or blocked actions"
        )
    n = stats.n
    can_scaffold = any(wilson_interval(k, n)[0] > rate for k in range(n + 1))
    can_harden = any(wilson_interval(k, n)[1] < rate for k in range(1, n + 1))
    if can_scaffold and (rate <= 0.5 or not can_harden):
        return "scaffold", f"success {rate:.0%} is middling and its failures are not behavioural"
    if can_harden:
        return "harden", f"success {rate:.0%} is middling and its failures are not behavioural"
    side = "scaffold" if rate <= 0.5 else "harden"
    return side, (
        f"success {rate:.0%} is middling; {n} rollouts can hardly show a change either way"
    )


def heuristic_diagnosis(
    trajectories: Sequence[Trajectory], objective: Objective | str = "auto"
) -> Diagnosis:
    """Diagnoses the baseline from statistics and step evidence, without a model.

    Args:
        trajectories: The K baseline rollouts.
        objective: The rig's objective (an :class:`Objective` or its text form).

    Returns:
        A :class:`~envharness.graph.records.Diagnosis` with ``source="heuristic"``: the direction
        (see :func:`diagnosis_direction`), the weaknesses with evidence (episode and step
        numbers, repeated actions, invalid-action and error messages), the baseline statistics
        and a summary paragraph.

    Raises:
        RiggerError: If there is no trajectory, or an item is not a ``Trajectory``.

    Example:
        >>> from envharness.harness.spec import BridgeSpec, HarnessSpec
        >>> from envharness.rollout import OraclePolicy, rollout
        >>> spec = HarnessSpec(BridgeSpec("toy24", "4-4-10-10"))
        >>> batch = [rollout(spec.build(), OraclePolicy(1.0, s), seed=s) for s in range(3)]
        >>> diagnosis = heuristic_diagnosis(batch, "auto")
        >>> diagnosis.direction, [w.kind for w in diagnosis.weaknesses]
        ('harden', ['always_solves'])
    """
    batch = list(trajectories)
    if not batch:
        raise RiggerError("no baseline trajectories to diagnose; play some rollouts first")
    try:
        stats = RolloutStats.from_trajectories(batch)
    except TypeError as e:
        raise RiggerError(f"cannot diagnose: {e}") from e
    objective = Objective.parse(objective)
    direction, why = diagnosis_direction(stats, objective)
    weaknesses = _weaknesses(batch, stats, objective)
    return Diagnosis(
        direction=direction,  # type: ignore[arg-type]
        weaknesses=weaknesses,
        stats=stats.to_dict(),
        summary=_summary(stats, objective, direction, why, weaknesses),
        source="heuristic",
    )


# -- weaknesses --------------------------------------------------------------------------------


def _weaknesses(
    batch: list[Trajectory], stats: RolloutStats, objective: Objective
) -> list[Weakness]:
    found = [
        _loops(batch),
        _invalid(batch),
        _blocked(batch),
        _ended(batch, "budget"),
        _ended(batch, "wrong_end"),
        *(_errors(batch, reason) for reason in ("timeout", "policy_error", "env_error")),
        _always_solves(stats),
        _steps_band(stats, objective),
    ]
    return [w for w in found if w is not None]


def _loops(batch: list[Trajectory]) -> Weakness | None:
    evidence, episodes = [], 0
    for i, trajectory in enumerate(batch):
        loop = find_loop(trajectory.action_keys())
        if loop is None:
            continue
        episodes += 1
        start, period, repeats = loop
        block = [_action_text(s.action) for s in trajectory.steps[start : start + period]]
        end = start + period * repeats - 1
        if len(evidence) < _MAX_EVIDENCE:
            evidence.append(
                f"{_where(i, trajectory)}: steps {start}-{end} repeat "
                f"[{', '.join(block)}] {repeats} times"
            )
    if not episodes:
        return None
    return Weakness(
        "loop",
        f"the policy repeats the same action(s) without progress in {episodes} of "
        f"{len(batch)} episodes",
        evidence,
        episodes,
    )


def _invalid(batch: list[Trajectory]) -> Weakness | None:
    messages: dict[str, list[str]] = {}
    episodes = total = 0
    for i, trajectory in enumerate(batch):
        steps = [s for s in trajectory.steps if s.invalid is not None]
        if not steps:
            continue
        episodes += 1
        total += len(steps)
        for step in steps:
            messages.setdefault(_clip(step.invalid or ""), []).append(
                f"episode {i} step {step.index}"
            )
    if not episodes:
        return None
    evidence = [
        f"{message!r} at {', '.join(places[:3])}"
        + (f" (+{len(places) - 3} more)" if len(places) > 3 else "")
        for message, places in list(messages.items())[:_MAX_EVIDENCE]
    ]
    return Weakness(
        "invalid_actions",
        f"{total} invalid actions in {episodes} of {len(batch)} episodes "
        f"({len(messages)} distinct messages)",
        evidence,
        episodes,
    )


def _blocked(batch: list[Trajectory]) -> Weakness | None:
    evidence, episodes, total = [], 0, 0
    for i, trajectory in enumerate(batch):
        steps: list[Step] = [s for s in trajectory.steps if s.blocked]
        if not steps:
            continue
        episodes += 1
        total += len(steps)
        for step in steps:
            if len(evidence) < _MAX_EVIDENCE:
                evidence.append(
                    f"episode {i} step {step.index}: {_action_text(step.action)} was blocked: "
                    f"{_clip(step.observation, 100)!r}"
                )
    if not episodes:
        return None
    return Weakness(
        "blocked",
        f"{total} actions blocked by rules in {episodes} of {len(batch)} episodes",
        evidence,
        episodes,
    )


def _ended(batch: list[Trajectory], category: str) -> Weakness | None:
    hits = [(i, t) for i, t in enumerate(batch) if failure_category(t) == category]
    if not hits:
        return None
    if category == "budget":
        evidence = [f"{_where(i, t)} used all {t.n_steps} steps without success" for i, t in hits][
            :_MAX_EVIDENCE
        ]
        text = f"the step budget ran out in {len(hits)} of {len(batch)} episodes"
    else:
        evidence = [
            f"{_where(i, t)} ended at step {t.n_steps - 1} without success: "
            f"{_clip(t.steps[-1].observation if t.steps else t.first_observation, 100)!r}"
            for i, t in hits
        ][:_MAX_EVIDENCE]
        text = f"the env ended {len(hits)} of {len(batch)} episodes without success"
    return Weakness(category, text, evidence, len(hits))


def _errors(batch: list[Trajectory], reason: str) -> Weakness | None:
    hits = [(i, t) for i, t in enumerate(batch) if t.end_reason == reason]
    if not hits:
        return None
    evidence = [
        f"{_where(i, t)} at step {t.n_steps}: {_clip(t.error or 'no message')}" for i, t in hits
    ][:_MAX_EVIDENCE]
    what = {
        "timeout": "the policy timed out",
        "policy_error": "the policy raised an error",
        "env_error": "the environment raised an error",
    }[reason]
    return Weakness(reason, f"{what} in {len(hits)} of {len(batch)} episodes", evidence, len(hits))


def _always_solves(stats: RolloutStats) -> Weakness | None:
    if stats.n == 0 or stats.successes < stats.n:
        return None
    return Weakness(
        "always_solves",
        f"the policy solved all {stats.n} episodes, in {stats.success_steps_mean:.1f} steps on "
        f"average ({stats.steps_min}-{stats.steps_max})",
        [f"success {stats.successes}/{stats.n}", f"steps {stats.steps_min}-{stats.steps_max}"],
        stats.n,
    )


def _steps_band(stats: RolloutStats, objective: Objective) -> Weakness | None:
    steps = stats.success_steps_mean
    if objective.kind != "steps_band" or steps is None or objective.contains(steps):
        return None
    kind = "too_fast" if steps < objective.low else "too_slow"  # type: ignore[operator]
    side = "shorter" if kind == "too_fast" else "longer"
    return Weakness(
        kind,
        f"successful episodes take {steps:.1f} steps, {side} than the band {objective}",
        [f"{stats.successes} successful episodes, mean {steps:.1f} steps"],
        stats.successes,
    )


def _summary(
    stats: RolloutStats,
    objective: Objective,
    direction: str,
    why: str,
    weaknesses: list[Weakness],
) -> str:
    parts = [f"Heuristic diagnosis of {stats.n} baseline rollouts: {stats.summary()}."]
    if objective.kind == "deficiency":
        parts.append(
            f"The heuristic cannot read a plain-language deficiency ({objective.text!r}); it "
            "diagnosed the baseline as for the 'auto' objective."
        )
    else:
        parts.append(f"Objective {objective}: {objective.describe()}.")
    parts.append(f"Direction: {direction}, because {why}.")
    if weaknesses:
        listing = "; ".join(f"{w.kind}: {w.description}" for w in weaknesses)
        parts.append(f"Found: {listing}.")
    else:
        parts.append("No weakness stands out in the baseline.")
    return " ".join(parts)
