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

import warnings
from pathlib import Path

from envharness.errors import DependencyNotInstalled
from envharness.graph.report.collect import collect_run
from envharness.graph.report.markdown import render_markdown, report_path
from envharness.graph.report.plots import render_plots
from envharness.graph.report.records import PLOTS, ReportFiles, RunSummary, TaskSummary

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
