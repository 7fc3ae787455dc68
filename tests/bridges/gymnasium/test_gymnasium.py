from __future__ import annotations

import json
import subprocess
import sys

import pytest

# A submodule, not the bare name: pytest puts tests/bridges on sys.path, where this test folder
# of the same name would import as an empty namespace package if gymnasium were not installed.
pytest.importorskip(
    "gymnasium.spaces",
    reason="the gymnasium bridge needs the 'gym' extra: pip install 'envharness[gym]'",
)

import gymnasium as gym  # noqa: E402

import envharness  # noqa: E402
from envharness import (  # noqa: E402
    Action,
    BridgeError,
    DependencyNotInstalled,
    EpisodeError,
    InvalidActionError,
    UnknownTaskError,
    load_bridge,
)
from envharness.bridges.gymnasium import GymnasiumEnv  # noqa: E402
from envharness.harness import HarnessSpec, Rules, Setups  # noqa: E402
from envharness.rollout import OraclePolicy, RandomPolicy, rollout  # noqa: E402
from envharness.testing import check_bridge  # noqa: E402

DRY = {"is_slippery": False}
# Versioned ids that differ across gymnasium 1.x releases, as this one registers them.
CLIFF = "CliffWalking-v1" if "CliffWalking-v1" in gym.registry else "CliffWalking-v0"
TAXI = "Taxi-v4" if "Taxi-v4" in gym.registry else "Taxi-v3"
SLIPPERY_CLIFF = "CliffWalkingSlippery-v1"
MOVE = {name: Action(name) for name in ("move_left", "move_down", "move_right", "move_up")}


def make(task_id: str, **options) -> GymnasiumEnv:
    env = load_bridge("gymnasium", task_id=task_id, **options)
    assert isinstance(env, GymnasiumEnv)
    return env


@pytest.fixture
def lake():
    env = make("FrozenLake-v1", env_kwargs=DRY)
    yield env
    env.close()


class _Counter(gym.Env):
    """A tiny third-party env: actions -1, 0, +1 move a counter; reaching 3 ends with +1."""

    metadata = {"render_modes": []}

    def __init__(self, render_mode=None, target: int = 3):
        self.action_space = gym.spaces.Discrete(3, start=-1)
        self.observation_space = gym.spaces.Box(-10.0, 10.0, (2,))
        self.target = target

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.value = int(self.np_random.integers(0, 2))
        return [float(self.value), 0.5], {}

    def step(self, action):
        self.value += int(action)
        done = self.value >= self.target
        return [float(self.value), 0.5], 1.0 if done else 0.0, done, False, {}


@pytest.fixture
def counter_id():
    env_id = "EnvHarnessCounter-v0"
    gym.register(id=env_id, entry_point=_Counter, max_episode_steps=20)
    yield env_id
    del gym.registry[env_id]


# -- the package and the extra --------------------------------------------------------------------


def test_importing_the_bridges_does_not_import_gymnasium():
    code = (
        "import sys, envharness, envharness.bridges, envharness.bridges.gymnasium\n"
        "assert 'gymnasium' not in sys.modules, 'gymnasium was imported'\n"
        "print('gymnasium' in envharness.list_bridges())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"


def test_missing_gymnasium_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "gymnasium", None)  # any import of it now fails
    with pytest.raises(DependencyNotInstalled, match=r"gymnasium.*envharness\[gym\]") as info:
        load_bridge("gymnasium", task_id="FrozenLake-v1")
    assert (info.value.package, info.value.extra) == ("gymnasium", "gym")
    with pytest.raises(DependencyNotInstalled, match=r"envharness\[gym\]"):
        envharness.list_tasks("gymnasium", "train")


# -- conformance ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task_id", "options"),
    [
        ("FrozenLake-v1", {"env_kwargs": DRY}),
        (CLIFF, {}),
        (TAXI, {}),
        ("Blackjack-v1", {}),
        ("CartPole-v1", {}),
    ],
)
def test_check_bridge(task_id, options):
    report = check_bridge(lambda: make(task_id, **options))
    assert report.bridge == "gymnasium"
    assert report.actions  # the oracle's plan, or synthesized moves for CartPole


@pytest.mark.parametrize("seed", [0, 7])
def test_check_bridge_slippery_with_a_long_walk(seed):
    walk = [MOVE[m] for m in ("move_right", "move_down", "move_down", "move_left") * 3]
    check_bridge(lambda: make("FrozenLake-v1"), actions=walk, seed=seed)


