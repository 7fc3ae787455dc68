"""Calibration of the shipped EnvRigger (heuristic designer): band coverage checked by an audit.

Run: ``python benchmarks/rig_calibration.py [--cases toy24,tradeoff,auto,gym,textworld,alfworld]
[--tasks 20] [--audit 100] [--concurrency 2] [--skip 0] [--seed 0] [--out PATH]``. Prints a
table per case and writes ``benchmarks/results/rig_calibration.json``, merged with the cases
already in that file (running ``--cases gym`` later adds gym to the file and keeps the toy24
results). ``--skip`` and ``--seed`` move the Toy24 rows to other tasks and seeds: tune the judge
there (e.g. ``--skip 40 --seed 7 --out /tmp/dev.json``), report on the defaults.

Every row rigs its tasks with the shipped graph, :func:`envharness.graph.run.rig` with
``designer="heuristic"``, into a fresh temporary run directory under ``/tmp`` (inline rollouts,
SQLite checkpoints, tasks and siblings picked as ``envharness rig`` does: the first N tasks of
the split, then the next 8 as siblings), and then re-measures every accepted spec with
:func:`envharness.graph.judge.audit.audit_run` on fresh seeds (``--audit`` rollouts each). The
columns:

- ``acc``, ``und``, ``rej``, ``fail``: the rig's statuses (accepted, undecided, rejected, failed);
  ``crash``: tasks whose rig raised an exception out of ``rig`` (a library bug: the group is
  rigged again task by task in the same run directory, so the other tasks' results are kept and
  the traceback is printed and stored; such a task's rollouts are those of its last checkpoint);
- ``in band``: accepted specs whose audited success rate lies inside the band, of those audited;
- ``coverage``: tasks whose accepted spec audits inside the band divided by ALL tasks (a
  rejected, undecided, failed or crashed task counts against it);
- ``roll/task``: mean policy rollouts per task (``TaskResult.rollouts``: baseline and
  validation; the audit's rollouts are not counted), and ``max`` the most one task spent;
- ``wall s``: the row's wall time, rig plus audit (both are in the JSON separately).

Cases:

- ``toy24``: Toy24, objective ``sr:0.4-0.6``, OraclePolicy at skill 0.2, 0.5, 0.8 and 1.0.
- ``tradeoff``: Toy24 ``oracle:0.5`` ``sr:0.4-0.6`` at confidence 0.6, 0.7, 0.8, 0.9, and the
  paper's budget: ``max_rollouts=25`` and ``max_iterations=1``, so no task spends more than 30
  rollouts (5 baseline + 25 validation).
- ``auto``: Toy24, objective ``auto``, skill 0.1, 0.5 and 1.0: the audit also plays the base spec
  and tests the claimed direction (one-sided Fisher at 0.05); ``harden conf`` and ``scaff conf``
  give, of the accepted specs of that direction, those whose direction the audit confirmed, and
  ``untested`` the accepted specs of another direction (``fix-behaviour``, ``none``), which the
  audit does not test; coverage is not defined (``-``). The confirmed target is over the
  accepted ``harden`` and ``scaffold`` specs.
- ``gym``: Gymnasium FrozenLake-v1 slippery and not slippery (``env_kwargs``, one rig call each,
  since bridge options are per call), CliffWalking-v1 and Taxi-v4, aggregated into one row per
  policy (0.5 and 0.8); audit 60 (``--audit`` caps it).
- ``textworld``: the first 5 TextWorld train tasks, skill 0.5 and 0.8, audit 60.
- ``alfworld``: ALFWorld ``valid_seen`` from ``$ENVHARNESS_ALFWORLD_DATA`` or
  ``../shared/data/alfworld`` (skipped with a reason when absent), skill 0.5 and 0.8, audit 60.

Targets (printed, not asserted): coverage >= 80% on Toy24 band rows and >= 70% elsewhere, at most
60 rollouts per task, and >= 90% of accepted ``auto`` decisions confirmed by the audit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver

from envharness import list_tasks
from envharness.errors import EnvHarnessError
from envharness.graph.context import RiggerContext
from envharness.graph.judge.audit import audit_run
from envharness.graph.rigger import build_rigger
from envharness.graph.run import CHECKPOINTS_FILE, TaskResult, rig, thread_config

RESULTS = Path(__file__).parent / "results" / "rig_calibration.json"
CASES = ("toy24", "tradeoff", "auto", "gym", "textworld", "alfworld")
BAND = "sr:0.4-0.6"
K_OBSERVE = K_VALIDATE = 5
MAX_ITERATIONS = 5
CONFIDENCE = RiggerContext.__dataclass_fields__["confidence"].default  # the shipped defaults
MAX_ROLLOUTS = RiggerContext.__dataclass_fields__["max_rollouts"].default
SIBLINGS = 8  # as envharness rig
SEED = 0
TARGET_TOY24, TARGET_OTHER = 0.8, 0.7
TARGET_ROLLOUTS = 60
TARGET_CONFIRMED = 0.9
STATUSES = ("accepted", "undecided", "rejected", "failed", "crashed")  # crashed: an exception
DIRECTIONS = ("harden", "scaffold")


@dataclass
class Group:
    """Tasks rigged by one ``rig`` call (one bridge-option set), with their siblings."""

    tasks: list[str]
    options: dict[str, Any] = field(default_factory=dict)
    siblings: list[str] = field(default_factory=list)
    label: str = ""  # appended to the task id in the table's per-task records

    def name(self, task: str) -> str:
        """The task's name in the results (the task id, with the option set when there is one)."""
        return f"{task}[{self.label}]" if self.label else task


