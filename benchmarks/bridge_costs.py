"""What one episode step costs on each bridge: reset and step time, and memory per env.

Run: ``python benchmarks/bridge_costs.py [--steps 300] [--resets 30]``. Prints a table and writes
``benchmarks/results/bridge_costs.json``. Steps are random schema-valid actions (a
``RandomPolicy``; random admissible commands on text games; a fixed agent-like cycle on
``swe``), with a reset whenever an episode ends, and
the steps of two oracle episodes are timed apart, so the figures tell what K rollouts will
cost on each bridge; the harness overhead (``harness_overhead.py``) should stay small next to them.
Bridges whose optional package, system component or data is missing are skipped and listed
(ALFWorld reads ``$ALFWORLD_DATA``).

The ``swebench`` bridge gets rows of its own, per real instance (those whose sdist reproduces
them, or every instance of ``../shared/data/swebench`` when ``$ENVHARNESS_SWEBENCH_REPOS`` names a
folder of clones) and runtime: the first build of its environment (wheelhouse, images or venv;
recorded when the images were built, or measured now with ``--swebench-rebuild``), reset, one
visible test run, and the verifier (SWE-bench's evaluation in a fresh workspace, on distinct
patches so that its cache is not hit). ``--no-swebench`` leaves them out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import time
import tracemalloc
from pathlib import Path
from typing import Any

from envharness import Action, BridgeError, DependencyNotInstalled, load_bridge
from envharness.rollout import RandomPolicy

RESULTS = Path(__file__).parent / "results" / "bridge_costs.json"

# A bedroom and a kitchen of ALFWorld's sample trials ($ALFWORLD_DATA points at the data).
ALFWORLD_BEDROOM = "pick_and_place_simple-KeyChain-None-SideTable-309/trial_T20190908_215011_025401"
ALFWORLD_KITCHEN = (
    "pick_heat_then_place_in_recep-Potato-None-DiningTable-16/trial_T20190908_015009_437240"
)

TASKS: list[tuple[str, str, dict[str, Any]]] = [
    ("toy24", "4-4-10-10", {}),
    ("gymnasium", "FrozenLake-v1", {"env_kwargs": {"is_slippery": False}}),
    ("gymnasium", "CliffWalking-v1", {}),
    ("gymnasium", "Taxi-v4", {}),
    ("gymnasium", "Blackjack-v1", {}),
    ("textworld", "tw-s5-o10-q5-seed42", {}),
    ("docqa", "ar23-employees", {}),
    ("docqa", "cross-ws400-revenue-2023", {}),
    ("spreadsheet", "sales-line-totals", {}),
    ("spreadsheet", "sales-region-summary", {}),
    ("webshop", "ws01", {}),
    ("alfworld", ALFWORLD_BEDROOM, {}),
    ("alfworld", ALFWORLD_KITCHEN, {}),
    ("swe", "intervals-touching", {"runtime": "local"}),
    ("swe", "intervals-touching", {"runtime": "docker"}),
]

# Random actions on the SWE bridge would be random shell commands (run on this machine with the
# local runtime), so its steps are a fixed cycle of what an agent typically does.
SCRIPTED_STEPS: dict[str, list[Action]] = {
    "swe": [
        Action("read_file", {"path": "intervals/merge.py"}),
        Action("bash", {"command": "grep -n 'merged' intervals/merge.py | head -3"}),
        Action(
            "edit_file",
            {"path": "intervals/merge.py", "old": "merged = []", "new": "merged = list()"},
        ),
        Action(
            "edit_file",
            {"path": "intervals/merge.py", "old": "merged = list()", "new": "merged = []"},
        ),
        Action("run_tests", {"target": "tests/test_merge.py::test_gaps"}),
    ]
}

RUNTIME = ("runtime",)  # options named in the row's label (the SWE bridge runs in two)

# Slow bridges get fewer samples (a browser page load is ~0.2 s), so the run stays short.
STEPS_CAP = {"webshop": 60, "swe": 50, "alfworld": 100}
RESETS_CAP = {"webshop": 8, "swe": 8, "alfworld": 10}

# A random policy's text commands are almost all inadmissible (answered in microseconds without
# stepping the game), so on these bridges random steps pick one of the admissible commands.
ADMISSIBLE_STEPS = {"textworld", "alfworld"}


def _median_us(samples: list[int]) -> float:
    return statistics.median(samples) / 1000


def _descendants(root: int) -> list[int]:
    """Process ids below ``root`` (Linux ``/proc``): browsers, drivers, sandbox children."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _child_pss_kib() -> int:
    """Summed PSS of this process's descendants (PSS shares shared pages out fairly)."""
    pss = 0
    for pid in _descendants(os.getpid()):
        try:
            lines = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]
        except OSError:
            continue
        fields = {line.split(":")[0]: line.split()[1] for line in lines if ":" in line}
        pss += int(fields.get("Pss", 0))
    return pss


