"""Retrieval: the top-k skills of a bank for a task, by its instruction.

- :class:`BM25Retriever` (the default): lexical BM25 with the maintained ``bm25s`` library
  (``pip install 'envharness[skills]'``) over each skill's title, when, principle, steps and tags.
- :class:`EmbeddingRetriever`: cosine similarity over any LangChain ``Embeddings`` (e.g.
  ``GoogleGenerativeAIEmbeddings``); the skills are embedded once, when it is built.

Both return ``min(k, len(bank))`` skills, best first, ties broken by bank order, so retrieval is
deterministic. Anything with ``retrieve(instruction, k) -> list[Skill]`` is a
:class:`SkillRetriever`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from envharness.errors import DependencyNotInstalled
from envharness.skills.bank import SkillBank
from envharness.skills.records import Skill, SkillError

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

__all__ = [
    "BM25Retriever",
    "EmbeddingRetriever",
    "SkillRetriever",
    "bank_digest",
    "load_skills",
    "skill_document",
]

SkillSource = Iterable[Skill] | str | os.PathLike[str]
"""What the retrievers take: skills (a list, a ``SkillBank``) or the path of a JSONL bank."""


@runtime_checkable
class SkillRetriever(Protocol):
    """Picks the skills a policy is shown for a task."""

    def retrieve(self, instruction: str, k: int) -> list[Skill]:
        """The (at most) ``k`` skills that fit ``instruction`` best, best first."""
        ...


def load_skills(source: SkillSource) -> list[Skill]:
    """The skills of ``source``: a path to a JSONL bank, a ``SkillBank`` or any iterable of Skill.

    A path is read with :meth:`~envharness.skills.bank.SkillBank.load` (a run directory: its
    ``skills.jsonl``).

    Raises:
        SkillError: If the file is missing or is not a bank (naming the line), or an item is not
            a :class:`Skill`.

    Example:
        >>> load_skills([])
        []
    """
    if isinstance(source, str | os.PathLike):
        return list(SkillBank.load(source))
    if isinstance(source, Skill) or not isinstance(source, Iterable):
        raise SkillError(
            "expected skills as a list of Skill, a SkillBank or the path of a JSONL bank, got "
            f"{type(source).__name__}"
        )
    skills = list(source)
    for index, skill in enumerate(skills):
        if not isinstance(skill, Skill):
            raise SkillError(f"skills[{index}]: expected a Skill, got {type(skill).__name__}")
    return skills


def skill_document(skill: Skill) -> str:
    r"""The text a skill is retrieved by: its title, when, principle, steps and tags.

    Example:
        >>> from envharness.skills.records import Provenance
        >>> skill_document(Skill("Undo early", "a number is stuck", "Undo and retry.",
        ...     ("undo",), "pitfall", Provenance("toy24", "t", "s", False, False), ("toy24",)))
        'Undo early\na number is stuck\nUndo and retry.\nundo\ntoy24'
    """
    return "\n".join((skill.title, skill.when, skill.principle, *skill.steps, *skill.tags))


def bank_digest(skills: Sequence[Skill]) -> str:
    """A short digest of the skills, in order: it changes when the bank does.

    Example:
        >>> bank_digest([])
        'e3b0c442'
    """
    digest = hashlib.sha256()
    for skill in skills:
        digest.update(json.dumps(skill.to_dict(), sort_keys=True).encode())
        digest.update(b"\n")
    return digest.hexdigest()[:8]


def _check_query(instruction: object, k: object) -> int:
    if not isinstance(instruction, str):
        raise SkillError(f"instruction: expected a str, got {type(instruction).__name__}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise SkillError(f"k: expected a positive int (the number of skills), got {k!r}")
    return k


def _top(skills: Sequence[Skill], scores: Sequence[float], k: int) -> list[Skill]:
    """The ``k`` best-scored skills, ties broken by bank order."""
    order = sorted(range(len(skills)), key=lambda i: (-scores[i], i))
    return [skills[i] for i in order[:k]]


class BM25Retriever:
    """BM25 over the skills' :func:`skill_document` texts, with ``bm25s``.

    Words are lower-cased and English stop words dropped (``bm25s.tokenize``); no stemming.

    Args:
        skills: The bank: a list of Skill, a ``SkillBank`` or the path of a JSONL bank.
        k1: BM25's term-frequency saturation.
        b: BM25's length normalization.

    Raises:
        DependencyNotInstalled: If ``bm25s`` is missing (``envharness[skills]``).
        SkillError: As for :func:`load_skills`.

    Example:
        >>> from envharness.skills.records import Provenance
        >>> origin = Provenance("alfworld", "t", "s", False, True)
        >>> bank = [Skill("Heat in the microwave", "the task says heat", "Heat it first.",
        ...               ("take the object", "heat it with the microwave"), "strategy", origin),
        ...         Skill("Clean at the sink", "the task says clean", "Clean it first.",
        ...               ("take the object", "clean it with the sinkbasin"), "strategy", origin)]
        >>> [s.title for s in BM25Retriever(bank).retrieve("clean a mug", k=1)]
        ['Clean at the sink']
    """

    def __init__(self, skills: SkillSource, *, k1: float = 1.5, b: float = 0.75) -> None:
        try:
            import bm25s
        except ImportError as e:
            raise DependencyNotInstalled("bm25s", "skills", purpose="BM25 skill retrieval") from e
        self.skills: tuple[Skill, ...] = tuple(load_skills(skills))
        self.digest = bank_digest(self.skills)
        self._index: Any = None
        if self.skills:
            tokens = bm25s.tokenize(
                [skill_document(s) for s in self.skills], stopwords="en", show_progress=False
            )
            self._index = bm25s.BM25(k1=k1, b=b)
            self._index.index(tokens, show_progress=False)

    def retrieve(self, instruction: str, k: int) -> list[Skill]:
        """The ``min(k, len(bank))`` skills with the highest BM25 scores, best first.

        Raises:
            SkillError: If ``k`` is not a positive int or ``instruction`` not a str.
        """
        k = _check_query(instruction, k)
        if not self.skills:
            return []
        import bm25s

        (words,) = bm25s.tokenize(
            [instruction], stopwords="en", return_ids=False, show_progress=False
        )
        if words:
            scores = [float(score) for score in self._index.get_scores(list(words))]
        else:
            scores = [0.0] * len(self.skills)
        return _top(self.skills, scores, k)

    def describe(self) -> str:
        """``bm25@DIGEST``: the method and the bank's :func:`bank_digest`."""
        return f"bm25@{self.digest}"

    def __len__(self) -> int:
        return len(self.skills)

    def __repr__(self) -> str:
        return f"BM25Retriever({len(self.skills)} skills, digest={self.digest!r})"


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    if norm == 0.0:
        return 0.0
    return math.fsum(x * y for x, y in zip(a, b, strict=True)) / norm


