"""Dry runs: Setups on a fresh env, and rules code replayed over recorded baseline episodes.

:func:`replay_rules` runs the hooks of ``rules_code`` in a real sandbox session, on a fresh env
built from the base spec with the candidate's Setups (when it has some), that follows the recorded
actions step by step. The recorded action is what steps the env (so the hooks see the states of the
baseline episode, from the candidate's start, even where a rule would have blocked or changed the
action); the report says, for every step, what ``filter_action`` returned and how the observation
changed. :func:`replay_sweep` replays every baseline episode (within a time limit, the episodes
that use tools not yet exercised first), so a hook that fails only on a rarely used tool is found.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from envharness.core import Action
from envharness.errors import (
    EnvHarnessError,
    InvalidActionError,
    RulesError,
    SandboxUnavailableError,
)
from envharness.harness.knobs import apply_knobs
from envharness.harness.setups import Setups
from envharness.harness.spec import HarnessSpec
from envharness.rollout.trajectory import Trajectory
from envharness.sandbox import HOOKS, RulesSandbox, RulesSession
from envharness.tools.digest import clip, describe_action

__all__ = [
    "RulesReplay",
    "ReplaySweep",
    "describe_replay",
    "describe_sweep",
    "dry_run_setups",
    "replay_rules",
    "replay_sweep",
]

CHANGE_CHARS = 600
"""The most characters of a hook's rewrite shown per step."""


def dry_run_setups(
    spec: HarnessSpec, in_env_actions: Sequence[dict[str, Any]], seed: int
) -> tuple[str, dict[str, Any]]:
    """Builds ``Setups(spec.build(), in_env_actions)``, resets it and returns what the agent gets.

    Returns:
        The first observation and the env state after the setup actions.

    Raises:
        SetupError: An action does not fit the tools, is rejected, or ends the episode.
        EnvHarnessError: The spec does not build or reset.
    """
    env = Setups(spec.build(), list(in_env_actions))
    try:
        observation, _ = env.reset(seed=seed)
        return observation, env.get_env_state()
    finally:
        env.close()


@dataclass
class RulesReplay:
    """What the hooks did over one recorded episode.

    Attributes:
        hooks: The hooks the code defines.
        lines: One line per step (and one for the reset when ``filter_observation`` changed it).
        steps: Steps replayed.
        blocked: Steps ``filter_action`` blocked.
        changed: Steps where ``filter_action`` returned another action (a failure: rules may
            pass or block the agent's action, never replace it).
        rewritten: Observations the hooks changed.
        rejected: Recorded actions the env rejected or answered as invalid (after Setups they
            may not fit the candidate's start).
        blocked_in_success: Steps of a successful recorded episode that were blocked.
        tools: The env tools whose calls went through the hooks.
        setup_steps: The Setups actions replayed before the first step.
        start_observation: The observation after reset (and Setups), before the hooks.
        first_observation: The policy's first observation (after ``filter_observation``).
        failure: Where and how a hook (or the sandbox) failed, or ``None``.
        failed_tool: The tool of the action whose hooks failed, when a step's hooks did.
    """

    hooks: frozenset[str]
    lines: list[str] = field(default_factory=list)
    steps: int = 0
    blocked: int = 0
    changed: int = 0
    rewritten: int = 0
    rejected: int = 0
    blocked_in_success: list[int] = field(default_factory=list)
    tools: set[str] = field(default_factory=set)
    setup_steps: int = 0
    start_observation: str | None = None
    first_observation: str | None = None
    failure: str | None = None
    failed_tool: str | None = None


def _quote(text: str, limit: int = CHANGE_CHARS) -> str:
    return json.dumps(clip(str(text), limit), ensure_ascii=False)


