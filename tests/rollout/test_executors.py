from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from worker_fakes import (
    CrashingToy24,
    NotAPolicyFactory,
    RaisingPolicyFactory,
    RecordingOracleFactory,
    UnloadableFactory,
)

from envharness import register
from envharness.bridges import registry
from envharness.errors import ExecutorError, SpecError, TrajectoryError, UnknownBridgeError
from envharness.harness import Setups
from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.rollout.batch import (
    Registrations,
    RolloutRequest,
    WorkerJob,
    failed_trajectory,
    pack_job,
    run_batch,
    run_pickled_job,
    run_rollouts,
    run_worker_job,
)
from envharness.rollout.executors import LocalExecutor, _preparing_without_main, default_workers
from envharness.rollout.policies import OraclePolicy, OraclePolicyFactory, RandomPolicyFactory
from envharness.rollout.store import RunStore
from envharness.rollout.trajectory import Trajectory

TIMING = ("started_at", "duration_seconds", "policy_seconds", "env_seconds")
TASKS = ("4-4-10-10", "1-1-4-6", "3-3-8-8")


def comparable(trajectory: Trajectory) -> dict:
    """The trajectory's dict without the timing fields (what must match across executors)."""
    data = trajectory.to_dict()
    for name in TIMING:
        data.pop(name, None)
    for step in data["steps"]:
        for name in TIMING:
            step.pop(name, None)
    return data


def toy(task: str = "4-4-10-10") -> HarnessSpec:
    return HarnessSpec(BridgeSpec("toy24", task))


def requests_for(tasks=TASKS, seeds=range(4), max_steps=12) -> list[RolloutRequest]:
    return [RolloutRequest(toy(task), seed, max_steps) for task in tasks for seed in seeds]


@pytest.fixture(scope="module")
def pool():
    """A 2-process pool shared by the tests that only need a working pool."""
    with LocalExecutor(2, "process") as executor:
        yield executor


@pytest.fixture
def crashing():
    """Registers the crashing bridge by path; yields a spec maker for given crash seeds."""
    register("crashing_toy24", f"{CrashingToy24.__module__}:CrashingToy24")

    def make(crash_seeds, task="4-4-10-10"):
        options = {"crash_seeds": list(crash_seeds), "host_pid": os.getpid()}
        return HarnessSpec(BridgeSpec("crashing_toy24", task, options))

    yield make
    registry._REGISTERED.pop("crashing_toy24", None)


# -- requests -----------------------------------------------------------------------------------


def test_request_keeps_a_json_copy_of_the_spec_and_compares_by_id_seed_budget():
    spec = HarnessSpec.from_env(
        Setups(toy().build(), [{"tool": "combine", "args": {"a": "10", "op": "*", "b": "10"}}])
    )
    from_object = RolloutRequest(spec, 3, 12)
    from_dict = RolloutRequest(spec.to_dict(), 3, 12)
    assert from_object == from_dict and hash(from_object) == hash(from_dict)
    assert from_object.spec_id == spec.spec_id and from_object.spec == spec.to_dict()
    assert from_object.harness_spec() == spec
    assert from_object != RolloutRequest(spec, 4, 12)
    assert from_object.key("oracle:0.5") == RunStore.key(spec.spec_id, "oracle:0.5", 3)
    assert pickle.loads(pickle.dumps(from_object)) == from_object


@pytest.mark.parametrize(
    ("spec", "seed", "max_steps", "error", "match"),
    [
        ("toy24", 0, None, SpecError, "expected a HarnessSpec or a spec dict, got str"),
        ({"bridge": {}}, 0, None, SpecError, "envharness_spec"),
        (toy(), "0", None, TypeError, "expected an int seed, got '0'"),
        (toy(), True, None, TypeError, "expected an int seed"),
        (toy(), 0, 0, ValueError, "max_steps to be a positive int or None, got 0"),
    ],
)
def test_bad_requests_are_refused(spec, seed, max_steps, error, match):
    with pytest.raises(error, match=match):
        RolloutRequest(spec, seed, max_steps)


