"""The designer's read-only tools: the bridge's tool schemas, its state, the baseline."""

from __future__ import annotations

import json

from envharness.tools.actions import ToolInputError
from envharness.tools.digest import baseline_digest, json_text
from envharness.tools.envs import fresh_env, spec_tools
from envharness.tools.session import DesignSession

__all__ = ["get_state_schema", "get_tool_schemas", "read_baseline"]


def get_tool_schemas(session: DesignSession, name: str | None = None) -> str:
    """The environment's tools (or the one named ``name``) as JSON."""

    def compute() -> str:
        return json_text([tool.to_dict() for tool in spec_tools(session.base_spec)])

    tools = json.loads(session.cached("get_tool_schemas", compute))
    if name is not None:
        tools = [tool for tool in tools if tool["name"] == name]
        if not tools:
            raise ToolInputError(f"no tool named {name!r}; call get_tool_schemas() for the list")
    return (
        "The environment's tools. Setups' in_env_actions call them as "
        '{"tool": <name>, "args": <object matching parameters>}; rules hooks receive the '
        'policy\'s actions in the same {"tool", "args"} form.\n' + json_text(tools)
    )


def get_state_schema(session: DesignSession, with_example: bool = True) -> str:
    """The env-state JSON Schema, with the start state and observation after a reset."""

    def compute() -> str:
        with fresh_env(session.base_spec) as env:
            observation, _ = env.reset(seed=session.seed)
            schema = env.env_state_schema()
            state = env.get_env_state()
        return (
            "The environment's state schema. Rules hooks receive `state` in this form (a copy of "
            "get_env_state(); filter_action sees the state before the step, the other hooks the "
            f"state after it).\n{json_text(schema)}\n\n"
            f"Example: the start state after reset (seed {session.seed}):\n{json_text(state)}\n\n"
            f"The start observation:\n{observation}"
        )

    text = session.cached("get_state_schema", compute)
    return text if with_example else text.split("\n\nExample:", 1)[0]


def read_baseline(session: DesignSession, episode: int | None = None) -> str:
    """The baseline statistics and one episode in full, or every episode shortened.

    One episode shows every observation up to :data:`OBSERVATION_CHARS` characters, the whole
    answer within the session's ``max_episode_chars``; all episodes fit ``max_output_chars``.
    """
    try:
        return baseline_digest(
            session.trajectories,
            session.rollout_stats,
            episode=episode,
            limit=session.max_output_chars if episode is None else session.max_episode_chars,
        )
    except IndexError as e:
        raise ToolInputError(str(e)) from None
