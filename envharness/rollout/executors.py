"""Executors: many rollouts at once, inline, on threads, on local processes, or on Ray.

:func:`~envharness.rollout.batch.run_rollouts` (``n`` episodes of one spec) and
:func:`~envharness.rollout.batch.run_batch` (any list of requests) take an ``executor``, which
decides where the rollouts run:

- :class:`LocalExecutor` — ``kind="process"`` (the default with several workers) runs them in a
  pool of worker processes, for CPU-bound envs; ``kind="thread"`` in a thread pool, for I/O-bound
  LLM policies (and the only choice for a policy factory holding a live model object);
  ``kind="inline"`` (the default with ``workers=1``) one after the other in the calling thread.
- :class:`~envharness.rollout.ray_executor.RayExecutor` — Ray tasks, on this machine or a cluster.

Whatever the executor, a worker builds the env from the spec, makes the policy with
``policy_factory(seed)`` and plays with :func:`~envharness.rollout.loop.rollout`; the same spec,
factory and seeds give the same trajectories on every executor (only the timing fields differ).
Plain Python works with the default executor: the factory may be a lambda or a closure (process
workers get it through ``cloudpickle``), and a script calling :func:`run_rollouts` needs no
``if __name__ == "__main__":`` guard (process workers start without the caller's main module).

Failures are recorded, not raised: a rollout whose env or policy fails ends with an ``end_reason``
and an ``error``, and a worker process that dies (a segfault or ``os._exit`` in an env, the
out-of-memory killer) gives the rollout it was running an ``env_error`` trajectory whose error
starts with ``"worker process died"``; the pool is restarted and the rest of the batch finishes.

Example:
    >>> from envharness.harness.spec import BridgeSpec, HarnessSpec
    >>> from envharness.rollout.batch import run_rollouts
    >>> from envharness.rollout.policies import OraclePolicyFactory
    >>> spec = HarnessSpec(BridgeSpec("toy24", "4-4-10-10"))
    >>> with LocalExecutor(workers=1) as executor:
    ...     batch = run_rollouts(spec, OraclePolicyFactory(1.0), 3, executor=executor)
    >>> [(t.seed, t.success) for t in batch]
    [(0, True), (1, True), (2, True)]
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import logging
import multiprocessing
import multiprocessing.context
import multiprocessing.spawn
import os
import pickle
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Literal

import cloudpickle

from envharness.errors import EnvHarnessError, ExecutorError
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
from envharness.rollout.lifeline import exit_with
from envharness.rollout.policy import PolicyFactory, describe_policy
from envharness.rollout.scheduling import JobPlanner, SingleJobs
from envharness.rollout.trajectory import Trajectory

__all__ = [
    "Executor",
    "ExecutorKind",
    "LocalExecutor",
    "WorkerLost",
    "default_workers",
]

_log = logging.getLogger("envharness.rollout")

ExecutorKind = Literal["process", "thread", "inline"]
"""Where a :class:`LocalExecutor` runs rollouts."""

_KINDS = ("process", "thread", "inline")
_MAX_AUTO_CHUNK = 32  # beyond this, one lost worker costs many re-runs for little gain
_FORKSERVER_PRELOAD = ["cloudpickle", "envharness.rollout.executors"]  # and all they import
_MAIN_KEYS = ("init_main_from_path", "init_main_from_name")


def default_workers() -> int:
    """The CPUs this process may use (``os.sched_getaffinity`` where it exists).

    Example:
        >>> default_workers() >= 1
        True
    """
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


class WorkerLost(ExecutorError):
    """Raised by an executor's ``_collect`` when the worker running a job died."""


def _share_specs(requests: list[RolloutRequest]) -> list[RolloutRequest]:
    """The requests, those with the same spec id holding one shared spec dict.

    Pickle writes an object it has seen once per message, so a job of many episodes of one task
    carries its spec once instead of once per request.
    """
    shared: dict[str, dict[str, Any]] = {}
    out = []
    for request in requests:
        spec = shared.setdefault(request.spec_id, request.spec)
        if spec is not request.spec:
            request = request.with_shared_spec(spec)  # equal content: the spec id is the same
        out.append(request)
    return out


