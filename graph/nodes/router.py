"""The routers: after ``validator`` and after ``approval``.

validator ─┬─ accepted, or ended (rejected/undecided) → recorder → END
           ├─ accepted under require_approval           → approval
           └─ refine                                   → writer
approval  ─┬─ approved, or refused with no iterations left → recorder → END
           └─ refused                                      → writer
"""

from __future__ import annotations

from typing import Literal

from envharness.graph.state import RiggerState

__all__ = ["route_after_approval", "route_after_validator"]

_ENDED = ("accepted", "rejected", "undecided")


def route_after_validator(state: RiggerState) -> Literal["writer", "approval", "recorder"]:
    """Records a finished rig, asks for approval of a proposed spec, or refines.

    The validator has already turned a refine with no iterations left into a reject.
    """
    if state.get("status") in _ENDED:
        return "recorder"
    if state.get("proposed_spec") is not None:
        return "approval"
    return "writer"


def route_after_approval(state: RiggerState) -> Literal["writer", "recorder"]:
    """Records an approved (or finally refused) rig; sends a refused one back to the writer."""
    return "recorder" if state.get("status") in _ENDED else "writer"
