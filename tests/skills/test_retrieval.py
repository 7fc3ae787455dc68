from __future__ import annotations

import json
import pickle

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from envharness.skills.records import Provenance, Skill, SkillError
from envharness.skills.retrieval import (
    BM25Retriever,
    EmbeddingRetriever,
    SkillRetriever,
    bank_digest,
    load_skills,
    skill_document,
)

pytest.importorskip("bm25s")


def skill(title, when, principle, steps, tags=(), kind="strategy") -> Skill:
    return Skill(
        title,
        when,
        principle,
        tuple(steps),
        kind,
        Provenance("alfworld", f"task-{title}", "spec0", False, kind == "strategy"),
        tuple(tags),
    )


CLEAN = skill(
    "Clean at the sinkbasin before placing",
    "the task asks to put a clean object somewhere",
    "Cleaning happens at the sinkbasin; take the object there first.",
    ["go to the object and take it", "go to sinkbasin 1 and clean it", "go to the target, put it"],
    tags=["clean", "pick_clean_then_place"],
)
HEAT = skill(
    "Heat with the microwave",
    "the task asks to heat something",
    "Heating is done with the microwave.",
    ["find and take the object", "go to microwave 1 and heat it", "put it in the target"],
    tags=["heat", "pick_heat_then_place"],
)
LOOK = skill(
    "Examine under the desklamp",
    "the task asks to look at an object in light",
    "Take the object to a desklamp and turn it on.",
    ["take the object", "go to desklamp 1", "use desklamp 1"],
    tags=["look_at_obj_in_light"],
)
PITFALL = skill(
    "Do not repeat a rejected action",
    "an action was answered 'Nothing happens'",
    "Read the admissible commands instead of retrying.",
    ["look at the admissible commands", "pick a different one"],
    kind="pitfall",
)
BANK = [HEAT, LOOK, CLEAN, PITFALL]


def write_bank(path, skills) -> None:
    path.write_text("".join(json.dumps(s.to_dict()) + "\n" for s in skills))


# -- BM25 ------------------------------------------------------------------------------------


def test_bm25_ranks_the_skill_of_the_matching_task_type_first():
    retriever = BM25Retriever(BANK)
    assert isinstance(retriever, SkillRetriever)
    assert retriever.retrieve("Your task is to: put a clean mug in coffeemachine.", 1) == [CLEAN]
    assert retriever.retrieve("Your task is to: heat some egg and put it in garbagecan.", 1) == [
        HEAT
    ]
    assert retriever.retrieve("look at the cd under the desklamp", 2)[0] == LOOK


def test_bm25_returns_all_for_a_large_k_and_breaks_ties_by_bank_order():
    retriever = BM25Retriever(BANK)
    assert retriever.retrieve("heat an egg", 10)[0] == HEAT
    assert sorted(s.title for s in retriever.retrieve("heat an egg", 10)) == sorted(
        s.title for s in BANK
    )
    # no known word (or only stop words): every score ties, so the bank's order decides
    assert retriever.retrieve("zzz qqq", 3) == BANK[:3]
    assert retriever.retrieve("the a of", 4) == BANK
    assert retriever.retrieve("", 2) == BANK[:2]
    twins = [CLEAN, HEAT, CLEAN]
    assert BM25Retriever(twins).retrieve("clean", 3) == [CLEAN, CLEAN, HEAT]


def test_bm25_indexes_tags_when_and_steps():
    assert BM25Retriever(BANK).retrieve("look_at_obj_in_light", 1) == [LOOK]
    assert BM25Retriever(BANK).retrieve("admissible", 1) == [PITFALL]
    assert "pick_clean_then_place" in skill_document(CLEAN)
    assert "go to sinkbasin 1 and clean it" in skill_document(CLEAN)


def test_bm25_is_deterministic_and_pickles():
    query = "put a clean mug in the coffeemachine"
    first = BM25Retriever(BANK).retrieve(query, 4)
    assert all(BM25Retriever(BANK).retrieve(query, 4) == first for _ in range(3))
    copy = pickle.loads(pickle.dumps(BM25Retriever(BANK)))
    assert copy.retrieve(query, 4) == first


def test_an_empty_bank_retrieves_nothing():
    assert BM25Retriever([]).retrieve("heat an egg", 3) == []
    assert len(BM25Retriever([])) == 0


@pytest.mark.parametrize("k", [0, -1, 1.5, True, "3", None])
def test_bad_k_is_a_skill_error(k):
    with pytest.raises(SkillError, match="k: expected a positive int"):
        BM25Retriever(BANK).retrieve("heat an egg", k)
    with pytest.raises(SkillError, match="k: expected a positive int"):
        BM25Retriever([]).retrieve("heat an egg", k)


def test_a_bad_instruction_is_a_skill_error():
    with pytest.raises(SkillError, match="instruction: expected a str, got int"):
        BM25Retriever(BANK).retrieve(3, 1)  # type: ignore[arg-type]


def test_describe_names_the_method_and_the_bank():
    retriever = BM25Retriever(BANK)
    assert retriever.describe() == f"bm25@{bank_digest(BANK)}"
    assert bank_digest(BANK) != bank_digest(BANK[:3]) and len(bank_digest(BANK)) == 8
    assert "4 skills" in repr(retriever)


