from __future__ import annotations

import threading

import pytest
from sandbox_helpers import ACTION, FAST, STATE, call, hostile, process_exists, wait_until

from envharness.errors import RulesError
from envharness.sandbox import (
    HOOKS,
    RulesSandbox,
    RulesSession,
    SandboxLimits,
    kernel_protections,
    template,
)

ALL_HOOKS = """
class _Rules:
    def filter_action(self, action, state):
        if action["tool"] == "undo":
            return "Undo is disabled."
        if action["tool"] == "move":
            return {"tool": "move", "args": dict(action["args"], checked=state["step"])}
        return action

    def modify_transition(self, action, observation, state):
        return f"[{action['tool']}] {observation}"

    def filter_observation(self, observation, state):
        return observation.upper()
"""

COUNTER = """
import random

DRAWN_AT_IMPORT = random.random()

class _Rules:
    def __init__(self):
        self.calls = 0

    def filter_observation(self, observation, state):
        self.calls += 1
        return f"{self.calls} {random.random():.12f} {DRAWN_AT_IMPORT:.12f}"
"""


@pytest.fixture
def session():
    with RulesSandbox(ALL_HOOKS, limits=FAST).start_episode(seed=0) as s:
        yield s


def test_sandbox_reports_the_checked_hooks():
    sandbox = RulesSandbox(ALL_HOOKS)
    assert sandbox.info.hooks == frozenset(HOOKS)
    assert repr(sandbox).startswith("<RulesSandbox sha256=")


def test_filter_action_can_rewrite_or_block(session):
    assert session.filter_action(ACTION, STATE) == {
        "tool": "move",
        "args": {"to": "north", "checked": 1},
    }
    assert session.filter_action({"tool": "undo", "args": {}}, STATE) == "Undo is disabled."
    assert session.filter_action({"tool": "look", "args": {}}, STATE) == {
        "tool": "look",
        "args": {},
    }


def test_after_step_runs_modify_transition_then_filter_observation(session):
    assert session.after_step(ACTION, "you walk north", STATE) == "[MOVE] YOU WALK NORTH"


def test_filter_observation(session):
    assert session.filter_observation("hello", STATE) == "HELLO"


def test_session_hooks_and_protections(session):
    assert session.hooks == frozenset(HOOKS)
    assert session.alive
    assert set(session.protections) >= {"seccomp", "landlock_abi", "no_new_privs"}
    assert "alive" in repr(session)


def test_hooks_receive_copies(session):
    action = {"tool": "move", "args": {"to": "north"}}
    session.filter_action(action, STATE)
    assert action == {"tool": "move", "args": {"to": "north"}}


@pytest.mark.parametrize(
    ("code", "defined"),
    [
        ("class _Rules:\n    pass\n", set()),
        (
            "class _Rules:\n    def modify_transition(self, action, observation, state):\n"
            "        return observation + '!'\n",
            {"modify_transition"},
        ),
        (
            "class _Rules:\n    def filter_observation(self, observation, state):\n"
            "        return observation + '?'\n",
            {"filter_observation"},
        ),
    ],
    ids=["none", "modify-only", "filter-only"],
)
def test_missing_hooks_are_identity_without_a_round_trip(code, defined):
    with RulesSandbox(code).start_episode() as session:
        exchanges = []
        real = session._exchange

        def counting(*args):
            exchanges.append(args)
            return real(*args)

        session._exchange = counting
        assert session.hooks == defined
        action = {"tool": "t", "args": {}}
        assert session.filter_action(action, STATE) is action
        expected_after = "obs" + ("!" if "modify_transition" in defined else "")
        expected_after += "?" if "filter_observation" in defined else ""
        assert session.after_step(action, "obs", STATE) == expected_after
        expected_filter = "obs?" if "filter_observation" in defined else "obs"
        assert session.filter_observation("obs", STATE) == expected_filter
        after_step_trips = 1 if defined else 0
        filter_trips = 1 if "filter_observation" in defined else 0
        assert len(exchanges) == after_step_trips + filter_trips


def draws(sandbox: RulesSandbox, seed: int | None, n: int = 3) -> list[str]:
    with sandbox.start_episode(seed=seed) as session:
        return [session.filter_observation("", {}) for _ in range(n)]


