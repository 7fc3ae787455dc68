"""The child follows the host thread's CPU (``SandboxLimits.follow_host_cpu``)."""

from __future__ import annotations

import os
import signal

import pytest
from sandbox_helpers import ACTION

from envharness.errors import RulesError
from envharness.sandbox import RulesSandbox, SandboxLimits, affinity, session

IDENTITY = """
class _Rules:
    def filter_action(self, action, state):
        return action
"""
several_cpus = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="needs a host allowed on two CPUs or more"
)


def test_cpu_reader_names_a_cpu_this_thread_may_run_on():
    read = affinity.cpu_reader()
    assert read is not None  # Linux with glibc or musl: sched_getcpu exists
    assert read() in os.sched_getaffinity(0)
    assert affinity.cpu_reader() is read  # looked up once


@several_cpus
def test_the_child_is_pinned_to_the_callers_cpu_and_follows_it():
    allowed = os.sched_getaffinity(0)
    target = min(allowed)
    with RulesSandbox(IDENTITY).start_episode() as sess:
        assert os.sched_getaffinity(sess._pid) == allowed  # not pinned before the first call
        try:
            os.sched_setaffinity(0, {target})
            assert sess.filter_action(ACTION, None) is ACTION
            assert os.sched_getaffinity(sess._pid) == {target}
            moved = max(allowed)
            os.sched_setaffinity(0, {moved})
            assert sess.filter_action(ACTION, None) is ACTION
            assert os.sched_getaffinity(sess._pid) == {moved}
        finally:
            os.sched_setaffinity(0, allowed)


@several_cpus
def test_follow_host_cpu_off_leaves_placement_to_the_scheduler():
    allowed = os.sched_getaffinity(0)
    limits = SandboxLimits(follow_host_cpu=False)
    with RulesSandbox(IDENTITY, limits=limits).start_episode() as sess:
        for _ in range(3):
            assert sess.filter_action(ACTION, None) is ACTION
        assert os.sched_getaffinity(sess._pid) == allowed
        assert sess._channel.spin_seconds == 0


def test_a_refused_pin_stops_following_and_the_calls_go_on(monkeypatch):
    def refuse(pid, cpus):
        raise PermissionError(1, "Operation not permitted")

    with RulesSandbox(IDENTITY).start_episode() as sess:
        assert sess._channel.spin_seconds > 0
        monkeypatch.setattr(session.os, "sched_setaffinity", refuse)
        for _ in range(3):
            assert sess.filter_action(ACTION, None) is ACTION
        assert sess._getcpu is None
        assert sess._channel.spin_seconds == 0  # the child may be elsewhere: sleep, don't spin


def test_a_child_that_exited_is_never_pinned(monkeypatch):
    """Its pid may belong to another process by then (the template reaps it at once)."""
    pinned = []
    with RulesSandbox(IDENTITY).start_episode() as sess:
        assert sess.filter_action(ACTION, None) is ACTION
        monkeypatch.setattr(session.os, "sched_setaffinity", lambda pid, cpus: pinned.append(pid))
        sess._follow(sess._cpu + 1)
        assert pinned == [sess._pid]  # alive: pinned
        os.kill(sess._pid, signal.SIGKILL)
        assert sess._exited(2.0)
        sess._follow(sess._cpu + 1)
        assert pinned == [sess._pid]  # exited: left alone
        with pytest.raises(RulesError, match="died"):
            sess.filter_action(ACTION, None)
        sess._follow(0)  # released
        assert pinned == [sess._pid]


def test_follow_host_cpu_must_be_a_bool():
    with pytest.raises(RulesError, match="expected follow_host_cpu to be true or false, got 1"):
        SandboxLimits(follow_host_cpu=1)  # type: ignore[arg-type]