# -- banks by path ---------------------------------------------------------------------------


def test_a_bank_file_is_read(tmp_path):
    path = tmp_path / "skills.jsonl"
    write_bank(path, BANK)
    assert load_skills(path) == BANK
    assert load_skills(str(path)) == BANK
    assert BM25Retriever(path).retrieve("heat an egg", 1) == [HEAT]
    assert load_skills(tmp_path) == BANK  # a run directory: its skills.jsonl


def test_a_file_that_is_not_a_bank_is_a_clear_error(tmp_path):
    trajectories = tmp_path / "trajectories.jsonl"
    trajectories.write_text(json.dumps({"task_id": "t", "steps": []}) + "\n")
    with pytest.raises(SkillError, match=r"trajectories.jsonl:1: not a skill bank line"):
        BM25Retriever(trajectories)
    text = tmp_path / "notes.txt"
    text.write_text("heat the egg first\n")
    with pytest.raises(SkillError, match="notes.txt:1: not a skill bank line.*not JSON"):
        load_skills(text)
    with pytest.raises(SkillError, match="no skill bank at"):
        load_skills(tmp_path / "missing.jsonl")


def test_items_that_are_not_skills_are_refused():
    with pytest.raises(SkillError, match=r"skills\[1\]: expected a Skill, got str"):
        load_skills([CLEAN, "heat first"])
    with pytest.raises(SkillError, match="expected skills as a list of Skill"):
        load_skills(CLEAN)  # type: ignore[arg-type]
    with pytest.raises(SkillError, match="expected skills as a list of Skill"):
        load_skills(3)  # type: ignore[arg-type]


# -- embeddings ------------------------------------------------------------------------------


class KeywordEmbeddings(Embeddings):
    """Counts of a few words: a deterministic stand-in for a real embedding model."""

    words = ("clean", "sinkbasin", "heat", "microwave", "desklamp", "light")

    def __init__(self) -> None:
        self.documents: list[list[str]] = []
        self.queries: list[str] = []

    def _vector(self, text: str) -> list[float]:
        lowered = text.lower()
        return [float(lowered.count(word)) for word in self.words]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents.append(list(texts))
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return self._vector(text)


def test_embeddings_rank_by_cosine_and_embed_the_skills_once():
    embeddings = KeywordEmbeddings()
    retriever = EmbeddingRetriever(BANK, embeddings)
    assert isinstance(retriever, SkillRetriever)
    assert retriever.retrieve("put a clean mug in the coffeemachine", 1) == [CLEAN]
    assert retriever.retrieve("heat an egg", 2)[0] == HEAT
    assert retriever.retrieve("examine the cd in the light", 1) == [LOOK]
    assert len(embeddings.documents) == 1 and len(embeddings.documents[0]) == len(BANK)
    assert embeddings.queries[0] == "put a clean mug in the coffeemachine"
    # a query vector of zeros ties every skill: bank order
    assert retriever.retrieve("zzz", 4) == BANK
    assert retriever.describe().startswith("embeddings(KeywordEmbeddings)@")


def test_embeddings_with_langchain_fake_embeddings_are_deterministic():
    retriever = EmbeddingRetriever(BANK, DeterministicFakeEmbedding(size=16))
    first = retriever.retrieve("heat an egg", 4)
    assert sorted(s.title for s in first) == sorted(s.title for s in BANK)
    assert (
        EmbeddingRetriever(BANK, DeterministicFakeEmbedding(size=16)).retrieve("heat an egg", 4)
        == first
    )
    assert retriever.retrieve("heat an egg", 9) == first
    assert EmbeddingRetriever([], DeterministicFakeEmbedding(size=16)).retrieve("x", 2) == []


def test_embedding_errors_are_skill_errors():
    class Failing(KeywordEmbeddings):
        def embed_query(self, text):
            raise TimeoutError("the provider timed out")

    class Short(KeywordEmbeddings):
        def embed_documents(self, texts):
            return [[1.0]]

    retriever = EmbeddingRetriever(BANK, Failing())
    with pytest.raises(SkillError, match="failed: TimeoutError: the provider timed out"):
        retriever.retrieve("heat an egg", 1)
    with pytest.raises(SkillError, match="returned 1 vectors for 4 skills"):
        EmbeddingRetriever(BANK, Short())
    with pytest.raises(SkillError, match="expected a LangChain Embeddings"):
        EmbeddingRetriever(BANK, object())  # type: ignore[arg-type]
    with pytest.raises(SkillError, match="k: expected a positive int"):
        EmbeddingRetriever(BANK, KeywordEmbeddings()).retrieve("heat", 0)


def test_a_skill_bank_object_is_a_bank(tmp_path):
    from envharness.skills.bank import SkillBank

    bank = SkillBank(tmp_path)
    bank.extend(BANK)
    assert BM25Retriever(bank).retrieve("heat an egg", 1) == [HEAT]
    assert BM25Retriever(SkillBank.load(tmp_path)).skills == tuple(bank)
    assert BM25Retriever(SkillBank()).retrieve("heat an egg", 2) == []
