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
BASE_PLOTS = [name for name in PLOTS if name != "audit"]  # "audit" needs RUN/audit.json
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


def _expected_final(run_dir: Path, result) -> float | None:
    """The harnessed success the report shows: an undecided task's best candidate's, else the
    last measured candidate's (what the rig's result says)."""
    if result.status != "undecided":
        return result.final_success
    record = json.loads((run_dir / "undecided" / f"{result.task_id}.json").read_text())
    return ((record.get("best") or {}).get("verdict") or {}).get("stats", {}).get("success_rate")


def test_collect_agrees_with_the_rig(rigged):
    run_dir, results = rigged
    summary = collect_run(run_dir)
    finals = {task_id: _expected_final(run_dir, r) for task_id, r in results.items()}
    assert [t.task_id for t in summary.tasks] == TASKS  # natural order, not 1-1-1-11 first
    assert summary.counters == "checkpoints" and summary.notes == ()
    for task in summary.tasks:
        result = results[task.task_id]
        assert task.status == result.status
        assert task.rollouts == result.rollouts
        assert task.iterations == result.iterations
        assert task.model_calls == result.model_calls == 0
        assert task.baseline_success == result.baseline_success
        assert task.final_success == finals[task.task_id]
        assert task.designer == "heuristic" and task.template
    assert summary.total_rollouts == sum(r.rollouts for r in results.values())
    assert summary.trajectories_stored == summary.total_rollouts
    accepted = sum(r.status == "accepted" for r in results.values())
    assert summary.accepted == accepted
    if accepted:
        assert summary.rollouts_per_accepted == pytest.approx(summary.total_rollouts / accepted)
    assert summary.count("undecided") == sum(r.status == "undecided" for r in results.values())
    measured = [f for f in finals.values() if f is not None]
    inside = sum(0.4 <= f <= 0.6 for f in measured)
    assert summary.band_hits() == (inside, len(measured))


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
        final = _expected_final(run_dir, result)
        assert cells[3].startswith(f"{final:.0%} (") if final is not None else cells[3] == "-"
        assert cells[4:6] == [str(result.iterations), str(result.rollouts)]
        assert "heuristic" in cells[6]
    accepted = sum(r.status == "accepted" for r in results.values())
    assert f"- Accepted: **{accepted}/{len(TASKS)}** tasks" in text
    assert "final success rates fall inside the band" in text
    total = sum(r.rollouts for r in results.values())
    assert f"| rollouts | {total} (baseline 20, validation {total - 20}) |" in text
    if accepted:
        assert f"| rollouts per accepted harness | {total / accepted:.1f} |" in text
    links = LINK.findall(text)
    assert links == [f"report-{name}.png" for name in BASE_PLOTS]
    assert "## Audit" not in text
    for link in links:
        _assert_png(path.parent / link)


