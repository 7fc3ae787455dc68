"""Running batches of rollouts: resume, progress, spec checks, and the default executor.

:func:`run_rollouts` plays ``n`` episodes of one spec (seeds ``seed`` to ``seed + n - 1``) and
:func:`run_batch` any list of :class:`~envharness.rollout.jobs.RolloutRequest`; both return the
trajectories in request order, resume from a :class:`~envharness.rollout.store.RunStore`, report
progress, and run on any executor (:mod:`envharness.rollout.executors`), a fresh
:class:`~envharness.rollout.executors.LocalExecutor` by default. What a worker does with a
request is in :mod:`envharness.rollout.jobs` (re-exported here).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from envharness.errors import EnvHarnessError, ExecutorError, SpecError, TrajectoryError
from envharness.harness.spec import HarnessSpec
from envharness.rollout.executors import Executor, LocalExecutor
from envharness.rollout.jobs import (
    Registrations,
    RolloutRequest,
    WorkerJob,
    failed_trajectory,
    pack_job,
    pack_user_code,
    run_pickled_job,
    run_worker_job,
)
from envharness.rollout.policy import PolicyFactory, describe_policy
from envharness.rollout.store import RunStore
from envharness.rollout.trajectory import Trajectory

__all__ = [
    "Progress",
    "Registrations",
    "RolloutRequest",
    "WorkerJob",
    "failed_trajectory",
    "pack_job",
    "pack_user_code",
    "run_batch",
    "run_pickled_job",
    "run_rollouts",
    "run_worker_job",
]

Progress = Callable[[int, int, Trajectory], None]
"""``progress(done, total, trajectory)``: called in the caller's thread after each new rollout."""


def _check_step_timeout(step_timeout: object) -> float | None:
    if step_timeout is None:
        return None
    if (
        isinstance(step_timeout, bool)
        or not isinstance(step_timeout, int | float)
        or not 0 < step_timeout < math.inf
    ):
        raise ValueError(
            f"expected step_timeout to be a positive number of seconds or None, got "
            f"{step_timeout!r}"
        )
    return float(step_timeout)


def _check_specs(requests: Iterable[RolloutRequest]) -> None:
    """Builds (and closes) each distinct spec once, so a bad spec fails before any rollout."""
    seen: set[str] = set()
    for request in requests:
        if request.spec_id in seen:
            continue
        seen.add(request.spec_id)
        try:
            request.harness_spec().build().close()
        except EnvHarnessError:
            raise
        except Exception as e:
            raise SpecError(
                f"cannot build the env of spec {request.spec_id} (task {request.task_id!r}): "
                f"{type(e).__name__}: {e}"
            ) from e


def run_batch(
    requests: Iterable[RolloutRequest],
    policy_factory: PolicyFactory,
    *,
    executor: Executor | None = None,
    store: RunStore | None = None,
    step_timeout: float | None = None,
    progress: Progress | None = None,
    validate: bool = True,
) -> list[Trajectory]:
    """Runs many rollout requests (any tasks, any seeds); returns trajectories in request order.

    With a ``store``, a request whose key ``(spec_id, describe_policy(policy_factory), seed)`` is
    already stored is not run again: its stored trajectory is returned in its place (resume),
    whatever it says — a failed trajectory (say, a worker that died) counts as done; use a new
    run directory to retry. Each new trajectory is added to the store as soon as it arrives, so
    an interrupted batch loses only the rollouts in flight, and requests with the same key are
    run once. The store key does not include ``max_steps``: a stored trajectory played with another
    explicit budget raises :class:`~envharness.errors.TrajectoryError` rather than being reused.

    Args:
        requests: The rollouts to run.
        policy_factory: ``factory(seed) -> Policy`` (for process and Ray executors it must pickle
            with cloudpickle: a lambda or a closure does, a live model client does not).
        executor: Where to run; a fresh ``LocalExecutor()`` (closed at the end) by default.
        store: A writable run store for resuming and recording.
        step_timeout: Seconds the policy may take per action; ``None`` waits forever.
        progress: ``progress(done, total, trajectory)`` after each new rollout (stored ones are
            not counted in ``total``).
        validate: Build each distinct spec once in this process first, so a missing bridge,
            task or extra raises here instead of failing every rollout.

    Returns:
        One trajectory per request, in request order.

    Raises:
        TypeError: If a request is not a :class:`RolloutRequest` or the factory not callable.
        ValueError: If ``step_timeout`` is not positive.
        BridgeError: With ``validate``, if a spec's bridge or task does not exist (e.g.
            :class:`~envharness.errors.UnknownBridgeError`).
        SpecError: With ``validate``, if a spec cannot be built.
        ExecutorError: If the executor cannot run the batch (see
            :meth:`~envharness.rollout.executors.Executor.run`).
        TrajectoryError: If the store holds a request's key played with another budget.

    Example:
        >>> import tempfile
        >>> from envharness.harness.spec import BridgeSpec, HarnessSpec
        >>> from envharness.rollout.executors import LocalExecutor
        >>> from envharness.rollout.policies import OraclePolicyFactory
        >>> requests = [RolloutRequest(HarnessSpec(BridgeSpec("toy24", task)), seed=0)
        ...             for task in ("4-4-10-10", "1-1-4-6")]
        >>> with tempfile.TemporaryDirectory() as run_dir, RunStore(run_dir) as store:
        ...     first = run_batch(requests, OraclePolicyFactory(1.0),
        ...                       executor=LocalExecutor(1), store=store)
        ...     again = run_batch(requests, OraclePolicyFactory(1.0),
        ...                       executor=LocalExecutor(1), store=store)
        ...     [t.task_id for t in again], len(store)
        (['4-4-10-10', '1-1-4-6'], 2)
    """
    requests = list(requests)
    for i, request in enumerate(requests):
        if not isinstance(request, RolloutRequest):
            raise TypeError(f"request {i}: expected a RolloutRequest, got {request!r}")
    if not callable(policy_factory):
        raise TypeError(
            f"expected a policy factory (a callable seed -> Policy), got {policy_factory!r}"
        )
    timeout = _check_step_timeout(step_timeout)
    name = describe_policy(policy_factory)
    results: list[Trajectory | None] = [None] * len(requests)
    todo: list[int] = []
    first_of_key: dict[str, int] = {}
    copies: dict[int, int] = {}
    for i, request in enumerate(requests):
        if store is None:  # nothing to resume from or to deduplicate against
            todo.append(i)
            continue
        key = request.key(name)
        stored = store.get(key)
        if stored is not None:
            _check_budget(store, key, stored, request)
            results[i] = stored
        elif key in first_of_key:
            copies[i] = first_of_key[key]
        else:
            first_of_key[key] = i
            todo.append(i)
    if validate:
        _check_specs(requests[i] for i in todo)
    done = 0

    def on_result(position: int, trajectory: Trajectory) -> None:
        nonlocal done
        results[todo[position]] = trajectory
        if store is not None:
            store.add(trajectory)
        done += 1
        if progress is not None:
            progress(done, len(todo), trajectory)

    if todo:
        own = executor is None
        runner = LocalExecutor() if executor is None else executor
        try:
            runner.run(
                [requests[i] for i in todo],
                policy_factory,
                policy_name=name,
                step_timeout=timeout,
                on_result=on_result,
            )
        finally:
            if own:
                runner.close()
    for i, original in copies.items():
        results[i] = results[original]
    missing = [i for i, trajectory in enumerate(results) if trajectory is None]
    if missing:
        raise ExecutorError(f"no trajectory came back for {len(missing)} request(s): {missing}")
    return [trajectory for trajectory in results if trajectory is not None]


