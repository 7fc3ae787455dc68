"""``rig``: run EnvRigger over many tasks, checkpointed in SQLite so an interrupted rig resumes.

Each task is one LangGraph thread (``<bridge>:<task>``) in ``RUN/checkpoints.sqlite``. A task
whose thread finished is not run again; one that was interrupted continues from its last
checkpoint (its finished rollouts come back from ``RUN/trajectories`` instead of being played
again). Tasks rig concurrently in threads, ``max_concurrency`` at a time.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver

from envharness.errors import EnvHarnessError, RiggerError
from envharness.graph.context import RiggerContext, close_store
from envharness.graph.outputs import accepted_path, write_json
from envharness.graph.rigger import build_rigger
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


def thread_config(bridge: str, task_id: str, context: RiggerContext) -> dict[str, Any]:
    """The LangGraph config of one task's thread, with LangSmith-friendly names and tags."""
    return {
        "configurable": {"thread_id": f"{bridge}:{task_id}"},
        "run_name": f"envrigger:{bridge}:{task_id}",
        "tags": ["envrigger", f"bridge:{bridge}", f"objective:{context.objective}"],
        "metadata": {
            "bridge": bridge,
            "task_id": task_id,
            "policy": context.policy_name,
            "designer": context.model_name("writer"),
            "objective": str(context.objective),
            **context.metadata,
        },
    }


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
) -> list[TaskResult]:
    """Rigs every task; returns one result per task, in order.

    Args:
        bridge: The bridge name.
        task_ids: The tasks to rig.
        context: Run settings (its ``run_dir`` holds checkpoints, trajectories and outputs).
        bridge_options: ``load_bridge`` options for every task.
        base_spec: Rig this harness instead of the bare bridge (its task must be in
            ``task_ids``; components are kept under the new ones).
        max_concurrency: Tasks rigged at once.
        on_result: Called (from a worker thread) as each task finishes.

    Raises:
        RiggerError: If the run directory holds a rig with other settings, or arguments are bad.
    """
    if not task_ids:
        raise RiggerError("no tasks to rig")
    if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int):
        raise RiggerError(f"expected max_concurrency to be a positive int, got {max_concurrency!r}")
    if max_concurrency < 1:
        raise RiggerError(f"expected max_concurrency to be a positive int, got {max_concurrency}")
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
            config = thread_config(bridge, task_id, context)
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
                        graph.invoke(start, config, context=context)
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

        with ThreadPoolExecutor(max_workers=max_concurrency) as pool:
            results = list(pool.map(one, task_ids))
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
