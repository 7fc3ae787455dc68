"""Where a skill came from, read off the trajectory that taught it (and its spec's lineage)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envharness.rollout.store import RunStore
from envharness.rollout.trajectory import Trajectory
from envharness.skills.records import Provenance

__all__ = ["harness_target", "is_harnessed", "provenance_of"]

_TARGET_CHARS = 300


def is_harnessed(spec: Mapping[str, Any]) -> bool:
    """Whether a trajectory's spec dict has harness components (else: the original env)."""
    return bool(isinstance(spec, Mapping) and spec.get("components"))


def harness_target(spec: Mapping[str, Any]) -> str:
    """What the spec's harness was rigged to teach: its lineage notes and objective.

    Returns ``""`` when the spec has no lineage (a bare bridge or a hand-made harness).

    Example:
        >>> harness_target({"lineage": {"notes": "one undo only",
        ...                              "validation": {"objective": "sr:0.4-0.6"}}})
        'one undo only (objective sr:0.4-0.6)'
    """
    lineage = spec.get("lineage") if isinstance(spec, Mapping) else None
    if not isinstance(lineage, Mapping):
        return ""
    notes = str(lineage.get("notes") or "").strip()
    validation = lineage.get("validation")
    objective = ""
    if isinstance(validation, Mapping):
        objective = str(validation.get("objective") or "").strip()
        direction = str(validation.get("direction") or "").strip()
        if objective and direction:
            objective = f"{objective}, {direction}"
    if objective:
        notes = f"{notes} (objective {objective})" if notes else f"objective {objective}"
    return " ".join(notes.split())[:_TARGET_CHARS]


def provenance_of(trajectory: Trajectory, extractor: str) -> Provenance:
    """The provenance of a skill taught by ``trajectory``, written by ``extractor``.

    The trajectory key is :meth:`RunStore.key_of` (``[spec_id, policy, seed]`` as JSON), the key
    a run store files the episode under.
    """
    return Provenance(
        bridge=trajectory.bridge or "?",
        task_id=trajectory.task_id or "?",
        spec_id=trajectory.spec_id or "?",
        harnessed=is_harnessed(trajectory.spec),
        success=trajectory.success,
        trajectory_key=RunStore.key_of(trajectory),
        extractor=extractor,
        target=harness_target(trajectory.spec),
    )
