"""SkillBank: append-only JSONL, de-duplication, load errors naming the line, merge, filter."""

from __future__ import annotations

import json

import pytest

from envharness.errors import EnvHarnessError
from envharness.skills import BANK_FILE, Provenance, Skill, SkillBank, SkillError
from envharness.skills.bank import word_similarity


def origin(task="4-4-10-10", bridge="toy24", harnessed=False, success=True) -> Provenance:
    return Provenance(bridge, task, "spec1", harnessed, success, '["spec1","oracle:1",0]')


def make(title="Multiply first", steps=("combine the two largest numbers with *",), **kw):
    kind = kw.pop("kind", "strategy")
    principle = kw.pop("principle", "Make 24 from a product.")
    return Skill(title, "two large numbers are left", principle, tuple(steps), kind, origin(**kw))


def test_add_appends_one_json_line_per_skill_and_reloads(tmp_path):
    bank = SkillBank(tmp_path)
    assert bank.path == tmp_path / BANK_FILE and len(bank) == 0
    assert not bank.path.exists()  # created on the first add
    first, second = make(), make("Undo a dead end", ["undo()"], principle="Take it back.")
    assert bank.add(first) and bank.add(second)
    lines = bank.path.read_text().splitlines()
    assert [json.loads(line) for line in lines] == [first.to_dict(), second.to_dict()]
    again = SkillBank.load(tmp_path)
    assert list(again) == [first, second] and len(again) == 2
    assert SkillBank.load(bank.path).skills == (first, second)


def test_same_key_is_a_duplicate_first_provenance_kept(tmp_path):
    bank = SkillBank(tmp_path / "run" / "bank.jsonl")  # parent folders are created
    original = make()
    assert bank.add(original)
    shouted = make("MULTIPLY, first!", task="1-1-4-6")  # same key: case and punctuation only
    assert shouted.key == original.key
    assert not bank.add(shouted)
    assert bank.duplicate_of(shouted) is original and shouted in bank
    assert len(SkillBank.load(bank.path)) == 1
    assert list(bank)[0].provenance.task_id == "4-4-10-10"


def test_similar_words_are_duplicates_unless_similarity_is_off(tmp_path):
    long_steps = [f"step number {i} of the long procedure" for i in range(10)]
    a = make("Long procedure", long_steps)
    b = make("Long procedure", [*long_steps[:-1], "step number 9 of the long walk"])
    assert a.key != b.key and word_similarity(a, b) >= 0.9
    bank = SkillBank(tmp_path)
    assert bank.add(a) and not bank.add(b)
    loose = SkillBank(tmp_path / "other", similarity=None)
    assert loose.add(a) and loose.add(b)
    # rule 2 compares skills of one kind only (rule 1, the same key, holds across kinds)
    assert bank.add(make("Long procedure", b.steps, kind="pitfall", success=False))
    assert not bank.add(make("Long procedure", long_steps, kind="pitfall", success=False))
    assert bank.add(make("Different thing", ["go north"]))


def test_merge_keeps_provenance_and_deduplicates(tmp_path):
    mine = SkillBank(tmp_path / "mine")
    theirs = SkillBank()  # in memory
    kept = make()
    mine.add(kept)
    new = make("Undo a dead end", ["undo()"], principle="Take it back.", harnessed=True)
    theirs.extend([make("multiply FIRST", task="9-9-9-9"), new])
    assert mine.merge(theirs) == 1
    assert list(mine) == [kept, new]
    assert list(SkillBank.load(mine.path))[1].provenance == new.provenance
    assert mine.merge([new, kept]) == 0


def test_filter_by_kind_bridge_and_harnessed():
    bank = SkillBank()
    toy = make()
    pit = make("Loops", ["stop"], kind="pitfall", success=False, harnessed=True)
    alf = make("Go to it", ["go to <receptacle>"], bridge="alfworld", task="t")
    bank.extend([toy, pit, alf])
    assert list(bank.filter(kind="strategy")) == [toy, alf]
    assert list(bank.filter(bridge="alfworld")) == [alf]
    assert list(bank.filter(harnessed=True)) == [pit]
    assert list(bank.filter(harnessed=False, bridge="toy24")) == [toy]
    assert bank.filter(kind="pitfall").path is None
    with pytest.raises(SkillError, match="kind: expected one of"):
        bank.filter(kind="trick")


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        (["not json at all"], r":1: not a skill bank line .*not JSON"),
        (["{}", ""], r":1: not a skill bank line: skill: expected 'title'"),
        ([json.dumps({"task_id": "t", "bridge": "toy24", "steps": []})], r":1: not a skill bank"),
        (
            [json.dumps(make().to_dict()), "", "[1, 2]"],
            r":3: not a skill bank line: skill: expected",
        ),
        (
            [json.dumps({**make().to_dict(), "provenance": {"bridge": "x"}})],
            r":1: not a skill bank line: provenance",
        ),
    ],
)
def test_a_file_that_is_not_a_bank_names_the_line(tmp_path, lines, problem):
    path = tmp_path / "bank.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SkillError, match=problem) as caught:
        SkillBank.load(path)
    assert str(path) in str(caught.value)
    assert isinstance(caught.value, EnvHarnessError)
    with pytest.raises(SkillError, match=problem):
        SkillBank(path)  # opening it for appending refuses it too


def test_a_trajectory_store_is_not_a_bank(tmp_path):
    from envharness.rollout import RunStore, Trajectory

    with RunStore(tmp_path) as store:
        store.add(Trajectory("4-4-10-10", "toy24", "ab12", {}, 0, "oracle:1"))
    files = [p for p in tmp_path.rglob("*.jsonl")]
    assert files
    with pytest.raises(SkillError, match=r":1: not a skill bank line"):
        SkillBank.load(files[0])


def test_missing_binary_and_bad_arguments(tmp_path):
    with pytest.raises(SkillError, match="no skill bank at .*does not exist"):
        SkillBank.load(tmp_path / "nowhere.jsonl")
    binary = tmp_path / "bank.bin"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(SkillError, match="not a skill bank: it is not UTF-8"):
        SkillBank.load(binary)
    with pytest.raises(SkillError, match=r"similarity: expected a number in \(0, 1\]"):
        SkillBank(similarity=0)
    with pytest.raises(SkillError, match="expected a Skill, got dict"):
        SkillBank().add(make().to_dict())
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert len(SkillBank.load(empty)) == 0
