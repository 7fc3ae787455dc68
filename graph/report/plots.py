"""Rendering a :class:`RunSummary` as PNG plots (matplotlib, optional)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envharness.errors import DependencyNotInstalled
from envharness.graph.report.records import STATUSES, RunSummary
from envharness.rollout.stats import wilson_interval

_STATUS_COLORS = {
    "accepted": "#2e7d32",
    "rejected": "#ef6c00",
    "undecided": "#f9a825",
    "awaiting_approval": "#6a1b9a",
    "unfinished": "#757575",
}
_BASELINE_COLOR = "#b0bec5"
_VALIDATION_COLOR = "#1565c0"
_BAND_COLOR = "#66bb6a"
_ERROR_COLOR = "#424242"

__all__ = ["render_plots"]


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


def _wilson(stats: dict[str, Any]) -> tuple[float, float] | None:
    """The Wilson 95% interval of a stats dict's success rate (``None`` without counts)."""
    k, n = stats.get("successes"), stats.get("n")
    if not (isinstance(k, int) and isinstance(n, int)) or not 0 <= k <= n or n == 0:
        return None
    return wilson_interval(k, n)


def _plot_success(fig: Any, summary: RunSummary) -> None:
    from matplotlib.lines import Line2D
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
            interval, top = _wilson(stats), rate
            if interval is not None:
                low, high = min(interval[0], rate), max(interval[1], rate)
                ax.errorbar(
                    i + offset,
                    rate,
                    yerr=[[rate - low], [high - rate]],
                    fmt="none",
                    ecolor=_ERROR_COLOR,
                    elinewidth=1,
                    capsize=3,
                )
                top = high
            label = f"{stats.get('successes', '?')}/{stats.get('n', '?')}"
            ax.text(i + offset, top + 0.02, label, ha="center", va="bottom", fontsize=8)
    handles = [Patch(color=_BASELINE_COLOR, label="baseline")]
    handles += [
        Patch(color=_STATUS_COLORS[s], label=f"harnessed ({s.replace('_', ' ')})")
        for s in _STATUS_COLORS
        if summary.count(s)
    ]
    if summary.objective.kind == "success_band":
        handles.append(Patch(color=_BAND_COLOR, alpha=0.3, label=f"band {summary.objective}"))
    handles.append(
        Line2D([], [], color=_ERROR_COLOR, marker="_", ms=8, lw=1, label="Wilson 95% interval")
    )
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
    for status in (s for s in STATUSES if summary.count(s)):
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


def _errors(value: float, interval: Any) -> list[list[float]]:
    """``[[below], [above]]`` error-bar lengths of ``value`` from an interval (0 without one)."""
    if not (isinstance(interval, list | tuple) and len(interval) == 2):
        return [[0.0], [0.0]]
    return [[max(0.0, value - interval[0])], [max(0.0, interval[1] - value)]]


def _plot_audit(fig: Any, summary: RunSummary) -> None:
    """Claimed vs audited success rate per accepted harness, intervals on both axes."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import PercentFormatter

    audit = summary.audit
    if audit is None:  # render_plots draws this plot only with audit data
        raise ValueError("the audit plot needs audit data (RUN/audit.json)")
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], ls="--", color="#9e9e9e", lw=1, zorder=0)
    handles: list[Any] = [Line2D([], [], ls="--", color="#9e9e9e", label="claimed = audited")]
    band = summary.objective.kind == "success_band"
    if band:
        low, high = summary.objective.low, summary.objective.high
        ax.axhspan(low, high, color=_BAND_COLOR, alpha=0.15, zorder=0)
        ax.axvspan(low, high, color=_BAND_COLOR, alpha=0.07, zorder=0)
        handles.append(Patch(color=_BAND_COLOR, alpha=0.3, label=f"band {summary.objective}"))
    colors = {True: "#2e7d32", False: "#c62828", None: _VALIDATION_COLOR}
    if band:
        labels = {True: "in band", False: "outside band", None: "audited"}
    else:  # colored by the direction test where there is one
        labels = {True: "direction confirmed", False: "not confirmed", None: "audited"}
    shown: set[bool | None] = set()
    drawn = 0
    for row in audit.rows:
        claimed, audited = row.claimed.get("rate"), row.audited.get("rate")
        if claimed is None or audited is None:
            continue
        key = row.in_band if band else row.confirmed
        ax.errorbar(
            claimed,
            audited,
            xerr=_errors(claimed, row.claimed.get("interval")),
            yerr=_errors(audited, row.audited.get("interval")),
            fmt="o",
            color=colors[key],
            ecolor=colors[key],
            elinewidth=1,
            capsize=3,
            ms=6,
            alpha=0.85,
        )
        if len(audit.rows) <= 12:
            ax.annotate(
                row.task_id,
                (claimed, audited),
                xytext=(4, 4),
                textcoords="offset points",
                fontsize=7,
                color="#424242",
            )
        shown.add(key)
        drawn += 1
    for key in (True, False, None):
        if key in shown:
            handles.append(Line2D([], [], ls="", marker="o", color=colors[key], label=labels[key]))
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    ax.set_aspect("equal")
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel("claimed success rate (the rig's interval)")
    ax.set_ylabel(f"audited success rate ({audit.settings.get('rollouts', '?')} fresh, 95% CI)")
    counts = audit.summary()
    title = f"Claimed vs audited success · {drawn} harness(es)"
    if counts["band_measured"]:
        title += f" · {counts['in_band']}/{counts['audited']} in band"
    if counts["tested"]:
        title += f" · {counts['confirmed']}/{counts['tested']} confirmed"
    ax.set_title(title, fontsize=10)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)


_DRAW = {
    "success": _plot_success,
    "coverage": _plot_coverage,
    "iterations": _plot_iterations,
    "rollouts": _plot_rollouts,
    "audit": _plot_audit,
}


def render_plots(
    summary: RunSummary, directory: str | Path, stem: str = "report"
) -> dict[str, Path]:
    """Draws the summary's plots as PNG files ``<directory>/<stem>-<name>.png``.

    Every one of :data:`PLOTS` but ``audit``, which is drawn only when the summary holds audit
    data (:attr:`RunSummary.plots`).

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
    for name in summary.plots:
        extra = 3.0 if name == "coverage" else 0.0
        size = (8.0, 5.6) if name == "audit" else (width + extra, 4.2)
        fig = figure_class(figsize=size, dpi=110, layout="constrained")
        canvas_class(fig)
        _DRAW[name](fig, summary)
        path = directory / f"{stem}-{name}.png"
        fig.savefig(path, format="png")
        written[name] = path
    return written
