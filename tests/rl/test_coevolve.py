"""``coevolve``: rounds of rig → train → evaluate, offline, with honest step counts and resume."""

from __future__ import annotations

import json
import time

import pytest

pytest.importorskip(
    "gymnasium", reason="the gymnasium bridge needs the 'gym' extra: pip install 'envharness[gym]'"
)
pytest.importorskip("langgraph", reason="rigging needs the 'rigger' extra")

from envharness.errors import (  # noqa: E402
    PolicyError,
    RiggerError,
    UnknownBridgeError,
    UnknownTaskError,
)
from envharness.harness.spec import BridgeSpec, HarnessSpec  # noqa: E402
from envharness.rl import QLearner, SeedPlan, Trainer, TrainOutcome, coevolve  # noqa: E402
from envharness.rl.rounds import round_dir  # noqa: E402
from envharness.rollout.store import RunStore  # noqa: E402

LAKE = {"env_kwargs": {"is_slippery": False}}
FAST_RIG = {"k_observe": 3, "k_validate": 5, "max_iterations": 2, "max_rollouts": 15}


class CountingLearner(QLearner):
    """A QLearner that records what each ``train`` call was given."""

    def __init__(self) -> None:
        super().__init__(alpha=0.5, epsilon=0.2)
        self.calls: list[tuple[list[str], int, int]] = []

    def train(self, policy, specs, steps_budget, seed):
        self.calls.append(([s.spec_id for s in specs], steps_budget, seed))
        return super().train(policy, specs, steps_budget, seed)


def run(out, trainer=None, **overrides):
    settings = {
        "rounds": 2,
        "steps_per_round": 400,
        "out_dir": out,
        "seed": 3,
        "bridge_options": LAKE,
        "eval_episodes": 4,
        "rigger": FAST_RIG,
    }
    settings.update(overrides)
    return coevolve(
        "gymnasium", ["FrozenLake-v1"], trainer or QLearner(alpha=0.5, epsilon=0.2), **settings
    )


def test_two_rigged_rounds_run_offline_fast_and_count_steps_honestly(tmp_path):
    learner = CountingLearner()
    start = time.perf_counter()
    result = run(tmp_path, learner)
    assert time.perf_counter() - start < 30
    assert [r.round for r in result.rounds] == [0, 1, 2]
    zero, one, two = result.rounds
    assert zero.env_steps == 0 and zero.trained_on == [] and zero.rig_rollouts == 0
    for record in (one, two):
        assert record.rigged and record.steps_reported
        assert record.env_steps == 400 and record.rig_rollouts > 0
        assert record.trained_on[0]["source"] in {"accepted", "original"}
        assert record.trained_on[0]["rig_status"] in {"accepted", "rejected", "undecided"}
        rig_store = RunStore(
            round_dir(tmp_path, record.round) / "rig" / "trajectories", readonly=True
        )
        assert record.rig_env_steps == sum(t.n_steps for t in rig_store)  # the rig's own cost
        assert record.rig_rollouts == len(rig_store)
    assert [r.total_env_steps for r in result.rounds] == [0, 400, 800]
    assert [budget for _, budget, _ in learner.calls] == [400, 400]
    # what the learner trained on is what the round says: the accepted spec or the original
    for record, (spec_ids, _, seed) in zip((one, two), learner.calls, strict=True):
        assert spec_ids == [record.trained_on[0]["spec_id"]]
        assert seed == record.train_first_seed


def test_evaluation_is_on_the_original_env_with_fresh_seeds(tmp_path):
    result = run(tmp_path, rounds=1)
    record = result.rounds[1]
    evaluation = record.evaluation["FrozenLake-v1"]
    plan = SeedPlan(3)
    assert evaluation["n"] == 4 and evaluation["first_seed"] == plan.evaluation()
    trained = range(record.train_first_seed, record.train_first_seed + record.episodes)
    evaluated = range(evaluation["first_seed"], evaluation["first_seed"] + evaluation["n"])
    assert not set(trained) & set(evaluated)
    rig_seeds = {t.seed for t in RunStore(round_dir(tmp_path, 1) / "rig" / "trajectories")}
    assert not rig_seeds & set(evaluated)
    # the evaluated env is the original task (no components), whatever the learner trained on
    original = HarnessSpec(BridgeSpec("gymnasium", "FrozenLake-v1", LAKE)).pinned()
    assert evaluation["spec_id"] == original.spec_id
    for path in (round_dir(tmp_path, 1) / "rig" / "accepted").glob("*.json"):
        assert HarnessSpec.from_json(path.read_text()).spec_id != original.spec_id
    assert record.eval_env_steps > 0


def test_a_finished_round_is_not_redone(tmp_path):
    first = run(tmp_path, rounds=1)
    learner = CountingLearner()
    again = run(tmp_path, learner, rounds=2)
    assert len(learner.calls) == 1  # only round 2 trained
    assert again.rounds[1].to_dict() == first.rounds[1].to_dict()
    assert again.rounds[2].total_env_steps == 800
    stored = json.loads((round_dir(tmp_path, 2) / "round.json").read_text())
    assert stored["round"] == 2
    # a third run with the same rounds trains nothing at all
    idle = CountingLearner()
    run(tmp_path, idle, rounds=2)
    assert idle.calls == []


