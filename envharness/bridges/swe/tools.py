"""The agent's tools: their schemas, and what each does in a runtime.

- ``bash(command)``: runs a shell command in the repository's root folder; the observation is
  its output (cut to 10,000 characters) and exit code.
- ``read_file(path)``: a file's text (cut to 20,000 characters).
- ``edit_file(path, old, new)``: replaces the exact text ``old``, which must occur exactly once.
- ``run_tests(target)``: the repository's visible tests, with pytest (all, or a file or test id).
- ``submit()``: ends the episode; the hidden tests judge the changes (handled by the env).

A well-formed call that cannot be carried out (no such file, ``old`` not found or not unique,
a target outside the repository) is answered with feedback and ``info["invalid_action"]``.

Example:
    >>> [spec.name for spec in tool_specs(60)]
    ['bash', 'read_file', 'edit_file', 'run_tests', 'submit']
    >>> strip_timings("3 passed, 1 failed in 0.42s")
    '3 passed, 1 failed'
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from envharness.bridges.swe.runtime import (
    ExecResult,
    Runtime,
    WorkspaceFileError,
    normalize_path,
    truncate,
)
from envharness.core import ToolSpec

__all__ = [
    "TEST_COMMAND",
    "ToolOutcome",
    "edit_file",
    "read_file",
    "run_bash",
    "run_tests",
    "strip_timings",
    "tool_specs",
]

TEST_COMMAND = "python3 -m pytest -q -p no:cacheprovider --color=no --tb=short"
"""How ``run_tests`` runs the visible tests (a target is appended)."""

_OUTPUT_LIMIT = 10_000
_READ_LIMIT = 20_000
_SNIPPET_CONTEXT = 2
_SNIPPET_LINES = 30
_TIMING = re.compile(r" in \d+(?:\.\d+)?s(?: \(\d+:\d\d:\d\d\))?")
_SUMMARY = re.compile(r"\b\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed)\b|no tests ran")
_PATH = {
    "type": "string",
    "description": "A file path relative to the repository root, e.g. 'pkg/module.py'.",
}


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call did.

    Attributes:
        observation: The text the agent sees.
        info: Step info (``invalid_action``, ``exit_code``, ``timed_out``, ``tests`` ...).
        mutated: Whether the call may have changed the workspace.
    """

    observation: str
    info: dict[str, Any] = field(default_factory=dict)
    mutated: bool = False


def tool_specs(timeout: float, *, network: bool = False) -> list[ToolSpec]:
    """The five tools, with ``timeout`` (seconds per command) in their descriptions.

    Args:
        timeout: Seconds a command may run.
        network: Whether commands can reach the network (said in ``bash``'s description).
    """
    limits = (
        f"stopped after {timeout:g} s" if network else f"no network; stopped after {timeout:g} s"
    )
    return [
        ToolSpec(
            "bash",
            f"Run a shell command with bash in the repository's root folder ({limits}). Returns "
            f"its output (cut to {_OUTPUT_LIMIT} characters) and exit code.",
            {
                "type": "object",
                "properties": {"command": {"type": "string", "description": "The command."}},
                "required": ["command"],
            },
        ),
        ToolSpec(
            "read_file",
            f"Show the text of a file in the repository (cut to {_READ_LIMIT} characters).",
            {"type": "object", "properties": {"path": _PATH}, "required": ["path"]},
        ),
        ToolSpec(
            "edit_file",
            "Replace one exact piece of text in a file: `old` must occur exactly once in it "
            "(include neighbouring lines to make it unique), and is replaced by `new`.",
            {
                "type": "object",
                "properties": {
                    "path": _PATH,
                    "old": {"type": "string", "description": "The exact text to replace."},
                    "new": {"type": "string", "description": "The text to put in its place."},
                },
                "required": ["path", "old", "new"],
            },
        ),
        ToolSpec(
            "run_tests",
            "Run the repository's tests with pytest and show the results: all of them, or one "
            "test file or test id.",
            {
                "type": "object",
                "properties": {
                    "target": {
                        "type": "string",
                        "description": (
                            "Optional: a test file or test id, e.g. 'tests/test_core.py' or "
                            "'tests/test_core.py::test_name'. Default: every test."
                        ),
                    }
                },
            },
        ),
        ToolSpec(
            "submit",
            "Submit your changes as the final answer. Hidden tests then run on them, and the "
            "episode ends.",
            {"type": "object", "properties": {}},
        ),
    ]


def _invalid(reason: str) -> ToolOutcome:
    return ToolOutcome(f"Error: {reason}", {"invalid_action": reason})


