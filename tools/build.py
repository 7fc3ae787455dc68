"""``build_designer_tools``: the designer agent's LangChain tools over one :class:`DesignSession`.

Every tool has an explicit JSON-Schema argument schema in the Gemini-safe subset (no ``$ref``,
``anyOf`` or ``oneOf``, no object without properties), checks its own arguments, and answers
with text: problems come back as text starting with ``ERROR:`` that tells the model what to fix,
never as an exception that would end the agent loop. Every answer is capped at the session's
``max_output_chars`` (``max_episode_chars`` for answers that show observations in full) and
logged on the session.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

from envharness.errors import EnvHarnessError, RiggerError
from envharness.schema import check_arguments
from envharness.tools import checking, reading, staging
from envharness.tools.actions import ToolInputError
from envharness.tools.digest import OBSERVATION_CHARS, clip
from envharness.tools.envs import spec_tools
from envharness.tools.session import DesignSession

__all__ = ["DESIGNER_TOOL_NAMES", "build_designer_tools"]

DESIGNER_TOOL_NAMES: tuple[str, ...] = (
    "get_tool_schemas",
    "get_state_schema",
    "read_baseline",
    "get_stage_candidates",
    "list_sibling_tasks",
    "dry_run_setups",
    "check_rules",
    "submit_candidate",
)
"""The designer's tools, in the order :func:`build_designer_tools` returns them."""

_RULES_CODE = (
    "Python source defining `class _Rules` with any of the hooks "
    "filter_action(self, action, state), modify_transition(self, action, observation, state), "
    "filter_observation(self, observation, state)."
)


_KNOBS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "description": (
        "Numbers the validator may tune by statistics so you need not guess them: each one an "
        "upper-case module-level constant of rules_code assigned a number (DROP_P = 0.3; its "
        "value there is the start), or SETUP_STEPS (how many of in_env_actions are replayed). "
        "The first knob is calibrated between validation batches."
    ),
    "items": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The constant, e.g. DROP_P."},
            "low": {"type": "number", "description": "The smallest value allowed."},
            "high": {"type": "number", "description": "The largest value allowed."},
            "harder": {
                "type": "string",
                "enum": ["high", "low"],
                "description": "Which end makes the task harder for the policy.",
            },
            "integer": {"type": "boolean", "description": "Whole numbers only."},
        },
        "required": ["name", "low", "high", "harder"],
    },
}


def _actions_schema(tool_names: list[str]) -> dict[str, Any]:
    tool: dict[str, Any] = {"type": "string", "description": "The environment tool to call."}
    if tool_names:
        tool["enum"] = tool_names
    return {
        "type": "array",
        "description": (
            "Actions in the environment's own tools, replayed in order after every reset to "
            "build the start state; [] for none."
        ),
        "items": {
            "type": "object",
            "properties": {
                "tool": tool,
                "args": {
                    "type": "string",
                    "description": (
                        "The tool's arguments as the JSON text of an object matching its "
                        "parameters, e.g. '{\"name\": \"value\"}'; '{}' when it takes none."
                    ),
                },
            },
            "required": ["tool", "args"],
        },
    }


_LONG_OUTPUT = frozenset({"check_rules", "get_stage_candidates"})
"""Tools whose answers may use the session's ``max_episode_chars`` (they show observations)."""