# -- order, seeds, determinism ------------------------------------------------------------------


def test_run_rollouts_uses_consecutive_seeds_in_order():
    batch = run_rollouts(toy(), OraclePolicyFactory(0.5), 5, seed=7, executor=LocalExecutor(1))
    assert [t.seed for t in batch] == [7, 8, 9, 10, 11]
    assert {t.policy for t in batch} == {"oracle:0.5"}
    assert all(t.spec_id == toy().spec_id for t in batch)


def test_run_rollouts_with_no_episodes_runs_nothing():
    assert run_rollouts(toy(), OraclePolicyFactory(0.5), 0, executor=LocalExecutor(1)) == []


def test_same_trajectories_inline_on_threads_and_on_processes(pool):
    requests = requests_for(seeds=range(6))
    factory = OraclePolicyFactory(0.5)
    inline = run_batch(requests, factory, executor=LocalExecutor(1))
    assert [(t.task_id, t.seed) for t in inline] == [(r.task_id, r.seed) for r in requests]
    assert Counter(t.success for t in inline)[True] not in (0, len(inline))  # skill 0.5 varies
    expected = [comparable(t) for t in inline]
    with LocalExecutor(2, "thread") as threads:
        assert [comparable(t) for t in run_batch(requests, factory, executor=threads)] == expected
    with LocalExecutor(1, "process") as one_process:
        assert [comparable(t) for t in run_batch(requests, factory, executor=one_process)] == (
            expected
        )
    assert [comparable(t) for t in run_batch(requests, factory, executor=pool)] == expected
    chunked = LocalExecutor(2, "process", chunksize=5)
    with chunked:
        assert [comparable(t) for t in run_batch(requests, factory, executor=chunked)] == expected


def test_a_pool_is_kept_across_batches(tmp_path):
    factory = RecordingOracleFactory(str(tmp_path / "played.txt"))
    with LocalExecutor(2, "process") as executor:
        run_rollouts(toy(), factory, 8, executor=executor)
        first = {pid for pid, _ in factory.played()}
        run_rollouts(toy(), factory, 8, seed=8, executor=executor)
        both = {pid for pid, _ in factory.played()}
    assert os.getpid() not in both
    assert 1 <= len(both) <= 2 and first <= both
    assert sorted(seed for _, seed in factory.played()) == list(range(16))


def test_default_executor_is_made_and_closed_for_the_call():
    batch = run_batch(requests_for(seeds=range(2)), OraclePolicyFactory(1.0))
    assert len(batch) == 6 and all(t.success for t in batch)


# -- resume and progress ------------------------------------------------------------------------


def test_resume_from_a_store_runs_only_what_is_missing(tmp_path, pool):
    factory = RecordingOracleFactory(str(tmp_path / "played.txt"))
    with RunStore(tmp_path / "run") as store:
        first = run_rollouts(toy(), factory, 3, executor=pool, store=store)
        assert sorted(seed for _, seed in factory.played()) == [0, 1, 2]
        assert len(store) == 3
        calls = []
        again = run_rollouts(
            toy(),
            factory,
            5,
            executor=pool,
            store=store,
            progress=lambda done, total, t: calls.append((done, total, t.seed)),
        )
    assert sorted(seed for _, seed in factory.played()) == [0, 1, 2, 3, 4]  # only 3 and 4 ran
    assert [t.seed for t in again] == [0, 1, 2, 3, 4]
    assert [t.to_dict() for t in again[:3]] == [t.to_dict() for t in first]  # stored, as is
    assert sorted(call[2] for call in calls) == [3, 4]
    assert [call[:2] for call in calls] == [(1, 2), (2, 2)]
    with RunStore(tmp_path / "run") as store:
        assert len(store) == 5
        unchanged = run_rollouts(toy(), factory, 5, executor=LocalExecutor(1), store=store)
        assert len(store) == 5
    assert len(factory.played()) == 5
    assert [t.to_dict() for t in unchanged] == [t.to_dict() for t in again]