def _oracle_step_ns(env: Any, episodes: int) -> list[int]:
    """Times the steps of ``episodes`` oracle episodes: real progress (page loads, tests run)."""
    timings = []
    for seed in range(episodes):
        env.reset(seed=seed)
        for action in env.oracle_actions():
            started = time.perf_counter_ns()
            result = env.step(action)
            timings.append(time.perf_counter_ns() - started)
            if result.terminated or result.truncated:
                break
    return timings


def measure(bridge: str, task_id: str, options: dict[str, Any], steps: int, resets: int) -> dict:
    """Times construction, resets, random and oracle steps of one task; measures its memory.

    ``memory_kib`` counts the Python allocations of a second env; ``child_pss_kib`` adds what
    processes the bridge starts hold (a browser, a driver), with that env open.
    """
    steps, resets = (
        min(steps, STEPS_CAP.get(bridge, steps)),
        min(resets, RESETS_CAP.get(bridge, resets)),
    )
    children_before = _child_pss_kib()  # a browser an earlier row started stays up
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
    child_pss_kib = max(0, _child_pss_kib() - children_before)
    try:
        reset_ns = []
        for seed in range(resets):
            t = time.perf_counter_ns()
            env.reset(seed=seed)
            reset_ns.append(time.perf_counter_ns() - t)
        policy = RandomPolicy(0)
        policy.start(env.instruction, env.tools())
        script, rng = SCRIPTED_STEPS.get(bridge), random.Random(0)
        observation, _ = env.reset(seed=0)
        step_ns = []
        for index in range(steps):
            if script:
                action = script[index % len(script)]
            elif bridge in ADMISSIBLE_STEPS:
                command = rng.choice(env.get_env_state()["admissible_commands"])
                action = Action("act", {"command": command})
            else:
                action = policy.act(observation)
            t = time.perf_counter_ns()
            result = env.step(action)
            step_ns.append(time.perf_counter_ns() - t)
            observation = result.observation
            if result.terminated or result.truncated:
                observation, _ = env.reset(seed=len(step_ns))
        oracle_ns = _oracle_step_ns(env, episodes=2)
    finally:
        env.close()
    return {
        "bridge": bridge,
        "task_id": "/".join(
            [task_id.split("/")[0], *[str(options[k]) for k in RUNTIME if k in options]]
        ),
        "first_build_and_reset_ms": build_ms,
        "reset_median_us": _median_us(reset_ns),
        "step_median_us": _median_us(step_ns),
        "step_p90_us": sorted(step_ns)[int(len(step_ns) * 0.9)] / 1000,
        "oracle_step_median_us": _median_us(oracle_ns) if oracle_ns else None,
        "memory_kib": memory_kib,
        "child_pss_kib": child_pss_kib,
        "steps": steps,
        "resets": resets,
    }


SWEBENCH_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "swebench"
SWEBENCH_RUNTIMES = {"marshmallow-code__marshmallow-1359": ("docker", "local")}


