"""EnvRigger's graph end to end, offline: topology, the heuristic rig, approval, subgraphs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command

from envharness import RiggerError
from envharness.graph import RiggerContext, build_rigger
from envharness.graph.outputs import accepted_path, task_filename
from envharness.harness.spec import BridgeSpec, HarnessSpec

ROOT = Path(__file__).resolve().parents[2]
TASK = "1-1-1-8"


def start(task_id: str = TASK) -> dict:
    return {"task_id": task_id, "base_spec": HarnessSpec(BridgeSpec("toy24", task_id)).to_dict()}


def config(thread: str = TASK) -> dict:
    return {"configurable": {"thread_id": thread}}


def test_topology_snapshot():
    mermaid = build_rigger().get_graph().draw_mermaid()
    for edge in (
        "__start__ --> observer",
        "observer --> diagnoser",
        "diagnoser --> writer",
        "writer --> validator",
        "validator -.-> writer",
        "validator -.-> approval",
        "validator -.-> recorder",
        "approval -.-> writer",
        "approval -.-> recorder",
        "recorder --> __end__",
    ):
        assert edge in mermaid, mermaid


def test_langgraph_json_points_at_the_compiled_graph():
    spec = json.loads((ROOT / "langgraph.json").read_text())
    path, _, attr = spec["graphs"]["rigger"].partition(":")
    assert (ROOT / path).exists()
    import envharness.graph.rigger as module

    assert attr == "graph" and module.graph.get_graph().nodes.keys() >= {"observer", "validator"}


def test_heuristic_rig_reaches_a_band(tmp_path):
    context = RiggerContext(run_dir=str(tmp_path), policy="oracle:0.5", objective="sr:0.4-0.6")
    graph = build_rigger(checkpointer=InMemorySaver())
    output = graph.invoke(start(), config(), context=context)
    state = graph.get_state(config()).values  # the whole state; the output is a subset
    assert output["status"] == "accepted", output["attempts"][-1]["verdict"]
    assert "baseline" not in output and "settings" not in output
    assert 0.4 <= state["attempts"][-1]["verdict"]["stats"]["success_rate"] <= 0.6
    assert len(state["baseline"]) == 5
    assert state["rollouts"] >= 5 + 1
    saved = HarnessSpec.from_json(accepted_path(tmp_path, TASK).read_text())
    assert saved.lineage.task == TASK and saved.lineage.policy == "oracle:0.5"
    assert saved.lineage.validation["objective"] == "sr:0.4-0.6"
    assert saved.components, "the accepted harness changes the task"
    saved.build().close()
    # Every trajectory the state refers to is in the run's store.
    from envharness.graph.context import open_store

    store = open_store(tmp_path)
    keys = state["baseline"] + [k for a in state["attempts"] for k in a["trajectories"]]
    assert all(store.has(key) for key in keys)


def test_a_band_the_baseline_already_meets_is_accepted_without_components(tmp_path):
    context = RiggerContext(run_dir=str(tmp_path), policy="oracle:1.0", objective="sr:0.8-1.0")
    graph = build_rigger(checkpointer=InMemorySaver())
    graph.invoke(start(), config(), context=context)
    state = graph.get_state(config()).values
    assert state["diagnosis"]["direction"] == "none"
    assert state["status"] == "accepted"
    assert state["accepted_spec"]["components"] == []
    # Confirmed on fresh seeds, never on the baseline that diagnosed it as on target.
    assert state["rollouts"] > 5
    baseline_seeds = set(range(state["seeds"][0], state["seeds"][0] + 5))
    confirmation = state["attempts"][-1]["verdict"]["seeds"]
    assert confirmation and not baseline_seeds & set(confirmation)
    assert len(state["seeds"]) == len(set(state["seeds"])) == state["rollouts"]
    validation = state["accepted_spec"]["lineage"]["validation"]
    assert validation["judgement"]["probability"] >= 0.8
    assert validation["seeds"] == sorted(state["seeds"])


def test_rejects_when_iterations_run_out(tmp_path):
    # A random policy never solves Toy24: no harness reaches 90-100% within one iteration.
    context = RiggerContext(
        run_dir=str(tmp_path), policy="random", objective="sr:0.9-1.0", max_iterations=1
    )
    state = build_rigger().invoke(start(), config(), context=context)
    assert state["status"] == "rejected"
    assert "no iterations left" in state["attempts"][-1]["verdict"]["reason"]
    rejected = json.loads((tmp_path / "rejected" / task_filename(TASK)).read_text())
    assert rejected["attempts"] and rejected["reason"].endswith("(no iterations left: 1/1)")


def test_human_approval_interrupts_and_resumes(tmp_path):
    context = RiggerContext(
        run_dir=str(tmp_path), policy="oracle:0.5", objective="sr:0.4-0.6", require_approval=True
    )
    graph = build_rigger(checkpointer=InMemorySaver())
    first = graph.invoke(start(), config(), context=context)
    pending = first["__interrupt__"][0].value
    assert pending["task_id"] == TASK and pending["verdict"]["decision"] == "accept"
    assert not accepted_path(tmp_path, TASK).exists()
    done = graph.invoke(Command(resume=True), config(), context=context)
    assert done["status"] == "accepted"
    assert accepted_path(tmp_path, TASK).exists()


def test_human_refusal_sends_the_writer_back(tmp_path):
    context = RiggerContext(
        run_dir=str(tmp_path), policy="oracle:0.5", objective="sr:0.4-0.6", require_approval=True
    )
    graph = build_rigger(checkpointer=InMemorySaver())
    graph.invoke(start(), config(), context=context)
    after = graph.invoke(Command(resume=False), config(), context=context)
    refused = [a for a in after["attempts"] if "a human refused" in a["verdict"]["reason"]]
    assert refused and after["iteration"] >= 2


def test_embeds_as_a_subgraph(tmp_path):
    rigger = build_rigger()

    def prepare(state: dict) -> dict:
        return start(state["task_id"])

    parent = StateGraph(dict, context_schema=RiggerContext)
    parent.add_node("prepare", prepare)
    parent.add_node("rig", rigger)
    parent.add_edge(START, "prepare")
    parent.add_edge("prepare", "rig")
    app = parent.compile(checkpointer=InMemorySaver())
    context = RiggerContext(run_dir=str(tmp_path), policy="oracle:1.0", objective="sr:0.8-1.0")
    out = app.invoke({"task_id": TASK}, config("parent"), context=context)
    assert out["status"] == "accepted"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"k_observe": 0}, "k_observe to be a positive int"),
        ({"objective": "sr:0.7-0.2"}, "0 <= low <= high"),
        ({"objective": "sr:2-3"}, "lies in \\[0, 1\\]"),
        ({"objective": "steps:5"}, "malformed band"),
        ({"objective": "the agent never undoes"}, "heuristic designer cannot target"),
        ({"policy": "telepathy"}, "unknown policy"),
    ],
)
def test_bad_settings(tmp_path, kwargs, match):
    with pytest.raises(Exception, match=match) as info:
        RiggerContext(run_dir=str(tmp_path), **kwargs)
    assert isinstance(info.value, RiggerError) or "policy" in kwargs
