"""Helpers shared by the sandbox tests: hook calls, process inspection through /proc."""

from __future__ import annotations

import os
import textwrap
import time
from collections.abc import Callable

from envharness.sandbox import RulesSandbox, RulesSession, SandboxLimits

FAST = SandboxLimits(call_timeout=0.3)
ACTION = {"tool": "move", "args": {"to": "north"}}
STATE = {"room": "hall", "step": 1, "inventory": ["lamp"]}


def rules(hook: str, body: str, *, imports: str = "") -> str:
    """Rules code whose only hook is ``hook``, with ``body`` as its body."""
    params = {
        "filter_action": "action, state",
        "modify_transition": "action, observation, state",
        "filter_observation": "observation, state",
    }[hook]
    body = textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8)
    return f"{imports}\nclass _Rules:\n    def {hook}(self, {params}):\n{body}\n"


def call(session: RulesSession, hook: str) -> object:
    """Calls ``hook`` on the session with fixed arguments (``modify_transition`` via after_step)."""
    if hook == "filter_action":
        return session.filter_action(dict(ACTION), dict(STATE))
    if hook == "modify_transition":
        return session.after_step(dict(ACTION), "You walk north.", dict(STATE))
    return session.filter_observation("You are in the hall.", dict(STATE))


def hostile(code: str, *, trusted: bool = True, limits: SandboxLimits = FAST) -> RulesSandbox:
    """A sandbox for code that skips the static check (test seam), with real builtins by default."""
    return RulesSandbox(code, limits=limits, _unchecked=True, _trusted_builtins=trusted)


def _stat(pid: int) -> tuple[str, int] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2 :].split()
    return fields[0].decode(), int(fields[1])


def children(ppid: int) -> dict[int, str]:
    """``pid -> state`` of the processes whose parent is ``ppid`` (``Z`` marks a zombie)."""
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = _stat(int(name))
            if stat is not None and stat[1] == ppid:
                found[int(name)] = stat[0]
    return found


def process_exists(pid: int) -> bool:
    """Whether ``pid`` is a process (zombies included)."""
    return _stat(pid) is not None


def wait_until(predicate: Callable[[], bool], timeout: float = 3.0) -> bool:
    """Polls ``predicate`` until it holds or ``timeout`` passes; returns its last value."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def open_fds() -> set[int]:
    """The fds this process has open."""
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


def rss_mb() -> float:
    """This process's resident set size."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")
