"""``envharness report``: a Markdown report with PNG plots of a rig's run directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from envharness.cli._app import _clean_errors, _stderr, _stdout, app


@app.command()
@_clean_errors
def report(
    run: Annotated[
        Path, typer.Argument(metavar="RUN", help="A rig's run directory, e.g. runs/NAME.")
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="The Markdown file (*.md) or a directory for report.md "
            "(default: RUN/report/report.md).",
        ),
    ] = None,
) -> None:
    """Write a Markdown report of a rig, with PNG plots beside it.

    The report holds the run settings, a table per task (status, baseline and harnessed
    success, iterations, rollouts, designer and template, reason), the objective coverage and
    the totals; the plots show baseline vs harnessed success, coverage, iterations and rollouts
    per task. The plots need the 'report' extra (matplotlib): without it the Markdown is
    written alone. Prints the Markdown's path on stdout.
    """
    from envharness.graph.report import collect_run, write_report

    summary = collect_run(run)
    files = write_report(summary, out)
    err = _stderr()
    if files.plots_skipped:
        err.print(Text(f"warning: plots skipped: {files.plots_skipped}", style="yellow"))
    err.print(
        Text(
            f"{summary.accepted}/{len(summary.tasks)} accepted · {summary.total_rollouts} "
            f"rollouts · {len(files.plots)} plot(s) beside the report",
            style="dim",
        )
    )
    _stdout().print(Text(str(files.markdown)))
