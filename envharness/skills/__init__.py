"""Skill learning: distil skills from (rigged) episodes, keep them in banks, retrieve them.

- :mod:`~envharness.skills.records`: ``Skill`` and its ``Provenance``.
"""

from __future__ import annotations

from envharness.skills.records import SKILL_KINDS, Provenance, Skill, SkillError, SkillKind

__all__ = ["SKILL_KINDS", "Provenance", "Skill", "SkillError", "SkillKind"]