def test_check_bridge_generic_act_tool(counter_id):
    check_bridge(lambda: make(counter_id), actions=[{"tool": "act", "args": {"action": 1}}] * 4)


# -- tools, observations, state ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("task_id", "names"),
    [
        ("FrozenLake-v1", ["move_left", "move_down", "move_right", "move_up"]),
        (CLIFF, ["move_up", "move_right", "move_down", "move_left"]),
        (TAXI, ["move_south", "move_north", "move_east", "move_west", "pickup", "dropoff"]),
        ("Blackjack-v1", ["stick", "hit"]),
        ("CartPole-v1", ["push_left", "push_right"]),
        ("MountainCar-v0", ["accelerate_left", "coast", "accelerate_right"]),
    ],
)
def test_named_tools_take_no_arguments(task_id, names):
    env = make(task_id)
    try:
        assert [t.name for t in env.tools()] == names
        assert all(t.parameters == {"type": "object", "properties": {}} for t in env.tools())
        assert all(name in env.instruction for name in names)
    finally:
        env.close()


def test_generic_act_tool_checks_its_range(counter_id):
    env = make(counter_id)
    try:
        (tool,) = env.tools()
        assert tool.name == "act"
        assert tool.parameters["properties"]["action"]["minimum"] == -1
        assert tool.parameters["properties"]["action"]["maximum"] == 1
        assert "enum" not in tool.parameters["properties"]["action"]  # Gemini: enums are strings
        observation, _ = env.reset(seed=0)
        assert observation.startswith(f"New episode of {counter_id}.")
        with pytest.raises(InvalidActionError, match="from -1 to 1, got 5"):
            env.step(Action("act", {"action": 5}))
        with pytest.raises(InvalidActionError, match="missing required argument"):
            env.step(Action("act", {}))
        state = env.get_env_state()
        result = env.step(Action("act", {"action": -1}))
        assert result.info["action"] == "act(-1)"
        assert env.get_env_state()["last_action_index"] == -1
        assert env.get_env_state()["observation"][0] == state["observation"][0] - 1
        with pytest.raises(BridgeError, match="no oracle"):
            env.oracle_actions()
        assert env.stage_candidates() == []
    finally:
        env.close()


class _NamedCounter(_Counter):
    def get_action_meanings(self):
        return ["DOWN", "NOOP", "UP"]


def test_action_meanings_name_the_tools():
    gym.register(id="EnvHarnessNamedCounter-v0", entry_point=_NamedCounter)
    try:
        env = make("EnvHarnessNamedCounter-v0")
        assert [t.name for t in env.tools()] == ["down", "noop", "up"]
        env.reset(seed=0)
        assert env.step(Action("up")).info["action"] == "up"
        assert env.max_steps == 100  # no registered time limit: the default budget
        env.close()
    finally:
        del gym.registry["EnvHarnessNamedCounter-v0"]


def test_generic_success_is_terminating_with_a_positive_return(counter_id):
    env = make(counter_id)
    env.reset(seed=0)
    while not env.get_env_state()["terminated"]:
        env.step(Action("act", {"action": 1}))
    evaluation = env.evaluate()
    assert evaluation.success and evaluation.score == 1.0
    assert evaluation.details["outcome"] == "success"


def test_frozen_lake_observation_and_state(lake):
    observation, info = lake.reset(seed=0)
    assert "\x1b" not in observation
    assert observation.splitlines()[1:5] == ["SFFF", "FHFH", "FFFH", "HFFG"]
    assert "You are at row 0, col 0, on the start (S). The goal is at row 3, col 3." in observation
    assert info == {"seed": 0, "raw_observation": 0}
    result = lake.step(MOVE["move_right"])
    assert result.observation.startswith("Step 1: move_right -> reward 0 (total 0).")
    assert "You moved right. You are at row 0, col 1" in result.observation
    state = lake.get_env_state()
    assert {k: state[k] for k in ("observation", "row", "col", "tile", "steps")} == {
        "observation": 1,
        "row": 0,
        "col": 1,
        "tile": "F",
        "steps": 1,
    }
    assert (state["last_action"], state["last_action_index"]) == ("move_right", 2)
    assert state["map"] == ["SFFF", "FHFH", "FFFH", "HFFG"]
    result = lake.step(MOVE["move_down"])  # into the hole at row 1, col 1
    assert result.terminated and "you fell into the hole at row 1, col 1" in result.observation
    assert lake.evaluate().details["outcome"] == "hole" and not lake.evaluate().success
    with pytest.raises(EpisodeError, match="episode is over"):
        lake.step(MOVE["move_up"])


