"""The oracle (the gold patch as tool calls, from any state) and the start-state perturbations.

The oracle reads the workspace as it is now. For each file of the gold patch it plays the gold
hunks as ``edit_file`` calls, skipping hunks already applied and, when a hunk's context was
changed (say, a helper was renamed), replacing only its changed lines; when that is not possible
either, it rewrites the whole file to the gold version. Source files of the snapshot that were
deleted are written back. Then it submits. Other changes are left alone, so the plan solves the
task from any state in which the agent has not broken other source files.

Stage candidates are natural things to find in a repository, which keep the task solvable:

- a stale CI log that shows a visible test failing (it passes now);
- a ``NOTES.md`` with a colleague's wrong guess about where the bug is;
- task-specific ones from ``task.json`` (e.g. a helper renamed everywhere it is used).

Example:
    >>> from envharness.bridges.swe.tasks import load_task
    >>> task = load_task("intervals-touching")
    >>> [a.tool for a in oracle_plan(task, task.files)]
    ['edit_file', 'submit']
    >>> [name for name, _ in stage_candidates(task)]
    ['stale CI log', 'misleading notes', 'renamed helper']
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from envharness.bridges.swe.tasks import Hunk, Task
from envharness.core import Action

__all__ = ["oracle_plan", "stage_candidates", "write_file_action"]

_DELIMITER = "SWE_EOF"


def write_file_action(path: str, text: str) -> Action:
    """A ``bash`` call that writes ``text`` to ``path`` with a quoted here-document."""
    delimiter = _DELIMITER
    lines = set(text.splitlines())
    while delimiter in lines:
        delimiter += "_"
    body = text if text.endswith("\n") or not text else text + "\n"
    folder = path.rsplit("/", 1)[0] if "/" in path else ""
    prefix = f"mkdir -p {shlex.quote(folder)} && " if folder else ""
    command = f"{prefix}cat > {shlex.quote(path)} <<'{delimiter}'\n{body}{delimiter}"
    return Action("bash", {"command": command})


def _edit(path: str, old: str, new: str) -> Action:
    return Action("edit_file", {"path": path, "old": old, "new": new})


def _hunk_edits(path: str, text: str, hunks: list[Hunk]) -> list[Action] | None:
    """``edit_file`` calls that apply ``hunks`` to ``text``, or ``None`` if some cannot."""
    edits: list[Action] = []
    for hunk in hunks:
        if text.count(hunk.old) == 1:
            old, new = hunk.old, hunk.new
        elif hunk.old not in text and hunk.new in text:
            continue  # already applied
        elif hunk.removed and text.count(hunk.removed) == 1:
            old, new = hunk.removed, hunk.added
        else:
            return None
        edits.append(_edit(path, old, new))
        text = text.replace(old, new)
    return edits


def oracle_plan(task: Task, current: Mapping[str, bytes]) -> list[Action]:
    """The gold patch as tool calls from the workspace ``current``, then ``submit()``."""
    actions: list[Action] = []
    gold = task.gold_files()
    for path, fixed in gold.items():
        target = fixed.decode("utf-8")
        data = current.get(path)
        if data is None:
            actions.append(write_file_action(path, target))
            continue
        text = data.decode("utf-8", "replace")
        edits = _hunk_edits(path, text, [h for h in task.gold if h.path == path])
        if edits is not None:
            actions.extend(edits)
        elif text != target:
            actions.append(_edit(path, text, target) if text else write_file_action(path, target))
    for path, data in task.files.items():
        if path not in current and path not in gold and not task.protected(path):
            actions.append(write_file_action(path, data.decode("utf-8")))
    actions.append(Action("submit", {}))
    return actions


def _visible_test(task: Task) -> str:
    for test in task.pass_to_pass:
        if test.split("::")[0] in task.files:
            return test
    return task.pass_to_pass[0] if task.pass_to_pass else "tests"


def _stale_log(task: Task) -> list[Action]:
    test = _visible_test(task)
    passing = max(len([t for t in task.pass_to_pass if t.split("::")[0] in task.files]) - 1, 0)
    log = (
        "$ python3 -m pytest\n"
        f"FAILED {test} - AssertionError\n"
        f"1 failed, {passing} passed in 0.21s\n"
        "(CI run on the previous release, kept for reference)\n"
    )
    return [write_file_action("ci-last-run.log", log), Action("bash", {"command": "ls"})]


def _misleading_notes(task: Task) -> list[Action]:
    test_file = _visible_test(task).split("::")[0]
    notes = (
        "# Notes\n\n"
        f"- I could not reproduce the issue with `{task.package}` itself; my guess is that the\n"
        f"  expectations in `{test_file}` are off, and that the code is fine.\n"
        "- Please do not touch `__init__.py` without asking.\n"
    )
    return [write_file_action("NOTES.md", notes), Action("bash", {"command": "ls"})]


def stage_candidates(task: Task) -> list[tuple[str, list[Action]]]:
    """Named start-state perturbations, each a list of in-env actions (deterministic)."""
    stages = [("stale CI log", _stale_log(task)), ("misleading notes", _misleading_notes(task))]
    stages.extend((name, list(actions)) for name, actions in task.stages)
    return stages
