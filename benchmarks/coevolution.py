"""Co-evolution offline: tabular Q-learning on the original env vs on EnvRigger-rigged envs.

Run: ``python benchmarks/coevolution.py [--quick] [--seeds 10] [--rounds 3] [--steps 5000]
[--workers 2] [--max-rollouts 100] [--envs fl8,fl8-slippery,cliff,taxi] [--runs DIR] [--out PATH]
[--replot JSON]``.
Prints a table, writes ``benchmarks/results/coevolution.json`` and the plot
``benchmarks/results/coevolution.png`` (success on the original env vs the learner's env steps,
mean over seeds with a 95% bootstrap band). ``--quick`` is a smoke run (2 seeds, 2 rounds of
600 steps, results under ``benchmarks/results/coevolution_quick.*``).

Arms, per env and seed, both through :func:`envharness.rl.coevolve` with the same
:class:`envharness.rl.QLearner` and the same budget of ``--steps`` learner env steps per round:

- ``original``: every round trains on the original env (``rig=False``);
- ``rigged``: every round EnvRigger (offline heuristic designer, objective ``sr:0.4-0.6``)
  rigs the current greedy policy; the learner trains on the accepted spec, or on the original
  env when the rig accepted nothing (the table counts how many rounds had an accepted spec).

Counted honestly: the x axis is the learner's own env steps (every ``step`` it took, in any
env); steps that ``Setups`` replayed at reset, EnvRigger's rollouts of the policy and the
evaluation episodes are reported separately, never in the budget. Evaluation: after every round
(and before the first), 10 greedy episodes on the **original** env with seeds disjoint from
every training and rigging seed (:class:`envharness.rl.SeedPlan`), the same seeds for both arms.
The band is a percentile bootstrap over seeds of the mean success rate; the final-round
difference (rigged - original) gets the same kind of interval.

Envs: FrozenLake 8x8 (``FrozenLake8x8-v1``) not slippery and slippery, CliffWalking
(``CliffWalking-v1``) and Taxi (``Taxi-v4``), through the ``gymnasium`` bridge. Each run's
directory is kept under ``--runs`` (a temporary folder by default); a rerun with the same
``--runs`` resumes (finished rounds are not redone).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
ENVS: dict[str, tuple[str, dict[str, Any]]] = {
    "fl8": ("FrozenLake8x8-v1", {"env_kwargs": {"is_slippery": False}}),
    "fl8-slippery": ("FrozenLake8x8-v1", {}),
    "cliff": ("CliffWalking-v1", {}),
    "taxi": ("Taxi-v4", {}),
}
ARMS = ("original", "rigged")
LEARNER = {"alpha": 0.5, "gamma": 0.99, "epsilon": 0.1}
RIGGER = {"k_observe": 5, "k_validate": 5, "max_iterations": 3, "max_rollouts": 100}
EVAL_EPISODES = 10
BOOTSTRAP = 4000


def run_one(job: dict[str, Any]) -> dict[str, Any]:
    """One (env, arm, seed) co-evolution run; returns its rounds as plain data."""
    from envharness.rl import QLearner, coevolve

    task, options = ENVS[job["env"]]
    start = time.perf_counter()
    run = coevolve(
        "gymnasium",
        [task],
        QLearner(**LEARNER),
        rounds=job["rounds"],
        steps_per_round=job["steps"],
        out_dir=job["dir"],
        seed=job["seed"],
        bridge_options=options,
        rig=job["arm"] == "rigged",
        eval_episodes=EVAL_EPISODES,
        rigger=job["rigger"],
    )
    return {**job, "seconds": time.perf_counter() - start, "rounds_data": run.to_dict()["rounds"]}


def bootstrap(values: list[float], seed: int = 0) -> tuple[float, float, float]:
    """The mean and a 95% percentile-bootstrap interval of the mean."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, mean, mean
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(values, k=len(values))) for _ in range(BOOTSTRAP))
    return mean, means[int(0.025 * BOOTSTRAP)], means[int(0.975 * BOOTSTRAP) - 1]


def bootstrap_difference(a: list[float], b: list[float], seed: int = 1) -> tuple[float, ...]:
    """Mean of ``a`` minus mean of ``b`` and a 95% bootstrap interval (independent resamples)."""
    rng = random.Random(seed)
    diffs = sorted(
        statistics.fmean(rng.choices(a, k=len(a))) - statistics.fmean(rng.choices(b, k=len(b)))
        for _ in range(BOOTSTRAP)
    )
    return (
        statistics.fmean(a) - statistics.fmean(b),
        diffs[int(0.025 * BOOTSTRAP)],
        diffs[int(0.975 * BOOTSTRAP) - 1],
    )


