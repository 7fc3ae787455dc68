"""``envharness experiment sl``: an offline run, its resume, and clean errors."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from envharness.cli import app

pytest.importorskip("langgraph", reason="the harness arm rigs with EnvRigger (envharness[rigger])")

WIDE = {"COLUMNS": "250"}


@pytest.fixture
def runner():
    return CliRunner()


def sl(runner: CliRunner, *args: str):
    return runner.invoke(app, ["experiment", "sl", "toy24", *args], env=WIDE)


def test_offline_experiment_runs_and_resumes(runner, tmp_path) -> None:
    out = tmp_path / "sl"
    args = [
        "--train-tasks",
        "2",
        "--test-tasks",
        "3",
        "--runs",
        "2",
        "--rollouts-per-env",
        "2",
        "--k-observe",
        "3",
        "--k-validate",
        "3",
        "--max-iterations",
        "2",
        "--out",
        str(out),
    ]
    result = sl(runner, *args)
    assert result.exit_code == 0, result.output
    assert "skill learning · toy24 · oracle:0.5" in result.stdout
    assert "harness − original (round 1)" in result.stdout
    assert "does not read skills" in result.stderr
    saved = json.loads((out / "results.json").read_text())
    assert [s["arm"] for s in saved["scores"]] == ["none", "original", "harness"]
    assert (out / "report.md").is_file()
    again = sl(runner, *args)
    assert again.exit_code == 0, again.output
    assert "(resumed)" in again.stdout
    changed = sl(runner, *args[:-2], "--runs", "3", "--out", str(out))
    assert changed.exit_code == 2
    assert "runs differ" in changed.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--arms", "none,skills"], "unknown arm(s) 'skills'"),
        (["--runs", "0"], "runs must be an int >= 1"),
        (["--train-task", "1-1-1-8", "--test-task", "1-1-1-8"], "both train and test tasks"),
        (["--train-tasks", "5000"], "has 1102 task(s), 5000 asked for"),
        (["--test-split", "dev"], "unknown split 'dev'"),
    ],
)
def test_bad_input_is_one_clean_error(runner, tmp_path, args, message) -> None:
    result = sl(runner, *args, "--out", str(tmp_path / "x"))
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output
