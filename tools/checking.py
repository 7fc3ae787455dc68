"""The designer's checking tools: dry runs, rules checks, and the submission gate.

A submission reaches validation only when the rules code passes the static check, the
``in_env_actions`` replay on a fresh env, the combined harness builds and resets, and the hooks
survive a replay of a recorded baseline episode; otherwise the agent gets the reasons as text.
"""

from __future__ import annotations

from typing import Any

from envharness.errors import EnvHarnessError, RulesError
from envharness.graph.records import Candidate
from envharness.sandbox import check_rules_code
from envharness.tools.actions import ToolInputError, parse_in_env_actions
from envharness.tools.digest import describe_action, json_text
from envharness.tools.replay import describe_replay, dry_run_setups, replay_rules
from envharness.tools.session import DesignSession

__all__ = ["check_rules", "dry_run", "submit_candidate"]

ACCEPTED = "accepted for validation"


def _episode(session: DesignSession, episode: int) -> int:
    count = len(session.trajectories)
    if not count:
        raise ToolInputError("there are no baseline episodes to replay the rules against")
    if not 0 <= episode < count:
        raise ToolInputError(f"episode {episode} does not exist; choose 0-{count - 1}")
    return episode


def dry_run(session: DesignSession, in_env_actions: Any) -> str:
    """Replays ``in_env_actions`` as Setups on a fresh env; the agent's start, or the error."""
    actions = parse_in_env_actions(in_env_actions)
    observation, state = dry_run_setups(session.base_spec, actions, session.seed)  # type: ignore[arg-type]
    done = (
        f"OK: {len(actions)} setup action(s) replayed without error"
        if actions
        else "OK: no setup actions; this is the bridge's own start"
    )
    return (
        f"{done} (seed {session.seed}). They are not the policy's steps: its budget is "
        f"unchanged.\n\nThe policy's first observation:\n{observation}\n\n"
        f"The state after setup:\n{json_text(state)}"
    )


def check_rules(session: DesignSession, rules_code: str, episode: int = 0) -> str:
    """Checks ``rules_code`` statically, then replays baseline ``episode`` through its hooks."""
    if not isinstance(rules_code, str) or not rules_code.strip():
        raise ToolInputError("rules_code: expected the Python source of `class _Rules`")
    info = check_rules_code(rules_code)
    index = _episode(session, episode)
    trajectory = session.trajectories[index]
    report = replay_rules(session.base_spec, rules_code, trajectory)
    hooks = ", ".join(sorted(info.hooks)) or "none (the rules change nothing)"
    text = f"Static check passed (hooks: {hooks}).\n" + describe_replay(report, index, trajectory)
    if report.failure is not None:
        return f"ERROR: {report.failure}. Fix the hook and check again.\n{text}"
    return text


def _rejected(problems: list[str]) -> str:
    listing = "\n".join(f"- {problem}" for problem in problems)
    return (
        "ERROR: submission not accepted; it was NOT sent to validation. Fix the following and "
        f"call submit_candidate again:\n{listing}"
    )


def _replay_episode(session: DesignSession) -> int | None:
    """The baseline episode a submission's hooks are replayed on: a success if there is one."""
    if not session.trajectories:
        return None
    for index, trajectory in enumerate(session.trajectories):
        if trajectory.success:
            return index
    return 0


def _check_candidate(session: DesignSession, candidate: Candidate) -> list[str]:
    """Every reason the candidate cannot go to validation (empty when it can)."""
    problems: list[str] = []
    code = candidate.rules_code
    if code is not None:
        try:
            check_rules_code(code)
        except RulesError as e:
            problems.append(f"rules_code does not pass the static check: {e.reason}")
    if candidate.in_env_actions:
        try:
            dry_run_setups(session.base_spec, candidate.in_env_actions, session.seed)  # type: ignore[arg-type]
        except EnvHarnessError as e:
            problems.append(f"the dry run of in_env_actions failed: {e}")
    if problems:
        return problems
    try:
        env = candidate.apply(session.base_spec).build()
        try:
            env.reset(seed=session.seed)
        finally:
            env.close()
    except EnvHarnessError as e:
        return [f"the combined harness does not build and reset: {e}"]
    episode = _replay_episode(session)
    if code is not None and episode is not None:
        report = replay_rules(session.base_spec, code, session.trajectories[episode])
        if report.failure is not None:
            problems.append(
                f"a hook failed when baseline episode {episode} was replayed: {report.failure}"
            )
    return problems


def _summary(candidate: Candidate) -> str:
    parts = []
    if candidate.in_env_actions:
        steps = ", ".join(describe_action(a) for a in candidate.in_env_actions)
        parts.append(f"Setups [{steps}]")
    if candidate.rules_code is not None:
        parts.append("Rules")
    return " + ".join(parts)


def submit_candidate(
    session: DesignSession,
    rules_code: str | None = None,
    in_env_actions: Any = None,
    rationale: str = "",
) -> str:
    """Validates a candidate and, when it passes every check, hands it to validation."""
    if session.submitted is not None:
        return (
            "ERROR: a candidate was already accepted for validation this turn; end your turn "
            "without further tool calls."
        )
    if not isinstance(rationale, str) or not rationale.strip():
        raise ToolInputError(
            "rationale: expected a sentence or two on why this harness moves the policy toward "
            "the objective"
        )
    if rules_code is not None and not isinstance(rules_code, str):
        raise ToolInputError(f"rules_code: expected a str, got {type(rules_code).__name__}")
    code = rules_code if rules_code and rules_code.strip() else None
    actions = parse_in_env_actions(in_env_actions)
    if code is None and not actions:
        raise ToolInputError(
            "the candidate changes nothing: give rules_code, in_env_actions, or both"
        )
    candidate = Candidate(in_env_actions=actions, rules_code=code, rationale=rationale.strip())
    problems = _check_candidate(session, candidate)
    if problems:
        return _rejected(problems)
    if not session.submit(candidate):
        return "ERROR: a candidate was already accepted for validation this turn."
    return (
        f"{ACCEPTED}: {_summary(candidate)}. The validator now plays fresh rollouts on this "
        "harness and decides from their statistics; end your turn without further tool calls."
    )
