"""The SWE bridge's maintainer tool: regenerating and checking the tasks' test lists."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from envharness import BridgeError
from envharness.bridges.swe.build_tasks import (
    TASKS_DIR,
    TaskLists,
    build_task,
    main,
    render_meta,
    split_tests,
    task_folders,
)
from envharness.bridges.swe.tasks import load_task
from envharness.bridges.swe.verify import unified_diff

TASK = "intervals-touching"  # a one-character fix in intervals/merge.py
BLANKED = "inifile-equals-in-value"  # test ids with spaces and escapes, and a stage


def copy_task(tmp_path: Path, task_id: str) -> Path:
    """A copy of a shipped task in ``tmp_path/tasks``."""
    folder = tmp_path / "tasks" / task_id
    shutil.copytree(TASKS_DIR / task_id, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def readme_patch(task_id: str) -> str:
    """A gold patch that only changes the task's README (it fixes nothing)."""
    readme = load_task(task_id).files["README.md"]
    return unified_diff({"README.md": readme}, {"README.md": readme + b"\nMore words.\n"})


# -- the shipped tasks ----------------------------------------------------------------------------


def test_check_passes_on_every_shipped_task(capsys):
    # the real consistency test: runs each task's tests before and after its gold patch (20 runs,
    # about 10 s on two CPUs)
    stored = {p: p.read_bytes() for p in TASKS_DIR.glob("*/task.json")}
    assert len(stored) == 10
    assert main(["--check"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 10 and all(line.endswith(": ok") for line in out), out
    assert {p: p.read_bytes() for p in stored} == stored  # --check writes nothing


def test_shipped_files_follow_the_format():
    for path in TASKS_DIR.glob("*/task.json"):
        text = path.read_text(encoding="utf-8")
        assert render_meta(json.loads(text)) == text, path


# -- rebuilding ----------------------------------------------------------------------------------


def test_build_restores_blanked_lists_exactly(tmp_path, capsys):
    folder = copy_task(tmp_path, BLANKED)
    original = (folder / "task.json").read_bytes()
    meta = json.loads(original)
    blanked = render_meta({**meta, "fail_to_pass": [], "pass_to_pass": []})
    (folder / "task.json").write_text(blanked, encoding="utf-8")
    tasks_dir = str(folder.parent)

    assert main([BLANKED, "--tasks-dir", tasks_dir, "--check"]) == 1
    out = capsys.readouterr().out
    assert f"{BLANKED}: fail_to_pass differs" in out and "DIFFERS" in out
    assert "  + tests/test_parser.py::test_errors[k = v\\n-1-before the first section]" in out
    assert (folder / "task.json").read_text(encoding="utf-8") == blanked  # nothing written

    assert main([BLANKED, "--tasks-dir", tasks_dir]) == 0
    assert "written" in capsys.readouterr().out
    assert (folder / "task.json").read_bytes() == original

    assert main(["--tasks-dir", tasks_dir]) == 0  # all tasks of the folder: only this one
    assert capsys.readouterr().out == f"{BLANKED}: 3 fail_to_pass, 9 pass_to_pass: unchanged\n"


def test_build_keeps_other_fields_and_their_order(tmp_path):
    folder = copy_task(tmp_path, TASK)
    meta = json.loads((folder / "task.json").read_text(encoding="utf-8"))
    reordered = {"stages": meta["stages"], "pass_to_pass": [], "note": "é", "split": "train"}
    reordered["fail_to_pass"] = ["tests/test_touching.py::gone"]
    (folder / "task.json").write_text(render_meta(reordered), encoding="utf-8")
    report = build_task(folder)
    assert report.written and report.differences
    rebuilt = json.loads((folder / "task.json").read_text(encoding="utf-8"))
    assert list(rebuilt) == ["stages", "pass_to_pass", "note", "split", "fail_to_pass"]
    assert rebuilt["note"] == "é" and rebuilt["stages"] == meta["stages"]
    assert rebuilt["fail_to_pass"] == meta["fail_to_pass"]
    assert rebuilt["pass_to_pass"] == meta["pass_to_pass"]


def test_hidden_module_that_imports_only_after_the_fix(tmp_path):
    # before the fix the module cannot be imported (a collection error): its tests still count
    folder = copy_task(tmp_path, TASK)
    task = load_task(TASK)
    fixed = {path: data + b"\nADDED_BY_THE_FIX = 1\n" for path, data in task.gold_files().items()}
    (folder / "gold.patch").write_text(unified_diff(task.files, fixed), encoding="utf-8")
    hidden = folder / "hidden" / "tests" / "test_touching.py"
    hidden.write_bytes(
        b"from intervals.merge import ADDED_BY_THE_FIX  # noqa: F401\n" + hidden.read_bytes()
    )
    report = build_task(folder, check=True)
    assert report.differences == ()
    assert report.lists == TaskLists(task.fail_to_pass, task.pass_to_pass)


# -- errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda p: p.replace("start < merged", "start < merged_"), "gold.patch does not apply"),
        (lambda p: "this is not a patch\n", "no hunks found"),
        (lambda p: p.replace("intervals/merge.py", "intervals/gone.py"), "which is not in repo/"),
    ],
    ids=["hunk-does-not-match", "not-a-diff", "missing-file"],
)
def test_broken_gold_patch(tmp_path, capsys, edit, problem):
    folder = copy_task(tmp_path, TASK)
    patch = folder / "gold.patch"
    patch.write_text(edit(patch.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(BridgeError, match=problem):
        build_task(folder)
    assert main([TASK, "--tasks-dir", str(folder.parent)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: [swe] task '{TASK}'") and problem in err


def test_gold_patch_that_fixes_nothing(tmp_path):
    folder = copy_task(tmp_path, TASK)
    before = (folder / "task.json").read_bytes()
    (folder / "gold.patch").write_text(readme_patch(TASK), encoding="utf-8")
    with pytest.raises(BridgeError, match="tests fail after the gold patch") as caught:
        build_task(folder)
    assert "tests/test_touching.py::test_touching_intervals_merge" in str(caught.value)
    assert (folder / "task.json").read_bytes() == before


def test_no_test_goes_from_failing_to_passing(tmp_path):
    # the repository already holds the fix, and the gold patch changes only the README
    folder = copy_task(tmp_path, TASK)
    task = load_task(TASK)
    for path, data in task.gold_files().items():
        (folder / "repo" / path).write_bytes(data)
    (folder / "gold.patch").write_text(readme_patch(TASK), encoding="utf-8")
    with pytest.raises(BridgeError, match=r"empty fail_to_pass"):
        build_task(folder)


def test_missing_parts_and_unknown_tasks(tmp_path, capsys):
    folder = copy_task(tmp_path, TASK)
    shutil.rmtree(folder / "hidden")
    (folder / "gold.patch").unlink()
    with pytest.raises(BridgeError, match="missing gold.patch, hidden"):
        build_task(folder)
    with pytest.raises(BridgeError, match=f"no task folder 'nope' in .*; tasks there: {TASK}"):
        task_folders(folder.parent, ["nope"])
    with pytest.raises(BridgeError, match="no tasks folder"):
        task_folders(tmp_path / "absent")
    with pytest.raises(SystemExit) as caught:
        main(["nope", "--tasks-dir", str(folder.parent)])
    assert caught.value.code == 2 and "no task folder 'nope'" in capsys.readouterr().err


# -- the lists ------------------------------------------------------------------------------------


def test_split_tests():
    before = {"a": "failed", "b": "passed", "c": "error", "x": "passed"}
    after = {"x": "passed", "a": "passed", "s": "skipped", "b": "passed", "c": "passed"}
    assert split_tests(before, after) == TaskLists(("a", "c"), ("x", "b"))
    assert split_tests({}, {"n": "passed", "f": "xfail"}) == TaskLists(("n",), ())
    with pytest.raises(BridgeError, match="do not pass with the gold patch: b$"):
        split_tests(before, {**after, "b": "skipped"})  # passed before, not after
    with pytest.raises(BridgeError, match="do not pass with the gold patch: a, gone$"):
        split_tests({"gone": "passed"}, {"a": "failed"})
    with pytest.raises(BridgeError, match="empty fail_to_pass"):
        split_tests({"a": "passed"}, {"a": "passed"})