def test_out_is_a_markdown_file_or_a_directory(rigged, tmp_path):
    run_dir, _ = rigged
    custom = build_report(run_dir, tmp_path / "site" / "toy.md")
    assert custom == tmp_path / "site" / "toy.md"
    assert sorted(p.name for p in custom.parent.iterdir()) == sorted(
        ["toy.md", *(f"toy-{name}.png" for name in BASE_PLOTS)]
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
    assert task.reason.startswith("awaiting human approval: ")  # the pending verdict's reason
    assert len(task.reason) > len("awaiting human approval: ")
    assert task.final_success is not None and task.template  # the candidate waiting for a human
    assert task.rollouts == result.rollouts
    assert f"| `{TASKS[0]}` | awaiting_approval |" in files.markdown.read_text()
    assert "Not accepted: 1 awaiting_approval." in files.markdown.read_text()
    assert set(files.plots) == set(BASE_PLOTS)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda d: d / "missing", "no run directory at"),
        (lambda d: d, "not a rig run directory: it has no rig.json"),
        (lambda d: (d / "rig.json").write_text("{nope") and d, "rig.json is not valid JSON"),
        (lambda d: (d / "rig.json").write_text("[]") and d, "holds no rig settings"),
        (
            lambda d: (d / "rig.json").write_text(json.dumps({"bridge": "toy24"})) and d,
            r"holds no rigged task: no accepted/ or rejected/ \(or undecided/\)",
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
    for name in BASE_PLOTS:
        _assert_png(out / f"report-{name}.png")


def test_cli_bad_directory_exits_2_with_one_error_line(tmp_path):
    result = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and "rig.json" in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output


# -- audit, intervals, undecided tasks -------------------------------------------------------


def _stats(n: int, successes: int) -> dict:
    from envharness.rollout.stats import wilson_interval

    lo, hi = wilson_interval(successes, n)
    return {
        "n": n,
        "successes": successes,
        "success_rate": successes / n,
        "ci_low": lo,
        "ci_high": hi,
        "success_steps_mean": 3.0 if successes else None,
    }


def _hand_made_run(run: Path) -> Path:
    """A run with one accepted, one rejected and one undecided task (no checkpoints)."""
    from envharness.harness.spec import BridgeSpec, HarnessSpec, Lineage

    run.mkdir(parents=True)
    settings = {"bridge": "toy24", "policy": "oracle:1.0", "objective": "sr:0.4-0.6", "seed": 0}
    (run / "rig.json").write_text(json.dumps(settings | {"k_validate": 10}))
    base = HarnessSpec(BridgeSpec("toy24", "4-4-10-10"))
    lineage = Lineage(
        task="4-4-10-10",
        policy="oracle:1",
        parent=base.spec_id,
        validation={
            "objective": "sr:0.4-0.6",
            "direction": "harden",
            "baseline": _stats(5, 5),
            "candidate": _stats(10, 5),
            "iterations": 1,
            "rollouts": 15,
            "designer": "heuristic",
            "seeds": list(range(10)),
        },
    )
    (run / "accepted").mkdir()
    (run / "accepted" / "4-4-10-10.json").write_text(base.with_lineage(lineage).to_json())
    attempts = [{"iteration": 1, "verdict": {"reason": "too easy", "rollouts": 5}}]
    for status, task_id in (("rejected", "1-1-1-8"), ("undecided", "1-1-1-11")):
        record = {
            "task_id": task_id,
            "objective": "sr:0.4-0.6",
            "diagnosis": {"direction": "harden", "source": "heuristic"},
            "baseline": _stats(5, 4),
            "attempts": attempts,
            "reason": f"{status}: out of iterations",
        }
        if status == "undecided":
            record["best"] = {"stats": _stats(10, 7), "template": "drop_actions(0.3)"}
        (run / status).mkdir()
        (run / status / f"{task_id}.json").write_text(json.dumps(record))
    return run


def _errorbars(ax):
    from matplotlib.container import ErrorbarContainer

    return [c for c in ax.containers if isinstance(c, ErrorbarContainer)]


def test_undecided_tasks_are_reported_apart_from_rejected(tmp_path):
    run = _hand_made_run(tmp_path / "run")
    summary = collect_run(run)
    status = {t.task_id: t.status for t in summary.tasks}
    assert status == {"1-1-1-8": "rejected", "1-1-1-11": "undecided", "4-4-10-10": "accepted"}
    undecided = next(t for t in summary.tasks if t.status == "undecided")
    assert undecided.final_success == 0.7 and undecided.template == "drop_actions(0.3)"
    assert undecided.reason == "undecided: out of iterations"
    assert (summary.count("rejected"), summary.count("undecided")) == (1, 1)
    files = write_report(summary)
    text = files.markdown.read_text()
    assert "Not accepted: 1 rejected, 1 undecided." in text
    assert "| `1-1-1-11` | undecided | 80% (4/5) | 70% (7/10) |" in text
    assert set(files.plots) == set(BASE_PLOTS)  # no audit yet


def test_the_success_plot_draws_wilson_intervals(tmp_path):
    from matplotlib.figure import Figure

    from envharness.graph.report import plots
    from envharness.rollout.stats import wilson_interval

    summary = collect_run(_hand_made_run(tmp_path / "run"))
    fig = Figure()
    plots._plot_success(fig, summary)
    [ax] = fig.axes
    bars = _errorbars(ax)
    measured = [s for t in summary.tasks for s in (t.baseline, t.final) if s]
    assert len(bars) == len(measured) == 5  # baselines and finals (the rejected has no final)
    spans = sorted(
        tuple(round(v, 6) for v in sorted(bar.lines[2][0].get_segments()[0][:, 1])) for bar in bars
    )
    expected = sorted(
        tuple(round(v, 6) for v in wilson_interval(s["successes"], s["n"])) for s in measured
    )
    assert spans == expected


def test_the_audit_section_and_plot(tmp_path):
    from matplotlib.figure import Figure

    from envharness.graph.judge.audit import audit_run
    from envharness.graph.report import plots
    from envharness.rollout.executors import LocalExecutor

    run = _hand_made_run(tmp_path / "run")
    with LocalExecutor(1) as executor:
        result = audit_run(run, rollouts=10, executor=executor)
    summary = collect_run(run)
    assert summary.audit is not None and summary.audit.rows == result.rows
    assert summary.plots == tuple(PLOTS)
    files = write_report(summary)
    text = files.markdown.read_text()
    assert "## Audit" in text and "10 fresh rollouts each with oracle:1" in text
    row = next(line for line in text.splitlines() if line.startswith("| `4-4-10-10` | 50% ["))
    cells = [c.strip() for c in row.strip("|").split(" | ")]
    assert cells[2] == "10" and cells[3].startswith("100% [") and cells[4] == "10"
    assert cells[5] == "no"  # in band: oracle:1.0 on the bare task is not inside 40-60%
    assert "- In band: **0/1** audited harnesses" in text
    audit_section = text[text.index("## Audit") : text.index("## Totals")]
    assert LINK.findall(audit_section) == ["report-audit.png"]
    assert sorted(LINK.findall(text)) == sorted(f"report-{name}.png" for name in PLOTS)
    _assert_png(files.plots["audit"])

    fig = Figure()
    plots._plot_audit(fig, summary)
    [ax] = fig.axes
    [bar] = _errorbars(ax)
    assert bar.has_xerr and bar.has_yerr  # intervals on both axes
    x, y = bar.lines[0].get_data()
    assert (x[0], y[0]) == (0.5, 1.0)  # claimed vs audited
    assert any(list(line.get_xdata()) == [0, 1] == list(line.get_ydata()) for line in ax.lines)


def test_a_malformed_audit_is_named(tmp_path):
    run = _hand_made_run(tmp_path / "run")
    (run / "audit.json").write_text("[1, 2]")
    with pytest.raises(RiggerError, match=r"audit\.json is not an audit"):
        collect_run(run)
