"""The bridge's state view schema and the checks on a saved state before it is replayed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envharness.bridgekit.checks import check_nothing_recorded, check_saved_state, state_error
from envharness.bridges.gymnasium._loader import BRIDGE
from envharness.errors import BridgeError

OPTIONS = ("env_kwargs", "max_steps")
_NAME = "GymnasiumEnv"
SAVED_KEYS = ("bridge", "task_id", "options", "seed", "actions", "observation", "total_reward")


def state_schema(
    task_id: str, family: str, observation: Mapping[str, Any], fields: Mapping[str, Any]
) -> dict[str, Any]:
    """The JSON-Schema of ``get_env_state()``: the common fields, then the domain's ``fields``."""
    common = {
        "env_id": {"type": "string", "description": "The Gymnasium env id (the task)."},
        "observation": {
            **observation,
            "nullable": True,
            "description": "The raw gymnasium observation (null before reset).",
        },
        "steps": {"type": "integer", "description": "Agent steps this episode (not setup steps)."},
        "last_action": {
            "type": "string",
            "nullable": True,
            "description": "The last tool called (null after reset).",
        },
        "last_action_index": {
            "type": "integer",
            "nullable": True,
            "description": "The last action as gymnasium's integer (null after reset).",
        },
        "last_reward": {"type": "number", "description": "The last step's reward."},
        "total_reward": {"type": "number", "description": "The return so far (the score)."},
        "terminated": {"type": "boolean", "description": "The env ended the episode."},
        "truncated": {
            "type": "boolean",
            "description": "Gymnasium's registered time limit cut the episode short.",
        },
        "success": {"type": "boolean", "description": "The verifier's verdict so far."},
    }
    return {
        "type": "object",
        "description": (
            f"The state of Gymnasium's {task_id} ({family}); decoded fields are present once an "
            "episode has started."
        ),
        "properties": {**common, **fields},
        "required": list(common),
    }


def bad_state(problem: str) -> BridgeError:
    """The error for a saved state that cannot be restored."""
    return state_error(problem, bridge=BRIDGE, env_name=_NAME)


def parse_saved(state: object) -> tuple[str, dict[str, Any], int | None, list[int]]:
    """``(task_id, options, seed, actions)`` of a saved state, checked for shape.

    Raises:
        BridgeError: Naming what is missing or malformed.
    """
    state = check_saved_state(
        state, bridge=BRIDGE, keys=SAVED_KEYS, options=OPTIONS, env_name=_NAME
    )
    actions, seed = state["actions"], state["seed"]
    if not isinstance(actions, list) or not all(
        isinstance(a, int) and not isinstance(a, bool) for a in actions
    ):
        raise bad_state(f"'actions' must be a list of action indexes, got {actions!r}")
    if seed is None:
        check_nothing_recorded(state, ("actions",), bridge=BRIDGE, env_name=_NAME)
    return state["task_id"], dict(state["options"]), seed, list(actions)
