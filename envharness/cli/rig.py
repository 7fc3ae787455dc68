"""``envharness rig`` (EnvRigger over N tasks) and ``envharness show`` (an accepted spec)."""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.table import Table
from rich.text import Text

from envharness.bridges.registry import list_tasks
from envharness.cli._app import BridgeOptions, _clean_errors, _stderr, _stdout, app, parse_options
from envharness.cli.rollout import _ExecutorChoice, _make_executor

_SIBLINGS = 8
_TRACING_VARIABLES = ("TRACING", "TRACING_V2")


def _langsmith_exits_promptly() -> None:
    """With LangSmith tracing on, lets the process exit without waiting for unsent runs.

    LangSmith's sender is a thread Python waits for at exit, retrying for seconds per batch
    when its endpoint is unreachable; ``rig()`` waits a bounded time for it instead
    (:func:`~envharness.graph.tracing.flush_traces`). An explicit ``LANGSMITH_USE_DAEMON`` wins.
    """
    names = [f"{p}_{v}" for p in ("LANGSMITH", "LANGCHAIN") for v in _TRACING_VARIABLES]
    if any(os.environ.get(name, "").strip().lower() == "true" for name in names):
        os.environ.setdefault("LANGSMITH_USE_DAEMON", "true")


class _RigProgress:
    """One progress bar per task, drawn from the rigger's stream events.

    A bar shows the current batch of rollouts (``observe`` or ``validate``, ``i/n``) and the
    task's rollouts so far; designer turns and verdicts replace its note. Events come from the
    rig's worker threads.
    """

    def __init__(self, console: Console) -> None:
        self.bars = Progress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=16),
            MofNCompleteColumn(),
            TextColumn("{task.fields[note]}"),
            console=console,
        )
        self.rollouts: Counter[str] = Counter()
        self._rows: dict[str, TaskID] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> _RigProgress:
        self.bars.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.bars.stop()

    def _row(self, task_id: str) -> TaskID:
        with self._lock:
            if task_id not in self._rows:
                self._rows[task_id] = self.bars.add_task(f"  {task_id}", total=None, note="")
            return self._rows[task_id]

    def on_event(self, event: Mapping[str, Any]) -> None:
        """Updates the event's task bar."""
        task_id = str(event.get("task_id"))
        row = self._row(task_id)
        kind = event.get("event")
        if kind == "rollout_finished":
            with self._lock:
                self.rollouts[task_id] += 1
            note = f"{event['phase']} · iteration {event['iteration']}"
            self.bars.update(
                row, completed=event["i"], total=event["n"], note=self._note(task_id, note)
            )
        elif kind == "rollout_started" and event["i"] == 1:  # a new batch
            self.bars.update(row, completed=0, total=event["n"])
        elif kind == "designer_turn":
            turn = f"{event['turn']}/{event['max_turns']}"
            note = f"designing iteration {event['iteration']}: turn {turn}"
            self.bars.update(row, note=self._note(task_id, note))
        elif kind == "verdict":
            rate = event.get("success_rate")
            shown = "" if rate is None else f" at {rate:.0%}"
            note = f"iteration {event['iteration']}: {event['decision']}{shown}"
            self.bars.update(row, note=self._note(task_id, note))

    def finished(self, task_id: str, status: str) -> None:
        """Shows how the task ended (tasks finished earlier have no bar)."""
        if task_id in self._rows:
            self.bars.update(self._rows[task_id], note=self._note(task_id, status))

    def _note(self, task_id: str, text: str) -> str:
        return f"{text} · {self.rollouts[task_id]} rollouts"