def _schemas(
    tool_names: list[str], episode_chars: int, replay_seconds: float
) -> dict[str, tuple[str, dict[str, Any]]]:
    """Each tool's description and argument schema."""
    actions = _actions_schema(tool_names)
    return {
        "get_tool_schemas": (
            "List the environment's tools: names, descriptions and JSON-Schema parameters. "
            "Setups' in_env_actions must call them exactly so; rules hooks see the policy's "
            'actions as {"tool", "args"} dicts in the same form.',
            {
                "type": "object",
                "properties": {
                    "name": {
                        "type": "string",
                        "description": "Only this tool; omit to list every tool.",
                    }
                },
            },
        ),
        "get_state_schema": (
            "Show the JSON Schema of the environment state that rules hooks receive as `state`, "
            "with the start state and the start observation after a reset as an example.",
            {
                "type": "object",
                "properties": {
                    "with_example": {
                        "type": "boolean",
                        "description": "Include the start state after a reset (default true).",
                    }
                },
            },
        ),
        "read_baseline": (
            "Read the baseline: statistics over the K rollouts of the unchanged task, then a "
            "listing (step: action -> first lines of the observation [flags]) of every episode, "
            "shortened; or, with episode=i, that one episode in full: every observation up to "
            f"{OBSERVATION_CHARS} characters, the whole answer up to about {episode_chars} "
            "(middle steps left out beyond that, and it says so). Decide from the statistics, "
            "not from one episode.",
            {
                "type": "object",
                "properties": {
                    "episode": {
                        "type": "integer",
                        "description": "A 0-based episode index to list in full; omit for all.",
                    }
                },
            },
        ),
        "get_stage_candidates": (
            "List the bridge's stage candidates: ready-made Setups (in_env_actions) that change "
            "the start state, numbered, each in the exact form submit_candidate accepts, marked "
            "HEAD START (the first steps of a known solution done: easier) or OTHER START (a "
            "different start state, easier or harder), with the policy's first observation "
            "after it. Says so when the bridge has none.",
            {
                "type": "object",
                "properties": {
                    "with_effects": {
                        "type": "boolean",
                        "description": (
                            "Dry-run each candidate to show the policy's first observation "
                            "after it (default true)."
                        ),
                    }
                },
            },
        ),
        "list_sibling_tasks": (
            "List the other tasks of this bridge you may pass as link_task_ids to "
            "submit_candidate (a sequential Link: played after this task in the same episode, "
            "success needs all; a longer horizon), each with its instruction, short, and its "
            "step budget. Says so when there are none.",
            {
                "type": "object",
                "properties": {
                    "limit": {
                        "type": "integer",
                        "description": "At most this many tasks (default: every sibling).",
                    }
                },
            },
        ),
        "dry_run_setups": (
            "Dry-run Setups on a fresh environment: reset, replay in_env_actions, and show the "
            "policy's first observation and the state they leave, or the error naming the "
            "action that failed.",
            {
                "type": "object",
                "properties": {"in_env_actions": actions},
                "required": ["in_env_actions"],
            },
        ),
        "check_rules": (
            "Check rules code as it would run in your harness: the static check (class _Rules, "
            "hook signatures, allowed imports); the policy's first observation under the "
            f"harness (after in_env_actions as Setups and filter_observation), in full up to "
            f"{OBSERVATION_CHARS} characters; a replay of baseline episode `episode` from that "
            "start through the hooks in the sandbox, reporting for each step what "
            "filter_action returned and how the observation changed; a replay of every "
            f"baseline episode (within {replay_seconds:g}s, those using tools not yet "
            "exercised first) with the totals (blocked share) and which tools went through "
            "the hooks; with knobs, the episode again at each knob's low and high end. Any "
            "hook failure comes back as ERROR with the episode, step, tool and line. "
            "submit_candidate runs the same replays.",
            {
                "type": "object",
                "properties": {
                    "rules_code": {"type": "string", "description": _RULES_CODE},
                    "in_env_actions": {
                        **actions,
                        "description": (
                            "Your candidate's Setups, replayed after every reset before the "
                            "hooks run; omit or [] for the bridge's own start."
                        ),
                    },
                    "knobs": _KNOBS_SCHEMA,
                    "episode": {
                        "type": "integer",
                        "description": (
                            "The baseline episode to show step by step (0-based, default 0); "
                            "every episode is replayed either way."
                        ),
                    },
                },
                "required": ["rules_code"],
            },
        ),
        "submit_candidate": (
            "Submit your harness for validation; one accepted submission per turn. It is "
            "checked first (rules code statically, in_env_actions by a dry run, the combined "
            "harness by a build and reset, the hooks by a replay of every baseline episode "
            f"from your Setups within {replay_seconds:g}s and, with knobs, of one episode at "
            "each knob's ends); problems come back as ERROR text to fix. A markdown fence "
            "around rules_code is removed (with a note). 'accepted for validation' means the "
            "validator takes it from here: stop calling tools.",
            {
                "type": "object",
                "properties": {
                    "rules_code": {
                        "type": "string",
                        "description": _RULES_CODE + " Empty or omitted for no Rules component.",
                    },
                    "in_env_actions": actions,
                    "knobs": _KNOBS_SCHEMA,
                    "link_task_ids": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": (
                            "Other tasks of this bridge played after this one in the same "
                            "episode (a sequential Link: a longer horizon; success needs all); "
                            "list_sibling_tasks lists them."
                        ),
                    },
                    "rationale": {
                        "type": "string",
                        "description": (
                            "Why this harness moves the policy toward the objective, citing "
                            "the baseline evidence."
                        ),
                    },
                },
                "required": ["rationale"],
            },
        ),
    }


