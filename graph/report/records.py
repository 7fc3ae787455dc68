"""The data a report is made of: per-task and per-run summaries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envharness.graph.judge.audit import AuditResult
from envharness.graph.objective import Objective

PLOTS = ("success", "coverage", "iterations", "rollouts", "audit")
"""The plots a report can draw, in order; each is saved as ``<stem>-<name>.png``.

``audit`` (claimed vs audited success) is drawn only for a run with ``RUN/audit.json``
(``envharness audit RUN``); :attr:`RunSummary.plots` lists the ones a summary gets.
"""

STATUSES = ("accepted", "rejected", "undecided", "awaiting_approval", "unfinished")
UNFINISHED = "not finished (interrupted or failed): run the same rig command to resume"

__all__ = ["PLOTS", "STATUSES", "UNFINISHED", "ReportFiles", "RunSummary", "TaskSummary"]


@dataclass(frozen=True)
class TaskSummary:
    """One task's outcome, as the report shows it.

    Attributes:
        task_id: The task.
        status: ``accepted``, ``rejected``, ``undecided`` (the rig ran out of rollouts or
            iterations before its tests could decide), ``awaiting_approval`` or ``unfinished``.
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
        audit: ``RUN/audit.json`` (:func:`~envharness.graph.judge.audit.audit_run`), if any.

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
    audit: AuditResult | None = None

    @property
    def plots(self) -> tuple[str, ...]:
        """The :data:`PLOTS` this summary gets (``audit`` only with audit data)."""
        audited = self.audit is not None and bool(self.audit.rows)
        return tuple(name for name in PLOTS if name != "audit" or audited)

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
