"""``Skill``: one piece of know-how distilled from episodes, with where it came from.

A skill is a short principle plus executable steps, written for an agent ("when you must put an
object somewhere clean, go to the sinkbasin first"). Its :class:`Provenance` says which episode
taught it: the bridge and task, the spec it ran under and whether that spec was the original
environment or a harnessed one, whether the bridge's own verifier scored the episode a success,
the trajectory's store key, and the extractor that wrote it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from envharness.errors import EnvHarnessError

__all__ = ["SKILL_KINDS", "Provenance", "Skill", "SkillError", "SkillKind"]

SkillKind = Literal["strategy", "pitfall"]
"""A strategy (what worked, from successes) or a pitfall (what to avoid, from failures)."""

SKILL_KINDS: tuple[str, ...] = ("strategy", "pitfall")

_WORD = re.compile(r"[a-z0-9]+")


class SkillError(EnvHarnessError):
    """A skill, a skill bank or an extractor's output is malformed (the message says where)."""


def _text(data: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str:
    value = data.get(key, "" if not required else None)
    if not isinstance(value, str) or (required and not value.strip()):
        raise SkillError(f"{where}: expected {key!r} to be a non-empty str, got {value!r}")
    return value.strip()


@dataclass(frozen=True)
class Provenance:
    """Where a skill came from.

    Attributes:
        bridge: The bridge of the source episode.
        task_id: Its task.
        spec_id: The spec it ran under.
        harnessed: Whether that spec had harness components (else: the original environment).
        success: The bridge's own verdict on the source episode.
        trajectory_key: The source trajectory's store key (``""`` when it was not stored).
        extractor: Who wrote the skill (``"offline"``, or the model's name).
        target: What the harness was changed to teach, from its lineage (``""`` if none).
    """

    bridge: str
    task_id: str
    spec_id: str
    harnessed: bool
    success: bool
    trajectory_key: str = ""
    extractor: str = "offline"
    target: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The provenance as a JSON-able dict."""
        return {
            "bridge": self.bridge,
            "task_id": self.task_id,
            "spec_id": self.spec_id,
            "harnessed": self.harnessed,
            "success": self.success,
            "trajectory_key": self.trajectory_key,
            "extractor": self.extractor,
            "target": self.target,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Provenance:
        """Rebuilds a provenance from :meth:`to_dict` output.

        Raises:
            SkillError: Naming the malformed field.
        """
        if not isinstance(data, Mapping):
            raise SkillError(f"provenance: expected an object, got {type(data).__name__}")
        for flag in ("harnessed", "success"):
            if not isinstance(data.get(flag), bool):
                raise SkillError(f"provenance: expected {flag!r} to be true or false")
        return cls(
            bridge=_text(data, "bridge", "provenance"),
            task_id=_text(data, "task_id", "provenance"),
            spec_id=_text(data, "spec_id", "provenance"),
            harnessed=data["harnessed"],
            success=data["success"],
            trajectory_key=_text(data, "trajectory_key", "provenance", required=False),
            extractor=_text(data, "extractor", "provenance", required=False) or "offline",
            target=_text(data, "target", "provenance", required=False),
        )


@dataclass(frozen=True)
class Skill:
    """A principle and the steps that apply it, for an agent to read before it acts.

    Attributes:
        title: A short name ("Find the object before you take it").
        when: When to use it ("the task names an object you cannot see").
        principle: The idea, in one or two sentences.
        steps: Executable steps, general enough for other tasks of the kind.
        kind: ``"strategy"`` or ``"pitfall"``.
        provenance: Where it came from.

    Example:
        >>> skill = Skill("Multiply first", "two large numbers are left", "Make 24 from a product.",
        ...               ("combine the two largest numbers with *",), "strategy",
        ...               Provenance("toy24", "4-4-10-10", "ab12", False, True))
        >>> print(skill.render())
        Multiply first (strategy) — when two large numbers are left: Make 24 from a product.
          1. combine the two largest numbers with *
        >>> Skill.from_dict(skill.to_dict()) == skill
        True
    """

    title: str
    when: str
    principle: str
    steps: tuple[str, ...]
    kind: SkillKind
    provenance: Provenance
    tags: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.kind not in SKILL_KINDS:
            raise SkillError(
                f"skill {self.title!r}: expected kind in {SKILL_KINDS}, got {self.kind!r}"
            )
        for name in ("title", "when", "principle"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise SkillError(f"skill: expected {name!r} to be a non-empty str, got {value!r}")
        if isinstance(self.steps, str) or not all(
            isinstance(step, str) and step.strip() for step in self.steps
        ):
            raise SkillError(f"skill {self.title!r}: expected steps to be a list of non-empty str")

    @property
    def key(self) -> str:
        """A digest of the normalized words of title, principle and steps.

        Near-duplicates that differ only in case, punctuation or spacing share it.
        """
        words = " ".join(_WORD.findall(" ".join((self.title, self.principle, *self.steps)).lower()))
        return hashlib.sha256(words.encode()).hexdigest()[:16]

    def render(self) -> str:
        """The skill as an agent reads it: one headline and numbered steps."""
        head = f"{self.title} ({self.kind}) — when {self.when}: {self.principle}"
        lines = [head, *(f"  {i}. {step}" for i, step in enumerate(self.steps, 1))]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The skill as a JSON-able dict (one line of a bank)."""
        return {
            "title": self.title,
            "when": self.when,
            "principle": self.principle,
            "steps": list(self.steps),
            "kind": self.kind,
            "tags": list(self.tags),
            "provenance": self.provenance.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Any) -> Skill:
        """Rebuilds a skill from :meth:`to_dict` output.

        Raises:
            SkillError: Naming the malformed field.
        """
        if not isinstance(data, Mapping):
            raise SkillError(f"skill: expected an object, got {type(data).__name__}")
        steps = data.get("steps", [])
        tags = data.get("tags", [])
        if not isinstance(steps, Sequence) or isinstance(steps, str):
            raise SkillError("skill: expected 'steps' to be a list of str")
        if not isinstance(tags, Sequence) or isinstance(tags, str):
            raise SkillError("skill: expected 'tags' to be a list of str")
        return cls(
            title=_text(data, "title", "skill"),
            when=_text(data, "when", "skill"),
            principle=_text(data, "principle", "skill"),
            steps=tuple(steps),
            kind=data.get("kind"),  # checked in __post_init__
            provenance=Provenance.from_dict(data.get("provenance")),
            tags=tuple(str(tag) for tag in tags),
        )
