"""``envharness export RUN``: files, filters, the summary line, and clean errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import envharness.cli.export  # noqa: F401 - registers the command
from envharness.cli import app
from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.rollout import LocalExecutor, OraclePolicyFactory, RunStore, run_rollouts

TASKS = ("4-4-10-10", "1-1-1-8")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A rollout run: toy24's two tasks, three oracle:0.5 episodes each."""
    run = tmp_path_factory.mktemp("cli_export") / "toy24"
    with RunStore(run) as store:
        for task in TASKS:
            spec = HarnessSpec(BridgeSpec("toy24", task))
            run_rollouts(spec, OraclePolicyFactory(0.5), 3, executor=LocalExecutor(1), store=store)
    return run


@pytest.fixture(scope="module")
def stored(run):
    with RunStore(run, readonly=True) as store:
        return store.trajectories()


@pytest.fixture
def runner():
    return CliRunner()


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_export_default_file_beside_the_run(runner, run, stored):
    result = runner.invoke(app, ["export", str(run)])
    assert result.exit_code == 0, result.output
    target = run.with_name("toy24.chat.jsonl")
    successes = sum(t.success for t in stored)
    assert result.stdout.strip() == (
        f"exported 6 of 6 trajectories ({successes} successful) as chat-jsonl: {target}"
    )
    records = lines(target)
    assert [r["metadata"]["seed"] for r in records] == [t.seed for t in stored]
    for record, trajectory in zip(records, stored, strict=True):
        assert sum(m["role"] == "assistant" for m in record["messages"]) == trajectory.n_steps
        assert record["metadata"]["reward"] == trajectory.evaluation.score
    target.unlink()


def test_filters_are_repeatable(runner, run, stored, tmp_path):
    out = tmp_path / "some.jsonl"
    args = ["export", str(run), "--out", str(out), "--task", TASKS[0], "--task", TASKS[1]]
    assert runner.invoke(app, [*args, "--success-only"]).exit_code == 0
    assert [r["metadata"]["seed"] for r in lines(out)] == [t.seed for t in stored if t.success]
    spec_id = stored[0].spec_id
    result = runner.invoke(app, ["export", str(run), "-o", str(out), "--spec", spec_id])
    assert result.exit_code == 0, result.output
    assert {r["metadata"]["spec_id"] for r in lines(out)} == {spec_id}
    assert "exported 3 of 6" in result.stdout
    result = runner.invoke(app, ["export", str(run), "-o", str(out), "-t", TASKS[1]])
    assert {r["metadata"]["task_id"] for r in lines(out)} == {TASKS[1]}


def test_parquet(runner, run, stored, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    out = tmp_path / "out.parquet"
    result = runner.invoke(app, ["export", str(run), "--format", "parquet", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout.rstrip().endswith(f"as parquet: {out}")
    frame = pd.read_parquet(out)
    assert list(frame["seed"]) == [t.seed for t in stored]
    assert list(frame["reward"]) == [t.evaluation.score for t in stored]
    messages = json.loads(frame["messages"][0])
    calls = [c["id"] for m in messages if m["role"] == "assistant" for c in m["tool_calls"]]
    answers = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert calls == answers and len(calls) == stored[0].n_steps


def error_line(result) -> str:
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ")
    assert result.stderr.count("\n") == 1  # one line
    assert "Traceback" not in result.output
    return result.stderr


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: tmp / "missing", "no run directory at"),
        (lambda tmp: (tmp / "plain").mkdir() or tmp / "plain", "is not a run directory"),
        (lambda tmp: RunStore(tmp / "empty").close() or tmp / "empty", "holds no trajectories"),
    ],
    ids=["missing", "not-a-run", "empty-run"],
)
def test_bad_run_directories(runner, tmp_path, make, message):
    assert message in error_line(runner.invoke(app, ["export", str(make(tmp_path))]))


def test_bad_options(runner, run, tmp_path):
    result = runner.invoke(app, ["export", str(run), "--format", "csv"])
    assert "unknown export format 'csv'" in error_line(result)
    (tmp_path / "file").write_text("x")
    result = runner.invoke(app, ["export", str(run), "--out", str(tmp_path / "file" / "x.jsonl")])
    assert "cannot write the export" in error_line(result)
    result = runner.invoke(app, ["export", str(run), "--task", "9-9-9-9"])
    assert "--task: no trajectory of this run has task '9-9-9-9'" in error_line(result)


def test_missing_pyarrow(runner, run, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    result = runner.invoke(app, ["export", str(run), "--format", "parquet"])
    assert "pip install 'envharness[export]'" in error_line(result)
