"""``envharness rollout``: K episodes on each of N tasks, stored and summarized."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from envharness.bridges.registry import list_tasks
from envharness.errors import (
    BridgeError,
)

if TYPE_CHECKING:
    from envharness.harness import HarnessSpec
    from envharness.rollout.executors import Executor
    from envharness.rollout.stats import RolloutStats
    from envharness.rollout.trajectory import Trajectory

from envharness.cli._app import BridgeOptions, _clean_errors, _stderr, _stdout, app, parse_options
from envharness.cli.envs import load_harness_file

# -- rollout -------------------------------------------------------------------------------------


class _ExecutorChoice(StrEnum):
    """Where ``envharness rollout`` runs the episodes."""

    local = "local"
    thread = "thread"
    inline = "inline"
    ray = "ray"


WorkersOption = Annotated[
    int | None,
    typer.Option(
        "--workers", "-w", min=1, help="Parallel workers (default: the CPUs; 1 runs inline)."
    ),
]
"""``--workers/-w``, shared by the commands that play rollouts."""

ExecutorOption = Annotated[
    _ExecutorChoice,
    typer.Option(
        "--executor",
        help="local: processes (inline with --workers 1); thread: threads, for LLM "
        "policies; inline; ray: Ray tasks (--workers sets its CPUs).",
    ),
]
"""``--executor``, shared by the commands that play rollouts."""


def _rollout_specs(
    name: str | None, tasks: int, split: str, harness: Path | None, options: dict[str, Any]
) -> list[HarnessSpec]:
    """The specs to play: the harness file's own, or the first ``tasks`` tasks of ``split``."""
    from envharness.harness import HarnessSpec
    from envharness.harness.spec import BridgeSpec

    if harness is not None:
        if options:
            raise typer.BadParameter(
                "a harness spec holds its bridge options; edit the spec instead",
                param_hint="--option",
            )
        return [load_harness_file(harness, name)]
    if name is None:
        raise typer.BadParameter("give a bridge NAME or --harness", param_hint="NAME")
    ids = list_tasks(name, split=split, **options)[:tasks]
    if not ids:
        raise BridgeError(f"the {split!r} split has no tasks", bridge=name)
    return [HarnessSpec(BridgeSpec(name, task_id, dict(options))) for task_id in ids]


def _make_executor(choice: _ExecutorChoice, workers: int | None) -> Executor:
    from envharness.rollout.executors import LocalExecutor

    if choice is _ExecutorChoice.ray:
        from envharness.rollout.ray_executor import RayExecutor

        return RayExecutor(num_cpus=workers)
    if choice is _ExecutorChoice.inline:
        return LocalExecutor(1)
    if choice is _ExecutorChoice.thread:
        return LocalExecutor(workers, "thread")
    return LocalExecutor(workers)


def _stats_row(label: str, stats: RolloutStats) -> list[str]:
    failures = ", ".join(f"{kind} {count}" for kind, count in stats.failures.items()) or "-"
    return [
        escape(label),
        str(stats.n),
        f"{stats.successes}/{stats.n} {stats.success_rate:.0%}",
        f"{stats.ci_low * 100:.0f}-{stats.ci_high * 100:.0f}%",
        f"{stats.steps_mean:.1f}±{stats.steps_std:.1f}",
        f"{stats.invalid_rate:.0%}",
        f"{stats.blocked_rate:.0%}",
        str(stats.loops),
        escape(failures),
    ]


