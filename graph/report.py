"""A rig's report: a Markdown file with PNG plots of what ``envharness rig`` left in ``RUN``.

Collecting is separate from rendering. :func:`collect_run` reads a run directory into a
:class:`RunSummary` and draws nothing; :func:`render_markdown` and :func:`render_plots` turn a
summary into text and PNG files; :func:`write_report` writes both; :func:`build_report` does it
all in one call.

Where the numbers come from:

- ``RUN/rig.json``: the rig's settings (bridge, policy, objective, designer, K, iterations).
- ``RUN/accepted/<task>.json`` and ``RUN/rejected/<task>.json``: each task's status, baseline
  statistics, the last validated candidate's statistics, iterations, designer, template, reason.
- ``RUN/checkpoints.sqlite`` (read-only, when readable): the rig's own rollout and model-call
  counters per task, and the tasks that have not finished yet. Without it, rollouts come from
  the lineage (accepted) or are summed over the attempts (rejected).
- ``RUN/trajectories`` (a read-only :class:`~envharness.rollout.RunStore`): how many
  trajectories were stored.

The plots need matplotlib (``pip install 'envharness[report]'``). It is imported only when the
plots are drawn, and draws on the Agg canvas without touching pyplot's global backend. Without
it, :func:`write_report` still writes the Markdown and says the plots were skipped.
"""

from __future__ import annotations

import json
import re
import sqlite3
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from envharness.errors import DependencyNotInstalled, EnvHarnessError, RiggerError
from envharness.graph.objective import Objective
from envharness.graph.run import CHECKPOINTS_FILE, SETTINGS_FILE
from envharness.harness.spec import HarnessSpec

__all__ = [
    "PLOTS",
    "ReportFiles",
    "RunSummary",
    "TaskSummary",
    "build_report",
    "collect_run",
    "render_markdown",
    "render_plots",
    "report_path",
    "write_report",
]

PLOTS = ("success", "coverage", "iterations", "rollouts")
"""The plots a report draws, in order; each is saved as ``<stem>-<name>.png``."""

_STATUSES = ("accepted", "rejected", "awaiting_approval", "unfinished")
_UNFINISHED = "not finished (interrupted or failed): run the same rig command to resume"


@dataclass(frozen=True)
class TaskSummary:
    """One task's outcome, as the report shows it.

    Attributes:
        task_id: The task.
        status: ``accepted``, ``rejected``, ``awaiting_approval`` or ``unfinished``.
        reason: The last verdict's reason.
        direction: The diagnosed direction (``scaffold``, ``harden``, ...), if known.
        baseline: The baseline's :class:`~envharness.rollout.RolloutStats` as a dict.
        final: The last validated candidate's statistics (empty without one).
        early_stopped: Whether that validation stopped before K rollouts.
        iterations: Write→validate iterations used.
        rollouts: Rollouts spent (baseline and validation).
        model_calls: Model calls spent (``None`` when the run directory does not say).
        designer: ``heuristic`` or the model that wrote the last candidate.
        template: The heuristic template (or other label) of the last candidate.
    """

    task_id: str
    status: str
    reason: str = ""
    direction: str | None = None
    baseline: dict[str, Any] = field(default_factory=dict)
    final: dict[str, Any] = field(default_factory=dict)
    early_stopped: bool = False
    iterations: int = 0
    rollouts: int = 0
    model_calls: int | None = 0
    designer: str | None = None
    template: str | None = None

    @property
    def baseline_success(self) -> float | None:
        """The baseline success rate (``None`` without a baseline)."""
        return self.baseline.get("success_rate")

    @property
    def final_success(self) -> float | None:
        """The last validated candidate's success rate (``None`` without one)."""
        return self.final.get("success_rate")


