"""The designer's checking tools: dry runs, rules checks, and the submission gate.

A submission reaches validation only when the rules code passes the static check, the
``in_env_actions`` replay on a fresh env, the combined harness builds and resets, and the hooks
survive a replay of every baseline episode from the candidate's start (within the session's time
limit) and, with knobs, again at each knob's ends; otherwise the agent gets the reasons as
text. A markdown fence around the rules code is removed, with a note saying so.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from envharness.errors import EnvHarnessError, RulesError
from envharness.sandbox import check_rules_code
from envharness.tools.actions import ToolInputError, parse_in_env_actions, strip_fence
from envharness.tools.digest import OBSERVATION_CHARS, describe_action, json_text, observation_block
from envharness.tools.replay import (
    ReplaySweep,
    RulesReplay,
    describe_replay,
    describe_sweep,
    dry_run_setups,
    replay_sweep,
)
from envharness.tools.session import DesignSession

if TYPE_CHECKING:
    from envharness.graph.records import Candidate

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


def _rules_source(rules_code: Any, required: bool = True) -> tuple[str | None, str | None]:
    """The rules code without a markdown fence around it (``None`` when empty), and a note."""
    if rules_code is None or (isinstance(rules_code, str) and not rules_code.strip()):
        if required:
            raise ToolInputError("rules_code: expected the Python source of `class _Rules`")
        return None, None
    if not isinstance(rules_code, str):
        raise ToolInputError(f"rules_code: expected a str, got {type(rules_code).__name__}")
    code, note = strip_fence(rules_code)
    if not code.strip():
        if required:
            raise ToolInputError("rules_code: the markdown fence holds no code")
        return None, note
    return code, note


def _first_observation(report: RulesReplay, seed: int | None) -> str:
    setups = (
        f"after {report.setup_steps} Setups action(s), which are not the policy's steps"
        if report.setup_steps
        else "the bridge's own start, no Setups"
    )
    hooked = (
        "; filter_observation rewrote it"
        if report.first_observation != report.start_observation
        else ""
    )
    return (
        f"The policy's first observation under this harness (seed {seed}; {setups}"
        f"{hooked}), in full (up to {OBSERVATION_CHARS} characters):\n"
        + observation_block(report.first_observation or "", indent="  ")
    )


def _knob_settings(knobs: list[dict[str, Any]]) -> list[tuple[str, float, str]]:
    """``(name, value, which end)`` for each knob's low and high end."""
    out = []
    for knob in knobs:
        for end in ("low", "high"):
            value = float(knob[end])
            out.append((knob["name"], value, "harder" if knob["harder"] == end else "easier"))
    return out


def _replay_knobs(
    session: DesignSession,
    code: str,
    actions: list[dict[str, Any]],
    knobs: list[dict[str, Any]],
    first: int,
    deadline: float,
) -> tuple[list[str], list[str]]:
    """The baseline replayed through the hooks at each knob's ends: report lines and failures.

    Each end replays the episodes as :func:`replay_sweep` does (``first`` first), all ends
    sharing the time left before ``deadline``.
    """
    from envharness.graph.records import SETUP_STEPS

    lines: list[str] = []
    failures: list[str] = []
    total = len(session.trajectories)
    for name, value, end in _knob_settings(knobs):
        shown = f"{name}={value:g} ({end} end)"
        left = deadline - time.perf_counter()
        if left <= 0:
            lines.append(f"  {shown}: not replayed (time limit)")
            continue
        setups, values = (
            (actions[: int(value)], None) if name == SETUP_STEPS else (actions, {name: value})
        )
        sweep = replay_sweep(
            session.base_spec,
            code,
            session.trajectories,
            in_env_actions=setups,
            knob_values=values,
            first=first,
            time_limit=left,
        )
        failure = _sweep_failure(sweep)
        if failure is not None:
            failures.append(f"at {shown}, {failure}")
            lines.append(f"  {shown}: a hook FAILED {failure}")
            continue
        steps, blocked = sweep.total("steps"), sweep.total("blocked")
        share = f" ({blocked / steps:.0%})" if steps else ""
        lines.append(
            f"  {shown}: {len(sweep.reports)} of {total} episodes, {blocked} of {steps} steps "
            f"blocked{share}, {sweep.total('changed')} changed, {sweep.total('rewritten')} "
            "observations rewritten"
        )
    return lines, failures