def test_setups_start_is_a_start_and_its_steps_are_not_counted(lake):
    staged = Setups(lake, [Action("move_right"), Action("move_right")])
    observation, _ = staged.reset(seed=0)
    assert observation.startswith("New episode of FrozenLake-v1.") and "Step" not in observation
    assert observation == staged.observe()
    state = staged.get_env_state()
    assert state["steps"] == 0 and state["col"] == 2 and staged.evaluate().details["steps"] == 0
    result = staged.step(Action("move_down"))
    assert result.observation.startswith("Step 1: move_down")
    assert staged.observe().startswith("FrozenLake-v1 after 1 step(s)")
    clone = GymnasiumEnv.from_state(json.loads(json.dumps(lake.save_state())))
    assert clone.get_env_state() == lake.get_env_state() and clone.observe() == lake.observe()


def test_taxi_decodes_the_state():
    env = make(TAXI)
    try:
        env.reset(seed=1)
        state = env.get_env_state()
        assert (state["taxi_row"], state["taxi_col"]) == (2, 2)
        assert (state["passenger"], state["destination"]) == ("blue", "red")
        result = env.step(Action("pickup"))
        assert result.reward == -10 and "Illegal pickup (-10)." in result.observation
        assert "The passenger waits at blue (B, row 4, col 3)" in result.observation
    finally:
        env.close()


def test_blackjack_hides_the_dealer_card_until_the_end():
    env = make("Blackjack-v1")
    try:
        observation, _ = env.reset(seed=1)
        hand = "Your cards: 10, 10 (sum 20, usable ace: no). The dealer shows 7."
        assert observation.endswith(hand)
        assert env.get_env_state()["dealer_cards"] == [7]
        assert env.oracle_actions() == [Action("stick")]
        result = env.step(Action("stick"))
        assert result.terminated and result.reward == 1.0
        assert "The dealer's cards: 7, 7" in result.observation and "you win" in result.observation
        assert len(env.get_env_state()["dealer_cards"]) > 2
        assert env.evaluate().success and env.evaluate().details["outcome"] == "win"
        assert env.oracle_actions() == [] and env.stage_candidates() == []
    finally:
        env.close()


def test_cliff_walking_fall_and_score():
    env = make(CLIFF)
    try:
        env.reset()
        result = env.step(Action("move_right"))
        assert result.reward == -100 and not result.terminated
        assert "You stepped off the cliff and are back at the start (-100)." in result.observation
        assert env.get_env_state()["fell_off_cliff"] is True
        for action in env.oracle_actions():
            result = env.step(action)
        evaluation = env.evaluate()
        assert evaluation.success and evaluation.score == -113.0
    finally:
        env.close()


def test_state_schema_declares_every_key():
    for task_id in ("FrozenLake-v1", TAXI, "Blackjack-v1", "CartPole-v1"):
        env = make(task_id)
        env.reset(seed=0)
        schema = env.env_state_schema()
        assert set(env.get_env_state()) <= set(schema["properties"]), task_id
        assert all(p.get("description") for p in schema["properties"].values()), task_id
        env.close()


# -- seeds, time limit, save and restore --------------------------------------------------------


def test_same_seed_same_episode_and_none_means_zero():
    def play(seed):
        env = make("FrozenLake-v1")
        observations = [env.reset(seed=seed)[0]]
        for _ in range(6):
            result = env.step(MOVE["move_right"])
            observations.append(result.observation)
            if result.terminated:
                break
        env.close()
        return observations

    assert play(None) == play(0)
    assert play(3) == play(3)
    assert play(0) != play(3)


def test_taxi_seeds_give_different_starts():
    env = make(TAXI)
    starts = {env.reset(seed=s)[1]["raw_observation"] for s in range(6)}
    env.close()
    assert len(starts) > 1


def test_gymnasium_time_limit_truncates(lake):
    lake.reset(seed=0)
    for _ in range(100):
        result = lake.step(MOVE["move_left"])  # into the edge: no progress
    assert result.truncated and not result.terminated
    assert "the time limit was reached" in result.observation
    assert lake.evaluate().details["outcome"] == "time_limit"


