"""The designer agent's tools: read the task and the baseline, dry-run components, submit.

:func:`build_designer_tools` turns a :class:`DesignSession` (the spec being rigged, the baseline
rollouts and statistics, the diagnosis and the objective) into LangChain tools for a tool-calling
designer model: ``get_tool_schemas``, ``get_state_schema``, ``read_baseline``, ``dry_run_setups``,
``check_rules`` and ``submit_candidate``. The tools answer with text, never raise into the agent
loop, and only a submission that passes every check reaches validation
(:attr:`DesignSession.submitted`).

Installed as ``envharness.tools``; needs the ``rigger`` extra (langchain-core).

Example:
    >>> from envharness.harness.spec import BridgeSpec, HarnessSpec
    >>> session = DesignSession(HarnessSpec(BridgeSpec("toy24", "4-4-10-10")), [])
    >>> tools = {tool.name: tool for tool in build_designer_tools(session)}
    >>> answer = tools["dry_run_setups"].invoke(
    ...     {"in_env_actions": [{"tool": "combine", "args": '{"a": "4", "op": "*", "b": "9"}'}]}
    ... )
    >>> answer.startswith("ERROR: setup action #0 combine(a='4', op='*', b='9') failed")
    True
"""

from __future__ import annotations

from envharness.tools.actions import ToolInputError, parse_in_env_actions
from envharness.tools.build import DESIGNER_TOOL_NAMES, build_designer_tools
from envharness.tools.digest import baseline_digest, describe_stats, trajectory_lines
from envharness.tools.replay import RulesReplay, dry_run_setups, replay_rules
from envharness.tools.session import DEFAULT_OUTPUT_CHARS, DesignSession, ModelUsage, ToolCallRecord

__all__ = [
    # the session and the tools
    "DESIGNER_TOOL_NAMES",
    "DesignSession",
    "ModelUsage",
    "ToolCallRecord",
    "build_designer_tools",
    # what the tools are made of
    "DEFAULT_OUTPUT_CHARS",
    "RulesReplay",
    "ToolInputError",
    "baseline_digest",
    "describe_stats",
    "dry_run_setups",
    "parse_in_env_actions",
    "replay_rules",
    "trajectory_lines",
]