@dataclass
class Row:
    """One row of a case's table: a policy (and setting) rigged over one task set."""

    bridge: str
    task_set: str
    policy: str
    groups: list[Group]
    objective: str = BAND
    confidence: float = CONFIDENCE
    max_rollouts: int = MAX_ROLLOUTS
    max_iterations: int = MAX_ITERATIONS
    audit: int = 100
    setting: str = ""
    seed: int = SEED

    def settings(self, concurrency: int) -> dict[str, Any]:
        """The row's settings, as recorded in the JSON."""
        return {
            "bridge": self.bridge,
            "task_set": self.task_set,
            "policy": self.policy,
            "objective": self.objective,
            "designer": "heuristic",
            "confidence": self.confidence,
            "max_rollouts": self.max_rollouts,
            "k_observe": K_OBSERVE,
            "k_validate": K_VALIDATE,
            "max_iterations": self.max_iterations,
            "audit_rollouts": self.audit,
            "max_concurrency": concurrency,
            "executor": None,
            "seed": self.seed,
            "groups": [
                {"tasks": g.tasks, "bridge_options": g.options, "siblings": g.siblings}
                for g in self.groups
            ],
        }


# -- task selection ---------------------------------------------------------------------------


def pick(bridge: str, n: int, split: str = "train", skip: int = 0, **options: Any) -> Group:
    """``n`` tasks of ``split`` after the first ``skip``, and the next 8 as siblings.

    With ``skip=0`` these are the tasks and siblings ``envharness rig`` picks.
    """
    every = list_tasks(bridge, split=split, **options)
    chosen = every[skip : skip + n]
    siblings = [t for t in every if t not in chosen][:SIBLINGS]
    return Group(chosen, dict(options), siblings)


def alfworld_data() -> Path | None:
    """The ALFWorld data directory, or ``None`` when it is absent."""
    env = os.environ.get("ENVHARNESS_ALFWORLD_DATA")
    root = Path(__file__).resolve().parent.parent
    path = Path(env) if env else root.parent / "shared" / "data" / "alfworld"
    return path if path.is_dir() else None