def test_save_state_replays_slippery_ice_exactly():
    env = make("FrozenLake8x8-v1")
    env.reset(seed=5)
    for name in ("move_right", "move_down", "move_right", "move_down", "move_right"):
        if env.get_env_state()["terminated"]:
            break
        env.step(MOVE[name])
    saved = json.loads(json.dumps(env.save_state()))
    clone = GymnasiumEnv.from_state(saved)
    assert clone.get_env_state() == env.get_env_state()
    assert clone.observe() == env.observe()
    env.close()
    clone.close()


def test_from_state_rejects_bad_states(lake):
    lake.reset(seed=0)
    lake.step(MOVE["move_right"])
    good = lake.save_state()
    with pytest.raises(BridgeError, match="missing key"):
        GymnasiumEnv.from_state({"bridge": "gymnasium"})
    with pytest.raises(BridgeError, match="'actions' must be a list"):
        GymnasiumEnv.from_state({**good, "actions": ["move_right"]})
    with pytest.raises(BridgeError, match="not an action index"):
        GymnasiumEnv.from_state({**good, "actions": [9]})
    with pytest.raises(BridgeError, match="not deterministic"):
        GymnasiumEnv.from_state({**good, "observation": 5})
    with pytest.raises(BridgeError, match="after the episode ended"):
        GymnasiumEnv.from_state({**good, "actions": [2, 1, 3]})
    fresh = make("FrozenLake-v1", env_kwargs=DRY).save_state()
    assert fresh["seed"] is None and GymnasiumEnv.from_state(fresh).get_env_state()["steps"] == 0


def test_spec_round_trip_keeps_the_options():
    env = make("FrozenLake-v1", env_kwargs={"map_name": "8x8", "is_slippery": False}, max_steps=40)
    assert env.bridge_options() == {
        "env_kwargs": {"map_name": "8x8", "is_slippery": False},
        "max_steps": 40,
    }
    assert repr(env) == (
        "<GymnasiumEnv task='FrozenLake-v1' env_kwargs={'map_name': '8x8', 'is_slippery': False} "
        "max_steps=40>"
    )
    rebuilt = HarnessSpec.from_json(HarnessSpec.from_env(env).to_json()).build()
    assert rebuilt.bridge_options() == env.bridge_options()
    assert rebuilt.reset(seed=0)[0] == env.reset(seed=0)[0]
    rebuilt.close()
    env.close()
    env.close()  # idempotent
    with pytest.raises(BridgeError, match="closed"):
        env.reset()


# -- oracle and random rollouts ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("task_id", "options", "steps"),
    [
        ("FrozenLake-v1", {"env_kwargs": DRY}, 6),
        (CLIFF, {}, 13),
        (TAXI, {}, None),
    ],
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_oracle_episode_succeeds(task_id, options, steps, seed):
    trajectory = rollout(make(task_id, **options), OraclePolicy(1.0, seed=0), seed=seed)
    assert trajectory.success and trajectory.end_reason == "terminated"
    if steps is not None:
        assert trajectory.n_steps == steps


def test_oracle_policy_copes_with_slippery_dynamics():
    if SLIPPERY_CLIFF not in gym.registry:
        pytest.skip(f"this gymnasium does not register {SLIPPERY_CLIFF}")
    wins = [
        rollout(make(SLIPPERY_CLIFF), OraclePolicy(1.0, seed=0), seed=s).success for s in range(4)
    ]
    assert sum(wins) >= 3  # the shortest path along the cliff edge would fail most of them


def test_random_episode_runs_to_the_budget_or_an_end():
    trajectory = rollout(make(TAXI, max_steps=25), RandomPolicy(seed=0), seed=0)
    assert trajectory.end_reason in ("budget", "terminated", "truncated")
    assert 1 <= trajectory.n_steps <= 25
    names = {"move_south", "move_north", "move_east", "move_west", "pickup", "dropoff"}
    assert {s.action["tool"] for s in trajectory.steps} <= names
    blackjack = rollout(make("Blackjack-v1"), RandomPolicy(seed=1), seed=0)
    assert blackjack.end_reason == "terminated"


# -- harness components -----------------------------------------------------------------------


def test_setups_moves_the_agent(lake):
    env = Setups(lake, [MOVE["move_down"], MOVE["move_down"], MOVE["move_right"]])
    observation, _ = env.reset(seed=0)
    state = env.get_env_state()
    assert (state["row"], state["col"]) == (2, 1)
    assert "You are at row 2, col 1" in observation
    for action in env.oracle_actions():
        result = env.step(action)
    assert result.terminated and env.evaluate().success


