"""EnvRigger at concurrency 1, 4 and 8: 16 Toy24 tasks, fake models that sleep 200 ms per call.

Run: ``python benchmarks/rigger_concurrency.py [--quick] [--sleep 0.2] [--repeats 3]``.
Prints a table and writes ``benchmarks/results/rigger_concurrency.json`` (``--quick``: 8 tasks,
one run per setting, nothing written unless ``--out`` is given). About 2.5 minutes on 2 CPUs.

Each run rigs the first 16 Toy24 train tasks with ``rig()`` (SQLite checkpointer, inline
rollouts, a fresh temporary run directory) for ``OraclePolicy(0.5)`` with K=5 baseline and K=5
validation rollouts and at most 5 iterations, objective ``sr:0.4-0.6`` (``--objective``). The
diagnoser and designer are :class:`SleepingModel` objects, a ``FakeToolCallingModel`` that
sleeps ``--sleep`` seconds per call, like a remote model, and then computes its reply from the
messages it was sent:

- the diagnoser reads the baseline success count from its prompt and reports ``harden`` above
  the band (``scaffold`` below it, ``none`` inside it) through ``report_diagnosis``;
- the designer (:class:`BisectingDesigner`) spends two calls per candidate: ``check_rules`` on a
  Rules component that drops each action with probability ``p`` (``dry_run_setups`` on an oracle
  head start when scaffolding), then ``submit_candidate``. It starts small (``p = 0.25``) and
  bisects ``p`` on the validator's feedback ("too easy" / "too hard" / "unsolvable"). The
  rigger's designer prompt carries only the last verdict, not the candidate it judged, so the
  designer keeps its bracket per task (keyed by the task id in the prompt, behind a lock):
  every task's thread has its own script state, never a shared list of replies.

Reported per concurrency: wall time, tasks accepted, rollouts and model calls spent per accepted
harness (totals over all tasks divided by the accepted count, so a rejected task's spending is
charged to the accepted ones), the speed-up over concurrency 1 and the ratio to the ideal (serial
time / concurrency). Targets (issue #4): concurrency 8 within 1.25x of the ideal; fewer than 30
rollouts per accepted harness (the paper's worst case: 5 baseline + 5 iterations x 5).

Each setting runs ``--repeats`` times, interleaved with the others, and the fastest run is kept:
the machine may be shared, and outside load only ever slows a run down. Cores busy are given for
this process with its children (the rules sandbox) and for the whole machine, to show it.

Why concurrency 8 is not 8x: the work besides the model waits (rollouts, the rules sandbox's
per-episode processes, the designer's tools, LangGraph, SQLite and trajectory files) shares 2
CPUs and one GIL, so it does not shrink with concurrency; it is measured inside the serial run
(node and ``run_rollouts`` timers, restored afterwards) and by the same rig with the sleep set to
0. And 16 tasks of unequal length on 8 workers cannot all finish together: the bounds printed are
the longest task and the makespan of the serial per-task times dealt in order to the workers,
which is what ``rig``'s thread pool does.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import heapq
import json
import os
import platform
import re
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr

import envharness
from envharness.graph import RiggerContext
from envharness.graph import rigger as rigger_module
from envharness.graph.heuristic.diagnose import HARDEN_ABOVE, SCAFFOLD_BELOW
from envharness.graph.nodes import _common as rigger_common
from envharness.graph.run import rig
from envharness.testing import FakeToolCallingModel

RESULTS = Path(__file__).parent / "results" / "rigger_concurrency.json"
BRIDGE = "toy24"
POLICY = "oracle:0.5"
OBJECTIVE = "sr:0.4-0.6"
K_OBSERVE = K_VALIDATE = MAX_ITERATIONS = 5
PAPER_WORST_ROLLOUTS = K_OBSERVE + MAX_ITERATIONS * K_VALIDATE  # 30
TARGET_RATIO = 1.25
P_START, P_MAX = 0.25, 0.9
DROP_RULES = '''import random


class _Rules:
    """Each action fails with probability {p}: it is not carried out and the agent is told so."""

    def __init__(self):
        self.rng = None

    def filter_action(self, action, state):
        if self.rng is None:
            self.rng = random.Random(random.getrandbits(32))
        if self.rng.random() < {p}:
            return "That action failed this time and was not carried out; try again."
        return action
'''


# -- the sleeping fake models ----------------------------------------------------------------


class SleepingModel(FakeToolCallingModel):
    """A ``FakeToolCallingModel`` that sleeps per call and computes each reply from the messages.

    ``reply(messages)`` returns any reply form ``FakeToolCallingModel`` takes (a ``{"tool",
    "args"}`` dict, an ``AIMessage``, a str). Nothing is scripted by position and nothing about a
    conversation is stored on the model, so one instance serves many threads at once; only the
    call count is shared, behind a lock.

    Example:
        >>> model = SleepingModel(reply=lambda messages: "ok", sleep_seconds=0.0)
        >>> model.invoke("hi").content, model.call_count
        ('ok', 1)
    """

    reply: Any = None
    sleep_seconds: float = 0.2
    model_name: str = "sleeping-fake"
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _count: int = PrivateAttr(default=0)

    @property
    def call_count(self) -> int:
        """Model calls answered so far, over all threads."""
        with self._lock:
            return self._count

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        time.sleep(self.sleep_seconds)  # the provider's latency: the GIL is released meanwhile
        with self._lock:
            index = self._count
            self._count += 1
        message = self._to_message(self.reply(list(messages)), index)
        inputs = sum(len(str(m.content)) for m in messages) // 4
        message.usage_metadata = {
            "input_tokens": inputs,
            "output_tokens": 5,
            "total_tokens": inputs + 5,
        }
        return ChatResult(generations=[ChatGeneration(message=message)])


def _text(messages: Sequence[BaseMessage], kind: type[BaseMessage]) -> str:
    return next((str(m.content) for m in messages if isinstance(m, kind)), "")


def _band(system_prompt: str) -> tuple[float, float] | None:
    match = re.search(r"\(sr:([0-9.]+)-([0-9.]+)\)", system_prompt)
    return (float(match.group(1)), float(match.group(2))) if match else None


def diagnoser_reply(messages: list[BaseMessage]) -> dict[str, Any]:
    """A ``report_diagnosis`` call whose direction follows the baseline success rate."""
    prompt = _text(messages, HumanMessage)
    match = re.search(r"success (\d+)/(\d+)", prompt)
    solved, n = (int(match.group(1)), int(match.group(2))) if match else (0, 1)
    rate = solved / n
    band = _band(_text(messages, SystemMessage))
    low, high = band if band is not None else (SCAFFOLD_BELOW, HARDEN_ABOVE)
    if band is None:  # auto: scaffold what fails, harden what (nearly) always succeeds
        too_easy, too_hard = rate >= high, rate <= low
    else:
        too_easy, too_hard = rate > high, rate < low
    if too_easy:
        direction, kind, episodes = "harden", "solves_too_often", solved
    elif too_hard:
        direction, kind, episodes = "scaffold", "fails_too_often", n - solved
    else:
        return {
            "tool": "report_diagnosis",
            "args": {"direction": "none", "summary": "Already on target.", "weaknesses": []},
        }
    evidence = f"baseline: {solved}/{n} episodes solved"
    return {
        "tool": "report_diagnosis",
        "args": {
            "direction": direction,
            "summary": f"The policy solves {solved} of {n} baseline episodes.",
            "weaknesses": [
                {
                    "kind": kind,
                    "description": evidence,
                    "evidence": [evidence],
                    "episodes": episodes,
                }
            ],
        },
    }


@dataclass
class _Bracket:
    """One task's search: the difficulty knob's bracket and the value now being tried."""

    low: float = 0.0
    high: float = P_MAX
    value: float | None = None
    head_start: int = 0


@dataclass
class BisectingDesigner:
    """The designer's replies: check a candidate, then submit it; bisect on the feedback.

    Hardening drops each action with probability ``p`` (bisected in ``[0, P_MAX]``, starting at
    ``P_START``); scaffolding replays a growing prefix of the oracle's solution as Setups.

    Attributes:
        brackets: Each task's search state, by task id.
    """

    brackets: dict[str, _Bracket] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self, messages: list[BaseMessage]) -> Any:
        """The next reply in one designer conversation."""
        asked = [m for m in messages if isinstance(m, AIMessage)]
        if not asked:
            return self._check(_text(messages, HumanMessage))
        calls = asked[-1].tool_calls
        if (
            isinstance(messages[-1], ToolMessage)
            and calls
            and calls[0]["name"] != "submit_candidate"
        ):
            args = dict(calls[0]["args"])
            return {"tool": "submit_candidate", "args": {**args, "rationale": asked[-1].content}}
        return "I have no better candidate."  # a refused submission, or the reminder

    def _check(self, prompt: str) -> AIMessage:
        task = re.search(r"harness for task (\S+) of the (\S+) environment", prompt)
        if task is None:
            raise ValueError("the designer prompt names no task")
        task_id, bridge = task.group(1), task.group(2)
        found = re.search(r"^direction: ([\w-]+)", prompt, re.MULTILINE)
        direction = found.group(1) if found else "harden"
        feedback = (
            prompt.split("refused your previous candidate:", 1)[-1] if "refused" in prompt else ""
        )
        harder = any(w in feedback for w in ("too easy", "harden more"))
        easier = any(
            w in feedback for w in ("too hard", "unsolvable", "smaller change", "scaffold more")
        )
        with self._lock:
            bracket = self.brackets.setdefault(task_id, _Bracket())
            if direction == "scaffold":
                bracket.head_start += -1 if harder and bracket.head_start > 1 else 1
                steps = bracket.head_start
            elif bracket.value is None:
                bracket.value = P_START
            elif harder or easier:
                if harder:
                    bracket.low = bracket.value
                else:
                    bracket.high = bracket.value
                bracket.value = (bracket.low + bracket.high) / 2
            p = round(bracket.value or 0.0, 3)
        if direction == "scaffold":
            return self._head_start(bridge, task_id, steps)
        return _ai(
            "check_rules",
            {"rules_code": DROP_RULES.format(p=p)},
            f"The policy solves the task too often; drop each action with probability {p}.",
        )

    @staticmethod
    def _head_start(bridge: str, task_id: str, steps: int) -> AIMessage:
        env = envharness.load_bridge(bridge, task_id=task_id)
        env.reset(seed=0)
        plan = [action.to_dict() for action in env.oracle_actions()]
        env.close()
        actions = json.dumps(plan[: max(1, min(steps, len(plan) - 1))])
        return _ai(
            "dry_run_setups",
            {"in_env_actions": actions},
            f"The policy fails too often; start it {steps} step(s) along the oracle's solution.",
        )


def _ai(tool: str, args: dict[str, Any], rationale: str) -> AIMessage:
    call = {"name": tool, "args": args, "id": f"call_{uuid.uuid4().hex[:12]}", "type": "tool_call"}
    return AIMessage(content=rationale, tool_calls=[call])


# -- measuring -------------------------------------------------------------------------------


NODES = ("observer", "diagnoser", "writer", "validator")


@dataclass
class _Clock:
    """Seconds spent in the rigger's nodes and its ``run_rollouts`` calls, summed over threads."""

    wall: dict[str, float] = field(default_factory=lambda: dict.fromkeys(NODES, 0.0))
    rollout_wall: float = 0.0
    rollout_cpu: float = 0.0
    rollouts: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def timed(self, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function`` with its wall time (and for rollouts, thread CPU time) added up."""

        @functools.wraps(function)  # LangGraph reads the node's signature through __wrapped__
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            wall, cpu = time.perf_counter(), time.thread_time()
            result = function(*args, **kwargs)
            wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
            with self.lock:
                if label == "rollouts":
                    self.rollouts += len(result)
                    self.rollout_wall += wall
                    self.rollout_cpu += cpu
                else:
                    self.wall[label] += wall
            return result

        return wrapper


@contextlib.contextmanager
def instrumented() -> Iterator[_Clock]:
    """Times the rigger's nodes and rollouts while active (measurement only, restored after)."""
    clock = _Clock()
    originals = {name: getattr(rigger_module, name) for name in NODES}
    run_rollouts = rigger_common.run_rollouts
    for name, node in originals.items():
        setattr(rigger_module, name, clock.timed(name, node))
    rigger_common.run_rollouts = clock.timed("rollouts", run_rollouts)
    try:
        yield clock
    finally:
        for name, node in originals.items():
            setattr(rigger_module, name, node)
        rigger_common.run_rollouts = run_rollouts


def _machine_ticks() -> tuple[int, int] | None:
    """(busy, total) CPU ticks of the whole machine so far, from ``/proc/stat`` (Linux)."""
    try:
        with open("/proc/stat") as stat:
            values = [int(v) for v in stat.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values)


def _own_cpu() -> float:
    """CPU seconds of this process and its children so far.

    The children are the sandbox template and, once reaped, its episode processes; they are read
    from ``/proc`` (Linux), else left out.
    """
    times = os.times()
    total = times.user + times.system + times.children_user + times.children_system
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == os.getpid():  # ppid; then utime stime cutime cstime at 11-14
            total += sum(int(v) for v in fields[11:15]) / tick
    return total


@dataclass
class _CpuMeter:
    """Cores kept busy over an interval: by this rig's processes, and by the whole machine."""

    own: float = field(default_factory=_own_cpu)
    machine: tuple[int, int] | None = field(default_factory=_machine_ticks)
    load: float = field(default_factory=lambda: os.getloadavg()[0])

    def read(self, wall: float) -> dict[str, float | None]:
        """Cores busy since the meter was made (``wall`` seconds ago)."""
        after = _machine_ticks()
        machine = None
        if self.machine is not None and after is not None and after[1] > self.machine[1]:
            share = (after[0] - self.machine[0]) / (after[1] - self.machine[1])
            machine = share * (os.cpu_count() or 1)
        return {
            "own_cores_busy": (_own_cpu() - self.own) / wall,
            "machine_cores_busy": machine,
            "load_avg_1min_before": self.load,
            "load_avg_1min_after": os.getloadavg()[0],
        }


def rig_once(tasks: list[str], concurrency: int, sleep: float, objective: str) -> dict[str, Any]:
    """Rigs ``tasks`` in a fresh run directory; wall time, spending and per-task results."""
    diagnoser = SleepingModel(reply=diagnoser_reply, sleep_seconds=sleep, model_name="diag")
    designer = SleepingModel(reply=BisectingDesigner(), sleep_seconds=sleep, model_name="design")
    finished: list[float] = []
    with tempfile.TemporaryDirectory(prefix="rigger-bench-") as run_dir:
        context = RiggerContext(
            run_dir=run_dir,
            policy=POLICY,
            designer=designer,
            diagnoser=diagnoser,
            objective=objective,
            k_observe=K_OBSERVE,
            k_validate=K_VALIDATE,
            max_iterations=MAX_ITERATIONS,
            executor=None,
        )
        with instrumented() as clock:
            meter, cpu, start = _CpuMeter(), time.process_time(), time.perf_counter()
            results = rig(
                BRIDGE,
                tasks,
                context,
                max_concurrency=concurrency,
                on_result=lambda _: finished.append(time.perf_counter()),
            )
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu
            busy = meter.read(wall)
    calls = designer.call_count + diagnoser.call_count
    times = [t - start for t in sorted(finished)]
    accepted = [r for r in results if r.status == "accepted"]
    rollouts = sum(r.rollouts for r in results)
    model_calls = sum(r.model_calls for r in results)
    per_accepted = len(accepted) or float("nan")
    as_is = [r for r in accepted if r.model_calls == 1]  # the diagnoser found it on target
    return {
        "wall_s": wall,
        "process_cpu_s": cpu,
        **busy,
        "model_calls_answered": calls,
        "designer_calls": designer.call_count,
        "diagnoser_calls": diagnoser.call_count,
        "model_wait_s": calls * sleep,
        "accepted": len(accepted),
        "statuses": {s: sum(r.status == s for r in results) for s in {r.status for r in results}},
        "accepted_as_is": len(as_is),
        "rollouts": rollouts,
        "model_calls": model_calls,
        "rollouts_per_accepted": rollouts / per_accepted,
        "model_calls_per_accepted": model_calls / per_accepted,
        "rollouts_per_accepted_task": (
            statistics.fmean(r.rollouts for r in accepted) if accepted else None
        ),
        "iterations_mean": statistics.fmean(r.iterations for r in results),
        "node_wall_s": dict(clock.wall),
        "rollouts_played": clock.rollouts,
        "rollout_wall_s": clock.rollout_wall,
        "rollout_thread_cpu_s": clock.rollout_cpu,
        "task_seconds": [b - a for a, b in zip([0.0, *times], times, strict=False)],
        "tasks": [
            {
                "task": r.task_id,
                "status": r.status,
                "iterations": r.iterations,
                "rollouts": r.rollouts,
                "model_calls": r.model_calls,
                "baseline_success": r.baseline_success,
                "final_success": r.final_success,
            }
            for r in results
        ],
    }


def schedule_bound(task_seconds: Sequence[float], workers: int) -> float:
    """The makespan of tasks taken in order by the first free of ``workers`` (no contention)."""
    free = [0.0] * workers
    for seconds in task_seconds:
        heapq.heapreplace(free, free[0] + seconds)
    return max(free)


def fastest_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The fastest of the runs (the least disturbed by other load), with every wall time."""
    chosen = dict(min(runs, key=lambda run: run["wall_s"]))
    chosen["wall_s_all"] = [run["wall_s"] for run in runs]
    return chosen


# -- main ------------------------------------------------------------------------------------


def _print_table(rows: dict[int, dict[str, Any]], n_tasks: int) -> None:
    header = (
        f"{'conc':>4}{'wall s':>8}{'speedup':>9}{'ideal s':>9}{'/ideal':>8}{'sched s':>9}"
        f"{'busy ours/all':>14}{'accepted':>10}{'as is':>6}{'rollouts/acc':>13}{'calls/acc':>10}"
        f"{'iters':>6}"
    )
    print(header)
    print("-" * len(header))
    for concurrency, row in rows.items():
        machine = row["machine_cores_busy"]
        busy = f"{row['own_cores_busy']:.2f}/{machine if machine is not None else float('nan'):.2f}"
        print(
            f"{concurrency:>4}{row['wall_s']:>8.2f}{row['speedup']:>8.2f}x{row['ideal_s']:>9.2f}"
            f"{row['ratio_to_ideal']:>7.2f}x{row['schedule_bound_s']:>9.2f}"
            f"{busy:>14}"
            f"{row['accepted']:>6}/{n_tasks:<3}{row['accepted_as_is']:>6}"
            f"{row['rollouts_per_accepted']:>13.1f}"
            f"{row['model_calls_per_accepted']:>10.1f}{row['iterations_mean']:>6.2f}"
        )


def breakdown(serial: dict[str, Any], sleep: float) -> dict[str, float]:
    """Where the serial run's wall time went: model waits, rollouts, other node work, the rest."""
    nodes = serial["node_wall_s"]
    inside = sum(nodes.values())
    return {
        "wall_s": serial["wall_s"],
        "model_wait_s": serial["model_wait_s"],
        "rollouts_s": serial["rollout_wall_s"],
        "rollouts_parent_cpu_s": serial["rollout_thread_cpu_s"],
        "diagnoser_other_s": nodes["diagnoser"] - serial["diagnoser_calls"] * sleep,
        "writer_other_s": nodes["writer"] - serial["designer_calls"] * sleep,
        "observer_validator_other_s": (
            nodes["observer"] + nodes["validator"] - serial["rollout_wall_s"]
        ),
        "outside_nodes_s": serial["wall_s"] - inside,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 tasks, 1 repeat, no file")
    parser.add_argument("--sleep", type=float, default=0.2, help="seconds per model call")
    parser.add_argument("--tasks", type=int, default=None, help="tasks to rig (default 16)")
    parser.add_argument("--repeats", type=int, default=None, help="runs per setting (default 3)")
    parser.add_argument("--objective", default=OBJECTIVE, help=f"default {OBJECTIVE}")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--out", type=Path, default=None, help=f"default {RESULTS}")
    args = parser.parse_args()
    n_tasks = args.tasks or (8 if args.quick else 16)
    repeats = args.repeats or (1 if args.quick else 3)
    out = args.out if args.out is not None else (None if args.quick else RESULTS)
    concurrencies = sorted(set(args.concurrency) | {1})
    top = max(concurrencies)
    tasks = envharness.list_tasks(BRIDGE, split="train")[:n_tasks]

    rig_once(tasks[:1], 1, 0.0, args.objective)  # warm-up: imports, sandbox template, caches
    settings = list(
        dict.fromkeys([(c, args.sleep) for c in concurrencies] + [(c, 0.0) for c in (1, top)])
    )
    runs: dict[tuple[int, float], list[dict[str, Any]]] = {setting: [] for setting in settings}
    for _ in range(repeats):  # interleaved, so a burst of outside load does not hit one setting
        for concurrency, sleep in settings:
            runs[concurrency, sleep].append(rig_once(tasks, concurrency, sleep, args.objective))
    rows = {c: fastest_run(runs[c, args.sleep]) for c in concurrencies}
    no_wait = {c: fastest_run(runs[c, 0.0]) for c in sorted({1, top})}

    serial = rows[1]["wall_s"]
    for concurrency, row in rows.items():
        row["concurrency"] = concurrency
        row["speedup"] = serial / row["wall_s"]
        row["ideal_s"] = serial / concurrency
        row["ratio_to_ideal"] = row["wall_s"] / row["ideal_s"]
        row["schedule_bound_s"] = schedule_bound(rows[1]["task_seconds"], concurrency)
        row["longest_first_bound_s"] = schedule_bound(
            sorted(rows[1]["task_seconds"], reverse=True), concurrency
        )
    parts = breakdown(rows[1], args.sleep)
    other = serial - parts["model_wait_s"]

    print(
        f"EnvRigger on {n_tasks} Toy24 train tasks, policy {POLICY}, objective "
        f"{args.objective}, K={K_OBSERVE}/{K_VALIDATE}, max {MAX_ITERATIONS} iterations, "
        f"fake models sleeping {args.sleep * 1000:.0f} ms/call, inline rollouts, "
        f"{os.cpu_count()} CPUs; fastest of {repeats} run(s) each"
    )
    _print_table(rows, n_tasks)
    print(
        f"serial run: {serial:.2f} s = model waits {parts['model_wait_s']:.2f} s "
        f"({parts['model_wait_s'] / serial:.0%}) + other work {other:.2f} s ({other / serial:.0%}):"
        f" rollouts {parts['rollouts_s']:.2f} s ({parts['rollouts_s'] / serial:.0%}; "
        f"{parts['rollouts_parent_cpu_s']:.2f} s of it CPU in this process, "
        f"{rows[1]['rollouts_played']} rollouts), designer tools and agent "
        f"{parts['writer_other_s']:.2f} s, diagnoser {parts['diagnoser_other_s']:.2f} s, "
        f"observer and validator besides the rollouts (oracle check, specs) "
        f"{parts['observer_validator_other_s']:.2f} s, outside the nodes (checkpoints, graph) "
        f"{parts['outside_nodes_s']:.2f} s"
    )
    print(
        "same rig without the model sleep: "
        + ", ".join(f"{run['wall_s']:.2f} s at concurrency {c}" for c, run in no_wait.items())
        + f" (the work alone runs {no_wait[1]['wall_s'] / no_wait[top]['wall_s']:.2f}x faster "
        f"at concurrency {top} on {os.cpu_count()} CPUs)"
    )
    longest = max(rows[1]["task_seconds"])
    print(
        f"bounds at concurrency {top} from the serial per-task times (no contention): ideal "
        f"{rows[top]['ideal_s']:.2f} s, longest task {longest:.2f} s "
        f"({longest / rows[top]['ideal_s']:.2f}x), tasks dealt in order as rig does "
        f"{rows[top]['schedule_bound_s']:.2f} s "
        f"({rows[top]['schedule_bound_s'] / rows[top]['ideal_s']:.2f}x), longest first "
        f"{rows[top]['longest_first_bound_s']:.2f} s; CPU of this process (one GIL) at "
        f"concurrency {top}: {rows[top]['process_cpu_s']:.2f} s"
    )
    ratio = rows[top]["ratio_to_ideal"]
    rollouts = max(row["rollouts_per_accepted"] for row in rows.values())
    print(
        f"target: concurrency {top} within {TARGET_RATIO}x of serial/{top}: {ratio:.2f}x, "
        f"{'met' if ratio <= TARGET_RATIO else 'NOT met'}; rollouts per accepted harness "
        f"< {PAPER_WORST_ROLLOUTS}: {rollouts:.1f}, "
        f"{'met' if rollouts < PAPER_WORST_ROLLOUTS else 'NOT met'}"
    )
    if out is None:
        print("results not written (--quick); pass --out PATH to keep them")
        return
    report = {
        "benchmark": "rigger_concurrency",
        "machine": {
            "python": platform.python_version(),
            "kernel": platform.release(),
            "cpus": os.cpu_count(),
        },
        "settings": {
            "bridge": BRIDGE,
            "tasks": tasks,
            "policy": POLICY,
            "objective": args.objective,
            "k_observe": K_OBSERVE,
            "k_validate": K_VALIDATE,
            "max_iterations": MAX_ITERATIONS,
            "executor": None,
            "checkpointer": "SqliteSaver, a fresh temporary run directory per run",
            "model_sleep_s": args.sleep,
            "repeats": repeats,
            "designer": (
                f"BisectingDesigner: check_rules then submit_candidate; Rules that drop each "
                f"action with probability p, p = {P_START} first, then bisected in [0, {P_MAX}] "
                "on the validator's feedback"
            ),
            "diagnoser": "report_diagnosis: harden above the band, scaffold below, none inside",
        },
        "rows": [rows[c] for c in concurrencies],
        "serial_breakdown": parts,
        "no_model_wait": {str(c): run for c, run in no_wait.items()},
        "targets": {
            "ratio_to_ideal_max": TARGET_RATIO,
            "ratio_to_ideal": ratio,
            "ratio_met": ratio <= TARGET_RATIO,
            "rollouts_per_accepted_max": PAPER_WORST_ROLLOUTS,
            "rollouts_per_accepted": rollouts,
            "rollouts_met": rollouts < PAPER_WORST_ROLLOUTS,
        },
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
