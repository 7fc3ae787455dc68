"""The compact hook calls: state sent only when read and changed, ``=`` replies, needs_state."""

from __future__ import annotations

import pytest
from sandbox_helpers import ACTION, STATE, hostile, rules

from envharness.sandbox import RulesSandbox, protocol
from envharness.sandbox.protocol import BadFrame, hook_request, split_hook_request

READS_STATE = """
class _Rules:
    def filter_action(self, action, state):
        state["step"] += 100  # a hook may mutate its copy: the next call gets a fresh one
        return action

    def filter_observation(self, observation, state):
        return observation + " " + str(state["step"])
"""


def recording(session):
    """Wraps the session's exchange; returns the list of request bodies it sends."""
    bodies = []
    real = session._exchange

    def exchange(frame, seq, deadline):
        bodies.append(bytes(frame[protocol.HEADER.size :]))
        return real(frame, seq, deadline)

    session._exchange = exchange
    return bodies


def test_hook_request_round_trips():
    first = protocol.encode_text({"tool": "t", "args": {"s": "a\nb é"}})
    assert "\n" not in first and first.isascii()
    for state, expected in [("{}", "{}"), (None, None), (protocol.NO_STATE, protocol.NO_STATE)]:
        op, got_first, got_state = split_hook_request(hook_request("a", first, state))
        assert (op, got_first, got_state) == ("a", first, expected)


@pytest.mark.parametrize("body", [b"", b"a", b"a[]", b"a[]\n", b"a[]\n*", b"a[]\n=x", b"\xff\n="])
def test_split_hook_request_rejects_other_bodies(body):
    with pytest.raises(BadFrame):
        split_hook_request(body)


def test_state_travels_only_when_its_json_changed_and_each_call_gets_a_fresh_copy():
    with RulesSandbox(READS_STATE).start_episode() as session:
        assert session.needs_state == {"filter_action", "after_step", "filter_observation"}
        bodies = recording(session)
        state = dict(STATE)
        assert session.filter_action(ACTION, state) is ACTION
        assert session.filter_observation("obs", state) == "obs 1"  # not the mutated 101
        state["step"] = 2
        assert session.filter_observation("obs", state) == "obs 2"
        assert session.filter_observation("obs", dict(state)) == "obs 2"
        assert [body.rsplit(b"\n", 1)[1][:1] for body in bodies] == [b"+", b"=", b"+", b"="]
        assert state == {**STATE, "step": 2}  # the host's own dict is never touched


def test_hooks_that_never_name_state_get_none_and_no_state_is_sent():
    code = """
class _Rules:
    def filter_action(self, action, state):
        return action

    def modify_transition(self, action, observation, state):
        return observation + "!"

    def filter_observation(self, observation, state):
        return observation
"""
    with RulesSandbox(code).start_episode() as session:
        assert session.needs_state == frozenset()
        bodies = recording(session)
        assert session.filter_action(ACTION, None) is ACTION
        assert session.after_step(ACTION, "obs", None) == "obs!"
        assert all(body.endswith(b"\n-") for body in bodies)


@pytest.mark.parametrize(
    ("hook", "body", "needs"),
    [
        ("filter_observation", "return observation", False),
        ("filter_observation", "return str(len(state))", True),
        ("filter_observation", "f = lambda: state\nreturn str(f())", True),
        ("filter_observation", "return str(sorted(locals()))", True),
        ("modify_transition", "return observation + str(state)", True),
        ("modify_transition", "return observation", False),
    ],
)
def test_needs_state_is_conservative(hook, body, needs):
    call = "after_step" if hook == "modify_transition" else hook
    with RulesSandbox(rules(hook, body)).start_episode() as session:
        assert (call in session.needs_state) is needs


def test_a_helper_that_reads_frames_makes_every_hook_read_state():
    code = """
import sys

class _Rules:
    def filter_observation(self, observation, state):
        return self.peek()

    def peek(self):
        return str(sys._getframe(1).f_locals["state"])
"""
    with hostile(code).start_episode() as session:
        assert session.needs_state == {"after_step", "filter_observation"}
        assert session.filter_observation("obs", {"k": 1}) == "{'k': 1}"


def test_unchanged_results_come_back_as_the_hosts_own_objects():
    code = """
class _Rules:
    def filter_action(self, action, state):
        if action["tool"] == "swap":
            action["args"]["to"] = "south"  # rewrites by mutating its copy
        return action

    def filter_observation(self, observation, state):
        return observation
"""
    with RulesSandbox(code).start_episode() as session:
        action = {"tool": "move", "args": {"to": "north"}}
        assert session.filter_action(action, {}) is action
        swap = {"tool": "swap", "args": {"to": "north"}}
        changed = session.filter_action(swap, {})
        assert changed == {"tool": "swap", "args": {"to": "south"}} and changed is not swap
        assert swap == {"tool": "swap", "args": {"to": "north"}}
        observation = "x" * 10_000
        assert session.filter_observation(observation, {}) is observation