def test_stage_candidates_are_valid_setups():
    for task_id, options in (("FrozenLake-v1", {"env_kwargs": DRY}), (CLIFF, {})):
        env = make(task_id, **options)
        candidates = env.stage_candidates()
        assert len(candidates) >= 3, task_id
        plan = env.oracle_actions()
        assert candidates[0] == plan[:1] and candidates[1] == plan[:2]
        for actions in candidates:
            staged = Setups(make(task_id, **options), actions)
            staged.reset(seed=0)
            assert not staged.get_env_state()["terminated"]
            assert rollout(staged, OraclePolicy(1.0, seed=0), seed=0).success
        env.close()


def test_slippery_stage_candidates_survive_every_seed():
    env = make("FrozenLake-v1")
    candidates = env.stage_candidates()
    env.close()
    assert candidates
    for actions in candidates:
        for seed in range(8):
            staged = Setups(make("FrozenLake-v1"), actions)
            staged.reset(seed=seed)  # a SetupError would mean the stage can end the episode
            staged.close()


FORBID_LEFT = """
class _Rules:
    def filter_action(self, action, state):
        if action["tool"] == "move_left":
            return f"Moving left is forbidden here (you are at row {state['row']})."
        return action
"""


def test_rules_block_a_tool(lake):
    env = Rules(lake, FORBID_LEFT)
    try:
        env.reset(seed=0)
        env.step(MOVE["move_right"])
        before = env.get_env_state()
        result = env.step(MOVE["move_left"])
        assert result.info == {"blocked": True}
        assert result.observation == "Moving left is forbidden here (you are at row 0)."
        assert env.get_env_state() == before  # the env was not stepped
        assert env.step(MOVE["move_down"]).info.get("blocked") is None
        assert env.get_env_state()["steps"] == before["steps"] + 1
    finally:
        env.close()


def test_rig_two_tasks_offline(tmp_path):
    pytest.importorskip("langgraph", reason="the rigger needs the 'rigger' extra")
    from envharness.graph.context import RiggerContext
    from envharness.graph.run import rig

    context = RiggerContext(
        run_dir=str(tmp_path),
        policy="oracle:0.5",
        objective="auto",
        k_observe=3,
        k_validate=3,
        max_iterations=2,
    )
    tasks = ["FrozenLake-v1", CLIFF]
    results = rig("gymnasium", tasks, context, bridge_options={"env_kwargs": DRY})
    assert [r.task_id for r in results] == tasks
    assert all(r.status in ("accepted", "rejected", "undecided") for r in results), results
    assert all(r.baseline_success is not None for r in results)
    for result in results:
        folder = result.status
        assert (tmp_path / folder / f"{result.task_id}.json").exists()
    assert (tmp_path / "trajectories" / "trajectories.jsonl").read_text().count("\n") >= 6


# -- task lists and errors --------------------------------------------------------------------


def test_task_lists():
    train = envharness.list_tasks("gymnasium", "train")
    test = envharness.list_tasks("gymnasium", "test")
    every = envharness.list_tasks("gymnasium", "all")
    assert {"FrozenLake-v1", CLIFF, "Blackjack-v1"} <= set(train)
    assert any(t.startswith("Taxi-") for t in train)
    assert "FrozenLake8x8-v1" in test
    assert (SLIPPERY_CLIFF in test) == (SLIPPERY_CLIFF in gym.registry)
    assert not set(train) & set(test)
    assert set(train) | set(test) <= set(every) and "CartPole-v1" in every
    assert "Pendulum-v1" not in every and "MountainCarContinuous-v0" not in every
    sliding = envharness.list_tasks("gymnasium", "train", env_kwargs={"is_slippery": False})
    assert sliding[0] == "FrozenLake-v1" and set(sliding) <= {"FrozenLake-v1", CLIFF}
    for task_id in every:
        make(task_id).close()
    with pytest.raises(UnknownTaskError, match="unknown split 'dev'; valid splits: train"):
        envharness.list_tasks("gymnasium", "dev")
    with pytest.raises(BridgeError, match=r"unknown option\(s\) \['seed'\]"):
        envharness.list_tasks("gymnasium", "train", seed=1)


