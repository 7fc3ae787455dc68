"""Rollouts per second per executor, and the executor's parallel efficiency on this machine.

Run: ``python benchmarks/rollout_throughput.py [--bridges toy24,textworld] [--repeats 5]
[--no-ray]``. Prints a table per bridge and writes ``benchmarks/results/rollout_throughput.json``.

Cases: Toy24 (OraclePolicy skill 0.5, 12-step budget, 1,600 episodes over 20 train tasks; an
episode costs about a millisecond, so the fixed costs around one matter) and TextWorld (the same
policy, 30-step budget, 80 episodes over 10 train tasks; an episode costs ~0.1 s of CPU in the
game engine). Each executor first runs a warm-up batch of as many episodes as the timed one (other
seeds) on a fresh executor: it pays for starting the pool (or Ray) and fills every worker's
caches (TextWorld's compiled games). The start-up cost is reported as the warm-up time minus what
its episodes take at the steady rate. Then the timed requests (round robin over the tasks,
consecutive seeds) run ``--repeats`` times on the warm executor; the median rate is reported,
with the parent's CPU time per episode (receiving and parsing trajectories).

What the machine can do is measured in the same run, because on these VMs two CPU-bound
processes do not run twice as fast as one:

- "machine 2-process speed-up": two plain Python busy loops in two processes against one loop in
  one, ``2 * t(one) / t(two at once)``, measured before and after the executors (median of all);
- "same episodes, no executor": the bridge's own episodes in 2 independent processes vs 1, no
  messaging (what the bridge's work itself allows, caches and memory traffic included).

The executor's **parallel efficiency** = (2-process speed-up over 1 process) ÷ (the machine's
2-process speed-up), measured in interleaved rounds (1-process batch, 2-process batch, busy loops,
back to back on warm pools) and reported as the median of the rounds, because this VM's capacity
drifts within minutes. Target (issue 16): >= 0.9.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envharness import list_tasks
from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.rollout.batch import RolloutRequest, run_batch
from envharness.rollout.executors import Executor, LocalExecutor
from envharness.rollout.jobs import WorkerJob, run_worker_job
from envharness.rollout.policies import OraclePolicyFactory

RESULTS = Path(__file__).parent / "results" / "rollout_throughput.json"
SKILL = 0.5
FACTORY = OraclePolicyFactory(SKILL)
TARGET_EFFICIENCY = 0.9
BUSY_LOOP_ITERATIONS = 6_000_000  # ~0.3 s of one CPU


@dataclass(frozen=True)
class Case:
    """One bridge's workload: ``episodes`` over its first ``tasks`` train tasks."""

    bridge: str
    tasks: int
    max_steps: int
    episodes: int

    def requests(self, first_seed: int = 0) -> list[RolloutRequest]:
        """The requests, round robin over the tasks, consecutive seeds from ``first_seed``."""
        ids = list_tasks(self.bridge, split="train")[: self.tasks]
        specs = [HarnessSpec(BridgeSpec(self.bridge, task)) for task in ids]
        return [
            RolloutRequest(specs[i % len(specs)], first_seed + i // len(specs), self.max_steps)
            for i in range(self.episodes)
        ]


CASES = {
    "toy24": Case("toy24", tasks=20, max_steps=12, episodes=1600),
    "textworld": Case("textworld", tasks=10, max_steps=30, episodes=80),
}


def measure(case: Case, make: Callable[[], Executor], repeats: int) -> dict[str, Any]:
    """A warm-up batch on a fresh executor, then ``repeats`` timed batches on the warm one."""
    requests = case.requests()
    warmup = case.requests(first_seed=1_000_000)
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
    run_worker_job(WorkerJob(tuple(requests), FACTORY, f"oracle:{SKILL}"))
    return time.perf_counter() - start


def _busy_loop(iterations: int) -> float:
    """Spins a plain Python loop; returns the seconds it took."""
    start = time.perf_counter()
    total = 0
    for i in range(iterations):
        total += i & 7
    return time.perf_counter() - start


def _two_process_speedup(pool: Any, work: Callable[[Any], float], arg: Any, parts: tuple) -> float:
    """``t(one process does arg) / t(two processes do the parts at once)``."""
    one = pool.apply(work, (arg,))
    two = pool.map(work, list(parts))
    return one / max(two)


def paired_efficiency(case: Case, rounds: int) -> dict[str, Any]:
    """1 vs 2 worker processes and the machine's busy loops, interleaved round by round.

    This VM's capacity drifts by tens of percent within minutes, so the three timings of each
    round are taken back to back on warm pools (idle pools use no CPU), and the efficiency is the
    median of the per-round ratios rather than a ratio of medians taken minutes apart.
    """
    requests = case.requests()
    warmup = case.requests(first_seed=1_000_000)
    context = multiprocessing.get_context("forkserver")
    one, two = LocalExecutor(1, "process"), LocalExecutor(2, "process")
    speedups, machines, efficiencies = [], [], []
    try:
        with context.Pool(2) as pool:
            pool.map(_busy_loop, [1000, 1000])
            for executor in (one, two):
                run_batch(warmup, FACTORY, executor=executor)
            for _ in range(rounds):
                timings = []
                for executor in (one, two):
                    start = time.perf_counter()
                    run_batch(requests, FACTORY, executor=executor)
                    timings.append(time.perf_counter() - start)
                speedup = timings[0] / timings[1]
                loops = (BUSY_LOOP_ITERATIONS, BUSY_LOOP_ITERATIONS)
                machine = _two_process_speedup(pool, _busy_loop, 2 * BUSY_LOOP_ITERATIONS, loops)
                speedups.append(speedup)
                machines.append(machine)
                efficiencies.append(speedup / machine)
    finally:
        one.close()
        two.close()
    return {
        "rounds": rounds,
        "executor_speedup": statistics.median(speedups),
        "machine_speedup": statistics.median(machines),
        "parallel_efficiency": statistics.median(efficiencies),
        "parallel_efficiency_min": min(efficiencies),
        "parallel_efficiency_max": max(efficiencies),
        "per_round": [
            {"executor_speedup": a, "machine_speedup": b, "efficiency": c}
            for a, b, c in zip(speedups, machines, efficiencies, strict=True)
        ],
    }


def machine_speedup(repeats: int) -> list[float]:
    """The speed-up of two busy loops in two processes over the same work in one."""
    context = multiprocessing.get_context("forkserver")
    half = BUSY_LOOP_ITERATIONS
    with context.Pool(2) as pool:
        pool.map(_busy_loop, [half // 10, half // 10])  # start both workers
        return [
            _two_process_speedup(pool, _busy_loop, 2 * half, (half, half)) for _ in range(repeats)
        ]


def episodes_ceiling(case: Case, repeats: int) -> dict[str, Any]:
    """The speed-up of 2 independent processes over 1 on the case's episodes, no messaging."""
    requests = case.requests()
    context = multiprocessing.get_context("forkserver")
    with context.Pool(2) as pool:
        warm = case.requests(first_seed=1_000_000)
        pool.map(_timed_play, [warm, warm])  # imports and caches in both processes
        ratios = [
            _two_process_speedup(pool, _timed_play, requests, (requests[0::2], requests[1::2]))
            for _ in range(repeats)
        ]
    return {"speedup_2_over_1": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}


def _ray_executor() -> Executor:
    from envharness.rollout.ray_executor import RayExecutor

    return RayExecutor(num_cpus=2)


def executors_for(case: Case, ray: bool) -> dict[str, Callable[[], Executor]]:
    """The executors timed on ``case`` (chunking and threads only where episodes are cheap)."""
    executors: dict[str, Callable[[], Executor]] = {
        "inline (LocalExecutor(1))": lambda: LocalExecutor(1),
        "1 process": lambda: LocalExecutor(1, "process"),
        "2 processes": lambda: LocalExecutor(2, "process"),
    }
    if case.bridge == "toy24":
        executors["2 processes, chunksize=1"] = lambda: LocalExecutor(2, "process", chunksize=1)
        executors["2 threads"] = lambda: LocalExecutor(2, "thread")
        if ray:
            executors["Ray (2 CPUs)"] = _ray_executor
    return executors


def run_case(case: Case, repeats: int, ray: bool) -> dict[str, Any]:
    """Every executor on ``case``, the same-episodes ceiling, and the speed-ups."""
    rows = {name: measure(case, make, repeats) for name, make in executors_for(case, ray).items()}
    base = rows["1 process"]["rollouts_per_second"]
    inline = rows["inline (LocalExecutor(1))"]["rollouts_per_second"]
    for row in rows.values():
        row["speedup_vs_1_process"] = row["rollouts_per_second"] / base
        row["speedup_vs_inline"] = row["rollouts_per_second"] / inline
    return {
        "policy": f"oracle:{SKILL}",
        "max_steps": case.max_steps,
        "tasks": case.tasks,
        "episodes": case.episodes,
        "executors": rows,
        "same_episodes_no_executor": episodes_ceiling(case, repeats),
        "paired": paired_efficiency(case, max(repeats, 5)),
    }


def print_case(case: Case, result: dict[str, Any], repeats: int) -> None:
    """The case's table, its ceilings and its parallel efficiency."""
    print(
        f"\n{case.bridge}, OraclePolicy(skill={SKILL}), max_steps={case.max_steps}: "
        f"{case.episodes} episodes over {case.tasks} tasks, median of {repeats} batches on a "
        "warm executor"
    )
    header = (
        f"{'executor':<27}{'rollouts/s':>11}{'(min-max)':>16}{'vs 1 proc':>10}"
        f"{'vs inline':>10}{'start-up s':>11}{'parent ms/ep':>13}"
    )
    print(header)
    print("-" * len(header))
    for name, row in result["executors"].items():
        spread = f"{row['rollouts_per_second_min']:.1f}-{row['rollouts_per_second_max']:.1f}"
        print(
            f"{name:<27}{row['rollouts_per_second']:>11.1f}{spread:>16}"
            f"{row['speedup_vs_1_process']:>9.2f}x{row['speedup_vs_inline']:>9.2f}x"
            f"{row['startup_seconds']:>11.2f}{row['parent_cpu_ms_per_episode']:>13.3f}"
        )
    ceiling = result["same_episodes_no_executor"]
    print(
        f"same episodes in 2 independent processes vs 1 (no executor): "
        f"{ceiling['speedup_2_over_1']:.2f}x (min {ceiling['min']:.2f}, max {ceiling['max']:.2f})"
    )
    paired = result["paired"]
    efficiency = paired["parallel_efficiency"]
    verdict = "met" if efficiency >= TARGET_EFFICIENCY else "NOT met"
    print(
        f"parallel efficiency, {paired['rounds']} interleaved rounds (1 process, 2 processes, "
        f"busy loops): 2-process speed-up {paired['executor_speedup']:.2f}x / machine "
        f"{paired['machine_speedup']:.2f}x -> median {efficiency:.2f} (min "
        f"{paired['parallel_efficiency_min']:.2f}, max {paired['parallel_efficiency_max']:.2f}); "
        f"target >= {TARGET_EFFICIENCY}: {verdict}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bridges", default="toy24,textworld", help="comma-separated cases")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray executor")
    args = parser.parse_args()
    unknown = [name for name in args.bridges.split(",") if name not in CASES]
    if unknown or args.repeats < 1:
        parser.error(f"--bridges takes {', '.join(CASES)}; --repeats >= 1 (got {args.bridges})")

    notes: dict[str, str] = {}
    ray = not args.no_ray
    if args.no_ray:
        notes["ray"] = "skipped (--no-ray)"
    else:
        try:
            import ray as _  # noqa: F401
        except ImportError:
            ray = False
            notes["ray"] = "skipped: ray is not installed (pip install 'envharness[ray]')"

    machine_runs = machine_speedup(args.repeats)
    cases = [CASES[name] for name in args.bridges.split(",")]
    results = {case.bridge: run_case(case, args.repeats, ray) for case in cases}
    machine_runs += machine_speedup(args.repeats)
    machine = statistics.median(machine_runs)
    for case in cases:
        print_case(case, results[case.bridge], args.repeats)
    print(
        f"\nmachine 2-process speed-up (two busy loops vs one, before and after the tables): "
        f"{machine:.2f}x (min {min(machine_runs):.2f}, max {max(machine_runs):.2f})"
    )
    for note in notes.values():
        print(f"Ray: {note}")

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "benchmark": "rollout_throughput",
        "repeats": args.repeats,
        "machine": {
            "python": platform.python_version(),
            "kernel": platform.release(),
            "cpus": os.cpu_count(),
            "process_start_method": "forkserver",
            "two_process_speedup": machine,
            "two_process_speedup_runs": machine_runs,
        },
        "cases": results,
        "notes": notes,
        "target": {
            "parallel_efficiency": TARGET_EFFICIENCY,
            "measured": {b: r["paired"]["parallel_efficiency"] for b, r in results.items()},
        },
    }
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