def test_duplicate_requests_run_once_with_a_store(tmp_path):
    factory = RecordingOracleFactory(str(tmp_path / "played.txt"))
    request = RolloutRequest(toy(), 4, 12)
    with RunStore(tmp_path / "run") as store:
        batch = run_batch([request, request], factory, executor=LocalExecutor(1), store=store)
        assert len(store) == 1
    assert batch[0] is batch[1] and len(factory.played()) == 1


def test_a_stored_trajectory_with_another_budget_is_not_reused(tmp_path):
    with RunStore(tmp_path / "run") as store:
        run_rollouts(
            toy(), OraclePolicyFactory(1.0), 1, max_steps=12, store=store, executor=LocalExecutor(1)
        )
        with pytest.raises(TrajectoryError, match="played with max_steps=12, not 5"):
            run_rollouts(
                toy(),
                OraclePolicyFactory(1.0),
                1,
                max_steps=5,
                store=store,
                executor=LocalExecutor(1),
            )


def test_progress_counts_every_new_rollout():
    calls = []
    run_batch(
        requests_for(seeds=range(2)),
        OraclePolicyFactory(0.5),
        executor=LocalExecutor(2, "thread"),
        progress=lambda done, total, t: calls.append((done, total)),
    )
    assert calls == [(i, 6) for i in range(1, 7)]


# -- bad input ----------------------------------------------------------------------------------


def test_a_dead_worker_gives_a_failed_trajectory_and_the_batch_finishes(crashing):
    spec = crashing({2, 9})
    factory = OraclePolicyFactory(0.5)
    expected = run_rollouts(spec, factory, 12, executor=LocalExecutor(1))  # no crash in this pid
    assert all(t.error is None for t in expected)
    with LocalExecutor(2, "process") as executor:
        batch = run_rollouts(spec, factory, 12, executor=executor)
        for seed in (2, 9):
            failed = batch[seed]
            assert failed.end_reason == "env_error" and failed.evaluation is None
            assert failed.error.startswith("worker process died") and failed.steps == []
            assert failed.seed == seed and failed.spec_id == spec.spec_id
        survivors = [i for i in range(12) if i not in (2, 9)]
        assert [comparable(batch[i]) for i in survivors] == [
            comparable(expected[i]) for i in survivors
        ]
        # the executor restarted its pool and still works
        after = run_rollouts(toy(), factory, 2, executor=executor)
        assert [t.error for t in after] == [None, None]


def test_a_worker_death_is_pinned_with_a_one_process_pool(crashing):
    with LocalExecutor(1, "process") as executor:
        batch = run_rollouts(crashing({0}), OraclePolicyFactory(1.0), 3, executor=executor)
    assert [t.end_reason for t in batch] == ["env_error", "terminated", "terminated"]


def test_a_missing_bridge_is_reported_before_any_rollout(tmp_path, pool):
    factory = RecordingOracleFactory(str(tmp_path / "played.txt"))
    spec = HarnessSpec(BridgeSpec("no_such_bridge", "x"))
    with pytest.raises(UnknownBridgeError, match="no bridge named 'no_such_bridge'"):
        run_rollouts(spec, factory, 3, executor=pool)
    assert factory.played() == []


def test_without_validation_every_rollout_records_the_missing_bridge(pool):
    spec = HarnessSpec(BridgeSpec("no_such_bridge", "x"))
    requests = [RolloutRequest(spec, seed) for seed in range(3)]
    batch = run_batch(requests, OraclePolicyFactory(1.0), executor=pool, validate=False)
    assert [t.end_reason for t in batch] == ["env_error"] * 3
    assert all(t.error.startswith("UnknownBridgeError: no bridge named") for t in batch)
    assert [t.seed for t in batch] == [0, 1, 2] and {t.bridge for t in batch} == {"no_such_bridge"}


