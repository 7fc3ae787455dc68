"""``envharness report``: the Markdown report and its PNG plots, from a real small rig."""

from __future__ import annotations

import json
import re
import shutil
import struct
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envharness import DependencyNotInstalled, RiggerError
from envharness.cli import app
from envharness.graph import RiggerContext
from envharness.graph.report import (
    PLOTS,
    build_report,
    collect_run,
    render_markdown,
    render_plots,
    write_report,
)
from envharness.graph.run import rig

TASKS = ["1-1-1-8", "1-1-1-11", "1-1-1-12", "1-1-1-13"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
LINK = re.compile(r"!\[[^\]]+\]\(([^)]+)\)")


@pytest.fixture(scope="module")
def rigged(tmp_path_factory):
    """A real heuristic rig of four Toy24 tasks: some accepted, some rejected."""
    run_dir = tmp_path_factory.mktemp("rig")
    context = RiggerContext(
        run_dir=str(run_dir), policy="oracle:0.5", objective="sr:0.4-0.6", max_iterations=2
    )
    results = rig("toy24", TASKS, context, max_concurrency=4)
    return run_dir, {r.task_id: r for r in results}


def _copy(run_dir: Path, target: Path, *, checkpoints: bool = True) -> Path:
    ignore = None if checkpoints else shutil.ignore_patterns("checkpoints.sqlite*")
    shutil.copytree(run_dir, target, ignore=ignore)
    return target


def _assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, path
    assert len(data) > 5_000, f"{path} is only {len(data)} bytes"
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk
    assert width >= 400 and height >= 300, (path, width, height)


def test_collect_agrees_with_the_rig(rigged):
    run_dir, results = rigged
    summary = collect_run(run_dir)
    assert [t.task_id for t in summary.tasks] == TASKS  # natural order, not 1-1-1-11 first
    assert summary.counters == "checkpoints" and summary.notes == ()
    for task in summary.tasks:
        result = results[task.task_id]
        assert task.status == result.status
        assert task.rollouts == result.rollouts
        assert task.iterations == result.iterations
        assert task.model_calls == result.model_calls == 0
        assert task.baseline_success == result.baseline_success
        assert task.final_success == result.final_success
        assert task.designer == "heuristic" and task.template
    assert summary.total_rollouts == sum(r.rollouts for r in results.values())
    assert summary.trajectories_stored == summary.total_rollouts
    accepted = sum(r.status == "accepted" for r in results.values())
    assert summary.accepted == accepted
    assert summary.rollouts_per_accepted == pytest.approx(summary.total_rollouts / accepted)
    inside = sum(0.4 <= (r.final_success or -1) <= 0.6 for r in results.values())
    assert summary.band_hits() == (inside, len(TASKS))


def test_report_files_and_contents(rigged):
    run_dir, results = rigged
    path = build_report(run_dir)
    assert path == run_dir / "report" / "report.md"
    text = path.read_text()
    for heading in ("## Run settings", "## Tasks", "## Objective coverage", "## Totals"):
        assert heading in text
    assert "| policy | oracle:0.5 |" in text
    assert "| max iterations | 2 |" in text
    for task_id, result in results.items():
        row = next(line for line in text.splitlines() if line.startswith(f"| `{task_id}` |"))
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert cells[1] == result.status
        assert cells[2].startswith(f"{result.baseline_success:.0%} (")
        assert cells[3].startswith(f"{result.final_success:.0%} (")
        assert cells[4:6] == [str(result.iterations), str(result.rollouts)]
        assert "heuristic" in cells[6]
    accepted = sum(r.status == "accepted" for r in results.values())
    assert f"- Accepted: **{accepted}/{len(TASKS)}** tasks" in text
    assert "final success rates fall inside the band" in text
    total = sum(r.rollouts for r in results.values())
    assert f"| rollouts | {total} (baseline 20, validation {total - 20}) |" in text
    assert f"| rollouts per accepted harness | {total / accepted:.1f} |" in text
    links = LINK.findall(text)
    assert links == [f"report-{name}.png" for name in PLOTS]
    for link in links:
        _assert_png(path.parent / link)


def test_out_is_a_markdown_file_or_a_directory(rigged, tmp_path):
    run_dir, _ = rigged
    custom = build_report(run_dir, tmp_path / "site" / "toy.md")
    assert custom == tmp_path / "site" / "toy.md"
    assert sorted(p.name for p in custom.parent.iterdir()) == sorted(
        ["toy.md", *(f"toy-{name}.png" for name in PLOTS)]
    )
    in_dir = build_report(run_dir, tmp_path / "dir")
    assert in_dir == tmp_path / "dir" / "report.md" and in_dir.exists()


def test_without_matplotlib_the_markdown_is_written_alone(rigged, tmp_path, monkeypatch):
    run_dir, _ = rigged
    for module in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, module, None)  # makes the import fail
    summary = collect_run(run_dir)
    with pytest.raises(DependencyNotInstalled, match=r"envharness\[report\]"):
        render_plots(summary, tmp_path)
    with pytest.warns(UserWarning, match=r"without plots.*envharness\[report\]"):
        path = build_report(run_dir, tmp_path / "bare")
    text = path.read_text()
    assert "**Plots skipped:**" in text and "envharness[report]" in text
    assert LINK.findall(text) == [] and "## Tasks" in text
    assert sorted(p.name for p in path.parent.iterdir()) == ["report.md"]


