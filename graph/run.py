"""``rig``: run EnvRigger over many tasks, checkpointed in SQLite so an interrupted rig resumes.

Each task is one LangGraph thread (``<bridge>:<task>``) in ``RUN/checkpoints.sqlite``. A task
whose thread finished is not run again; one that was interrupted continues from its last
checkpoint (its finished rollouts come back from ``RUN/trajectories`` instead of being played
again). Tasks rig concurrently in threads, ``max_concurrency`` at a time.

Progress comes as the rigger's stream events (``on_event``; :mod:`envharness.graph.events`),
tracing through ``config`` (callbacks, tags, metadata; :mod:`envharness.graph.tracing`).
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from langchain_core.runnables.config import ContextThreadPoolExecutor
from langgraph.checkpoint.sqlite import SqliteSaver

from envharness.errors import EnvHarnessError, RiggerError
from envharness.graph.context import RiggerContext, close_store
from envharness.graph.events import RiggerEvent
from envharness.graph.outputs import accepted_path, write_json
from envharness.graph.rigger import build_rigger
from envharness.graph.tracing import flush_traces
from envharness.harness.spec import BridgeSpec, HarnessSpec

__all__ = ["TaskResult", "rig", "thread_config"]

_log = logging.getLogger("envharness.rig")

SETTINGS_FILE = "rig.json"
CHECKPOINTS_FILE = "checkpoints.sqlite"


@dataclass
class TaskResult:
    """How one task's rig ended.

    Attributes:
        task_id: The task.
        status: ``accepted``, ``rejected``, ``undecided`` (the rollout budget ran out before a
            sure decision), ``awaiting_approval`` or ``failed``.
        reason: The last verdict's reason (or the error).
        iterations: Write→validate iterations used.
        rollouts: Rollouts spent (baseline and validation).
        model_calls: Model calls spent.
        baseline_success: The baseline success rate.
        final_success: The last candidate's success rate (``None`` without one).
        accepted: Where the accepted spec was written.
        resumed: Whether the task continued from a checkpoint (or was already done).
    """

    task_id: str
    status: str
    reason: str = ""
    iterations: int = 0
    rollouts: int = 0
    model_calls: int = 0
    baseline_success: float | None = None
    final_success: float | None = None
    accepted: str | None = None
    resumed: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The result as a plain dict."""
        return asdict(self)