def test_a_policy_that_raises_on_every_step_is_recorded(pool):
    batch = run_batch(requests_for(seeds=range(3)), RaisingPolicyFactory(), executor=pool)
    assert len(batch) == 9
    assert {t.end_reason for t in batch} == {"policy_error"}
    assert {t.error for t in batch} == {"RuntimeError: the policy broke"}
    assert {t.policy for t in batch} == {"raising"}
    assert all(t.evaluation is not None and not t.success for t in batch)


def test_a_factory_that_returns_no_policy_is_recorded():
    batch = run_rollouts(toy(), NotAPolicyFactory(), 2, executor=LocalExecutor(1))
    assert [t.end_reason for t in batch] == ["policy_error", "policy_error"]
    assert batch[0].error.startswith("TypeError: the policy factory returned object")


def test_a_closure_or_a_lambda_factory_runs_on_processes(pool):
    skill = 1.0

    def factory(seed):
        return OraclePolicy(skill, seed=seed)

    closure = run_rollouts(toy(), factory, 3, executor=pool)
    lambdas = run_rollouts(toy(), lambda seed: OraclePolicy(skill, seed=seed), 3, executor=pool)
    inline = run_rollouts(toy(), factory, 3, executor=LocalExecutor(1))
    assert [comparable(t) for t in closure] == [comparable(t) for t in inline]
    assert [t.success for t in lambdas] == [True, True, True]


def test_an_unpicklable_factory_is_refused_by_processes_and_runs_on_threads():
    lock = threading.Lock()  # no pickler sends a lock

    def factory(seed):
        with lock:
            return OraclePolicyFactory(1.0)(seed)

    with pytest.raises(ExecutorError, match="cannot be sent to the worker processes") as raised:
        run_rollouts(toy(), factory, 2, executor=LocalExecutor(2, "process"))
    assert "lock" in str(raised.value) and "kind='thread'" in str(raised.value)
    with LocalExecutor(2, "thread") as threads:
        batch = run_rollouts(toy(), factory, 2, executor=threads)
    assert all(t.success for t in batch) and {t.policy for t in batch} == {"function"}


def test_a_chat_model_object_is_refused_by_processes():
    pytest.importorskip("langchain_core", reason="langchain-core is needed for the chat policy")
    from envharness.rollout.chat import ChatModelPolicyFactory
    from envharness.testing import FakeToolCallingModel

    factory = ChatModelPolicyFactory(FakeToolCallingModel(responses=["undo"]))
    with pytest.raises(ExecutorError, match="run it with a thread executor"):
        run_rollouts(toy(), factory, 1, executor=LocalExecutor(2, "process"))


def test_a_bridge_class_defined_in_a_function_runs_on_processes(pool):
    class LocalToy(CrashingToy24):
        bridge_name = "local_toy"

    register("local_toy", LocalToy)
    try:
        spec = HarnessSpec(BridgeSpec("local_toy", "4-4-10-10"))
        batch = run_rollouts(spec, OraclePolicyFactory(1.0), 2, executor=pool)
        assert [t.success for t in batch] == [True, True]
        assert {t.bridge for t in batch} == {"local_toy"}
    finally:
        registry._REGISTERED.pop("local_toy", None)