class _Batch:
    """The caller's side of one :meth:`Executor.run`: results so far and the callback."""

    def __init__(
        self,
        requests: list[RolloutRequest],
        policy_factory: PolicyFactory,
        policy_name: str,
        step_timeout: float | None,
        registrations: Registrations | None,
        on_result: Callable[[int, Trajectory], None] | None,
    ) -> None:
        self.requests = _share_specs(requests)
        self.policy_factory = policy_factory
        self.policy_name = policy_name
        self.step_timeout = step_timeout
        self.registrations = registrations
        self.on_result = on_result
        self.results: list[Trajectory | None] = [None] * len(requests)

    def job(self, indices: Sequence[int]) -> WorkerJob:
        return WorkerJob(
            tuple(self.requests[i] for i in indices),
            self.policy_factory,
            self.policy_name,
            self.step_timeout,
            self.registrations,
        )

    def deliver(self, indices: Sequence[int], lines: object) -> None:
        if not isinstance(lines, list) or len(lines) != len(indices):
            raise ExecutorError(
                f"a worker returned {type(lines).__name__} for {len(indices)} rollouts; expected "
                "one JSON line per rollout"
            )
        for index, line in zip(indices, lines, strict=True):
            self._record(index, Trajectory.from_json(line))

    def fail(self, index: int, error: str) -> None:
        request = self.requests[index]
        _log.warning("rollout of %s seed %d: %s", request.task_id, request.seed, error)
        self._record(index, failed_trajectory(request, self.policy_name, "env_error", error))

    def _record(self, index: int, trajectory: Trajectory) -> None:
        self.results[index] = trajectory
        if self.on_result is not None:
            self.on_result(index, trajectory)


