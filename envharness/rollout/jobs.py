"""Rollout jobs: the requests, what a worker does with them, and how a job travels.

This is the layer below the executors (:mod:`envharness.rollout.executors`) and the batch runner
(:mod:`envharness.rollout.batch`): it imports neither.

An executor sends a worker a :class:`WorkerJob`: the policy factory, a few requests (a spec as a
plain dict, a seed, a step budget) and the bridge and component registrations the worker needs.
The worker (:func:`run_worker_job`) builds each env from its spec, makes a fresh policy with
``policy_factory(seed)``, plays it with :func:`~envharness.rollout.loop.rollout` and sends back
each trajectory as one line of JSON. So only specs, seeds, factories and JSON text are pickled,
never a live env, model client or socket. A worker process gets its job as bytes
(:func:`pack_job`): the user's code — the policy factory and the runtime registrations — goes
through ``cloudpickle``, so lambdas, closures and classes defined in a script or a notebook travel
by value, and the plain data (requests, names, timeout) through the standard pickler, which is
faster. What comes back is JSON text; nothing is unpickled from the rules sandbox, ever.

A worker never raises because one rollout failed: a spec that cannot be built, a factory that
raises, a policy or env that fails, each comes back as a trajectory with an ``end_reason`` and an
``error`` (see :func:`failed_trajectory`), and the worker goes on with the next request.

Runtime registrations: a bridge registered with :func:`envharness.register` or a component with
:func:`~envharness.harness.spec.register_component` lives in the parent's memory only, and a
process started by ``spawn`` or ``forkserver`` (or a Ray worker) does not see it.
:meth:`Registrations.snapshot` copies those registrations into the job, and the worker replays
them before it builds anything. A ``"module:Class"`` path, a class of an importable module (by
reference) and a class defined in a script or a function (by value, with ``cloudpickle``) all
travel; a class that holds something no pickler can send (a lock, an open file) is refused by the
executors with a clear error. Bridges published through the ``envharness.bridges`` entry-point
group need nothing: every process finds them.
"""

from __future__ import annotations

import json
import pickle
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import cloudpickle

from envharness.errors import ExecutorError, SpecError, TrajectoryError
from envharness.harness.spec import HarnessSpec
from envharness.rollout.episode_tracing import traced_episode
from envharness.rollout.loop import rollout
from envharness.rollout.policy import Policy, PolicyFactory
from envharness.rollout.store import RunStore
from envharness.rollout.trajectory import Trajectory

__all__ = [
    "Registrations",
    "RolloutRequest",
    "WorkerJob",
    "failed_trajectory",
    "pack_job",
    "pack_user_code",
    "run_pickled_job",
    "run_worker_job",
]


