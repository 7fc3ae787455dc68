"""``rig_many``: tasks fanned out with Send to the rigger subgraph, outcomes gathered (issue 12)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from envharness.bridges.registry import list_tasks
from envharness.errors import RiggerError, UnknownBridgeError
from envharness.graph import RiggerContext
from envharness.graph.outputs import accepted_path, rejected_path
from envharness.graph.rig_many import build_rig_many, merge_outcomes, rig_many
from envharness.graph.settings import RiggerResources
from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.rollout.factory import policy_factory

SETTINGS = {"policy": "oracle:1.0", "objective": "sr:0.8-1.0", "k_observe": 3, "k_validate": 3}
TASKS = list_tasks("toy24")[:2]


def settings(tmp_path: Path, **changes) -> dict:
    return {**SETTINGS, "run_dir": str(tmp_path), **changes}


def config(thread: str = "rig") -> dict:
    return {"configurable": {"thread_id": thread}}


def graph():
    return build_rig_many(checkpointer=InMemorySaver())


def outcome(task_id: str, status: str) -> dict:
    return {"task_id": task_id, "status": status}


def test_merge_outcomes_appends_new_tasks_and_replaces_known_ones() -> None:
    left = [outcome("a", "accepted"), outcome("b", "failed")]
    merged = merge_outcomes(left, [outcome("b", "rejected"), outcome("c", "undecided")])
    assert merged == [outcome("a", "accepted"), outcome("b", "rejected"), outcome("c", "undecided")]
    assert left == [outcome("a", "accepted"), outcome("b", "failed")]  # not changed in place


def test_the_module_graph_is_what_langgraph_json_exposes() -> None:
    root = Path(__file__).resolve().parents[2]
    graphs = json.loads((root / "langgraph.json").read_text())["graphs"]
    assert graphs["rig_many"] == "./graph/rig_many.py:rig_many"
    assert (root / "graph" / "rig_many.py").is_file()
    assert rig_many.checkpointer is None  # the platform supplies one
    assert sorted(rig_many.get_graph().nodes) == [
        "__end__",
        "__start__",
        "plan",
        "rig_task",
        "summary",
    ]
    # Studio's xray view shows the rigger inside rig_task.
    inner = {n for n in rig_many.get_graph(xray=True).nodes if n.startswith("rig_task:")}
    assert inner == {
        f"rig_task:{n}"
        for n in ("observer", "diagnoser", "writer", "validator", "approval", "recorder")
    }


def test_each_task_rigs_in_its_own_checkpoint_namespace(tmp_path) -> None:
    g = graph()
    out = g.invoke({"bridge": "toy24", "tasks": 2}, config(), context=settings(tmp_path))
    assert [r["task_id"] for r in out["results"]] == TASKS
    assert out["counts"] == {"accepted": 2}
    assert set(out) == {"results", "counts"}  # the rigger's keys stay in its subgraph
    for result in out["results"]:
        assert result["status"] == "accepted"
        assert result["reason"].startswith("P(success rate in 0.8-1)")
        path = accepted_path(tmp_path, result["task_id"])
        assert result["accepted_path"] == str(path)
        assert json.loads(path.read_text()) == result["accepted_spec"]
        assert result["accepted_spec"]["bridge"]["fingerprint"]  # the base was pinned
        assert result["baseline_success"] == 1.0 and result["rollouts"] >= 3
    tasks_by_namespace: dict[str, set[str]] = {}
    for saved in g.checkpointer.list(None):
        namespace = saved.config["configurable"]["checkpoint_ns"]
        task = saved.checkpoint["channel_values"].get("task_id")
        if namespace and task:
            tasks_by_namespace.setdefault(namespace, set()).add(task)
    assert all(ns.startswith("rig_task:") for ns in tasks_by_namespace)
    assert sorted(t for tasks in tasks_by_namespace.values() for t in tasks) == sorted(TASKS)


def test_stream_shows_each_task_rigging_in_its_subgraph(tmp_path) -> None:
    namespaces: dict[tuple[str, ...], set[str]] = {}
    for namespace, update in rig_many.stream(
        {"bridge": "toy24", "task_ids": TASKS},
        context=settings(tmp_path),
        stream_mode="updates",
        subgraphs=True,
    ):
        namespaces.setdefault(namespace, set()).update(update)
    inner = [ns for ns in namespaces if ns]
    assert len(inner) == 2 and all(ns[0].startswith("rig_task:") for ns in inner)
    for ns in inner:
        assert {"observer", "validator", "recorder"} <= namespaces[ns]
    assert {"plan", "rig_task", "summary"} <= namespaces[()]


def test_approval_pauses_each_task_and_resumes_by_interrupt_id(tmp_path) -> None:
    g = graph()
    context = settings(tmp_path, require_approval=True, max_iterations=1)
    first = g.invoke({"bridge": "toy24", "task_ids": TASKS}, config(), context=context)
    interrupts = {i.value["task_id"]: i for i in first["__interrupt__"]}
    assert sorted(interrupts) == sorted(TASKS)
    paused = g.get_state(config(), subgraphs=True)
    assert paused.next == ("rig_task", "rig_task")
    spent = {t.state.values["task_id"]: t.state.values["rollouts"] for t in paused.tasks}
    assert sorted(spent) == sorted(TASKS)
    assert len({t.state.config["configurable"]["checkpoint_ns"] for t in paused.tasks}) == 2
    assert not any(accepted_path(tmp_path, t).exists() for t in TASKS)  # nothing written yet

    # Other settings on the resume: refused, naming the field.
    answers = {interrupts[TASKS[0]].id: True, interrupts[TASKS[1]].id: {"approved": False}}
    with pytest.raises(RiggerError, match=r"k_observe \(3 → 5\)"):
        g.invoke(Command(resume=answers), config(), context=settings(tmp_path, k_observe=5))
    # No context on the resume: the recorded settings.
    out = g.invoke(Command(resume=answers), config())
    results = {r["task_id"]: r for r in out["results"]}
    assert [r["task_id"] for r in out["results"]] == TASKS
    assert results[TASKS[0]]["status"] == "accepted"
    assert results[TASKS[1]]["status"] == "rejected"
    assert "refused" in results[TASKS[1]]["reason"]
    assert {t: results[t]["rollouts"] for t in TASKS} == spent  # approving replays nothing
    assert accepted_path(tmp_path, TASKS[0]).exists()
    assert rejected_path(tmp_path, TASKS[1]).exists()
    assert not accepted_path(tmp_path, TASKS[1]).exists()
    assert out["counts"] == {"accepted": 1, "rejected": 1}


def test_a_failing_task_is_reported_and_the_others_finish(tmp_path) -> None:
    out = graph().invoke(
        {"bridge": "toy24", "task_ids": [TASKS[0], "no-such-task"]},
        config(),
        context=settings(tmp_path),
    )
    good, bad = out["results"]
    assert good["status"] == "accepted"
    assert bad["task_id"] == "no-such-task" and bad["status"] == "failed"
    assert bad["reason"].startswith("UnknownTaskError:") and "no-such-task" in bad["reason"]
    assert bad["accepted_path"] is None and bad["rollouts"] == 0
    assert out["counts"] == {"accepted": 1, "failed": 1}


def test_a_task_that_finished_before_a_pause_is_kept_on_the_resume(tmp_path) -> None:
    g = graph()
    context = settings(tmp_path, require_approval=True, max_iterations=1)
    first = g.invoke(
        {"bridge": "toy24", "task_ids": ["no-such-task", TASKS[0]]}, config(), context=context
    )
    (pending,) = first["__interrupt__"]
    assert pending.value["task_id"] == TASKS[0]
    out = g.invoke(Command(resume=True), config())
    assert [(r["task_id"], r["status"]) for r in out["results"]] == [
        ("no-such-task", "failed"),
        (TASKS[0], "accepted"),
    ]


def test_a_base_spec_rigs_its_own_task(tmp_path) -> None:
    base = HarnessSpec(BridgeSpec("toy24", TASKS[1])).to_dict()
    out = graph().invoke({"base_spec": base}, config(), context=settings(tmp_path))
    (result,) = out["results"]
    assert result["task_id"] == TASKS[1] and result["status"] == "accepted"
    assert result["accepted_spec"]["lineage"]["policy"] == "oracle:1"


def test_a_new_input_on_the_same_thread_starts_a_new_rig(tmp_path) -> None:
    g = graph()
    context = settings(tmp_path)
    g.invoke({"bridge": "toy24", "tasks": 1}, config(), context=context)
    out = g.invoke({"bridge": "toy24", "task_ids": [TASKS[1]]}, config(), context=context)
    assert [r["task_id"] for r in out["results"]] == [TASKS[1]]
    assert out["counts"] == {"accepted": 1}
    state = g.get_state(config()).values
    assert state["plan"]["task_ids"] == [TASKS[1]] and state["tasks"] is None  # input consumed


def test_a_context_object_and_resources_reach_every_task(tmp_path) -> None:
    context = RiggerContext(**settings(tmp_path))
    out = graph().invoke({"bridge": "toy24", "task_ids": TASKS[:1]}, config(), context=context)
    assert out["results"][0]["status"] == "accepted"
    resources = RiggerResources(policy=policy_factory("oracle:1.0"))
    no_policy = {k: v for k, v in settings(tmp_path / "r").items() if k != "policy"}
    g = build_rig_many(checkpointer=InMemorySaver(), resources=resources)
    out = g.invoke({"bridge": "toy24", "task_ids": TASKS[:1]}, config(), context=no_policy)
    assert out["results"][0]["accepted_spec"]["lineage"]["policy"] == "oracle:1"


BASE = HarnessSpec(BridgeSpec("toy24", "1-1-1-8")).to_dict()


@pytest.mark.parametrize(
    ("given", "match"),
    [
        ({"task_ids": ["1-1-1-8"]}, "needs bridge"),
        ({"bridge": "toy24"}, "needs the tasks: task_ids"),
        ({"bridge": "toy24", "task_ids": ["1-1-1-8"], "tasks": 1}, "not both"),
        ({"bridge": "toy24", "task_ids": "1-1-1-8"}, "a list of task ids"),
        ({"bridge": "toy24", "task_ids": ["1-1-1-8", ""]}, "non-empty strings"),
        ({"bridge": "toy24", "task_ids": ["1-1-1-8", "1-1-1-8"]}, "1-1-1-8 more than once"),
        ({"bridge": "toy24", "tasks": 0}, "positive int"),
        ({"bridge": "toy24", "bridge_options": ["x"]}, "bridge_options to be a dict"),
        ({"base_spec": {"bridge": 3}}, "base_spec is not a harness spec"),
        ({"base_spec": BASE, "bridge": "other"}, "not the bridge of base_spec"),
        ({"base_spec": BASE, "task_ids": ["1-1-1-8", "1-1-1-11"]}, "rigs its own task"),
        ({"base_spec": BASE, "tasks": 2}, "rigs its own task"),
        ({"base_spec": BASE, "bridge_options": {"x": 1}}, "bridge_options differ"),
    ],
)
def test_input_errors_say_what_to_pass(tmp_path, given, match) -> None:
    with pytest.raises(RiggerError, match=match):
        graph().invoke(given, config(), context=settings(tmp_path))
    assert not (tmp_path / "accepted").exists()


def test_context_errors_and_an_unknown_bridge(tmp_path) -> None:
    start = {"bridge": "toy24", "task_ids": ["1-1-1-8"]}
    with pytest.raises(RiggerError, match="run without a context"):
        graph().invoke(start, config())
    with pytest.raises(RiggerError, match="unknown rigger setting"):
        graph().invoke(start, config(), context={"polcy": "oracle:1.0"})
    with pytest.raises(RiggerError, match="must be a RiggerContext or a settings dict"):
        graph().invoke(start, config(), context=["oracle"])
    with pytest.raises(UnknownBridgeError):
        graph().invoke({"bridge": "nope", "tasks": 1}, config(), context=settings(tmp_path))