def case_rows(case: str, n_tasks: int, audit: int, skip: int = 0) -> tuple[list[Row], str | None]:
    """The rows of ``case``, or no rows and the reason the case is skipped.

    ``skip`` moves the Toy24 rows to the tasks after the first ``skip`` (a development set).
    """
    if case in ("toy24", "tradeoff", "auto"):
        toy = pick("toy24", n_tasks, skip=skip)
        task_set = f"train[{skip or ''}:{skip + n_tasks}]"
        if case == "toy24":
            return [
                Row("toy24", task_set, f"oracle:{s}", [toy], audit=audit)
                for s in (0.2, 0.5, 0.8, 1.0)
            ], None
        if case == "tradeoff":
            rows = [
                Row(
                    "toy24",
                    task_set,
                    "oracle:0.5",
                    [toy],
                    confidence=c,
                    audit=audit,
                    setting=f"conf {c}",
                )
                for c in (0.6, 0.7, 0.8, 0.9)
            ]
            rows.append(
                Row(
                    "toy24",
                    task_set,
                    "oracle:0.5",
                    [toy],
                    max_rollouts=25,
                    max_iterations=1,
                    audit=audit,
                    setting="budget 30/task",
                )
            )
            return rows, None
        return [
            Row("toy24", task_set, f"oracle:{s}", [toy], objective="auto", audit=audit)
            for s in (0.1, 0.5, 1.0)
        ], None
    small = min(audit, 60)
    if case == "gym":
        groups = []
        for slippery in (True, False):
            group = pick("gymnasium", 1, env_kwargs={"is_slippery": slippery})
            if group.tasks != ["FrozenLake-v1"]:
                return [], f"expected FrozenLake-v1 first in the gymnasium list, got {group.tasks}"
            group.label = f"is_slippery={slippery}"
            groups.append(group)
        every = list_tasks("gymnasium", split="train")
        plain = ["CliffWalking-v1", "Taxi-v4"]
        missing = [t for t in plain if t not in every]
        if missing:
            return [], f"gymnasium lists no {missing}"
        groups.append(Group(plain, {}, [t for t in every if t not in plain][:SIBLINGS]))
        task_set = "FrozenLake(slip,no slip)+Cliff+Taxi"
        return [
            Row("gymnasium", task_set, f"oracle:{s}", groups, audit=small) for s in (0.5, 0.8)
        ], None
    if case == "textworld":
        group = pick("textworld", min(5, n_tasks))
        task_set = f"train[:{len(group.tasks)}]"
        return [
            Row("textworld", task_set, f"oracle:{s}", [group], audit=small) for s in (0.5, 0.8)
        ], None
    if case == "alfworld":
        data = alfworld_data()
        if data is None:
            return [], (
                "no ALFWorld data: set $ENVHARNESS_ALFWORLD_DATA or put it in "
                "../shared/data/alfworld"
            )
        group = pick("alfworld", n_tasks, split="valid_seen", data_dir=str(data))
        if not group.tasks:
            return [], f"list_tasks('alfworld', split='valid_seen') is empty under {data}"
        task_set = f"valid_seen[:{len(group.tasks)}]"
        return [
            Row("alfworld", task_set, f"oracle:{s}", [group], audit=small) for s in (0.5, 0.8)
        ], None
    raise SystemExit(f"unknown case {case!r}; choose from {', '.join(CASES)}")


# -- one row: rig, then audit ----------------------------------------------------------------