def _describe_error(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


@dataclass(frozen=True, init=False)
class RolloutRequest:
    """One rollout to run: a harness spec, an episode seed and an optional step budget.

    The spec is kept as a plain JSON dict (checked and normalized on construction), so a request
    pickles small and rebuilds its env anywhere with ``HarnessSpec.from_dict(request.spec)``.
    Requests hash and compare by ``(spec_id, seed, max_steps)``.

    Attributes:
        spec: The harness spec as a dict (:meth:`HarnessSpec.to_dict` form).
        seed: The episode seed (``env.reset(seed=...)`` and ``policy_factory(seed)``).
        max_steps: The agent's step budget; ``None`` uses the env's own ``max_steps``.
        spec_id: The spec's id (derived from ``spec``).

    Raises:
        SpecError: If ``spec`` is not a valid spec.
        TypeError: If ``seed`` is not an int.
        ValueError: If ``max_steps`` is not a positive int or ``None``.

    Example:
        >>> from envharness.harness.spec import BridgeSpec
        >>> request = RolloutRequest(HarnessSpec(BridgeSpec("toy24", "4-4-10-10")), seed=3)
        >>> request.spec["bridge"]["task_id"], request.seed, request.max_steps
        ('4-4-10-10', 3, None)
        >>> request.key("oracle:0.5") == RunStore.key(request.spec_id, "oracle:0.5", 3)
        True
    """

    spec: dict[str, Any] = field(hash=False, compare=False)
    seed: int
    max_steps: int | None = None
    spec_id: str = field(init=False)

    def __init__(
        self,
        spec: HarnessSpec | Mapping[str, Any],
        seed: int,
        max_steps: int | None = None,
    ) -> None:
        if isinstance(spec, HarnessSpec):
            parsed = spec
        elif isinstance(spec, Mapping):
            parsed = HarnessSpec.from_dict(spec)
        else:
            raise SpecError(f"expected a HarnessSpec or a spec dict, got {type(spec).__name__}")
        try:
            data = json.loads(parsed.to_json(indent=None))  # a deep, JSON-only copy
        except (TypeError, ValueError) as e:
            raise SpecError(f"the spec cannot be written as JSON: {e}") from e
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"expected an int seed, got {seed!r}")
        if max_steps is not None and (
            isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1
        ):
            raise ValueError(f"expected max_steps to be a positive int or None, got {max_steps!r}")
        object.__setattr__(self, "spec", data)
        object.__setattr__(self, "seed", seed)
        object.__setattr__(self, "max_steps", max_steps)
        object.__setattr__(self, "spec_id", parsed.spec_id)

    @property
    def task_id(self) -> str:
        """The task the spec is bound to."""
        return str(self.spec["bridge"]["task_id"])

    def harness_spec(self) -> HarnessSpec:
        """The spec as a :class:`~envharness.harness.spec.HarnessSpec`."""
        return HarnessSpec.from_dict(self.spec)

    def key(self, policy: str) -> str:
        """The :class:`~envharness.rollout.store.RunStore` key of this request for ``policy``."""
        return RunStore.key(self.spec_id, policy, self.seed)

    def with_shared_spec(self, spec: dict[str, Any]) -> RolloutRequest:
        """This request holding ``spec``, an equal dict (same spec id) shared with others.

        The spec is not checked again: the caller vouches that it is this request's spec.
        """
        twin = object.__new__(RolloutRequest)
        for name, value in vars(self).items():
            object.__setattr__(twin, name, value)
        object.__setattr__(twin, "spec", spec)
        return twin


def failed_trajectory(
    request: RolloutRequest, policy: str, end_reason: str, error: str
) -> Trajectory:
    """A trajectory for a rollout that could not be played (no steps, no evaluation).

    Args:
        request: The request that failed.
        policy: The policy description to record.
        end_reason: ``"env_error"`` or ``"policy_error"`` (any of the end reasons).
        error: What went wrong, e.g. ``"worker process died ..."``.

    Example:
        >>> from envharness.harness.spec import BridgeSpec
        >>> request = RolloutRequest(HarnessSpec(BridgeSpec("toy24", "4-4-10-10")), seed=0)
        >>> failed = failed_trajectory(request, "random", "env_error", "boom")
        >>> failed.end_reason, failed.error, failed.evaluation, failed.success
        ('env_error', 'boom', None, False)
    """
    bridge = request.spec.get("bridge", {})
    return Trajectory(
        task_id=str(bridge.get("task_id", "")),
        bridge=str(bridge.get("name", "")),
        spec_id=request.spec_id,
        spec=request.spec,
        seed=request.seed,
        policy=policy,
        end_reason=end_reason,
        error=error,
        started_at=time.time(),
        max_steps=request.max_steps or 0,
    )


@dataclass(frozen=True)
class Registrations:
    """Bridges and components registered at run time in the parent, replayed in a worker.

    Attributes:
        bridges: ``(name, "module:Class" or class)`` pairs from :func:`envharness.register`.
        components: ``(name, class)`` pairs from
            :func:`~envharness.harness.spec.register_component`.

    Example:
        >>> Registrations.snapshot().apply()  # what a worker does before building specs
    """

    bridges: tuple[tuple[str, Any], ...] = ()
    components: tuple[tuple[str, type], ...] = ()

    @classmethod
    def snapshot(cls) -> Registrations:
        """The registrations of this process, as they are now."""
        from envharness.bridges import registry
        from envharness.harness import spec as spec_module

        bridges = tuple(sorted(registry._REGISTERED.items(), key=lambda item: item[0]))
        components = tuple(
            (name, target)
            for name, target in sorted(spec_module._COMPONENTS.items(), key=lambda item: item[0])
            if isinstance(target, type)
        )
        return cls(bridges, components)

    def without(self, bridges: Sequence[str] = (), components: Sequence[str] = ()) -> Registrations:
        """A copy without the named bridges and components."""
        return Registrations(
            tuple(item for item in self.bridges if item[0] not in bridges),
            tuple(item for item in self.components if item[0] not in components),
        )

    def apply(self) -> None:
        """Registers everything in this process (the same registration twice is harmless)."""
        from envharness.bridges import registry
        from envharness.harness.spec import register_component

        for name, target in self.bridges:
            if registry._REGISTERED.get(name) != target:
                registry.register(name, target)
        for name, cls in self.components:
            register_component(name, cls)


