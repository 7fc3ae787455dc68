"""Rendering a :class:`RunSummary` as Markdown."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from envharness.graph.report.records import STATUSES, RunSummary
from envharness.graph.run import CHECKPOINTS_FILE

__all__ = ["render_markdown", "report_path"]


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
    others = [f"{summary.count(s)} {s}" for s in STATUSES[1:]]
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
    split = [c for status in STATUSES if (c := _band_counts(summary, status))]
    unmeasured = f"; {total - measured} task(s) have no final value" if measured < total else ""
    lines.append(
        f"- Band `{summary.objective}`: **{inside}/{measured}** final {what} fall inside the band "
        f"({', '.join(split) or 'none measured'}){unmeasured}."
    )
    return lines


def _interval_rate(stats: Mapping[str, Any] | None) -> str:
    """``"55% [34-74%]"``: an audit row's rate and its interval (``-`` without a rate)."""
    if not stats or stats.get("rate") is None:
        return "-"
    interval = stats.get("interval")
    if isinstance(interval, list | tuple) and len(interval) == 2:
        return f"{stats['rate']:.0%} [{interval[0]:.0%}-{interval[1]:.0%}]"
    return f"{stats['rate']:.0%}"


def _yes_no(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _steps(value: Any) -> str:
    return "-" if value is None else f"{value:.1f}"


def _audit_lines(summary: RunSummary, figure: list[str]) -> list[str]:
    """The ``## Audit`` section: claimed vs audited success per accepted harness."""
    audit = summary.audit
    if audit is None:
        return []
    settings = audit.settings
    lines = [
        "## Audit",
        "",
        f"`envharness audit` re-measured {len(audit.rows)} accepted harness(es) on "
        f"{settings.get('rollouts', '?')} fresh rollouts each with {settings.get('policy', '?')}, "
        f"on seeds none of the task's rig rollouts used (from {settings.get('seed', '?')}; "
        "`audit.json`).",
        "",
    ]
    if not audit.rows:
        return [*lines, "The audit holds no task.", ""]
    steps = any(row.objective.startswith("steps:") for row in audit.rows)
    baselines = any(row.baseline_audited is not None for row in audit.rows)
    header: tuple[str, ...] = ("task", "claimed success", "n", "audited success (95% CI)", "n")
    if steps:
        header += ("claimed steps", "audited steps")
    header += ("in band",)
    if baselines:
        header += ("audited baseline", "direction", "confirmed (p)")
    rows = []
    for row in audit.rows:
        cells: tuple[Any, ...] = (
            f"`{row.task_id}`",
            _interval_rate(row.claimed),
            row.claimed.get("n"),
            _interval_rate(row.audited),
            row.audited.get("n"),
        )
        if steps:
            cells += (_steps(row.claimed.get("steps_mean")), _steps(row.audited.get("steps_mean")))
        cells += (_yes_no(row.in_band),)
        if baselines:
            p = "" if row.p_value is None else f" (p={row.p_value:.3g})"
            cells += (_interval_rate(row.baseline_audited), row.direction)
            cells += (_yes_no(row.confirmed) + p if row.confirmed is not None else "-",)
        rows.append(cells)
    counts = audit.summary()
    lines += [*_table(header, rows), ""]
    lines.append(
        "*Claimed* is the rig's own judgement at acceptance (its interval as the rig stated it); "
        "*audited* intervals are Wilson 95%."
    )
    lines.append("")
    if counts["band_measured"]:
        lines.append(
            f"- In band: **{counts['in_band']}/{counts['audited']}** audited harnesses "
            f"({counts['band_measured']} with a measured value)."
        )
    if counts["tested"]:
        lines.append(
            f"- Direction confirmed: **{counts['confirmed']}/{counts['tested']}** (one-sided "
            f"Fisher exact test vs the audited base spec, alpha {settings.get('alpha', 0.05):g})."
        )
    return [*lines, "", *figure]


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
        "that was rejected, the last one measured; for an undecided task, whose budget ran out "
        "before the rig could decide, its best candidate); *stopped early* means validation "
        f"stopped before K={k_validate} because the decision could no longer change. "
        "*Rollouts* count baseline and validation rollouts.",
        "",
        *figure("success", "Baseline vs harnessed success per task"),
        "## Objective coverage",
        "",
        *_coverage_lines(summary),
        "",
        *figure("coverage", "Objective coverage"),
        *_audit_lines(summary, figure("audit", "Claimed vs audited success per accepted harness")),
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