def summarize(runs: list[dict[str, Any]], rounds: int) -> dict[str, Any]:
    """Per env and arm: the success curve with bands, costs, and the final-round difference."""
    summary: dict[str, Any] = {}
    for env in dict.fromkeys(r["env"] for r in runs):
        per_arm: dict[str, Any] = {}
        finals: dict[str, list[float]] = {}
        for arm in ARMS:
            mine = [r for r in runs if r["env"] == env and r["arm"] == arm]
            if not mine:
                continue
            curve = []
            for k in range(rounds + 1):
                rates = [r["rounds_data"][k]["success_rate"] for r in mine]
                steps = statistics.fmean(r["rounds_data"][k]["total_env_steps"] for r in mine)
                mean, low, high = bootstrap(rates, seed=k)
                curve.append({"env_steps": steps, "mean": mean, "low": low, "high": high})
            finals[arm] = [r["rounds_data"][rounds]["success_rate"] for r in mine]
            trained = [d for r in mine for d in r["rounds_data"][1:]]
            sources = [t["source"] for d in trained for t in d["trained_on"]]
            statuses = [t.get("rig_status") for d in trained for t in d["trained_on"]]
            per_arm[arm] = {
                "seeds": len(mine),
                "curve": curve,
                "final": finals[arm],
                "learner_env_steps": statistics.fmean(
                    r["rounds_data"][rounds]["total_env_steps"] for r in mine
                ),
                "setup_steps_per_run": statistics.fmean(
                    sum(d["setup_steps"] for d in r["rounds_data"]) for r in mine
                ),
                "rig_rollouts_per_run": statistics.fmean(
                    sum(d["rig_rollouts"] for d in r["rounds_data"]) for r in mine
                ),
                "rig_env_steps_per_run": statistics.fmean(
                    sum(d["rig_env_steps"] for d in r["rounds_data"]) for r in mine
                ),
                "eval_env_steps_per_run": statistics.fmean(
                    sum(d["eval_env_steps"] for d in r["rounds_data"]) for r in mine
                ),
                "rounds_trained_on_accepted": sources.count("accepted"),
                "rounds_trained": len(sources),
                "rig_statuses": {s: statuses.count(s) for s in dict.fromkeys(statuses) if s},
                "components_trained_on": sorted(
                    {
                        "+".join(t.get("components") or []) or "-"
                        for d in trained
                        for t in d["trained_on"]
                        if t["source"] == "accepted"
                    }
                ),
                "seconds_per_run": statistics.fmean(r["seconds"] for r in mine),
            }
        entry: dict[str, Any] = {"task": ENVS[env][0], "options": ENVS[env][1], "arms": per_arm}
        if all(arm in finals for arm in ARMS):
            diff, low, high = bootstrap_difference(finals["rigged"], finals["original"])
            entry["final_difference"] = {"mean": diff, "low": low, "high": high}
        summary[env] = entry
    return summary


def print_table(summary: dict[str, Any]) -> None:
    """The results table: final success per arm (95% band), the difference, and the costs."""
    header = (
        f"{'env':<13} {'arm':<9} {'learner steps':>13} {'final success (95% CI)':>24} "
        f"{'accepted':>9} {'rig rollouts':>12} {'rig steps':>10} {'setup steps':>11}"
    )
    print(header)
    print("-" * len(header))
    for env, entry in summary.items():
        for arm, data in entry["arms"].items():
            last = data["curve"][-1]
            accepted = (
                f"{data['rounds_trained_on_accepted']}/{data['rounds_trained']}"
                if arm == "rigged"
                else "-"
            )
            print(
                f"{env:<13} {arm:<9} {data['learner_env_steps']:>13.0f} "
                f"{last['mean']:>9.2f} ({last['low']:.2f}-{last['high']:.2f}){'':>6} "
                f"{accepted:>9} {data['rig_rollouts_per_run']:>12.0f} "
                f"{data['rig_env_steps_per_run']:>10.0f} {data['setup_steps_per_run']:>11.0f}"
            )
        if "final_difference" in entry:
            d = entry["final_difference"]
            print(
                f"{env:<13} {'rig-orig':<9} {'':>13} {d['mean']:>+9.2f} "
                f"({d['low']:+.2f} to {d['high']:+.2f})"
            )
    print("rig rollouts / rig steps / setup steps: per run, outside the learner's budget")