def thread_config(
    bridge: str,
    task_id: str,
    context: RiggerContext,
    config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The LangGraph config of one task's thread, with LangSmith-friendly names and tags.

    Args:
        bridge: The bridge.
        task_id: The task.
        context: The rig's settings (their names go into the metadata).
        config: The caller's runnable config: its ``callbacks`` and other keys are kept, its
            ``tags`` come first, its ``metadata`` is added (the task's keys win), its
            ``run_name`` replaces ``envrigger:BRIDGE:TASK``, and its ``configurable`` is kept
            under the task's own ``thread_id``.

    Example:
        >>> from envharness.graph.context import RiggerContext
        >>> config = thread_config("toy24", "1-1-1-8", RiggerContext(), {"tags": ["mine"]})
        >>> config["configurable"], config["tags"][:2], config["metadata"]["task_id"]
        ({'thread_id': 'toy24:1-1-1-8'}, ['mine', 'envrigger'], '1-1-1-8')
    """
    given = dict(config or {})
    tags = ["envrigger", f"bridge:{bridge}", f"objective:{context.objective}"]
    metadata = {
        "bridge": bridge,
        "task_id": task_id,
        "policy": context.policy_name,
        "designer": context.model_name("writer"),
        "objective": str(context.objective),
        **context.metadata,
    }
    return {
        **given,
        "configurable": {**(given.get("configurable") or {}), "thread_id": f"{bridge}:{task_id}"},
        "run_name": given.get("run_name") or f"envrigger:{bridge}:{task_id}",
        "tags": list(dict.fromkeys([*(given.get("tags") or ()), *tags])),
        "metadata": {**(given.get("metadata") or {}), **metadata},
    }


def _check_config(config: object) -> Mapping[str, Any] | None:
    """``rig()``'s ``config``, checked: a mapping whose ``configurable`` names no thread."""
    if config is None:
        return None
    if not isinstance(config, Mapping):
        raise RiggerError(
            f"expected config to be a runnable config dict (callbacks, tags, metadata), got "
            f"{type(config).__name__}"
        )
    for key, kind, types in (
        ("configurable", "a dict", Mapping),
        ("metadata", "a dict", Mapping),
        ("tags", "a list of strings", list | tuple),
    ):
        value = config.get(key)
        if value is not None and not isinstance(value, types):
            raise RiggerError(f"expected config[{key!r}] to be {kind}, got {value!r}")
    if "thread_id" in (config.get("configurable") or {}):
        raise RiggerError(
            "rig() names each task's thread itself (BRIDGE:TASK); leave thread_id out of "
            "config['configurable']"
        )
    return config


def _settings(bridge: str, context: RiggerContext, options: dict[str, Any]) -> dict[str, Any]:
    return {
        "bridge": bridge,
        "bridge_options": options,
        "policy": context.policy_name,
        "objective": str(context.objective),
        "designer": context.model_name("writer"),
        "diagnoser": context.model_name("diagnoser"),
        "k_observe": context.k_observe,
        "k_validate": context.k_validate,
        "max_iterations": context.max_iterations,
        "confidence": context.confidence,
        "max_rollouts": context.max_rollouts,
        "min_effect": context.min_effect,
        "seed": context.seed,
    }


def _check_settings(run_dir: Path, settings: dict[str, Any]) -> None:
    """Refuses to mix two different rigs in one run directory."""
    path = run_dir / SETTINGS_FILE
    if path.exists():
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise RiggerError(
                f"{path} is unreadable ({e}); it records the rig's settings: delete it to reuse "
                f"{run_dir} with the settings given now, or rig into a new --out directory"
            ) from None
        if not isinstance(stored, dict):
            raise RiggerError(
                f"{path} does not hold a settings object; delete it, or rig into a new --out"
            )
        differ = sorted(k for k in settings if stored.get(k) != settings[k])
        if differ:
            changes = ", ".join(f"{k}: {stored.get(k)!r} → {settings[k]!r}" for k in differ)
            raise RiggerError(
                f"{run_dir} holds a rig with other settings ({changes}); resume it with the same "
                "settings, or rig into a new --out directory"
            )
    else:
        write_json(path, settings)


def open_checkpoints(run_dir: Path) -> sqlite3.Connection:
    """Opens ``RUN/checkpoints.sqlite``, checking that it is a database SQLite can read.

    Raises:
        RiggerError: If the file cannot be opened or is not a readable SQLite database (the
            message says to delete it; finished rollouts in ``RUN/trajectories`` are kept).
    """
    path = run_dir / CHECKPOINTS_FILE
    try:
        connection = sqlite3.connect(path, check_same_thread=False)
    except sqlite3.Error as e:
        raise RiggerError(f"cannot open {path}: {e}") from None
    try:
        connection.execute("PRAGMA schema_version").fetchall()
    except sqlite3.DatabaseError as e:
        connection.close()
        raise RiggerError(
            f"{path} is not a readable checkpoint database ({e}); delete it to rig these tasks "
            "from the start (the rollouts already played stay in trajectories/)"
        ) from None
    return connection


def checkpoints_lost(run_dir: str | Path) -> bool:
    """Whether ``RUN/checkpoints.sqlite`` is gone (deleted while the rig ran: no resume)."""
    return not (Path(run_dir) / CHECKPOINTS_FILE).exists()


def _result(task_id: str, values: dict[str, Any], interrupted: bool, resumed: bool) -> TaskResult:
    attempts = values.get("attempts", [])
    last = attempts[-1]["verdict"] if attempts else {}
    status = values.get("status", "running")
    if interrupted:
        status = "awaiting_approval"
    return TaskResult(
        task_id=task_id,
        status=status if status != "running" else "failed",
        reason=last.get("reason", ""),
        iterations=values.get("iteration", 0),
        rollouts=values.get("rollouts", 0),
        model_calls=values.get("model_calls", 0),
        baseline_success=(values.get("baseline_stats") or {}).get("success_rate"),
        final_success=(last.get("stats") or {}).get("success_rate"),
        resumed=resumed,
    )


def rig(
    bridge: str,
    task_ids: Sequence[str],
    context: RiggerContext,
    *,
    bridge_options: dict[str, Any] | None = None,
    base_spec: HarnessSpec | None = None,
    max_concurrency: int = 4,
    on_result: Callable[[TaskResult], None] | None = None,
    on_event: Callable[[RiggerEvent], None] | None = None,
    config: Mapping[str, Any] | None = None,
    trace_flush_timeout: float = 0.5,
) -> list[TaskResult]:
    """Rigs every task; returns one result per task, in order.

    Each task's graph runs with ``stream_mode="custom"``, and its progress events
    (:mod:`envharness.graph.events`) go to ``on_event``. ``config`` reaches every task's run
    (its callbacks trace the node runs, the designer's and diagnoser's model calls and, on the
    inline and thread executors, the policy's, one ``episode`` run per rollout; see
    :mod:`envharness.graph.tracing`), and the worker threads run in a copy of the caller's
    context, so a trace the caller is in (e.g. a LangSmith ``@traceable``) is their parent.

    Args:
        bridge: The bridge name.
        task_ids: The tasks to rig.
        context: Run settings (its ``run_dir`` holds checkpoints, trajectories and outputs).
        bridge_options: ``load_bridge`` options for every task.
        base_spec: Rig this harness instead of the bare bridge (its task must be in
            ``task_ids``; components are kept under the new ones).
        max_concurrency: Tasks rigged at once.
        on_result: Called (from a worker thread) as each task finishes.
        on_event: Called (from a worker thread) with each progress event of every task.
        config: A runnable config for every task's run: ``callbacks``, ``tags``,
            ``metadata``, ``run_name``, ``recursion_limit`` ... (see :func:`thread_config`).
        trace_flush_timeout: Seconds to wait at the end for LangSmith to send its queued runs
            (:func:`~envharness.graph.tracing.flush_traces`); nothing is waited for when
            LangSmith did not trace.

    Raises:
        RiggerError: If the run directory holds a rig with other settings, or arguments are bad.
    """
    if not task_ids:
        raise RiggerError("no tasks to rig")
    if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int):
        raise RiggerError(f"expected max_concurrency to be a positive int, got {max_concurrency!r}")
    if max_concurrency < 1:
        raise RiggerError(f"expected max_concurrency to be a positive int, got {max_concurrency}")
    given = _check_config(config)
    if (
        isinstance(trace_flush_timeout, bool)
        or not isinstance(trace_flush_timeout, int | float)
        or trace_flush_timeout < 0
    ):
        raise RiggerError(
            f"expected trace_flush_timeout to be seconds >= 0, got {trace_flush_timeout!r}"
        )
    options = dict(bridge_options or {})
    run_dir = Path(context.run_dir)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RiggerError(
            f"cannot create the run directory {str(run_dir)!r}: {e.strerror or e}; choose a "
            "directory you can write (--out)"
        ) from None
    _check_settings(run_dir, _settings(bridge, context, options))
    connection = open_checkpoints(run_dir)
    try:
        graph = build_rigger(checkpointer=SqliteSaver(connection))

        def one(task_id: str) -> TaskResult:
            config = thread_config(bridge, task_id, context, given)
            snapshot = graph.get_state(config)
            resumed = bool(snapshot.values)
            if snapshot.values and not snapshot.next:
                result = _result(task_id, snapshot.values, False, True)
            else:
                if snapshot.next and snapshot.interrupts:
                    result = _result(task_id, snapshot.values, True, True)
                else:
                    spec = base_spec or HarnessSpec(BridgeSpec(bridge, task_id, options))
                    try:
                        # The base pins its task data, so every candidate and accepted spec does.
                        start = (
                            None
                            if resumed
                            else {"task_id": task_id, "base_spec": spec.pinned().to_dict()}
                        )
                        for event in graph.stream(
                            start, config, context=context, stream_mode="custom"
                        ):
                            if on_event is not None:
                                on_event(event)
                    except EnvHarnessError as e:  # kept in the checkpoint: a re-run resumes
                        result = TaskResult(task_id, "failed", f"{type(e).__name__}: {e}")
                    else:
                        after = graph.get_state(config)
                        result = _result(task_id, after.values, bool(after.interrupts), resumed)
            if result.status == "accepted":
                result.accepted = str(accepted_path(run_dir, task_id))
            if on_result is not None:
                on_result(result)
            return result

        with ContextThreadPoolExecutor(max_workers=max_concurrency) as pool:
            results = list(pool.map(one, task_ids))
        flush_traces(trace_flush_timeout)
        if checkpoints_lost(run_dir):
            _log.warning(
                "%s was deleted while the rig ran: its checkpoints are lost and this rig "
                "cannot be resumed",
                run_dir / CHECKPOINTS_FILE,
            )
        return results
    finally:
        connection.close()
        close_store(run_dir)
