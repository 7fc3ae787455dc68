"""``recorder``: writes a finished rig's outcome file from the final state (the last node).

Exactly one of ``RUN/accepted/<task>.json``, ``RUN/rejected/<task>.json`` and
``RUN/undecided/<task>.json`` exists after it, matching the state's ``status``: the others are
removed, so a fork or a time-travel replay of a task leaves one consistent outcome, never an
accepted and a rejected file side by side.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from envharness.errors import RiggerError
from envharness.graph.context import RiggerContext
from envharness.graph.outputs import accepted_path, rejected_path, undecided_path, write_json
from envharness.graph.state import RiggerState

__all__ = ["recorder"]

_PATHS = {"accepted": accepted_path, "rejected": rejected_path, "undecided": undecided_path}


def recorder(state: RiggerState, runtime: Runtime[RiggerContext]) -> dict[str, Any]:
    """Writes the outcome file of ``state["status"]`` and removes the task's other ones."""
    context = runtime.context
    status = state.get("status")
    if status not in _PATHS:
        raise RiggerError(f"cannot record a rig whose status is {status!r} (not finished)")
    content = state.get("accepted_spec") if status == "accepted" else state.get("outcome")
    if content is None:
        raise RiggerError(f"the rig ended {status} without its record (the state is inconsistent)")
    for name, path_of in _PATHS.items():
        path = path_of(context.run_dir, state["task_id"])
        if name == status:
            write_json(path, content)
        else:
            path.unlink(missing_ok=True)
    return {}
