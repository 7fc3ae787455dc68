"""``approval``: a human accepts or refuses a validated candidate (a LangGraph ``interrupt``).

It runs after the validator accepted a candidate under ``require_approval``, before any file is
written, so approving replays no rollout. The interrupt's payload (:data:`PAYLOAD_KEYS`)::

    {"task_id": str, "question": "Accept this harness?", "iteration": int,
     "candidate": {...},            # the designer's candidate (components, knobs, rationale)
     "spec": {...},                 # the harness spec that would be accepted, with lineage
     "verdict": {...},              # the validator's verdict (decision, reason, judgement)
     "statistics": {...}}           # the validation rollouts' statistics

Resume with ``Command(resume=True)`` / ``Command(resume=False)`` or
``Command(resume={"approved": bool, "note": str})``. Anything else is not taken as an answer:
the rig stays paused and asks again, with the same payload plus ``"error"`` saying what was
wrong (LangGraph keeps a resume value once given, so raising would leave the rig stuck on it).
A refusal sends the writer back (or rejects, with no iterations left); the note is
kept in the state's ``approval`` and, for a refusal, in the attempt's reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from envharness.errors import RiggerError
from envharness.graph.context import RiggerContext
from envharness.graph.nodes.validator import ending_update
from envharness.graph.state import Attempt, RiggerState

__all__ = ["PAYLOAD_KEYS", "QUESTION", "approval", "read_approval"]

QUESTION = "Accept this harness?"
PAYLOAD_KEYS = ("task_id", "question", "iteration", "candidate", "spec", "verdict", "statistics")


def read_approval(answer: Any) -> tuple[bool, str]:
    """``(approved, note)`` from a resume value.

    Raises:
        RiggerError: If ``answer`` is not a bool or ``{"approved": bool, "note": str}``.

    Example:
        >>> read_approval({"approved": False, "note": "too easy"})
        (False, 'too easy')
    """
    if isinstance(answer, bool):
        return answer, ""
    if (
        isinstance(answer, Mapping)
        and set(answer) <= {"approved", "note"}
        and isinstance(answer.get("approved"), bool)
        and isinstance(answer.get("note", ""), str)
    ):
        return answer["approved"], answer.get("note", "")
    raise RiggerError(
        f"an approval is True, False or {{'approved': bool, 'note': str}}, got {answer!r}; "
        "resume again with one of those"
    )


def approval(state: RiggerState, runtime: Runtime[RiggerContext]) -> dict[str, Any]:
    """Asks for approval of the proposed spec; accepts it, or refuses the attempt."""
    context = runtime.context
    proposed = state.get("proposed_spec")
    attempts = state.get("attempts", [])
    if proposed is None or not attempts:
        raise RiggerError("the approval step has no proposed harness (the state is inconsistent)")
    last = attempts[-1]
    verdict = last["verdict"]
    payload = {
        "task_id": state["task_id"],
        "question": QUESTION,
        "iteration": last["iteration"],
        "candidate": last["candidate"],
        "spec": proposed,
        "verdict": verdict,
        "statistics": verdict.get("stats"),
    }
    given = interrupt(payload)
    while True:
        try:
            approved, note = read_approval(given)
            break
        except RiggerError as e:
            given = interrupt({**payload, "error": str(e)})
    answer = {"approved": approved, "note": note}
    if approved:
        return {
            "status": "accepted",
            "accepted_spec": proposed,
            "proposed_spec": None,
            "approval": answer,
        }
    reason = "a human refused the candidate" + (f": {note}" if note else "")
    refused: dict[str, Any] = {**verdict, "decision": "refine", "reason": reason, "side": None}
    update: dict[str, Any] = {"proposed_spec": None, "approval": answer}
    if last["iteration"] >= context.max_iterations:
        refused["decision"] = "reject"
        refused["reason"] = (
            f"{reason} (no iterations left: {last['iteration']}/{context.max_iterations})"
        )
    attempt: Attempt = {**last, "verdict": refused}
    update |= {"attempts": [attempt], "reason": refused["reason"]}
    if refused["decision"] == "reject":
        update |= ending_update(state, context, [*attempts[:-1], attempt], refused["reason"])
    return update