def _swebench_instances() -> list[str]:
    """The instances measured: those whose sdist reproduces them, or all with clones."""
    if os.environ.get("ENVHARNESS_SWEBENCH_REPOS"):
        lines = (SWEBENCH_DATA / "instances.jsonl").read_text().splitlines()
        return [json.loads(line)["instance_id"] for line in lines]
    sources = json.loads((SWEBENCH_DATA / "sources.json").read_text())
    return [e["instance_id"] for e in sources["instances"] if e.get("reproduces") is True]


def _remove_swebench_builds(instance_ids: list[str]) -> None:
    """Removes the instances' images (not the shared tools image), wheels and venvs."""
    import shutil

    from envharness.bridgekit.cache import bridge_cache_dir
    from envharness.bridges.swe.image import docker_client
    from envharness.bridges.swebench import find_instance
    from envharness.bridges.swebench.specs import safe_tag

    dataset = SWEBENCH_DATA / "instances.jsonl"
    prefixes = []
    for instance_id in instance_ids:
        instance = find_instance(dataset, instance_id)
        prefixes.append(f"envharness-swebench:{safe_tag(instance_id)}-")
        prefixes.append(
            f"envharness-swebench-env:{safe_tag(instance.repo)}-{safe_tag(instance.version)}-"
        )
    client = docker_client()
    try:
        for image in client.images.list(filters={"label": "org.envharness.bridge=swebench"}):
            for tag in image.tags:
                if tag.startswith(tuple(prefixes)):
                    client.images.remove(tag, force=True)
    finally:
        client.close()
    for folder in ("wheels", "venvs", "images"):
        shutil.rmtree(bridge_cache_dir("swebench") / folder, ignore_errors=True)


def measure_swebench(instance_id: str, runtime: str, *, repeats: int = 3) -> dict:
    """First build, reset, a visible test run and the verifier on one real SWE-bench instance."""
    options: dict[str, Any] = {"dataset": str(SWEBENCH_DATA / "instances.jsonl")}
    if os.environ.get("ENVHARNESS_SWEBENCH_REPOS"):
        options["repos_dir"] = os.environ["ENVHARNESS_SWEBENCH_REPOS"]
    env = load_bridge("swebench", task_id=instance_id, runtime=runtime, **options)
    started = time.perf_counter()
    prepared = env.prepare()
    prepare_s = time.perf_counter() - started
    recorded = prepared.record.get("first_build_seconds") or {}
    if prepared.seconds:  # built now
        first_build = {k: round(v, 1) for k, v in prepared.seconds.items()}
        first_build_s, measured = prepare_s, True
    else:
        first_build, first_build_s, measured = dict(recorded), sum(recorded.values()), False
    try:
        reset_s, test_s, verify_s = [], [], []
        for _ in range(repeats):
            t = time.perf_counter()
            env.reset()
            reset_s.append(time.perf_counter() - t)
        for _ in range(repeats):
            t = time.perf_counter()
            env.step(Action("run_tests", {}))
            test_s.append(time.perf_counter() - t)
        for index in range(2):  # a distinct harmless change each time: the verifier runs
            env.step(Action("bash", {"command": f"echo {index} > bench-note-{index}.txt"}))
            t = time.perf_counter()
            evaluation = env.evaluate()
            verify_s.append(time.perf_counter() - t)
        source = evaluation.details["source"]
    finally:
        env.close()
    return {
        "bridge": "swebench",
        "instance_id": instance_id,
        "runtime": runtime,
        "source": source,
        "first_build_s": round(first_build_s, 1),
        "first_build_measured_now": measured,
        "first_build_steps_s": first_build,
        "reset_median_s": statistics.median(reset_s),
        "test_run_median_s": statistics.median(test_s),
        "verifier_median_s": statistics.median(verify_s),
        "test_command": evaluation.details["test_command"],
    }


