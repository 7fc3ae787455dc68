"""Reading a rig's run directory (outputs and checkpoints) into a :class:`RunSummary`."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from envharness.errors import EnvHarnessError, RiggerError
from envharness.graph.judge.audit import load_audit
from envharness.graph.objective import Objective
from envharness.graph.report.records import UNFINISHED, RunSummary, TaskSummary
from envharness.graph.run import CHECKPOINTS_FILE, SETTINGS_FILE
from envharness.harness.spec import HarnessSpec

__all__ = ["collect_run"]


def _natural(task_id: str) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", task_id)]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as e:
        raise RiggerError(f"cannot read {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise RiggerError(f"{path} is not valid JSON: {e}") from None


def _from_accepted(path: Path, settings: Mapping[str, Any]) -> TaskSummary:
    data = _read_json(path)
    try:
        spec = HarnessSpec.from_dict(data)
    except EnvHarnessError as e:
        raise RiggerError(f"{path} is not an accepted harness spec: {e}") from e
    lineage = spec.lineage
    validation = dict(lineage.validation) if lineage is not None else {}
    final = validation.get("candidate") or {}
    designer = validation.get("designer")
    heuristic = designer == "heuristic" and settings.get("diagnoser") == "heuristic"
    return TaskSummary(
        task_id=(lineage.task if lineage and lineage.task else spec.bridge.task_id),
        status="accepted",
        reason=validation.get("verdict", ""),
        direction=validation.get("direction"),
        baseline=validation.get("baseline") or {},
        final=final,
        early_stopped=bool(final) and final.get("n", 0) < settings.get("k_validate", 0),
        iterations=validation.get("iterations", 0),
        rollouts=validation.get("rollouts", 0),
        model_calls=0 if heuristic else None,
        designer=designer,
        template=validation.get("template"),
    )


def _best(record: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """An undecided record's best candidate: its statistics and template (may be empty)."""
    best = record.get("best")
    if not isinstance(best, Mapping):
        return {}, None
    verdict = best.get("verdict") if isinstance(best.get("verdict"), Mapping) else {}
    candidate = best.get("candidate") if isinstance(best.get("candidate"), Mapping) else {}
    stats = best.get("stats") or verdict.get("stats") or best.get("candidate_stats") or {}
    template = best.get("template") or candidate.get("template")
    return (dict(stats) if isinstance(stats, Mapping) else {}), template


def _from_attempts(task_id: str, status: str, record: Mapping[str, Any]) -> TaskSummary:
    """A task from a rejected or undecided file, or from a checkpoint's values.

    Each holds a baseline and attempts; an undecided file may add its ``best`` candidate.
    """
    attempts = list(record.get("attempts") or [])
    baseline = record.get("baseline_stats") or record.get("baseline") or {}
    if not isinstance(baseline, dict):  # a checkpoint's ``baseline`` holds trajectory keys
        baseline = {}
    diagnosis = record.get("diagnosis") or {}
    measured = [a for a in attempts if (a.get("verdict") or {}).get("stats")]
    last_measured = measured[-1]["verdict"] if measured else {}
    last = attempts[-1] if attempts else {}
    tried = [a for a in attempts if a.get("candidate")]
    spent = sum((a.get("verdict") or {}).get("rollouts", 0) for a in attempts)
    calls = sum(a.get("model_calls", 0) for a in attempts)
    final = last_measured.get("stats") or {}
    template = tried[-1]["candidate"].get("template") if tried else None
    best_stats, best_template = _best(record)
    if best_stats and (status == "undecided" or not final):  # undecided: show its best
        final, template = best_stats, best_template or template
    return TaskSummary(
        task_id=task_id,
        status=status,
        reason=record.get("reason") or (last.get("verdict") or {}).get("reason", ""),
        direction=diagnosis.get("direction"),
        baseline=baseline,
        final=final,
        early_stopped=bool(last_measured.get("early_stopped", False)),
        iterations=record.get("iteration") or (last.get("iteration", 0) if last else 0),
        rollouts=baseline.get("n", 0) + spent,
        model_calls=calls + (diagnosis.get("source", "heuristic") != "heuristic"),
        designer=last.get("designer"),
        template=template,
    )


_State = tuple[dict[str, Any], dict[str, Any] | None]


def _interrupt(pending_writes: Any) -> dict[str, Any] | None:
    """The payload of a pending approval interrupt (``{"verdict": ..., ...}``), or ``None``."""
    for write in pending_writes or ():
        if write[1] == "__interrupt__":
            for pending in write[2] if isinstance(write[2], list | tuple) else [write[2]]:
                value = getattr(pending, "value", pending)
                return value if isinstance(value, dict) else {}
    return None