def _summary(trajectories: list[Trajectory], title: str) -> Table:
    """Success (Wilson 95% interval), steps, invalid and blocked rates, loops and failures."""
    from rich import box

    from envharness.rollout.stats import RolloutStats

    table = Table(title=title, box=box.SIMPLE_HEAD)
    table.add_column("Task", overflow="fold", min_width=8)
    for column in ("N", "Success", "95% CI", "Steps", "Inv", "Blk", "Loop"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("Failures", overflow="fold")
    table.caption = "Inv/Blk: invalid and rule-blocked steps · Loop: episodes with a loop"
    by_task: dict[str, list[Trajectory]] = {}
    for trajectory in trajectories:  # in the order the tasks were asked for
        by_task.setdefault(trajectory.task_id, []).append(trajectory)
    for task, group in by_task.items():
        table.add_row(*_stats_row(task, RolloutStats.from_trajectories(group)))
    if len(by_task) > 1:
        table.add_section()
        table.add_row(
            *_stats_row("overall", RolloutStats.from_trajectories(trajectories)), style="bold"
        )
    return table


def _print_errors(console: Console, trajectories: list[Trajectory], limit: int = 3) -> None:
    """The most frequent errors that ended episodes, so a misconfiguration shows at once."""
    from collections import Counter

    errors = Counter(t.error for t in trajectories if t.error)
    for error, count in errors.most_common(limit):
        text = error if len(error) <= 300 else error[:297] + "..."
        console.print(Text(f"{count}× {text}", style="yellow"))
    if len(errors) > limit:
        console.print(Text(f"... and {len(errors) - limit} other error(s)", style="yellow"))


def _say_skills(factory: Any, bank: Path) -> None:
    """Says how the policy uses the bank: retrieved per episode, or ignored (offline policies)."""
    from envharness.rollout.factory import uses_skills
    from envharness.rollout.policy import describe_policy
    from envharness.skills.retrieval import load_skills

    err = _stderr()
    if uses_skills(factory):
        count = len(getattr(factory.skill_retriever(), "skills", ()))
        text = f"skills: the top {factory.top_k} of {count} skill(s) in {bank} per episode"
        err.print(Text(text))
        return
    count = len(load_skills(bank))  # a file that is not a bank is still an error
    err.print(
        Text(
            f"note: {describe_policy(factory)} ignores skills: offline policies (oracle, random, "
            f"scripted) do not read prompts, so the {count} skill(s) in {bank} are not used",
            style="yellow",
        )
    )


@app.command()
@_clean_errors
def rollout(
    name: Annotated[
        str | None,
        typer.Argument(
            metavar="NAME", help="The bridge's registered name (optional with --harness)."
        ),
    ] = None,
    policy: Annotated[
        str,
        typer.Option(
            "--policy",
            "-p",
            help="oracle[:SKILL], random, scripted:FILE, or a chat model PROVIDER:MODEL.",
        ),
    ] = "random",
    tasks: Annotated[
        int, typer.Option("--tasks", "-n", min=1, help="Play the first N tasks of the split.")
    ] = 20,
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="Episodes per task.")] = 5,
    split: Annotated[str, typer.Option("--split", "-s", help="The split to take tasks from.")] = (
        "train"
    ),
    harness: Annotated[
        Path | None,
        typer.Option(
            "--harness",
            exists=True,
            dir_okay=False,
            readable=True,
            help="A HarnessSpec JSON file: play its task (--tasks and --split are ignored).",
        ),
    ] = None,
    workers: WorkersOption = None,
    executor: ExecutorOption = _ExecutorChoice.local,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of each task's first episode (then +1, +2 ...).")
    ] = 0,
    max_steps: Annotated[
        int | None,
        typer.Option("--max-steps", min=1, help="The agent's step budget (default: the task's)."),
    ] = None,
    step_timeout: Annotated[
        float | None,
        typer.Option("--step-timeout", min=0.001, help="Seconds the policy may take per action."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="The run directory (default: runs/NAME)."),
    ] = None,
    option: BridgeOptions = None,
    skills: Annotated[
        Path | None,
        typer.Option(
            "--skills",
            help="A skill bank (JSONL, or a run directory with skills.jsonl): a chat model is "
            "shown the --top-k skills retrieved (BM25) for each task's instruction. Offline "
            "policies ignore it.",
        ),
    ] = None,
    top_k: Annotated[
        int | None,
        typer.Option("--top-k", min=1, help="Skills per episode with --skills (default: 3)."),
    ] = None,
) -> None:
    """Play K episodes on each of N tasks with a policy; store them and summarize.

    Trajectories are appended to OUT/trajectories.jsonl as they finish. Running the same command
    again skips the episodes already stored (same spec, policy and seed), so an interrupted run
    resumes where it stopped. With --skills the policy's name gets the bank's digest
    (+skills:bm25@DIGEST:kK), so runs with different banks are stored apart, and each
    trajectory records the skills its policy was shown.
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from envharness.rollout.batch import RolloutRequest, run_batch
    from envharness.rollout.factory import policy_factory
    from envharness.rollout.policy import describe_policy
    from envharness.rollout.store import RunStore

    if top_k is not None and skills is None:
        raise typer.BadParameter("--top-k needs --skills BANK", param_hint="--top-k")
    factory = policy_factory(policy, skills=skills, top_k=top_k)
    specs = _rollout_specs(name, tasks, split, harness, parse_options(option))
    if skills is not None:
        _say_skills(factory, skills)
    requests = [RolloutRequest(spec, seed + i, max_steps) for spec in specs for i in range(k)]
    run_dir = out if out is not None else Path("runs") / specs[0].bridge.name
    label = describe_policy(factory)
    err = _stderr()
    with RunStore(run_dir) as store:
        wanted = list(dict.fromkeys(request.key(label) for request in requests))
        new = len(store.missing(wanted))
        done_before = len(wanted) - new
        plan = f"{len(specs)} task(s) × {k} episode(s) with {label}"
        if done_before:
            err.print(Text(f"{plan}: {done_before} already in {run_dir}, {new} new"))
        else:
            err.print(Text(f"{plan}: {new} new rollout(s) into {run_dir}"))
        progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=True,
            disable=not err.is_terminal,
        )
        successes = 0

        def advance(done: int, total: int, trajectory: Trajectory) -> None:
            nonlocal successes
            successes += trajectory.success
            progress.update(bar, completed=done, description=f"rollouts · {successes} solved")

        try:
            with _make_executor(executor, workers) as runner, progress:
                bar = progress.add_task("rollouts", total=new)
                trajectories = run_batch(
                    requests,
                    factory,
                    executor=runner,
                    store=store,
                    step_timeout=step_timeout,
                    progress=advance,
                )
        except KeyboardInterrupt:
            err.print(
                Text(
                    f"interrupted: {len(store)} trajectories are in {run_dir}; run the same "
                    "command again to resume",
                    style="yellow",
                )
            )
            raise typer.Exit(130) from None
    title = f"{specs[0].bridge.name} · {label} · {len(trajectories)} episode(s)"
    _stdout().print(_summary(trajectories, title))
    _print_errors(err, trajectories)
    err.print(Text(f"trajectories: {run_dir / 'trajectories.jsonl'}", style="dim"))