def test_without_checkpoints_the_counts_come_from_the_output_files(rigged, tmp_path):
    run_dir, results = rigged
    copy = _copy(run_dir, tmp_path / "run", checkpoints=False)
    summary = collect_run(copy)
    assert summary.counters == "output files"
    assert summary.notes and "no checkpoints.sqlite" in summary.notes[0]
    assert {t.task_id: t.rollouts for t in summary.tasks} == {
        task_id: r.rollouts for task_id, r in results.items()
    }
    assert {t.task_id: t.status for t in summary.tasks} == {
        task_id: r.status for task_id, r in results.items()
    }
    text = render_markdown(summary)
    assert "come from the rig's output files" in text and "no checkpoints.sqlite" in text


def test_a_task_awaiting_approval_is_reported_from_its_checkpoint(tmp_path):
    context = RiggerContext(
        run_dir=str(tmp_path), policy="oracle:0.5", objective="sr:0.4-0.6", require_approval=True
    )
    [result] = rig("toy24", TASKS[:1], context)
    assert result.status == "awaiting_approval"
    files = write_report(collect_run(tmp_path))
    [task] = collect_run(tmp_path).tasks
    assert task.status == "awaiting_approval"
    assert task.reason.startswith("awaiting human approval: success rate")  # the pending verdict
    assert task.final_success is not None and task.template  # the candidate waiting for a human
    assert task.rollouts == result.rollouts
    assert f"| `{TASKS[0]}` | awaiting_approval |" in files.markdown.read_text()
    assert "Not accepted: 1 awaiting_approval." in files.markdown.read_text()
    assert set(files.plots) == set(PLOTS)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda d: d / "missing", "no run directory at"),
        (lambda d: d, "not a rig run directory: it has no rig.json"),
        (lambda d: (d / "rig.json").write_text("{nope") and d, "rig.json is not valid JSON"),
        (lambda d: (d / "rig.json").write_text("[]") and d, "holds no rig settings"),
        (
            lambda d: (d / "rig.json").write_text(json.dumps({"bridge": "toy24"})) and d,
            "holds no rigged task: no accepted/ or rejected/",
        ),
    ],
)
def test_a_directory_that_is_not_a_rig_run(tmp_path, make, match):
    with pytest.raises(RiggerError, match=match):
        build_report(make(tmp_path))


def test_a_malformed_output_file_is_named(rigged, tmp_path):
    run_dir, _ = rigged
    copy = _copy(run_dir, tmp_path / "run")
    broken = next((copy / "accepted").glob("*.json"), None) or next(
        (copy / "rejected").glob("*.json")
    )
    broken.write_text('{"bridge": 3}')
    with pytest.raises(RiggerError, match=re.escape(broken.name)):
        collect_run(copy)


def test_cli_writes_the_report_and_exits_0(rigged, tmp_path):
    run_dir, _ = rigged
    out = tmp_path / "cli"
    result = CliRunner().invoke(app, ["report", str(run_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(out / "report.md")
    assert "plot(s) beside the report" in result.stderr
    for name in PLOTS:
        _assert_png(out / f"report-{name}.png")


def test_cli_bad_directory_exits_2_with_one_error_line(tmp_path):
    result = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and "rig.json" in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output
