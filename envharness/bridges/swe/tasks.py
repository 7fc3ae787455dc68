"""The SWE tasks shipped with the bridge: loading, listing and the gold patches.

Each task is a folder ``tasks/<task_id>/`` inside this package:

- ``repo/``: the repository snapshot the agent starts from (a small Python project with a bug);
- ``hidden/``: test files the agent never sees, written over the repository at verification
  (the tests for the issue);
- ``problem.md``: the issue, as a user would report it;
- ``gold.patch``: a unified diff that fixes the bug (the reference solution);
- ``task.json``: ``split`` (``"train"`` or ``"test"``), ``fail_to_pass`` and ``pass_to_pass``
  (pytest node ids: the tests that must go from failing to passing, and those that must keep
  passing) and ``stages`` (task-specific start-state perturbations, as named lists of actions).

Example:
    >>> task = load_task("romans-large-subtractive")
    >>> task.split, task.package, len(task.fail_to_pass) > 0
    ('train', 'romans', True)
    >>> [hunk.path for hunk in task.gold]
    ['romans/convert.py']
    >>> task.protected("tests/test_convert.py"), task.protected("romans/convert.py")
    (True, False)
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

from envharness.bridgekit.checks import check_split
from envharness.core import Action
from envharness.errors import BridgeError, UnknownTaskError

__all__ = ["SPLITS", "Hunk", "Task", "apply_hunks", "load_task", "parse_patch", "task_ids"]

SPLITS = ("train", "test", "all")
_TEST_DIR = "tests/"
_CONFIG_FILES = frozenset({"pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini"})
_HUNK_HEADER = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")


@dataclass(frozen=True)
class Hunk:
    """One hunk of a patch, as an exact-text replacement.

    Attributes:
        path: The file, relative to the repository root.
        old: The hunk's text before the change (context and removed lines).
        new: Its text after the change (context and added lines).
        removed: Only the removed lines (the change without context).
        added: Only the added lines.
    """

    path: str
    old: str
    new: str
    removed: str
    added: str


def parse_patch(text: str) -> list[Hunk]:
    r"""Reads a unified diff (``--- a/path`` / ``+++ b/path`` / ``@@`` hunks) into hunks.

    Raises:
        BridgeError: If the text is not a unified diff of existing files.

    Example:
        >>> patch = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n"
        >>> parse_patch(patch)[0].new
        'x = 1\ny = 3\n'
    """
    hunks: list[Hunk] = []
    path: str | None = None
    lines = text.splitlines(keepends=True)
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("+++ "):
            name = line[4:].strip().split("\t")[0]
            if not name.startswith("b/"):
                raise BridgeError(f"patch: expected '+++ b/<path>', got {line.strip()!r}")
            path = name[2:]
        elif _HUNK_HEADER.match(line):
            if path is None:
                raise BridgeError("patch: a hunk comes before any '+++ b/<path>' line")
            old, new, removed, added = [], [], [], []
            index += 1
            while index < len(lines) and lines[index][:1] in (" ", "-", "+", "\\"):
                body = lines[index]
                if body.startswith(("--- ", "+++ ")) and not old and not new:
                    break
                kind, content = body[:1], body[1:]
                if kind == "\\":  # "\ No newline at end of file": drop the previous newline
                    for part in (old, new, removed, added):
                        if part and part[-1].endswith("\n"):
                            part[-1] = part[-1][:-1]
                elif kind == " ":
                    old.append(content)
                    new.append(content)
                elif kind == "-":
                    old.append(content)
                    removed.append(content)
                else:
                    new.append(content)
                    added.append(content)
                index += 1
            hunks.append(Hunk(path, "".join(old), "".join(new), "".join(removed), "".join(added)))
            continue
        index += 1
    if not hunks:
        raise BridgeError("patch: no hunks found")
    return hunks


def apply_hunks(text: str, hunks: list[Hunk]) -> str:
    """``text`` with ``hunks`` applied in order, each matching exactly once.

    Raises:
        BridgeError: If a hunk's old text is missing or not unique.
    """
    for hunk in hunks:
        count = text.count(hunk.old)
        if count != 1:
            raise BridgeError(f"gold patch: a hunk of {hunk.path} matches {count} times, not once")
        text = text.replace(hunk.old, hunk.new)
    return text


@dataclass(frozen=True)
class Task:
    """One SWE task: a repository snapshot with a bug, its issue, its tests and its fix.

    Attributes:
        task_id: The task's name (its folder).
        split: ``"train"`` or ``"test"``.
        problem_statement: The issue text.
        files: The repository snapshot (relative path -> content).
        hidden_files: Test files written over the repository at verification.
        fail_to_pass: Test ids that fail before the fix and must pass after it.
        pass_to_pass: Test ids that pass before the fix and must keep passing.
        gold: The reference fix, as hunks.
        stages: Task-specific start-state perturbations: ``(name, actions)`` pairs.
    """

    task_id: str
    split: str
    problem_statement: str
    files: Mapping[str, bytes]
    hidden_files: Mapping[str, bytes]
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    gold: tuple[Hunk, ...]
    stages: tuple[tuple[str, tuple[Action, ...]], ...]

    @property
    def package(self) -> str:
        """The name of the repository's Python package (the folder holding ``__init__.py``)."""
        for path in sorted(self.files):
            if path.count("/") == 1 and path.endswith("/__init__.py"):
                return path.split("/")[0]
        return self.task_id

    @property
    def hidden_tests(self) -> tuple[str, ...]:
        """Every test id the verifier runs: ``fail_to_pass`` then ``pass_to_pass``."""
        return self.fail_to_pass + self.pass_to_pass

    def protected(self, path: str) -> bool:
        """Whether the verifier ignores the agent's changes to ``path``.

        Tests (``tests/``, the hidden files, any ``conftest.py``) and test configuration files
        at the root are restored to the task's own version before the hidden tests run.
        """
        name = path.rsplit("/", 1)[-1]
        return (
            path.startswith(_TEST_DIR)
            or path in self.hidden_files
            or name == "conftest.py"
            or path in _CONFIG_FILES
        )

    def gold_files(self) -> dict[str, bytes]:
        """The repository with the gold patch applied (only the files the patch changes)."""
        fixed: dict[str, bytes] = {}
        for path in dict.fromkeys(hunk.path for hunk in self.gold):
            original = self.files[path].decode("utf-8")
            hunks = [hunk for hunk in self.gold if hunk.path == path]
            fixed[path] = apply_hunks(original, hunks).encode("utf-8")
        return fixed


