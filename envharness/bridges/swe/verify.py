r"""The verifier: the hidden tests, run on the agent's changes in a fresh workspace.

The agent's changes are what differs between its workspace and the task's snapshot (added,
modified and deleted files; caches left out). To verify them, a *fresh* runtime of the same kind
(a new container, or a new temporary folder) gets the snapshot, then the changes (except those to
protected paths: tests, ``conftest.py`` files, test configuration), then the hidden test files,
and runs the ``fail_to_pass`` and ``pass_to_pass`` tests with pytest. Success means every one of
them passed. The agent's own workspace is never used, so nothing it left running or changed
outside the repository can affect the verdict.

Test results are cached per process by task, runtime and the content of the applied changes, so
asking twice about the same changes runs the tests once.

Example:
    >>> changes = compute_changes({"a.py": b"x = 1\n"}, {"a.py": b"x = 2\n", "b.py": b""})
    >>> sorted(changes)
    ['a.py', 'b.py']
    >>> print(unified_diff({"a.py": b"x = 1\n"}, changes), end="")
    --- a/a.py
    +++ b/a.py
    @@ -1 +1 @@
    -x = 1
    +x = 2
    --- /dev/null
    +++ b/b.py
    >>> parse_outcomes("PASSED tests/t.py::test_a\nFAILED tests/t.py::test_b - assert 0\n")
    {'tests/t.py::test_a': 'passed', 'tests/t.py::test_b': 'failed'}
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import re
import shlex
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from envharness.bridges.swe.runtime import Runtime, truncate
from envharness.bridges.swe.tasks import Task
from envharness.core import Evaluation

__all__ = [
    "Changes",
    "compute_changes",
    "hidden_test_command",
    "parse_outcomes",
    "unified_diff",
    "verify",
]

Changes = dict[str, bytes | None]
"""The agent's changes: relative path -> new content, or ``None`` for a deleted file."""

_OUTCOME = re.compile(r"^(PASSED|FAILED|ERROR|XPASS|XFAIL) (.+)$")
_FINAL_LINE = re.compile(
    r"^=*\s*(?:\d+ (?:passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?),? ?)+"
    r" in \d+(?:\.\d+)?s\b",
    re.MULTILINE,
)
_MAX_PATCH = 20_000
_CACHE_SIZE = 256
# fail_to_pass, pass_to_pass, whether pytest finished (printed its final line), timed out
_Verdict = tuple[dict[str, Any], dict[str, Any], bool, bool]
_CACHE: OrderedDict[tuple[str, str, str], _Verdict] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def compute_changes(original: Mapping[str, bytes], current: Mapping[str, bytes]) -> Changes:
    """What differs in ``current`` from ``original``, sorted by path."""
    changes: Changes = {}
    for path in sorted(set(original) | set(current)):
        if path not in current:
            changes[path] = None
        elif original.get(path) != current[path]:
            changes[path] = current[path]
    return changes


def _lines(data: bytes | None) -> list[str] | None:
    if data is None:
        return []
    try:
        return data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def unified_diff(original: Mapping[str, bytes], changes: Changes, limit: int = _MAX_PATCH) -> str:
    """The changes as a unified diff (``a/``/``b/`` paths; ``/dev/null`` for added or deleted)."""
    parts: list[str] = []
    for path, data in changes.items():
        before, after = original.get(path), data
        old, new = _lines(before), _lines(after)
        source = f"a/{path}" if before is not None else "/dev/null"
        target = f"b/{path}" if after is not None else "/dev/null"
        if old is None or new is None:
            parts.append(f"Binary files {source} and {target} differ\n")
            continue
        body = list(difflib.unified_diff(old, new, source, target, n=3))
        if not body:  # an empty file added or deleted: no lines, only the headers
            body = [f"--- {source}\n", f"+++ {target}\n"]
        parts.extend(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            for line in body
        )
    return truncate("".join(parts), limit)


def parse_outcomes(output: str) -> dict[str, str]:
    """Test id -> ``passed``/``failed``/``error``/... from pytest's ``-rA`` summary lines.

    A test id may contain spaces (parametrized ids); on failure lines, the message after
    ``" - "`` is dropped.
    """
    outcomes: dict[str, str] = {}
    for line in output.splitlines():
        match = _OUTCOME.match(line)
        if match:
            kind, rest = match.group(1), match.group(2)
            test = rest if kind == "PASSED" else rest.split(" - ", 1)[0]
            outcomes.setdefault(test.rstrip(), kind.lower())
    return outcomes