@dataclass(frozen=True)
class WorkerJob:
    """A few requests for one worker, with everything needed to run them there.

    Attributes:
        requests: The requests, in order.
        policy_factory: Makes the policy of each episode from its seed.
        policy_name: How trajectories record the policy (also the store key's policy part).
        step_timeout: Seconds the policy may take per action; ``None`` waits forever.
        registrations: Registrations to replay first (``None`` in the parent's own process).
    """

    requests: tuple[RolloutRequest, ...]
    policy_factory: PolicyFactory
    policy_name: str
    step_timeout: float | None = None
    registrations: Registrations | None = None


def _play(job: WorkerJob, request: RolloutRequest, specs: dict[str, HarnessSpec]) -> Trajectory:
    """Plays one request; every failure becomes a recorded trajectory.

    Inside a trace, the episode is one run whose children are its model calls
    (:func:`~envharness.rollout.episode_tracing.traced_episode`).
    """
    try:
        spec = specs.get(request.spec_id)
        if spec is None:
            spec = specs[request.spec_id] = HarnessSpec.from_dict(request.spec)
        env = spec.build()
    except Exception as e:
        return failed_trajectory(request, job.policy_name, "env_error", _describe_error(e))
    try:
        policy = job.policy_factory(request.seed)
        if not isinstance(policy, Policy):
            raise TypeError(
                f"the policy factory returned {type(policy).__name__}, not a Policy (an object "
                "with start(instruction, tools) and act(observation))"
            )
    except Exception as e:
        env.close()
        return failed_trajectory(request, job.policy_name, "policy_error", _describe_error(e))
    try:
        trajectory = traced_episode(
            lambda: rollout(
                env,
                policy,
                max_steps=request.max_steps,
                seed=request.seed,
                step_timeout=job.step_timeout,
                policy_name=job.policy_name,
            ),
            task_id=request.task_id,
            seed=request.seed,
            spec_id=request.spec_id,
            policy=job.policy_name,
        )
    except Exception as e:  # rollout() raises only for a bad env budget here; it closed the env
        return failed_trajectory(request, job.policy_name, "env_error", _describe_error(e))
    # The record answers this request: the store key must be the request's spec id, even when
    # the built env describes itself slightly differently (e.g. an explicit default option).
    trajectory.spec_id, trajectory.spec = request.spec_id, request.spec
    return trajectory


def run_worker_job(job: WorkerJob) -> list[str]:
    """Runs a job's rollouts one after the other and returns each trajectory as a compact JSON line.

    This is the function every executor runs in its workers (a process, a thread, a Ray task, or
    inline). It raises only for a job it cannot start (e.g. a registration that cannot be
    replayed); everything that goes wrong in one rollout is recorded in its trajectory.

    Example:
        >>> from envharness.harness.spec import BridgeSpec
        >>> from envharness.rollout.policies import OraclePolicyFactory
        >>> spec = HarnessSpec(BridgeSpec("toy24", "4-4-10-10"))
        >>> job = WorkerJob((RolloutRequest(spec, seed=0),), OraclePolicyFactory(1.0), "oracle:1")
        >>> Trajectory.from_json(run_worker_job(job)[0]).success
        True
    """
    if job.registrations is not None:
        job.registrations.apply()
    specs: dict[str, HarnessSpec] = {}
    lines = []
    for request in job.requests:
        trajectory = _play(job, request, specs)
        try:
            lines.append(trajectory.to_json(compact=True))
        except (TypeError, ValueError) as e:
            error = TrajectoryError(f"the trajectory cannot be written as JSON: {e}")
            failed = failed_trajectory(
                request, job.policy_name, "env_error", _describe_error(error)
            )
            lines.append(failed.to_json(compact=True))
    return lines


