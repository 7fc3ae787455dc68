"""The designer agent's tools: read the task and the baseline, dry-run components, submit.

:func:`build_designer_tools` turns a :class:`DesignSession` (the spec being rigged, the baseline
rollouts and statistics, the diagnosis and the objective) into LangChain tools for a tool-calling
designer model: ``get_tool_schemas``, ``get_state_schema``, ``read_baseline``,
``get_stage_candidates`` (the bridge's ready-made Setups), ``list_sibling_tasks`` (the tasks a
Link may add), ``dry_run_setups``, ``check_rules`` (the hooks over the candidate's own start and
every baseline episode) and ``submit_candidate``. The tools answer with text, never raise into
the agent loop, and only a submission that passes every check reaches validation
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

from envharness.tools.actions import ToolInputError, parse_in_env_actions, strip_fence
from envharness.tools.build import DESIGNER_TOOL_NAMES, build_designer_tools
from envharness.tools.digest import (
    OBSERVATION_CHARS,
    baseline_digest,
    describe_stats,
    trajectory_lines,
)
from envharness.tools.replay import (
    ReplaySweep,
    RulesReplay,
    dry_run_setups,
    replay_rules,
    replay_sweep,
)
from envharness.tools.session import (
    DEFAULT_EPISODE_CHARS,
    DEFAULT_OUTPUT_CHARS,
    DEFAULT_REPLAY_SECONDS,
    DesignSession,
    ModelUsage,
    ToolCallRecord,
)
from envharness.tools.staging import as_submitted, session_siblings

__all__ = [
    # the session and the tools
    "DESIGNER_TOOL_NAMES",
    "DesignSession",
    "ModelUsage",
    "ToolCallRecord",
    "build_designer_tools",
    # what the tools are made of
    "DEFAULT_EPISODE_CHARS",
    "DEFAULT_OUTPUT_CHARS",
    "DEFAULT_REPLAY_SECONDS",
    "OBSERVATION_CHARS",
    "ReplaySweep",
    "RulesReplay",
    "ToolInputError",
    "as_submitted",
    "baseline_digest",
    "describe_stats",
    "dry_run_setups",
    "parse_in_env_actions",
    "replay_rules",
    "replay_sweep",
    "session_siblings",
    "strip_fence",
    "trajectory_lines",
]
