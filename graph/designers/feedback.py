r"""The model designer's feedback: every earlier attempt rendered in full, within a budget.

For each :class:`~envharness.graph.designers.PastAttempt` the text holds the complete candidate
(Rules code uncut, Setups, Link, knobs, rationale), the verdict as data made readable (decision,
side, the judge's numbers, the knob values tried, the statistics of the rollouts judged: success
rate with n and interval, mean steps, blocked and invalid rates, end reasons), the oracle
check's outcome, and one failed and one successful validation episode. When it does not fit the
budget, the least useful parts go first — older attempts' episodes, then their calibration
details, then the latest attempt's episodes, then older attempts' candidates and statistics —
and the text ends by saying what was cut.

Example:
    >>> from envharness.graph.records import Candidate, Verdict
    >>> text = render_feedback([PastAttempt(1, Candidate(rules_code="class _Rules:\n    pass\n"),
    ...                         Verdict("refine", "too easy", side="too_easy"))])
    >>> print(text.splitlines()[0])
    ### Attempt 1 (the latest): refine, too easy
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from envharness.graph.designers.protocol import DEFAULT_FEEDBACK_BUDGET, PastAttempt
from envharness.graph.records import Candidate, Verdict
from envharness.rollout.stats import RolloutStats, failure_category
from envharness.rollout.trajectory import Trajectory
from envharness.tokens import budget_chars

__all__ = ["pick_episodes", "render_attempt", "render_feedback"]

"""Characters counted per token of the feedback budget."""

_EPISODE_CHARS = 2500  # the most one validation episode may fill before any cut
_SHORT_EPISODE_CHARS = 900  # what it keeps when episodes are shortened to fit


@dataclass
class _Part:
    """One part of the feedback; ``rank`` orders the cuts (lowest first, ``None``: never cut).

    A cut replaces ``text`` with ``short``; with ``then`` set, the part stays cuttable once more
    at that rank (to nothing).
    """

    text: str
    rank: int | None = None
    label: str = ""
    short: str = ""
    then: int | None = None

    def cut(self) -> None:
        self.text, self.short, self.rank, self.then = self.short, "", self.then, None


def pick_episodes(
    trajectories: Sequence[Trajectory],
) -> tuple[Trajectory | None, Trajectory | None]:
    """A failed episode (of the most common failure category) and a successful one.

    Example:
        >>> pick_episodes([])
        (None, None)
    """
    failed = [t for t in trajectories if not t.success]
    succeeded = next((t for t in trajectories if t.success), None)
    if not failed:
        return None, succeeded
    counts: dict[str | None, int] = {}
    for t in failed:
        counts[failure_category(t)] = counts.get(failure_category(t), 0) + 1
    common = max(counts, key=lambda c: counts[c])
    return next(t for t in failed if failure_category(t) == common), succeeded


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _values(values: dict[str, Any]) -> str:
    return ", ".join(f"{name}={_number(v)}" for name, v in values.items())


def _candidate(candidate: Candidate) -> str:
    from envharness.tools.digest import describe_action

    lines = ["Candidate:"]
    if candidate.in_env_actions:
        actions = "; ".join(describe_action(a) for a in candidate.in_env_actions)
        as_sent = [
            {"tool": a["tool"], "args": json.dumps(a["args"])} for a in candidate.in_env_actions
        ]
        lines.append(f"  Setups ({len(candidate.in_env_actions)} action(s)): {actions}")
        lines.append(f"    as in_env_actions: {json.dumps(as_sent)}")
    if candidate.rules_code is not None:
        lines.append("  Rules code (complete, as submitted):")
        lines.append("--- rules_code ---")
        lines.extend(candidate.rules_code.rstrip("\n").splitlines())
        lines.append("--- end of rules_code ---")
    if candidate.knobs:
        knobs = []
        for k in candidate.knobs:
            kind = ", integer" if k.get("integer") else ""
            start = f", started at {_number(k['value'])}" if "value" in k else ""
            knobs.append(
                f"{k['name']} in {_number(k['low'])}..{_number(k['high'])} "
                f"(harder: {k['harder']}{kind}{start})"
            )
        lines.append(f"  Knobs: {'; '.join(knobs)}")
    if candidate.link_task_ids:
        lines.append(f"  Link to: {', '.join(candidate.link_task_ids)}")
    if candidate.components:
        lines.append(f"  Further components: {json.dumps(candidate.components)}")
    if len(lines) == 1:
        lines.append("  (no change: the bare task)")
    if candidate.rationale:
        lines.append(f"  Rationale: {candidate.rationale}")
    return "\n".join(lines)


def _candidate_summary(candidate: Candidate) -> str:
    parts = []
    if candidate.in_env_actions:
        parts.append(f"{len(candidate.in_env_actions)} Setups action(s)")
    if candidate.rules_code is not None:
        parts.append(f"Rules code of {len(candidate.rules_code.splitlines())} lines")
    if candidate.knobs:
        parts.append("knobs " + ", ".join(k["name"] for k in candidate.knobs))
    if candidate.link_task_ids:
        parts.append(f"Link to {', '.join(candidate.link_task_ids)}")
    return f"Candidate (details cut to fit): {', '.join(parts) or 'no change'}"


def _judgement(judgement: dict[str, Any]) -> str:
    n, s = judgement.get("n", 0), judgement.get("successes", 0)
    low, high = judgement.get("interval") or (0.0, 1.0)
    text = (
        f"Judge ({judgement.get('method')}): {s}/{n} successes, rate {judgement.get('rate', 0):.2f}"
        f", 95% credible interval {low:.2f}-{high:.2f}"
    )
    if judgement.get("probability") is not None:
        text += (
            f"; P(claim) = {judgement['probability']:.2f}, needed >= "
            f"{judgement.get('confidence', 0):g}"
        )
        if judgement.get("pooled_n"):
            text += f" (knob model pooled over {judgement['pooled_n']} rollouts)"
    if judgement.get("p_value") is not None:
        text += f"; Fisher p = {judgement['p_value']:.2g}"
    if judgement.get("effect") is not None:
        text += f"; change in success rate against the baseline {judgement['effect']:+.2f}"
    if judgement.get("steps_mean") is not None:
        text += f"; mean steps of the successes {judgement['steps_mean']:.1f}"
    return text


def _rollout_stats(stats: dict[str, Any]) -> list[str]:
    try:
        rs = RolloutStats.from_dict(stats)
    except ValueError:
        return []
    lines = [
        f"Rollouts judged: success {rs.successes}/{rs.n} ({rs.success_rate:.0%}, 95% CI "
        f"{rs.ci_low:.0%}-{rs.ci_high:.0%}); mean steps {rs.steps_mean:.1f} "
        f"(min {rs.steps_min}, max {rs.steps_max})"
        + (
            f", of the successes {rs.success_steps_mean:.1f}"
            if rs.success_steps_mean is not None
            else ""
        ),
        f"  blocked {rs.blocked_rate:.0%} of steps, invalid {rs.invalid_rate:.0%} of steps, "
        f"{rs.loops} episode(s) with a loop, {rs.timeouts} timeout(s), {rs.errors} error(s)",
    ]
    reasons = ", ".join(f"{r} {c}" for r, c in rs.end_reasons.items() if c)
    if reasons:
        lines.append(f"  end reasons: {reasons}")
    if rs.failures:
        lines.append(
            "  failure categories: " + ", ".join(f"{k} {c}" for k, c in rs.failures.items())
        )
    return lines


def _statistics(verdict: Verdict) -> str:
    lines = []
    if verdict.judgement:
        lines.append(_judgement(verdict.judgement))
    lines.extend(_rollout_stats(verdict.stats) if verdict.stats else [])
    if verdict.baseline:
        base = verdict.baseline
        lines.append(
            f"Fresh baseline rollouts compared with: {base.get('successes')}/{base.get('n')} "
            "successes"
        )
    if verdict.knobs:
        lines.append(f"Final knob values: {_values(verdict.knobs)}")
    if verdict.rollouts:
        early = "decided before its budget ran out" if verdict.early_stopped else "budget spent"
        lines.append(f"Policy rollouts spent: {verdict.rollouts} ({early})")
    return "\n".join(lines)


def _calibration(verdict: Verdict) -> str:
    if len(verdict.calibration) < 2 and not verdict.knobs:
        return ""
    tried = []
    for setting in verdict.calibration:
        p = setting.get("probability")
        claim = f", P(claim) = {p:.2f}" if p is not None else ""
        tried.append(
            f"  {_values(setting.get('values', {})) or '(no knob)'}: "
            f"{setting.get('successes')}/{setting.get('n')} successes -> "
            f"{setting.get('decision')}{claim}"
        )
    if not tried:
        return ""
    return "Knob values tried (in order; the validator moved the knob, not you):\n" + "\n".join(
        tried
    )


def _oracle(verdict: Verdict) -> str:
    check = verdict.oracle
    if not check:
        return ""
    at = f" with {_values(check['knobs'])}" if check.get("knobs") else ""
    state = "passed" if check.get("passed") else f"FAILED ({check.get('problem')})"
    return f"Oracle check{at}: {state}: {check.get('message', '')}"


def _oracle_short(verdict: Verdict) -> str:
    check = verdict.oracle
    if not check:
        return ""
    return "Oracle check: " + ("passed" if check.get("passed") else f"failed ({check['problem']})")


def _episode(title: str, trajectory: Trajectory, limit: int) -> str:
    from envharness.tools.digest import trajectory_lines

    lines = trajectory_lines(0, trajectory)
    lines[0] = lines[0].replace("episode 0 ", "episode ", 1)
    return f"{title}:\n" + _fit(lines, limit)


def _fit(lines: list[str], limit: int) -> str:
    """The lines within ``limit`` characters: the header, the start, the first and last steps."""
    if sum(len(line) + 1 for line in lines) <= limit or len(lines) <= 4:
        return "\n".join(lines)
    head, body = lines[:2], lines[2:]
    room = limit - sum(len(line) + 1 for line in head) - 40
    front: list[str] = []
    back: list[str] = []
    while body and room > 0:
        line = body.pop(0) if len(front) <= len(back) else body.pop()
        if len(line) + 1 > room:
            break
        room -= len(line) + 1
        (front if len(front) <= len(back) else back).append(line)
    omitted = len(lines) - len(head) - len(front) - len(back)
    middle = [f"  ... ({omitted} steps omitted)"] if omitted > 0 else []
    return "\n".join(head + front + middle + back[::-1])


def _parts(past: PastAttempt, latest: bool) -> list[_Part]:
    verdict = past.verdict
    side = f", {verdict.side.replace('_', ' ')}" if verdict.side else ""
    which = " (the latest)" if latest else ""
    number = f"Attempt {past.iteration}{which}"
    label = f"attempt {past.iteration}"
    parts = [
        _Part(f"### {number}: {verdict.decision}{side}\nVerdict: {verdict.reason}"),
        _Part(
            _candidate(past.candidate),
            None if latest else 4,
            f"the candidate of {label}",
            _candidate_summary(past.candidate),
        ),
    ]
    oracle = _oracle(verdict)
    if oracle:
        parts.append(_Part(oracle, None if latest else 5, f"the oracle check of {label}",
                           _oracle_short(verdict)))  # fmt: skip
    statistics = _statistics(verdict)
    if statistics:
        short = statistics.splitlines()[0]
        parts.append(_Part(statistics, None if latest else 5, f"the statistics of {label}", short))
    calibration = _calibration(verdict)
    if calibration:
        parts.append(_Part(calibration, 6 if latest else 1, f"the knob values tried in {label}"))
    for title, trajectory in (
        ("A failed validation episode", past.failed),
        ("A successful validation episode", past.succeeded),
    ):
        if trajectory is None:
            continue
        full = _episode(title, trajectory, _EPISODE_CHARS)
        if latest:
            short = _episode(title, trajectory, _SHORT_EPISODE_CHARS)
            parts.append(
                _Part(full, 2, f"steps of the validation episodes of {label}", short, then=3)
            )
        else:
            parts.append(_Part(full, 0, f"the validation episodes of {label}"))
    if past.failed is None and past.succeeded is None and verdict.rollouts:
        parts.append(_Part("(no validation episode of this attempt was recorded)"))
    return parts


def render_attempt(past: PastAttempt, *, latest: bool = True) -> str:
    """One attempt in full (nothing cut)."""
    return "\n".join(p.text for p in _parts(past, latest) if p.text)


def render_feedback(
    past: Sequence[PastAttempt], *, budget: int = DEFAULT_FEEDBACK_BUDGET
) -> str | None:
    """Every earlier attempt, oldest first, within ``budget`` tokens; ``None`` without any.

    Args:
        past: The earlier attempts, oldest first.
        budget: Tokens (estimated as in :mod:`envharness.tokens`) the text may fill.
    """
    if not past:
        return None
    limit = budget_chars(max(1, budget))
    blocks = [_parts(p, i == len(past) - 1) for i, p in enumerate(past)]

    def size() -> int:
        return sum(len(p.text) + 1 for block in blocks for p in block) + len(blocks)

    cut: list[str] = []
    while size() > limit:
        candidates = [
            (p.rank, index, p)
            for index, block in enumerate(blocks)
            for p in block
            if p.rank is not None
        ]
        if not candidates:
            break
        _, _, part = min(candidates, key=lambda item: (item[0], item[1]))
        if part.label and part.label not in cut:
            cut.append(part.label)
        part.cut()
    text = "\n\n".join("\n".join(p.text for p in block if p.text) for block in blocks)
    note = ""
    if cut:
        note = f"\n\n[Cut to fit the feedback budget of {budget} tokens: {'; '.join(cut)}.]"
    if len(text) + len(note) > limit:
        keep = max(0, limit - len(note) - 60)
        text = f"{text[:keep]}\n... [{len(text) - keep} more characters cut]"
        note = note or f"\n\n[Cut to fit the feedback budget of {budget} tokens.]"
    return text + note
