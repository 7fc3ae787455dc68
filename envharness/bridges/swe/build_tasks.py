"""Regenerates the ``fail_to_pass`` and ``pass_to_pass`` lists of the SWE tasks from their tests.

For each task folder (see :mod:`~envharness.bridges.swe.tasks` for its layout), the whole test
suite runs twice in a fresh :class:`~envharness.bridges.swe.local_runtime.LocalRuntime`, with the
verifier's pytest command (:func:`~envharness.bridges.swe.verify.hidden_test_command`, given no
test ids so that pytest collects every test, plus ``--continue-on-collection-errors`` so that a
hidden test module that cannot be imported before the fix does not stop the others): once on
``repo/`` with ``hidden/`` written over it, as the verifier builds the workspace, and once more
with ``gold.patch`` applied as well. Outcomes are read from pytest's ``-rA`` summary with the
verifier's own parser (:func:`~envharness.bridges.swe.verify.parse_outcomes`), so test ids are
exactly the ones the verifier will look up. Then:

- ``fail_to_pass``: the tests that pass after the fix and did not pass before it (failed, errored
  or could not be collected);
- ``pass_to_pass``: the tests that pass both before and after it;

both in the order pytest ran them. It is an error when a test fails after the fix (or passed
before it and no longer does), when no test goes from failing to passing, when the test run does
not finish, and when a task file is missing or the gold patch does not apply. Tests that are
skipped or expected to fail after the fix are in neither list.

Without ``--check``, ``task.json`` gets the new lists; every other field and the key order are
kept, and the file is written as ``json.dumps(meta, indent=2)`` plus a newline (the convention of
the shipped tasks), only when its text changes. With ``--check`` nothing is written: the
differences are printed and the exit status is 1 when any task's stored lists differ. The exit
status is 2 on an error.

Usage::

    python -m envharness.bridges.swe.build_tasks                      # every task
    python -m envharness.bridges.swe.build_tasks lru-put-refresh      # one task
    python -m envharness.bridges.swe.build_tasks --check              # compare only
    python -m envharness.bridges.swe.build_tasks --tasks-dir DIR      # tasks elsewhere

The commands run on this machine, with the limits of :class:`LocalRuntime` (no isolation): run it
only on task repositories you trust.

Example:
    >>> before = {"t.py::a": "failed", "t.py::b": "passed"}
    >>> split_tests(before, {"t.py::b": "passed", "t.py::a": "passed", "t.py::c": "passed"})
    TaskLists(fail_to_pass=('t.py::a', 't.py::c'), pass_to_pass=('t.py::b',))
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envharness.bridges.swe.local_runtime import LocalRuntime
from envharness.bridges.swe.runtime import ExecResult
from envharness.bridges.swe.tasks import Task, task_from_folder
from envharness.bridges.swe.verify import hidden_test_command, parse_outcomes
from envharness.errors import BridgeError

__all__ = [
    "TASKS_DIR",
    "TaskLists",
    "TaskReport",
    "build_task",
    "compute_lists",
    "main",
    "read_task",
    "render_meta",
    "split_tests",
    "task_folders",
]

TASKS_DIR = Path(__file__).resolve().parent / "tasks"
"""The tasks shipped with the package (the default ``--tasks-dir``)."""

_REQUIRED = ("task.json", "gold.patch", "problem.md", "repo", "hidden")
_COMMAND = hidden_test_command(()).rstrip() + " --continue-on-collection-errors"
_BEFORE_OK = (0, 1)  # pytest: all passed, or some tests failed (anything else: it did not run)
_TAIL = 2000  # characters of a failed run's output shown in the error


@dataclass(frozen=True)
class TaskLists:
    """The two test lists of a task, in the order pytest ran the tests.

    Attributes:
        fail_to_pass: Tests that do not pass before the gold patch and pass after it.
        pass_to_pass: Tests that pass both before and after it.
    """

    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]

    def as_dict(self) -> dict[str, list[str]]:
        """The lists under their ``task.json`` keys."""
        return {"fail_to_pass": list(self.fail_to_pass), "pass_to_pass": list(self.pass_to_pass)}


# -- reading a task folder ------------------------------------------------------------------------


def _error(folder: Path, problem: str | Exception) -> BridgeError:
    """A :class:`BridgeError` naming the task folder (``problem``'s own ``[swe]`` tag dropped)."""
    message = str(problem).removeprefix("[swe] ")
    return BridgeError(f"task {folder.name!r} ({folder}): {message}", bridge="swe")


def _stored(meta: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """A list stored in ``task.json`` (empty if it is missing or not a list)."""
    value = meta.get(key)
    return tuple(map(str, value)) if isinstance(value, list) else ()


def task_folders(tasks_dir: Path, task_ids: Sequence[str] = ()) -> list[Path]:
    """The folders of ``task_ids`` in ``tasks_dir``, or of every task there (sorted) if none.

    Raises:
        BridgeError: If ``tasks_dir`` is not a folder, or a named task has no folder there.
    """
    if not tasks_dir.is_dir():
        raise BridgeError(f"no tasks folder {str(tasks_dir)!r}", bridge="swe")
    known = sorted(p.name for p in tasks_dir.iterdir() if (p / "task.json").is_file())
    if not task_ids:
        return [tasks_dir / name for name in known]
    folders = []
    for task_id in dict.fromkeys(task_ids):
        folder = tasks_dir / task_id
        if "/" in task_id or task_id in ("", ".", "..") or not folder.is_dir():
            raise BridgeError(
                f"no task folder {task_id!r} in {tasks_dir}; tasks there: {', '.join(known)}",
                bridge="swe",
            )
        folders.append(folder)
    return folders


def _read_meta(folder: Path) -> dict[str, Any]:
    try:
        meta = json.loads((folder / "task.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise _error(folder, f"cannot read task.json: {e}") from e
    if not isinstance(meta, dict):
        raise _error(folder, "task.json is not a JSON object")
    return meta


def read_task(folder: Path) -> Task:
    """The task in ``folder``, whatever its test lists hold (they may be empty or stale).

    Raises:
        BridgeError: If a file of the task is missing or malformed, or the gold patch is not a
            unified diff.
    """
    missing = [name for name in _REQUIRED if not (folder / name).exists()]
    if missing:
        raise _error(folder, f"missing {', '.join(missing)}")
    meta = _read_meta(folder)
    stored = {key: list(_stored(meta, key)) for key in ("fail_to_pass", "pass_to_pass")}
    try:
        return task_from_folder(folder, folder.name, {**meta, **stored})
    except (OSError, ValueError, TypeError, BridgeError) as e:
        raise _error(folder, e) from e


def _gold_files(task: Task, folder: Path) -> dict[str, bytes]:
    """The files the gold patch changes, patched."""
    try:
        return task.gold_files()
    except KeyError as e:
        raise _error(folder, f"gold.patch changes {e.args[0]!r}, which is not in repo/") from e
    except (BridgeError, UnicodeDecodeError) as e:
        raise _error(folder, f"gold.patch does not apply: {e}") from e


# -- running the tests ----------------------------------------------------------------------------


def _run_suite(files: Mapping[str, bytes], timeout: float) -> ExecResult:
    """The whole test suite's run in a fresh temporary workspace holding ``files``."""
    with LocalRuntime() as runtime:
        runtime.start(files)
        return runtime.run(_COMMAND, timeout=timeout)


def _tail(output: str) -> str:
    return output if len(output) <= _TAIL else "[...]" + output[-_TAIL:]


def _outcomes(
    folder: Path, files: Mapping[str, bytes], when: str, ok: Sequence[int], timeout: float
) -> dict[str, str]:
    """Test id -> outcome of a run; the run's exit status must be in ``ok``."""
    result = _run_suite(files, timeout)
    if result.timed_out:
        raise _error(folder, f"the tests {when} did not finish in {timeout:g} s")
    outcomes = parse_outcomes(result.output)
    if result.exit_code not in ok:
        failing = [test for test, outcome in outcomes.items() if outcome in ("failed", "error")]
        if failing:
            raise _error(folder, f"tests fail {when}: {', '.join(failing)}")
        raise _error(
            folder,
            f"pytest exited with status {result.exit_code} {when}:\n{_tail(result.output)}",
        )
    return outcomes


def split_tests(before: Mapping[str, str], after: Mapping[str, str]) -> TaskLists:
    """The test lists from the outcomes before and after the gold patch (test id -> outcome).

    Args:
        before: Outcomes (``"passed"``, ``"failed"``, ``"error"``, ...) without the patch.
        after: Outcomes with it, in the order the tests ran.

    Raises:
        BridgeError: If a test does not pass after the patch (it failed, or it passed before and
            does not now), or no test goes from not passing to passing.
    """
    broken = [
        test
        for test in dict.fromkeys([*after, *before])
        if after.get(test) in ("failed", "error")
        or (before.get(test) == "passed" and after.get(test) != "passed")
    ]
    if broken:
        raise BridgeError(
            f"tests do not pass with the gold patch: {', '.join(broken)}", bridge="swe"
        )
    passed = [test for test, outcome in after.items() if outcome == "passed"]
    lists = TaskLists(
        fail_to_pass=tuple(t for t in passed if before.get(t) != "passed"),
        pass_to_pass=tuple(t for t in passed if before.get(t) == "passed"),
    )
    if not lists.fail_to_pass:
        raise BridgeError(
            "no test fails before the gold patch and passes after it (empty fail_to_pass)",
            bridge="swe",
        )
    return lists


def compute_lists(folder: Path, *, timeout: float = 300.0) -> TaskLists:
    """Runs the task's tests before and after its gold patch; returns the lists they give.

    Args:
        folder: The task folder.
        timeout: Seconds each of the two test runs may take.

    Raises:
        BridgeError: If the task is malformed, its gold patch does not apply or does not fix the
            tests, or a run does not finish.
    """
    task = read_task(folder)
    fixed = _gold_files(task, folder)
    before_files = {**task.files, **task.hidden_files}
    after_files = {**task.files, **fixed, **task.hidden_files}
    before = _outcomes(folder, before_files, "before the gold patch", _BEFORE_OK, timeout)
    after = _outcomes(folder, after_files, "after the gold patch", (0,), timeout)
    try:
        return split_tests(before, after)
    except BridgeError as e:
        raise _error(folder, e) from e


# -- task.json ------------------------------------------------------------------------------------


def render_meta(meta: Mapping[str, Any]) -> str:
    """The text of a ``task.json``: two-space indented JSON, keys in order, a final newline."""
    return json.dumps(meta, indent=2) + "\n"


def _differences(task_id: str, meta: Mapping[str, Any], lists: TaskLists) -> list[str]:
    """Lines describing how the stored lists differ from ``lists`` (none if they match)."""
    lines = []
    for key, new in lists.as_dict().items():
        if meta.get(key) == new:
            continue
        old = list(_stored(meta, key))
        lines.append(f"{task_id}: {key} differs")
        lines += [f"  - {test}" for test in old if test not in new]
        lines += [f"  + {test}" for test in new if test not in old]
        if sorted(old) == sorted(new):
            lines.append("  (the same tests, in another order)")
    return lines


@dataclass(frozen=True)
class TaskReport:
    """What :func:`build_task` found for one task.

    Attributes:
        task_id: The task (its folder's name).
        lists: The lists the test runs give.
        differences: How the stored lists differed from them (empty if they matched).
        written: Whether ``task.json`` was rewritten.
    """

    task_id: str
    lists: TaskLists
    differences: tuple[str, ...]
    written: bool


def build_task(folder: Path, *, check: bool = False, timeout: float = 300.0) -> TaskReport:
    """Recomputes a task's lists; writes them to its ``task.json`` unless ``check``.

    The file is rewritten only when its text changes (new lists, or not in the
    :func:`render_meta` format); every other field keeps its value and place.

    Args:
        folder: The task folder.
        check: Only compare: write nothing.
        timeout: Seconds each of the two test runs may take.

    Raises:
        BridgeError: As :func:`compute_lists`.
    """
    lists = compute_lists(folder, timeout=timeout)
    meta = _read_meta(folder)
    differences = tuple(_differences(folder.name, meta, lists))
    written = False
    if not check:
        path = folder / "task.json"
        text = render_meta({**meta, **lists.as_dict()})
        if path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written = True
    return TaskReport(folder.name, lists, differences, written)


# -- the command line -----------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m envharness.bridges.swe.build_tasks",
        description=__doc__.splitlines()[0].replace("``", ""),
    )
    parser.add_argument("task_ids", nargs="*", metavar="TASK_ID", help="tasks (default: all)")
    parser.add_argument(
        "--tasks-dir", type=Path, default=TASKS_DIR, help="the tasks folder (default: shipped)"
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a stored list differs"
    )
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds per test run (default 300)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: ``[TASK_ID ...] [--tasks-dir DIR] [--check] [--timeout S]``.

    Returns:
        0 when every task was built (or, with ``--check``, matched), 1 when ``--check`` found
        a difference, 2 when a task could not be built.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        folders = task_folders(args.tasks_dir, args.task_ids)
    except BridgeError as e:
        parser.error(str(e))
    status = 0
    for folder in folders:
        try:
            report = build_task(folder, check=args.check, timeout=args.timeout)
        except BridgeError as e:
            print(f"error: {e}", file=sys.stderr)
            status = 2
            continue
        for line in report.differences:
            print(line)
        counts = f"{len(report.lists.fail_to_pass)} fail_to_pass, "
        counts += f"{len(report.lists.pass_to_pass)} pass_to_pass"
        if args.check:
            print(f"{report.task_id}: {counts}: {'DIFFERS' if report.differences else 'ok'}")
            if report.differences:
                status = max(status, 1)
        else:
            print(f"{report.task_id}: {counts}: {'written' if report.written else 'unchanged'}")
    return status


if __name__ == "__main__":  # pragma: no cover - the command line
    raise SystemExit(main())
