"""``RayExecutor``: the executors' interface on Ray, for a cluster or this machine.

Ray is optional (``pip install 'envharness[ray]'``) and imported only when the executor is built.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from envharness.errors import DependencyNotInstalled, ExecutorError
from envharness.rollout.executors import Executor, WorkerLost
from envharness.rollout.jobs import WorkerJob, run_worker_job

__all__ = ["RayExecutor"]

# Ray errors meaning the worker (or its node) is gone, not that our code raised.
_LOST_ERRORS = (
    "WorkerCrashedError",
    "OutOfMemoryError",
    "NodeDiedError",
    "LocalRayletDiedError",
    "ObjectLostError",
    "OwnerDiedError",
)


class RayExecutor(Executor):
    """Runs rollouts as Ray tasks: on this machine, or on the cluster at ``address``.

    Ray is started lazily, on the first batch, unless it is already initialized (then the
    caller's Ray is used as is): ``ray.init(address=address, num_cpus=num_cpus,
    include_dashboard=False, log_to_driver=False, **init_kwargs)``, with ``RAY_AUTH_MODE``
    defaulting to ``disabled`` for a local start. Measured on a 2-CPU machine, a local
    ``ray.init`` takes about 6-8 s and 900 MB; the benchmark reports it apart from throughput.
    :meth:`close` shuts Ray down only if this executor started it.

    Each job (a chunk of requests) is one task with ``num_cpus=1`` and ``max_retries=0``: an env
    that crashes its worker would crash it again on a retry. A dead worker
    (``WorkerCrashedError``, ``OutOfMemoryError`` ...) loses only its own task; its requests are
    re-run alone and the one that dies again gets a failed trajectory (``env_error``, ``"worker
    process died ..."``), while the rest of the batch finishes.

    Ray workers are separate processes that do not share the driver's ``sys.path``: the policy
    factory and every bridge must be importable there (installed packages are; for local code
    pass e.g. ``init_kwargs={"runtime_env": {"env_vars": {"PYTHONPATH": "..."}}}``). Jobs are
    serialized with Ray's cloudpickle, so a factory defined in a script travels too.

    Args:
        address: A Ray cluster address (``"auto"``, ``"ray://host:10001"``); ``None`` starts
            Ray on this machine.
        num_cpus: CPUs for a local Ray (ignored when connecting to a cluster).
        chunksize: Requests per task; by default sized as for processes in
            :class:`~envharness.rollout.executors.LocalExecutor` (at most 32, shrinking towards
            the end of a batch).
        init_kwargs: Extra keyword arguments for ``ray.init``.

    Raises:
        DependencyNotInstalled: If Ray is not installed.
        ValueError: If ``num_cpus`` or ``chunksize`` is not a positive int.

    Example:
        >>> from envharness.harness.spec import BridgeSpec, HarnessSpec
        >>> from envharness.rollout.batch import run_rollouts
        >>> from envharness.rollout.policies import OraclePolicyFactory
        >>> with RayExecutor(num_cpus=2) as executor:  # doctest: +SKIP
        ...     batch = run_rollouts(HarnessSpec(BridgeSpec("toy24", "4-4-10-10")),
        ...                          OraclePolicyFactory(0.5), 20, executor=executor)
    """

    def __init__(
        self,
        address: str | None = None,
        num_cpus: int | None = None,
        *,
        chunksize: int | None = None,
        init_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(chunksize=chunksize)
        if importlib.util.find_spec("ray") is None:
            raise DependencyNotInstalled("ray", "ray", purpose="RayExecutor")
        if num_cpus is not None and (
            isinstance(num_cpus, bool) or not isinstance(num_cpus, int) or num_cpus < 1
        ):
            raise ValueError(f"expected num_cpus to be a positive int or None, got {num_cpus!r}")
        self.address = address
        self.num_cpus = num_cpus
        self.init_kwargs = dict(init_kwargs or {})
        self.started_ray = False
        self._remote: Any = None
        self._workers: int | None = None

    @property
    def isolated_failures(self) -> bool:
        """True: a crashed Ray worker loses only its own task."""
        return True

    @property
    def workers(self) -> int:
        """The cluster's CPUs (``num_cpus`` before Ray is started, else 1)."""
        if self._workers is not None:
            return self._workers
        return self.num_cpus or 1

    def _start(self) -> None:
        import ray

        if not ray.is_initialized():
            os.environ.setdefault("RAY_AUTH_MODE", "disabled")
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if self.address is not None:
                kwargs["address"] = self.address
            elif self.num_cpus is not None:
                kwargs["num_cpus"] = self.num_cpus
            kwargs.update(self.init_kwargs)
            try:
                ray.init(**kwargs)
            except Exception as e:
                raise ExecutorError(f"cannot start Ray: {type(e).__name__}: {e}") from e
            self.started_ray = True
        if self._remote is None:
            self._remote = ray.remote(num_cpus=1, max_retries=0)(run_worker_job)
        self._workers = max(1, int(ray.cluster_resources().get("CPU", 1)))

    def _dumps(self, value: Any) -> bytes:
        from ray import cloudpickle

        return cloudpickle.dumps(value)

    def _max_in_flight(self) -> int:
        return 4 * self.workers  # Ray queues tasks itself; a loss here costs only one task

    def _submit(self, job: WorkerJob) -> Any:
        return self._remote.remote(job)

    def _wait(self, handles: list[Any]) -> list[Any]:
        import ray

        ready, rest = ray.wait(handles, num_returns=1)
        if rest:
            more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
            ready.extend(more)
        return ready

    def _collect(self, handle: Any) -> list[str]:
        import ray
        from ray import exceptions

        try:
            return ray.get(handle)
        except exceptions.RayTaskError as e:  # our function raised: report the real error
            cause = getattr(e, "cause", None) or e
            raise ExecutorError(
                f"a Ray worker could not run its rollouts: {type(cause).__name__}: {cause}"
            ) from e
        except exceptions.RayError as e:
            lost = tuple(
                getattr(exceptions, name) for name in _LOST_ERRORS if hasattr(exceptions, name)
            )
            if isinstance(e, lost):
                raise WorkerLost(
                    "worker process died while running this rollout (the Ray worker crashed: "
                    "a segfault or os._exit in the env or policy, or out of memory); "
                    f"{type(e).__name__}: {e}"
                ) from e
            raise ExecutorError(f"Ray failed to run a job: {type(e).__name__}: {e}") from e

    def _cancel(self, handles: list[Any]) -> None:
        import ray

        for handle in handles:
            try:
                ray.cancel(handle)
            except Exception:  # already finished, or Ray is going down: nothing to cancel
                continue

    def _shutdown(self) -> None:
        if not self.started_ray:
            return
        import ray

        self.started_ray = False
        self._remote = None
        ray.shutdown()

    def __repr__(self) -> str:
        where = self.address or "local"
        state = " closed" if self.closed else (" running" if self._remote is not None else "")
        return f"<RayExecutor {where} workers={self.workers}{state}>"
