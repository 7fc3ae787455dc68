"""The rules sandbox: runs LLM-written ``_Rules`` hooks in contained child processes.

Rules code is treated as hostile. It is checked statically first (:func:`check_rules_code`), then
runs in one child process per episode, forked from a lean template process and locked down before
the code is loaded: environment reduced to ``PATH``, all other fds closed, new session,
parent-death signal, rlimits (CPU, memory, file size, files, processes), capabilities dropped,
``no_new_privs``, Landlock (read-only access to the Python installation, nothing else), a seccomp
filter (no processes, threads, sockets, signals to others, mounts, namespaces ...) and restricted
builtins with an import allow-list. Host and child exchange length-prefixed JSON with sequence
numbers under a per-call wall-clock timeout; anything unexpected kills the child and raises
:class:`~envharness.errors.RulesError` naming the hook. The host never runs the code, never hangs
and never unpickles anything. The child is pinned to the CPU of the thread calling it (re-pinned
when that thread moves) and the host yields that CPU while it waits, so a hook call costs no
cross-CPU wake-up (:mod:`envharness.sandbox.affinity`).

Example:
    >>> from envharness.sandbox import RulesSandbox
    >>> sandbox = RulesSandbox('''
    ... class _Rules:
    ...     def filter_action(self, action, state):
    ...         if action["tool"] == "undo":
    ...             return "Undo is disabled."
    ...         return action
    ... ''')
    >>> with sandbox.start_episode(seed=0) as session:
    ...     session.filter_action({"tool": "undo", "args": {}}, {})
    'Undo is disabled.'
"""

from __future__ import annotations

from envharness.sandbox.check import RulesCodeInfo, check_rules_code, rules_sha256
from envharness.sandbox.limits import SandboxLimits
from envharness.sandbox.policy import ALLOWED_IMPORTS, HOOKS
from envharness.sandbox.session import RulesSandbox, RulesSession, kernel_protections

__all__ = [
    # what rules code may define and use
    "ALLOWED_IMPORTS",
    "HOOKS",
    # static check
    "RulesCodeInfo",
    "check_rules_code",
    "rules_sha256",
    # running it
    "RulesSandbox",
    "RulesSession",
    "SandboxLimits",
    "kernel_protections",
]
