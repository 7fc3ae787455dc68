from __future__ import annotations

import json

from typer.testing import CliRunner

from envharness.cli import app
from envharness.demo import DEMO_RULES, build_demo_spec, demo_script, run_demo


def test_demo_spec_stacks_setups_and_rules():
    spec = build_demo_spec("4-4-10-10")
    assert [c.type for c in spec.components] == ["setups", "rules"]
    assert spec.components[1].config["rules_code"] == DEMO_RULES
    assert spec.lineage.policy == "scripted demo"


def test_demo_script_makes_a_mistake_then_solves():
    script = demo_script(build_demo_spec("4-4-10-10"))
    assert [a.tool for a in script[:3]] == ["combine", "undo", "undo"]
    assert all(a.tool == "combine" for a in script[3:])


def test_run_demo_writes_spec_and_trajectory(tmp_path):
    result = run_demo(tmp_path, task_id="3-3-8-8")
    assert result.evaluation.success
    blocked = [s for s in result.steps if s["blocked"]]
    assert len(blocked) == 1 and "Only one undo" in blocked[0]["observation"]
    assert result.steps[-1]["terminated"] and result.steps[-1]["reward"] == 1.0
    trajectory = json.loads((tmp_path / "demo_trajectory.json").read_text())
    assert trajectory["evaluation"]["success"] is True
    assert json.loads(result.spec_path.read_text())["bridge"]["task_id"] == "3-3-8-8"


def test_demo_command(tmp_path):
    result = CliRunner().invoke(app, ["demo", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "blocked by rule" in result.output
    assert "'success': True" in result.output


def test_demo_command_bad_task(tmp_path):
    result = CliRunner().invoke(app, ["demo", "--task", "1-1-1-1", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "error:" in result.output