class Executor(ABC):
    """Runs batches of rollout requests in some kind of workers; a reusable context manager.

    The base class owns the machinery: :meth:`run` splits a batch into jobs
    (:class:`~envharness.rollout.batch.WorkerJob`) of ``chunksize`` requests, keeps a bounded
    number in flight, hands each result to the caller as it arrives, and deals with dead workers.
    When a worker dies, the requests that might have been on it are run again in smaller jobs,
    then alone, until each death is pinned on one request, which gets a failed trajectory; every
    other request still gets its real result. So a request that was in flight next to a crash
    may be played twice (same seed, same result); the one that killed its worker is recorded,
    not retried, since it would crash again.

    Subclasses override ``workers``, ``_submit``, ``_wait``, ``_collect`` and ``_shutdown``, and
    where needed ``_start``, ``_recover``, ``_cancel``, ``_dumps``, ``crosses_processes`` and
    ``isolated_failures``.

    Args:
        chunksize: Requests per job; ``None`` sizes jobs from what is left of the batch and the
            workers (see ``_planner``; 1 for threads and inline, where chunks buy nothing).

    Raises:
        ValueError: If ``chunksize`` is not a positive int or ``None``.
    """

    def __init__(self, *, chunksize: int | None = None) -> None:
        if chunksize is not None and (
            isinstance(chunksize, bool) or not isinstance(chunksize, int) or chunksize < 1
        ):
            raise ValueError(f"expected chunksize to be a positive int or None, got {chunksize!r}")
        self.chunksize = chunksize
        self._closed = False

    # -- override these ---------------------------------------------------------------------

    @property
    @abstractmethod
    def workers(self) -> int:
        """How many rollouts can run at once."""

    @property
    def crosses_processes(self) -> bool:
        """Whether jobs are pickled to other processes (then the factory must pickle)."""
        return True

    @property
    def isolated_failures(self) -> bool:
        """Whether a dead worker loses only its own job (Ray) or every job in flight (a pool)."""
        return False

    def _start(self) -> None:
        """Starts the workers if they are not running (called at the start of each batch)."""
        return None

    @abstractmethod
    def _submit(self, job: WorkerJob) -> Any:
        """Starts ``job`` (``run_worker_job(job)`` in a worker); returns a handle for it."""

    @abstractmethod
    def _wait(self, handles: list[Any]) -> list[Any]:
        """Blocks until at least one of ``handles`` is done; returns the done ones."""

    @abstractmethod
    def _collect(self, handle: Any) -> list[str]:
        """The JSON lines of a done job; raises :class:`WorkerLost` if its worker died."""

    def _recover(self) -> None:
        """Makes the executor usable again after a worker died."""
        return None

    def _cancel(self, handles: list[Any]) -> None:
        """Abandons jobs in flight when a batch is interrupted (best effort)."""
        return None

    @abstractmethod
    def _shutdown(self) -> None:
        """Stops the workers (called once, by :meth:`close`)."""

    def _dumps(self, value: Any) -> bytes:
        """Serializes ``value`` the way jobs are sent to the workers."""
        return pickle.dumps(value)

    def _max_in_flight(self) -> int:
        """Jobs kept submitted at once: two per worker, so none waits for the next job."""
        return 2 * self.workers

    def _max_chunk(self) -> int:
        """The largest job the automatic chunking makes (1 turns chunking off)."""
        return _MAX_AUTO_CHUNK

    def _planner(self, n: int) -> JobPlanner:
        """Cuts request indices ``0..n-1`` into jobs (see :mod:`envharness.rollout.scheduling`).

        A fixed ``chunksize`` gives equal jobs. Otherwise jobs shrink as the batch drains
        (guided scheduling, at most ``_max_chunk()``), but not below
        :data:`~envharness.rollout.scheduling.MIN_JOB_SECONDS` of work at the rate seen so far,
        so the first jobs amortize the messaging and the last ones keep every worker busy to the
        end.
        """
        return JobPlanner(
            n, workers=self.workers, chunksize=self.chunksize, max_chunk=self._max_chunk()
        )

    # -- machinery ----------------------------------------------------------------------------

    def run(
        self,
        requests: Sequence[RolloutRequest],
        policy_factory: PolicyFactory,
        *,
        policy_name: str | None = None,
        step_timeout: float | None = None,
        on_result: Callable[[int, Trajectory], None] | None = None,
    ) -> list[Trajectory]:
        """Runs every request; returns the trajectories in request order.

        Most callers want :func:`~envharness.rollout.batch.run_batch` (resume, progress, spec
        checks) instead.

        Args:
            requests: The rollouts to run.
            policy_factory: ``factory(seed) -> Policy``; for process and Ray workers it must
                pickle with cloudpickle (functions, lambdas and closures do; live clients,
                locks and open files do not).
            policy_name: How trajectories record the policy; ``describe_policy(policy_factory)``
                by default.
            step_timeout: Seconds the policy may take per action; ``None`` waits forever.
            on_result: Called in this thread as ``on_result(index, trajectory)`` as each
                rollout arrives (in completion order).

        Raises:
            ExecutorError: If the executor is closed, the factory (or a runtime-registered
                bridge the requests use) cannot be sent to the workers, or a worker cannot run
                its job at all.
        """
        if self._closed:
            raise ExecutorError(f"{type(self).__name__} is closed; create a new executor")
        requests = list(requests)
        for i, request in enumerate(requests):
            if not isinstance(request, RolloutRequest):
                raise TypeError(f"request {i}: expected a RolloutRequest, got {request!r}")
        if not requests:
            return []
        name = policy_name if policy_name is not None else describe_policy(policy_factory)
        registrations = self._registrations(requests, policy_factory)
        self._start()
        batch = _Batch(requests, policy_factory, name, step_timeout, registrations, on_result)
        planner = self._planner(len(requests))
        width = self._max_in_flight()
        suspects = self._drive(batch, planner, width)
        singles = planner.largest_job == 1
        while suspects:  # each round narrows down which requests killed their workers
            if singles:
                width = 1  # one request in flight: a death can only be its own
            suspects = self._drive(batch, SingleJobs(suspects), width)
            singles = True
        return _all_results(batch.results)

    def _drive(self, batch: _Batch, pending: JobPlanner | SingleJobs, width: int) -> list[int]:
        """Runs the jobs ``pending`` hands out; returns the requests lost with a worker."""
        in_flight: dict[Any, list[int]] = {}
        suspects: list[int] = []
        try:
            while pending or in_flight:
                while pending and len(in_flight) < width:
                    indices = pending.next_job()
                    in_flight[self._submit(batch.job(indices))] = indices
                lost: list[tuple[list[int], WorkerLost]] = []
                for handle in self._wait(list(in_flight)):
                    indices = in_flight.pop(handle)
                    self._settle(batch, handle, indices, lost)
                    pending.completed(len(indices))
                if not lost:
                    continue
                if not self.isolated_failures:  # the whole pool went down with the worker
                    for handle, indices in list(in_flight.items()):
                        self._settle(batch, handle, indices, lost)
                    in_flight.clear()
                self._recover()
                together = sum(len(indices) for indices, _ in lost)
                for indices, error in lost:
                    if len(indices) == 1 and (self.isolated_failures or together == 1):
                        batch.fail(indices[0], str(error))
                    else:
                        suspects.extend(indices)
        except BaseException:
            self._cancel(list(in_flight))
            raise
        return sorted(suspects)

    def _settle(
        self,
        batch: _Batch,
        handle: Any,
        indices: list[int],
        lost: list[tuple[list[int], WorkerLost]],
    ) -> None:
        try:
            lines = self._collect(handle)
        except WorkerLost as e:
            lost.append((indices, e))
            return
        except EnvHarnessError:
            raise
        except Exception as e:
            raise ExecutorError(
                f"a worker of {type(self).__name__} could not run its rollouts: "
                f"{type(e).__name__}: {e}"
            ) from e
        batch.deliver(indices, lines)

    def _registrations(
        self, requests: list[RolloutRequest], policy_factory: PolicyFactory
    ) -> Registrations | None:
        """Checks that the factory travels, and collects the registrations workers need."""
        if not self.crosses_processes:
            return None
        try:
            self._dumps(policy_factory)
        except Exception as e:
            raise ExecutorError(
                f"the policy factory {policy_factory!r} cannot be sent to the worker processes "
                f"of {type(self).__name__} ({type(e).__name__}: {e}). Use a factory that "
                "pickles (a function, lambda or closure over plain values, a class such as "
                "OraclePolicyFactory, or a ChatModelPolicyFactory built from a model string), "
                "or run it in threads: LocalExecutor(kind='thread')."
            ) from e
        snapshot = Registrations.snapshot()
        used_bridges = {request.spec["bridge"]["name"] for request in requests}
        used_components = {c["type"] for r in requests for c in r.spec.get("components", ())}
        drop_bridges, drop_components = [], []
        for kind, entries, used, drop in (
            ("bridge", snapshot.bridges, used_bridges, drop_bridges),
            ("component", snapshot.components, used_components, drop_components),
        ):
            for name, target in entries:
                try:
                    self._dumps(target)
                except Exception as e:
                    if name in used:
                        raise ExecutorError(
                            f"{kind} {name!r} is registered as {target!r}, which cannot be sent "
                            f"to worker processes ({type(e).__name__}: {e}); register it by "
                            "its 'module:Class' path, or run in threads: "
                            "LocalExecutor(kind='thread')"
                        ) from e
                    _log.debug("not sending %s %r to the workers: %s", kind, name, e)
                    drop.append(name)
        return snapshot.without(drop_bridges, drop_components)

    def close(self) -> None:
        """Stops the workers (idempotent); the executor cannot run batches afterwards."""
        if self._closed:
            return
        self._closed = True
        self._shutdown()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _all_results(results: list[Trajectory | None]) -> list[Trajectory]:
    """The results, checked to hold one trajectory per request."""
    missing = [i for i, trajectory in enumerate(results) if trajectory is None]
    if missing:
        raise ExecutorError(f"no trajectory came back for {len(missing)} request(s): {missing}")
    return [trajectory for trajectory in results if trajectory is not None]


