"""The tabular learner: state reading, the action set, the Q-table policy and Q-learning."""

from __future__ import annotations

import pickle

import pytest

pytest.importorskip(
    "gymnasium", reason="the gymnasium bridge needs the 'gym' extra: pip install 'envharness[gym]'"
)

import cloudpickle  # noqa: E402

from envharness import load_bridge  # noqa: E402
from envharness.core import Action, ToolSpec  # noqa: E402
from envharness.errors import PolicyError  # noqa: E402
from envharness.harness import Rules, Setups  # noqa: E402
from envharness.harness.spec import BridgeSpec, HarnessSpec  # noqa: E402
from envharness.rl import (  # noqa: E402
    QLearner,
    QTable,
    QTablePolicy,
    QTablePolicyFactory,
    check_tabular,
    discrete_actions,
    observation_state,
)
from envharness.rl.tabular import _context  # noqa: E402
from envharness.rollout import rollout, run_rollouts  # noqa: E402
from envharness.rollout.executors import LocalExecutor  # noqa: E402

LAKE = HarnessSpec(BridgeSpec("gymnasium", "FrozenLake-v1", {"env_kwargs": {"is_slippery": False}}))

BLOCK_RIGHT = """
class _Rules:
    def filter_action(self, action, state):
        if action["tool"] == "move_right":
            return "Moving right is not allowed here."
        return action
"""


def success_rate(policy, spec: HarnessSpec, n: int = 10) -> float:
    seeds = range(1000, 1000 + n)
    return sum(rollout(spec.build(), policy(seed=s), seed=s).success for s in seeds) / n


# -- reading states and actions ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "options", "expected"),
    [
        ("FrozenLake-v1", {}, "cell:0,0"),
        ("CliffWalking-v1", {}, "cell:3,0"),
        ("Taxi-v4", {}, "taxi:2,2,blue,red"),
    ],
)
def test_the_state_is_read_from_the_observation_text(task, options, expected):
    env = load_bridge("gymnasium", task_id=task, **options)
    observation, _ = env.reset(seed=1)
    assert observation_state(observation) == expected
    state = env.get_env_state()  # the reader agrees with the bridge's own view
    if "row" in state:
        assert expected == f"cell:{state['row']},{state['col']}"
    else:
        assert expected == (
            f"taxi:{state['taxi_row']},{state['taxi_col']},{state['passenger']},"
            f"{state['destination']}"
        )
    env.close()


def test_a_passenger_in_the_taxi_and_integer_observations_are_states():
    text = "The taxi is at row 0, col 1. The passenger is in the taxi; the destination is green."
    assert observation_state(text) == "taxi:0,1,in_taxi,green"
    assert observation_state("New episode of X-v0.\nObservation: 7") == "obs:7"
    assert observation_state("Observation: [3, -1]") == "obs:3,-1"
    assert observation_state("Observation: cart position 0.0137, cart velocity -0.02.") is None
    assert observation_state("Moving right is not allowed here.") is None


def test_discrete_actions_expand_an_integer_act_tool():
    tool = ToolSpec(
        "act",
        "Take an action.",
        {
            "type": "object",
            "properties": {"action": {"type": "integer", "minimum": 0, "maximum": 2}},
        },
    )
    assert discrete_actions([tool]) == [Action("act", {"action": i}) for i in range(3)]


def test_a_text_command_env_is_not_tabular():
    env = load_bridge("toy24", task_id="4-4-10-10")
    with pytest.raises(PolicyError, match="finite action set.*'combine'"):
        check_tabular(env)
    with pytest.raises(PolicyError, match="finite action set"):
        QLearner().initial_policy([HarnessSpec(BridgeSpec("toy24", "4-4-10-10"))])


def test_real_valued_observations_are_not_tabular():
    with pytest.raises(PolicyError, match="'CartPole-v1'.*observations name none"):
        QLearner().initial_policy([HarnessSpec(BridgeSpec("gymnasium", "CartPole-v1"))])


