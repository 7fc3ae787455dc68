"""What one episode step costs on each bridge: reset and step time, and memory per env.

Run: ``python benchmarks/bridge_costs.py [--steps 300] [--resets 30]``. Prints a table and writes
``benchmarks/results/bridge_costs.json``. Steps are random schema-valid actions (a
``RandomPolicy``), with a reset whenever an episode ends, so the figures tell what K rollouts will
cost on each bridge; the harness overhead (``harness_overhead.py``) should stay small next to them.
Bridges whose optional package is missing are skipped and listed.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
import tracemalloc
from pathlib import Path
from typing import Any

from envharness import DependencyNotInstalled, load_bridge
from envharness.rollout import RandomPolicy

RESULTS = Path(__file__).parent / "results" / "bridge_costs.json"

TASKS: list[tuple[str, str, dict[str, Any]]] = [
    ("toy24", "4-4-10-10", {}),
    ("gymnasium", "FrozenLake-v1", {"env_kwargs": {"is_slippery": False}}),
    ("gymnasium", "CliffWalking-v1", {}),
    ("gymnasium", "Taxi-v4", {}),
    ("gymnasium", "Blackjack-v1", {}),
    ("textworld", "tw-s5-o10-q5-seed42", {}),
    ("docqa", "ar23-employees", {}),
    ("docqa", "cross-ws400-revenue-2023", {}),
]


def _median_us(samples: list[int]) -> float:
    return statistics.median(samples) / 1000


def measure(bridge: str, task_id: str, options: dict[str, Any], steps: int, resets: int) -> dict:
    """Times construction, resets and random steps of one task; measures the env's memory."""
    started = time.perf_counter()
    first = load_bridge(bridge, task_id=task_id, **options)  # imports, task lists, game files
    first.reset(seed=0)
    first.close()
    build_ms = (time.perf_counter() - started) * 1000
    tracemalloc.start()
    env = load_bridge(bridge, task_id=task_id, **options)
    observation, _ = env.reset(seed=0)
    memory_kib = tracemalloc.get_traced_memory()[0] / 1024
    tracemalloc.stop()
    try:
        reset_ns = []
        for seed in range(resets):
            t = time.perf_counter_ns()
            env.reset(seed=seed)
            reset_ns.append(time.perf_counter_ns() - t)
        policy = RandomPolicy(0)
        policy.start(env.instruction, env.tools())
        observation, _ = env.reset(seed=0)
        step_ns = []
        for _ in range(steps):
            action = policy.act(observation)
            t = time.perf_counter_ns()
            result = env.step(action)
            step_ns.append(time.perf_counter_ns() - t)
            observation = result.observation
            if result.terminated or result.truncated:
                observation, _ = env.reset(seed=len(step_ns))
    finally:
        env.close()
    return {
        "bridge": bridge,
        "task_id": task_id,
        "first_build_and_reset_ms": build_ms,
        "reset_median_us": _median_us(reset_ns),
        "step_median_us": _median_us(step_ns),
        "step_p90_us": sorted(step_ns)[int(len(step_ns) * 0.9)] / 1000,
        "memory_kib": memory_kib,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--resets", type=int, default=30)
    args = parser.parse_args()
    rows, skipped = [], []
    for bridge, task_id, options in TASKS:
        try:
            rows.append(measure(bridge, task_id, options, args.steps, args.resets))
        except DependencyNotInstalled as e:
            skipped.append(f"{bridge}: {e}")
    print(
        f"{'bridge':<11}{'task':<24}{'first use ms':>15}{'reset µs':>11}{'step µs':>10}"
        f"{'step p90 µs':>13}{'memory KiB':>12}"
    )
    for r in rows:
        print(
            f"{r['bridge']:<11}{r['task_id']:<24}{r['first_build_and_reset_ms']:>15.1f}"
            f"{r['reset_median_us']:>11.1f}{r['step_median_us']:>10.1f}{r['step_p90_us']:>13.1f}"
            f"{r['memory_kib']:>12.0f}"
        )
    for line in skipped:
        print(f"skipped {line}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "benchmark": "bridge_costs",
        "machine": {"python": platform.python_version(), "kernel": platform.release()},
        "steps": args.steps,
        "resets": args.resets,
        "rows": rows,
        "skipped": skipped,
        "note": (
            "first_build_and_reset_ms includes imports, task lists and generating a TextWorld "
            "game the first time it is used; memory_kib is what a second env allocates"
        ),
    }
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