def rig_group(row: Row, group: Group, concurrency: int) -> tuple[list[dict[str, Any]], dict]:
    """Rigs one group in a fresh run directory and audits it; per-task records and timings."""
    with tempfile.TemporaryDirectory(prefix=f"rig-calibration-{row.bridge}-", dir="/tmp") as run:
        context = RiggerContext(
            run_dir=run,
            policy=row.policy,
            designer="heuristic",
            objective=row.objective,
            confidence=row.confidence,
            max_rollouts=row.max_rollouts,
            k_observe=K_OBSERVE,
            k_validate=K_VALIDATE,
            max_iterations=row.max_iterations,
            siblings=list(group.siblings),
            seed=row.seed,
        )
        clock = time.perf_counter()
        crashes: dict[str, str] = {}

        def progress(result: TaskResult) -> None:  # a slow case shows how far it got
            print(
                f"     {row.policy} {group.name(result.task_id)}: {result.status}, "
                f"{result.rollouts} rollouts, {time.perf_counter() - clock:.0f} s",
                flush=True,
            )

        try:
            results = rig(
                row.bridge,
                group.tasks,
                context,
                bridge_options=group.options,
                max_concurrency=concurrency,
                on_result=progress,
            )
        except Exception:  # a task crashed the library: find which, keep the others' results
            results = []
            for task in group.tasks:  # finished tasks come back from their checkpoints
                try:
                    results += rig(row.bridge, [task], context, bridge_options=group.options)
                except Exception as e:
                    crashes[task] = "".join(traceback.format_exception(e))
                    spent = checkpointed_rollouts(run, row.bridge, task, context)
                    reason = "".join(traceback.format_exception_only(e)).strip()
                    results.append(TaskResult(task, "crashed", reason, rollouts=spent))
                    print(f"\n!! {row.bridge} {row.policy} {task} crashed:\n{crashes[task]}")
        rig_s = time.perf_counter() - clock
        clock = time.perf_counter()
        audited: dict[str, Any] = {}
        audit_note = None
        if any(r.status == "accepted" for r in results):
            audited = {a.task_id: a for a in audit_run(run, rollouts=row.audit).rows}
        else:
            audit_note = "nothing accepted, nothing audited"
        audit_s = time.perf_counter() - clock
    records = []
    for r in results:
        a = audited.get(r.task_id)
        base = a.baseline_audited if a is not None else None
        records.append(
            {
                "task": group.name(r.task_id),
                "task_id": r.task_id,
                "bridge_options": group.options,
                "status": r.status,
                "reason": r.reason,
                "iterations": r.iterations,
                "rollouts": r.rollouts,
                "baseline_success": r.baseline_success,
                "final_success": r.final_success,
                "audited": a is not None,
                "audited_rate": a.audited["rate"] if a is not None else None,
                "audited_n": a.audited["n"] if a is not None else None,
                "audited_errors": a.audited.get("errors") if a is not None else None,
                "in_band": a.in_band if a is not None else None,
                "direction": a.direction if a is not None else None,
                "baseline_audited_rate": base["rate"] if base is not None else None,
                "confirmed": a.confirmed if a is not None else None,
                "p_value": a.p_value if a is not None else None,
                "claimed_rate": a.claimed.get("rate") if a is not None else None,
                "traceback": crashes.get(r.task_id),
            }
        )
    return records, {"rig_s": rig_s, "audit_s": audit_s, "audit_note": audit_note}


def checkpointed_rollouts(run: str, bridge: str, task: str, context: RiggerContext) -> int:
    """Rollouts a crashed task had spent at its last checkpoint (read-only; 0 if unreadable)."""
    try:
        with sqlite3.connect(Path(run) / CHECKPOINTS_FILE) as connection:
            graph = build_rigger(checkpointer=SqliteSaver(connection))
            values = graph.get_state(thread_config(bridge, task, context)).values
    except Exception:
        return 0
    return int(values.get("rollouts", 0) or 0)


def run_row(row: Row, concurrency: int) -> dict[str, Any]:
    """Rigs and audits every group of the row; the row's summary with its per-task records."""
    records: list[dict[str, Any]] = []
    timings: list[dict[str, Any]] = []
    error = None
    clock = time.perf_counter()
    for group in row.groups:
        try:
            got, timing = rig_group(row, group, concurrency)
        except Exception as e:  # a library crash: recorded, and the other rows still run
            error = "".join(traceback.format_exception(e))
            print(f"\n!! {row.bridge} {row.policy} {group.tasks} crashed:\n{error}", flush=True)
            break
        records += got
        timings.append({"tasks": group.tasks, "bridge_options": group.options, **timing})
    wall = time.perf_counter() - clock
    n = len(records)
    accepted = [r for r in records if r["status"] == "accepted"]
    band = [r for r in accepted if r["in_band"] is not None]
    summary: dict[str, Any] = {
        "tasks": n,
        **{s: sum(r["status"] == s for r in records) for s in STATUSES},
        "other_statuses": sorted({r["status"] for r in records} - set(STATUSES)),
        "audited": sum(r["audited"] for r in records),
        "in_band": sum(r["in_band"] is True for r in records),
        "band_measured": len(band),
        "coverage": (
            sum(r["in_band"] is True for r in records) / n
            if n and row.objective != "auto"
            else None
        ),
        "mean_rollouts": statistics.fmean(r["rollouts"] for r in records) if n else None,
        "max_rollouts_spent": max((r["rollouts"] for r in records), default=None),
    }
    for direction in DIRECTIONS:
        chosen = [r for r in accepted if r["direction"] == direction]
        summary[direction] = {
            "accepted": len(chosen),
            "tested": sum(r["confirmed"] is not None for r in chosen),
            "confirmed": sum(r["confirmed"] is True for r in chosen),
        }
    summary["directions"] = {
        str(d): sum(r["direction"] == d for r in accepted)
        for d in dict.fromkeys(r["direction"] for r in accepted)
    }
    return {
        "setting": row.setting,
        "settings": row.settings(concurrency),
        "summary": summary,
        "wall_s": wall,
        "rig_s": sum(t["rig_s"] for t in timings),
        "audit_s": sum(t["audit_s"] for t in timings),
        "timings": timings,
        "error": error,
        "tasks": records,
    }