def _observation_change(before: str, after: str) -> str:
    """How a hook changed an observation, from the first line that differs."""
    if after == before:
        return "observation unchanged"
    old, new = before.splitlines(), after.splitlines()
    same = 0
    while same < min(len(old), len(new)) and old[same] == new[same]:
        same += 1
    where = f" from line {same + 1}" if same else ""
    was, now = "\n".join(old[same:]), "\n".join(new[same:])
    return f"observation changed{where}: {_quote(was)} -> {_quote(now)}"


def _replay_step(
    session: RulesSession, env: Any, index: int, action: Action, report: RulesReplay, success: bool
) -> tuple[str, bool]:
    """Runs one recorded step through the hooks; returns its report line and whether it ended."""
    sent = action.to_dict()
    report.tools.add(action.tool)
    verdict = session.filter_action(sent, env.get_env_state())
    parts: list[str] = []
    blocked = False
    if isinstance(verdict, str):
        blocked = True
        report.blocked += 1
        parts.append(f"filter_action BLOCKED with {_quote(verdict)}")
    elif verdict != sent:
        report.changed += 1
        raise RulesError(
            f"returned a different action ({describe_action(verdict)}) for the agent's "
            f"{describe_action(sent)}; a hook may pass the action through or block it by "
            "returning a str, never play another action for the agent",
            hook="filter_action",
        )
    elif "filter_action" in session.hooks:
        parts.append("filter_action kept it")
    try:
        result = env.step(action)
    except InvalidActionError as e:
        report.rejected += 1
        parts.append(f"the env rejected the recorded action ({e})")
        return "; ".join(parts), False
    invalid = (result.info or {}).get("invalid_action")
    if invalid:
        report.rejected += 1
        parts.append(f"the env answered it as invalid ({clip(str(invalid), 160)})")
    if not blocked and session.hooks & {"modify_transition", "filter_observation"}:
        after = session.after_step(sent, result.observation, env.get_env_state())
        if after != result.observation:
            report.rewritten += 1
        parts.append(_observation_change(result.observation, after))
    if blocked and success:
        report.blocked_in_success.append(index)
    return "; ".join(parts) or "unchanged", result.terminated or result.truncated


def _build(spec: HarnessSpec, in_env_actions: Sequence[dict[str, Any]]) -> Any:
    env = spec.build()
    return Setups(env, list(in_env_actions)) if in_env_actions else env


def replay_rules(
    spec: HarnessSpec,
    rules_code: str,
    trajectory: Trajectory,
    *,
    in_env_actions: Sequence[dict[str, Any]] = (),
    knob_values: dict[str, float] | None = None,
) -> RulesReplay:
    """Replays ``trajectory``'s recorded actions through the hooks of ``rules_code``.

    The env is built from ``spec`` with ``in_env_actions`` as Setups (the candidate's own start),
    reset with the trajectory's seed, and stepped by the recorded actions.

    Args:
        spec: The spec the trajectory was played on (the base being rigged).
        rules_code: The rules code (checked statically first).
        trajectory: A recorded episode.
        in_env_actions: The candidate's Setups actions; none for the bare start.
        knob_values: Values for the code's knobs (its own values when ``None``).

    Returns:
        The per-step report; ``failure`` names the step and hook when a hook failed.

    Raises:
        RulesError: The code fails the static check, or the sandbox cannot start.
        EnvHarnessError: The spec does not build or reset, or a Setups action fails.
    """
    code = apply_knobs(rules_code, knob_values) if knob_values else rules_code
    sandbox = RulesSandbox(code)
    report = RulesReplay(hooks=sandbox.info.hooks, setup_steps=len(in_env_actions))
    env = _build(spec, in_env_actions)
    where = "reset"
    try:
        observation, _ = env.reset(seed=trajectory.seed)
        report.start_observation = report.first_observation = observation
        try:
            session = sandbox.start_episode(trajectory.seed)
        except SandboxUnavailableError:
            raise
        except RulesError as e:
            report.failure = f"when the episode started: {e}"
            return report
        with session:
            tool = None
            try:
                if "filter_observation" in session.hooks:
                    after = session.filter_observation(observation, env.get_env_state())
                    report.first_observation = after
                    if after != observation:
                        report.rewritten += 1
                        report.lines.append(f"  reset: {_observation_change(observation, after)}")
                for step in trajectory.steps:
                    where = f"step {step.index}"
                    tool = None
                    if step.action is None:
                        report.lines.append(f"  {step.index}: no action was recorded; skipped")
                        continue
                    try:
                        action = Action.from_dict(step.action)
                    except InvalidActionError:
                        report.lines.append(f"  {step.index}: malformed recorded action; skipped")
                        continue
                    tool = action.tool
                    report.steps += 1
                    line, ended = _replay_step(
                        session, env, step.index, action, report, trajectory.success
                    )
                    report.lines.append(f"  {step.index} {describe_action(step.action)}: {line}")
                    if ended:
                        break
            except RulesError as e:
                report.failure = f"at {where}: {e}"
                report.failed_tool = tool
            except EnvHarnessError as e:
                report.lines.append(f"  the env raised at {where}, replay stopped: {e}")
    finally:
        env.close()
    return report


