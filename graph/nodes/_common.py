"""Helpers the rigger's nodes share: loading trajectories, running rollouts, trace config."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from typing import Any

from envharness.graph.context import RiggerContext
from envharness.harness.spec import HarnessSpec
from envharness.rollout.executors import Executor, LocalExecutor, run_rollouts
from envharness.rollout.store import RunStore
from envharness.rollout.trajectory import Trajectory

__all__ = ["executor_width", "load_trajectories", "play", "task_seed", "trace_config"]

_INLINE = LocalExecutor(workers=1, kind="inline")
_SHARED_EXECUTOR_LOCK = threading.Lock()


def _executor(context: RiggerContext) -> Executor:
    return context.executor if context.executor is not None else _INLINE


def play(
    context: RiggerContext, spec: HarnessSpec, n: int, *, first_seed: int
) -> tuple[list[Trajectory], list[str]]:
    """Plays ``n`` episodes of ``spec`` (seeds from ``first_seed``); returns them and their keys."""
    store = context.store
    executor = _executor(context)
    if executor is _INLINE:  # rollouts run in this thread: tasks rig concurrently
        trajectories = run_rollouts(
            spec, context.policy_factory, n, seed=first_seed, executor=executor, store=store
        )
    else:  # one batch at a time on a shared pool; each batch uses all of its workers
        with _SHARED_EXECUTOR_LOCK:
            trajectories = run_rollouts(
                spec, context.policy_factory, n, seed=first_seed, executor=executor, store=store
            )
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


def trace_config(node: str, state: dict[str, Any], context: RiggerContext) -> dict[str, Any]:
    """A LangSmith-friendly config for model calls made inside ``node``."""
    return {
        "run_name": f"envrigger.{node}",
        "tags": ["envrigger", node, f"task:{state.get('task_id', '?')}"],
        "metadata": {
            "task_id": state.get("task_id"),
            "iteration": state.get("iteration", 0),
            "objective": str(context.objective),
            "policy": context.policy_name,
            **context.metadata,
        },
    }


def executor_width(context: RiggerContext) -> int:
    """How many rollouts run at once (the chunk size of early-stopping validation)."""
    return max(1, _executor(context).workers)
