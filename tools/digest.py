"""Compact text views of baseline rollouts for a model's context window.

A trajectory becomes one header line (outcome, end reason, steps, failure category, loop) and one
line per step (``action -> first lines of the observation`` plus flags); a batch is its statistics
and each episode's listing, shortened to fit a character budget by keeping the start and the end
of each episode.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from envharness.core import Action
from envharness.rollout.stats import RolloutStats, failure_category, find_loop
from envharness.rollout.trajectory import Step, Trajectory

__all__ = [
    "baseline_digest",
    "clip",
    "describe_action",
    "describe_stats",
    "first_lines",
    "json_text",
    "observation_block",
    "trajectory_lines",
]

_OBSERVATION_LINES = 2
_LINE_CHARS = 160
_MIN_EPISODE_CHARS = 300

OBSERVATION_CHARS = 2000
"""The most characters of one observation a tool shows "in full"."""


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most about ``limit`` characters, saying how much was cut.

    Example:
        >>> clip("abcdef", 3)
        'abc... [3 more chars]'
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more chars]"


def json_text(value: Any, inline: int = 300) -> str:
    """``value`` as JSON: on one line when short, indented otherwise.

    Example:
        >>> json_text({"numbers": ["4", "100"]})
        '{"numbers": ["4", "100"]}'
    """
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= inline:
        return text
    return json.dumps(value, indent=1, ensure_ascii=False, default=str)


def first_lines(text: str, lines: int = _OBSERVATION_LINES, limit: int = _LINE_CHARS) -> str:
    r"""The first non-empty ``lines`` of ``text`` joined by `` | ``, clipped to ``limit``.

    Example:
        >>> first_lines("Numbers left: 4 4 100\nLast: 10 * 10 = 100\nmore")
        'Numbers left: 4 4 100 | Last: 10 * 10 = 100'
    """
    kept = [line.strip() for line in str(text).splitlines() if line.strip()][:lines]
    return clip(" | ".join(kept), limit)


def describe_action(action: Any) -> str:
    """An action dict as ``tool(arg=value, ...)``; any other value as its JSON.

    Example:
        >>> describe_action({"tool": "combine", "args": {"a": "4", "op": "*", "b": "6"}})
        "combine(a='4', op='*', b='6')"
    """
    if action is None:
        return "(no action)"
    try:
        return str(Action.from_dict(action))
    except Exception:
        return json.dumps(action, default=str)[:_LINE_CHARS]


def describe_stats(stats: RolloutStats) -> str:
    """The statistics in a few lines: the summary, failure categories and end reasons."""
    lines = [stats.summary()]
    if stats.success_steps_mean is not None:
        lines.append(f"mean steps of successful episodes: {stats.success_steps_mean:.1f}")
    if stats.failures:
        failures = ", ".join(f"{kind} {count}" for kind, count in stats.failures.items())
        lines.append(f"failure categories: {failures}")
    reasons = ", ".join(f"{r} {c}" for r, c in stats.end_reasons.items() if c)
    if reasons:
        lines.append(f"end reasons: {reasons}")
    return "\n".join(lines)


def observation_block(text: str, indent: str = "      ", limit: int = OBSERVATION_CHARS) -> str:
    r"""``text`` in full (up to ``limit`` characters), every line indented.

    Example:
        >>> observation_block("Numbers left: 4 24\nLast: 6 * 4 = 24", indent="  ")
        '  Numbers left: 4 24\n  Last: 6 * 4 = 24'
    """
    body = clip(str(text), limit).rstrip("\n")
    return "\n".join(indent + line for line in body.splitlines()) or f"{indent}(empty)"


def _flags(step: Step) -> str:
    flags = []
    if step.blocked:
        flags.append("BLOCKED")
    if step.invalid is not None:
        shown = step.invalid in step.observation
        flags.append("INVALID" if shown else f"INVALID: {clip(step.invalid, 100)}")
    if step.error is not None:
        flags.append(f"ERROR: {clip(step.error, 160)}")
    if step.terminated:
        flags.append("terminated")
    if step.truncated:
        flags.append("truncated")
    return f"  [{'; '.join(flags)}]" if flags else ""


def _step_line(step: Step, full: bool = False) -> str:
    if full:
        head = f"  {step.index}: {describe_action(step.action)}{_flags(step)} ->"
        return f"{head}\n{observation_block(step.observation)}"
    return (
        f"  {step.index}: {describe_action(step.action)} -> "
        f"{first_lines(step.observation)}{_flags(step)}"
    )


def _header(index: int, trajectory: Trajectory) -> str:
    outcome = "SUCCESS" if trajectory.success else "FAILED"
    parts = [
        f"episode {index} (seed {trajectory.seed}): {outcome}",
        f"end {trajectory.end_reason}",
        f"{trajectory.n_steps}/{trajectory.max_steps or '?'} steps",
    ]
    category = failure_category(trajectory)
    if category is not None:
        parts.append(f"failure {category}")
    loop = find_loop(trajectory.action_keys())
    if loop is not None:
        start, period, repeats = loop
        end = start + period * repeats - 1
        parts.append(f"loop at steps {start}-{end} (a cycle of {period} action(s) x{repeats})")
    if trajectory.n_invalid:
        parts.append(f"{trajectory.n_invalid} invalid")
    if trajectory.n_blocked:
        parts.append(f"{trajectory.n_blocked} blocked")
    return ", ".join(parts)


def trajectory_lines(index: int, trajectory: Trajectory, *, full: bool = False) -> list[str]:
    """One episode as text lines: the header, the start observation, one entry per step.

    Args:
        index: The episode's index (shown in the header).
        trajectory: The episode.
        full: Show every observation in full (up to :data:`OBSERVATION_CHARS` characters each,
            indented under its step) instead of its first lines.
    """
    lines = [_header(index, trajectory)]
    if full:
        lines.append(f"  start:\n{observation_block(trajectory.first_observation)}")
    else:
        lines.append(f"  start: {first_lines(trajectory.first_observation)}")
    lines.extend(_step_line(step, full) for step in trajectory.steps)
    if trajectory.error and not any(step.error for step in trajectory.steps):
        lines.append(f"  episode error: {clip(trajectory.error, 200)}")
    return lines


def _fit(lines: list[str], budget: int) -> list[str]:
    """Keeps the first two lines and, alternately, the next first and last lines that fit."""
    if sum(len(line) + 1 for line in lines) <= budget or len(lines) <= 3:
        return lines
    head, body = lines[:2], lines[2:]
    room = budget - sum(len(line) + 1 for line in head) - 40
    front: list[str] = []
    back: list[str] = []
    low, high, from_front = 0, len(body), True
    while low < high:
        line = body[low] if from_front else body[high - 1]
        if len(line) + 1 > room:
            break
        room -= len(line) + 1
        if from_front:
            front.append(line)
            low += 1
        else:
            back.append(line)
            high -= 1
        from_front = not from_front
    omitted = high - low
    middle = [f"  ... ({omitted} steps omitted)"] if omitted else []
    return head + front + middle + back[::-1]


def baseline_digest(
    trajectories: Sequence[Trajectory],
    stats: RolloutStats | None = None,
    *,
    episode: int | None = None,
    limit: int = 6000,
) -> str:
    """The baseline as text: statistics, then one episode or all of them, within ``limit``.

    Args:
        trajectories: The baseline rollouts.
        stats: Their statistics; computed when ``None``.
        episode: One episode's index to list in full (every observation up to
            :data:`OBSERVATION_CHARS` characters), or ``None`` for all (each shortened).
        limit: About the most characters to return (steps in the middle of an episode are left
            out first, and the text says so).

    Raises:
        IndexError: If ``episode`` is out of range.
    """
    stats = stats if stats is not None else RolloutStats.from_trajectories(trajectories)
    out = [f"Baseline statistics over K={stats.n} rollouts:", describe_stats(stats), ""]
    if episode is not None:
        if not 0 <= episode < len(trajectories):
            raise IndexError(
                f"episode {episode} does not exist; the baseline has episodes "
                f"0-{len(trajectories) - 1}"
                if trajectories
                else "the baseline has no episodes"
            )
        out.append(
            f"Episode {episode} in full: each observation up to {OBSERVATION_CHARS} characters, "
            f"the whole answer up to about {limit}."
        )
        room = max(limit - sum(len(line) + 1 for line in out), _MIN_EPISODE_CHARS)
        out.extend(_fit(trajectory_lines(episode, trajectories[episode], full=True), room))
        return clip("\n".join(out), limit)
    if not trajectories:
        out.append("(no baseline episodes)")
        return "\n".join(out)
    out.append(
        "Episodes (step: action -> first lines of the observation [flags]); call "
        "read_baseline(episode=i) for one episode in full:"
    )
    room = limit - sum(len(line) + 1 for line in out)
    each = max(room // len(trajectories), _MIN_EPISODE_CHARS)
    for index, trajectory in enumerate(trajectories):
        out.extend(_fit(trajectory_lines(index, trajectory), each))
    return clip("\n".join(out), limit)