def _check_budget(store: RunStore, key: str, stored: Trajectory, request: RolloutRequest) -> None:
    if request.max_steps is not None and stored.max_steps != request.max_steps:
        raise TrajectoryError(
            f"{str(store.run_dir)!r} already holds {key} played with max_steps="
            f"{stored.max_steps}, not {request.max_steps}; use another run directory for "
            "another step budget"
        )


def run_rollouts(
    spec: HarnessSpec | dict[str, Any],
    policy_factory: PolicyFactory,
    n: int,
    *,
    seed: int = 0,
    executor: Executor | None = None,
    store: RunStore | None = None,
    max_steps: int | None = None,
    step_timeout: float | None = None,
    progress: Progress | None = None,
) -> list[Trajectory]:
    """Plays ``n`` episodes of one spec, with seeds ``seed`` to ``seed + n - 1``, in that order.

    The same spec, factory and seeds give the same trajectories on every executor (timing fields
    aside). See :func:`run_batch` for ``executor``, ``store``, ``step_timeout`` and ``progress``.

    Args:
        spec: The harness spec (or its dict); it is built inside each worker.
        policy_factory: ``factory(seed) -> Policy``.
        n: Episodes.
        seed: The first episode's seed.
        executor: Where to run; a fresh ``LocalExecutor()`` by default.
        store: A run store for resuming and recording.
        max_steps: The agent's budget per episode; the env's own by default.
        step_timeout: Seconds the policy may take per action.
        progress: ``progress(done, total, trajectory)`` after each new rollout.

    Raises:
        ValueError: If ``n`` is negative, or ``max_steps``/``step_timeout`` is not positive.
        SpecError: If ``spec`` is malformed or cannot be built.
        BridgeError: If its bridge or task does not exist.
        ExecutorError: If the executor cannot run the batch.

    Example:
        >>> from envharness.harness.spec import BridgeSpec, HarnessSpec
        >>> from envharness.rollout.executors import LocalExecutor
        >>> from envharness.rollout.policies import RandomPolicyFactory
        >>> spec = HarnessSpec(BridgeSpec("toy24", "1-1-4-6"))
        >>> batch = run_rollouts(spec, RandomPolicyFactory(), 2, seed=10,
        ...                      executor=LocalExecutor(1), max_steps=3)
        >>> [(t.seed, t.n_steps <= 3) for t in batch]
        [(10, True), (11, True)]
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"expected n to be an int >= 0, got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"expected an int seed, got {seed!r}")
    first = RolloutRequest(spec, seed, max_steps)
    requests = [RolloutRequest(first.spec, seed + i, max_steps) for i in range(n)]
    return run_batch(
        requests,
        policy_factory,
        executor=executor,
        store=store,
        step_timeout=step_timeout,
        progress=progress,
    )
