"""Commands about bridges and single envs: bridges, tasks, play, check-bridge, demo."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from envharness.bridges.registry import get_bridge, list_bridges, list_tasks, load_bridge
from envharness.core import Action, ActionableEnv, Evaluation, StepResult, ToolSpec
from envharness.errors import (
    BridgeError,
    ConformanceError,
    DependencyNotInstalled,
    InvalidActionError,
    SpecError,
)
from envharness.parsing import parse_action, tool_usage
from envharness.testing import CHECKS, check_bridge

if TYPE_CHECKING:
    from envharness.harness import HarnessSpec

    pass

from envharness.cli._app import (
    BridgeOptions,
    _clean_errors,
    _stdout,
    app,
    parse_options,
    printable,
)

_SESSION_HELP = (
    "Type an action: shell-like words (combine 4 * 6), call syntax (combine(4, '*', 6)) or JSON "
    '({"tool": "combine", "args": {...}}); a text tool with one string parameter takes the rest '
    "of the line (act go north). Commands: help, tools, state (the env state as JSON), quit. "
    "To send one of these words to the environment, use call syntax or JSON: act('help')."
)


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
    option: BridgeOptions = None,
) -> None:
    """Print the task ids of a bridge, one per line (the count goes to stderr)."""
    ids = list_tasks(name, split=split, **parse_options(option))
    shown = ids if limit is None else ids[:limit]
    for task_id in shown:
        typer.echo(printable(task_id))
    typer.echo(f"{len(shown)} of {len(ids)} tasks in split {split!r} of {name!r}", err=True)


# -- play --------------------------------------------------------------------------------------


def _first_task(name: str, options: dict[str, Any]) -> str:
    ids = list_tasks(name, split="train", **options)
    if not ids:
        raise BridgeError("the train split is empty; give --task", bridge=name)
    return ids[0]


_MAX_SPEC_BYTES = 16 * 1024 * 1024


def read_spec_text(path: Path) -> str:
    """The text of a spec file.

    Raises:
        SpecError: If the file cannot be read, is over 16 MiB, or is not UTF-8 text.
    """
    try:
        if path.stat().st_size > _MAX_SPEC_BYTES:
            raise SpecError(f"{path} is over {_MAX_SPEC_BYTES >> 20} MiB: not a harness spec")
        data = path.read_bytes()
    except OSError as e:
        raise SpecError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SpecError(f"{path} is not a text file (UTF-8 JSON); give a harness spec") from None


def load_harness_file(harness: Path, name: str | None) -> HarnessSpec:
    """Reads a harness spec file; ``name``, when given, must be the spec's bridge.

    Raises:
        SpecError: If the file cannot be read, is not a spec, or is over another bridge.
    """
    from envharness.harness import HarnessSpec

    spec = HarnessSpec.from_json(read_spec_text(harness))
    if name is not None and name != spec.bridge.name:
        raise SpecError(
            f"{harness} is a harness over bridge {spec.bridge.name!r}, not {name!r}; "
            "omit NAME or make it match"
        )
    return spec


def _open_env(
    name: str | None, task: str | None, harness: Path | None, options: dict[str, Any]
) -> ActionableEnv:
    """Builds the env to play: from a harness spec, or the bridge ``name`` on ``task``.

    With a spec, ``name`` and ``task`` may be omitted; when given they must match the spec, and
    bridge ``options`` are refused (the spec holds its own). Without one, ``task`` defaults to
    the first task of the bridge's train split.
    """
    if harness is not None:
        spec = load_harness_file(harness, name)
        if task is not None and task != spec.bridge.task_id:
            raise SpecError(
                f"{harness} is a harness on task {spec.bridge.task_id!r}, not {task!r}; "
                "omit --task or make it match"
            )
        if options:
            raise typer.BadParameter(
                "a harness spec holds its bridge options; edit the spec instead",
                param_hint="--option",
            )
        return spec.build()
    if name is None:
        raise typer.BadParameter("give a bridge NAME or --harness", param_hint="NAME")
    task_id = task if task is not None else _first_task(name, options)
    return load_bridge(name, task_id=task_id, **options)


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
    option: BridgeOptions = None,
) -> None:
    """Play a task by typing actions; the evaluation is printed at the end.

    Reads one action per line (interactive or piped); the session ends when the episode
    terminates, the step budget is used, on quit, or at the end of input.
    """
    env = _open_env(name, task, harness, parse_options(option))
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
    option: BridgeOptions = None,
) -> None:
    """Run the conformance suite on one task of a bridge (exit code 1 when a check fails)."""
    options = parse_options(option)
    task_id = task if task is not None else _first_task(name, options)
    # an unknown task or option is a usage error, not a failed check
    load_bridge(name, task_id=task_id, **options).close()
    out = _stdout()
    try:
        report = check_bridge(lambda: load_bridge(name, task_id=task_id, **options), seed=seed)
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