def _checked(schema: Mapping[str, Any], raw: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments after the schema's checks (``None`` values count as omitted)."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    args = {name: value for name, value in raw.items() if value is not None}
    unknown = sorted(set(args) - set(properties))
    if unknown:
        takes = ", ".join(properties) or "no arguments"
        raise ToolInputError(f"unexpected argument(s) {unknown}; this tool takes: {takes}")
    missing = [name for name in schema.get("required", []) if name not in args]
    if missing:
        raise ToolInputError(f"missing required argument(s): {', '.join(missing)}")
    for name, value in args.items():
        if name == "in_env_actions":  # parsed by the tool, which also takes JSON text forms
            continue
        problems = check_arguments(value, properties[name], name)
        if problems:
            raise ToolInputError("; ".join(problems))
        if properties[name]["type"] == "integer":
            args[name] = int(value)
    return args


def _make_tool(
    session: DesignSession,
    name: str,
    description: str,
    schema: dict[str, Any],
    run: Callable[..., str],
) -> BaseTool:
    def guarded(**raw: Any) -> str:
        started = time.perf_counter()
        try:
            text = run(session, **_checked(schema, raw))
        except (ToolInputError, EnvHarnessError) as e:
            text = f"ERROR: {e}"
        except Exception as e:  # a tool must answer the agent, whatever went wrong inside it
            text = f"ERROR: {name} failed unexpectedly ({type(e).__name__}: {e})"
        long = name in _LONG_OUTPUT or (name == "read_baseline" and raw.get("episode") is not None)
        text = clip(text, session.max_episode_chars if long else session.max_output_chars)
        session.record(name, raw, text, time.perf_counter() - started)
        return text

    return StructuredTool.from_function(
        func=guarded, name=name, description=description, args_schema=schema
    )


def build_designer_tools(session: DesignSession) -> list[BaseTool]:
    """The designer agent's tools, bound to ``session``.

    Args:
        session: The task's design session.

    Returns:
        ``get_tool_schemas``, ``get_state_schema``, ``read_baseline``,
        ``get_stage_candidates``, ``list_sibling_tasks``, ``dry_run_setups``, ``check_rules``
        and ``submit_candidate`` as LangChain tools (see :data:`DESIGNER_TOOL_NAMES`).

    Raises:
        RiggerError: If ``session`` is not a :class:`DesignSession`, or its base spec does not
            build (the tools need the environment's tool names).

    Example:
        >>> from envharness.harness.spec import BridgeSpec, HarnessSpec
        >>> session = DesignSession(HarnessSpec(BridgeSpec("toy24", "4-4-10-10")), [])
        >>> tools = build_designer_tools(session)
        >>> [tool.name for tool in tools][:2]
        ['get_tool_schemas', 'get_state_schema']
        >>> tools[0].invoke({"name": "nope"})
        "ERROR: no tool named 'nope'; call get_tool_schemas() for the list"
    """
    if not isinstance(session, DesignSession):
        raise RiggerError(f"expected a DesignSession, got {type(session).__name__}")
    try:
        names = [tool.name for tool in spec_tools(session.base_spec)]
    except EnvHarnessError as e:
        raise RiggerError(f"the base spec of task {session.task_id!r} does not build: {e}") from e
    runs: dict[str, Callable[..., str]] = {
        "get_tool_schemas": reading.get_tool_schemas,
        "get_state_schema": reading.get_state_schema,
        "read_baseline": reading.read_baseline,
        "get_stage_candidates": staging.get_stage_candidates,
        "list_sibling_tasks": staging.list_sibling_tasks,
        "dry_run_setups": checking.dry_run,
        "check_rules": checking.check_rules,
        "submit_candidate": checking.submit_candidate,
    }
    schemas = _schemas(names, session.max_episode_chars, session.replay_seconds)
    return [_make_tool(session, name, *schemas[name], runs[name]) for name in DESIGNER_TOOL_NAMES]