def hidden_test_command(test_ids: tuple[str, ...]) -> str:
    """The pytest command the verifier runs: isolated (``-I``), no conftest, no cache."""
    flags = "-q -rA --tb=no --color=no -p no:cacheprovider --noconftest -o pythonpath=."
    return f"python3 -I -m pytest {flags} " + " ".join(shlex.quote(t) for t in test_ids)


def _effective(task: Task, changes: Changes) -> tuple[Changes, list[str]]:
    """The changes the verifier applies, and the protected paths whose changes it ignores."""
    kept: Changes = {}
    ignored: list[str] = []
    for path, data in changes.items():
        if task.protected(path):
            ignored.append(path)
        else:
            kept[path] = data
    return kept, ignored


def _digest(changes: Changes) -> str:
    digest = hashlib.sha256()
    for path, data in changes.items():
        digest.update(path.encode() + b"\0")
        digest.update(b"-" if data is None else b"+" + hashlib.sha256(data).digest())
    return digest.hexdigest()


def _summary(ids: tuple[str, ...], outcomes: Mapping[str, str]) -> dict[str, Any]:
    failed = [t for t in ids if outcomes.get(t) != "passed"]
    return {"passed": len(ids) - len(failed), "total": len(ids), "failed": failed}


def verify(
    task: Task,
    changes: Changes,
    make_runtime: Callable[[], Runtime],
    *,
    runtime_key: str,
    timeout: float = 300.0,
) -> Evaluation:
    """Runs the hidden tests on ``changes`` in a fresh runtime; success when all pass.

    Args:
        task: The task.
        changes: The agent's changes (see :func:`compute_changes`).
        make_runtime: Builds the fresh runtime (closed again before returning).
        runtime_key: Names the runtime kind and image, for the cache.
        timeout: Seconds the test run may take.

    Returns:
        The verdict; ``details`` gives per-list counts and failing ids, ``completed`` (pytest
        finished and printed its final summary line: a run that dies early never succeeds,
        whatever it printed before), the changed and ignored paths, and the applied patch.
    """
    kept, ignored = _effective(task, changes)
    key = (task.task_id, runtime_key, _digest(kept))
    with _CACHE_LOCK:
        verdict = _CACHE.get(key)
        if verdict is not None:
            _CACHE.move_to_end(key)
    if verdict is None:
        verdict = _run_hidden_tests(task, kept, make_runtime, timeout)
        with _CACHE_LOCK:
            _CACHE[key] = verdict
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
    fail_to_pass, pass_to_pass, completed, timed_out = copy.deepcopy(verdict)
    success = not fail_to_pass["failed"] and not pass_to_pass["failed"] and completed
    details = {
        "fail_to_pass": fail_to_pass,
        "pass_to_pass": pass_to_pass,
        "completed": completed,
        "changed_files": sorted(kept),
        "ignored_changes": sorted(ignored),
        "timed_out": timed_out,
        "patch": unified_diff(task.files, kept),
    }
    return Evaluation(success, 1.0 if success else 0.0, details)


def _run_hidden_tests(
    task: Task, kept: Changes, make_runtime: Callable[[], Runtime], timeout: float
) -> _Verdict:
    """The hidden tests' results on the snapshot with ``kept`` applied, in a fresh runtime."""
    files = dict(task.files)
    for path, data in kept.items():
        if data is None:
            files.pop(path, None)
        else:
            files[path] = data
    files.update(task.hidden_files)
    runtime = make_runtime()
    try:
        runtime.start(files)
        result = runtime.run(hidden_test_command(task.hidden_tests), timeout=timeout)
    finally:
        runtime.close()
    outcomes = parse_outcomes(result.output)
    completed = not result.timed_out and _FINAL_LINE.search(result.output) is not None
    return (
        _summary(task.fail_to_pass, outcomes),
        _summary(task.pass_to_pass, outcomes),
        completed,
        result.timed_out,
    )
