"""The heuristic's levers as designer tools: the bridge's stage candidates and sibling tasks.

``get_stage_candidates`` lists the bridge's ``stage_candidates()`` as ready-to-submit
``in_env_actions`` with what each does to the start; ``list_sibling_tasks`` lists the tasks a
candidate may link to (``link_task_ids``) with their instructions.
"""

from __future__ import annotations

import json
import time
from typing import Any

from envharness.core import Action
from envharness.errors import BridgeError, EnvHarnessError
from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.tools.actions import ToolInputError
from envharness.tools.digest import first_lines
from envharness.tools.envs import fresh_env
from envharness.tools.replay import dry_run_setups
from envharness.tools.session import DesignSession

__all__ = ["as_submitted", "get_stage_candidates", "list_sibling_tasks", "session_siblings"]

_EFFECT_LINES = 4
_EFFECT_CHARS = 400
_INSTRUCTION_CHARS = 200


def as_submitted(actions: list[dict[str, Any]]) -> str:
    """``actions`` as the JSON text of ``in_env_actions`` in submit_candidate's form.

    Example:
        >>> as_submitted([{"tool": "undo", "args": {}}])
        '[{"tool": "undo", "args": "{}"}]'
    """
    items = [{"tool": a["tool"], "args": json.dumps(a.get("args") or {})} for a in actions]
    return json.dumps(items, ensure_ascii=False)


def _kind(actions: list[dict[str, Any]], plan: list[dict[str, Any]] | None) -> str:
    if (
        plan is not None
        and actions
        and len(actions) < len(plan)
        and plan[: len(actions)] == actions
    ):
        return (
            f"HEAD START: the first {len(actions)} of the {len(plan)} steps of a known solution "
            "are done before the policy starts (easier)"
        )
    if plan is None:
        return "a different start state (no known solution to compare with)"
    return (
        "OTHER START: a different start state, not the first steps of the known solution (it "
        "may make the task easier or harder: read its effect below)"
    )


def _effect(bare: str, observation: str) -> str:
    r"""The start observation after a stage candidate: its first lines, or the lines it changed.

    Example:
        >>> bare = "Fill in F.\nSheet Sales\nA1:F41\nrow 1: headers\nF2: (empty)"
        >>> _effect(bare, bare.replace("(empty)", "5352.5"))
        '(its first lines are unchanged; lines that differ from the bare start) F2: 5352.5'
    """
    if observation == bare:
        return "(the same as the bare start observation)"
    head = first_lines(observation, _EFFECT_LINES, _EFFECT_CHARS)
    if head != first_lines(bare, _EFFECT_LINES, _EFFECT_CHARS):
        return head
    before = set(bare.splitlines())
    changed = "\n".join(line for line in observation.splitlines() if line not in before)
    shown = first_lines(changed, _EFFECT_LINES, _EFFECT_CHARS) or "(only blank lines differ)"
    return f"(its first lines are unchanged; lines that differ from the bare start) {shown}"


def _read_stages(
    session: DesignSession,
) -> tuple[str, list[list[dict[str, Any]]], list[dict[str, Any]] | None]:
    with fresh_env(session.base_spec) as env:
        observation, _ = env.reset(seed=session.seed)
        stages = [[Action.from_dict(a).to_dict() for a in s] for s in env.stage_candidates()]
        try:
            plan: list[dict[str, Any]] | None = [
                Action.from_dict(a).to_dict() for a in env.oracle_actions()
            ]
        except BridgeError:
            plan = None
    return observation, stages, plan


def get_stage_candidates(session: DesignSession, with_effects: bool = True) -> str:
    """The bridge's stage candidates as numbered ``in_env_actions``, with what each does."""

    def compute() -> str:
        bare, stages, plan = _read_stages(session)
        if not stages:
            return (
                f"The bridge {session.bridge!r} offers no stage candidates for task "
                f"{session.task_id!r}. Write in_env_actions yourself from the tools "
                "(get_tool_schemas) and check them with dry_run_setups."
            )
        lines = [
            f"The bridge {session.bridge!r} offers {len(stages)} stage candidate(s) for task "
            f"{session.task_id!r}: Setups that change the start state. Pass one's "
            "in_env_actions line unchanged to submit_candidate (or dry_run_setups, "
            "check_rules); setup actions do not use the policy's step budget. Effects are "
            f"shown for seed {session.seed}.",
            f"The bare start observation: {first_lines(bare, _EFFECT_LINES, _EFFECT_CHARS)}",
        ]
        started = time.perf_counter()
        for index, actions in enumerate(stages):
            shown = ", ".join(str(Action.from_dict(a)) for a in actions) or "(no actions)"
            lines += [
                f"#{index}: {_kind(actions, plan)}; {len(actions)} action(s): {shown}",
                f"  in_env_actions: {as_submitted(actions)}",
            ]
            if not with_effects:
                continue
            if time.perf_counter() - started > session.replay_seconds:
                lines.append("  (not dry-run: the time limit was reached; use dry_run_setups)")
                continue
            try:
                observation, _ = dry_run_setups(session.base_spec, actions, session.seed)  # type: ignore[arg-type]
            except EnvHarnessError as e:
                lines.append(f"  does NOT apply on seed {session.seed}: {e}")
                continue
            lines.append(f"  the policy's first observation then: {_effect(bare, observation)}")
        return "\n".join(lines)

    return session.cached(f"get_stage_candidates:{with_effects}", compute)


def session_siblings(session: DesignSession) -> list[str]:
    """The tasks ``session``'s candidates may link to: its own list, else the bridge's others."""
    if session.siblings is not None:
        siblings = session.siblings
    else:
        from envharness.graph.heuristic.design_context import discover_siblings

        siblings = discover_siblings(session.base_spec)
    return [t for t in dict.fromkeys(siblings) if t != session.task_id]


def _instruction(bridge: BridgeSpec, task_id: str) -> tuple[str, int | None]:
    spec = HarnessSpec(BridgeSpec(bridge.name, task_id, dict(bridge.options)))
    with fresh_env(spec) as env:
        text = getattr(env, "instruction", "") or ""
        if not text:
            env.reset(seed=0)
            text = env.instruction or ""
        return text, int(env.max_steps)


def list_sibling_tasks(session: DesignSession, limit: int | None = None) -> str:
    """The tasks usable as ``link_task_ids``, each with its instruction, short."""
    if limit is not None and limit < 1:
        raise ToolInputError(f"limit: expected a positive number of tasks, got {limit}")

    def compute() -> str:
        siblings = session_siblings(session)[:limit]
        if not siblings:
            return (
                f"No sibling tasks: the bridge {session.bridge!r} lists no other tasks to link "
                f"to task {session.task_id!r}, so link_task_ids is not available here."
            )
        lines = [
            f"Tasks of the bridge {session.bridge!r} usable as link_task_ids in "
            "submit_candidate. A sequential Link plays them after this task in the same "
            "episode: success needs every part, and the step budget becomes the sum of the "
            "parts' budgets (a longer horizon: usually harder).",
        ]
        started = time.perf_counter()
        for task_id in siblings:
            if time.perf_counter() - started > session.replay_seconds:
                lines.append(f"- {task_id}")
                continue
            try:
                text, steps = _instruction(session.base_spec.bridge, task_id)
            except EnvHarnessError as e:
                lines.append(f"- {task_id}: (could not be built: {e})")
                continue
            budget = f" [{steps} steps]" if steps else ""
            lines.append(f"- {task_id}{budget}: {first_lines(text, 2, _INSTRUCTION_CHARS)}")
        return "\n".join(lines)

    return session.cached(f"list_sibling_tasks:{limit}", compute)
