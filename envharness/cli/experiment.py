"""``envharness experiment sl BRIDGE``: the skill-learning experiment (arms, rounds, report)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from envharness.bridges.registry import list_tasks
from envharness.cli._app import BridgeOptions, _clean_errors, _stderr, _stdout, app, parse_options
from envharness.cli.rollout import _ExecutorChoice, _make_executor
from envharness.errors import ExperimentError

experiment_app = typer.Typer(
    name="experiment",
    help="Experiments that turn rigged environments into better agents.",
    no_args_is_help=True,
)
app.add_typer(experiment_app, name="experiment")


def _pick(
    bridge: str, split: str, count: int, explicit: list[str] | None, options: dict
) -> list[str]:
    if explicit:
        return list(explicit)
    tasks = list_tasks(bridge, split=split, **options)
    if len(tasks) < count:
        raise ExperimentError(
            f"the {split!r} split of {bridge} has {len(tasks)} task(s), {count} asked for"
        )
    return tasks[:count]


@experiment_app.command("sl")
@_clean_errors
def skill_learning(
    name: Annotated[str, typer.Argument(metavar="BRIDGE", help="The bridge's registered name.")],
    policy: Annotated[
        str, typer.Option("--policy", "-p", help="oracle[:SKILL], random, scripted:FILE or MODEL.")
    ] = "oracle:0.5",
    designer: Annotated[
        str, typer.Option("--designer", help="EnvRigger's designer: 'heuristic' or a model.")
    ] = "heuristic",
    extractor: Annotated[
        str, typer.Option("--extractor", help="'offline' or a chat model string.")
    ] = "offline",
    train_tasks: Annotated[
        int, typer.Option("--train-tasks", help="Train tasks (from --train-split).")
    ] = 4,
    test_tasks: Annotated[
        int, typer.Option("--test-tasks", help="Test tasks (from --test-split).")
    ] = 8,
    train_split: Annotated[str, typer.Option("--train-split")] = "train",
    test_split: Annotated[str, typer.Option("--test-split")] = "test",
    train_task: Annotated[
        list[str] | None, typer.Option("--train-task", help="A train task id (repeatable).")
    ] = None,
    test_task: Annotated[
        list[str] | None, typer.Option("--test-task", help="A test task id (repeatable).")
    ] = None,
    arms: Annotated[
        str, typer.Option("--arms", help="Comma-separated: none, original, harness, chain.")
    ] = "none,original,harness",
    runs: Annotated[int, typer.Option("--runs", help="Evaluation runs (seeds) per arm.")] = 3,
    rounds: Annotated[
        int, typer.Option("--rounds", help="Rounds of rig → roll out → extract.")
    ] = 1,
    envs_per_round: Annotated[
        int | None,
        typer.Option("--envs-per-round", help="Environments per round (default: tasks // rounds)."),
    ] = None,
    rollouts_per_env: Annotated[
        int, typer.Option("--rollouts-per-env", help="Rollouts per environment for extraction.")
    ] = 3,
    top_k: Annotated[int, typer.Option("--top-k", help="Skills shown per episode.")] = 3,
    objective: Annotated[
        str, typer.Option("--objective", help="EnvRigger's objective for the harness arm.")
    ] = "sr:0.4-0.6",
    k_observe: Annotated[int, typer.Option("--k-observe")] = 5,
    k_validate: Annotated[int, typer.Option("--k-validate")] = 5,
    max_iterations: Annotated[int, typer.Option("--max-iterations")] = 5,
    max_steps: Annotated[
        int | None, typer.Option("--max-steps", help="Agent budget per episode.")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="The first seed.")] = 0,
    workers: Annotated[
        int | None, typer.Option("--workers", "-w", min=1, help="Rollout workers.")
    ] = None,
    executor: Annotated[
        _ExecutorChoice | None,
        typer.Option("--executor", help="Where rollouts run (default: inline, or local with -w)."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Run directory (default: runs/sl-BRIDGE).")
    ] = None,
    option: BridgeOptions = None,
) -> None:
    """Skill learning: skills from original vs rigged train envs, evaluated on original test tasks.

    Every skill arm gets the same train tasks, environments, rollouts, extractor and policy; all
    arms are evaluated on the same held-out test tasks and seeds. Everything is kept in OUT:
    running the same command again resumes without redoing finished rollouts, rigs or
    extractions. OUT/report.md holds the tables, plots and learned skills.
    """
    from envharness.experiments import SkillLearningSettings, run_skill_learning

    options = parse_options(option)
    train = _pick(name, train_split, train_tasks, train_task, options)
    test = _pick(name, test_split, test_tasks, test_task, options)
    settings = SkillLearningSettings(
        bridge=name,
        policy=policy,
        train_tasks=train,
        test_tasks=test,
        out=out if out is not None else Path("runs") / f"sl-{name}",
        arms=arms,
        runs=runs,
        rounds=rounds,
        envs_per_round=envs_per_round,
        rollouts_per_env=rollouts_per_env,
        top_k=top_k,
        designer=designer,
        extractor=extractor,
        objective=objective,
        k_observe=k_observe,
        k_validate=k_validate,
        max_iterations=max_iterations,
        seed=seed,
        bridge_options=options,
        max_steps=max_steps,
    )
    err = _stderr()
    err.print(
        Text(
            f"skill learning on {name}: arms {', '.join(settings.arms)}, {len(train)} train / "
            f"{len(test)} test tasks, {runs} run(s), {rounds} round(s) → {settings.out}"
        )
    )
    if executor is None:
        executor = _ExecutorChoice.inline if workers is None else _ExecutorChoice.local
    bars = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    )
    stages: dict[str, int] = {}

    def progress(stage: str, done: int, total: int) -> None:
        if stage not in stages:
            stages[stage] = bars.add_task(stage, total=total)
        bars.update(stages[stage], completed=done, total=total)

    try:
        with _make_executor(executor, workers) as runner, bars:
            result = run_skill_learning(
                settings, executor=runner, progress=progress, log=bars.console.print
            )
    except KeyboardInterrupt:
        err.print(
            Text(
                f"interrupted: finished work is kept in {settings.out}; run the same command to "
                "resume",
                style="yellow",
            )
        )
        raise typer.Exit(130) from None
    table = Table(title=f"skill learning · {name} · {settings.policy_name}")
    for column in ("arm", "rounds", "envs", "skills", "success", "± std", "steps", "tokens/ep"):
        table.add_column(column)
    for s in result.scores:
        table.add_row(
            s.arm,
            str(s.round),
            str(s.envs),
            str(s.skills),
            f"{s.success_mean:.1%}",
            f"{s.success_std:.1%}",
            f"{s.steps_mean:.1f}",
            "-" if s.tokens_per_episode is None else f"{s.tokens_per_episode:.0f}",
        )
    table.caption = f"{result.seconds:.1f} s" + (" (resumed)" if result.resumed else "")
    _stdout().print(table)
    for p in result.paired:
        _stdout().print(
            f"{p.arm} − {p.baseline} (round {p.round}): {p.mean * 100:+.1f} pts, 95% CI "
            f"[{p.low * 100:+.1f}, {p.high * 100:+.1f}] over {p.tasks} tasks"
        )
    if not result.skills_use:
        from envharness.experiments.report import OFFLINE_NOTE

        err.print(Text(f"note: {OFFLINE_NOTE}", style="yellow"))
    err.print(Text(f"report: {result.report}", style="dim"))
