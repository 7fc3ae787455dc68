"""The ``envharness`` command: list bridges and tasks, play a task by hand, check a bridge.

Commands:
    ``envharness bridges``                      the registered bridges and whether they import
    ``envharness tasks NAME``                   task ids, one per line (pipe-friendly)
    ``envharness play NAME --task ID``          an interactive session in the terminal
    ``envharness play --harness spec.json``     the same over a saved harness stack
    ``envharness check-bridge NAME``            the conformance suite on one task
    ``envharness rollout NAME --policy P``      K episodes on each of N tasks, stored and summarized

Every :class:`~envharness.errors.EnvHarnessError` ends the command with one red line
``error: ...`` and exit code 2; ``check-bridge`` exits with 1 when the bridge fails a check.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from envharness import __version__
from envharness.bridges.registry import get_bridge, list_bridges, list_tasks, load_bridge
from envharness.core import Action, ActionableEnv, Evaluation, StepResult, ToolSpec
from envharness.errors import (
    BridgeError,
    ConformanceError,
    DependencyNotInstalled,
    EnvHarnessError,
    InvalidActionError,
    SpecError,
)
from envharness.parsing import parse_action, tool_usage
from envharness.testing import CHECKS, check_bridge

if TYPE_CHECKING:
    from envharness.harness import HarnessSpec
    from envharness.rollout.executors import Executor
    from envharness.rollout.stats import RolloutStats
    from envharness.rollout.trajectory import Trajectory

__all__ = ["app"]

app = typer.Typer(
    name="envharness",
    help="Turn static agent benchmarks into customizable environments.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

_P = ParamSpec("_P")
_R = TypeVar("_R")

_SESSION_HELP = (
    "Type an action: shell-like words (combine 4 * 6), call syntax (combine(4, '*', 6)) or JSON "
    '({"tool": "combine", "args": {...}}); a text tool with one string parameter takes the rest '
    "of the line (act go north). Commands: help, tools, state (the env state as JSON), quit. "
    "To send one of these words to the environment, use call syntax or JSON: act('help')."
)


def _stdout() -> Console:
    return Console(highlight=False, soft_wrap=True)


def _stderr() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def _clean_errors(command: Callable[_P, _R]) -> Callable[_P, _R]:
    """Turns an :class:`EnvHarnessError` into one red ``error: ...`` line and exit code 2."""

    @functools.wraps(command)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return command(*args, **kwargs)
        except EnvHarnessError as e:
            _stderr().print(Text(f"error: {e}", style="red"))
            raise typer.Exit(2) from None

    return wrapper


def _version(value: bool) -> None:
    if value:
        typer.echo(f"envharness {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    """Turn static agent benchmarks into customizable environments."""


# -- bridges / tasks ---------------------------------------------------------------------------


def _bridge_status(name: str) -> tuple[str, str, str]:
    """``(status, style, source)`` for one registered bridge."""
    try:
        cls = get_bridge(name)
    except DependencyNotInstalled as e:
        return f"missing extra: {e}", "yellow", ""
    except Exception as e:  # a third-party bridge may fail to import in any way
        return f"import failed: {type(e).__name__}: {e}", "red", ""
    doc = (cls.__doc__ or "").strip().splitlines()
    summary = f" — {doc[0]}" if doc else ""
    return f"ok{summary}", "green", f"{cls.__module__}:{cls.__qualname__}"


@app.command()
@_clean_errors
def bridges() -> None:
    """List the registered bridges and whether each one imports."""
    table = Table(title="Bridges")
    table.add_column("Name", style="bold")
    table.add_column("Status")
    table.add_column("Class", style="dim")
    for name in list_bridges():
        status, style, source = _bridge_status(name)
        table.add_row(escape(name), Text(status, style=style), escape(source))
    _stdout().print(table)


@app.command()
@_clean_errors
def tasks(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The bridge's registered name.")],
    split: Annotated[str, typer.Option("--split", "-s", help="The split to list.")] = "train",
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", min=0, help="List at most this many.")
    ] = None,
) -> None:
    """Print the task ids of a bridge, one per line (the count goes to stderr)."""
    ids = list_tasks(name, split=split)
    shown = ids if limit is None else ids[:limit]
    for task_id in shown:
        typer.echo(task_id)
    typer.echo(f"{len(shown)} of {len(ids)} tasks in split {split!r} of {name!r}", err=True)


# -- play --------------------------------------------------------------------------------------


def _first_task(name: str) -> str:
    ids = list_tasks(name, split="train")
    if not ids:
        raise BridgeError("the train split is empty; give --task", bridge=name)
    return ids[0]


def _open_env(name: str | None, task: str | None, harness: Path | None) -> ActionableEnv:
    """Builds the env to play: from a harness spec, or the bridge ``name`` on ``task``.

    With a spec, ``name`` and ``task`` may be omitted; when given they must match the spec.
    Without one, ``task`` defaults to the first task of the bridge's train split.
    """
    if harness is not None:
        from envharness.harness import HarnessSpec

        spec = HarnessSpec.from_json(harness.read_text(encoding="utf-8"))
        if name is not None and name != spec.bridge.name:
            raise SpecError(
                f"{harness} is a harness over bridge {spec.bridge.name!r}, not {name!r}; "
                "omit NAME or make it match"
            )
        if task is not None and task != spec.bridge.task_id:
            raise SpecError(
                f"{harness} is a harness on task {spec.bridge.task_id!r}, not {task!r}; "
                "omit --task or make it match"
            )
        return spec.build()
    if name is None:
        raise typer.BadParameter("give a bridge NAME or --harness", param_hint="NAME")
    return load_bridge(name, task_id=task if task is not None else _first_task(name))


def _print_tools(out: Console, tools: list[ToolSpec]) -> None:
    out.print(Text("Tools:", style="bold"))
    for tool in tools:
        line = Text(f"  {tool_usage(tool)}", style="cyan")
        if tool.description:
            line.append(f"  {tool.description}", style="dim")
        out.print(line)
        for param, schema in tool.parameters.get("properties", {}).items():
            if isinstance(schema, dict) and schema.get("enum"):
                choices = " ".join(str(choice) for choice in schema["enum"])
                out.print(Text(f"      <{param}>: one of {choices}", style="dim"))


def _print_step(out: Console, steps: int, budget: int, action: Action, result: StepResult) -> None:
    out.print(Text(f"[{steps}/{budget}] {action}", style="bold"))
    out.print(Text(str(result.observation)))
    notes = [f"reward {result.reward}"]
    info = result.info if isinstance(result.info, dict) else {}
    if info.get("blocked"):
        notes.append("blocked by a rule")
    if info.get("invalid_action"):
        notes.append(f"invalid: {info['invalid_action']}")
    if result.terminated:
        notes.append("terminated")
    if result.truncated:
        notes.append("truncated")
    out.print(Text(" · ".join(notes), style="dim"))


def _print_evaluation(out: Console, evaluation: Evaluation, steps: int, ended: str) -> None:
    out.print(Rule("result"))
    verdict = Text("success: ", style="bold")
    verdict.append(
        "yes" if evaluation.success else "no", style="green" if evaluation.success else "red"
    )
    verdict.append(f" · score {evaluation.score} · {steps} step(s) · ended: {ended}")
    out.print(verdict)
    if evaluation.details:
        details = json.dumps(evaluation.details, sort_keys=True, default=repr)
        out.print(Text(f"details: {details}", style="dim"))


def _read_line(prompt: str) -> str | None:
    """One line of input, or ``None`` at end of input."""
    try:
        return input(prompt)
    except EOFError:
        return None


def _session(env: ActionableEnv, *, seed: int, budget: int) -> None:
    """Plays one episode from lines of input and prints the evaluation at the end."""
    out = _stdout()
    observation, _ = env.reset(seed=seed)
    title = f"{env.bridge_name or type(env).__name__} · task {env.task_id}"
    out.print(Rule(Text(title)))
    out.print(Text("Instruction: ", style="bold") + Text(env.instruction))
    _print_tools(out, env.tools())
    out.print(Text(f"Budget: {budget} step(s). Type help for the input forms.", style="dim"))
    out.print(Text(observation))
    prompt = "> " if sys.stdin.isatty() else ""
    steps, ended = 0, "end of input"
    while steps < budget:
        try:
            line = _read_line(prompt)
        except KeyboardInterrupt:
            ended = "interrupted"
            break
        if line is None:
            break
        command = line.strip()
        if not command:
            continue
        if command in ("help", "?"):
            out.print(Text(_SESSION_HELP, style="dim"))
        elif command == "tools":
            _print_tools(out, env.tools())
        elif command == "state":
            out.print_json(data=env.get_env_state(), default=repr)
        elif command in ("quit", "exit"):
            ended = "quit"
            break
        else:
            try:
                action = parse_action(command, env.tools())
                result = env.step(action)
            except InvalidActionError as e:
                out.print(Text(str(e), style="red"))
                continue
            steps += 1
            _print_step(out, steps, budget, action, result)
            if result.terminated or result.truncated:
                ended = "terminated" if result.terminated else "truncated"
                break
    else:
        ended = "step budget used"
    _print_evaluation(out, env.evaluate(), steps, ended)


@app.command()
@_clean_errors
def play(
    name: Annotated[
        str | None,
        typer.Argument(
            metavar="NAME", help="The bridge's registered name (optional with --harness)."
        ),
    ] = None,
    task: Annotated[
        str | None,
        typer.Option("--task", "-t", help="The task id (default: the first train task)."),
    ] = None,
    harness: Annotated[
        Path | None,
        typer.Option(
            "--harness",
            exists=True,
            dir_okay=False,
            readable=True,
            help="A HarnessSpec JSON file; NAME and --task must match it when given.",
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="The reset seed.")] = 0,
    max_steps: Annotated[
        int | None,
        typer.Option("--max-steps", min=1, help="The agent's step budget (default: the task's)."),
    ] = None,
) -> None:
    """Play a task by typing actions; the evaluation is printed at the end.

    Reads one action per line (interactive or piped); the session ends when the episode
    terminates, the step budget is used, on quit, or at the end of input.
    """
    env = _open_env(name, task, harness)
    with env:
        _session(env, seed=seed, budget=max_steps if max_steps is not None else env.max_steps)


# -- check-bridge ------------------------------------------------------------------------------


@app.command("check-bridge")
@_clean_errors
def check_bridge_command(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The bridge's registered name.")],
    task: Annotated[
        str | None,
        typer.Option("--task", "-t", help="The task id (default: the first train task)."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="The reset seed.")] = 0,
) -> None:
    """Run the conformance suite on one task of a bridge (exit code 1 when a check fails)."""
    task_id = task if task is not None else _first_task(name)
    load_bridge(name, task_id=task_id).close()  # an unknown task is a usage error, not a failure
    out = _stdout()
    try:
        report = check_bridge(lambda: load_bridge(name, task_id=task_id), seed=seed)
    except ConformanceError as e:
        failed = {failure.split(":", 1)[0] for failure in e.failures}
        if failed <= set(CHECKS):  # otherwise the suite did not get to run the checks
            for check in CHECKS:
                if check not in failed:
                    out.print(Text(f"✓ {check}", style="green"))
        for failure in e.failures:
            out.print(Text(f"✗ {failure}", style="red"))
        out.print(
            Text(
                f"{name} task {task_id!r}: {len(e.failures)} failure(s) in "
                f"{', '.join(sorted(failed))}",
                style="bold red",
            )
        )
        raise typer.Exit(1) from None
    for check in report.passed:
        out.print(Text(f"✓ {check}", style="green"))
    played = ", ".join(str(action) for action in report.actions) or "no actions"
    out.print(Text(f"played: {played}", style="dim"))
    out.print(
        Text(f"{name} task {task_id!r} passed all {len(report.passed)} checks", style="bold green")
    )


# -- demo ----------------------------------------------------------------------------------------


@app.command()
@_clean_errors
def demo(
    task: Annotated[str, typer.Option("--task", "-t", help="The Toy24 task.")] = "4-4-10-10",
    out: Annotated[
        Path, typer.Option("--out", help="Where the spec and the trajectory are written.")
    ] = Path("runs/demo"),
) -> None:
    """Build a harnessed Toy24 env from a spec and play it with a scripted policy (offline)."""
    from envharness.demo import run_demo

    console = _stdout()
    result = run_demo(out, task_id=task)
    spec = json.loads(result.spec_path.read_text())
    layers = " → ".join(c["type"] for c in spec["components"])
    console.print(Rule(f"Toy24 {task}: bridge → {layers}"))
    console.print(
        f"spec written to {result.spec_path} (spec_id {spec['spec_id']}); rebuilt from it"
    )
    console.print(
        Text(f"first observation (after the Setups head start):\n{result.first_observation}")
    )
    table = Table(title="scripted policy")
    for column in ("#", "action", "observation", "reward", "note"):
        table.add_column(column)
    for step in result.steps:
        action = Action.from_dict(step["action"])
        note = "blocked by rule" if step["blocked"] else ("invalid" if step["invalid"] else "")
        if step["terminated"]:
            note = "episode ended"
        table.add_row(
            str(step["step"]),
            escape(str(action)),
            escape(step["observation"]),
            f"{step['reward']:g}",
            note,
        )
    console.print(table)
    evaluation = result.evaluation
    style = "bold green" if evaluation.success else "bold red"
    console.print(
        Text(f"evaluation (the bridge's own verifier): {evaluation.to_dict()}", style=style)
    )
    console.print(f"trajectory written to {out / 'demo_trajectory.json'}")


# -- rollout -------------------------------------------------------------------------------------


class _ExecutorChoice(StrEnum):
    """Where ``envharness rollout`` runs the episodes."""

    local = "local"
    thread = "thread"
    inline = "inline"
    ray = "ray"


def _rollout_specs(
    name: str | None, tasks: int, split: str, harness: Path | None
) -> list[HarnessSpec]:
    """The specs to play: the harness file's own, or the first ``tasks`` tasks of ``split``."""
    from envharness.harness import HarnessSpec
    from envharness.harness.spec import BridgeSpec

    if harness is not None:
        spec = HarnessSpec.from_json(harness.read_text(encoding="utf-8"))
        if name is not None and name != spec.bridge.name:
            raise SpecError(
                f"{harness} is a harness over bridge {spec.bridge.name!r}, not {name!r}; "
                "omit NAME or make it match"
            )
        return [spec]
    if name is None:
        raise typer.BadParameter("give a bridge NAME or --harness", param_hint="NAME")
    ids = list_tasks(name, split=split)[:tasks]
    if not ids:
        raise BridgeError(f"the {split!r} split has no tasks", bridge=name)
    return [HarnessSpec(BridgeSpec(name, task_id)) for task_id in ids]


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
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers", "-w", min=1, help="Parallel workers (default: the CPUs; 1 runs inline)."
        ),
    ] = None,
    executor: Annotated[
        _ExecutorChoice,
        typer.Option(
            "--executor",
            help="local: processes (inline with --workers 1); thread: threads, for LLM "
            "policies; inline; ray: Ray tasks (--workers sets its CPUs).",
        ),
    ] = _ExecutorChoice.local,
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
) -> None:
    """Play K episodes on each of N tasks with a policy; store them and summarize.

    Trajectories are appended to OUT/trajectories.jsonl as they finish. Running the same command
    again skips the episodes already stored (same spec, policy and seed), so an interrupted run
    resumes where it stopped.
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

    factory = policy_factory(policy)
    specs = _rollout_specs(name, tasks, split, harness)
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
