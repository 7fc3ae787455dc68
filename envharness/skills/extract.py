"""``extract_skills``: distil skills from trajectories with an extractor (offline by default).

An extractor is any object with a ``name`` and ``extract(trajectory) -> list[Skill]``:

- :class:`~envharness.skills.offline.OfflineExtractor` (the default): deterministic, no model;
  procedures from successes, pitfalls from failure categories.
- :class:`~envharness.skills.model_extractor.ModelExtractor`: any LangChain chat model.

Success is always the bridge's own verdict (:attr:`Trajectory.success`), never a model's. Every
skill's :class:`~envharness.skills.records.Provenance` names the source episode by its
:class:`~envharness.rollout.store.RunStore` key (:meth:`RunStore.key_of`), its spec, whether
the spec had harness components, and what the harness was rigged to teach (its lineage).

Example:
    >>> from envharness import load_bridge
    >>> from envharness.rollout import OraclePolicy, rollout
    >>> episode = rollout(load_bridge("toy24", task_id="4-4-10-10"), OraclePolicy(1.0, seed=0))
    >>> [skill] = extract_skills([episode])
    >>> skill.kind, skill.steps[0]
    ('strategy', "combine(a=<number>, op='*', b=<number>)")
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from envharness.rollout.trajectory import Trajectory
from envharness.skills.provenance import harness_target, is_harnessed, provenance_of
from envharness.skills.records import Skill, SkillError

__all__ = ["Extractor", "extract_skills", "harness_target", "is_harnessed", "provenance_of"]


@runtime_checkable
class Extractor(Protocol):
    """What :func:`extract_skills` drives: one episode in, its skills out."""

    name: str

    def extract(self, trajectory: Trajectory) -> list[Skill]:
        """The skills one episode teaches (possibly none)."""
        ...


def _with_lineage(trajectory: Trajectory, specs: Mapping[str, Any] | None) -> Trajectory:
    """``trajectory`` with the spec dict of ``specs[spec_id]`` when its own has no lineage."""
    if not specs or trajectory.spec_id not in specs:
        return trajectory
    if isinstance(trajectory.spec, Mapping) and trajectory.spec.get("lineage"):
        return trajectory
    spec = specs[trajectory.spec_id]
    data = spec.to_dict() if callable(getattr(spec, "to_dict", None)) else spec
    if not isinstance(data, Mapping):
        raise SkillError(
            f"specs[{trajectory.spec_id!r}]: expected a HarnessSpec or its dict, "
            f"got {type(spec).__name__}"
        )
    return dataclasses.replace(trajectory, spec=dict(data))


def extract_skills(
    trajectories: Iterable[Trajectory],
    extractor: Extractor | None = None,
    *,
    specs: Mapping[str, Any] | None = None,
) -> list[Skill]:
    """The skills the episodes teach, in episode order, without exact duplicates.

    Args:
        trajectories: The episodes (successes and failures, as judged by their bridges).
        extractor: Who writes the skills; ``None`` for an
            :class:`~envharness.skills.offline.OfflineExtractor`.
        specs: The accepted specs by ``spec_id`` (``HarnessSpec`` or its dict). A trajectory
            records the spec of the env it played, without lineage; with ``specs`` the
            extractor sees the accepted spec, lineage included, so the skill says what the
            harness was rigged to teach.

    Returns:
        The skills; of several with the same :attr:`Skill.key` only the first is kept (a
        :class:`~envharness.skills.bank.SkillBank` also drops near-duplicates).

    Raises:
        SkillError: If an item is not a trajectory, the extractor is not one, or it fails.
    """
    if extractor is None:
        from envharness.skills.offline import OfflineExtractor

        extractor = OfflineExtractor()
    if not callable(getattr(extractor, "extract", None)):
        raise SkillError(
            f"expected an extractor with extract(trajectory), got {type(extractor).__name__}"
        )
    skills: list[Skill] = []
    seen: set[str] = set()
    for index, trajectory in enumerate(trajectories):
        if not isinstance(trajectory, Trajectory):
            raise SkillError(
                f"trajectory {index}: expected a Trajectory, got {type(trajectory).__name__}"
            )
        for skill in extractor.extract(_with_lineage(trajectory, specs)):
            if not isinstance(skill, Skill):
                raise SkillError(
                    f"{getattr(extractor, 'name', type(extractor).__name__)} returned "
                    f"{type(skill).__name__}, expected Skill"
                )
            if skill.key not in seen:
                seen.add(skill.key)
                skills.append(skill)
    return skills
