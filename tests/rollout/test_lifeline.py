"""Every process the library starts dies with its caller, even when the caller is SIGKILLed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from envharness.rollout.lifeline import EXIT_STATUS, exit_with

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


def _descendants(pid: int) -> set[int]:
    seen: set[int] = set()
    todo = [pid]
    while todo:
        for child in _children(todo.pop()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _kill_and_collect_survivors(args: list[str], cwd, at_least: int) -> set[int]:
    process = subprocess.Popen(
        [sys.executable, "-m", "envharness.cli", *args],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and len(seen) < at_least:
            seen |= _descendants(process.pid)
            time.sleep(0.1)
        time.sleep(2)  # let the workers start their jobs (and the sandboxes theirs)
        seen |= _descendants(process.pid)
        assert len(seen) >= at_least, f"only {len(seen)} descendants started"
    finally:
        process.kill()
        process.wait()
    deadline = time.monotonic() + 15
    survivors = {pid for pid in seen if _alive(pid)}
    while survivors and time.monotonic() < deadline:
        time.sleep(0.2)
        survivors = {pid for pid in survivors if _alive(pid)}
    for pid in survivors:  # do not leak them into the rest of the test run
        os.kill(pid, signal.SIGKILL)
    return survivors


def test_a_killed_rollout_leaves_no_worker_forkserver_or_tracker(tmp_path):
    args = ["rollout", "toy24", "-n", "20", "-k", "20", "-w", "2", "--policy", "random"]
    survivors = _kill_and_collect_survivors([*args, "--out", str(tmp_path / "run")], tmp_path, 4)
    assert not survivors


def test_a_killed_rig_leaves_no_process_behind(tmp_path):
    pytest.importorskip("langgraph")
    args = ["rig", "toy24", "--tasks", "2", "-w", "2", "--policy", "oracle:0.5"]
    args += ["--objective", "sr:0.4-0.6", "--out", str(tmp_path / "rig")]
    assert not _kill_and_collect_survivors(args, tmp_path, 5)


def test_exit_with_ends_the_process_when_the_watched_one_ends():
    code = (
        "import sys, time\n"
        "from envharness.rollout.lifeline import exit_with\n"
        "exit_with(int(sys.argv[1]))\n"
        "time.sleep(60)\n"
    )
    watched = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    watcher = subprocess.Popen([sys.executable, "-c", code, str(watched.pid)])
    time.sleep(1.0)
    assert watcher.poll() is None
    watched.kill()
    watched.wait()
    assert watcher.wait(timeout=10) == EXIT_STATUS


def test_exit_with_returns_at_once():
    started = time.monotonic()
    exit_with(os.getpid())  # watches this process: nothing happens while it runs
    assert time.monotonic() - started < 0.5
