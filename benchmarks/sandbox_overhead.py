"""Overhead of the rules sandbox: template start, episode start, hook round trips, timeouts.

Run: ``python benchmarks/sandbox_overhead.py [--calls N] [--episodes N] [--json PATH]``. Prints a
table and writes ``benchmarks/results/sandbox_overhead.json`` (or ``--json PATH``; ``-`` writes
nothing). The identity hooks do not read ``state``, so it is not sent to them; one more row times
a hook that reads a state that changes every call.
Round trips are measured three ways: as the sandbox runs them (the child pinned to the calling
thread's CPU and re-pinned when it moves, the host yielding its CPU while it waits, see
``envharness.sandbox.affinity``), with ``SandboxLimits(follow_host_cpu=False)`` (the scheduler
places host and child; on a small VM they often land on different vCPUs, so every hand-over
wakes an idle vCPU through the hypervisor), and with the whole process tree pinned to one CPU.
A raw ``os.pipe`` echo between two processes is measured beside them, as the floor of this
machine: placed by the scheduler, with the child following the host's CPU, and pinned.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import select
import statistics
import time
from pathlib import Path
from typing import Any

from envharness.errors import RulesError
from envharness.sandbox import RulesSandbox, SandboxLimits, affinity, kernel_protections, template

RESULTS = Path(__file__).resolve().parent / "results" / "sandbox_overhead.json"

SMALL_RULES = """
class _Rules:
    def filter_action(self, action, state):
        return action

    def modify_transition(self, action, observation, state):
        return observation

    def filter_observation(self, observation, state):
        return observation
"""
READS_STATE = """
class _Rules:
    def filter_observation(self, observation, state):
        return observation if state["step"] >= 0 else ""
"""
HANG = """
class _Rules:
    def filter_observation(self, observation, state):
        while True:
            pass