def test_the_baseline_arm_trains_on_the_original_env_without_rigging(tmp_path):
    result = run(tmp_path, rig=False)
    for record in result.rounds[1:]:
        assert not record.rigged and record.rig_rollouts == 0
        assert record.trained_on[0]["source"] == "original"
    assert not (round_dir(tmp_path, 1) / "rig").exists()


def test_a_run_directory_with_other_settings_is_refused(tmp_path):
    run(tmp_path, rounds=1, rig=False)
    with pytest.raises(RiggerError, match=r"other settings \(steps_per_round: 400 → 500\)"):
        run(tmp_path, rounds=1, rig=False, steps_per_round=500)


def test_a_trainer_that_does_not_report_steps_is_charged_the_budget(tmp_path):
    class Silent(QLearner):
        def train(self, policy, specs, steps_budget, seed):
            return super().train(policy, specs, steps_budget // 2, seed).policy

    result = run(tmp_path, Silent(), rounds=1, rig=False)
    assert result.rounds[1].env_steps == 400 and not result.rounds[1].steps_reported


def test_a_trainer_over_its_budget_is_an_error(tmp_path):
    class Greedy(QLearner):
        def train(self, policy, specs, steps_budget, seed):
            outcome = super().train(policy, specs, steps_budget, seed)
            return TrainOutcome(outcome.policy, steps_budget + 1)

    with pytest.raises(RiggerError, match="over the round's budget of 400"):
        run(tmp_path, Greedy(), rounds=1, rig=False)


@pytest.mark.parametrize(
    ("overrides", "error", "match"),
    [
        ({"rounds": 0}, RiggerError, r"rounds: expected an int >= 1, got 0"),
        ({"steps_per_round": -5}, RiggerError, r"steps_per_round: expected an int >= 1"),
        ({"eval_episodes": 0}, RiggerError, r"eval_episodes: expected an int >= 1"),
        ({"seed": -1}, RiggerError, r"seed: expected an int in \[0, 100000\)"),
        ({"rigger": {"k_obsrve": 3}}, RiggerError, r"unknown setting\(s\) \['k_obsrve'\]"),
        ({"objective": "sr:0.9-0.1"}, RiggerError, r"expected a band with 0 <= low <= high"),
    ],
)
def test_bad_settings_are_refused_before_anything_runs(tmp_path, overrides, error, match):
    with pytest.raises(error, match=match):
        run(tmp_path / "run", **overrides)
    assert not (tmp_path / "run" / "round-000").exists()


def test_unknown_bridges_and_tasks_and_non_tabular_envs_are_clear_errors(tmp_path):
    with pytest.raises(UnknownBridgeError, match="no bridge named 'gymnasiun'"):
        coevolve("gymnasiun", ["FrozenLake-v1"], QLearner(), rounds=1, steps_per_round=10,
                 out_dir=tmp_path / "a")  # fmt: skip
    with pytest.raises(UnknownTaskError, match="FrozenLake-v9"):
        coevolve("gymnasium", ["FrozenLake-v9"], QLearner(), rounds=1, steps_per_round=10,
                 out_dir=tmp_path / "b")  # fmt: skip
    with pytest.raises(PolicyError, match="finite action set"):
        coevolve("toy24", ["4-4-10-10"], QLearner(), rounds=1, steps_per_round=10,
                 out_dir=tmp_path / "c")  # fmt: skip
    with pytest.raises(RiggerError, match="no tasks"):
        coevolve("gymnasium", [], QLearner(), rounds=1, steps_per_round=10, out_dir=tmp_path / "d")


class Plain:
    """A trainer with only the protocol's two calls (no save_policy/load_policy)."""

    def __init__(self) -> None:
        self.learner = QLearner(alpha=0.5, epsilon=0.2)
        self.trained = 0

    def initial_policy(self, specs, seed):
        return self.learner.initial_policy(specs, seed)

    def train(self, policy, specs, steps_budget, seed):
        self.trained += 1
        return self.learner.train(policy, specs, steps_budget, seed)


def test_a_plain_trainer_is_pickled_and_resumes(tmp_path):
    trainer = Plain()
    assert isinstance(trainer, Trainer)
    first = run(tmp_path, trainer, rounds=1, rig=False)
    assert (round_dir(tmp_path, 1) / "policy.pkl").exists()
    again = Plain()
    resumed = run(tmp_path, again, rounds=2, rig=False)
    assert again.trained == 1 and resumed.rounds[1].policy == first.rounds[1].policy
    (round_dir(tmp_path, 2) / "policy.pkl").write_bytes(b"not a pickle")
    with pytest.raises(PolicyError, match="cannot load the policy saved in"):
        run(tmp_path, Plain(), rounds=2, rig=False)
