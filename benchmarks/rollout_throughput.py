"""Rollouts per second on Toy24 with OraclePolicy (skill 0.5, 12-step budget), per executor.

Run: ``python benchmarks/rollout_throughput.py [--episodes 400] [--repeats 5] [--no-ray]``.
Prints a table and writes ``benchmarks/results/rollout_throughput.json``.

Each executor first runs a warm-up batch (one episode per task) on a fresh executor: that batch
pays for starting the pool (or Ray), and the start-up cost is reported as the warm-up time minus
what those episodes take at the steady rate. Then the same ``--episodes`` requests (the first 20
train tasks, round robin, consecutive seeds) run ``--repeats`` times on the warm executor; the
median rate is reported, with the parent's CPU time per episode (what the caller spends receiving
and parsing trajectories). Target (issue #3): 2 process workers >= 1.8x one process worker.

A Toy24 episode costs about a millisecond, so the fixed costs around an episode matter: jobs go
to processes in chunks (a chunk of 1 is measured too, to show why), and the caller still parses
one JSON trajectory per episode on the same 2 CPUs that the 2 workers use. The "hardware
ceiling" row runs the same episodes in 1 vs 2 independent processes with no executor and no
messaging at all: what 2 CPUs of this machine give at best.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envharness import list_tasks
from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.rollout.batch import RolloutRequest, WorkerJob, run_batch, run_worker_job
from envharness.rollout.executors import Executor, LocalExecutor
from envharness.rollout.policies import OraclePolicyFactory

RESULTS = Path(__file__).parent / "results" / "rollout_throughput.json"
SKILL = 0.5
MAX_STEPS = 12
N_TASKS = 20
TARGET = 1.8
FACTORY = OraclePolicyFactory(SKILL)


def make_requests(episodes: int, first_seed: int = 0) -> list[RolloutRequest]:
    """``episodes`` requests over the first 20 train tasks, round robin, consecutive seeds."""
    tasks = list_tasks("toy24", split="train")[:N_TASKS]
    specs = [RolloutRequest(HarnessSpec(BridgeSpec("toy24", task)), 0, MAX_STEPS) for task in tasks]
    return [
        RolloutRequest(specs[i % N_TASKS].spec, first_seed + i // N_TASKS, MAX_STEPS)
        for i in range(episodes)
    ]


def measure(
    make: Callable[[], Executor], requests: list[RolloutRequest], repeats: int
) -> dict[str, Any]:
    """Warm-up batch on a fresh executor, then ``repeats`` timed batches on the warm one."""
    warmup = make_requests(N_TASKS, first_seed=1_000_000)
    executor = make()
    start = time.perf_counter()
    run_batch(warmup, FACTORY, executor=executor)
    first_batch = time.perf_counter() - start
    rates, parent_ms, successes = [], [], 0
    for _ in range(repeats):
        cpu, start = time.process_time(), time.perf_counter()
        batch = run_batch(requests, FACTORY, executor=executor)
        elapsed = time.perf_counter() - start
        rates.append(len(requests) / elapsed)
        parent_ms.append((time.process_time() - cpu) / len(requests) * 1000)
        successes = sum(t.success for t in batch)
    start = time.perf_counter()
    executor.close()
    close_seconds = time.perf_counter() - start
    rate = statistics.median(rates)
    return {
        "executor": repr(executor),
        "workers": executor.workers,
        "first_batch_seconds": first_batch,
        "startup_seconds": max(0.0, first_batch - len(warmup) / rate),
        "close_seconds": close_seconds,
        "rollouts_per_second": rate,
        "rollouts_per_second_min": min(rates),
        "rollouts_per_second_max": max(rates),
        "parent_cpu_ms_per_episode": statistics.median(parent_ms),
        "success_rate": successes / len(requests),
    }


def _timed_play(requests: list[RolloutRequest]) -> float:
    """Plays ``requests`` in this process with no executor; returns the seconds it took."""
    start = time.perf_counter()
    run_worker_job(WorkerJob(tuple(requests), FACTORY, "oracle:0.5"))
    return time.perf_counter() - start


def hardware_ceiling(requests: list[RolloutRequest], repeats: int) -> dict[str, Any]:
    """The speed-up of 2 independent processes over 1 on the same episodes, no messaging."""
    ratios = []
    context = multiprocessing.get_context("forkserver")
    with context.Pool(2) as pool:
        pool.map(_timed_play, [requests[:N_TASKS], requests[:N_TASKS]])  # imports, caches
        for _ in range(repeats):
            one = pool.apply(_timed_play, (requests,))
            halves = pool.map(_timed_play, [requests[0::2], requests[1::2]])
            ratios.append(one / max(halves))
    return {
        "speedup_2_over_1": statistics.median(ratios),
        "min": min(ratios),
        "max": max(ratios),
    }


def _ray_executor() -> Executor:
    from envharness.rollout.ray_executor import RayExecutor

    return RayExecutor(num_cpus=2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray executor")
    args = parser.parse_args()

    requests = make_requests(args.episodes)
    executors: dict[str, Callable[[], Executor]] = {
        "inline (LocalExecutor(1))": lambda: LocalExecutor(1),
        "1 process": lambda: LocalExecutor(1, "process"),
        "2 processes": lambda: LocalExecutor(2, "process"),
        "2 processes, chunksize=1": lambda: LocalExecutor(2, "process", chunksize=1),
        "2 threads": lambda: LocalExecutor(2, "thread"),
    }
    notes: dict[str, str] = {}
    if args.no_ray:
        notes["ray"] = "skipped (--no-ray)"
    else:
        try:
            import ray  # noqa: F401

            executors["Ray (2 CPUs)"] = _ray_executor
        except ImportError:
            notes["ray"] = "skipped: ray is not installed (pip install 'envharness[ray]')"

    rows = {name: measure(make, requests, args.repeats) for name, make in executors.items()}
    ceiling = hardware_ceiling(requests, args.repeats)
    base = rows["1 process"]["rollouts_per_second"]
    inline = rows["inline (LocalExecutor(1))"]["rollouts_per_second"]
    for row in rows.values():
        row["speedup_vs_1_process"] = row["rollouts_per_second"] / base
        row["speedup_vs_inline"] = row["rollouts_per_second"] / inline
    speedup = rows["2 processes"]["speedup_vs_1_process"]

    print(
        f"Toy24, OraclePolicy(skill={SKILL}), max_steps={MAX_STEPS}: {args.episodes} episodes "
        f"over {N_TASKS} tasks, median of {args.repeats} batches on a warm executor"
    )
    header = (
        f"{'executor':<27}{'rollouts/s':>11}{'(min-max)':>14}{'vs 1 proc':>10}"
        f"{'vs inline':>10}{'start-up s':>11}{'parent ms/ep':>13}"
    )
    print(header)
    print("-" * len(header))
    for name, row in rows.items():
        spread = f"{row['rollouts_per_second_min']:.0f}-{row['rollouts_per_second_max']:.0f}"
        print(
            f"{name:<27}{row['rollouts_per_second']:>11.0f}{spread:>14}"
            f"{row['speedup_vs_1_process']:>9.2f}x{row['speedup_vs_inline']:>9.2f}x"
            f"{row['startup_seconds']:>11.2f}"
            f"{row['parent_cpu_ms_per_episode']:>13.3f}"
        )
    for note in notes.values():
        print(f"Ray: {note}")
    print(
        f"hardware ceiling (same episodes, 2 independent processes vs 1, no messaging): "
        f"{ceiling['speedup_2_over_1']:.2f}x (min {ceiling['min']:.2f}, max {ceiling['max']:.2f})"
    )
    verdict = "met" if speedup >= TARGET else "NOT met"
    print(f"target: 2 processes >= {TARGET}x 1 process: {speedup:.2f}x, {verdict}")

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "benchmark": "rollout_throughput",
        "bridge": "toy24",
        "policy": f"oracle:{SKILL}",
        "max_steps": MAX_STEPS,
        "tasks": N_TASKS,
        "episodes": args.episodes,
        "repeats": args.repeats,
        "machine": {
            "python": platform.python_version(),
            "kernel": platform.release(),
            "cpus": os.cpu_count(),
            "process_start_method": "forkserver",
        },
        "executors": rows,
        "hardware_ceiling": ceiling,
        "notes": notes,
        "target": {
            "speedup_2_over_1_process": TARGET,
            "measured": speedup,
            "met": speedup >= TARGET,
        },
    }
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