def describe_replay(report: RulesReplay, episode: int, trajectory: Trajectory) -> str:
    """The replay report as text for the designer model (the failure, if any, is the caller's)."""
    hooks = ", ".join(h for h in HOOKS if h in report.hooks) or "none"
    start = (
        f"from the candidate's Setups ({report.setup_steps} action(s)), "
        if report.setup_steps
        else ""
    )
    head = [
        f"Replayed baseline episode {episode} (seed {trajectory.seed}, "
        f"{'SUCCESS' if trajectory.success else 'FAILED'}, {report.steps} steps) {start}through "
        f"the hooks [{hooks}]: {report.blocked} blocked, {report.changed} changed, "
        f"{report.rewritten} observations rewritten.",
        "The recorded actions drive the env (a blocked or changed action is reported, not "
        "applied), so every hook sees the states of the baseline episode.",
    ]
    if report.setup_steps:
        head.append(
            "The episode was recorded from the bare start: after Setups some recorded actions "
            f"may not fit ({report.rejected} of {report.steps} rejected or invalid)."
        )
    if report.steps and report.blocked == report.steps:
        head.append(
            "WARNING: every recorded action was blocked; a policy cannot make progress under "
            "these rules."
        )
    if report.blocked_in_success:
        head.append(
            "WARNING: the rules block actions of this successful episode (steps "
            f"{', '.join(map(str, report.blocked_in_success))}); make sure the task stays "
            "solvable (zero successes are rejected)."
        )
    return "\n".join(head + report.lines)


@dataclass
class ReplaySweep:
    """The hooks replayed over many baseline episodes.

    Attributes:
        reports: Each replayed episode's report, by episode index, in replay order.
        skipped: Episodes not replayed because the time limit was reached.
        tools_used: The tools the baseline episodes called.
        seconds: Wall time spent.
        time_limit: The time limit, in seconds.
    """

    reports: dict[int, RulesReplay] = field(default_factory=dict)
    skipped: list[int] = field(default_factory=list)
    tools_used: set[str] = field(default_factory=set)
    seconds: float = 0.0
    time_limit: float = 0.0

    @property
    def failure(self) -> tuple[int, RulesReplay] | None:
        """The first episode whose hooks failed, and its report."""
        for index, report in self.reports.items():
            if report.failure is not None:
                return index, report
        return None

    @property
    def tools_exercised(self) -> set[str]:
        """The tools whose calls went through the hooks, over every replayed episode."""
        return set().union(*(r.tools for r in self.reports.values()))

    def total(self, name: str) -> int:
        """A count summed over the replayed episodes (``steps``, ``blocked``, ...)."""
        return sum(getattr(r, name) for r in self.reports.values())