# SpreadsheetBench (spreadsheet bridge, dataset=): the verifier runs a solution program on the
# three test cases and recalculates the formulas it wrote, with the engine or LibreOffice.
SHEETBENCH_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "spreadsheetbench"
SHEETBENCH_ROWS = [  # (task, program, recalc): the oracle writes values, "formulas" formulas
    ("39490", "oracle", "auto"),
    ("54057", "formulas", "engine"),
    ("54057", "formulas", "libreoffice"),
    ("17251", "formulas", "engine"),
    ("17251", "formulas", "libreoffice"),
]


def measure_spreadsheetbench(task_id: str, program: str, recalc: str, *, repeats: int = 2) -> dict:
    """The verifier on three test cases: the program runs, recalculation and comparison."""
    from envharness.bridges.spreadsheet.bench.dataset import CASES
    from envharness.bridges.spreadsheet.bench.oracle import formula_program, oracle_program
    from envharness.bridges.spreadsheet.bench.program import run_programs
    from envharness.bridges.spreadsheet.bench.verifier import score_task

    env = load_bridge("spreadsheet", task_id=task_id, dataset=str(SHEETBENCH_DATA), recalc=recalc)
    task = env.task
    code = oracle_program(task) if program == "oracle" else formula_program(task)
    env.reset()
    env.step(Action("run_program", {"code": code}))
    verifier_s, run_s, score_s = [], [], []
    for _ in range(repeats):
        env._verdicts.clear()  # evaluate() caches per program: time a fresh verdict
        t = time.perf_counter()
        evaluation = env.evaluate()
        verifier_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        runs = run_programs(code, [task.input_path(c) for c in CASES])
        run_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        score_task(task, [r.output for r in runs], mode=recalc)
        score_s.append(time.perf_counter() - t)
        for run in runs:
            run.cleanup()
    env.close()
    return {
        "task_id": task_id,
        "program": program,
        "recalc": recalc,
        "recalculation": sorted({c["recalculation"] for c in evaluation.details["cases"]}),
        "test_case_results": evaluation.details["test_case_results"],
        "verifier_median_s": statistics.median(verifier_s),
        "program_runs_median_s": statistics.median(run_s),
        "scoring_median_s": statistics.median(score_s),
    }