def test_a_bridge_class_that_cannot_pickle_is_refused_by_processes(pool):
    class LockedToy(CrashingToy24):
        bridge_name = "locked_toy"
        guard = threading.Lock()  # the class pickles by value, and its lock cannot

    register("locked_toy", LockedToy)
    try:
        spec = HarnessSpec(BridgeSpec("locked_toy", "4-4-10-10"))
        with pytest.raises(ExecutorError, match="bridge 'locked_toy' is registered as"):
            run_rollouts(spec, OraclePolicyFactory(1.0), 1, executor=pool)
        other = run_rollouts(toy(), OraclePolicyFactory(1.0), 1, executor=pool)
        assert other[0].success  # an unused registration that cannot travel is left behind
        batch = run_rollouts(spec, OraclePolicyFactory(1.0), 1, executor=LocalExecutor(1))
        assert batch[0].success
    finally:
        registry._REGISTERED.pop("locked_toy", None)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: run_rollouts(toy(), OraclePolicyFactory(), -1), ValueError, "n to be an int >= 0"),
        (lambda: run_rollouts(toy(), OraclePolicyFactory(), 1, seed=1.5), TypeError, "int seed"),
        (
            lambda: run_rollouts(toy(), OraclePolicyFactory(), 1, step_timeout=0),
            ValueError,
            "step_timeout to be a positive number",
        ),
        (lambda: run_batch([toy()], OraclePolicyFactory()), TypeError, "expected a RolloutRequest"),
        (lambda: run_batch([], "oracle"), TypeError, "expected a policy factory"),
        (lambda: LocalExecutor(0), ValueError, "workers to be a positive int"),
        (lambda: LocalExecutor(2, "gpu"), ValueError, "kind to be one of process, thread, inline"),
        (lambda: LocalExecutor(2, "inline"), ValueError, "one rollout at a time"),
        (lambda: LocalExecutor(2, chunksize=0), ValueError, "chunksize to be a positive int"),
    ],
)
def test_bad_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call()


# -- executors ----------------------------------------------------------------------------------


def test_kinds_default_from_the_worker_count():
    assert LocalExecutor(1).kind == "inline"
    assert LocalExecutor(2).kind == "process" and LocalExecutor(2).workers == 2
    assert LocalExecutor().workers == default_workers()
    assert LocalExecutor(3, "thread").crosses_processes is False
    assert repr(LocalExecutor(2, "thread")) == "<LocalExecutor kind='thread' workers=2>"


def test_close_is_idempotent_and_a_closed_executor_refuses_work():
    executor = LocalExecutor(2, "process")
    with executor:
        run_rollouts(toy(), OraclePolicyFactory(1.0), 1, executor=executor)
    executor.close()
    assert executor.closed
    with pytest.raises(ExecutorError, match="LocalExecutor is closed"):
        run_rollouts(toy(), OraclePolicyFactory(1.0), 1, executor=executor)


def test_a_job_its_worker_cannot_load_raises_an_executor_error(pool):
    with pytest.raises(ExecutorError, match="cannot load its job: RuntimeError: this factory"):
        run_rollouts(toy(), UnloadableFactory(), 2, executor=pool)
    assert [t.success for t in run_rollouts(toy(), OraclePolicyFactory(1.0), 2, executor=pool)] == [
        True,
        True,
    ]


# -- the worker side ----------------------------------------------------------------------------


def test_worker_job_records_a_spec_that_cannot_be_built():
    request = RolloutRequest(toy("9-9-9-9"), 0)  # not a Toy24 task
    job = WorkerJob((request,), OraclePolicyFactory(1.0), "oracle:1")
    (line,) = run_worker_job(job)
    trajectory = Trajectory.from_json(line)
    assert trajectory.end_reason == "env_error" and trajectory.error.startswith("UnknownTaskError")
    assert trajectory.task_id == "9-9-9-9" and trajectory.policy == "oracle:1"


def test_worker_records_the_request_spec_and_policy_name():
    spec = HarnessSpec(BridgeSpec("toy24", "4-4-10-10", {"max_steps": 12}))  # default spelled out
    request = RolloutRequest(spec, 1)
    (line,) = run_worker_job(WorkerJob((request,), RandomPolicyFactory(), "my-policy"))
    trajectory = Trajectory.from_json(line)
    assert trajectory.spec_id == spec.spec_id != toy().spec_id
    assert RunStore.key_of(trajectory) == request.key("my-policy")


