"""Dry runs: Setups on a fresh env, and rules code replayed over a recorded baseline episode.

:func:`replay_rules` runs the hooks of ``rules_code`` in a real sandbox session, on a fresh env
built from the base spec that follows the recorded actions step by step. The recorded action is
what steps the env (so the states match the baseline even where a rule would have blocked or
changed the action); the report says, for every step, what ``filter_action`` returned and how the
observation changed.
"""

from __future__ import annotations

import json
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
from envharness.harness.setups import Setups
from envharness.harness.spec import HarnessSpec
from envharness.rollout.trajectory import Trajectory
from envharness.sandbox import HOOKS, RulesSandbox, RulesSession
from envharness.tools.digest import describe_action, first_lines

__all__ = ["RulesReplay", "describe_replay", "dry_run_setups", "replay_rules"]


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
        changed: Steps ``filter_action`` replaced by another action.
        rewritten: Observations the hooks changed.
        blocked_in_success: Steps of a successful recorded episode that were blocked.
        failure: Where and how a hook (or the sandbox) failed, or ``None``.
    """

    hooks: frozenset[str]
    lines: list[str] = field(default_factory=list)
    steps: int = 0
    blocked: int = 0
    changed: int = 0
    rewritten: int = 0
    blocked_in_success: list[int] = field(default_factory=list)
    failure: str | None = None


def _quote(text: str) -> str:
    return json.dumps(first_lines(text), ensure_ascii=False)


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
    verdict = session.filter_action(sent, env.get_env_state())
    parts: list[str] = []
    blocked = False
    if isinstance(verdict, str):
        blocked = True
        report.blocked += 1
        parts.append(f"filter_action BLOCKED with {_quote(verdict)}")
    elif verdict != sent:
        report.changed += 1
        parts.append(f"filter_action changed it to {describe_action(verdict)}")
    elif "filter_action" in session.hooks:
        parts.append("filter_action kept it")
    try:
        result = env.step(action)
    except InvalidActionError as e:
        parts.append(f"the env rejected the recorded action ({e})")
        return "; ".join(parts), False
    if not blocked and session.hooks & {"modify_transition", "filter_observation"}:
        after = session.after_step(sent, result.observation, env.get_env_state())
        if after != result.observation:
            report.rewritten += 1
        parts.append(_observation_change(result.observation, after))
    if blocked and success:
        report.blocked_in_success.append(index)
    return "; ".join(parts) or "unchanged", result.terminated or result.truncated


def replay_rules(spec: HarnessSpec, rules_code: str, trajectory: Trajectory) -> RulesReplay:
    """Replays ``trajectory``'s recorded actions on a fresh env through the hooks of ``rules_code``.

    Args:
        spec: The spec the trajectory was played on (the base being rigged).
        rules_code: The rules code (checked statically first).
        trajectory: A recorded episode.

    Returns:
        The per-step report; ``failure`` names the step and hook when a hook failed.

    Raises:
        RulesError: The code fails the static check, or the sandbox cannot start.
        EnvHarnessError: The spec does not build or reset.
    """
    sandbox = RulesSandbox(rules_code)
    report = RulesReplay(hooks=sandbox.info.hooks)
    env = spec.build()
    where = "reset"
    try:
        observation, _ = env.reset(seed=trajectory.seed)
        try:
            session = sandbox.start_episode(trajectory.seed)
        except SandboxUnavailableError:
            raise
        except RulesError as e:
            report.failure = f"when the episode started: {e}"
            return report
        with session:
            try:
                if "filter_observation" in session.hooks:
                    after = session.filter_observation(observation, env.get_env_state())
                    if after != observation:
                        report.rewritten += 1
                        report.lines.append(f"  reset: {_observation_change(observation, after)}")
                for step in trajectory.steps:
                    where = f"step {step.index}"
                    if step.action is None:
                        report.lines.append(f"  {step.index}: no action was recorded; skipped")
                        continue
                    try:
                        action = Action.from_dict(step.action)
                    except InvalidActionError:
                        report.lines.append(f"  {step.index}: malformed recorded action; skipped")
                        continue
                    report.steps += 1
                    line, ended = _replay_step(
                        session, env, step.index, action, report, trajectory.success
                    )
                    report.lines.append(f"  {step.index} {describe_action(step.action)}: {line}")
                    if ended:
                        break
            except RulesError as e:
                report.failure = f"at {where}: {e}"
            except EnvHarnessError as e:
                report.lines.append(f"  the env raised at {where}, replay stopped: {e}")
    finally:
        env.close()
    return report


def describe_replay(report: RulesReplay, episode: int, trajectory: Trajectory) -> str:
    """The replay report as text for the designer model (the failure, if any, is the caller's)."""
    hooks = ", ".join(h for h in HOOKS if h in report.hooks) or "none"
    head = [
        f"Replayed baseline episode {episode} (seed {trajectory.seed}, "
        f"{'SUCCESS' if trajectory.success else 'FAILED'}, {report.steps} steps) through the "
        f"hooks [{hooks}]: {report.blocked} blocked, {report.changed} changed, "
        f"{report.rewritten} observations rewritten.",
        "The recorded actions drive the env (a blocked or changed action is reported, not "
        "applied), so every hook sees the states of the baseline episode.",
    ]
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