# -- printing ---------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole}" if whole else "-"


def target_line(row: Row, result: dict[str, Any]) -> str:
    """The targets beside a row: coverage, rollouts per task, confirmed auto decisions."""
    s = result["summary"]
    parts = []
    if row.objective == "auto":
        acc = sum(s[d]["accepted"] for d in DIRECTIONS)
        conf = sum(s[d]["confirmed"] for d in DIRECTIONS)
        if acc:
            share = conf / acc
            ok = "met" if share >= TARGET_CONFIRMED else "NOT met"
            parts.append(f"confirmed {share:.0%} >= {TARGET_CONFIRMED:.0%} {ok}")
        else:
            parts.append("no harden/scaffold accepted")
    else:
        goal = TARGET_TOY24 if row.bridge == "toy24" else TARGET_OTHER
        if s["coverage"] is not None:
            ok = "met" if s["coverage"] >= goal else "NOT met"
            parts.append(f"cov >= {goal:.0%} {ok}")
    if s["mean_rollouts"] is not None:
        ok = "met" if s["mean_rollouts"] <= TARGET_ROLLOUTS else "NOT met"
        parts.append(f"roll <= {TARGET_ROLLOUTS} {ok}")
    if result["error"]:
        parts.append("CRASHED (see above)")
    return "; ".join(parts)


def header(auto: bool) -> str:
    """The table's header line."""
    text = (
        f"{'bridge':<10} {'task set':<36} {'policy':<11} {'tasks':>5} {'acc':>4} {'und':>4} "
        f"{'rej':>4} {'fail':>4} {'crash':>5} {'in band':>8} {'coverage':>8} {'roll/task':>9} "
        f"{'max':>4} {'wall s':>7}"
    )
    if auto:
        text += f" {'harden conf':>11} {'scaff conf':>10} {'untested':>8}"
    return text + "  targets"


def line(row: Row, result: dict[str, Any], auto: bool) -> str:
    """One table line."""
    s = result["summary"]
    task_set = row.task_set + (f" {row.setting}" if row.setting else "")
    mean = s["mean_rollouts"]
    text = (
        f"{row.bridge:<10} {task_set:<36} {row.policy:<11} {s['tasks']:>5} {s['accepted']:>4} "
        f"{s['undecided']:>4} {s['rejected']:>4} {s['failed']:>4} {s['crashed']:>5} "
        f"{_share(s['in_band'], s['band_measured']):>8} {_pct(s['coverage']):>8} "
        f"{'-' if mean is None else f'{mean:.1f}':>9} {s['max_rollouts_spent'] or '-'!s:>4} "
        f"{result['wall_s']:>7.1f}"
    )
    if auto:
        for direction, width in (("harden", 11), ("scaffold", 10)):
            d = s[direction]
            text += f" {_share(d['confirmed'], d['accepted']):>{width}}"
        untested = s["accepted"] - sum(s[d]["accepted"] for d in DIRECTIONS)
        text += f" {untested:>8}"
    return f"{text}  {target_line(row, result)}"


def odd_tasks(result: dict[str, Any]) -> list[str]:
    """Per-task notes worth printing: failures, and accepted specs that audit outside the band."""
    notes = []
    for r in result["tasks"]:
        if r["status"] in ("failed", "crashed"):
            notes.append(f"  {r['task']}: {r['status']}: {r['reason']}")
        elif r["status"] not in STATUSES:
            notes.append(f"  {r['task']}: {r['status']}: {r['reason']}")
        elif r["in_band"] is False:
            notes.append(
                f"  {r['task']}: accepted (claimed {_pct(r['claimed_rate'])}) but audited "
                f"{_pct(r['audited_rate'])} of {r['audited_n']}"
            )
        elif r["confirmed"] is False:
            notes.append(
                f"  {r['task']}: {r['direction']} not confirmed: audited {_pct(r['audited_rate'])}"
                f" vs base {_pct(r['baseline_audited_rate'])} (p={r['p_value']:.3f})"
            )
    return notes