@app.command()
@_clean_errors
def rig(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The bridge's registered name.")],
    tasks: Annotated[int, typer.Option("--tasks", "-n", min=1, help="Tasks to rig.")] = 4,
    split: Annotated[str, typer.Option("--split", help="The split the tasks come from.")] = "train",
    policy: Annotated[
        str, typer.Option("--policy", "-p", help="oracle[:SKILL], random, scripted:FILE or MODEL.")
    ] = "oracle:0.5",
    objective: Annotated[
        str,
        typer.Option(
            "--objective", help="auto, sr:LOW-HIGH, steps:LOW-HIGH, or a weakness in words."
        ),
    ] = "auto",
    designer: Annotated[
        str, typer.Option("--designer", help="'heuristic' (offline) or a model string.")
    ] = "heuristic",
    diagnoser: Annotated[
        str | None, typer.Option("--diagnoser", help="A model string (default: the designer).")
    ] = None,
    k_observe: Annotated[int, typer.Option("--k-observe", min=1)] = 5,
    k_validate: Annotated[int, typer.Option("--k-validate", min=1)] = 5,
    max_iterations: Annotated[int, typer.Option("--max-iterations", min=1)] = 5,
    confidence: Annotated[
        float,
        typer.Option(
            "--confidence", help="Posterior probability a decision needs, in (0, 1) (default 0.8)."
        ),
    ] = 0.8,
    max_rollouts: Annotated[
        int,
        typer.Option(
            "--max-rollouts",
            help="Validation rollouts one candidate may spend before it is undecided.",
        ),
    ] = 200,
    min_effect: Annotated[
        float, typer.Option("--min-effect", help="Smallest success change 'auto' counts.")
    ] = 0.2,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Tasks rigged at once.")
    ] = 4,
    workers: Annotated[
        int | None, typer.Option("--workers", "-w", min=1, help="Rollout workers.")
    ] = None,
    executor: Annotated[
        _ExecutorChoice | None,
        typer.Option("--executor", help="Where rollouts run (default: inline, or local with -w)."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="The first rollout seed.")] = 0,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="The run directory (default: runs/rig-NAME).")
    ] = None,
    option: BridgeOptions = None,
) -> None:
    """Rig a harness to a black-box policy on each of N tasks (observe, diagnose, write, validate).

    Accepted specs go to OUT/accepted/TASK.json, rejected attempts to OUT/rejected/, trajectories
    to OUT/trajectories/. Checkpoints live in OUT/checkpoints.sqlite: running the same command
    again resumes an interrupted rig without redoing finished tasks. A progress bar per task
    follows its rollouts, designer turns and verdicts. With LANGSMITH_TRACING=true the rig is
    traced; runs LangSmith cannot send within half a second of the end are dropped at exit
    (LANGSMITH_USE_DAEMON=false waits for them).
    """
    _langsmith_exits_promptly()
    from envharness.graph.context import RiggerContext
    from envharness.graph.run import TaskResult, checkpoints_lost
    from envharness.graph.run import rig as run_rig

    options = parse_options(option)
    all_tasks = list_tasks(name, split=split, **options)
    chosen = all_tasks[:tasks]
    siblings = [t for t in all_tasks if t not in chosen][:_SIBLINGS]
    run_dir = out if out is not None else Path("runs") / f"rig-{name}"
    err = _stderr()
    if executor is None:
        executor = _ExecutorChoice.inline if workers is None else _ExecutorChoice.local
    with _make_executor(executor, workers) as runner:
        context = RiggerContext(
            run_dir=str(run_dir),
            policy=policy,
            designer=designer,
            diagnoser=diagnoser,
            objective=objective,
            k_observe=k_observe,
            k_validate=k_validate,
            max_iterations=max_iterations,
            confidence=confidence,
            max_rollouts=max_rollouts,
            min_effect=min_effect,
            executor=runner,
            siblings=siblings,
            seed=seed,
        )
        err.print(
            Text(
                f"rigging {len(chosen)} {name} task(s) for {context.policy_name}, objective "
                f"{context.objective}, designer {context.model_name('writer')} → {run_dir}"
            )
        )

        progress = _RigProgress(err)

        def report(result: TaskResult) -> None:
            style = {"accepted": "green", "rejected": "yellow", "undecided": "yellow"}.get(
                result.status, "red"
            )
            done = " (resumed)" if result.resumed else ""
            progress.finished(result.task_id, result.status)
            progress.bars.console.print(
                Text(f"  {result.task_id}: {result.status}{done} — {result.reason}", style=style)
            )

        try:
            with progress:
                results = run_rig(
                    name,
                    chosen,
                    context,
                    bridge_options=options,
                    max_concurrency=concurrency,
                    on_result=report,
                    on_event=progress.on_event,
                )
        except KeyboardInterrupt:
            err.print(
                Text(
                    f"interrupted: checkpoints are in {run_dir}; run the same command to resume",
                    style="yellow",
                )
            )
            raise typer.Exit(130) from None
    table = Table(title=f"EnvRigger · {name} · {context.policy_name} · {context.objective}")
    for column in ("task", "status", "baseline", "final", "iterations", "rollouts", "reason"):
        table.add_column(column)

    def rate(value: float | None) -> str:
        return "-" if value is None else f"{value:.0%}"

    for r in results:
        table.add_row(
            r.task_id,
            r.status,
            rate(r.baseline_success),
            rate(r.final_success),
            str(r.iterations),
            str(r.rollouts),
            r.reason,
        )
    accepted = sum(r.status == "accepted" for r in results)
    undecided = sum(r.status == "undecided" for r in results)
    table.caption = (
        f"{accepted}/{len(results)} accepted · {undecided} undecided · "
        f"{sum(r.rollouts for r in results)} rollouts"
    )
    _stdout().print(table)
    err.print(Text(f"accepted specs: {run_dir / 'accepted'}", style="dim"))
    if checkpoints_lost(run_dir):
        err.print(
            Text(
                f"warning: {run_dir / 'checkpoints.sqlite'} was deleted during the run; its "
                "checkpoints are lost, so this rig cannot be resumed",
                style="yellow",
            )
        )