_LAUNCH_LOCK = threading.Lock()


@contextlib.contextmanager
def _preparing_without_main() -> Iterator[None]:
    """Leaves the caller's main module out of the processes this thread starts meanwhile.

    A ``spawn`` or ``forkserver`` child first runs the preparation data its parent sends, which
    names the parent's ``__main__`` (a script's path, or a module run with ``-m``), and re-runs
    it as ``__mp_main__``. A script without an ``if __name__ == "__main__":`` guard would then
    start a pool of its own in every worker, which multiprocessing stops with its "bootstrapping
    phase" error; a script read from standard input names ``<stdin>``, which does not exist.
    Rollout workers never need the caller's main module (the user's code reaches them by value,
    through cloudpickle), so, as loky does, they start without it. Only the preparation data made
    in this thread is changed, and ``multiprocessing.spawn`` is restored afterwards, so processes
    that other threads start at the same moment are untouched.
    """
    with _LAUNCH_LOCK:
        original = multiprocessing.spawn.get_preparation_data
        launcher = threading.get_ident()

        def without_main(name: str) -> dict[str, Any]:
            data = original(name)
            if threading.get_ident() == launcher:
                for key in _MAIN_KEYS:
                    data.pop(key, None)
            return data

        multiprocessing.spawn.get_preparation_data = without_main
        try:
            yield
        finally:
            if multiprocessing.spawn.get_preparation_data is without_main:
                multiprocessing.spawn.get_preparation_data = original