def test_same_seed_same_randomness_and_fresh_state_each_episode():
    sandbox = RulesSandbox(COUNTER)
    first, again = draws(sandbox, 7), draws(sandbox, 7)
    assert first == again  # the instance counter restarts at 1: a fresh _Rules() per episode
    assert [line.split()[0] for line in first] == ["1", "2", "3"]
    assert draws(sandbox, 8) != first
    assert draws(sandbox, None) == draws(sandbox, 0)


def test_module_globals_do_not_survive_an_episode():
    code = (
        "SEEN = []\nclass _Rules:\n    def filter_observation(self, observation, state):\n"
        "        SEEN.append(observation)\n        return ','.join(SEEN)\n"
    )
    sandbox = RulesSandbox(code)
    for _ in range(2):
        with sandbox.start_episode() as session:
            assert session.filter_observation("a", {}) == "a"
            assert session.filter_observation("b", {}) == "a,b"


def test_set_order_is_reproducible_across_templates():
    code = (
        "class _Rules:\n    def filter_observation(self, observation, state):\n"
        "        return ' '.join(set(observation.split()))\n"
    )
    sandbox = RulesSandbox(code)
    words = " ".join(f"w{i}" for i in range(40))
    with sandbox.start_episode() as session:
        before = session.filter_observation(words, {})
    template.shutdown()
    with sandbox.start_episode() as session:
        assert session.filter_observation(words, {}) == before


def test_concurrent_sessions_do_not_mix():
    code = (
        "class _Rules:\n    def __init__(self):\n        self.seen = []\n"
        "    def filter_observation(self, observation, state):\n"
        "        self.seen.append(observation)\n        return '|'.join(self.seen)\n"
    )
    sandbox = RulesSandbox(code)
    sessions = [sandbox.start_episode(seed=i) for i in range(3)]
    try:
        for step in range(4):
            for i, session in enumerate(sessions):
                got = session.filter_observation(f"s{i}-{step}", {})
                assert got == "|".join(f"s{i}-{k}" for k in range(step + 1))
    finally:
        for session in sessions:
            session.close()


