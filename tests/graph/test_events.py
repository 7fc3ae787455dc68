"""The rigger's progress events on LangGraph's custom stream, through rig() and the CLI."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from typer.testing import CliRunner

from envharness import RiggerError
from envharness.cli import app
from envharness.graph import RiggerContext, build_rigger
from envharness.graph.events import (
    EVENT_NAMES,
    DesignerTurn,
    RolloutFinished,
    RolloutStarted,
    VerdictEvent,
)
from envharness.graph.run import CHECKPOINTS_FILE, rig
from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.rollout.executors import LocalExecutor
from envharness.testing import FakeToolCallingModel

TASK = "1-1-1-8"
SHAPES = {
    "rollout_started": RolloutStarted,
    "rollout_finished": RolloutFinished,
    "designer_turn": DesignerTurn,
    "verdict": VerdictEvent,
}
WIDE = {"COLUMNS": "200"}


def start(task_id: str = TASK) -> dict:
    return {"task_id": task_id, "base_spec": HarnessSpec(BridgeSpec("toy24", task_id)).to_dict()}


def context(run_dir: Path, **settings) -> RiggerContext:
    values = {
        "policy": "oracle:0.5",
        "objective": "sr:0.4-0.6",
        "k_observe": 3,
        "k_validate": 3,
        "max_iterations": 2,
        "max_rollouts": 6,
    }
    return RiggerContext(run_dir=str(run_dir), **(values | settings))


def stream(rig_context: RiggerContext) -> tuple[list[dict], dict]:
    """The custom stream of one rig, and its final state."""
    graph = build_rigger(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": TASK}}
    events = list(graph.stream(start(), config, context=rig_context, stream_mode="custom"))
    return events, graph.get_state(config).values


def check_shapes(events: list[dict]) -> None:
    for event in events:
        shape = SHAPES[event["event"]]
        assert set(event) == set(shape.__annotations__), event
        assert event["task_id"] == TASK


def test_custom_stream_reports_every_rollout_and_verdict(tmp_path):
    events, state = stream(context(tmp_path))
    check_shapes(events)
    kinds = Counter(e["event"] for e in events)
    assert set(kinds) <= set(EVENT_NAMES)
    finished = [e for e in events if e["event"] == "rollout_finished"]
    started = [e for e in events if e["event"] == "rollout_started"]
    assert len(finished) == len(started) == state["rollouts"] > 0
    assert sorted(e["seed"] for e in finished) == sorted(state["seeds"])
    observe = [e for e in finished if e["phase"] == "observe"]
    assert [(e["i"], e["n"], e["iteration"]) for e in observe] == [(1, 3, 0), (2, 3, 0), (3, 3, 0)]
    assert sum(e["success"] for e in observe) == state["baseline_stats"]["successes"]
    validate = [e for e in finished if e["phase"] == "validate"]
    assert validate and {e["iteration"] for e in validate} <= {1, 2}
    assert all(e["steps"] >= 1 and not e["resumed"] for e in finished)
    verdicts = [e for e in events if e["event"] == "verdict"]
    attempts = state["attempts"]
    assert [(v["iteration"], v["decision"]) for v in verdicts] == [
        (a["iteration"], a["verdict"]["decision"]) for a in attempts
    ]
    assert [v["rollouts"] for v in verdicts] == [a["verdict"]["rollouts"] for a in attempts]
    # Each rollout starts before it finishes; a verdict follows its iteration's rollouts.
    order = [(e["event"], e.get("seed")) for e in events]
    for e in finished:
        assert order.index(("rollout_started", e["seed"])) < order.index(
            ("rollout_finished", e["seed"])
        )
    assert events[-1]["event"] == "verdict"


def test_invoke_without_a_custom_stream_is_unchanged(tmp_path):
    rig_context = context(tmp_path / "a")
    _, streamed = stream(rig_context)
    graph = build_rigger(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": TASK}}
    graph.invoke(start(), config, context=context(tmp_path / "b"))
    invoked = graph.get_state(config).values
    for key in ("status", "rollouts", "seeds", "baseline_stats", "iteration"):
        assert invoked[key] == streamed[key], key


@pytest.mark.parametrize("kind", ["thread", "process"])
def test_pooled_executors_report_the_same_counts(tmp_path, kind):
    with LocalExecutor(2, kind=kind) as executor:
        events, state = stream(context(tmp_path, executor=executor))
    check_shapes(events)
    finished = [e for e in events if e["event"] == "rollout_finished"]
    started = [e for e in events if e["event"] == "rollout_started"]
    assert len(finished) == state["rollouts"]
    # Worker processes make their policies away from the stream: no rollout_started there.
    assert len(started) == (state["rollouts"] if kind == "thread" else 0)
    for batch in Counter((e["phase"], e["iteration"], e["n"]) for e in started).items():
        (_, _, n), count = batch
        assert count % n == 0, batch


def test_rig_feeds_on_event_and_resumed_rollouts_are_reported(tmp_path):
    events: list[dict] = []
    first = rig(
        "toy24", [TASK, "1-1-1-11"], context(tmp_path), on_event=events.append, max_concurrency=1
    )
    counts = Counter(e["task_id"] for e in events if e["event"] == "rollout_finished")
    assert counts == {r.task_id: r.rollouts for r in first}
    # Lose the checkpoints: the rig plays again, and every rollout comes from the run store.
    (tmp_path / CHECKPOINTS_FILE).unlink()
    again: list[dict] = []
    second = rig("toy24", [TASK], context(tmp_path), on_event=again.append)
    finished = [e for e in again if e["event"] == "rollout_finished"]
    assert len(finished) == second[0].rollouts == first[0].rollouts
    assert all(e["resumed"] for e in finished)
    assert not [e for e in again if e["event"] == "rollout_started"]


def test_a_model_designer_reports_its_turns(tmp_path):
    head_start = [{"tool": "combine", "args": {"a": "1", "op": "+", "b": "1"}}]
    designer = FakeToolCallingModel(
        responses=[
            {"tool": "get_tool_schemas", "args": {}},
            {
                "tool": "submit_candidate",
                "args": {
                    "rules_code": "",
                    "in_env_actions": json.dumps(head_start),
                    "rationale": "a head start",
                },
            },
        ]
    )
    events, state = stream(
        context(tmp_path, designer=designer, diagnoser="heuristic", max_iterations=1)
    )
    check_shapes(events)
    turns = [e for e in events if e["event"] == "designer_turn"]
    assert [(t["iteration"], t["turn"], t["tool_calls"]) for t in turns] == [
        (1, 1, ["get_tool_schemas"]),
        (1, 2, ["submit_candidate"]),
    ]
    assert all(t["max_turns"] == 12 and t["designer"] == "fake-tool-calling" for t in turns)
    assert state["attempts"][0]["model_calls"] == len(turns)
    first_validation = next(
        i for i, e in enumerate(events) if e["event"] != "designer_turn" and e["iteration"] == 1
    )
    assert max(i for i, e in enumerate(events) if e["event"] == "designer_turn") < first_validation


def test_rig_refuses_a_bad_config(tmp_path):
    bad = [
        ({"configurable": {"thread_id": "mine"}}, "names each task's thread"),
        ({"tags": "mine"}, r"config\['tags'\] to be a list"),
        ({"metadata": ["x"]}, r"config\['metadata'\] to be a dict"),
        (["callbacks"], "runnable config dict"),
    ]
    for config, message in bad:
        with pytest.raises(RiggerError, match=message):
            rig("toy24", [TASK], context(tmp_path), config=config)
    with pytest.raises(RiggerError, match="trace_flush_timeout"):
        rig("toy24", [TASK], context(tmp_path), trace_flush_timeout=-1)
    assert not (tmp_path / CHECKPOINTS_FILE).exists(), "nothing ran"


def _bar_counts(output: str) -> dict[str, int]:
    """``{task: rollouts}`` from the CLI's final progress bars."""
    bars = re.findall(r"^\s+(\d+-\d+-\d+-\d+) .*?(\d+) rollouts\s*$", output, flags=re.MULTILINE)
    return {task: int(n) for task, n in bars}


def test_the_cli_progress_shows_the_rollouts_of_every_task(tmp_path):
    out = tmp_path / "rig"
    args = ["rig", "toy24", "-n", "2", "--k-observe", "3", "--k-validate", "3", "-o", str(out)]
    args += ["--max-iterations", "2", "--max-rollouts", "6", "--objective", "sr:0.4-0.6"]
    args += ["--concurrency", "1"]  # CPython 3.11.7's ast.parse is not thread-safe (gh-106905)
    result = CliRunner().invoke(app, args, env=WIDE)
    assert result.exit_code == 0, result.output
    shown = _bar_counts(result.output)
    assert len(shown) == 2, result.output
    # The state's counts, read back from the checkpoints (a finished task is not run again).
    states = rig("toy24", list(shown), context(out))
    assert all(r.resumed for r in states)
    assert shown == {r.task_id: r.rollouts for r in states}
    assert f"{sum(shown.values())} rollouts" in result.output  # the table's caption
    again = CliRunner().invoke(app, args, env=WIDE)
    assert again.exit_code == 0 and "(resumed)" in again.output
    assert _bar_counts(again.output) == {}, "a finished task plays nothing"
