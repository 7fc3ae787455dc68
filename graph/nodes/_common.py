"""Helpers the rigger's nodes share: loading trajectories, running rollouts, trace config."""

from __future__ import annotations

import contextvars
import hashlib
import logging
import threading
from collections.abc import Sequence
from typing import Any

from envharness.graph.context import RiggerContext
from envharness.graph.events import EventWriter, Phase, RolloutFinished, RolloutStarted, ignore
from envharness.harness.spec import HarnessSpec
from envharness.rollout.batch import run_rollouts
from envharness.rollout.executors import Executor, LocalExecutor
from envharness.rollout.policy import Policy, PolicyFactory, describe_policy
from envharness.rollout.store import RunStore
from envharness.rollout.trajectory import Trajectory

__all__ = ["executor_width", "load_trajectories", "play", "task_seed", "trace_config"]

_log = logging.getLogger("envharness.rig")
_INLINE = LocalExecutor(workers=1, kind="inline")
_SHARED_EXECUTOR_LOCK = threading.Lock()


def _executor(context: RiggerContext) -> Executor:
    return context.executor if context.executor is not None else _INLINE


class _Batch:
    """One :func:`play` call's progress: writes its rollout events with their counts."""

    def __init__(
        self, write: EventWriter, task_id: str, phase: Phase, iteration: int, n: int
    ) -> None:
        self.write = write
        self.head = {"task_id": task_id, "phase": phase, "iteration": iteration, "n": n}
        self.started = 0
        self.finished = 0
        self.reported: set[int] = set()
        self._lock = threading.Lock()
        # LangGraph's writer reads the node's config from the context: a worker thread writes
        # through the node's context (one thread at a time, under the lock).
        self._context = contextvars.copy_context()

    def start(self, seed: int) -> None:
        """Writes ``rollout_started`` (from the thread that makes the episode's policy).

        A writer that fails loses the event, never the rollout.
        """
        with self._lock:
            self.started += 1
            event = RolloutStarted(event="rollout_started", **self.head, i=self.started, seed=seed)
            try:
                self._context.run(self.write, event)
            except Exception as e:  # progress must not fail an episode
                _log.debug("a rollout_started event was lost: %s: %s", type(e).__name__, e)

    def finish(self, trajectory: Trajectory, *, resumed: bool = False) -> None:
        """Writes ``rollout_finished`` (from the thread that called :func:`play`)."""
        self.finished += 1
        self.reported.add(trajectory.seed)
        event = RolloutFinished(
            event="rollout_finished",
            **self.head,
            i=self.finished,
            seed=trajectory.seed,
            success=bool(trajectory.success),
            steps=trajectory.n_steps,
            end_reason=str(trajectory.end_reason),
            resumed=resumed,
        )
        self.write(event)


class _Announced:
    """A policy factory that reports each episode's start before making its policy.

    It describes itself as the factory it wraps, so trajectories and run-store keys are the
    same. Used only on executors that make policies in this process (inline and thread).
    """

    def __init__(self, factory: PolicyFactory, batch: _Batch) -> None:
        self.factory = factory
        self.batch = batch

    def __call__(self, seed: int) -> Policy:
        self.batch.start(seed)
        return self.factory(seed)

    def describe(self) -> str:
        """The wrapped factory's description."""
        return describe_policy(self.factory)


def play(
    context: RiggerContext,
    spec: HarnessSpec,
    n: int,
    *,
    first_seed: int,
    phase: Phase = "observe",
    iteration: int = 0,
    write: EventWriter = ignore,
) -> tuple[list[Trajectory], list[str]]:
    """Plays ``n`` episodes of ``spec`` (seeds from ``first_seed``); returns them and their keys.

    Each rollout is reported to ``write`` (a node's ``runtime.stream_writer``) as
    :mod:`envharness.graph.events` describes: ``rollout_started`` where the executor makes
    policies in this process, and ``rollout_finished`` for every trajectory returned, those the
    run store already held (a resume) included.
    """
    store = context.store
    executor = _executor(context)
    batch = _Batch(write, spec.bridge.task_id, phase, iteration, n)
    factory: PolicyFactory = context.policy_factory
    if not executor.crosses_processes:
        factory = _Announced(factory, batch)

    def progress(done: int, total: int, trajectory: Trajectory) -> None:
        batch.finish(trajectory)

    def run() -> list[Trajectory]:
        return run_rollouts(
            spec, factory, n, seed=first_seed, executor=executor, store=store, progress=progress
        )

    if executor is _INLINE:  # rollouts run in this thread: tasks rig concurrently
        trajectories = run()
    else:  # one batch at a time on a shared pool; each batch uses all of its workers
        with _SHARED_EXECUTOR_LOCK:
            trajectories = run()
    for trajectory in trajectories:
        if trajectory.seed not in batch.reported:
            batch.finish(trajectory, resumed=True)
    return trajectories, [RunStore.key_of(t) for t in trajectories]


def task_seed(context: RiggerContext, task_id: str) -> int:
    """The first rollout seed of ``task_id``: the run's seed plus a stable per-task offset.

    Policies draw their randomness from the episode seed, so giving every task the same seeds
    would make their episodes go alike (the same coin flips on every task); a per-task offset
    decorrelates tasks. Within a task, seeds run upward from here and none is used twice: the
    baseline takes the first ``k_observe``, each validation batch the next free ones (the
    state's ``next_seed``), so no candidate is chosen and confirmed on the same episodes.
    """
    offset = int(hashlib.sha256(task_id.encode("utf-8")).hexdigest()[:8], 16) % 100_000
    return context.seed + 1000 * offset


def load_trajectories(context: RiggerContext, keys: Sequence[str]) -> list[Trajectory]:
    """The stored trajectories under ``keys``, in order."""
    store = context.store
    return [store.get(key) for key in keys]


def trace_config(
    node: str, state: dict[str, Any], context: RiggerContext, *, iteration: int | None = None
) -> dict[str, Any]:
    """A LangSmith-friendly config for model calls made inside ``node``.

    Args:
        node: The node's name.
        state: The node's input state.
        context: The rig's context.
        iteration: The iteration the node works on; the state's by default (the writer passes
            the one it starts, the state's plus one).
    """
    bridge = (state.get("base_spec") or {}).get("bridge", {}).get("name")
    return {
        "run_name": f"envrigger.{node}",
        "tags": ["envrigger", node, f"task:{state.get('task_id', '?')}"],
        "metadata": {
            "task_id": state.get("task_id"),
            "bridge": bridge,
            "iteration": state.get("iteration", 0) if iteration is None else iteration,
            "objective": str(context.objective),
            "policy": context.policy_name,
            "designer": context.model_name("writer"),
            **context.metadata,
        },
    }


def executor_width(context: RiggerContext) -> int:
    """How many rollouts run at once (the chunk size of early-stopping validation)."""
    return max(1, _executor(context).workers)
