"""Tracing a rig: named node runs with the rig's metadata, policy calls grouped per episode."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from langchain_core.runnables import RunnableLambda
from langchain_core.tracers.base import BaseTracer
from langchain_core.tracers.schemas import Run
from langgraph.checkpoint.memory import InMemorySaver

from envharness import RiggerError
from envharness.graph import RiggerContext, build_rigger
from envharness.graph.run import rig
from envharness.graph.tracing import NODE_METADATA, flush_traces
from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.rollout.chat import ChatModelPolicyFactory
from envharness.rollout.episode_tracing import EPISODE_RUN_NAME
from envharness.rollout.executors import LocalExecutor
from envharness.testing import FakeToolCallingModel

TASKS = ["1-1-1-8", "1-1-1-11"]
NODES = {"observer", "diagnoser", "writer", "validator", "approval", "recorder"}
UNDO = {"tool": "undo", "args": {}}


class Collector(BaseTracer):
    """A local tracer: keeps every finished run."""

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[Run] = []

    def _persist_run(self, run: Run) -> None:
        pass

    def _end_trace(self, run: Run) -> None:
        self.runs.append(run)
        super()._end_trace(run)

    def by_id(self) -> dict:
        return {run.id: run for run in self.runs}

    def ancestors(self, run: Run) -> list[Run]:
        runs, chain = self.by_id(), []
        while run.parent_run_id is not None:
            run = runs[run.parent_run_id]
            chain.append(run)
        return chain


def model_context(run_dir: Path, model: FakeToolCallingModel, executor=None) -> RiggerContext:
    return RiggerContext(
        run_dir=str(run_dir),
        policy=ChatModelPolicyFactory(model),
        objective="sr:0.4-0.6",
        k_observe=2,
        k_validate=2,
        max_iterations=1,
        max_rollouts=4,
        executor=executor,
    )


@pytest.mark.parametrize("kind", ["thread", "inline"])
def test_a_local_tracer_sees_node_runs_and_the_policys_model_calls(tmp_path, kind):
    model = FakeToolCallingModel(responses=[UNDO] * 200)
    tracer = Collector()
    config = {"callbacks": [tracer], "tags": ["mine"], "metadata": {"experiment": "e1"}}
    with LocalExecutor(2 if kind == "thread" else 1, kind=kind) as executor:
        results = rig(
            "toy24",
            TASKS,
            model_context(tmp_path, model, executor),
            bridge_options={"max_steps": 2},
            config=config,
            max_concurrency=1,
        )
    assert all(r.status != "failed" for r in results), results
    nodes = [run for run in tracer.runs if run.name in NODES]
    assert {run.name for run in nodes} >= {"observer", "diagnoser", "writer", "validator"}
    for run in nodes:
        meta = run.metadata
        assert set(NODE_METADATA) <= set(meta), (run.name, meta)
        assert meta["bridge"] == "toy24" and meta["task_id"] in TASKS
        assert meta["policy"] == "fake-tool-calling" and meta["designer"] == "heuristic"
        assert meta["objective"] == "sr:0.4-0.6" and meta["experiment"] == "e1"
        assert "mine" in run.tags and run.parent_run_id is not None
    for run in nodes:
        expected = 0 if run.name in ("observer", "diagnoser") else 1
        assert run.metadata["iteration"] == expected, run.name
    validators = [run for run in nodes if run.name == "validator"]
    assert len(validators) == len(TASKS)
    assert {run.metadata["verdict"] for run in validators} <= {
        "accept",
        "refine",
        "reject",
        "undecided",
    }
    # Every policy call is a traced model run, under its episode, under a node of its task.
    calls = [run for run in tracer.runs if run.run_type == "llm"]
    assert len(calls) == len(model.calls) > 0
    episodes = [run for run in tracer.runs if run.name == EPISODE_RUN_NAME]
    assert len(episodes) == sum(r.rollouts for r in results)
    for call in calls:
        episode, node, *_ = tracer.ancestors(call)
        assert episode.name == EPISODE_RUN_NAME and node.name in ("observer", "validator")
        assert episode.metadata["task_id"] == node.metadata["task_id"]
    per_episode = Counter(call.parent_run_id for call in calls)
    assert all(per_episode[e.id] == e.outputs["steps"] for e in episodes)
    assert {e.metadata["seed"] for e in episodes} == {e.inputs["seed"] for e in episodes}
    roots = [run for run in tracer.runs if run.parent_run_id is None]
    assert sorted(run.name for run in roots) == [f"envrigger:toy24:{t}" for t in sorted(TASKS)]


def test_rig_inside_a_callers_run_nests_every_task_under_it(tmp_path):
    tracer = Collector()
    context = RiggerContext(
        run_dir=str(tmp_path), objective="sr:0.4-0.6", k_observe=2, k_validate=2, max_rollouts=4
    )

    def caller(_: object) -> list:
        return rig("toy24", TASKS, context, max_concurrency=1)  # one pool thread still

    RunnableLambda(caller, name="my_experiment").invoke(None, config={"callbacks": [tracer]})
    (root,) = [run for run in tracer.runs if run.parent_run_id is None]
    assert root.name == "my_experiment"
    tasks = [run for run in tracer.runs if run.parent_run_id == root.id]
    assert sorted(run.name for run in tasks) == [f"envrigger:toy24:{t}" for t in sorted(TASKS)]


WRITE_A_HEAD_START = {
    "tool": "submit_candidate",
    "args": {
        "rules_code": "",
        "in_env_actions": json.dumps(
            [{"tool": "combine", "args": {"a": "1", "op": "+", "b": "1"}}]
        ),
        "rationale": "a head start",
    },
}


def test_the_designers_model_calls_carry_the_iteration_they_write(tmp_path):
    designer = FakeToolCallingModel(
        responses=[{"tool": "get_tool_schemas", "args": {}}] + [WRITE_A_HEAD_START]
    )
    context = RiggerContext(
        run_dir=str(tmp_path),
        designer=designer,
        diagnoser="heuristic",
        objective="sr:0.4-0.6",
        max_iterations=1,
        k_validate=3,
        max_rollouts=6,
    )
    tracer = Collector()
    task = TASKS[0]
    build_rigger(checkpointer=InMemorySaver()).invoke(
        {"task_id": task, "base_spec": HarnessSpec(BridgeSpec("toy24", task)).to_dict()},
        {"configurable": {"thread_id": task}, "callbacks": [tracer]},
        context=context,
    )
    (writer,) = [run for run in tracer.runs if run.name == "writer"]
    calls = [run for run in tracer.runs if run.run_type == "llm"]
    assert len(calls) == 2
    for call in calls:
        assert writer in tracer.ancestors(call)
        assert call.metadata["iteration"] == writer.metadata["iteration"] == 1
        assert call.metadata["task_id"] == task and call.metadata["bridge"] == "toy24"
    # Driven directly (no rig()), the node runs still carry the rig's metadata.
    assert writer.metadata["designer"] == "fake-tool-calling"


def test_flush_traces_without_langsmith_returns_at_once():
    started = time.monotonic()
    assert flush_traces(5.0) is True
    assert time.monotonic() - started < 0.5


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_langsmith_tracing_without_a_network_does_not_hold_the_cli_at_exit(tmp_path):
    """Unsendable runs are waited for at most a second (measured: ~12-18 s without the fix)."""
    env = {
        **os.environ,
        "LANGSMITH_TRACING": "true",
        "LANGSMITH_API_KEY": "lsv2_not_a_key",
        "LANGSMITH_ENDPOINT": f"http://127.0.0.1:{_closed_port()}",
        "COLUMNS": "200",
    }
    env.pop("LANGSMITH_USE_DAEMON", None)
    command = [sys.executable, "-m", "envharness.cli", "rig", "toy24", "-n", "1"]
    command += ["--k-observe", "2", "--k-validate", "2", "--max-iterations", "1"]
    command += ["--max-rollouts", "4", "--objective", "sr:0.4-0.6", "-o", str(tmp_path / "r")]
    process = subprocess.Popen(
        command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env
    )
    finished = None
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith(f"  {TASKS[0]}: "):  # the task's result: rig() flushes after it
            finished = time.monotonic()
    process.wait(timeout=120)
    exited = time.monotonic()
    assert process.returncode == 0 and finished is not None
    assert exited - finished < 5.0, f"{exited - finished:.1f} s from the result to the exit"


def test_a_traced_rig_with_a_broken_input_still_says_what_is_wrong(tmp_path):
    tracer = Collector()
    with pytest.raises(RiggerError, match="not a harness spec"):
        build_rigger().invoke(
            {"task_id": TASKS[0], "base_spec": {"bridge": 3}},
            {"configurable": {"thread_id": "t"}, "callbacks": [tracer]},
            context=RiggerContext(run_dir=str(tmp_path)),
        )
    (observer,) = [run for run in tracer.runs if run.name == "observer"]
    assert observer.metadata["task_id"] == TASKS[0] and observer.metadata["bridge"] is None
    assert "not a harness spec" in observer.error
