"""The approval node: its payload, validated answers, no replays, and one consistent outcome."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from envharness.errors import RiggerError
from envharness.graph import RiggerContext, build_rigger
from envharness.graph.context import open_store
from envharness.graph.nodes.approval import PAYLOAD_KEYS, read_approval
from envharness.graph.outputs import accepted_path, rejected_path, undecided_path
from envharness.harness.spec import BridgeSpec, HarnessSpec

TASK = "4-4-10-10"


def start() -> dict:
    return {"task_id": TASK, "base_spec": HarnessSpec(BridgeSpec("toy24", TASK)).to_dict()}


def config() -> dict:
    return {"configurable": {"thread_id": TASK}}


def approving(tmp_path, **changes) -> RiggerContext:
    values = dict(
        run_dir=str(tmp_path), policy="oracle:1.0", objective="sr:0.8-1.0", require_approval=True
    )
    values.update(changes)
    return RiggerContext(**values)


def outcome_files(tmp_path) -> list[str]:
    paths = {"accepted": accepted_path, "rejected": rejected_path, "undecided": undecided_path}
    return [name for name, path in paths.items() if path(tmp_path, TASK).exists()]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [(True, (True, "")), (False, (False, "")), ({"approved": True, "note": "ok"}, (True, "ok"))],
)
def test_valid_answers(answer, expected) -> None:
    assert read_approval(answer) == expected


@pytest.mark.parametrize("answer", ["yes", 1, None, {"approved": "no"}, {"ok": True}, {}])
def test_anything_else_is_refused(answer) -> None:
    with pytest.raises(RiggerError, match="an approval is True, False or"):
        read_approval(answer)


def test_the_payload_and_an_approval_that_replays_nothing(tmp_path) -> None:
    graph = build_rigger(checkpointer=InMemorySaver())
    context = approving(tmp_path)
    first = graph.invoke(start(), config(), context=context)
    (pending,) = first["__interrupt__"]
    payload = pending.value
    assert tuple(payload) == PAYLOAD_KEYS
    assert payload["verdict"]["decision"] == "accept"
    assert payload["spec"]["lineage"]["task"] == TASK
    assert payload["statistics"]["n"] >= 1
    assert graph.get_state(config()).next == ("approval",)
    assert outcome_files(tmp_path) == [], "nothing is written before the approval"
    stored = len(open_store(tmp_path))

    again = graph.invoke(Command(resume="sure"), config(), context=context)
    (asked,) = again["__interrupt__"]
    assert "an approval is True, False or" in asked.value["error"]
    assert graph.get_state(config()).next == ("approval",), "still paused"
    done = graph.invoke(
        Command(resume={"approved": True, "note": "fine"}), config(), context=context
    )
    assert done["status"] == "accepted"
    assert len(open_store(tmp_path)) == stored, "approving played no rollout"
    assert graph.get_state(config()).values["approval"] == {"approved": True, "note": "fine"}
    assert outcome_files(tmp_path) == ["accepted"]


def test_a_refusal_is_not_an_acceptance(tmp_path) -> None:
    graph = build_rigger(checkpointer=InMemorySaver())
    context = approving(tmp_path, max_iterations=1)
    graph.invoke(start(), config(), context=context)
    done = graph.invoke(
        Command(resume={"approved": False, "note": "too easy"}), config(), context=context
    )
    assert done["status"] == "rejected"
    assert done["attempts"][-1]["verdict"]["decision"] == "reject"
    assert "a human refused the candidate: too easy" in done["reason"]
    assert len(done["attempts"]) == 1, "the refused attempt is replaced, not repeated"
    assert outcome_files(tmp_path) == ["rejected"]


def test_a_fork_leaves_one_consistent_outcome(tmp_path) -> None:
    graph = build_rigger(checkpointer=InMemorySaver())
    context = approving(tmp_path, max_iterations=1)
    graph.invoke(start(), config(), context=context)
    graph.invoke(Command(resume=True), config(), context=context)
    assert outcome_files(tmp_path) == ["accepted"]
    # Time travel: back to before the validator, with no candidate this time.
    before = next(s for s in graph.get_state_history(config()) if s.next == ("validator",))
    forked = graph.update_state(before.config, {"candidate": None})
    out = graph.invoke(None, forked, context=context)
    assert out["status"] == "rejected"
    assert outcome_files(tmp_path) == ["rejected"]
