"""``envharness audit``: re-measure a rig's accepted harnesses on fresh seeds."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from envharness.cli._app import _clean_errors, _stderr, _stdout, app
from envharness.cli.rollout import ExecutorOption, WorkersOption, _ExecutorChoice, _make_executor

if TYPE_CHECKING:
    from envharness.graph.judge.audit import AuditResult, AuditRow


def _interval(interval: Any) -> str:
    if not (isinstance(interval, list | tuple) and len(interval) == 2):
        return ""
    return f" [{interval[0] * 100:.0f}-{interval[1] * 100:.0f}%]"


def _rate(stats: dict[str, Any] | None) -> str:
    """``"55% [34-74%] 11/20"``: a rate, its interval and the counts behind it."""
    if not stats or stats.get("rate") is None:
        return "-"
    counts = f" {stats.get('successes', '?')}/{stats.get('n', '?')}"
    return f"{stats['rate']:.0%}{_interval(stats.get('interval'))}{counts}"


def _yes_no(value: bool | None) -> str:
    return "-" if value is None else ("[green]yes[/]" if value else "[red]no[/]")


def _table(result: AuditResult) -> Table:
    """Task, claimed and audited success, and the band and direction checks that apply."""
    from rich import box

    rows: tuple[AuditRow, ...] = result.rows
    steps = any(row.objective.startswith("steps:") for row in rows)
    banded = any(row.in_band is not None for row in rows) or any(
        row.objective.startswith(("sr:", "steps:")) for row in rows
    )
    tested = any(row.confirmed is not None for row in rows)
    baselines = any(row.baseline_audited is not None for row in rows)
    settings = result.settings
    title = (
        f"audit · {settings.get('bridge')} · {settings.get('policy')} · "
        f"{settings.get('objective')} · {settings.get('rollouts')} fresh rollout(s) per spec"
    )
    table = Table(title=escape(title), box=box.SIMPLE_HEAD)
    table.add_column("Task", overflow="fold", min_width=8)
    table.add_column("Claimed", justify="right", no_wrap=True)
    table.add_column("Audited (95% CI)", justify="right", no_wrap=True)
    if steps:
        table.add_column("Steps (claimed → audited)", justify="right", no_wrap=True)
    if banded:
        table.add_column("In band", justify="center", no_wrap=True)
    if baselines:
        table.add_column("Baseline audited", justify="right", no_wrap=True)
    if tested:
        table.add_column("Direction", no_wrap=True)
        table.add_column("Confirmed (p)", justify="right", no_wrap=True)
    for row in rows:
        cells = [escape(row.task_id), escape(_rate(row.claimed)), escape(_rate(row.audited))]
        if steps:
            claimed, audited = row.claimed.get("steps_mean"), row.audited.get("steps_mean")
            cells.append(
                f"{'-' if claimed is None else f'{claimed:.1f}'} → "
                f"{'-' if audited is None else f'{audited:.1f}'}"
            )
        if banded:
            cells.append(_yes_no(row.in_band))
        if baselines:
            cells.append(escape(_rate(row.baseline_audited)))
        if tested:
            cells.append(escape(row.direction or "-"))
            p = "" if row.p_value is None else f" (p={row.p_value:.3g})"
            cells.append(_yes_no(row.confirmed) + p)
        table.add_row(*cells)
    counts = result.summary()
    caption = []
    if counts["band_measured"] or banded:
        caption.append(f"in band {counts['in_band']}/{counts['audited']} audited")
    if counts["tested"]:
        caption.append(
            f"direction confirmed {counts['confirmed']}/{counts['tested']} "
            f"(one-sided Fisher, alpha {settings.get('alpha', 0.05):g})"
        )
    caption.append("claimed: the rig's own judgement; audited: fresh seeds, Wilson 95% CI")
    table.caption = " · ".join(caption)
    return table


@app.command()
@_clean_errors
def audit(
    run: Annotated[
        Path, typer.Argument(metavar="RUN", help="A rig's run directory, e.g. runs/NAME.")
    ],
    rollouts: Annotated[
        int,
        typer.Option("--rollouts", "-n", help="Fresh episodes per accepted spec (and base spec)."),
    ] = 100,
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed",
            help="Where the search for fresh seeds starts (default: 1000000000 + the rig's seed).",
        ),
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option(
            "--policy",
            "-p",
            help="The policy string to audit with (default: the one rig.json records).",
        ),
    ] = None,
    workers: WorkersOption = None,
    executor: ExecutorOption = _ExecutorChoice.local,
) -> None:
    """Re-measure every accepted harness of a rig on fresh seeds and check its claim.

    Each accepted spec is played --rollouts times with the rig's policy on seeds none of the
    task's rig rollouts used (audit rollouts are not added to the run's trajectories). For a
    band objective the audit says whether the audited value lies in the band; for 'auto' (and
    harden/scaffold tasks whose lineage holds the base spec) the base spec is audited too and a
    one-sided Fisher exact test checks the direction. Writes RUN/audit.json, which `envharness
    report RUN` then shows.
    """
    from envharness.graph.judge.audit import audit_run

    err = _stderr()
    if err.is_terminal:  # a progress note for people; pipes and logs get the result only
        err.print(Text(f"auditing {run}: {rollouts} fresh rollout(s) per spec ...", style="dim"))
    with _make_executor(executor, workers) as runner:
        result = audit_run(run, rollouts=rollouts, seed=seed, policy=policy, executor=runner)
    _stdout().print(_table(result))
    errors = sum(row.audited.get("errors", 0) for row in result.rows)
    if errors:
        err.print(
            Text(
                f"warning: {errors} audit episode(s) ended in a policy or env error "
                "(counted as failures)",
                style="yellow",
            )
        )
    err.print(Text(f"audit: {result.path}", style="dim"))