def _sweep_failure(sweep: ReplaySweep, detail: int | None = None) -> str | None:
    """Where the sweep's hooks failed (the episode named unless it is ``detail``), or ``None``."""
    found = sweep.failure
    if found is None:
        return None
    index, report = found
    tool = f" (the step called the tool {report.failed_tool!r})" if report.failed_tool else ""
    if index == detail:
        return f"{report.failure}{tool}"
    return f"when baseline episode {index} was replayed: {report.failure}{tool}"


def check_rules(
    session: DesignSession,
    rules_code: str,
    in_env_actions: Any = None,
    knobs: Any = None,
    episode: int = 0,
) -> str:
    """Checks ``rules_code`` statically, then replays the baseline through its hooks.

    The env starts from the candidate's own Setups (``in_env_actions``); the answer shows the
    policy's first observation under the harness in full, every step of baseline ``episode``,
    a summary over every baseline episode (replayed within the session's time limit, every tool
    the baseline used exercised first), and, with ``knobs``, the episodes replayed again at each
    knob's low and high end.
    """
    code, note = _rules_source(rules_code)
    if code is None:  # _rules_source raises first; this narrows the type
        raise ToolInputError("rules_code: expected the Python source of `class _Rules`")
    info = check_rules_code(code)
    actions = parse_in_env_actions(in_env_actions)
    declared = _knobs(knobs, code, actions)
    index = _episode(session, episode)
    trajectory = session.trajectories[index]
    deadline = time.perf_counter() + session.replay_seconds
    sweep = replay_sweep(
        session.base_spec,
        code,
        session.trajectories,
        in_env_actions=actions,
        first=index,
        time_limit=session.replay_seconds,
    )
    detail = sweep.reports[index]
    hooks = ", ".join(sorted(info.hooks)) or "none (the rules change nothing)"
    parts = [note] if note else []
    parts.append(f"Static check passed (hooks: {hooks}).")
    parts.append(_first_observation(detail, trajectory.seed))
    parts.append(describe_replay(detail, index, trajectory))
    parts.append(describe_sweep(sweep, len(session.trajectories)))
    failure = _sweep_failure(sweep, index)
    knob_failures: list[str] = []
    if declared and failure is None:
        lines, knob_failures = _replay_knobs(session, code, actions, declared, index, deadline)
        parts.append(
            "The baseline episodes at each knob's ends (the validator may set any value in "
            "between):\n" + "\n".join(lines)
        )
    text = "\n\n".join(parts)
    if failure is not None:
        return f"ERROR: {failure}. Fix the hook and check again.\n\n{text}"
    if knob_failures:
        return f"ERROR: a hook failed {knob_failures[0]}. Fix the hook and check again.\n\n{text}"
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
        deadline = time.perf_counter() + session.replay_seconds
        sweep = replay_sweep(
            session.base_spec,
            code,
            session.trajectories,
            in_env_actions=candidate.in_env_actions,
            first=episode,
            time_limit=session.replay_seconds,
        )
        failure = _sweep_failure(sweep)
        if failure is not None:
            problems.append(f"a hook failed {failure}")
        elif candidate.knobs:
            _, failures = _replay_knobs(
                session, code, candidate.in_env_actions, candidate.knobs, episode, deadline
            )
            problems.extend(f"a hook failed {failure}" for failure in failures)
    return problems