@pytest.mark.parametrize(
    ("task_id", "error", "match"),
    [
        ("Foo-v1", UnknownTaskError, "unknown Gymnasium env id 'Foo-v1'"),
        ("FrozenLake-v9", UnknownTaskError, "version `v9`.*did you mean 'FrozenLake-v1'"),
        ("FrozenLake-v0", UnknownTaskError, "deprecated. Please use `FrozenLake-v1`"),
        ("FrozenLake", UnknownTaskError, "did you mean 'FrozenLake-v1'"),
        ("no_such_module:Env-v0", UnknownTaskError, "cannot import 'no_such_module'"),
        (42, UnknownTaskError, "expected a Gymnasium env id"),
        ("Pendulum-v1", UnknownTaskError, "Box.*action space.*Discrete action space"),
    ],
)
def test_unknown_or_unplayable_tasks(task_id, error, match):
    with pytest.raises(error, match=match):
        make(task_id)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"env_kwargs": {"bogus": 1}}, "could not make 'FrozenLake-v1'.*unexpected keyword"),
        ({"env_kwargs": {"map_name": "5x5"}}, "could not make.*KeyError"),
        ({"env_kwargs": {"map_name": None}}, "unseeded random map"),
        ({"env_kwargs": {"render_mode": "human"}}, "render_mode"),
        ({"env_kwargs": {"desc": object()}}, "expected JSON values"),
        ({"env_kwargs": ["is_slippery"]}, "expected a dict with str keys"),
        ({"max_steps": 0}, "max_steps: expected a positive int, got 0"),
    ],
)
def test_bad_options(options, match):
    with pytest.raises(BridgeError, match=match):
        make("FrozenLake-v1", **options)


def test_episode_errors(lake):
    with pytest.raises(EpisodeError, match="call reset"):
        lake.step(MOVE["move_left"])
    with pytest.raises(EpisodeError, match="call reset"):
        lake.observe()
    with pytest.raises(EpisodeError, match="call reset"):
        lake.oracle_actions()
    with pytest.raises(BridgeError, match="seed: expected a non-negative int"):
        lake.reset(seed=-1)
    with pytest.raises(InvalidActionError, match="unknown tool"):
        lake.step(Action("jump"))
    with pytest.raises(InvalidActionError, match="unexpected argument"):
        lake.step(Action("move_left", {"steps": 2}))
    assert not lake.evaluate().success and lake.evaluate().details["outcome"] is None


# -- task fingerprint ---------------------------------------------------------------------------


def test_task_fingerprint_pins_the_env_and_the_kwargs_that_change_it(lake):
    fingerprint = lake.task_fingerprint()
    assert len(fingerprint) == 64 and int(fingerprint, 16) >= 0
    lake.reset(seed=3)
    lake.step(MOVE["move_right"])
    assert lake.task_fingerprint() == fingerprint
    same = [
        make("FrozenLake-v1", env_kwargs=DRY, max_steps=5),
        make("FrozenLake-v1", env_kwargs=DRY),
    ]
    try:
        assert {env.task_fingerprint() for env in same} == {fingerprint}
    finally:
        for env in same:
            env.close()
    others = [
        make("FrozenLake-v1"),  # slippery: other dynamics
        make("FrozenLake-v1", env_kwargs={"is_slippery": False, "map_name": "8x8"}),
        make("FrozenLake-v1", env_kwargs={"is_slippery": False, "desc": ["SH", "FG"]}),
        make("FrozenLake-v1", env_kwargs={**DRY, "max_episode_steps": 7}),  # the time limit
        make(CLIFF),
    ]
    try:
        prints = [env.task_fingerprint() for env in others]
        assert fingerprint not in prints and len(set(prints)) == len(prints)
    finally:
        for env in others:
            env.close()


def test_an_explicit_default_kwarg_keeps_the_fingerprint():
    plain, explicit = make("FrozenLake-v1"), make("FrozenLake-v1", env_kwargs={"is_slippery": True})
    try:
        assert plain.task_fingerprint() == explicit.task_fingerprint()
    finally:
        plain.close()
        explicit.close()


def test_a_third_party_envs_fingerprint_follows_its_kwargs(counter_id):
    envs = [
        make(counter_id),
        make(counter_id, env_kwargs={"target": 3}),
        make(counter_id, env_kwargs={"target": 2}),
    ]
    try:
        default, explicit, easier = (env.task_fingerprint() for env in envs)
        assert default == explicit != easier
    finally:
        for env in envs:
            env.close()