@dataclass(frozen=True)
class RunSummary:
    """What a rig produced, collected from its run directory by :func:`collect_run`.

    Attributes:
        run_dir: The run directory.
        settings: The rig's settings (``RUN/rig.json``).
        objective: The parsed objective.
        tasks: One summary per task, in natural task order.
        trajectories_stored: Trajectories in ``RUN/trajectories`` (``None`` without a store).
        counters: Where rollouts and model calls come from: ``checkpoints`` or ``output files``.
        notes: Caveats worth printing in the report.

    Example:
        >>> tasks = (TaskSummary("a", "accepted", rollouts=12), TaskSummary("b", "rejected"))
        >>> summary = RunSummary(Path("runs/x"), {"bridge": "toy24"}, Objective(), tasks)
        >>> summary.accepted, summary.total_rollouts, summary.rollouts_per_accepted
        (1, 12, 12.0)
    """

    run_dir: Path
    settings: dict[str, Any]
    objective: Objective
    tasks: tuple[TaskSummary, ...]
    trajectories_stored: int | None = None
    counters: str = "output files"
    notes: tuple[str, ...] = ()

    def count(self, status: str) -> int:
        """How many tasks ended with ``status``."""
        return sum(task.status == status for task in self.tasks)

    @property
    def accepted(self) -> int:
        """Tasks with an accepted harness."""
        return self.count("accepted")

    @property
    def total_rollouts(self) -> int:
        """Rollouts spent over all tasks."""
        return sum(task.rollouts for task in self.tasks)

    @property
    def total_model_calls(self) -> int | None:
        """Model calls over all tasks (``None`` if any task's count is unknown)."""
        calls = [task.model_calls for task in self.tasks]
        return None if None in calls else sum(c for c in calls if c is not None)

    @property
    def rollouts_per_accepted(self) -> float | None:
        """All rollouts spent divided by accepted harnesses (``None`` when none was accepted)."""
        return self.total_rollouts / self.accepted if self.accepted else None

    def band_value(self, stats: Mapping[str, Any]) -> float | None:
        """What a band objective measures in ``stats`` (mean steps for a steps band)."""
        key = "success_steps_mean" if self.objective.kind == "steps_band" else "success_rate"
        return stats.get(key)

    def band_hits(self) -> tuple[int, int] | None:
        """For a band objective: (final values inside the band, tasks with a final value)."""
        if not self.objective.is_band:
            return None
        values = [self.band_value(task.final) for task in self.tasks]
        measured = [v for v in values if v is not None]
        return sum(self.objective.contains(v) for v in measured), len(measured)


@dataclass(frozen=True)
class ReportFiles:
    """What :func:`write_report` wrote.

    Attributes:
        markdown: The Markdown report.
        plots: The PNG plots by name (see :data:`PLOTS`); empty when they were skipped.
        plots_skipped: Why the plots were skipped, or ``None``.
    """

    markdown: Path
    plots: dict[str, Path]
    plots_skipped: str | None = None


# -- collecting -------------------------------------------------------------------------------


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


def _from_attempts(task_id: str, status: str, record: Mapping[str, Any]) -> TaskSummary:
    """A task from a rejected file or a checkpoint's values (both hold baseline and attempts)."""
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
    return TaskSummary(
        task_id=task_id,
        status=status,
        reason=record.get("reason") or (last.get("verdict") or {}).get("reason", ""),
        direction=diagnosis.get("direction"),
        baseline=baseline,
        final=last_measured.get("stats") or {},
        early_stopped=bool(last_measured.get("early_stopped", False)),
        iterations=record.get("iteration") or (last.get("iteration", 0) if last else 0),
        rollouts=baseline.get("n", 0) + spent,
        model_calls=calls + (diagnosis.get("source", "heuristic") != "heuristic"),
        designer=last.get("designer"),
        template=(tried[-1]["candidate"].get("template") if tried else None),
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
        if status not in ("accepted", "rejected"):
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
                live, reason=_UNFINISHED if status == "unfinished" else live.reason
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
            accepted, rejected or checkpointed task), or one of its files is malformed.
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
    for path in sorted((run / "rejected").glob("*.json")):
        record = _read_json(path)
        if not isinstance(record, dict) or "task_id" not in record:
            raise RiggerError(f"{path} is not a rejected-attempts record (no 'task_id')")
        try:
            tasks[record["task_id"]] = _from_attempts(record["task_id"], "rejected", record)
        except (AttributeError, TypeError, KeyError) as e:
            raise RiggerError(f"{path} is a malformed rejected-attempts record: {e!r}") from e
    for path in sorted((run / "accepted").glob("*.json")):
        summary = _from_accepted(path, settings)
        tasks[summary.task_id] = summary
    states, caveat = _checkpoints(run / CHECKPOINTS_FILE, settings["bridge"])
    _merge_checkpoints(tasks, states)
    if not tasks:
        raise RiggerError(
            f"{run} holds no rigged task: no accepted/ or rejected/ outputs and no "
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
    )


# -- rendering: Markdown ----------------------------------------------------------------------