def test_registrations_snapshot_pickles_and_filters(crashing):
    snapshot = Registrations.snapshot()
    assert ("crashing_toy24", "worker_fakes:CrashingToy24") in snapshot.bridges
    assert pickle.loads(pickle.dumps(snapshot)) == snapshot
    assert "crashing_toy24" not in dict(snapshot.without(["crashing_toy24"]).bridges)


def test_failed_trajectory_names_the_request():
    failed = failed_trajectory(RolloutRequest(toy(), 5, 9), "random", "env_error", "boom")
    assert (failed.task_id, failed.bridge, failed.seed, failed.max_steps) == (
        "4-4-10-10",
        "toy24",
        5,
        9,
    )
    assert failed.spec == RolloutRequest(toy(), 5).spec and failed.policy == "random"


def test_run_pickled_job_plays_a_packed_lambda_and_refuses_anything_else():
    job = WorkerJob((RolloutRequest(toy(), 0),), lambda seed: OraclePolicy(1.0, seed=seed), "l")
    (line,) = run_pickled_job(pack_job(job))
    assert Trajectory.from_json(line).success
    plain = WorkerJob((RolloutRequest(toy(), 0),), OraclePolicyFactory(1.0), "oracle")
    with pytest.raises(ExecutorError, match="expected a job made by pack_job, got WorkerJob"):
        run_pickled_job(pickle.dumps(plain))
    with pytest.raises(ExecutorError, match="cannot load its job: UnpicklingError"):
        run_pickled_job(b"not a pickle")


def test_workers_start_without_main_only_for_the_launching_thread():
    import multiprocessing.spawn

    original = multiprocessing.spawn.get_preparation_data
    seen = {}

    def other_thread():
        seen["other"] = multiprocessing.spawn.get_preparation_data("x")

    with _preparing_without_main():
        seen["mine"] = multiprocessing.spawn.get_preparation_data("x")
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
    assert multiprocessing.spawn.get_preparation_data is original
    assert seen["other"] == original("x")
    main_keys = {"init_main_from_path", "init_main_from_name"}
    assert not main_keys & set(seen["mine"])
    assert {k: v for k, v in original("x").items() if k not in main_keys} == seen["mine"]


# -- scripts without a main guard ---------------------------------------------------------------

# No `if __name__ == "__main__":` guard, a closure factory and the default executor, as a newcomer
# writes it. A worker that re-ran this file would print MAIN RAN again, or die of
# multiprocessing's "bootstrapping phase" error.
UNGUARDED = """\
print("MAIN RAN", flush=True)
from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.rollout import LocalExecutor, OraclePolicy, run_rollouts

skill = 1.0
spec = HarnessSpec(BridgeSpec("toy24", "4-4-10-10"))


class Factory:  # a class of the script itself
    def __call__(self, seed):
        return OraclePolicy(skill, seed=seed)


batch = run_rollouts(spec, lambda seed: OraclePolicy(skill, seed=seed), 4)
print([t.success for t in batch])
with LocalExecutor(2, "process") as executor:
    for factory in (lambda seed: OraclePolicy(skill, seed=seed), Factory()):
        batch = run_rollouts(spec, factory, 4, executor=executor)
        print([t.success for t in batch])
"""


@pytest.mark.parametrize("how", ["path", "module", "stdin"])
def test_an_unguarded_script_with_a_closure_factory_runs_on_processes(tmp_path, how):
    (tmp_path / "user_script.py").write_text(UNGUARDED)
    args = {"path": ["user_script.py"], "module": ["-m", "user_script"], "stdin": ["-"]}[how]
    root = Path(__file__).resolve().parents[2]
    path = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    out = subprocess.run(
        [sys.executable, *args],
        input=UNGUARDED if how == "stdin" else None,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": path},
        timeout=180,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "bootstrapping" not in out.stderr and "worker process died" not in out.stderr
    assert out.stdout.splitlines() == ["MAIN RAN", *["[True, True, True, True]"] * 3], out.stdout