def _shown(result: ExecResult, timeout: float, text: str | None = None) -> str:
    body = truncate(result.output if text is None else text, _OUTPUT_LIMIT)
    if body and not body.endswith("\n"):
        body += "\n"
    if result.timed_out:
        return f"{body}[timed out after {timeout:g} s; the command was stopped]"
    return f"{body}[exit code {result.exit_code}]"


def run_bash(runtime: Runtime, command: str, timeout: float) -> ToolOutcome:
    """``bash(command)``."""
    if not command.strip():
        return _invalid("the command is empty")
    result = runtime.run(command, timeout=timeout)
    info: dict[str, Any] = {"exit_code": result.exit_code}
    if result.timed_out:
        info["timed_out"] = True
    return ToolOutcome(_shown(result, timeout), info, mutated=True)


def read_file(runtime: Runtime, path: str) -> ToolOutcome:
    """``read_file(path)``."""
    try:
        data = runtime.read(path)
    except WorkspaceFileError as e:
        return _invalid(str(e))
    text = data.decode("utf-8", "replace")
    if not text:
        return ToolOutcome("(the file is empty)")
    if len(text) > _READ_LIMIT:
        text = (
            text[:_READ_LIMIT] + f"\n[... {len(text) - _READ_LIMIT} more characters; "
            "use bash (e.g. sed -n '400,500p' FILE) to read the rest]"
        )
    return ToolOutcome(text)


def _snippet(text: str, start: int, count: int) -> str:
    """Lines ``start``..``start + count - 1`` (1-based) of ``text`` with a little context."""
    lines = text.splitlines()
    first = max(1, start - _SNIPPET_CONTEXT)
    last = min(len(lines), start + max(count, 1) - 1 + _SNIPPET_CONTEXT, first + _SNIPPET_LINES)
    return "\n".join(f"{n:>5}  {lines[n - 1]}" for n in range(first, last + 1))


def edit_file(runtime: Runtime, path: str, old: str, new: str) -> ToolOutcome:
    """``edit_file(path, old, new)``: exactly one occurrence of ``old`` becomes ``new``."""
    if not old:
        return _invalid("`old` is empty; give the exact text to replace")
    if old == new:
        return _invalid("`old` and `new` are the same; nothing would change")
    try:
        relative = normalize_path(path)
        data = runtime.read(relative)
    except WorkspaceFileError as e:
        return _invalid(str(e))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return _invalid(f"{relative!r} is not a UTF-8 text file")
    count = text.count(old)
    if count == 0:
        return _invalid(f"`old` was not found in {relative}; read the file and copy it exactly")
    if count > 1:
        return _invalid(
            f"`old` occurs {count} times in {relative}; include neighbouring lines so that it "
            "occurs exactly once"
        )
    at = text.index(old)
    edited = text[:at] + new + text[at + len(old) :]
    try:
        runtime.write(relative, edited.encode("utf-8"))
    except WorkspaceFileError as e:
        return _invalid(str(e))
    start = text.count("\n", 0, at) + 1
    count_new = new.count("\n") + (0 if new.endswith("\n") else 1)
    return ToolOutcome(
        f"Edited {relative}. Lines {start}-{start + max(count_new, 1) - 1} now read:\n"
        + _snippet(edited, start, count_new),
        mutated=True,
    )


def strip_timings(text: str) -> str:
    """Strips run times from pytest output (``" in 0.42s"``), so observations repeat exactly."""
    return "\n".join(
        _TIMING.sub("", line) if _SUMMARY.search(line) else line for line in text.split("\n")
    )


def run_tests(runtime: Runtime, target: str, timeout: float) -> ToolOutcome:
    """``run_tests(target)``: ``python3 -m pytest`` on the repository's tests."""
    target = target.strip()
    if target.startswith("-"):
        return _invalid("`target` is a test file or test id, not a pytest option")
    if target:
        file, sep, rest = target.partition("::")
        try:
            target = normalize_path(file) + sep + rest
        except WorkspaceFileError as e:
            return _invalid(str(e))
    command = TEST_COMMAND + (f" {shlex.quote(target)}" if target else "")
    result = runtime.run(command, timeout=timeout)
    text = strip_timings(result.output)
    summaries = [line for line in text.splitlines() if _SUMMARY.search(line)]
    summary = summaries[-1].strip(" =") if summaries else ""
    info: dict[str, Any] = {"exit_code": result.exit_code, "tests": summary}
    if result.timed_out:
        info["timed_out"] = True
    return ToolOutcome(_shown(result, timeout, text), info, mutated=True)