def test_sessions_from_two_threads_do_not_mix():
    code = (
        "class _Rules:\n    def filter_action(self, action, state):\n"
        "        return {'tool': action['tool'], 'args': {'echo': state['who'], "
        "'n': action['args']['n']}}\n"
    )
    sandbox = RulesSandbox(code)
    errors: list[str] = []

    def worker(who: str) -> None:
        for episode in range(3):
            with sandbox.start_episode(seed=episode) as session:
                for n in range(30):
                    got = session.filter_action({"tool": "t", "args": {"n": n}}, {"who": who})
                    if got != {"tool": "t", "args": {"echo": who, "n": n}}:
                        errors.append(f"{who}: {got}")

    threads = [threading.Thread(target=worker, args=(name,)) for name in ("left", "right")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_one_session_shared_by_threads_serializes_calls():
    sandbox = RulesSandbox(
        "class _Rules:\n    def filter_observation(self, observation, state):\n"
        "        return observation * 2\n"
    )
    with sandbox.start_episode() as session:
        results: list[bool] = []

        def hammer(tag: str) -> None:
            for i in range(50):
                results.append(session.filter_observation(f"{tag}{i}", {}) == f"{tag}{i}" * 2)

        threads = [threading.Thread(target=hammer, args=(tag,)) for tag in "ab"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert results == [True] * 100


def test_a_failure_ends_the_session():
    code = (
        "class _Rules:\n    def filter_observation(self, observation, state):\n"
        "        if observation == 'boom':\n            raise ValueError('kaboom')\n"
        "        return observation\n"
    )
    session = RulesSandbox(code, limits=FAST).start_episode()
    pid = session._pid
    assert session.filter_observation("fine", {}) == "fine"
    with pytest.raises(RulesError, match=r"raised ValueError: kaboom") as caught:
        session.filter_observation("boom", {})
    assert caught.value.hook == "filter_observation"
    assert not session.alive
    assert wait_until(lambda: not process_exists(pid))
    with pytest.raises(RulesError, match=r"ended after an earlier failure \(raised ValueError"):
        session.filter_observation("fine", {})
    with pytest.raises(RulesError, match="ended after an earlier failure") as caught:
        session.filter_action(ACTION, STATE)  # not defined, still refused
    assert caught.value.hook == "filter_action"
    session.close()
    session.close()


def test_close_is_idempotent_and_kills_the_child():
    session = RulesSandbox(ALL_HOOKS).start_episode()
    pid = session._pid
    session.close()
    session.close()
    assert not session.alive
    assert wait_until(lambda: not process_exists(pid))
    with pytest.raises(RulesError, match="the session is closed"):
        session.filter_observation("x", {})


def test_bad_input_raises_without_ending_the_session(session):
    assert "filter_action" in session.needs_state  # its hook reads state["step"]
    with pytest.raises(TypeError, match="cannot be sent as JSON"):
        session.filter_action(ACTION, {"items": {1, 2}})
    with pytest.raises(TypeError, match="cannot be sent as JSON"):
        session.filter_action(ACTION, {"v": float("nan")})
    with pytest.raises(TypeError, match="cannot be sent as JSON"):
        session.filter_observation(float("nan"), {})
    assert session.filter_observation("still fine", {}) == "STILL FINE"
    assert session.filter_action(ACTION, STATE)["args"]["checked"] == STATE["step"]


def test_input_over_the_message_cap_is_refused():
    limits = SandboxLimits(max_message_bytes=2048)
    with RulesSandbox(ALL_HOOKS, limits=limits).start_episode() as session:
        with pytest.raises(ValueError, match="over max_message_bytes=2048"):
            session.filter_observation("x" * 5000, {})
        assert session.filter_observation("ok", {}) == "OK"


def test_large_messages_within_the_cap_round_trip():
    code = (
        "class _Rules:\n    def filter_observation(self, observation, state):\n"
        "        return observation + str(len(state['blob']))\n"
    )
    with RulesSandbox(code).start_episode() as session:
        blob = "y" * (3 << 20)
        assert session.filter_observation("x" * 100_000, {"blob": blob}) == "x" * 100_000 + str(
            3 << 20
        )


def test_seed_must_be_an_int():
    with pytest.raises(TypeError, match="expected seed to be an int or None, got str"):
        RulesSandbox(ALL_HOOKS).start_episode(seed="1")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("code", "match"),
    [
        (
            "import json\nclass _Rules:\n    def __init__(self):\n        json.loads('{')\n",
            "JSONDecodeError",
        ),
        ("x = 1 / 0\nclass _Rules:\n    pass\n", "ZeroDivisionError"),
    ],
    ids=["init-raises", "module-raises"],
)
def test_errors_while_loading_are_rules_errors_without_a_hook(code, match):
    with pytest.raises(RulesError, match=rf"loading the code raised {match}") as caught:
        RulesSandbox(code).start_episode()
    assert caught.value.hook is None


def test_restricted_builtins_for_checked_code():
    code = (
        "import json, collections\nclass _Rules:\n"
        "    def filter_observation(self, observation, state):\n"
        "        return json.dumps(collections.Counter(observation).most_common(1))\n"
    )
    with RulesSandbox(code).start_episode() as session:
        assert session.filter_observation("aab", {}) == '[["a", 2]]'
    runtime_import = (
        "class _Rules:\n    def filter_observation(self, observation, state):\n"
        "        mod = 'o' + 's'\n        return str(__builtins__['__import__'](mod))\n"
    )
    with hostile(runtime_import, trusted=False).start_episode() as session:
        with pytest.raises(RulesError, match="import of 'os' is not allowed in rules code"):
            session.filter_observation("", {})


def test_kernel_protections_are_measured():
    report = kernel_protections()
    assert set(report) == {
        "seccomp",
        "landlock_abi",
        "no_new_privs",
        "capabilities_dropped",
        "warnings",
    }
    assert report["no_new_privs"] is True
    if not report["seccomp"]:
        assert any("seccomp" in w for w in report["warnings"])
    if not report["landlock_abi"]:
        assert any("Landlock" in w for w in report["warnings"])


def test_session_is_a_context_manager():
    with RulesSandbox(ALL_HOOKS).start_episode() as session:
        assert isinstance(session, RulesSession)
        assert call(session, "filter_observation") == "YOU ARE IN THE HALL."
    assert not session.alive
