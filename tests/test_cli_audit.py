"""``envharness audit RUN``: the table, audit.json, and clean errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envharness import load_bridge
from envharness.cli import app
from envharness.harness import Rules
from envharness.harness.spec import BridgeSpec, HarnessSpec, Lineage

WIDE = {"COLUMNS": "250"}  # keeps rich tables from wrapping the text the tests look for
TASK = "4-4-10-10"
START = 1_000_000_000

HALF_CLOSED = """
import random

class _Rules:
    def __init__(self):
        self.closed = random.random() < 0.5

    def filter_action(self, action, state):
        if self.closed:
            return "Every action is disabled in this episode."
        return action
"""


@pytest.fixture
def runner():
    return CliRunner()


def bare() -> HarnessSpec:
    return HarnessSpec(BridgeSpec("toy24", TASK))


def make_run(
    run: Path,
    *,
    objective: str = "sr:0.4-0.6",
    policy: object = "oracle:1.0",
    spec: HarnessSpec | None = None,
    validation: dict | None = None,
) -> Path:
    run.mkdir(parents=True, exist_ok=True)
    settings = {"bridge": "toy24", "policy": policy, "objective": objective, "seed": 0}
    (run / "rig.json").write_text(json.dumps(settings))
    lineage = Lineage(
        task=TASK,
        parent=bare().spec_id,
        validation={
            "objective": objective,
            "candidate": {"n": 10, "successes": 5, "success_rate": 0.5},
            "seeds": [START, START + 1],
            **(validation or {}),
        },
    )
    (run / "accepted").mkdir(exist_ok=True)
    spec = spec if spec is not None else bare()
    (run / "accepted" / f"{TASK}.json").write_text(spec.with_lineage(lineage).to_json())
    return run


def assert_clean_error(result, message: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ")
    assert message in result.stderr
    assert result.stderr.count("\n") == 1  # one line
    assert "Traceback" not in result.output


def test_audit_prints_claimed_and_audited_and_writes_audit_json(runner, tmp_path):
    run = make_run(tmp_path / "run")
    result = runner.invoke(app, ["audit", str(run), "--rollouts", "12", "--workers", "1"], env=WIDE)
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if TASK in line)
    assert "50% [" in row and "5/10" in row  # claimed, with its interval and counts
    assert "100% [" in row and "12/12" in row  # audited on 12 fresh rollouts
    assert row.rstrip().endswith("no")  # oracle:1.0 is far above the 40-60% band
    assert "in band 0/1 audited" in result.stdout
    assert f"audit: {run / 'audit.json'}" in result.stderr
    written = json.loads((run / "audit.json").read_text())
    assert written["settings"]["rollouts"] == 12
    assert written["tasks"][0]["seeds"] == [START + 2, START + 13]  # after the lineage's seeds
    assert written["tasks"][0]["in_band"] is False


def test_seed_sets_where_the_fresh_seeds_start(runner, tmp_path):
    run = make_run(tmp_path / "run")
    result = runner.invoke(app, ["audit", str(run), "-n", "3", "--seed", "50", "-w", "1"])
    assert result.exit_code == 0, result.output
    assert json.loads((run / "audit.json").read_text())["tasks"][0]["seeds"] == [50, 52]


def test_auto_audit_shows_the_direction_test(runner, tmp_path):
    env = Rules(load_bridge("toy24", task_id=TASK), HALF_CLOSED)
    spec = HarnessSpec.from_env(env)
    env.close()
    run = make_run(
        tmp_path / "run",
        objective="auto",
        spec=spec,
        validation={"direction": "harden", "base_spec": bare().to_dict()},
    )
    result = runner.invoke(app, ["audit", str(run), "--rollouts", "20", "-w", "1"], env=WIDE)
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if TASK in line)
    assert "harden" in row and "yes (p=" in row
    assert "20/20" in row  # the audited baseline
    assert "direction confirmed 1/1 (one-sided Fisher, alpha 0.05)" in result.stdout
    assert "in band" not in result.stdout  # auto has no band


def test_policy_option_replaces_a_policy_rig_json_cannot_rebuild(runner, tmp_path):
    run = make_run(tmp_path / "run", policy=None)
    assert_clean_error(runner.invoke(app, ["audit", str(run)]), "not a policy string")
    result = runner.invoke(app, ["audit", str(run), "-n", "2", "-w", "1", "-p", "oracle:0.0"])
    assert result.exit_code == 0, result.output
    assert json.loads((run / "audit.json").read_text())["tasks"][0]["audited"]["successes"] == 0


def test_rollouts_zero_is_a_clean_error(runner, tmp_path):
    run = make_run(tmp_path / "run")
    assert_clean_error(
        runner.invoke(app, ["audit", str(run), "--rollouts", "0"]),
        "expected --rollouts to be a positive int, got 0",
    )
    assert not (run / "audit.json").exists()


def test_not_a_run_directory_is_a_clean_error(runner, tmp_path):
    assert_clean_error(
        runner.invoke(app, ["audit", str(tmp_path)]), "it has no rig.json (the settings"
    )
    assert_clean_error(runner.invoke(app, ["audit", str(tmp_path / "nope")]), "no run directory")


def test_a_run_without_accepted_specs_is_a_clean_error(runner, tmp_path):
    (tmp_path / "rig.json").write_text(json.dumps({"bridge": "toy24", "policy": "oracle"}))
    assert_clean_error(runner.invoke(app, ["audit", str(tmp_path)]), "nothing to audit")


def test_help_lists_the_options(runner):
    result = runner.invoke(app, ["audit", "--help"], env=WIDE)
    assert result.exit_code == 0
    for option in ("--rollouts", "--seed", "--workers", "--policy", "--executor"):
        assert option in result.stdout