# -- loading --------------------------------------------------------------------------------------


def _root() -> Traversable:
    return resources.files("envharness.bridges.swe") / "tasks"


def read_tree(folder: Traversable, prefix: str = "") -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        relative = f"{prefix}{entry.name}"
        if entry.is_dir():
            if entry.name != "__pycache__":
                files.update(read_tree(entry, relative + "/"))
        elif not entry.name.endswith((".pyc", ".pyo")):
            files[relative] = entry.read_bytes()
    return files


@functools.cache
def _all_ids() -> tuple[str, ...]:
    return tuple(
        sorted(e.name for e in _root().iterdir() if e.is_dir() and (e / "task.json").is_file())
    )


def task_ids(split: str = "train") -> list[str]:
    """Ids of the tasks in ``split`` (``"train"``, ``"test"`` or ``"all"``), sorted.

    Raises:
        UnknownTaskError: If ``split`` is not one of :data:`SPLITS`.

    Example:
        >>> task_ids("test")
        ['duration-exact-units', 'matrix-rectangular-product', 'semver-numeric-order']
    """
    check_split(split, SPLITS, bridge="swe")
    ids = _all_ids()
    return list(ids) if split == "all" else [t for t in ids if load_task(t).split == split]


def parse_stages(raw: Any, task_id: str) -> tuple[tuple[str, tuple[Action, ...]], ...]:
    stages = []
    for stage in raw or ():
        try:
            actions = tuple(Action.from_dict(a) for a in stage["actions"])
            stages.append((str(stage["name"]), actions))
        except (KeyError, TypeError, ValueError) as e:
            raise BridgeError(f"task {task_id!r}: malformed stage {stage!r}", bridge="swe") from e
    return tuple(stages)


def task_from_folder(folder: Traversable, task_id: str, meta: Mapping[str, Any]) -> Task:
    """The task whose files are in ``folder`` and whose ``task.json`` parsed to ``meta``.

    Missing test lists are empty and a missing split is ``""``; callers check what they need.

    Raises:
        OSError: If a file of the task cannot be read.
        BridgeError: If the gold patch or the stages are malformed.
    """
    return Task(
        task_id=task_id,
        split=str(meta.get("split", "")),
        problem_statement=(folder / "problem.md").read_text(encoding="utf-8").strip(),
        files=read_tree(folder / "repo"),
        hidden_files=read_tree(folder / "hidden"),
        fail_to_pass=tuple(map(str, meta.get("fail_to_pass") or ())),
        pass_to_pass=tuple(map(str, meta.get("pass_to_pass") or ())),
        gold=tuple(parse_patch((folder / "gold.patch").read_text(encoding="utf-8"))),
        stages=parse_stages(meta.get("stages"), task_id),
    )


@functools.cache
def load_task(task_id: str) -> Task:
    """The task ``task_id`` (read once per process).

    Raises:
        UnknownTaskError: If there is no such task, naming the valid ids.
        BridgeError: If the task's files are malformed.
    """
    if not isinstance(task_id, str) or task_id not in _all_ids():
        raise UnknownTaskError(
            f"no task {task_id!r}; valid tasks: {', '.join(_all_ids())} "
            "(see SweEnv.list_tasks('all'))",
            bridge="swe",
            task_id=task_id if isinstance(task_id, str) else None,
        )
    folder = _root() / task_id
    try:
        meta = json.loads((folder / "task.json").read_text(encoding="utf-8"))
        task = task_from_folder(folder, task_id, meta)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise BridgeError(
            f"task {task_id!r} is malformed: {type(e).__name__}: {e}", bridge="swe"
        ) from e
    if task.split not in ("train", "test") or not task.fail_to_pass:
        raise BridgeError(f"task {task_id!r}: bad split or no fail_to_pass tests", bridge="swe")
    return task
