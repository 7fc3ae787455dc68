"""The JSON-Schema of ``AlfWorldEnv.get_env_state()``."""

from __future__ import annotations

from typing import Any

__all__ = ["STATE_SCHEMA"]

_NAMES = {"type": "array", "items": {"type": "string"}}

_FIELDS: dict[str, Any] = {
    "task_type": {
        "type": "string",
        "description": (
            "The ALFWorld task type, e.g. 'pick_and_place_simple', 'look_at_obj_in_light', "
            "'pick_clean_then_place_in_recep', 'pick_heat_then_place_in_recep', "
            "'pick_cool_then_place_in_recep', 'pick_two_obj_and_place'."
        ),
    },
    "goal": {"type": "string", "description": "The task, e.g. 'put some box on dresser'."},
    "location": {
        "type": "string",
        "description": (
            "The receptacle the agent last went to, e.g. 'sidetable 1'; 'middle of room' at the "
            "start."
        ),
    },
    "inventory": {**_NAMES, "description": "Objects the agent holds, e.g. ['box 3'] (sorted)."},
    "opened": {**_NAMES, "description": "Receptacles that are open now, e.g. ['drawer 2']."},
    "description": {
        "type": "string",
        "description": (
            "The room as the game introduced it at reset: 'You are in the middle of a room. "
            "Looking quickly around you, you see a ..., and a ...' (fixed for the episode)."
        ),
    },
    "admissible_commands": {
        **_NAMES,
        "description": "The commands that do something in this state, sorted.",
    },
    "moves": {
        "type": "integer",
        "description": (
            "Commands the agent typed this episode (not setup steps), inadmissible ones included."
        ),
    },
    "won": {"type": "boolean", "description": "The task is done (the episode is over)."},
    "last_command": {
        "type": "string",
        "description": "The last command typed, cleaned up (lowercase); '' before any.",
    },
}

STATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "An ALFWorld household: where the agent is, what it holds, what is open.",
    "properties": _FIELDS,
    "required": list(_FIELDS),
}