class _SpawnWorker(multiprocessing.context.SpawnProcess):
    """A ``spawn`` process that starts without the caller's main module."""

    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        with _preparing_without_main():
            return multiprocessing.context.SpawnProcess._Popen(process_obj)


class _SpawnContext(multiprocessing.context.SpawnContext):
    Process = _SpawnWorker


_ForkServerContext: type[multiprocessing.context.BaseContext] | None = None
if hasattr(multiprocessing.context, "ForkServerProcess"):  # not on Windows

    class _ForkServerWorker(multiprocessing.context.ForkServerProcess):
        """A ``forkserver`` process that starts without the caller's main module."""

        @staticmethod
        def _Popen(process_obj: Any) -> Any:
            with _preparing_without_main():
                return multiprocessing.context.ForkServerProcess._Popen(process_obj)

    class _ForkServerContextWithoutMain(multiprocessing.context.ForkServerContext):
        Process = _ForkServerWorker

    _ForkServerContext = _ForkServerContextWithoutMain


def _process_context() -> multiprocessing.context.BaseContext:
    """``forkserver`` with the rollout modules preloaded where it exists, else ``spawn``.

    Either way the workers start without the caller's main module (see
    :func:`_preparing_without_main`).
    """
    if _ForkServerContext is not None and "forkserver" in multiprocessing.get_all_start_methods():
        context = _ForkServerContext()
        context.set_forkserver_preload(_FORKSERVER_PRELOAD)
        return context
    return _SpawnContext()


def _completed(fn: Callable[[], Any]) -> concurrent.futures.Future[Any]:
    """A future already holding ``fn()``'s result or exception."""
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    try:
        future.set_result(fn())
    except Exception as e:
        future.set_exception(e)
    return future