def _summary(candidate: Candidate) -> str:
    parts = []
    if candidate.in_env_actions:
        steps = ", ".join(describe_action(a) for a in candidate.in_env_actions)
        parts.append(f"Setups [{steps}]")
    if candidate.rules_code is not None:
        parts.append("Rules")
    if candidate.link_task_ids:
        parts.append(f"Link to {', '.join(candidate.link_task_ids)}")
    if candidate.knobs:
        parts.append("knobs " + ", ".join(k["name"] for k in candidate.knobs))
    return " + ".join(parts)


def _links(session: DesignSession, value: Any) -> list[str]:
    """The tasks to link after this one, checked against the bridge's task list."""
    if value is None or value == []:
        return []
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise ToolInputError(f"link_task_ids: expected a list of task ids, got {value!r}")
    from envharness.bridges.registry import list_tasks

    bridge = session.base_spec.bridge
    known: set[str] = set()
    for split in ("train", "test"):
        try:
            known.update(list_tasks(bridge.name, split=split, **bridge.options))
        except EnvHarnessError:
            continue
    unknown = [t for t in value if known and t not in known]
    if unknown:
        raise ToolInputError(
            f"link_task_ids: unknown task(s) {unknown} of bridge {bridge.name!r}; "
            f"e.g. {sorted(known)[:5]}"
        )
    if bridge.task_id in value:
        raise ToolInputError("link_task_ids: link other tasks, not the task itself")
    return list(value)


def _knobs(value: Any, code: str | None, actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The declared knobs as Knob dicts, each starting at its value in the code."""
    if value is None or value == []:
        return []
    if not isinstance(value, list) or not all(isinstance(k, dict) for k in value):
        raise ToolInputError(f"knobs: expected a list of objects, got {value!r}")
    from envharness.errors import RiggerError
    from envharness.graph.judge.calibration import Knob
    from envharness.graph.records import SETUP_STEPS
    from envharness.harness.knobs import rules_knobs

    declared = rules_knobs(code) if code is not None else {}
    knobs = []
    for raw in value:
        name = raw.get("name")
        if name == SETUP_STEPS:
            start = float(len(actions))
        elif name in declared:
            start = declared[name]
        else:
            names = ", ".join(sorted(declared)) or "none"
            raise ToolInputError(
                f"knobs: {name!r} is not an upper-case module-level constant of rules_code "
                f"(declared: {names}) nor {SETUP_STEPS}; write it as e.g. DROP_P = 0.3"
            )
        fields = {**raw, "value": start, "integer": bool(raw.get("integer", name == SETUP_STEPS))}
        try:
            knobs.append(Knob.from_dict(fields).to_dict())
        except RiggerError as e:
            raise ToolInputError(f"knobs: {e}") from None
    return knobs


def submit_candidate(
    session: DesignSession,
    rules_code: str | None = None,
    in_env_actions: Any = None,
    rationale: str = "",
    knobs: Any = None,
    link_task_ids: Any = None,
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
    code, note = _rules_source(rules_code, required=False)
    actions = parse_in_env_actions(in_env_actions)
    links = _links(session, link_task_ids)
    if code is None and not actions and not links:
        raise ToolInputError(
            "the candidate changes nothing: give rules_code, in_env_actions, link_task_ids or some"
        )
    from envharness.graph.records import Candidate  # the rigger's record (not at import)

    candidate = Candidate(
        in_env_actions=actions,
        rules_code=code,
        link_task_ids=links,
        rationale=rationale.strip(),
        knobs=_knobs(knobs, code, actions),
    )
    problems = _check_candidate(session, candidate)
    if problems:
        return _rejected(problems)
    if not session.submit(candidate):
        return "ERROR: a candidate was already accepted for validation this turn."
    text = (
        f"{ACCEPTED}: {_summary(candidate)}. The validator now plays fresh rollouts on this "
        "harness and decides from their statistics; end your turn without further tool calls."
    )
    return f"{text}\n{note}" if note else text