def report_path(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Where the Markdown goes: ``out`` if it ends in ``.md``, else ``out/report.md``.

    Example:
        >>> report_path("runs/x").as_posix(), report_path("runs/x", "site").as_posix()
        ('runs/x/report/report.md', 'site/report.md')
    """
    if out is None:
        return Path(run_dir) / "report" / "report.md"
    out = Path(out)
    return out if out.suffix.lower() == ".md" else out / "report.md"


def _cell(value: Any) -> str:
    text = "-" if value is None or value == "" else str(value)
    return " ".join(text.split()).replace("|", "\\|")


def _rate(stats: Mapping[str, Any], early_stopped: bool = False) -> str:
    if stats.get("success_rate") is None:
        return "-"
    detail = f"{stats.get('successes', '?')}/{stats.get('n', '?')}"
    return f"{stats['success_rate']:.0%} ({detail}{', stopped early' if early_stopped else ''})"


def _table(header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _settings_rows(summary: RunSummary) -> list[tuple[Any, ...]]:
    s = dict(summary.settings)
    objective = f"{summary.objective} ({summary.objective.describe()})"
    rows: list[tuple[Any, ...]] = [
        ("bridge", s.pop("bridge")),
        ("bridge options", json.dumps(s.pop("bridge_options", {}) or {}, sort_keys=True)),
        ("policy", s.pop("policy", None)),
        ("objective", objective if s.pop("objective", None) is not None else None),
        ("designer", s.pop("designer", None)),
        ("diagnoser", s.pop("diagnoser", None)),
        ("K observe / K validate", f"{s.pop('k_observe', '?')} / {s.pop('k_validate', '?')}"),
        ("max iterations", s.pop("max_iterations", None)),
        ("seed", s.pop("seed", None)),
    ]
    return rows + [(key.replace("_", " "), json.dumps(value)) for key, value in sorted(s.items())]


def _task_rows(summary: RunSummary) -> list[tuple[Any, ...]]:
    rows = []
    for t in summary.tasks:
        made_by = " · ".join(p for p in (t.designer, t.template, t.direction) if p)
        baseline = _rate(t.baseline)
        rows.append(
            (f"`{t.task_id}`", t.status, baseline, _rate(t.final, t.early_stopped), t.iterations)
            + (t.rollouts, made_by, t.reason)
        )
    return rows


def _band_counts(summary: RunSummary, status: str) -> str | None:
    """``"accepted 3/4"``: the tasks with ``status`` whose final value lies in the band."""
    values = [summary.band_value(t.final) for t in summary.tasks if t.status == status]
    measured = [v for v in values if v is not None]
    if not measured:
        return None
    return f"{status} {sum(summary.objective.contains(v) for v in measured)}/{len(measured)}"


def _coverage_lines(summary: RunSummary) -> list[str]:
    total = len(summary.tasks)
    others = [f"{summary.count(s)} {s}" for s in _STATUSES[1:]]
    lines = [
        f"- Accepted: **{summary.accepted}/{total}** tasks ({summary.accepted / total:.0%}).",
        "- Not accepted: " + (", ".join(o for o in others if o[0] != "0") or "none") + ".",
    ]
    hits = summary.band_hits()
    if hits is None:
        lines.append(f"- Objective `{summary.objective}` has no band: coverage is acceptance.")
        return lines
    inside, measured = hits
    steps = summary.objective.kind == "steps_band"
    what = "mean steps of successful episodes" if steps else "success rates"
    split = [c for status in _STATUSES if (c := _band_counts(summary, status))]
    unmeasured = f"; {total - measured} task(s) have no final value" if measured < total else ""
    lines.append(
        f"- Band `{summary.objective}`: **{inside}/{measured}** final {what} fall inside the band "
        f"({', '.join(split) or 'none measured'}){unmeasured}."
    )
    return lines


def _totals_rows(summary: RunSummary) -> list[tuple[Any, ...]]:
    baseline = sum(t.baseline.get("n", 0) for t in summary.tasks)
    calls = summary.total_model_calls
    per = summary.rollouts_per_accepted
    iterations = sum(t.iterations for t in summary.tasks)
    rows: list[tuple[Any, ...]] = [
        (
            "rollouts",
            f"{summary.total_rollouts} (baseline {baseline}, "
            f"validation {summary.total_rollouts - baseline})",
        ),
        ("model calls", calls if calls is not None else "unknown (no checkpoints)"),
        ("rollouts per accepted harness", f"{per:.1f}" if per is not None else "- (none accepted)"),
        ("iterations", f"{iterations} ({iterations / len(summary.tasks):.2f} per task)"),
    ]
    if summary.trajectories_stored is not None:
        rows.append(("trajectories stored", summary.trajectories_stored))
    return rows


def render_markdown(
    summary: RunSummary, plots: Mapping[str, str] | None = None, plots_skipped: str | None = None
) -> str:
    """The report as Markdown.

    Args:
        summary: What :func:`collect_run` read.
        plots: Plot links by name (see :data:`PLOTS`), relative to the Markdown file.
        plots_skipped: Why there are no plots, said in the report.

    Returns:
        The Markdown text.
    """
    plots = dict(plots or {})
    s = summary.settings

    def figure(name: str, title: str) -> list[str]:
        return [f"![{title}]({plots[name]})", ""] if name in plots else []

    title = f"# EnvRigger report · {s['bridge']} · {s.get('policy', '?')} · {summary.objective}"
    k_validate = s.get("k_validate", "K")
    lines = [
        title,
        "",
        f"Run directory: `{summary.run_dir}` · {len(summary.tasks)} task(s) · "
        f"{summary.accepted} accepted · {summary.total_rollouts} rollouts.",
        "",
    ]
    if plots_skipped:
        lines += [f"> **Plots skipped:** {plots_skipped}", ""]
    lines += ["## Run settings", "", *_table(("setting", "value"), _settings_rows(summary)), ""]
    lines += ["## Tasks", ""]
    header = ("task", "status", "baseline success", "harnessed success (K)", "iterations")
    header += ("rollouts", "designer · template · direction", "reason")
    lines += [*_table(header, _task_rows(summary)), ""]
    lines += [
        "*Harnessed success* is the last validated candidate on K fresh rollouts (for a task "
        "that was not accepted, the last one measured); *stopped early* means validation "
        f"stopped before K={k_validate} because the decision could no longer change. "
        "*Rollouts* count baseline and validation rollouts.",
        "",
        *figure("success", "Baseline vs harnessed success per task"),
        "## Objective coverage",
        "",
        *_coverage_lines(summary),
        "",
        *figure("coverage", "Objective coverage"),
        "## Totals",
        "",
        *_table(("total", "value"), _totals_rows(summary)),
        "",
        f"Rollouts and model calls come from the rig's {summary.counters}"
        + (f" (`{CHECKPOINTS_FILE}`)." if summary.counters == "checkpoints" else "."),
        "",
    ]
    lines += [f"> {note}" for note in summary.notes] + ([""] if summary.notes else [])
    lines += [*figure("iterations", "Iterations used per task")]
    lines += [*figure("rollouts", "Rollouts spent per task")]
    return "\n".join(lines).rstrip() + "\n"


# -- rendering: plots -------------------------------------------------------------------------

_STATUS_COLORS = {
    "accepted": "#2e7d32",
    "rejected": "#ef6c00",
    "awaiting_approval": "#6a1b9a",
    "unfinished": "#757575",
}
_BASELINE_COLOR = "#b0bec5"
_VALIDATION_COLOR = "#1565c0"
_BAND_COLOR = "#66bb6a"


def _matplotlib() -> tuple[Any, Any]:
    """``(Figure, FigureCanvasAgg)``, imported on first use (the ``report`` extra)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:
        raise DependencyNotInstalled("matplotlib", "report", purpose="the report's plots") from e
    return Figure, FigureCanvasAgg


def _task_axis(ax: Any, summary: RunSummary) -> list[int]:
    x = list(range(len(summary.tasks)))
    labels = [t.task_id for t in summary.tasks]
    crowded = len(x) > 8 or max(len(label) for label in labels) > 12
    if crowded:
        ax.set_xticks(x, labels, rotation=45, ha="right", rotation_mode="anchor")
    else:
        ax.set_xticks(x, labels)
    ax.set_xlabel("task")
    ax.set_xlim(-0.6, len(x) - 0.4)
    return x


def _plot_success(fig: Any, summary: RunSummary) -> None:
    from matplotlib.patches import Patch
    from matplotlib.ticker import PercentFormatter

    ax = fig.add_subplot()
    x = _task_axis(ax, summary)
    width = 0.38
    if summary.objective.kind == "success_band":
        ax.axhspan(summary.objective.low, summary.objective.high, color=_BAND_COLOR, alpha=0.15)
    for i, task in zip(x, summary.tasks, strict=True):
        for offset, stats, color in (
            (-width / 2, task.baseline, _BASELINE_COLOR),
            (width / 2, task.final, _STATUS_COLORS.get(task.status, "#757575")),
        ):
            rate = stats.get("success_rate")
            if rate is None:
                ax.text(i + offset, 0.02, "n/a", ha="center", fontsize=8, color="#616161")
                continue
            ax.bar(i + offset, rate, width, color=color, edgecolor="white")
            label = f"{stats.get('successes', '?')}/{stats.get('n', '?')}"
            ax.text(i + offset, rate + 0.02, label, ha="center", va="bottom", fontsize=8)
    handles = [Patch(color=_BASELINE_COLOR, label="baseline")]
    handles += [
        Patch(color=_STATUS_COLORS[s], label=f"harnessed ({s.replace('_', ' ')})")
        for s in _STATUS_COLORS
        if summary.count(s)
    ]
    if summary.objective.kind == "success_band":
        handles.append(Patch(color=_BAND_COLOR, alpha=0.3, label=f"band {summary.objective}"))
    ax.set_ylim(0, 1.15)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylabel("success rate")
    ax.set_title("Baseline vs harnessed success per task")
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)


