"""Per-step cost of harness components over the bare Toy24 bridge, and sandbox start per episode.

Run: ``python benchmarks/harness_overhead.py [--steps 20000] [--episodes 200] [--json PATH]``.
Prints a table and writes ``benchmarks/results/harness_overhead.json`` (or ``--json PATH``; ``-``
writes nothing). The stacks are stepped side by side: every round times a block of steps of each
stack in turn, so a machine whose speed drifts (a shared VM) slows them all alike, and each
stack's overhead is its median step time minus the bare bridge's. Targets (issue #16, item 4):
Rules with three identity hooks adds ≤ 40 µs per step (median), with one hook ≤ 25 µs; a
non-Rules layer ≤ 5 µs; episode start ≤ 10 ms with every protection on. One more row runs the
three hooks with ``SandboxLimits(follow_host_cpu=False)``, the scheduler placing the sandbox child
(see ``envharness.sandbox.affinity``), to show what following the host's CPU is worth here.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from envharness import Action, ActionableEnv, load_bridge
from envharness.harness import EnvHarness, Link, Rules, Setups
from envharness.sandbox import SandboxLimits, kernel_protections

TASK = "4-4-10-10"
RESULTS = Path(__file__).parent / "results" / "harness_overhead.json"

IDENTITY_RULES = """
class _Rules:
    def filter_action(self, action, state):
        return action

    def filter_observation(self, observation, state):
        return observation
"""

ONE_HOOK_RULES = """
class _Rules:
    def filter_action(self, action, state):
        return action
"""

THREE_HOOK_RULES = """
class _Rules:
    def filter_action(self, action, state):
        return action

    def modify_transition(self, action, observation, state):
        return observation

    def filter_observation(self, observation, state):
        return observation
"""

BLOCKING_RULES = """
class _Rules:
    def __init__(self):
        self.seen = 0

    def filter_action(self, action, state):
        self.seen += 1
        if action["tool"] == "combine" and action["args"]["op"] == "-":
            return "Subtraction is not allowed."
        return action

    def modify_transition(self, action, observation, state):
        return observation + " (" + str(len(state["numbers"])) + " numbers left)"
"""

CYCLE = [Action("combine", {"a": "10", "op": "*", "b": "10"}), Action("undo", {})]


def _toy() -> ActionableEnv:
    return load_bridge("toy24", task_id=TASK)


STACKS: dict[str, Callable[[], ActionableEnv]] = {
    "bare Toy24": _toy,
    "EnvHarness (pass-through)": lambda: EnvHarness(_toy()),
    "Setups(1 action)": lambda: Setups(
        _toy(), [Action("combine", {"a": "4", "op": "+", "b": "4"})]
    ),
    "Link(sequential)": lambda: Link(_toy(), _toy()),
    "Rules(identity: 1 hook)": lambda: Rules(_toy(), ONE_HOOK_RULES),
    "Rules(identity: 2 hooks)": lambda: Rules(_toy(), IDENTITY_RULES),
    "Rules(identity: 3 hooks)": lambda: Rules(_toy(), THREE_HOOK_RULES),
    "Rules(block + rewrite)": lambda: Rules(_toy(), BLOCKING_RULES),
    "Rules(3 hooks, no CPU follow)": lambda: Rules(
        _toy(), THREE_HOOK_RULES, limits=SandboxLimits(follow_host_cpu=False)
    ),
}
TARGETS_US = {"Rules(identity: 3 hooks)": 40.0, "Rules(identity: 1 hook)": 25.0}
BLOCK = 50  # steps of one stack timed in a row before the next stack's turn


def _quantiles(samples_ns: list[int]) -> dict[str, float]:
    ordered = sorted(samples_ns)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {
        "median_us": statistics.median(ordered) / 1000,
        "p99_us": p99 / 1000,
        "mean_us": statistics.fmean(ordered) / 1000,
    }


def measure_steps(stacks: dict[str, Callable[[], ActionableEnv]], steps: int) -> dict[str, dict]:
    """Times ``steps`` agent steps of every stack, interleaved in blocks of :data:`BLOCK`.

    The steps are a combine/undo cycle that never ends the episode.
    """
    envs = {name: make() for name, make in stacks.items()}
    samples: dict[str, list[int]] = {name: [] for name in envs}
    clock = time.perf_counter_ns
    try:
        for env in envs.values():
            env.reset(seed=0)
            for action in CYCLE * 100:  # warm-up
                env.step(action)
        for _ in range(max(1, steps // BLOCK)):
            for name, env in envs.items():
                out = samples[name]
                step = env.step
                for i in range(BLOCK):
                    action = CYCLE[i % 2]
                    start = clock()
                    step(action)
                    out.append(clock() - start)
    finally:
        for env in envs.values():
            env.close()
    return {name: _quantiles(values) for name, values in samples.items()}


def measure_episode_start(episodes: int) -> dict[str, float]:
    """Times ``reset`` of a Rules stack (a fresh sandbox child per episode) minus the bare reset."""
    bare, ruled = _toy(), Rules(_toy(), IDENTITY_RULES)
    try:
        ruled.reset(seed=0)  # starts the sandbox template once
        samples, bare_samples = [], []
        for i in range(episodes):
            start = time.perf_counter_ns()
            ruled.reset(seed=i)
            samples.append(time.perf_counter_ns() - start)
            start = time.perf_counter_ns()
            bare.reset(seed=i)
            bare_samples.append(time.perf_counter_ns() - start)
    finally:
        ruled.close()
        bare.close()
    result = _quantiles(samples)
    result["bare_reset_median_us"] = statistics.median(bare_samples) / 1000
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--json", default=str(RESULTS), help="where to write results; - for none")
    args = parser.parse_args()

    rows = measure_steps(STACKS, args.steps)
    base = rows["bare Toy24"]["median_us"]
    for row in rows.values():
        row["overhead_median_us"] = row["median_us"] - base
    start = measure_episode_start(args.episodes)

    print(f"per-step time over {args.steps:,} steps ({TASK}, combine/undo cycle)")
    print(f"{'stack':<31}{'median µs':>11}{'p99 µs':>10}{'overhead µs':>13}")
    for name, row in rows.items():
        print(
            f"{name:<31}{row['median_us']:>11.2f}{row['p99_us']:>10.2f}"
            f"{row['overhead_median_us']:>13.2f}"
        )
    for name, target in TARGETS_US.items():
        added = rows[name]["overhead_median_us"]
        verdict = "met" if added <= target else "NOT met"
        print(f"target: {name} adds {added:.1f} µs per step (≤ {target:g} µs): {verdict}")
    print(
        f"\nRules episode start (reset incl. sandbox child), {args.episodes} episodes: "
        f"median {start['median_us'] / 1000:.2f} ms, p99 {start['p99_us'] / 1000:.2f} ms "
        f"(bare reset {start['bare_reset_median_us']:.1f} µs)"
    )
    protections = kernel_protections()
    print(f"kernel protections: {protections}")

    report = {
        "benchmark": "harness_overhead",
        "task": TASK,
        "steps": args.steps,
        "episodes": args.episodes,
        "machine": {"python": platform.python_version(), "kernel": platform.release()},
        "per_step": rows,
        "rules_episode_start": start,
        "kernel_protections": protections,
        "targets": {
            "rules_3_hooks_overhead_median_us": 40,
            "rules_1_hook_overhead_median_us": 25,
            "layer_overhead_median_us": 5,
            "episode_start_median_ms": 10,
        },
    }
    if args.json != "-":
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