def spreadsheetbench_rows(skipped: list[str]) -> list[dict]:
    """The SpreadsheetBench verifier rows (skipped without the data or LibreOffice)."""
    from envharness.bridges.spreadsheet.bench.recalc import soffice

    if not (SHEETBENCH_DATA / "dataset.json").is_file():
        skipped.append(f"spreadsheetbench: no data at {SHEETBENCH_DATA}")
        return []
    rows = []
    for task_id, program, recalc in SHEETBENCH_ROWS:
        if recalc == "libreoffice" and soffice() is None:
            skipped.append(f"spreadsheetbench {task_id} ({recalc}): soffice is not installed")
            continue
        try:
            rows.append(measure_spreadsheetbench(task_id, program, recalc))
        except (DependencyNotInstalled, BridgeError) as e:
            skipped.append(f"spreadsheetbench {task_id} ({recalc}): {e}")
    if rows:
        print(
            f"\n{'spreadsheetbench task':<24}{'program':<10}{'recalc':<13}{'cases':<11}"
            f"{'verifier s':>11}{'programs s':>11}{'scoring s':>10}"
        )
    for r in rows:
        print(
            f"{r['task_id']:<24}{r['program']:<10}{'/'.join(r['recalculation']):<13}"
            f"{str(r['test_case_results']):<11}{r['verifier_median_s']:>11.2f}"
            f"{r['program_runs_median_s']:>11.2f}{r['scoring_median_s']:>10.2f}"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--resets", type=int, default=30)
    parser.add_argument("--no-swebench", action="store_true", help="leave out the swebench rows")
    parser.add_argument(
        "--swebench-rebuild",
        action="store_true",
        help="remove the swebench instances' images, wheels and venvs first, to time a first build",
    )
    parser.add_argument("--only-swebench", action="store_true", help="only the swebench rows")
    args = parser.parse_args()
    rows, skipped, swebench_rows = [], [], []
    skipped_now = skipped
    for bridge, task_id, options in [] if args.only_swebench else TASKS:
        try:
            rows.append(measure(bridge, task_id, options, args.steps, args.resets))
        except (DependencyNotInstalled, BridgeError) as e:  # a missing extra, browser or engine
            skipped.append(f"{bridge}: {e}")
    if not args.no_swebench and (SWEBENCH_DATA / "instances.jsonl").is_file():
        if args.swebench_rebuild:
            _remove_swebench_builds(_swebench_instances())
        for instance_id in _swebench_instances():
            for runtime in SWEBENCH_RUNTIMES.get(instance_id, ("docker",)):
                try:
                    swebench_rows.append(measure_swebench(instance_id, runtime))
                except (DependencyNotInstalled, BridgeError) as e:
                    skipped.append(f"swebench {instance_id} ({runtime}): {e}")
    elif not args.no_swebench:
        skipped.append(f"swebench: no data at {SWEBENCH_DATA}")
    print(
        f"{'bridge':<12}{'task':<26}{'first use ms':>13}{'reset µs':>11}{'step µs':>10}"
        f"{'p90 µs':>10}{'oracle µs':>11}{'memory KiB':>11}{'child PSS KiB':>14}"
    )
    for r in rows:
        oracle = r["oracle_step_median_us"]
        print(
            f"{r['bridge']:<12}{r['task_id'][:25]:<26}{r['first_build_and_reset_ms']:>13.1f}"
            f"{r['reset_median_us']:>11.1f}{r['step_median_us']:>10.1f}{r['step_p90_us']:>10.1f}"
            f"{'—' if oracle is None else f'{oracle:.1f}':>11}{r['memory_kib']:>11.0f}"
            f"{r['child_pss_kib']:>14}"
        )
    if swebench_rows:
        print(
            f"\n{'swebench instance':<36}{'runtime':<8}{'source':<7}{'first build s':>14}"
            f"{'reset s':>9}{'test run s':>11}{'verifier s':>11}"
        )
    for r in swebench_rows:
        star = "" if r["first_build_measured_now"] else "*"
        print(
            f"{r['instance_id']:<36}{r['runtime']:<8}{r['source']:<7}"
            f"{r['first_build_s']:>13.1f}{star:1}{r['reset_median_s']:>9.2f}"
            f"{r['test_run_median_s']:>11.2f}{r['verifier_median_s']:>11.2f}"
        )
    if any(not r["first_build_measured_now"] for r in swebench_rows):
        print("* recorded when the images were built (cached now; --swebench-rebuild to time it)")
    sheetbench = [] if args.only_swebench else spreadsheetbench_rows(skipped)
    for line in skipped:
        print(f"skipped {line}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    if args.only_swebench and RESULTS.is_file():  # keep the other bridges' rows
        previous = json.loads(RESULTS.read_text())
        rows = previous.get("rows", [])
        skipped = [line for line in previous.get("skipped", []) if "swebench" not in line]
        skipped += [line for line in skipped_now if "swebench" in line]
    report = {
        "benchmark": "bridge_costs",
        "machine": {"python": platform.python_version(), "kernel": platform.release()},
        "steps": args.steps,
        "resets": args.resets,
        "rows": rows,
        "swebench_rows": swebench_rows,
        "spreadsheetbench_rows": sheetbench,
        "skipped": skipped,
        "note": (
            "first_build_and_reset_ms includes imports, task lists and generating a TextWorld "
            "game the first time it is used; memory_kib is what a second env allocates in "
            "Python; child_pss_kib is the PSS of processes the bridges started (browser, driver), "
            "summed over the process tree with that env open; oracle_step_median_us times the "
            "steps of two oracle episodes (real progress, where random actions are often invalid); "
            "swebench_rows: per real SWE-bench instance and runtime, the first build of its "
            "environment in seconds (by step; the shared tools image is built once per machine "
            "and not counted when cached), the median reset, visible test run and verifier"
        ),
    }
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
