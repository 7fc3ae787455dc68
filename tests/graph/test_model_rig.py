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


# A do-nothing rule, long enough that any cut of the code would show (the marker is at the end).
LONG_NOOP = (
    "class _Rules:\n"
    + "".join(f"    # note {i:02d}: this line only pads the code beyond 800 characters\n"
              for i in range(16))
    + "    def filter_observation(self, observation, state):\n"
    "        return observation  # END-OF-CODE-MARKER\n"
)  # fmt: skip
DROP = (
    "import random\n\n"
    "DROP_P = 0.3\n\n"
    "class _Rules:\n"
    "    def filter_action(self, action, state):\n"
    "        if action['tool'] == 'combine' and random.random() < DROP_P:\n"
    "            return 'That combine did not go through; try again.'\n"
    "        return action\n"
)
DROP_KNOB = [{"name": "DROP_P", "low": 0, "high": 0.9, "harder": "high"}]


def test_a_refining_designer_sees_everything_the_validator_knows(tmp_path):
    """The second writer turn shows the first attempt in full: code, statistics, episodes."""
    seen: dict[str, str] = {}

    def second(messages):
        seen["system"], seen["task"] = messages[0].content, messages[1].content
        return {
            "tool": "submit_candidate",
            "args": {"rules_code": DROP, "knobs": DROP_KNOB, "rationale": "drop some combines"},
        }

    designer = FakeToolCallingModel(
        responses=[
            {"tool": "submit_candidate", "args": {"rules_code": LONG_NOOP, "rationale": "noop"}},
            second,
        ]
    )
    context = RiggerContext(
        run_dir=str(tmp_path),
        policy="oracle:1.0",
        designer=designer,
        diagnoser="heuristic",
        objective="sr:0.4-0.6",
        max_iterations=2,
        k_validate=4,
        confidence=0.75,
        max_rollouts=40,
    )
    state = build_rigger().invoke(
        {"task_id": TASK, "base_spec": HarnessSpec(BridgeSpec("toy24", TASK)).to_dict()},
        {"configurable": {"thread_id": TASK}},
        context=context,
    )
    first = state["attempts"][0]["verdict"]
    assert first["decision"] == "refine" and first["side"] == "too_easy"
    assert len(first["trajectories"]) == first["judgement"]["n"] == 4
    assert first["oracle"]["passed"] is True

    task, system = seen["task"], seen["system"]
    assert "This is iteration 2 of 2: this is the last candidate" in task
    assert "### Attempt 1 (the latest): refine, too easy" in task
    assert LONG_NOOP.rstrip().splitlines()[-1].strip() in task  # the code, uncut
    assert task.count("this line only pads the code") == 16
    assert "Judge (band): 4/4 successes, rate 1.00, 95% credible interval" in task
    assert "P(claim) = " in task and "needed >= 0.75" in task
    assert "Rollouts judged: success 4/4 (100%" in task and "mean steps 3.0" in task
    assert "blocked 0% of steps" in task and "end reasons: terminated 4" in task
    assert "Oracle check: passed: the bridge's oracle solves the candidate" in task
    assert "A successful validation episode:" in task and "combine(" in task
    assert "All 5 baseline episodes are identical" in task  # oracle:1.0 is deterministic
    # The acceptance rules with the live settings (not the defaults).
    assert "in batches of 4" in system and "at most 40 policy rollouts" in system
    assert "P(0.4 <= p <= 0.6) >= 0.75" in system
    assert "The policy has 12 steps per episode" in system
    assert "# About this environment: Toy24" in system
    for tool in ("get_stage_candidates", "list_sibling_tasks", "check_rules"):
        assert tool in system
    second_attempt = state["attempts"][1]
    assert second_attempt["candidate"]["knobs"][0]["name"] == "DROP_P"