class EmbeddingRetriever:
    """Cosine similarity between the instruction and each skill, with LangChain ``Embeddings``.

    The skills' :func:`skill_document` texts are embedded once, here, with
    ``embed_documents``; each :meth:`retrieve` embeds the instruction with ``embed_query``.

    Args:
        skills: The bank: a list of Skill, a ``SkillBank`` or the path of a JSONL bank.
        embeddings: Any ``langchain_core.embeddings.Embeddings``.

    Raises:
        SkillError: As for :func:`load_skills`; if ``embeddings`` has no ``embed_documents``
            and ``embed_query``, or it fails or returns vectors of the wrong number or size.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> retriever = EmbeddingRetriever([], DeterministicFakeEmbedding(size=8))
        >>> retriever.retrieve("heat an egg", k=3)
        []
    """

    def __init__(self, skills: SkillSource, embeddings: Embeddings) -> None:
        if not all(
            callable(getattr(embeddings, name, None)) for name in ("embed_documents", "embed_query")
        ):
            raise SkillError(
                "embeddings: expected a LangChain Embeddings (embed_documents and embed_query), "
                f"got {type(embeddings).__name__}"
            )
        self.embeddings = embeddings
        self.skills: tuple[Skill, ...] = tuple(load_skills(skills))
        self.digest = bank_digest(self.skills)
        self.vectors: list[list[float]] = []
        if self.skills:
            texts = [skill_document(s) for s in self.skills]
            vectors = self._embed(lambda: self.embeddings.embed_documents(texts))
            if len(vectors) != len(texts):
                raise SkillError(
                    f"the embeddings {self._name()} returned {len(vectors)} vectors for "
                    f"{len(texts)} skills"
                )
            self.vectors = [self._vector(v) for v in vectors]
            if len({len(v) for v in self.vectors}) > 1:
                raise SkillError(f"the embeddings {self._name()} returned vectors of mixed sizes")

    def retrieve(self, instruction: str, k: int) -> list[Skill]:
        """The ``min(k, len(bank))`` skills most similar to ``instruction``, best first.

        Raises:
            SkillError: If ``k`` is not a positive int, ``instruction`` not a str, or the
                embeddings fail.
        """
        k = _check_query(instruction, k)
        if not self.skills:
            return []
        query = self._vector(self._embed(lambda: self.embeddings.embed_query(instruction)))
        if len(query) != len(self.vectors[0]):
            raise SkillError(
                f"the embeddings {self._name()} returned a query vector of size {len(query)}, "
                f"the skills' have size {len(self.vectors[0])}"
            )
        return _top(self.skills, [_cosine(query, v) for v in self.vectors], k)

    def describe(self) -> str:
        """``embeddings(NAME)@DIGEST``: the embeddings' model and the bank's digest."""
        return f"embeddings({self._name()})@{self.digest}"

    def __len__(self) -> int:
        return len(self.skills)

    def __repr__(self) -> str:
        return f"EmbeddingRetriever({len(self.skills)} skills, {self._name()})"

    def _name(self) -> str:
        for attribute in ("model", "model_name"):
            value = getattr(self.embeddings, attribute, None)
            if isinstance(value, str) and value:
                return value
        return type(self.embeddings).__name__

    def _embed(self, call: Any) -> Any:
        try:
            return call()
        except Exception as e:
            raise SkillError(
                f"the embeddings {self._name()} failed: {type(e).__name__}: {e}"
            ) from e

    def _vector(self, value: Any) -> list[float]:
        try:
            vector = [float(x) for x in value]
        except (TypeError, ValueError) as e:
            raise SkillError(f"the embeddings {self._name()} returned a non-vector: {e}") from e
        if not vector:
            raise SkillError(f"the embeddings {self._name()} returned an empty vector")
        return vector