def test_bad_rates_are_refused():
    with pytest.raises(PolicyError, match=r"alpha: expected a number in \(0, 1\], got 0"):
        QLearner(alpha=0)
    with pytest.raises(PolicyError, match=r"epsilon: expected a number in \[0, 1\], got 2"):
        QLearner(epsilon=2)


# -- learning ----------------------------------------------------------------------------------


def test_the_learner_improves_on_a_small_lake_within_a_small_budget():
    learner = QLearner(alpha=0.5, epsilon=0.2)
    untrained = learner.initial_policy([LAKE], seed=0)
    assert success_rate(untrained, LAKE) == 0.0
    outcome = learner.train(untrained, [LAKE], 3000, seed=11)
    assert outcome.env_steps == 3000
    assert outcome.episodes > 100 and outcome.details["successes"] > 0
    assert success_rate(outcome.policy, LAKE) == 1.0
    assert untrained.table.values == {}  # training copies the table


def test_training_is_deterministic_and_counts_every_step():
    learner = QLearner(alpha=0.5)
    start = learner.initial_policy([LAKE])
    first = learner.train(start, [LAKE], 777, seed=5)
    again = learner.train(start, [LAKE], 777, seed=5)
    assert first.policy.table.values == again.policy.table.values
    assert first.policy.describe() == again.policy.describe()
    assert first.env_steps == 777  # it stops mid-episode at the budget
    assert learner.train(start, [LAKE], 0, seed=5).env_steps == 0


def test_setup_steps_are_counted_apart():
    spec = HarnessSpec.from_env(Setups(LAKE.build(), [{"tool": "move_right", "args": {}}]))
    outcome = QLearner().train(QLearner().initial_policy([LAKE]), [spec], 200, seed=0)
    assert outcome.env_steps == 200
    assert outcome.setup_steps == outcome.episodes  # one replayed step per episode


def test_the_policy_sets_aside_an_action_a_rule_refuses():
    env = Rules(LAKE.build(), BLOCK_RIGHT)
    table = QTable(discrete_actions(env.tools()), {})
    observation, _ = env.reset(seed=0)
    start = f"{_context(env.instruction)}|{observation_state(observation)}"
    table.values[start] = [0.0, 0.0, 1.0, 0.0]  # move_right looks best at the start
    policy = QTablePolicy(table, seed=0)
    policy.start(env.instruction, env.tools())
    assert policy.act(observation).tool == "move_right"
    refused = env.step(Action("move_right", {})).observation
    assert observation_state(refused) is None
    assert policy.act(refused).tool != "move_right"
    env.close()


def test_a_table_must_match_the_env_tools():
    policy = QTablePolicy(QTable([Action("jump", {})]))
    env = LAKE.build()
    with pytest.raises(PolicyError, match=r"acts with \['jump'\]"):
        policy.start(env.instruction, env.tools())


def test_the_factory_travels_to_worker_processes_with_its_table():
    learner = QLearner(alpha=0.5, epsilon=0.2)
    trained = learner.train(learner.initial_policy([LAKE]), [LAKE], 3000, seed=11).policy
    copy = cloudpickle.loads(cloudpickle.dumps(trained))
    assert isinstance(copy, QTablePolicyFactory) and copy.describe() == trained.describe()
    pickle.dumps(trained)  # the standard pickler too
    with LocalExecutor(workers=2) as executor:
        batch = run_rollouts(LAKE, trained, 4, seed=50, executor=executor)
    assert [t.success for t in batch] == [True] * 4
    assert {t.policy for t in batch} == {trained.describe()}


def test_a_saved_table_loads_back(tmp_path):
    learner = QLearner()
    trained = learner.train(learner.initial_policy([LAKE]), [LAKE], 500, seed=1).policy
    learner.save_policy(trained, tmp_path)
    assert learner.load_policy(tmp_path).describe() == trained.describe()
    (tmp_path / "q_table.json").write_text('{"table": {"actions": 3}}')
    with pytest.raises(PolicyError, match="not a Q-table"):
        learner.load_policy(tmp_path)
    with pytest.raises(PolicyError, match="cannot read the saved Q-table"):
        learner.load_policy(tmp_path / "missing")
