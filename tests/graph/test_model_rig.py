"""The rigger graph driven by scripted designer and diagnoser models (no network, no keys)."""

from __future__ import annotations

import json

from langchain_core.messages import ToolMessage

from envharness.graph import RiggerContext, build_rigger
from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.testing import FakeToolCallingModel

TASK = "4-4-10-10"
HEAD_START = [
    {"tool": "combine", "args": {"a": "10", "op": "*", "b": "10"}},
    {"tool": "combine", "args": {"a": "100", "op": "-", "b": "4"}},
]
FORBIDDEN_IMPORT = "import os\n\nclass _Rules:\n    pass\n"
BLOCK_EVERY_COMBINE = (
    "class _Rules:\n"
    "    def filter_action(self, action, state):\n"
    "        if action['tool'] == 'combine':\n"
    "            return 'Combining is not allowed.'\n"
    "        return action\n"
)


def diagnosis_call() -> dict:
    return {
        "tool": "report_diagnosis",
        "args": {
            "direction": "scaffold",
            "summary": "The policy rarely finds the three combinations in time.",
            "weaknesses": [
                {
                    "kind": "budget",
                    "description": "It runs out of steps after wrong first moves.",
                    "evidence": ["episode 0: 12 steps without reaching 24"],
                    "episodes": 4,
                }
            ],
        },
    }


def submit(rules_code: str, actions: list, rationale: str) -> dict:
    return {
        "tool": "submit_candidate",
        "args": {
            "rules_code": rules_code,
            "in_env_actions": json.dumps(actions),
            "rationale": rationale,
        },
    }


def tool_results(model: FakeToolCallingModel) -> list[str]:
    return [m.content for call in model.calls for m in call if isinstance(m, ToolMessage)]


def test_scripted_designer_through_the_graph(tmp_path):
    designer = FakeToolCallingModel(
        responses=[
            # iteration 1: look, submit code that fails the static check, then a candidate that
            # passes every check but makes the task unsolvable
            {"tool": "get_tool_schemas", "args": {}},
            submit(FORBIDDEN_IMPORT, [], "try an import"),
            submit(BLOCK_EVERY_COMBINE, [], "ban combining"),
            # iteration 2: dry-run a head start, then submit it
            {"tool": "dry_run_setups", "args": {"in_env_actions": json.dumps(HEAD_START)}},
            submit("", HEAD_START, "start two combinations in"),
        ]
    )
    diagnoser = FakeToolCallingModel(responses=[diagnosis_call()])
    context = RiggerContext(
        run_dir=str(tmp_path),
        policy="oracle:0.2",
        designer=designer,
        diagnoser=diagnoser,
        objective="sr:0.3-0.65",  # baseline 1/5 here; the head start lifts it to ~0.47
        max_iterations=3,
    )
    state = build_rigger().invoke(
        {"task_id": TASK, "base_spec": HarnessSpec(BridgeSpec("toy24", TASK)).to_dict()},
        {"configurable": {"thread_id": TASK}},
        context=context,
    )
    assert state["diagnosis"]["source"] != "heuristic"
    assert state["diagnosis"]["direction"] == "scaffold"
    first, second = state["attempts"][:2]
    # The static-check failure went back to the agent as a tool error, never to validation.
    results = tool_results(designer)
    assert any(r.startswith("ERROR") and "import" in r for r in results)
    assert first["candidate"]["rules_code"] == BLOCK_EVERY_COMBINE
    assert first["verdict"]["decision"] == "refine"
    assert "made the task unsolvable" in first["verdict"]["reason"]
    assert first["verdict"]["oracle"]["problem"] == "unsolvable"
    assert first["designer"] != "heuristic" and first["model_calls"] >= 3
    assert second["candidate"]["in_env_actions"] == HEAD_START
    assert state["status"] == "accepted", second["verdict"]
    assert state["model_calls"] >= 5
    accepted = HarnessSpec.from_dict(state["accepted_spec"])
    assert [c.type for c in accepted.components] == ["setups"]
    assert accepted.lineage.notes == "start two combinations in"