@app.command()
@_clean_errors
def show(
    path: Annotated[Path, typer.Argument(help="An accepted spec, e.g. runs/NAME/accepted/T.json")],
) -> None:
    """Show an accepted harness spec: its components, lineage and validation statistics."""
    from envharness.cli.envs import read_spec_text
    from envharness.harness.spec import HarnessSpec

    spec = HarnessSpec.from_json(read_spec_text(path))
    out = _stdout()
    out.print(Text(f"{spec.bridge.name} task {spec.bridge.task_id} · spec {spec.spec_id}", "bold"))
    for i, component in enumerate(spec.components, start=1):
        config = dict(component.config)
        out.print(Text(f"{i}. {component.type}", style="cyan"))
        if component.type == "rules":
            out.print(config.pop("rules_code"), markup=False, highlight=False)
            config.pop("sha256", None)
        if config:
            out.print(json.dumps(config, indent=2), markup=False, highlight=False)
    if spec.lineage is not None:
        lineage = spec.lineage
        out.print(Text(f"policy: {lineage.policy}  parent: {lineage.parent}", style="dim"))
        if lineage.notes:
            out.print(Text(f"rationale: {lineage.notes}"))
        validation = lineage.validation
        for label in ("baseline", "candidate"):
            stats = validation.get(label) or {}
            if stats:
                out.print(
                    f"{label}: success {stats.get('successes')}/{stats.get('n')} "
                    f"(steps {stats.get('steps_mean', 0):.1f})"
                )
        judgement = validation.get("judgement") or {}
        if judgement:
            lo, hi = judgement.get("interval") or (0.0, 1.0)
            line = (
                f"judged: {judgement.get('successes')}/{judgement.get('n')} successes on fresh "
                f"seeds, 95% interval {lo:.0%}-{hi:.0%}"
            )
            if judgement.get("probability") is not None:
                line += f", P(claim) = {judgement['probability']:.2f}"
                if judgement.get("pooled_n"):
                    line += f" under the knob model pooled over {judgement['pooled_n']} rollouts"
            if judgement.get("p_value") is not None:
                line += f", Fisher p = {judgement['p_value']:.3g}"
            out.print(f"{line} (needed {judgement.get('confidence')})")
        if validation.get("knobs"):
            out.print(f"knobs: {json.dumps(validation['knobs'])}")
        seeds = validation.get("seeds") or []
        if seeds:
            out.print(f"seeds used by the rig: {len(seeds)} ({seeds[0]}..{seeds[-1]})")
        if validation.get("verdict"):
            out.print(Text(f"verdict: {validation['verdict']}", style="green"))
