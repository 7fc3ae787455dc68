"""The rigger's schemas, plain-settings contexts, durable settings and input errors (issue 12)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from envharness.errors import RiggerError
from envharness.graph import RiggerContext, build_rigger
from envharness.graph.context import resolve_context
from envharness.graph.settings import SETTING_NAMES, RiggerResources
from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.rollout.factory import policy_factory

TASK = "4-4-10-10"
SETTINGS = {"policy": "oracle:1.0", "objective": "sr:0.8-1.0", "k_observe": 3, "k_validate": 3}


def start(task_id: str = TASK) -> dict:
    return {"task_id": task_id, "base_spec": HarnessSpec(BridgeSpec("toy24", task_id)).to_dict()}


def config(thread: str = "t") -> dict:
    return {"configurable": {"thread_id": thread}}


def test_every_schema_is_generated_and_describes_every_field() -> None:
    graph = build_rigger()
    schemas = {
        "input": graph.get_input_jsonschema(),
        "output": graph.get_output_jsonschema(),
        "context": graph.get_context_jsonschema(),
    }
    assert list(schemas["input"]["properties"]) == ["task_id", "base_spec"]
    assert set(schemas["input"]["required"]) == {"task_id", "base_spec"}
    assert list(schemas["context"]["properties"]) == list(SETTING_NAMES)
    assert {"status", "accepted_spec", "attempts", "reason"} <= set(schemas["output"]["properties"])
    assert "settings" not in schemas["output"]["properties"]
    for name, schema in schemas.items():
        for field, prop in schema["properties"].items():
            assert prop.get("description"), f"{name}.{field} has no description"
    assert schemas["context"]["properties"]["k_observe"]["minimum"] == 1
    json.dumps(graph.get_graph().to_json())  # the state schema serializes too


def test_a_settings_dict_is_a_context_and_is_recorded(tmp_path) -> None:
    graph = build_rigger(checkpointer=InMemorySaver())
    settings = {**SETTINGS, "run_dir": str(tmp_path)}
    out = graph.invoke(start(), config(), context=settings)
    assert out["status"] == "accepted"
    recorded = graph.get_state(config()).values["settings"]
    assert recorded == RiggerContext.from_settings(settings).settings()
    assert recorded["policy"] == "oracle:1" and recorded["k_observe"] == 3


def test_resources_supply_live_objects_for_plain_settings(tmp_path) -> None:
    resources = RiggerResources(policy=policy_factory("oracle:1.0"))
    graph = build_rigger(resources=resources)
    out = graph.invoke(start(), config(), context={**SETTINGS, "run_dir": str(tmp_path)})
    assert out["status"] == "accepted"
    assert out["accepted_spec"]["lineage"]["policy"] == "oracle:1"


def test_resume_checks_and_reuses_the_recorded_settings() -> None:
    recorded = RiggerContext(**SETTINGS).settings()
    # No context on a resume: the recorded settings.
    assert resolve_context(None, recorded).settings() == recorded
    assert resolve_context({}, recorded).settings() == recorded
    # The same settings again: fine; trace metadata may change.
    assert resolve_context(RiggerContext(**SETTINGS, metadata={"x": "y"}), recorded)
    with pytest.raises(RiggerError, match=r"k_observe \(3 → 5\).*objective"):
        resolve_context({**SETTINGS, "k_observe": 5, "objective": "auto"}, recorded)


def test_a_graph_resume_with_other_settings_is_refused(tmp_path) -> None:
    graph = build_rigger(checkpointer=InMemorySaver())
    context = RiggerContext(
        run_dir=str(tmp_path), policy="oracle:0.5", objective="sr:0.4-0.6", require_approval=True
    )
    graph.invoke(start(), config(), context=context)
    assert graph.get_state(config()).next, "the rig waits for approval"
    other = RiggerContext(
        run_dir=str(tmp_path), policy="oracle:0.9", objective="sr:0.4-0.6", require_approval=True
    )
    from langgraph.types import Command

    with pytest.raises(RiggerError, match="policy .'oracle:0.5' → 'oracle:0.9'."):
        graph.invoke(Command(resume=True), config(), context=other)


@pytest.mark.parametrize(
    ("context", "message"),
    [
        (None, "run without a context"),
        ({"polcy": "oracle"}, "unknown rigger setting"),
        ({"k_observe": 0}, "k_observe to be a positive int"),
        (object(), "must be a RiggerContext or a settings dict, got object"),
    ],
)
def test_a_missing_or_foreign_context_says_what_to_pass(tmp_path, context, message) -> None:
    with pytest.raises(RiggerError, match=message):
        build_rigger().invoke(start(), config(), context=context)


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ({"task_id": TASK}, "needs base_spec"),
        ({"task_id": TASK, "base_spec": {"bridge": 3}}, "not a harness spec"),
        ({**start(), "task_id": "1-1-1-8"}, "'1-1-1-8' is not the task of base_spec"),
    ],
)
def test_bad_input_is_a_rigger_error(tmp_path, state, message) -> None:
    with pytest.raises(RiggerError, match=message):
        build_rigger().invoke(state, config(), context=RiggerContext(run_dir=str(tmp_path)))


def test_a_parent_graph_with_its_own_context_gets_a_clear_error(tmp_path) -> None:
    @dataclass
    class ParentContext:
        user: str = "me"

    class Parent(TypedDict, total=False):
        task_id: str
        base_spec: dict
        status: str

    builder = StateGraph(Parent, context_schema=ParentContext)
    builder.add_node("rig", build_rigger())
    builder.add_edge(START, "rig")
    with pytest.raises(RiggerError, match="got ParentContext; a parent graph"):
        builder.compile().invoke(start(), context=ParentContext())

    # The documented way: call the rigger from a node, with its own context.
    def rig_node(state: Parent) -> dict:
        out = build_rigger().invoke(
            {"task_id": state["task_id"], "base_spec": state["base_spec"]},
            context={**SETTINGS, "run_dir": str(tmp_path)},
        )
        return {"status": out["status"]}

    builder = StateGraph(Parent, context_schema=ParentContext)
    builder.add_node("rig", rig_node)
    builder.add_edge(START, "rig")
    assert builder.compile().invoke(start(), context=ParentContext())["status"] == "accepted"