def _tools_of(trajectory: Trajectory) -> set[str]:
    return {
        str(step.action["tool"])
        for step in trajectory.steps
        if isinstance(step.action, dict) and isinstance(step.action.get("tool"), str)
    }


def _sweep_order(trajectories: Sequence[Trajectory], first: int | None) -> list[int]:
    """Episode indices: ``first``, then greedily those adding unexercised tools, then the rest."""
    order = [first] if first is not None else []
    covered: set[str] = set().union(*(_tools_of(trajectories[i]) for i in order))
    remaining = [i for i in range(len(trajectories)) if i not in order]
    while remaining:
        gains = {i: len(_tools_of(trajectories[i]) - covered) for i in remaining}
        best = max(remaining, key=lambda i: (gains[i], -i))
        if gains[best] == 0:
            break
        order.append(best)
        covered |= _tools_of(trajectories[best])
        remaining.remove(best)
    return order + remaining


def replay_sweep(
    spec: HarnessSpec,
    rules_code: str,
    trajectories: Sequence[Trajectory],
    *,
    in_env_actions: Sequence[dict[str, Any]] = (),
    knob_values: dict[str, float] | None = None,
    first: int | None = None,
    time_limit: float = 20.0,
) -> ReplaySweep:
    """Replays every baseline episode through the hooks, until one fails or time runs out.

    Episodes are replayed in an order that exercises every tool the baseline used as early as
    possible: ``first`` (when given), then each episode calling a tool not yet seen, then the
    rest. At least one episode is replayed; no new one starts after ``time_limit`` seconds.

    Args:
        spec: The base spec the episodes were played on.
        rules_code: The rules code.
        trajectories: The baseline episodes.
        in_env_actions: The candidate's Setups actions.
        knob_values: Values for the code's knobs (its own values when ``None``).
        first: The episode to replay first.
        time_limit: Seconds after which no further episode is started.

    Raises:
        RulesError: The code fails the static check, or the sandbox cannot start.
        EnvHarnessError: The spec does not build or reset, or a Setups action fails.
    """
    sweep = ReplaySweep(time_limit=time_limit)
    sweep.tools_used = set().union(*(_tools_of(t) for t in trajectories))
    started = time.perf_counter()
    order = _sweep_order(trajectories, first)
    for position, index in enumerate(order):
        if sweep.reports and time.perf_counter() - started > time_limit:
            sweep.skipped = order[position:]
            break
        report = replay_rules(
            spec,
            rules_code,
            trajectories[index],
            in_env_actions=in_env_actions,
            knob_values=knob_values,
        )
        sweep.reports[index] = report
        if report.failure is not None:
            break
    sweep.seconds = time.perf_counter() - started
    return sweep


def describe_sweep(sweep: ReplaySweep, total: int) -> str:
    """One paragraph on the sweep: episodes replayed, the totals, the tools exercised."""
    steps, blocked = sweep.total("steps"), sweep.total("blocked")
    share = f" ({blocked / steps:.0%} of steps)" if steps else ""
    lines = [
        f"All baseline episodes through the hooks: {len(sweep.reports)} of {total} replayed in "
        f"{sweep.seconds:.1f}s (time limit {sweep.time_limit:g}s): {steps} steps, {blocked} "
        f"blocked{share}, {sweep.total('changed')} changed, {sweep.total('rewritten')} "
        "observations rewritten."
    ]
    if sweep.skipped:
        lines.append(
            f"Not replayed (time limit): episodes {', '.join(map(str, sweep.skipped[:20]))}"
            + (" ..." if len(sweep.skipped) > 20 else "")
        )
    used, exercised = sorted(sweep.tools_used), sweep.tools_exercised
    missing = [t for t in used if t not in exercised]
    if used:
        lines.append(
            f"Tools the baseline used: {', '.join(used)}; "
            + (
                "every one went through the hooks."
                if not missing
                else f"NOT exercised: {', '.join(missing)} (the replay stopped first)."
            )
        )
    return "\n".join(lines)