def plot(summary: dict[str, Any], path: Path) -> bool:
    """Success on the original env vs the learner's env steps, one panel per env."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install 'envharness[report]')")
        return False
    envs = list(summary)
    figure, axes = plt.subplots(1, len(envs), figsize=(4.2 * len(envs), 3.6), squeeze=False)
    for axis, env in zip(axes[0], envs, strict=True):
        styles = (("tab:blue", "o", "-"), ("tab:orange", "s", "--"))
        for arm, (colour, marker, line) in zip(ARMS, styles, strict=True):
            data = summary[env]["arms"].get(arm)
            if data is None:
                continue
            xs = [p["env_steps"] for p in data["curve"]]
            ys = [p["mean"] for p in data["curve"]]
            axis.plot(xs, ys, marker=marker, linestyle=line, color=colour, label=arm)
            axis.fill_between(
                xs,
                [p["low"] for p in data["curve"]],
                [p["high"] for p in data["curve"]],
                color=colour,
                alpha=0.2,
            )
        axis.set_title(env)
        axis.set_xlabel("learner env steps")
        axis.set_ylim(-0.05, 1.05)
        axis.grid(alpha=0.3)
    axes[0][0].set_ylabel("success on the original env")
    axes[0][0].legend(loc="upper left")
    figure.suptitle("Tabular Q-learning: original env vs EnvRigger-rigged envs (95% bands)")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


def code_version() -> str | None:
    """The git HEAD the benchmark ran at (``None`` outside a checkout)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip()


def main() -> None:
    """Runs every (env, arm, seed), then prints the table and writes the JSON and the plot."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (2 seeds, 2 rounds)")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5000, help="learner env steps per round")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--max-rollouts",
        type=int,
        default=RIGGER["max_rollouts"],
        help="validation rollouts one candidate may spend in a round's rig",
    )
    parser.add_argument("--envs", default=",".join(ENVS))
    parser.add_argument("--runs", type=Path, default=None, help="keep (and resume) runs here")
    parser.add_argument("--out", type=Path, default=None, help="the JSON path")
    parser.add_argument(
        "--replot", type=Path, default=None, help="redraw the plot and table from a results JSON"
    )
    args = parser.parse_args()
    if args.replot is not None:
        report = json.loads(args.replot.read_text())
        print_table(report["summary"])
        if plot(report["summary"], args.replot.with_suffix(".png")):
            print(f"wrote {args.replot.with_suffix('.png')}")
        return
    if args.quick:
        args.seeds, args.rounds, args.steps = 2, 2, 600
    envs = [e.strip() for e in args.envs.split(",") if e.strip()]
    unknown = sorted(set(envs) - set(ENVS))
    if unknown:
        parser.error(f"unknown env(s) {unknown}; known: {', '.join(ENVS)}")
    stem = "coevolution_quick" if args.quick else "coevolution"
    out = args.out or RESULTS / f"{stem}.json"
    runs_root = args.runs or Path(tempfile.mkdtemp(prefix="coevolution-"))
    rigger = {**RIGGER, "max_rollouts": args.max_rollouts}
    jobs = [
        {
            "env": env,
            "arm": arm,
            "seed": seed,
            "rounds": args.rounds,
            "steps": args.steps,
            "dir": str(runs_root / env / arm / f"seed-{seed}"),
            "rigger": rigger,
        }
        for env in envs
        for seed in range(args.seeds)
        for arm in ARMS
    ]
    start = time.perf_counter()
    runs: list[dict[str, Any]] = []
    with ProcessPoolExecutor(args.workers, mp_context=get_context("spawn")) as pool:
        for result in pool.map(run_one, jobs):
            runs.append(result)
            last = result["rounds_data"][-1]
            print(
                f"  {result['env']:<13} {result['arm']:<9} seed {result['seed']}: success "
                f"{last['success_rate']:.2f} after {last['total_env_steps']} steps "
                f"({result['seconds']:.1f} s)",
                flush=True,
            )
    wall = time.perf_counter() - start
    summary = summarize(runs, args.rounds)
    print()
    print_table(summary)
    plotted = plot(summary, out.with_suffix(".png"))
    report = {
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "code": code_version(),
        "settings": {
            "seeds": args.seeds,
            "rounds": args.rounds,
            "steps_per_round": args.steps,
            "learner": LEARNER,
            "rigger": {**rigger, "designer": "heuristic", "objective": "sr:0.4-0.6"},
            "eval_episodes": EVAL_EPISODES,
            "workers": args.workers,
            "band": "95% percentile bootstrap over seeds of the mean success rate",
        },
        "wall_seconds": wall,
        "summary": summary,
        "runs": [
            {k: v for k, v in r.items() if k not in ("dir", "rigger")}
            | {"rounds_data": [_slim(d) for d in r["rounds_data"]]}
            for r in runs
        ],
        "plot": str(out.with_suffix(".png")) if plotted else None,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    also = f" and {out.with_suffix('.png')}" if plotted else ""
    print(f"\nwall {wall:.0f} s; wrote {out}{also}")


def _slim(round_data: dict[str, Any]) -> dict[str, Any]:
    """A round's record without the bulky training details."""
    keep = (
        "round",
        "success_rate",
        "env_steps",
        "total_env_steps",
        "setup_steps",
        "rig_rollouts",
        "rig_env_steps",
        "eval_env_steps",
        "trained_on",
        "seconds",
    )
    return {k: round_data[k] for k in keep if k in round_data}


if __name__ == "__main__":
    main()
