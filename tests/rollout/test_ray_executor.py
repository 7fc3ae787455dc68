from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
from worker_fakes import CrashingToy24, RaisingPolicyFactory

from envharness import register
from envharness.bridges import registry
from envharness.errors import DependencyNotInstalled, ExecutorError
from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.rollout import ray_executor
from envharness.rollout.batch import RolloutRequest, run_batch, run_rollouts
from envharness.rollout.executors import LocalExecutor
from envharness.rollout.policies import OraclePolicyFactory
from envharness.rollout.ray_executor import RayExecutor

requires_ray = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None,
    reason="ray is not installed (pip install 'envharness[ray]'); the Ray executor is untested",
)

HERE = Path(__file__).resolve().parent
TIMING = ("started_at", "duration_seconds", "policy_seconds", "env_seconds")


def comparable(trajectory):
    data = trajectory.to_dict()
    for name in TIMING:
        data.pop(name, None)
    for step in data["steps"]:
        for name in TIMING:
            step.pop(name, None)
    return data


def toy(task="4-4-10-10"):
    return HarnessSpec(BridgeSpec("toy24", task))


@pytest.fixture(scope="module")
def ray_executor_2cpu():
    """One local Ray (2 CPUs) for the whole module: ray.init takes several seconds."""
    import ray

    if ray.is_initialized():
        pytest.skip("Ray is already initialized by someone else; these tests start their own")
    # Ray workers do not share the test process's sys.path: give them worker_fakes.
    paths = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    executor = RayExecutor(
        num_cpus=2, init_kwargs={"runtime_env": {"env_vars": {"PYTHONPATH": paths}}}
    )
    yield executor
    executor.close()
    assert not ray.is_initialized()  # we started it, so we shut it down


def test_missing_ray_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        ray_executor.importlib.util,
        "find_spec",
        lambda name, *args: None if name == "ray" else real(name, *args),
    )
    with pytest.raises(DependencyNotInstalled, match=r"pip install 'envharness\[ray\]'"):
        RayExecutor()


@requires_ray
def test_bad_num_cpus_is_refused():
    with pytest.raises(ValueError, match="num_cpus to be a positive int"):
        RayExecutor(num_cpus=0)


@requires_ray
def test_ray_gives_the_same_trajectories_in_request_order(ray_executor_2cpu):
    tasks = ("4-4-10-10", "1-1-4-6")
    requests = [RolloutRequest(toy(task), seed, 12) for task in tasks for seed in range(5)]
    factory = OraclePolicyFactory(0.5)
    expected = [comparable(t) for t in run_batch(requests, factory, executor=LocalExecutor(1))]
    got = run_batch(requests, factory, executor=ray_executor_2cpu)
    assert [(t.task_id, t.seed) for t in got] == [(r.task_id, r.seed) for r in requests]
    assert [comparable(t) for t in got] == expected
    assert ray_executor_2cpu.started_ray and ray_executor_2cpu.workers == 2
    chunked = run_batch(requests, factory, executor=RayExecutor(chunksize=4))  # Ray is up
    assert [comparable(t) for t in chunked] == expected


@requires_ray
def test_a_crashed_ray_worker_gives_a_failed_trajectory(ray_executor_2cpu):
    register("crashing_toy24", f"{CrashingToy24.__module__}:CrashingToy24")
    try:
        options = {"crash_seeds": [1], "host_pid": os.getpid()}
        spec = HarnessSpec(BridgeSpec("crashing_toy24", "4-4-10-10", options))
        batch = run_rollouts(spec, OraclePolicyFactory(1.0), 4, executor=ray_executor_2cpu)
    finally:
        registry._REGISTERED.pop("crashing_toy24", None)
    assert [t.end_reason for t in batch] == ["terminated", "env_error", "terminated", "terminated"]
    assert batch[1].error.startswith("worker process died") and batch[1].evaluation is None
    assert all(t.success for i, t in enumerate(batch) if i != 1)


@requires_ray
def test_a_policy_raising_on_ray_is_recorded(ray_executor_2cpu):
    batch = run_rollouts(toy(), RaisingPolicyFactory(), 3, executor=ray_executor_2cpu)
    assert [t.end_reason for t in batch] == ["policy_error"] * 3


@requires_ray
def test_an_executor_that_did_not_start_ray_leaves_it_running(ray_executor_2cpu):
    import ray

    run_rollouts(toy(), OraclePolicyFactory(1.0), 1, executor=ray_executor_2cpu)
    borrowed = RayExecutor()
    with borrowed:
        assert run_rollouts(toy(), OraclePolicyFactory(1.0), 2, executor=borrowed)[1].success
    assert not borrowed.started_ray and ray.is_initialized()
    with pytest.raises(ExecutorError, match="RayExecutor is closed"):
        run_rollouts(toy(), OraclePolicyFactory(1.0), 1, executor=borrowed)
    borrowed.close()  # idempotent
