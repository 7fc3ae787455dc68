"""The router after ``validator``: accept → END, refine → ``writer``, reject/undecided → END."""

from __future__ import annotations

from typing import Literal

from langgraph.graph import END

from envharness.graph.state import RiggerState

__all__ = ["route_after_validator"]


def route_after_validator(state: RiggerState) -> Literal["writer", "__end__"]:
    """Ends an accepted or rejected rig; sends a refined one back to the writer.

    The validator has already turned a refine with no iterations left into a reject.
    """
    if state.get("status") in ("accepted", "rejected", "undecided"):
        return END
    return "writer"
