"""``SkillBank``: skills as JSONL in a run directory, append-only and de-duplicated.

A bank file holds one :meth:`Skill.to_dict` per line (``skills.jsonl`` when a run directory is
given). Adding a skill appends one line (flushed and fsync'd) unless the bank already holds a
near-duplicate of it, so a bank is safe to extend across resumed runs.

De-duplication rule: a skill is a near-duplicate of one already in the bank when

1. both have the same :attr:`Skill.key` (the same normalized words of title, principle and steps:
   they differ only in case, punctuation or spacing), or
2. ``similarity`` is set (default ``0.9``), both have the same ``kind``, and the Jaccard
   similarity of their sets of normalized words (lowercase ``[a-z0-9]+`` runs of title,
   principle and steps; placeholders such as ``<object>`` count as their word) is at least
   ``similarity``.

The ``when`` text, tags and provenance never decide: the first skill added wins and keeps its
provenance. ``similarity=None`` keeps only rule 1.

Example:
    >>> import tempfile
    >>> from envharness.skills.records import Provenance, Skill
    >>> origin = Provenance("toy24", "4-4-10-10", "ab12", False, True)
    >>> skill = Skill("Multiply first", "two large numbers are left", "Make 24 from a product.",
    ...               ("combine the two largest numbers with *",), "strategy", origin)
    >>> with tempfile.TemporaryDirectory() as run:
    ...     bank = SkillBank(run)
    ...     added = bank.add(skill), bank.add(Skill("multiply first!", "later", skill.principle,
    ...                                            skill.steps, "strategy", origin))
    ...     added, len(SkillBank.load(run))
    ((True, False), 1)
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from envharness.skills.records import SKILL_KINDS, Skill, SkillError

__all__ = ["BANK_FILE", "DEFAULT_SIMILARITY", "SkillBank", "skill_words", "word_similarity"]

BANK_FILE = "skills.jsonl"
"""The bank's file name inside a run directory."""

DEFAULT_SIMILARITY = 0.9
"""The default Jaccard threshold of rule 2 of the de-duplication rule."""

_WORD = re.compile(r"[a-z0-9]+")


def skill_words(skill: Skill) -> frozenset[str]:
    """The normalized words of a skill's title, principle and steps (what rule 2 compares)."""
    return frozenset(_WORD.findall(" ".join((skill.title, skill.principle, *skill.steps)).lower()))


def word_similarity(a: Skill, b: Skill) -> float:
    """The Jaccard similarity of two skills' :func:`skill_words` (1.0 for two empty sets)."""
    left, right = skill_words(a), skill_words(b)
    union = left | right
    return len(left & right) / len(union) if union else 1.0


def _bank_path(path: str | os.PathLike[str]) -> Path:
    """``path/skills.jsonl`` for a run directory, else ``path`` itself.

    A run directory is an existing directory, or a path that does not exist and has no suffix.
    """
    where = Path(path)
    if where.is_dir() or (not where.suffix and not where.exists()):
        return where / BANK_FILE
    return where


def _check_similarity(similarity: float | None) -> float | None:
    if similarity is None:
        return None
    if isinstance(similarity, bool) or not isinstance(similarity, int | float):
        raise SkillError(f"similarity: expected a number in (0, 1] or None, got {similarity!r}")
    if not 0 < similarity <= 1:
        raise SkillError(f"similarity: expected a number in (0, 1] or None, got {similarity!r}")
    return float(similarity)