# -- results file -----------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """The machine the case ran on."""
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "processor": platform.processor() or platform.machine(),
    }


def code_version() -> dict[str, Any]:
    """The library code the case ran: git HEAD and a hash of the working tree's sources.

    Other work may edit the library between two runs of this script; the hash tells whether two
    cases ran the same code (``git diff`` is not enough: untracked files count too).
    """
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for folder in ("envharness", "graph"):
        for path in sorted((root / folder).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        head = None
    return {"git_head": head, "sources_sha256": digest.hexdigest()[:16]}


def save(out: Path, name: str, case: dict[str, Any]) -> None:
    """Writes ``case`` into ``out`` under ``name``, keeping the other cases already there."""
    report: dict[str, Any] = {"benchmark": "rig_calibration", "cases": {}}
    if out.is_file():
        try:
            old = json.loads(out.read_text())
        except (OSError, ValueError):
            old = {}
        if isinstance(old, dict) and isinstance(old.get("cases"), dict):
            report["cases"] = old["cases"]
    report["cases"][name] = case
    report["updated"] = datetime.now(UTC).isoformat(timespec="seconds")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    tmp.replace(out)


def run_case(name: str, args: argparse.Namespace) -> None:
    """Runs every row of one case, printing its table and saving after each row."""
    rows, skipped = case_rows(name, args.tasks, args.audit, args.skip)
    for row in rows:
        row.seed = args.seed
    case: dict[str, Any] = {
        "machine": machine(),
        "code": code_version(),
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "argv": sys.argv[1:],
        "complete": False,
        "rows": [],
    }
    print(f"\n== {name} ==", flush=True)
    if skipped:
        print(f"skipped: {skipped}")
        case.update(skipped=skipped, complete=True)
        save(args.out, name, case)
        return
    first = rows[0]
    print(
        f"heuristic designer, K={K_OBSERVE}/{K_VALIDATE}, objective {first.objective}, audit "
        f"{first.audit} rollouts per accepted spec, concurrency {args.concurrency}, "
        f"{os.cpu_count()} CPUs",
        flush=True,
    )
    auto = first.objective == "auto"
    clock = time.perf_counter()
    done: list[tuple[Row, dict[str, Any]]] = []
    for row in rows:
        result = run_row(row, args.concurrency)
        done.append((row, result))
        case["rows"].append(result)
        print(
            f"  .. {row.policy} {row.setting}: {result['summary']['accepted']}/"
            f"{result['summary']['tasks']} accepted, rig {result['rig_s']:.1f} s, audit "
            f"{result['audit_s']:.1f} s",
            flush=True,
        )
        save(args.out, name, case)
    case["wall_s"] = time.perf_counter() - clock
    case["complete"] = True
    save(args.out, name, case)
    print(header(auto))
    print("-" * len(header(auto)))
    for row, result in done:
        print(line(row, result, auto))
    for row, result in done:
        notes = odd_tasks(result)
        if notes:
            print(f"{row.bridge} {row.policy}{' ' + row.setting if row.setting else ''}:")
            print("\n".join(notes))
    print(f"case {name}: {case['wall_s']:.1f} s; wrote {args.out}", flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases")
    parser.add_argument("--tasks", type=int, default=20, help="tasks per Toy24/ALFWorld row")
    parser.add_argument("--audit", type=int, default=100, help="audit rollouts (default 100)")
    parser.add_argument("--concurrency", type=int, default=2, help="tasks rigged at once")
    parser.add_argument(
        "--skip", type=int, default=0, help="Toy24 rows rig the tasks after the first SKIP"
    )
    parser.add_argument("--seed", type=int, default=SEED, help=f"the rig seed (default {SEED})")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"default {RESULTS}")
    args = parser.parse_args(argv)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {unknown}; choose from {', '.join(CASES)}")
    for name in cases:
        try:
            run_case(name, args)
        except EnvHarnessError as e:
            print(f"case {name} stopped: {type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