def _plot_coverage(fig: Any, summary: RunSummary) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator, PercentFormatter

    counts_ax, values_ax = fig.subplots(1, 2, width_ratios=[1, 2.6])
    statuses = [s for s in _STATUS_COLORS if summary.count(s) or s in ("accepted", "rejected")]
    counts = [summary.count(s) for s in statuses]
    bars = counts_ax.bar(
        [s.replace("_", "\n") for s in statuses],
        counts,
        color=[_STATUS_COLORS[s] for s in statuses],
    )
    counts_ax.bar_label(bars, fontsize=9)
    counts_ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    counts_ax.set_ylim(0, max(counts) * 1.2 + 0.5)
    counts_ax.set_ylabel("tasks")
    counts_ax.set_title(f"accepted {summary.accepted}/{len(summary.tasks)}")

    steps = summary.objective.kind == "steps_band"
    x = _task_axis(values_ax, summary)
    for i, task in zip(x, summary.tasks, strict=True):
        before, after = summary.band_value(task.baseline), summary.band_value(task.final)
        if before is not None:
            values_ax.plot(i, before, "o", mfc="none", mec="#616161", ms=7, zorder=3)
        if after is not None:
            marker = "o" if task.status == "accepted" else "X"
            values_ax.plot(i, after, marker, color=_STATUS_COLORS.get(task.status), ms=9)
            if before is not None:
                values_ax.plot([i, i], [before, after], color="#9e9e9e", lw=1, zorder=0)
    title = "final mean steps (successes)" if steps else "final success rate"
    hits = summary.band_hits()
    if hits is not None:
        low, high = summary.objective.low, summary.objective.high
        values_ax.axhspan(low, high, color=_BAND_COLOR, alpha=0.15)
        title += f" · {hits[0]}/{hits[1]} inside band {summary.objective}"
    if steps and hits is not None:
        shown = [
            v
            for t in summary.tasks
            for v in (summary.band_value(t.baseline), summary.band_value(t.final))
            if v is not None
        ] + [low, high]
        pad = 0.15 * (max(shown) - min(shown) or 1.0)
        values_ax.set_ylim(max(0.0, min(shown) - pad), max(shown) + pad)
    if not steps:
        values_ax.set_ylim(-0.05, 1.05)
        values_ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    values_ax.set_ylabel("mean steps" if steps else "success rate")
    values_ax.set_title(title, fontsize=10)
    handles = [Line2D([], [], ls="", marker="o", mfc="none", mec="#616161", label="baseline")]
    for status in (s for s in _STATUSES if summary.count(s)):
        marker, label = "o" if status == "accepted" else "X", status.replace("_", " ")
        handles.append(Line2D([], [], ls="", marker=marker, color=_STATUS_COLORS[status]))
        handles[-1].set_label(label)
    values_ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    fig.suptitle(f"Objective coverage · {summary.objective}")