class SkillBank:
    """An append-only, de-duplicated collection of skills, stored as JSONL or held in memory.

    Args:
        path: The bank file, or a run directory (the bank is its ``skills.jsonl``; a path that
            does not exist yet is a directory when it has no suffix); ``None`` for a bank in
            memory only. An existing file is loaded (see :meth:`load`); a missing
            one is created, with its parent folders, on the first :meth:`add`.
        similarity: The Jaccard threshold of the de-duplication rule (module docstring), or
            ``None`` to de-duplicate on :attr:`Skill.key` only.

    Raises:
        SkillError: If the file exists and is not a bank (the message names the line), or
            ``similarity`` is not in ``(0, 1]``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        similarity: float | None = DEFAULT_SIMILARITY,
    ) -> None:
        self._path = _bank_path(path) if path is not None else None
        self._similarity = _check_similarity(similarity)
        self._skills: list[Skill] = []
        self._keys: set[str] = set()
        self._words: list[frozenset[str]] = []
        if self._path is not None and self._path.exists():
            for skill in self._read(self._path):
                self._remember(skill)

    # -- loading ---------------------------------------------------------------------------------

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], *, similarity: float | None = DEFAULT_SIMILARITY
    ) -> SkillBank:
        """Opens an existing bank file (or the ``skills.jsonl`` of a run directory).

        Every line is kept as written (a bank written by :meth:`add` has no duplicates).

        Raises:
            SkillError: The file does not exist or is not a bank: a line that is not JSON or not
                a skill, named by its number (``bank.jsonl:3: ...``).
        """
        where = _bank_path(path)
        if not where.is_file():
            raise SkillError(f"no skill bank at {where}: the file does not exist")
        return cls(where, similarity=similarity)

    @staticmethod
    def _read(path: Path) -> list[Skill]:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise SkillError(f"{path} is not a skill bank: it is not UTF-8 text ({e})") from e
        except OSError as e:
            raise SkillError(f"cannot read the skill bank {path}: {e}") from e
        skills = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                data = json.loads(line)
            except json.JSONDecodeError as e:
                raise SkillError(
                    f"{where}: not a skill bank line (one skill as JSON per line): "
                    f"the line is not JSON ({e})"
                ) from e
            try:
                skills.append(Skill.from_dict(data))
            except SkillError as e:
                raise SkillError(f"{where}: not a skill bank line: {e}") from e
        return skills

    # -- reading ---------------------------------------------------------------------------------

    @property
    def path(self) -> Path | None:
        """The bank file (``None`` for a bank in memory)."""
        return self._path

    @property
    def skills(self) -> tuple[Skill, ...]:
        """The skills, in the order they were added."""
        return tuple(self._skills)

    def __iter__(self) -> Iterator[Skill]:
        return iter(tuple(self._skills))

    def __len__(self) -> int:
        return len(self._skills)

    def __contains__(self, skill: object) -> bool:
        return isinstance(skill, Skill) and self.duplicate_of(skill) is not None

    def __repr__(self) -> str:
        where = str(self._path) if self._path is not None else "memory"
        return f"SkillBank({where!r}, {len(self)} skills)"

    def duplicate_of(self, skill: Skill) -> Skill | None:
        """The skill in the bank that ``skill`` is a near-duplicate of, or ``None``."""
        if skill.key in self._keys:
            return next(s for s in self._skills if s.key == skill.key)
        if self._similarity is None:
            return None
        words = skill_words(skill)
        for kept, kept_words in zip(self._skills, self._words, strict=True):
            if kept.kind != skill.kind:
                continue
            union = words | kept_words
            if union and len(words & kept_words) / len(union) >= self._similarity:
                return kept
        return None

    def filter(
        self,
        *,
        kind: str | None = None,
        bridge: str | None = None,
        harnessed: bool | None = None,
    ) -> SkillBank:
        """A bank in memory with the skills that match every given criterion.

        Args:
            kind: ``"strategy"`` or ``"pitfall"``.
            bridge: The source episode's bridge.
            harnessed: ``True`` for skills from harnessed envs, ``False`` for original ones.

        Raises:
            SkillError: If ``kind`` is not a skill kind.
        """
        if kind is not None and kind not in SKILL_KINDS:
            raise SkillError(f"kind: expected one of {SKILL_KINDS}, got {kind!r}")
        picked = SkillBank(similarity=self._similarity)
        for skill in self._skills:
            origin = skill.provenance
            if (
                (kind is None or skill.kind == kind)
                and (bridge is None or origin.bridge == bridge)
                and (harnessed is None or origin.harnessed == harnessed)
            ):
                picked._remember(skill)
        return picked

    # -- writing ---------------------------------------------------------------------------------

    def add(self, skill: Skill) -> bool:
        """Appends ``skill`` unless the bank holds a near-duplicate of it.

        Returns:
            Whether it was added.

        Raises:
            SkillError: If ``skill`` is not a :class:`Skill`, or the file cannot be written.
        """
        if not isinstance(skill, Skill):
            raise SkillError(f"expected a Skill, got {type(skill).__name__}")
        if self.duplicate_of(skill) is not None:
            return False
        if self._path is not None:
            line = json.dumps(skill.to_dict(), ensure_ascii=False, allow_nan=False) + "\n"
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                with self._path.open("a", encoding="utf-8") as out:
                    out.write(line)
                    out.flush()
                    os.fsync(out.fileno())
            except OSError as e:
                raise SkillError(f"cannot write the skill bank {self._path}: {e}") from e
        self._remember(skill)
        return True

    def extend(self, skills: Iterable[Skill]) -> int:
        """Adds each skill in turn (see :meth:`add`); returns how many were added."""
        return sum(self.add(skill) for skill in skills)

    def merge(self, other: SkillBank | Iterable[Skill]) -> int:
        """Adds the skills of another bank (provenance kept as is), skipping near-duplicates.

        Returns:
            How many skills were added.
        """
        return self.extend(list(other))

    def _remember(self, skill: Skill) -> None:
        self._skills.append(skill)
        self._keys.add(skill.key)
        self._words.append(skill_words(skill))
