"""The rigger's progress events: what its nodes write to LangGraph's stream writer.

Every event is a plain dict (JSON-ready) whose ``event`` key names its shape, and carries the
``task_id`` it belongs to. Read them with ``stream_mode="custom"``::

    for event in graph.stream(start, config, context=context, stream_mode="custom"):
        print(event["event"], event["task_id"])

or, for many tasks, with ``rig(..., on_event=callback)`` (:mod:`envharness.graph.run`), which is
what ``envharness rig`` draws its progress bars from. Where the rigger runs as a subgraph (the
``rig_many`` graph, or your own parent graph), stream with ``subgraphs=True``: each event then
comes as ``(namespace, event)``.

=================== =========== ================================================================
``event``           written by  fields
=================== =========== ================================================================
``rollout_started`` observer,   ``task_id``, ``phase``, ``iteration``, ``i``, ``n``, ``seed``
                    validator
``rollout_finished`` observer,  the same, plus ``success``, ``steps``, ``end_reason`` and
                    validator   ``resumed``
``designer_turn``   writer      ``task_id``, ``iteration``, ``turn``, ``max_turns``,
                                ``designer``, ``tool_calls``
``verdict``         validator   ``task_id``, ``iteration``, ``decision``, ``reason``,
                                ``success_rate``, ``n``, ``rollouts``
=================== =========== ================================================================

``phase`` is ``observe`` (the baseline), ``validate`` (a candidate, or the fresh baseline the
judge compares it with) or ``audit``; ``i`` of ``n`` counts the rollouts of one batch (the
observer plays one batch, the validator one per look of the judge). Every rollout a rig counts
in its state's ``rollouts`` gives exactly one ``rollout_finished``: one played again from the
run store on a resume comes with ``resumed=True``. ``rollout_started`` is written when the
episode's policy is made, so it comes from the inline and thread executors (the policy is made in
this process); on process and Ray executors a rollout reports ``rollout_finished`` only.
``designer_turn`` comes from model designers (one per model call); the heuristic designer has no
turns. An event written outside a LangGraph run goes nowhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from typing_extensions import TypedDict

__all__ = [
    "EVENT_NAMES",
    "DesignerTurn",
    "EventWriter",
    "Phase",
    "RiggerEvent",
    "RolloutFinished",
    "RolloutStarted",
    "VerdictEvent",
    "ignore",
]

Phase = Literal["observe", "validate", "audit"]
"""Which rollouts: the baseline (``observe``), a candidate's validation, or an audit."""


class RolloutStarted(TypedDict):
    """A rollout began (its policy was made for the episode).

    Keys:
        event: ``"rollout_started"``.
        task_id: The task being rigged.
        phase: ``observe``, ``validate`` or ``audit``.
        iteration: The write→validate iteration (0 for the baseline).
        i: This rollout's number in its batch (1-based, in start order).
        n: The batch's rollouts.
        seed: The episode seed.
    """

    event: Literal["rollout_started"]
    task_id: str
    phase: Phase
    iteration: int
    i: int
    n: int
    seed: int


class RolloutFinished(TypedDict):
    """A rollout ended (or came back from the run store on a resume).

    Keys:
        event: ``"rollout_finished"``.
        task_id: The task being rigged.
        phase: ``observe``, ``validate`` or ``audit``.
        iteration: The write→validate iteration (0 for the baseline).
        i: How many of the batch's rollouts have finished, this one included.
        n: The batch's rollouts.
        seed: The episode seed.
        success: Whether the verifier passed the episode.
        steps: The agent's steps.
        end_reason: How the episode ended (``terminated``, ``budget``, ``policy_error``, ...).
        resumed: Whether it was read from the run store instead of played.
    """

    event: Literal["rollout_finished"]
    task_id: str
    phase: Phase
    iteration: int
    i: int
    n: int
    seed: int
    success: bool
    steps: int
    end_reason: str
    resumed: bool


class DesignerTurn(TypedDict):
    """A model designer made one model call.

    Keys:
        event: ``"designer_turn"``.
        task_id: The task being rigged.
        iteration: The iteration whose candidate is being written (1-based).
        turn: Model calls made for this candidate so far (1-based).
        max_turns: The designer's turn budget.
        designer: The designer model's name.
        tool_calls: The tools the model called in this turn, in order.
    """

    event: Literal["designer_turn"]
    task_id: str
    iteration: int
    turn: int
    max_turns: int
    designer: str
    tool_calls: list[str]


class VerdictEvent(TypedDict):
    """The validator judged a candidate.

    Keys:
        event: ``"verdict"``.
        task_id: The task being rigged.
        iteration: The candidate's iteration (1-based).
        decision: ``accept``, ``refine``, ``reject`` or ``undecided``.
        reason: The verdict in words.
        success_rate: The candidate's success rate on the judged rollouts (``None``: none).
        n: The judged rollouts.
        rollouts: The validation rollouts this candidate spent.
    """

    event: Literal["verdict"]
    task_id: str
    iteration: int
    decision: str
    reason: str
    success_rate: float | None
    n: int
    rollouts: int


RiggerEvent = RolloutStarted | RolloutFinished | DesignerTurn | VerdictEvent
"""Any progress event of the rigger."""

EVENT_NAMES = ("rollout_started", "rollout_finished", "designer_turn", "verdict")
"""Every ``event`` value, in the order a rig writes them first."""

EventWriter = Callable[[Mapping[str, Any]], None]
"""Where events go: a node's ``runtime.stream_writer``, or :func:`ignore`."""


def ignore(event: Mapping[str, Any]) -> None:
    """An :data:`EventWriter` that drops every event (outside a LangGraph run)."""
