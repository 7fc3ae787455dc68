"""``envharness coevolve``: the round table, resuming, and clean errors."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

pytest.importorskip(
    "gymnasium", reason="the gymnasium bridge needs the 'gym' extra: pip install 'envharness[gym]'"
)
pytest.importorskip("langgraph", reason="rigging needs the 'rigger' extra")

import envharness.cli.coevolve  # noqa: E402, F401 - registers the command
from envharness.cli import app  # noqa: E402

WIDE = {"COLUMNS": "250"}
LAKE = ["-O", 'env_kwargs={"is_slippery": false}']
FAST = ["--k-observe", "3", "--max-iterations", "2", "--max-rollouts", "15"]


@pytest.fixture
def runner():
    return CliRunner()


def invoke(runner, *args):
    return runner.invoke(app, ["coevolve", *args], env=WIDE)


def test_two_rounds_print_the_table_and_write_each_round(runner, tmp_path):
    out = tmp_path / "run"
    args = ["gymnasium", "--tasks", "FrozenLake-v1", *LAKE, "--rounds", "2"]
    args += ["--steps-per-round", "300", "--seed", "1", "--out", str(out), "--eval-episodes", "3"]
    result = invoke(runner, *args, *FAST)
    assert result.exit_code == 0, result.output
    assert "coevolve · gymnasium" in result.stdout
    assert "learner steps" in result.stdout and "rig rollouts" in result.stdout
    for number, steps in ((0, 0), (1, 300), (2, 600)):
        record = json.loads((out / f"round-{number:03d}" / "round.json").read_text())
        assert record["total_env_steps"] == steps
        assert (out / f"round-{number:03d}" / "q_table.json").exists()
    assert "round 2: success" in result.stderr
    # the same command again resumes: nothing is redone, the table is the same
    mtime = (out / "round-001" / "round.json").stat().st_mtime_ns
    again = invoke(runner, *args, *FAST)
    assert again.exit_code == 0, again.output
    assert (out / "round-001" / "round.json").stat().st_mtime_ns == mtime
    assert again.stdout == result.stdout


def test_no_rig_trains_on_the_original_env(runner, tmp_path):
    args = ["gymnasium", "-t", "FrozenLake-v1", *LAKE, "-r", "1", "-s", "200", "--no-rig"]
    result = invoke(runner, *args, "--out", str(tmp_path), "--eval-episodes", "2")
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "round-001" / "round.json").read_text())
    assert record["rigged"] is False and record["rig_rollouts"] == 0
    assert record["trained_on"][0]["source"] == "original"


def test_a_task_count_takes_the_first_tasks_of_the_split(runner, tmp_path):
    result = invoke(
        runner, "gymnasium", "-t", "1", "-r", "1", "-s", "50", "--no-rig",
        "--out", str(tmp_path), "--eval-episodes", "1",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "coevolve.json").read_text())["tasks"] == ["FrozenLake-v1"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nosuchbridge", "-t", "x"], "no bridge named 'nosuchbridge'"),
        (["gymnasium", "-t", "FrozenLake-v9"], "FrozenLake-v9"),
        (["toy24", "-t", "4-4-10-10"], "finite action set"),
        (["gymnasium", "-t", "CartPole-v1"], "observations name none"),
        (["gymnasium", "-t", "FrozenLake-v1", "--objective", "sr:2-3"], "band"),
    ],
)
def test_bad_input_ends_with_one_clean_error(runner, tmp_path, args, message):
    result = invoke(runner, *args, "-r", "1", "-s", "10", "--out", str(tmp_path / "run"))
    assert result.exit_code == 2
    assert "error:" in result.stderr and message in result.stderr
    assert "Traceback" not in result.output


def test_zero_rounds_is_a_usage_error(runner, tmp_path):
    result = invoke(
        runner, "gymnasium", "-t", "FrozenLake-v1", "--rounds", "0", "--out", str(tmp_path)
    )
    assert result.exit_code == 2
    text = " ".join(result.output.replace("│", " ").split())
    assert "Invalid value for '--rounds'" in text and "greater than or equal to 1" in text, text