class LocalExecutor(Executor):
    """Runs rollouts on this machine: in worker processes, in threads, or inline.

    - ``kind="process"``: a :class:`~concurrent.futures.ProcessPoolExecutor` of ``workers``
      processes, for CPU-bound envs. They start with ``forkserver`` (a small server process that
      has imported the rollout code once and forks each worker from itself; ``spawn`` where the
      platform has no forkserver), never by forking the caller: forking a large trainer process
      copies its page tables and inherits its threads, locks and CUDA or client state, which is
      slow and unsafe. On this project's 2-CPU test machine a 2-worker pool was ready in about
      0.25 s for the first pool (the forkserver start) and 0.02 s for later ones, against
      0.45-0.6 s every time with ``spawn``. The workers do not run the caller's main script
      (as with loky), so a script needs no ``if __name__ == "__main__":`` guard, and one read
      from standard input or a notebook works too. The policy factory travels with
      ``cloudpickle``: a lambda or a closure works, while a factory holding a live model object,
      a lock or an open file raises :class:`~envharness.errors.ExecutorError` before anything
      runs. Requests go to the workers in chunks (see ``chunksize``) so that cheap episodes are not
      dominated by inter-process messaging.
    - ``kind="thread"``: a thread pool, for I/O-bound LLM policies: nothing is pickled, so a
      :class:`~envharness.rollout.chat.ChatModelPolicyFactory` built on a model object works.
      Each job runs in a copy of the submitting thread's context variables, so a trace (a
      LangChain run config, a LangSmith parent run) reaches the policy's model calls.
      Python code still runs one thread at a time, so CPU-bound envs do not speed up.
    - ``kind="inline"``: one rollout after the other in the calling thread, no pool at all — the
      default for ``workers=1``. Without a separate process there is no crash isolation: an env
      that kills its interpreter kills the caller.

    The pool starts on the first batch and is kept for the next ones until :meth:`close` (or the
    end of a ``with`` block). A worker process that dies breaks the whole pool: the executor
    records the failed rollout, starts a fresh pool and finishes the batch.

    Args:
        workers: Processes or threads; the usable CPUs by default (:func:`default_workers`).
        kind: ``"process"``, ``"thread"`` or ``"inline"``; by default ``"inline"`` when
            ``workers`` is 1, else ``"process"``.
        chunksize: Requests per job sent to a process; by default a quarter of each worker's
            share of the requests left, at most 32, shrinking towards the end of the batch
            (threads and inline always use 1).

    Raises:
        ValueError: If ``workers`` is not a positive int, ``kind`` is unknown, ``workers > 1``
            is asked of ``"inline"``, or ``chunksize`` is not positive.

    Example:
        >>> from envharness.harness.spec import BridgeSpec, HarnessSpec
        >>> from envharness.rollout.batch import run_rollouts
        >>> from envharness.rollout.policies import RandomPolicyFactory
        >>> spec = HarnessSpec(BridgeSpec("toy24", "4-4-10-10"))
        >>> with LocalExecutor(workers=2, kind="thread") as executor:
        ...     first = run_rollouts(spec, RandomPolicyFactory(), 2, executor=executor)
        ...     again = run_rollouts(spec, RandomPolicyFactory(), 2, executor=executor)
        >>> [t.steps[0].action for t in first] == [t.steps[0].action for t in again]
        True
    """

    def __init__(
        self,
        workers: int | None = None,
        kind: ExecutorKind | None = None,
        *,
        chunksize: int | None = None,
    ) -> None:
        super().__init__(chunksize=chunksize)
        if workers is not None and (
            isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
        ):
            raise ValueError(f"expected workers to be a positive int or None, got {workers!r}")
        if kind is not None and kind not in _KINDS:
            raise ValueError(f"expected kind to be one of {', '.join(_KINDS)}, got {kind!r}")
        if kind == "inline" and workers not in (None, 1):
            raise ValueError(f"kind='inline' runs one rollout at a time; got workers={workers}")
        count = workers if workers is not None else default_workers()
        self.kind: ExecutorKind = (
            kind if kind is not None else ("inline" if count == 1 else "process")
        )
        self._workers = 1 if self.kind == "inline" else count
        self._pool: concurrent.futures.Executor | None = None
        self._packed: tuple[PolicyFactory, Registrations | None, bytes] | None = None

    @property
    def workers(self) -> int:
        """Processes or threads in the pool (1 inline)."""
        return self._workers

    @property
    def crosses_processes(self) -> bool:
        """True for ``kind="process"``."""
        return self.kind == "process"

    def _max_chunk(self) -> int:
        return super()._max_chunk() if self.kind == "process" else 1

    def _dumps(self, value: Any) -> bytes:
        return cloudpickle.dumps(value)

    def _user_code(self, job: WorkerJob) -> bytes:
        """The job's factory and registrations, packed once per batch (every job shares them)."""
        packed = self._packed
        if (
            packed is None
            or packed[0] is not job.policy_factory
            or packed[1] is not job.registrations
        ):
            code = pack_user_code(job.policy_factory, job.registrations)
            packed = self._packed = (job.policy_factory, job.registrations, code)
        return packed[2]

    def run(
        self,
        requests: Sequence[RolloutRequest],
        policy_factory: PolicyFactory,
        *,
        policy_name: str | None = None,
        step_timeout: float | None = None,
        on_result: Callable[[int, Trajectory], None] | None = None,
    ) -> list[Trajectory]:
        """Runs every request; see :meth:`Executor.run`."""
        try:
            return super().run(
                requests,
                policy_factory,
                policy_name=policy_name,
                step_timeout=step_timeout,
                on_result=on_result,
            )
        finally:
            self._packed = None  # keep no reference to the user's factory between batches

    def _max_in_flight(self) -> int:
        return 1 if self.kind == "inline" else super()._max_in_flight()

    def _start(self) -> None:
        if self._pool is not None or self.kind == "inline":
            return
        if self.kind == "thread":
            self._pool = concurrent.futures.ThreadPoolExecutor(
                self._workers, thread_name_prefix="envharness-rollout"
            )
            return
        try:
            self._pool = concurrent.futures.ProcessPoolExecutor(
                self._workers,
                mp_context=_process_context(),
                initializer=exit_with,  # workers die with this process, even on SIGKILL
                initargs=(os.getpid(),),
            )
        except (OSError, ValueError) as e:
            raise ExecutorError(f"cannot start {self._workers} worker processes: {e}") from e

    def _submit(self, job: WorkerJob) -> concurrent.futures.Future[list[str]]:
        if self.kind == "inline":
            return _completed(lambda: run_worker_job(job))
        self._start()
        pool = self._pool
        if pool is None:
            raise ExecutorError(f"{self!r} has no running pool")
        try:
            if self.kind == "process":
                return pool.submit(run_pickled_job, pack_job(job, user_code=self._user_code(job)))
            # A thread runs the job in a copy of this thread's context, so a trace (LangChain's
            # run config, LangSmith's parent run) reaches the policy's model calls.
            return pool.submit(contextvars.copy_context().run, run_worker_job, job)
        except BrokenProcessPool as e:  # broke between two submissions: a loss like any other
            future: concurrent.futures.Future[list[str]] = concurrent.futures.Future()
            future.set_exception(e)
            return future

    def _wait(self, handles: list[Any]) -> list[Any]:
        done, _ = concurrent.futures.wait(handles, return_when=concurrent.futures.FIRST_COMPLETED)
        return list(done)

    def _collect(self, handle: concurrent.futures.Future[list[str]]) -> list[str]:
        try:
            return handle.result()
        except BrokenProcessPool as e:
            raise WorkerLost(
                "worker process died while running this rollout (a crash that ends the "
                "interpreter: a segfault or os._exit in the env or policy, or the out-of-memory "
                f"killer); BrokenProcessPool: {e}"
            ) from e

    def _recover(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        self._start()

    def _cancel(self, handles: list[Any]) -> None:
        for handle in handles:
            handle.cancel()

    def _shutdown(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def __repr__(self) -> str:
        state = " closed" if self.closed else ""
        return f"<LocalExecutor kind={self.kind!r} workers={self._workers}{state}>"