"""
ACTION = {"tool": "move", "args": {"to": "north"}}
STATE = {"room": "hall", "step": 3, "inventory": ["lamp", "key"]}


def summary(seconds: list[float], unit: float) -> dict[str, float]:
    ordered = sorted(seconds)
    return {
        "median": statistics.median(ordered) * unit,
        "p90": ordered[int(len(ordered) * 0.90)] * unit,
        "p99": ordered[min(int(len(ordered) * 0.99), len(ordered) - 1)] * unit,
        "n": len(ordered),
    }


def time_template_start(repeats: int) -> dict[str, float]:
    samples = []
    for _ in range(repeats):
        template.shutdown()
        started = time.perf_counter()
        template.get_template().hello  # noqa: B018 - waits for the template's hello
        samples.append(time.perf_counter() - started)
    return summary(samples, 1e3)


def time_episode_start(episodes: int) -> dict[str, float]:
    sandbox = RulesSandbox(SMALL_RULES)
    sandbox.start_episode().close()
    samples = []
    for seed in range(episodes):
        started = time.perf_counter()
        session = sandbox.start_episode(seed)
        samples.append(time.perf_counter() - started)
        session.close()
    return summary(samples, 1e3)


def time_round_trips(
    calls: int, limits: SandboxLimits | None = None
) -> dict[str, dict[str, float]]:
    results = {}
    with RulesSandbox(SMALL_RULES, limits=limits).start_episode() as session:
        hooks = {
            "filter_action": lambda: session.filter_action(ACTION, STATE),
            "after_step": lambda: session.after_step(ACTION, "You walk north.", STATE),
            "filter_observation": lambda: session.filter_observation("You walk north.", STATE),
        }
        for name, hook in hooks.items():
            for _ in range(200):
                hook()
            samples = []
            for _ in range(calls):
                started = time.perf_counter()
                hook()
                samples.append(time.perf_counter() - started)
            results[name] = summary(samples, 1e6)
    with RulesSandbox(READS_STATE, limits=limits).start_episode() as session:
        states = [dict(STATE, step=i) for i in range(2)]  # a state that changes every call
        for i in range(200 + calls):
            started = time.perf_counter()
            session.filter_observation("You walk north.", states[i % 2])
            if i == 200:
                samples = []
            if i >= 200:
                samples.append(time.perf_counter() - started)
        results["filter_observation (reads a changing state)"] = summary(samples, 1e6)
    return results


def time_raw_echo(calls: int, follow: bool = False) -> dict[str, float]:
    """Two processes, two pipes, a 100-byte message, the host waiting with poll: the floor.

    With ``follow``, the child is pinned to the host's CPU before each call where it moved.
    """
    getcpu = affinity.cpu_reader() if follow else None
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the echo child
        os.close(req_w)
        os.close(rep_r)
        while data := os.read(req_r, 65536):
            os.write(rep_w, data)
        os._exit(0)
    os.close(req_r)
    os.close(rep_w)
    poller = select.poll()
    poller.register(rep_r, select.POLLIN)
    message = json.dumps({"op": "filter_action", "args": [ACTION, STATE]}).encode()
    samples = []
    pinned = -1
    for _ in range(calls):
        started = time.perf_counter()
        if getcpu is not None and getcpu() != pinned:
            pinned = getcpu()
            os.sched_setaffinity(pid, (pinned,))
        os.write(req_w, message)
        poller.poll(1000)
        os.read(rep_r, 65536)
        samples.append(time.perf_counter() - started)
    os.close(req_w)
    os.close(rep_r)
    os.waitpid(pid, 0)
    return summary(samples, 1e6)


def time_timeout_detection(repeats: int) -> dict[str, Any]:
    timeout = 0.1
    sandbox = RulesSandbox(HANG, limits=SandboxLimits(call_timeout=timeout), _unchecked=True)
    overshoot, respawn = [], []
    for _ in range(repeats):
        session = sandbox.start_episode()
        started = time.perf_counter()
        try:
            session.filter_observation("", {})
        except RulesError:
            overshoot.append(time.perf_counter() - started - timeout)
        started = time.perf_counter()
        sandbox.start_episode().close()
        respawn.append(time.perf_counter() - started)
    return {
        "timeout_s": timeout,
        "overshoot_ms": summary(overshoot, 1e3),
        "respawn_ms": summary(respawn, 1e3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--json", default=str(RESULTS), help="where to write results; - for none")
    args = parser.parse_args()

    report: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "kernel": platform.release(),
            "cpus": os.cpu_count(),
        },
        "kernel_protections": kernel_protections(),
        "template_start_ms": time_template_start(5),
        "episode_start_ms": time_episode_start(args.episodes),
        "round_trip_us": time_round_trips(args.calls),
        "scheduler_placed_round_trip_us": time_round_trips(
            args.calls, SandboxLimits(follow_host_cpu=False)
        ),
        "raw_pipe_echo_us": time_raw_echo(args.calls),
        "raw_pipe_echo_following_us": time_raw_echo(args.calls, follow=True),
        "timeout": time_timeout_detection(10),
    }
    cpus = os.sched_getaffinity(0)
    if len(cpus) > 1:
        os.sched_setaffinity(0, {min(cpus)})
        template.shutdown()  # the next template and its children inherit the pinning
        try:
            report["pinned_one_cpu"] = {
                "round_trip_us": time_round_trips(args.calls),
                "raw_pipe_echo_us": time_raw_echo(args.calls),
            }
        finally:
            os.sched_setaffinity(0, cpus)
            template.shutdown()

    rows = [
        ("template start (once per host)", "ms", report["template_start_ms"]),
        ("episode start (fork + lock down + load)", "ms", report["episode_start_ms"]),
        *[(f"round trip: {k}", "µs", v) for k, v in report["round_trip_us"].items()],
        *[
            (f"no CPU follow: round trip {k}", "µs", v)
            for k, v in report["scheduler_placed_round_trip_us"].items()
        ],
        ("raw os.pipe echo (floor)", "µs", report["raw_pipe_echo_us"]),
        (
            "raw os.pipe echo, child following the host's CPU",
            "µs",
            report["raw_pipe_echo_following_us"],
        ),
        ("timeout overshoot (0.1 s timeout)", "ms", report["timeout"]["overshoot_ms"]),
        ("start after a timeout kill", "ms", report["timeout"]["respawn_ms"]),
    ]
    if "pinned_one_cpu" in report:
        pinned = report["pinned_one_cpu"]
        rows += [(f"pinned: round trip {k}", "µs", v) for k, v in pinned["round_trip_us"].items()]
        rows.append(("pinned: raw os.pipe echo", "µs", pinned["raw_pipe_echo_us"]))
    print(f"{'measure':70} {'unit':>4} {'median':>9} {'p90':>9} {'p99':>9} {'n':>6}")
    for name, unit, stats in rows:
        print(
            f"{name:70} {unit:>4} {stats['median']:9.2f} {stats['p90']:9.2f} "
            f"{stats['p99']:9.2f} {stats['n']:6d}"
        )
    print("kernel protections:", json.dumps(report["kernel_protections"]))
    if args.json != "-":
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