def _checkpoints(path: Path, bridge: str) -> tuple[dict[str, _State], str]:
    """Each task's latest checkpoint values and pending approval interrupt, plus a caveat."""
    if not path.is_file():
        return {}, f"no {path.name}: rollouts are taken from the output files"
    from langgraph.checkpoint.sqlite import SqliteSaver

    states: dict[str, _State] = {}
    prefix = f"{bridge}:"
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        rows = connection.execute(
            "SELECT DISTINCT thread_id FROM checkpoints WHERE checkpoint_ns = ''"
        ).fetchall()
        saver = SqliteSaver(connection)
        for (thread,) in rows:
            if not str(thread).startswith(prefix):
                continue
            found = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
            if found is None:
                continue
            values = dict(found.checkpoint.get("channel_values") or {})
            states[str(thread)[len(prefix) :]] = (values, _interrupt(found.pending_writes))
    except (sqlite3.Error, ValueError, TypeError) as e:
        return {}, f"cannot read {path.name} ({e}): rollouts are taken from the output files"
    finally:
        connection.close()
    return states, ""


def _merge_checkpoints(tasks: dict[str, TaskSummary], states: Mapping[str, _State]) -> None:
    """Adds the checkpointed tasks without output files; takes the rig's counters for all."""
    for task_id, (values, waiting) in states.items():
        status = values.get("status", "running")
        if status not in ("accepted", "rejected", "undecided"):
            status = "awaiting_approval" if waiting is not None else "unfinished"
        live = _from_attempts(task_id, status, values)
        if task_id not in tasks and waiting is not None:  # the verdict waits in the interrupt
            verdict, candidate = waiting.get("verdict") or {}, waiting.get("candidate") or {}
            reason = f"awaiting human approval: {verdict.get('reason', '')}".rstrip(": ")
            tasks[task_id] = replace(
                live,
                reason=reason,
                final=verdict.get("stats") or live.final,
                early_stopped=bool(verdict.get("early_stopped", live.early_stopped)),
                template=candidate.get("template", live.template),
                designer=values.get("candidate_designer", live.designer),
            )
        elif task_id not in tasks:
            tasks[task_id] = replace(
                live, reason=UNFINISHED if status == "unfinished" else live.reason
            )
        task = tasks[task_id]
        tasks[task_id] = replace(
            task,
            early_stopped=live.early_stopped if live.final else task.early_stopped,
            rollouts=values.get("rollouts", task.rollouts),
            model_calls=values.get("model_calls", task.model_calls),
        )


def _stored_trajectories(run_dir: Path) -> tuple[int | None, str]:
    from envharness.errors import TrajectoryError
    from envharness.rollout.store import RunStore

    if not (run_dir / "trajectories").is_dir():
        return None, ""
    try:
        with RunStore(run_dir / "trajectories", readonly=True) as store:
            return len(store), ""
    except TrajectoryError as e:
        return None, f"cannot read the stored trajectories: {e}"


def collect_run(run_dir: str | Path) -> RunSummary:
    """Reads a rig's run directory into a :class:`RunSummary` (reads only, draws nothing).

    Args:
        run_dir: The directory ``envharness rig --out`` wrote.

    Returns:
        The settings, one :class:`TaskSummary` per task and the totals' sources.

    Raises:
        RiggerError: If ``run_dir`` is not a rig's run directory (no ``rig.json``, or no
            accepted, rejected, undecided or checkpointed task), or one of its files (the audit
            included) is malformed.
    """
    run = Path(run_dir)
    if not run.is_dir():
        raise RiggerError(f"no run directory at {run}")
    settings_path = run / SETTINGS_FILE
    if not settings_path.is_file():
        raise RiggerError(
            f"{run} is not a rig run directory: it has no {SETTINGS_FILE} "
            "(the settings `envharness rig --out` writes)"
        )
    settings = _read_json(settings_path)
    if not isinstance(settings, dict) or "bridge" not in settings:
        raise RiggerError(f"{settings_path} holds no rig settings (expected a 'bridge' key)")
    objective = Objective.parse(str(settings.get("objective", "auto")))
    tasks: dict[str, TaskSummary] = {}
    for status in ("rejected", "undecided"):
        for path in sorted((run / status).glob("*.json")):
            record = _read_json(path)
            if not isinstance(record, dict) or "task_id" not in record:
                raise RiggerError(f"{path} is not a {status}-attempts record (no 'task_id')")
            try:
                tasks[record["task_id"]] = _from_attempts(record["task_id"], status, record)
            except (AttributeError, TypeError, KeyError) as e:
                raise RiggerError(f"{path} is a malformed {status}-attempts record: {e!r}") from e
    for path in sorted((run / "accepted").glob("*.json")):
        summary = _from_accepted(path, settings)
        tasks[summary.task_id] = summary
    states, caveat = _checkpoints(run / CHECKPOINTS_FILE, settings["bridge"])
    _merge_checkpoints(tasks, states)
    if not tasks:
        raise RiggerError(
            f"{run} holds no rigged task: no accepted/ or rejected/ (or undecided/) outputs and no "
            f"checkpointed task in {CHECKPOINTS_FILE}"
        )
    stored, store_caveat = _stored_trajectories(run)
    return RunSummary(
        run_dir=run,
        settings=settings,
        objective=objective,
        tasks=tuple(tasks[t] for t in sorted(tasks, key=_natural)),
        trajectories_stored=stored,
        counters="checkpoints" if states else "output files",
        notes=tuple(note for note in (caveat, store_caveat) if note),
        audit=load_audit(run),
    )
