"""``envharness coevolve``: rounds of rig → train (tabular Q-learning) → evaluate, offline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from envharness.bridges.registry import list_tasks
from envharness.cli._app import BridgeOptions, _clean_errors, _stderr, _stdout, app, parse_options


def _task_ids(name: str, tasks: str, split: str, options: dict) -> list[str]:
    """``--tasks``: comma-separated ids (checked when built), or N: the first N of ``--split``."""
    text = tasks.strip()
    if text.isdigit():
        count = int(text)
        if count < 1:
            raise typer.BadParameter("expected a count >= 1 or task ids", param_hint="--tasks")
        return list_tasks(name, split=split, **options)[:count]
    ids = [t.strip() for t in text.split(",") if t.strip()]
    if not ids:
        raise typer.BadParameter("expected task ids (comma-separated) or a count", "--tasks")
    return ids


@app.command()
@_clean_errors
def coevolve(
    name: Annotated[str, typer.Argument(metavar="BRIDGE", help="The bridge's registered name.")],
    tasks: Annotated[
        str,
        typer.Option("--tasks", "-t", help="Task ids (comma-separated), or N: the first N tasks."),
    ] = "1",
    split: Annotated[str, typer.Option("--split", help="The split for --tasks N.")] = "train",
    rounds: Annotated[int, typer.Option("--rounds", "-r", min=1, help="Rounds after round 0.")] = 3,
    steps_per_round: Annotated[
        int, typer.Option("--steps-per-round", "-s", min=1, help="Learner env steps per round.")
    ] = 5000,
    seed: Annotated[int, typer.Option("--seed", min=0, help="The run's seed.")] = 0,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="The run directory (default: runs/coevolve-BRIDGE)."),
    ] = None,
    rig: Annotated[
        bool, typer.Option("--rig/--no-rig", help="Rig each round, or train on the originals.")
    ] = True,
    objective: Annotated[str, typer.Option("--objective", help="EnvRigger's objective.")] = (
        "sr:0.4-0.6"
    ),
    designer: Annotated[
        str, typer.Option("--designer", help="'heuristic' (offline) or a model string.")
    ] = "heuristic",
    eval_episodes: Annotated[
        int, typer.Option("--eval-episodes", min=1, help="Evaluation episodes per task.")
    ] = 20,
    k_observe: Annotated[int, typer.Option("--k-observe", min=1)] = 5,
    k_validate: Annotated[int, typer.Option("--k-validate", min=1)] = 5,
    max_iterations: Annotated[int, typer.Option("--max-iterations", min=1)] = 3,
    max_rollouts: Annotated[int, typer.Option("--max-rollouts", min=1)] = 100,
    alpha: Annotated[float, typer.Option("--alpha", help="Q-learning rate.")] = 0.5,
    gamma: Annotated[float, typer.Option("--gamma", help="Discount.")] = 0.99,
    epsilon: Annotated[float, typer.Option("--epsilon", help="Exploration while training.")] = 0.1,
    option: BridgeOptions = None,
) -> None:
    """Co-evolve a tabular Q-learner and its environments: rig → train → evaluate, per round.

    Each round EnvRigger rigs the current greedy policy on every task (objective sr:0.4-0.6 by
    default), the learner trains STEPS_PER_ROUND env steps on the accepted specs (the original
    env where nothing was accepted), and the policy is evaluated on the original envs with
    fresh seeds. Rounds go to OUT/round-NNN/; running the same command again resumes without
    redoing finished rounds (a larger --rounds extends the run). For your own trainer, call
    envharness.rl.coevolve from Python.
    """
    from envharness.rl import QLearner
    from envharness.rl import coevolve as run_coevolve
    from envharness.rl.rounds import RoundResult

    options = parse_options(option)
    task_ids = _task_ids(name, tasks, split, options)
    run_dir = out if out is not None else Path("runs") / f"coevolve-{name}"
    learner = QLearner(alpha=alpha, gamma=gamma, epsilon=epsilon)
    err = _stderr()
    err.print(
        Text(
            f"co-evolving {learner.describe()} on {len(task_ids)} {name} task(s), "
            f"{'rigged' if rig else 'original envs only'}, {rounds} round(s) of "
            f"{steps_per_round} steps → {run_dir}"
        )
    )

    def report(record: RoundResult) -> None:
        where = ", ".join(f"{t['task_id']}: {t['source']}" for t in record.trained_on) or "-"
        err.print(
            Text(
                f"  round {record.round}: success {record.success_rate:.0%} after "
                f"{record.total_env_steps} learner steps (trained on {where})"
            )
        )

    result = run_coevolve(
        name,
        task_ids,
        learner,
        rounds=rounds,
        steps_per_round=steps_per_round,
        out_dir=run_dir,
        seed=seed,
        bridge_options=options,
        rig=rig,
        objective=objective,
        eval_episodes=eval_episodes,
        rigger={
            "designer": designer,
            "k_observe": k_observe,
            "k_validate": k_validate,
            "max_iterations": max_iterations,
            "max_rollouts": max_rollouts,
        },
        on_round=report,
    )
    table = Table(title=f"coevolve · {name} · {learner.describe()}")
    for column in ("round", "trained on", "learner steps", "success", "rig rollouts", "rig steps"):
        table.add_column(column)
    for r in result.rounds:
        sources = ", ".join(sorted({t["source"] for t in r.trained_on})) or "-"
        table.add_row(
            str(r.round),
            sources,
            str(r.total_env_steps),
            f"{r.success_rate:.0%}",
            str(r.rig_rollouts),
            str(r.rig_env_steps),
        )
    table.caption = (
        "success: on the original envs, fresh seeds · learner steps: its own actions (rig "
        "rollouts and Setups replays are counted apart)"
    )
    _stdout().print(table)
    err.print(Text(f"rounds: {run_dir}/round-NNN/round.json", style="dim"))
