"""Skill learning: distil skills from (rigged) episodes, keep them in banks, retrieve them.

- :mod:`~envharness.skills.records`: ``Skill`` and its ``Provenance``.
- :mod:`~envharness.skills.bank`: ``SkillBank``, skills as de-duplicated JSONL in a run directory.
- :mod:`~envharness.skills.extract`: ``extract_skills(trajectories, extractor)``.
- :mod:`~envharness.skills.offline`: ``OfflineExtractor`` (the default, no model).
- :mod:`~envharness.skills.model_extractor`: ``ModelExtractor`` over any LangChain chat model
  (LangChain is imported only when it runs).
- :mod:`~envharness.skills.retrieval`: ``BM25Retriever`` (bm25s) and ``EmbeddingRetriever`` (any
  LangChain ``Embeddings``): the top-k skills for a task's instruction.
"""

from __future__ import annotations

from envharness.skills.bank import BANK_FILE, SkillBank
from envharness.skills.extract import Extractor, extract_skills, harness_target, provenance_of
from envharness.skills.model_extractor import ModelExtractor
from envharness.skills.offline import Abstraction, OfflineExtractor
from envharness.skills.records import SKILL_KINDS, Provenance, Skill, SkillError, SkillKind
from envharness.skills.retrieval import (
    BM25Retriever,
    EmbeddingRetriever,
    SkillRetriever,
    bank_digest,
    load_skills,
    skill_document,
)

__all__ = [
    "BANK_FILE",
    "SKILL_KINDS",
    "Abstraction",
    "Extractor",
    "ModelExtractor",
    "OfflineExtractor",
    "Provenance",
    "Skill",
    "SkillBank",
    "SkillError",
    "SkillKind",
    "extract_skills",
    "harness_target",
    "provenance_of",
    # retrieval
    "BM25Retriever",
    "EmbeddingRetriever",
    "SkillRetriever",
    "bank_digest",
    "load_skills",
    "skill_document",
]
