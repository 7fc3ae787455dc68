"""The rigger graph's state: one task's rig, as a TypedDict with reducers for what accumulates.

Trajectories are not held in the state (checkpoints stay small): the state holds their keys in
the run's :class:`~envharness.rollout.RunStore`, which holds the trajectories themselves.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal

from pydantic import Field
from typing_extensions import TypedDict  # LangGraph reads schemas from it before Python 3.12

__all__ = [
    "Attempt",
    "RigStatus",
    "RiggerInput",
    "RiggerOutput",
    "RiggerState",
    "merge_attempts",
    "replace_or_append",
]

RigStatus = Literal["running", "accepted", "rejected", "undecided"]


class Attempt(TypedDict):
    """One write→validate iteration.

    Keys:
        iteration: 1-based iteration number.
        candidate: The :class:`~envharness.graph.records.Candidate` as a dict (``None`` when the
            designer had nothing to propose).
        spec: The candidate's harness spec as a dict (``None`` without a candidate).
        verdict: The :class:`~envharness.graph.records.Verdict` as a dict.
        trajectories: Run-store keys of the validation rollouts.
        designer: ``heuristic`` or the model that wrote it.
        model_calls: Model calls the writer spent on it.
    """

    iteration: int
    candidate: dict[str, Any] | None
    spec: dict[str, Any] | None
    verdict: dict[str, Any]
    trajectories: list[str]
    designer: str
    model_calls: int


def replace_or_append(left: list[Any], right: list[Any], key: str) -> list[Any]:
    """``left`` updated by ``right``: an item with a new ``key`` is appended, a known one replaced.

    The accumulating reducers' shape (attempts by iteration, ``rig_many``'s outcomes by task).
    """
    merged = list(left)
    index = {item[key]: i for i, item in enumerate(merged)}
    for item in right:
        if item[key] in index:
            merged[index[item[key]]] = item
        else:
            index[item[key]] = len(merged)
            merged.append(item)
    return merged


def merge_attempts(left: list[Attempt], right: list[Attempt]) -> list[Attempt]:
    """The attempts reducer: new iterations are appended, a known one is replaced.

    The approval node replaces the attempt a human refused (its verdict becomes the refusal).
    """
    return replace_or_append(left, right, "iteration")


class RiggerInput(TypedDict):
    """What a rig starts from: the task and the spec to rig (a bare bridge or a harness).

    Keys:
        task_id: The task; it must be the task of ``base_spec``.
        base_spec: The ``HarnessSpec`` to rig, as a dict (``spec.to_dict()``).
    """

    task_id: Annotated[str, Field(description="The task; it must be the task of base_spec.")]
    base_spec: Annotated[
        dict[str, Any], Field(description="The HarnessSpec to rig, as a dict (spec.to_dict()).")
    ]


class RiggerOutput(TypedDict, total=False):
    """What a finished rig returns (a parent graph receives these keys only).

    Keys:
        task_id: The task.
        status: ``accepted``, ``rejected``, ``undecided`` (or ``running`` while unfinished).
        reason: The last verdict's reason.
        accepted_spec: The accepted harness spec with lineage (``None`` unless accepted).
        diagnosis: What the diagnoser found.
        baseline_stats: The observe rollouts' statistics.
        attempts: Every write→validate iteration (candidate, spec, verdict).
        iteration: Write→validate iterations run.
        rollouts: Policy rollouts spent.
        model_calls: Model calls spent.
    """

    task_id: Annotated[str, Field(description="The task.")]
    status: Annotated[
        RigStatus, Field(description="accepted, rejected, undecided (running while unfinished).")
    ]
    reason: Annotated[str, Field(description="The last verdict's reason.")]
    accepted_spec: Annotated[
        dict[str, Any] | None,
        Field(description="The accepted harness spec with lineage (null unless accepted)."),
    ]
    diagnosis: Annotated[dict[str, Any], Field(description="What the diagnoser found.")]
    baseline_stats: Annotated[dict[str, Any], Field(description="The observe rollouts' stats.")]
    attempts: Annotated[
        list[Attempt], Field(description="Every write/validate iteration: candidate, verdict.")
    ]
    iteration: Annotated[int, Field(description="Write/validate iterations run.")]
    rollouts: Annotated[int, Field(description="Policy rollouts spent.")]
    model_calls: Annotated[int, Field(description="Model calls spent.")]


class RiggerState(TypedDict, total=False):
    """The state of one task's rig.

    Keys:
        task_id: The task (also the thread id).
        base_spec: The spec being rigged, as a dict.
        baseline: Run-store keys of the observe rollouts (accumulates).
        baseline_stats: Their :class:`~envharness.rollout.RolloutStats` as a dict.
        baseline_outcomes: Their :class:`~envharness.graph.judge.Outcomes` as a dict.
        next_seed: The first rollout seed no earlier step of this task's rig used.
        seeds: Every rollout seed this task's rig used (accumulates).
        diagnosis: The :class:`~envharness.graph.records.Diagnosis` as a dict.
        candidate: The writer's latest candidate as a dict (``None`` when it had none).
        candidate_designer: Who wrote it.
        candidate_model_calls: Model calls spent writing it.
        attempts: Every write→validate iteration (accumulates; :func:`merge_attempts`).
        iteration: Iterations started so far.
        status: ``running``, ``accepted``, ``rejected`` or ``undecided``.
        accepted_spec: The accepted harness spec with lineage, as a dict.
        rollouts: Policy rollouts spent on this task (accumulates); the validator's privileged
            oracle checks are not counted (nor stored).
        model_calls: Model calls spent on this task (accumulates).
        reason: The last verdict's reason.
        settings: The run's settings, recorded at the first step (a resume is checked against
            them, and one without a context takes them).
        proposed_spec: A validated spec waiting for a human's approval.
        approval: The human's answer (``{"approved": bool, "note": str}``).
        outcome: The record of a rig that ended without an accepted spec (what the recorder
            writes to ``RUN/rejected`` or ``RUN/undecided``).
    """

    task_id: str
    base_spec: dict[str, Any]
    baseline: Annotated[list[str], operator.add]
    baseline_stats: dict[str, Any]
    baseline_outcomes: dict[str, Any]
    next_seed: int
    seeds: Annotated[list[int], operator.add]
    diagnosis: dict[str, Any]
    candidate: dict[str, Any] | None
    candidate_designer: str
    candidate_model_calls: int
    attempts: Annotated[list[Attempt], merge_attempts]
    iteration: int
    status: RigStatus
    accepted_spec: dict[str, Any] | None
    rollouts: Annotated[int, operator.add]
    model_calls: Annotated[int, operator.add]
    reason: str
    settings: dict[str, Any]
    proposed_spec: dict[str, Any] | None
    approval: dict[str, Any] | None
    outcome: dict[str, Any] | None