_JOB_FORMAT = "envharness-job/1"


def pack_user_code(policy_factory: PolicyFactory, registrations: Registrations | None) -> bytes:
    """The user's part of a job (the factory and the registrations), pickled with cloudpickle.

    It is the same for every job of a batch, so an executor packs it once and passes it to
    :func:`pack_job`.

    Raises:
        Exception: Whatever ``cloudpickle`` raises for an object it cannot pickle (e.g.
            ``TypeError`` for a lock or an open file).
    """
    return cloudpickle.dumps((policy_factory, registrations))


def pack_job(job: WorkerJob, *, user_code: bytes | None = None) -> bytes:
    """A job as bytes for a worker process (the argument of :func:`run_pickled_job`).

    Args:
        job: The job.
        user_code: ``pack_user_code(job.policy_factory, job.registrations)`` if already made.

    Example:
        >>> from envharness.harness.spec import BridgeSpec
        >>> from envharness.rollout.policies import OraclePolicy
        >>> request = RolloutRequest(HarnessSpec(BridgeSpec("toy24", "1-1-4-6")), seed=0)
        >>> job = WorkerJob((request,), lambda seed: OraclePolicy(1.0, seed=seed), "oracle")
        >>> Trajectory.from_json(run_pickled_job(pack_job(job))[0]).success
        True
    """
    if user_code is None:
        user_code = pack_user_code(job.policy_factory, job.registrations)
    return pickle.dumps(
        (_JOB_FORMAT, user_code, job.requests, job.policy_name, job.step_timeout),
        protocol=pickle.HIGHEST_PROTOCOL,
    )


def _cannot_load(error: Exception) -> ExecutorError:
    return ExecutorError(
        f"a worker process cannot load its job: {type(error).__name__}: {error}. The policy "
        "factory and runtime-registered bridges travel with cloudpickle: what is defined in the "
        "calling script or notebook goes by value, but what is imported from a module goes by "
        "reference, so that module must be importable in a fresh process (installed, or on "
        "sys.path). Worker processes do not run the calling script (its "
        "`if __name__ == '__main__':` guard is optional), so nothing may refer to __main__ by "
        "name"
    )


def _unpack_job(payload: bytes) -> WorkerJob:
    try:
        outer = pickle.loads(payload)
    except Exception as e:
        raise _cannot_load(e) from None
    if not (isinstance(outer, tuple) and len(outer) == 5 and outer[0] == _JOB_FORMAT):
        raise ExecutorError(f"expected a job made by pack_job, got {type(outer).__name__}")
    _, user_code, requests, policy_name, step_timeout = outer
    try:
        policy_factory, registrations = pickle.loads(user_code)
    except Exception as e:
        raise _cannot_load(e) from None
    return WorkerJob(requests, policy_factory, policy_name, step_timeout, registrations)


def run_pickled_job(payload: bytes) -> list[str]:
    """:func:`run_worker_job` for a job packed by the caller with :func:`pack_job`.

    This is what worker processes run. Unpickling happens here rather than in the pool's own
    machinery, so a job the worker cannot load (a factory whose module the worker cannot import,
    say) raises an ordinary error that reaches the caller, instead of killing the worker and
    passing for a crash.

    Raises:
        ExecutorError: If the job cannot be unpickled in this process, or was not made by
            :func:`pack_job`.

    Example:
        >>> from envharness.harness.spec import BridgeSpec
        >>> from envharness.rollout.policies import RandomPolicyFactory
        >>> request = RolloutRequest(HarnessSpec(BridgeSpec("toy24", "1-1-4-6")), seed=0)
        >>> payload = pack_job(WorkerJob((request,), RandomPolicyFactory(), "random"))
        >>> len(run_pickled_job(payload))
        1
    """
    return run_worker_job(_unpack_job(payload))