def _plot_iterations(fig: Any, summary: RunSummary) -> None:
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    ax = fig.add_subplot()
    x = _task_axis(ax, summary)
    colors = [_STATUS_COLORS.get(t.status, "#757575") for t in summary.tasks]
    bars = ax.bar(x, [t.iterations for t in summary.tasks], 0.6, color=colors)
    ax.bar_label(bars, fontsize=8)
    handles = [
        Patch(color=_STATUS_COLORS[s], label=s.replace("_", " "))
        for s in _STATUS_COLORS
        if summary.count(s)
    ]
    limit = summary.settings.get("max_iterations")
    if isinstance(limit, int):
        handles.append(ax.axhline(limit, color="#c62828", ls="--", lw=1))
        handles[-1].set_label(f"max iterations ({limit})")
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    top = max([t.iterations for t in summary.tasks] + [limit if isinstance(limit, int) else 1])
    ax.set_ylim(0, top * 1.15 + 0.2)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("write→validate iterations")
    ax.set_title("Iterations used per task")


def _plot_rollouts(fig: Any, summary: RunSummary) -> None:
    from matplotlib.ticker import MaxNLocator

    ax = fig.add_subplot()
    x = _task_axis(ax, summary)
    baseline = [min(t.baseline.get("n", 0), t.rollouts) for t in summary.tasks]
    rest = [t.rollouts - b for t, b in zip(summary.tasks, baseline, strict=True)]
    ax.bar(x, baseline, 0.6, color=_BASELINE_COLOR, label="baseline")
    bars = ax.bar(x, rest, 0.6, bottom=baseline, color=_VALIDATION_COLOR, label="validation")
    ax.bar_label(bars, labels=[str(t.rollouts) for t in summary.tasks], fontsize=8)
    ax.set_ylim(0, max([t.rollouts for t in summary.tasks] + [1]) * 1.15)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("rollouts")
    per = summary.rollouts_per_accepted
    per_text = f"{per:.1f} per accepted harness" if per is not None else "none accepted"
    ax.set_title(f"Rollouts spent per task · {summary.total_rollouts} in all · {per_text}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)


_DRAW = {
    "success": _plot_success,
    "coverage": _plot_coverage,
    "iterations": _plot_iterations,
    "rollouts": _plot_rollouts,
}


def render_plots(
    summary: RunSummary, directory: str | Path, stem: str = "report"
) -> dict[str, Path]:
    """Draws the :data:`PLOTS` as PNG files ``<directory>/<stem>-<name>.png``.

    Args:
        summary: What :func:`collect_run` read.
        directory: Where the PNGs go (created if missing).
        stem: The file-name prefix (the Markdown file's stem).

    Returns:
        The written PNGs by plot name.

    Raises:
        DependencyNotInstalled: If matplotlib (the ``report`` extra) is missing.
    """
    figure_class, canvas_class = _matplotlib()
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    width = min(max(7.0, 2.5 + 0.7 * len(summary.tasks)), 28.0)
    written: dict[str, Path] = {}
    for name in PLOTS:
        extra = 3.0 if name == "coverage" else 0.0
        fig = figure_class(figsize=(width + extra, 4.2), dpi=110, layout="constrained")
        canvas_class(fig)
        _DRAW[name](fig, summary)
        path = directory / f"{stem}-{name}.png"
        fig.savefig(path, format="png")
        written[name] = path
    return written


# -- writing ----------------------------------------------------------------------------------


def write_report(summary: RunSummary, out: str | Path | None = None) -> ReportFiles:
    """Writes the Markdown report and, when matplotlib is installed, its plots beside it.

    Args:
        summary: What :func:`collect_run` read.
        out: The Markdown file (a path ending in ``.md``) or a directory for ``report.md``;
            default ``RUN/report/report.md``.

    Returns:
        The files written; ``plots_skipped`` says why there are no plots.
    """
    markdown = report_path(summary.run_dir, out)
    markdown.parent.mkdir(parents=True, exist_ok=True)
    skipped: str | None = None
    try:
        plots = render_plots(summary, markdown.parent, markdown.stem)
    except DependencyNotInstalled as e:
        plots, skipped = {}, str(e)
    links = {name: path.name for name, path in plots.items()}
    markdown.write_text(render_markdown(summary, links, skipped))
    return ReportFiles(markdown, plots, skipped)


def build_report(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Reads a rig's run directory and writes its report; returns the Markdown's path.

    Without matplotlib the Markdown is written without plots, it says so, and a
    :class:`UserWarning` names the extra to install.

    Args:
        run_dir: The directory ``envharness rig --out`` wrote.
        out: The Markdown file (ending in ``.md``) or a directory; default
            ``RUN/report/report.md``. The PNG plots are saved beside it.

    Returns:
        The Markdown report's path.

    Raises:
        RiggerError: If ``run_dir`` is not a rig's run directory.

    Example:
        >>> build_report("runs/rig-toy24")  # doctest: +SKIP
        PosixPath('runs/rig-toy24/report/report.md')
    """
    files = write_report(collect_run(run_dir), out)
    if files.plots_skipped:
        warnings.warn(f"report written without plots: {files.plots_skipped}", stacklevel=2)
    return files.markdown
