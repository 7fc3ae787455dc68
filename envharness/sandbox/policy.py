"""What rules code may use: the hooks, their parameters, the importable modules, the builtins.

This module is shared by the host (the static check) and the sandbox worker, which loads it by
file path under ``python -I -S``: it must import nothing from envharness and nothing heavy.
"""

from __future__ import annotations

__all__ = [
    "ALLOWED_IMPORTS",
    "HOOKS",
    "HOOK_PARAMS",
    "REMOVED_BUILTINS",
]

HOOKS: tuple[str, ...] = ("filter_action", "modify_transition", "filter_observation")
"""The hook names, in the order they run around a step."""

HOOK_PARAMS: dict[str, tuple[str, ...]] = {
    "filter_action": ("action", "state"),
    "modify_transition": ("action", "observation", "state"),
    "filter_observation": ("observation", "state"),
}
"""Each hook's parameters after ``self``."""

ALLOWED_IMPORTS: frozenset[str] = frozenset(
    {
        "__future__",
        "bisect",
        "collections",
        "dataclasses",
        "difflib",
        "enum",
        "fractions",
        "functools",
        "heapq",
        "itertools",
        "json",
        "math",
        "operator",
        "random",
        "re",
        "statistics",
        "string",
        "textwrap",
        "typing",
    }
)
"""Top-level modules rules code may import (the sandbox imports them before it locks down).

``__future__`` is listed so that ``from __future__ import annotations`` works; it is a compiler
directive with nothing to reach. None of these modules is a wall: several hold references to
``sys`` or ``os``, which is why the kernel layers (seccomp, Landlock) are what contain the code.
"""

REMOVED_BUILTINS: frozenset[str] = frozenset(
    {
        "__loader__",
        "__spec__",
        "breakpoint",
        "compile",
        "copyright",
        "credits",
        "eval",
        "exec",
        "exit",
        "globals",
        "help",
        "input",
        "license",
        "open",
        "quit",
        "vars",
    }
)
"""Builtins rules code does not get (defense in depth; ``__import__`` is replaced, not removed)."""
