"""Rigging many tasks: checkpoints, resume after a kill, settings guard, the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envharness import RiggerError
from envharness.cli import app
from envharness.graph import RiggerContext
from envharness.graph.run import rig
from envharness.rollout.store import RunStore

TASKS = ["1-1-1-8", "1-1-1-11", "1-1-1-12", "1-1-2-6"]


def test_rig_many_tasks_and_resume_without_redoing(tmp_path):
    context = RiggerContext(run_dir=str(tmp_path), policy="oracle:0.5", objective="sr:0.4-0.6")
    first = rig("toy24", TASKS[:2], context, max_concurrency=2)
    assert [r.task_id for r in first] == TASKS[:2]
    assert all(r.status in ("accepted", "rejected") and not r.resumed for r in first)
    again = rig("toy24", TASKS[:2], context)
    assert [r.to_dict() | {"resumed": False} for r in again] == [r.to_dict() for r in first]
    assert all(r.resumed for r in again)


def test_settings_guard(tmp_path):
    rig("toy24", TASKS[:1], RiggerContext(run_dir=str(tmp_path), objective="sr:0.4-0.6"))
    other = RiggerContext(run_dir=str(tmp_path), objective="sr:0.2-0.4")
    with pytest.raises(RiggerError, match="other settings .*objective"):
        rig("toy24", TASKS[:1], other)
    with pytest.raises(RiggerError, match="no tasks"):
        rig("toy24", [], other)


def _trajectory_count(run_dir: Path) -> int:
    path = run_dir / "trajectories" / "trajectories.jsonl"
    return path.read_text().count("\n") if path.exists() else 0


def test_killed_rig_resumes_where_it_stopped(tmp_path):
    run_dir = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "envharness.cli",
        "rig",
        "toy24",
        "--tasks",
        "4",
        "--policy",
        "oracle:0.5",
        "--objective",
        "sr:0.4-0.6",
        "--concurrency",
        "1",
        "--out",
        str(run_dir),
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while _trajectory_count(run_dir) < 12 and time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail("the rig finished before it could be killed; give it more tasks")
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    before = _trajectory_count(run_dir)
    assert before >= 12
    finished = (
        {p.name for p in (run_dir / "accepted").glob("*.json")}
        if (run_dir / "accepted").exists()
        else set()
    )

    result = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert "resumed" in result.stderr
    with RunStore(run_dir / "trajectories", readonly=True) as store:
        keys = list(store.keys())
    assert len(keys) == len(set(keys)), "no rollout was played twice"
    assert len(keys) >= before, "no trajectory was lost"
    done = {
        p.name
        for status in ("accepted", "rejected", "undecided")
        for p in run_dir.glob(f"{status}/*.json")
    }
    assert finished <= done and len(done) == 4


def test_cli_rig_and_show(tmp_path):
    runner = CliRunner()
    out = tmp_path / "run"
    result = runner.invoke(
        app,
        [
            "rig",
            "toy24",
            "--tasks",
            "2",
            "--policy",
            "oracle:0.5",
            "--objective",
            "sr:0.4-0.6",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "accepted" in result.output
    accepted = sorted((out / "accepted").glob("*.json"))
    assert accepted
    shown = runner.invoke(app, ["show", str(accepted[0])])
    assert shown.exit_code == 0, shown.output
    assert "verdict:" in shown.output and "policy: oracle:0.5" in shown.output
    assert "successes on fresh seeds, 95% interval" in shown.output  # the judgement
    assert "seeds used by the rig" in shown.output
    spec = json.loads(accepted[0].read_text())
    for component in spec["components"]:
        if component["type"] == "rules":  # shown verbatim: no rich markup eaten ([i] etc.)
            assert component["config"]["rules_code"].strip() in shown.output
    assert json.loads(accepted[0].read_text())["lineage"]["task"] in shown.output


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["rig", "toy24", "--objective", "sr:0.9-0.1"], "0 <= low <= high"),
        (["rig", "nope"], "no bridge named 'nope'"),
        (["rig", "toy24", "--objective", "never uses undo"], "heuristic designer cannot"),
        (["show", "missing.json"], "cannot read missing.json"),
        (["rig", "toy24", "--confidence", "1.5"], "expected confidence to be a number in"),
        (["rig", "toy24", "--max-rollouts", "0"], "expected max_rollouts to be a positive int"),
        (["rig", "toy24", "--min-effect", "0"], "expected min_effect to be a number in"),
    ],
)
def test_cli_errors(tmp_path, args, match):
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path)] if args[0] == "rig" else args)
    assert result.exit_code == 2
    assert "error:" in result.output
    import re

    assert re.search(match, result.output.replace("\n", " ")), result.output


def test_rig_releases_the_run_store(tmp_path):
    context = RiggerContext(run_dir=str(tmp_path), policy="oracle:1.0", objective="sr:0.8-1.0")
    rig("toy24", TASKS[:1], context)
    # The store's lock is released: another writer (e.g. a second rig process) may open it.
    with RunStore(tmp_path / "trajectories") as store:
        assert len(store) > 5  # the baseline and its confirmation on fresh seeds


def test_a_corrupt_settings_file_or_checkpoint_database_says_what_to_delete(tmp_path):
    context = RiggerContext(run_dir=str(tmp_path), policy="oracle:1.0", objective="sr:0.8-1.0")
    (tmp_path / "rig.json").write_text("{not json")
    with pytest.raises(RiggerError, match="rig.json is unreadable .*delete it"):
        rig("toy24", TASKS[:1], context)
    (tmp_path / "rig.json").unlink()
    (tmp_path / "checkpoints.sqlite").write_bytes(b"garbage, not a database" * 100)
    with pytest.raises(RiggerError, match="not a readable checkpoint database.*delete it"):
        rig("toy24", TASKS[:1], context)


def test_a_run_directory_that_cannot_be_created_is_a_rigger_error():
    context = RiggerContext(run_dir="/dev/null/rig", objective="sr:0.8-1.0")
    with pytest.raises(RiggerError, match="cannot create the run directory .*--out"):
        rig("toy24", TASKS[:1], context)


def test_deleting_the_checkpoints_during_a_rig_is_warned(tmp_path, caplog):
    context = RiggerContext(run_dir=str(tmp_path), policy="oracle:1.0", objective="sr:0.8-1.0")

    def delete(result):
        (tmp_path / "checkpoints.sqlite").unlink()

    with caplog.at_level("WARNING", logger="envharness.rig"):
        rig("toy24", TASKS[:1], context, on_result=delete)
    assert "was deleted while the rig ran" in caplog.text


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"\x00\x01\xff\xfe", "is not a text file"),
        (b"[" * 100_000 + b"]" * 100_000, "nested more than 32 levels"),
    ],
)
def test_show_refuses_binary_and_deep_files_in_one_line(tmp_path, content, match):
    path = tmp_path / "spec.json"
    path.write_bytes(content)
    result = CliRunner().invoke(app, ["show", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert match in result.output


def test_accepted_specs_pin_the_task_data(tmp_path):
    from envharness.harness import HarnessSpec

    context = RiggerContext(run_dir=str(tmp_path), policy="oracle:1.0", objective="sr:0.8-1.0")
    (result,) = rig("toy24", TASKS[:1], context)
    assert result.status == "accepted", result.reason
    spec = HarnessSpec.from_json(Path(result.accepted).read_text())
    fingerprint = spec.bridge.fingerprint
    assert fingerprint is not None and len(fingerprint) == 64
    spec.build().close()  # the data still match
