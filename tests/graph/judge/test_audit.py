"""``audit_run``: accepted harnesses re-measured on fresh seeds, on hand-made run directories."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from envharness import load_bridge
from envharness.errors import RiggerError
from envharness.graph.judge import audit as audit_module
from envharness.graph.judge.audit import (
    ALPHA,
    AUDIT_FILE,
    AuditResult,
    AuditRow,
    audit_run,
    direction_test,
    fresh_block,
    load_audit,
)
from envharness.harness import Rules
from envharness.harness.spec import BridgeSpec, HarnessSpec, Lineage
from envharness.rollout.executors import LocalExecutor
from envharness.rollout.policies import OraclePolicyFactory
from envharness.rollout.stats import wilson_interval
from envharness.rollout.store import RunStore
from envharness.rollout.trajectory import Trajectory

TASK = "4-4-10-10"  # oracle:1.0 solves it in 3 steps
START = 1_000_000_000  # the default first audit seed of a rig with seed 0

# Half the episodes (by the episode's seeded ``random``) have every action blocked: the oracle
# cannot move and runs out of steps, so success drops from 100% to about 50%.
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

ALL_CLOSED = """
class _Rules:
    def filter_action(self, action, state):
        return "Every action is disabled."
"""


def bare() -> HarnessSpec:
    return HarnessSpec(BridgeSpec("toy24", TASK))


def rules_spec(code: str) -> HarnessSpec:
    env = Rules(load_bridge("toy24", task_id=TASK), code)
    try:
        return HarnessSpec.from_env(env)
    finally:
        env.close()


def make_run(
    run: Path,
    spec: HarnessSpec,
    validation: dict,
    *,
    objective: str = "sr:0.4-0.6",
    policy: object = "oracle:1.0",
    seed: int = 0,
    parent: str | None = None,
) -> Path:
    """A run directory as a rig leaves it: rig.json and one accepted spec with lineage."""
    run.mkdir(parents=True, exist_ok=True)
    settings = {"bridge": "toy24", "bridge_options": {}, "policy": policy, "seed": seed}
    (run / "rig.json").write_text(json.dumps(settings | {"objective": objective}))
    lineage = Lineage(
        task=TASK,
        policy=policy if isinstance(policy, str) else None,
        parent=parent if parent is not None else bare().spec_id,
        validation={"objective": objective, **validation},
    )
    (run / "accepted").mkdir(exist_ok=True)
    (run / "accepted" / f"{TASK}.json").write_text(spec.with_lineage(lineage).to_json())
    return run


def stats(n: int, successes: int, steps: float | None = 3.0) -> dict:
    lo, hi = wilson_interval(successes, n)
    return {
        "n": n,
        "successes": successes,
        "success_rate": successes / n,
        "ci_low": lo,
        "ci_high": hi,
        "success_steps_mean": steps if successes else None,
    }


def judgement(n: int, successes: int) -> dict:
    return {
        "decision": "accept",
        "side": None,
        "method": "beta-binomial",
        "n": n,
        "successes": successes,
        "rate": successes / n,
        "interval": [0.3, 0.7],
        "probability": 0.91,
        "p_value": None,
        "effect": None,
        "confidence": 0.9,
        "reason": "inside the band",
        "steps_mean": 3.0,
    }


@pytest.fixture
def inline():
    with LocalExecutor(1) as executor:
        yield executor


def test_band_audit_measures_fresh_seeds_and_writes_audit_json(tmp_path, inline):
    lineage_seeds = [START, START + 1, START + 2, START + 4]
    run = make_run(
        tmp_path / "run",
        bare(),
        {
            "direction": "fix-behaviour",
            "baseline": stats(5, 5),
            "candidate": stats(10, 5),
            "judgement": judgement(10, 5),
            "seeds": lineage_seeds,
            "confirmation_seeds": [START + 2, START + 4],
        },
    )
    with RunStore(run / "trajectories") as store:  # a rig rollout the lineage does not list
        store.add(Trajectory(TASK, "toy24", bare().spec_id, {}, START + 20, "oracle:1"))

    result = audit_run(run, rollouts=20, executor=inline)

    [row] = result.rows
    assert (row.task_id, row.spec_id, row.objective) == (TASK, bare().spec_id, "sr:0.4-0.6")
    assert row.audited["n"] == 20 and row.audited["successes"] == 20
    assert row.audited["rate"] == 1.0 and row.audited["steps_mean"] == 3.0
    assert row.audited["interval"] == pytest.approx(list(wilson_interval(20, 20)))
    assert row.audited["errors"] == 0
    assert row.in_band is False  # oracle:1.0 on the bare task is far above 40-60%
    assert row.baseline_audited is None and row.confirmed is None and row.p_value is None
    # the first block of 20 from START that misses START..START+4 (lineage) and START+20 (store)
    assert row.seeds == (START + 21, START + 40)
    assert set(range(row.seeds[0], row.seeds[1] + 1)).isdisjoint(lineage_seeds + [START + 20])
    assert row.claimed == {
        "rate": 0.5,
        "interval": [0.3, 0.7],
        "n": 10,
        "successes": 5,
        "probability": 0.91,
        "steps_mean": 3.0,
        "method": "beta-binomial",
        "confidence": 0.9,
    }
    assert result.summary() == {
        "audited": 1,
        "in_band": 0,
        "band_measured": 1,
        "confirmed": 0,
        "tested": 0,
    }

    written = json.loads((run / AUDIT_FILE).read_text())
    assert result.path == run / AUDIT_FILE
    assert written == result.to_dict()
    assert written["settings"] == {
        "rollouts": 20,
        "seed": START,
        "policy": "oracle:1",
        "objective": "sr:0.4-0.6",
        "bridge": "toy24",
        "alpha": ALPHA,
        "interval": "wilson 95%",
    }
    assert written["tasks"][0]["seeds"] == [START + 21, START + 40]
    assert written["summary"]["audited"] == 1
    with RunStore(run / "trajectories", readonly=True) as store:
        assert len(store) == 1  # audit rollouts stay out of the rig's store
    assert not list(run.glob(".audit.json.*"))  # written atomically, no temporary left


def test_an_older_lineage_is_claimed_from_its_candidate_stats(tmp_path, inline):
    candidate = stats(5, 3)
    run = make_run(tmp_path / "run", bare(), {"baseline": stats(5, 5), "candidate": candidate})
    [row] = audit_run(run, rollouts=5, seed=7, executor=inline).rows
    assert row.claimed["rate"] == 0.6 and (row.claimed["n"], row.claimed["successes"]) == (5, 3)
    assert row.claimed["interval"] == [candidate["ci_low"], candidate["ci_high"]]
    assert row.claimed["probability"] is None and row.claimed["method"] == "stats"
    assert row.direction is None
    assert row.seeds == (7, 11)  # nothing recorded to avoid: the block starts at --seed


def test_auto_harden_is_confirmed_against_the_audited_baseline(tmp_path, inline):
    seeds = list(range(START, START + 10))
    run = make_run(
        tmp_path / "run",
        rules_spec(HALF_CLOSED),
        {
            "direction": "harden",
            "baseline": stats(5, 5),
            "candidate": stats(10, 5),
            "base_spec": bare().to_dict(),
            "seeds": seeds,
        },
        objective="auto",
    )
    result = audit_run(run, rollouts=20, executor=inline)
    [row] = result.rows
    assert row.direction == "harden" and row.in_band is None
    assert 0 < row.audited["successes"] < 15  # about half the episodes are closed
    assert row.baseline_audited["successes"] == row.baseline_audited["n"] == 20
    assert row.p_value == pytest.approx(
        direction_test("harden", (row.audited["successes"], 20), (20, 20))
    )
    assert row.p_value < ALPHA and row.confirmed is True
    candidate = set(range(row.seeds[0], row.seeds[1] + 1))
    baseline = set(range(row.baseline_seeds[0], row.baseline_seeds[1] + 1))
    assert len(candidate) == len(baseline) == 20
    assert candidate.isdisjoint(baseline) and candidate.isdisjoint(seeds)
    assert baseline.isdisjoint(seeds)
    assert result.summary()["confirmed"] == result.summary()["tested"] == 1
    assert json.loads((run / AUDIT_FILE).read_text())["tasks"][0]["baseline_seeds"] == list(
        row.baseline_seeds
    )


def test_a_claimed_scaffold_that_lowers_success_is_not_confirmed(tmp_path, inline):
    run = make_run(
        tmp_path / "run",
        rules_spec(HALF_CLOSED),
        {"direction": "scaffold", "base_spec": bare().to_dict()},
        objective="auto",
    )
    [row] = audit_run(run, rollouts=20, executor=inline).rows
    assert row.confirmed is False and row.p_value > 0.5


def test_a_band_task_with_a_base_spec_and_a_direction_is_tested_too(tmp_path, inline):
    run = make_run(
        tmp_path / "run",
        rules_spec(HALF_CLOSED),
        {"direction": "harden", "base_spec": {"name": "toy24", "task_id": TASK, "options": {}}},
    )
    [row] = audit_run(run, rollouts=20, executor=inline).rows
    assert row.in_band is not None  # the band is checked ...
    assert row.baseline_audited is not None and row.confirmed is True  # ... and the direction


def test_without_base_spec_the_parent_is_found_among_the_components(tmp_path, inline):
    run = make_run(
        tmp_path / "run", rules_spec(HALF_CLOSED), {"direction": "harden"}, objective="auto"
    )
    [row] = audit_run(run, rollouts=10, executor=inline).rows
    assert row.baseline_audited is not None and row.baseline_audited["successes"] == 10
    assert row.confirmed is not None


def test_steps_band_uses_the_mean_steps_of_audited_successes(tmp_path, inline):
    run = make_run(tmp_path / "ok", bare(), {}, objective="steps:2-4")
    [row] = audit_run(run, rollouts=5, executor=inline).rows
    assert row.audited["steps_mean"] == 3.0 and row.in_band is True
    unsolvable = make_run(tmp_path / "none", rules_spec(ALL_CLOSED), {}, objective="steps:2-4")
    [row] = audit_run(unsolvable, rollouts=3, executor=inline).rows
    assert row.audited["successes"] == 0 and row.audited["steps_mean"] is None
    assert row.in_band is None  # nothing succeeded: no steps to measure


def test_a_policy_argument_replaces_the_one_in_rig_json(tmp_path, inline):
    run = make_run(tmp_path / "run", bare(), {}, policy={"factory": "my_module:agent"})
    with pytest.raises(RiggerError, match=r"not a policy string.*policy="):
        audit_run(run, rollouts=2, executor=inline)
    assert not (run / AUDIT_FILE).exists()
    result = audit_run(run, rollouts=2, policy=OraclePolicyFactory(0.0), executor=inline)
    assert result.settings["policy"] == "oracle:0" and result.rows[0].audited["successes"] == 0
    result = audit_run(run, rollouts=2, policy="oracle:1.0", executor=inline)
    assert result.rows[0].audited["successes"] == 2


def test_a_policy_name_that_does_not_rebuild_asks_for_policy(tmp_path, inline):
    run = make_run(tmp_path / "run", bare(), {}, policy="MyAgentFactory")
    with pytest.raises(RiggerError, match=r"'MyAgentFactory'.*cannot be rebuilt.*policy="):
        audit_run(run, rollouts=2, executor=inline)


def test_the_default_executor_runs_the_audit(tmp_path):
    run = make_run(tmp_path / "run", bare(), {})
    [row] = audit_run(run, rollouts=4).rows
    assert row.audited["successes"] == 4 and row.seeds == (START, START + 3)


@pytest.mark.parametrize("rollouts", [0, -3, True, 2.5])
def test_rollouts_must_be_a_positive_int(tmp_path, rollouts):
    run = make_run(tmp_path / "run", bare(), {})
    with pytest.raises(RiggerError, match=r"expected --rollouts to be a positive int, got"):
        audit_run(run, rollouts=rollouts)


def test_seed_must_be_a_non_negative_int(tmp_path):
    run = make_run(tmp_path / "run", bare(), {})
    with pytest.raises(RiggerError, match=r"expected --seed to be an int >= 0, got -1"):
        audit_run(run, rollouts=2, seed=-1)


def test_a_directory_that_is_not_a_run(tmp_path):
    with pytest.raises(RiggerError, match=r"no run directory at .*envharness rig .*--out DIR"):
        audit_run(tmp_path / "missing")
    with pytest.raises(RiggerError, match=r"has no rig\.json .*envharness rig .*--out DIR"):
        audit_run(tmp_path)


def test_a_run_without_accepted_specs_has_nothing_to_audit(tmp_path):
    (tmp_path / "rig.json").write_text(json.dumps({"bridge": "toy24", "policy": "oracle"}))
    (tmp_path / "rejected").mkdir()
    (tmp_path / "rejected" / "a.json").write_text("{}")
    with pytest.raises(RiggerError, match=r"nothing to audit: .* no accepted spec \(1 rejected"):
        audit_run(tmp_path)
    assert not (tmp_path / AUDIT_FILE).exists()


def test_a_malformed_accepted_spec_is_named(tmp_path):
    run = make_run(tmp_path / "run", bare(), {})
    (run / "accepted" / "broken.json").write_text('{"bridge": 3}')
    with pytest.raises(RiggerError, match=r"broken\.json is not an accepted harness spec"):
        audit_run(run, rollouts=1)


def test_fresh_block_skips_every_used_seed():
    assert fresh_block(0, 3, []) == range(0, 3)
    assert fresh_block(0, 3, {0, 1, 2, 5}) == range(6, 9)
    assert fresh_block(0, 3, {1, 6}) == range(2, 5)
    assert fresh_block(10, 2, {3, 4, 12}) == range(10, 12)
    block = fresh_block(100, 50, set(range(90, 200, 7)))
    assert len(block) == 50 and set(block).isdisjoint(range(90, 200, 7))


def test_direction_test_is_one_sided():
    assert direction_test("harden", (8, 20), (20, 20)) < 0.001
    assert direction_test("scaffold", (8, 20), (20, 20)) > 0.99
    assert direction_test("scaffold", (20, 20), (8, 20)) < 0.001
    assert direction_test("harden", (5, 10), (5, 10)) > 0.5
    with pytest.raises(ValueError, match="'harden' or 'scaffold'"):
        direction_test("none", (1, 2), (1, 2))


def test_load_audit_round_trips_and_names_a_bad_file(tmp_path, inline):
    assert load_audit(tmp_path) is None
    run = make_run(tmp_path / "run", bare(), {"direction": "none"})
    result = audit_run(run, rollouts=3, executor=inline)
    loaded = load_audit(run)
    assert loaded is not None and loaded.rows == result.rows
    assert loaded.settings == result.settings and loaded.to_dict() == result.to_dict()
    assert AuditResult.from_dict(result.to_dict(), run).rows[0] == AuditRow.from_dict(
        result.to_dict()["tasks"][0]
    )
    (run / AUDIT_FILE).write_text('{"envharness_audit": 1, "tasks": [{"task_id": "x"}]}')
    with pytest.raises(RiggerError, match=r"audit\.json is not an audit"):
        load_audit(run)


def test_the_audit_module_imports_no_langgraph():
    tree = ast.parse(Path(audit_module.__file__).read_text())
    imported = {
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert not {name for name in imported if name and name.startswith(("langgraph", "langchain"))}
    heavy = ("envharness.graph.run", "envharness.graph.rigger", "envharness.graph.nodes")
    assert not {name for name in imported if name and name.startswith(heavy)}
