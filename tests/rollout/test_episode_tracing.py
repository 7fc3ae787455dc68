"""One trace run per episode: a chat policy's model calls grouped under their episode."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core", reason="tracing needs langchain-core")

from langchain_core.runnables import RunnableLambda
from langchain_core.tracers.base import BaseTracer
from langchain_core.tracers.context import collect_runs
from langchain_core.tracers.schemas import Run

from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.rollout.batch import run_rollouts
from envharness.rollout.chat import ChatModelPolicyFactory
from envharness.rollout.episode_tracing import EPISODE_RUN_NAME, traced_episode
from envharness.rollout.executors import LocalExecutor
from envharness.testing import FakeToolCallingModel

SPEC = HarnessSpec(BridgeSpec("toy24", "1-1-4-6", {"max_steps": 3}))
UNDO = {"tool": "undo", "args": {}}


class Collector(BaseTracer):
    def __init__(self) -> None:
        super().__init__()
        self.runs: list[Run] = []

    def _persist_run(self, run: Run) -> None:
        pass

    def _end_trace(self, run: Run) -> None:
        self.runs.append(run)
        super()._end_trace(run)


def traced(kind: str, model: FakeToolCallingModel) -> tuple[Collector, list]:
    tracer = Collector()
    factory = ChatModelPolicyFactory(model)

    def play(_: object) -> list:
        with LocalExecutor(2 if kind == "thread" else 1, kind=kind) as executor:
            return run_rollouts(SPEC, factory, 3, seed=7, executor=executor)

    trajectories = RunnableLambda(play, name="caller").invoke(None, {"callbacks": [tracer]})
    return tracer, trajectories


@pytest.mark.parametrize("kind", ["inline", "thread"])
def test_each_episode_is_a_run_holding_its_model_calls(kind):
    model = FakeToolCallingModel(responses=[UNDO] * 20)
    tracer, trajectories = traced(kind, model)
    (caller,) = [r for r in tracer.runs if r.name == "caller"]
    episodes = sorted(
        (r for r in tracer.runs if r.name == EPISODE_RUN_NAME), key=lambda r: r.inputs["seed"]
    )
    assert [e.inputs["seed"] for e in episodes] == [7, 8, 9]
    for episode, trajectory in zip(episodes, trajectories, strict=True):
        assert episode.parent_run_id == caller.id
        assert episode.metadata["task_id"] == "1-1-4-6"
        assert episode.metadata["spec_id"] == trajectory.spec_id
        assert episode.metadata["policy"] == "fake-tool-calling"
        assert episode.outputs == {
            "success": trajectory.success,
            "steps": trajectory.n_steps,
            "end_reason": trajectory.end_reason,
        }
        calls = [r for r in tracer.runs if r.parent_run_id == episode.id]
        assert len(calls) == trajectory.n_steps == 3
        assert all(c.run_type == "llm" for c in calls)
    assert len(model.calls) == 9


def test_outside_a_run_an_episode_is_not_traced(monkeypatch):
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_TRACING_V2"):
        monkeypatch.delenv(name, raising=False)
    factory = ChatModelPolicyFactory(FakeToolCallingModel(responses=[UNDO] * 3))
    with collect_runs() as collected:  # sees every run started here, in no parent run
        (trajectory,) = run_rollouts(SPEC, factory, 1, executor=LocalExecutor(1))
    names = [run.name for run in collected.traced_runs]
    assert trajectory.n_steps == 3 and len(names) == 3, names  # the model calls alone
    assert EPISODE_RUN_NAME not in names


def test_an_episode_that_raises_is_recorded_as_an_error():
    tracer = Collector()

    def boom():
        raise ValueError("the env broke")

    def caller(_: object) -> None:
        traced_episode(boom, task_id="t", seed=1, spec_id="s", policy="p")

    with pytest.raises(ValueError, match="the env broke"):
        RunnableLambda(caller).invoke(None, {"callbacks": [tracer]})
    (episode,) = [r for r in tracer.runs if r.name == EPISODE_RUN_NAME]
    assert "the env broke" in episode.error
