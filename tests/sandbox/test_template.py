from __future__ import annotations

import json
import os
import signal

import pytest
from sandbox_helpers import children, hostile, process_exists, rules, wait_until

from envharness.errors import RulesError
from envharness.sandbox import RulesSandbox, template

ECHO = rules("filter_observation", "return observation")


def test_template_environment_and_flags(template_pid):
    with open(f"/proc/{template_pid}/environ", "rb") as f:
        keys = sorted(item.split(b"=", 1)[0] for item in f.read().split(b"\0") if item)
    assert keys == [b"PATH", b"PYTHONHASHSEED"]
    with open(f"/proc/{template_pid}/cmdline", "rb") as f:
        argv = f.read().split(b"\0")
    assert argv[1:4] == [b"-s", b"-S", b"-P"]
    assert argv[4].endswith(b"_worker.py")


def test_child_loads_nothing_from_envharness():
    code = rules(
        "filter_observation",
        "return json.dumps(sorted(m for m in sys.modules if 'envharness' in m or m in "
        "('subprocess', 'multiprocessing', 'pickle', 'asyncio')))",
        imports="import json, sys",
    )
    with hostile(code).start_episode() as session:
        loaded = json.loads(session.filter_observation("", {}))
    # The worker loads its helper modules by path, unregistered; no pickle, no multiprocessing.
    assert loaded == []


def test_children_are_reaped(template_pid):
    sandbox = RulesSandbox(ECHO)
    pids = []
    for _ in range(10):
        with sandbox.start_episode() as session:
            pids.append(session._pid)
    assert wait_until(lambda: children(template_pid) == {})
    assert not any(process_exists(pid) for pid in pids)


def test_a_dead_template_is_restarted_and_its_children_die_with_it(template_pid):
    session = RulesSandbox(ECHO).start_episode()
    child = session._pid
    os.kill(template_pid, signal.SIGKILL)
    assert wait_until(lambda: not process_exists(child))  # parent-death signal
    with pytest.raises(RulesError, match="sandbox process died"):
        session.filter_observation("x", {})
    with RulesSandbox(ECHO).start_episode() as fresh:
        assert fresh.filter_observation("back", {}) == "back"
    assert template.get_template().pid != template_pid


def test_shutdown_stops_the_template_and_it_restarts_on_demand(template_pid):
    template.shutdown()
    assert not process_exists(template_pid)
    with RulesSandbox(ECHO).start_episode() as session:
        assert session.filter_observation("again", {}) == "again"


def _in_forked_child(body) -> dict:
    """Runs ``body()`` in a forked copy of this process and returns what it reports."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the fork
        os.close(read_end)
        try:
            report = body()
        except BaseException as e:
            report = {"error": f"{type(e).__name__}: {e}"}
        os.write(write_end, json.dumps(report).encode())
        os._exit(0)
    os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 65536):
        chunks.append(chunk)
    os.close(read_end)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks))


def test_a_forked_host_starts_its_own_template(template_pid):
    inherited = RulesSandbox(ECHO).start_episode()

    def body() -> dict:
        report = {}
        try:
            inherited.filter_observation("x", {})
        except RulesError as e:
            report["inherited"] = str(e)
        with RulesSandbox(ECHO).start_episode() as session:
            report["echo"] = session.filter_observation("from the fork", {})
        report["template"] = template.get_template().pid
        template.shutdown()
        return report

    report = _in_forked_child(body)
    assert "error" not in report, report
    assert "forked from" in report["inherited"]
    assert report["echo"] == "from the fork"
    assert report["template"] != template_pid
    # The parent's template and the parent's session are untouched by the fork.
    assert template.get_template().pid == template_pid
    assert inherited.filter_observation("still mine", {}) == "still mine"
    inherited.close()
