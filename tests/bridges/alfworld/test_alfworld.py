from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from envharness import (
    Action,
    BridgeError,
    DependencyNotInstalled,
    EpisodeError,
    UnknownTaskError,
    list_tasks,
    load_bridge,
)
from envharness.bridges.alfworld import AlfWorldEnv
from envharness.harness import Rules, Setups
from envharness.rollout import OraclePolicy, RandomPolicy, rollout
from envharness.testing import check_bridge

# The sample trials shipped with the project's shared data (see its README.md); only small rooms
# (bedrooms, one small kitchen) are played here: big kitchens cost seconds per build.
DATA = Path(
    os.environ.get("ENVHARNESS_ALFWORLD_DATA")
    or Path(__file__).resolve().parents[4] / "shared" / "data" / "alfworld"
)
LAMP = "look_at_obj_in_light-AlarmClock-None-DeskLamp-323/trial_T20190909_044715_250790"
KEYCHAIN = "pick_and_place_simple-KeyChain-None-SideTable-309/trial_T20190908_215011_025401"
LADLE = "pick_clean_then_place_in_recep-Ladle-None-CounterTop-14/trial_T20190909_113924_604801"
BIG_KITCHEN = (
    "pick_clean_then_place_in_recep-ButterKnife-None-Drawer-30/trial_T20190908_052007_212776"
)
UNSOLVABLE = "pick_two_obj_and_place-SoapBar-None-Toilet-412/trial_T20190908_071602_531614"
# The extra is probed through a submodule: pytest puts tests/bridges on sys.path, where this
# test folder would import as an empty namespace package if alfworld were not installed.
NEEDS_ALFWORLD = "the ALFWorld bridge needs its extra: pip install 'envharness[alfworld]'"

HAVE_DATA = (DATA / "json_2.1.1").is_dir()
NO_DATA = f"no ALFWorld sample data at {DATA} (set ENVHARNESS_ALFWORLD_DATA)"
needs_data = pytest.mark.skipif(not HAVE_DATA, reason=NO_DATA)


def act(command: str) -> Action:
    return Action("act", {"command": command})


def commands(actions) -> list[str]:
    return [a.args["command"] for a in actions]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    """The game cache, as ``$ENVHARNESS_CACHE/alfworld`` for the cache's parent."""
    if not HAVE_DATA:
        pytest.skip(NO_DATA)
    pytest.importorskip("alfworld.agents", reason=NEEDS_ALFWORLD)
    return str(tmp_path_factory.mktemp("envharness-cache") / "alfworld")


@pytest.fixture
def make(cache):
    made: list[AlfWorldEnv] = []

    def build(task_id: str = KEYCHAIN, **options) -> AlfWorldEnv:
        env = load_bridge(
            "alfworld", task_id=task_id, data_dir=str(DATA), cache_dir=cache, **options
        )
        made.append(env)
        return env

    yield build
    for env in made:
        env.close()


# -- data, splits and task ids (no alfworld needed) ----------------------------------------------


@needs_data
def test_splits_are_the_data_folders():
    seen = AlfWorldEnv.list_tasks("valid_seen", data_dir=DATA)
    assert len(seen) == 10 and seen == sorted(seen)  # 12 trials, 2 marked unsolvable
    assert (DATA / "json_2.1.1" / "valid_seen" / UNSOLVABLE / "initial_state.pddl").is_file()
    assert LAMP in seen and UNSOLVABLE not in seen
    assert len(list_tasks("alfworld", "valid_train", data_dir=str(DATA))) == 24
    assert KEYCHAIN in AlfWorldEnv.list_tasks("valid_train", data_dir=DATA)
    with pytest.raises(BridgeError, match="no 'train' folder.*valid_train, valid_seen"):
        AlfWorldEnv.list_tasks("train", data_dir=DATA)
    with pytest.raises(BridgeError, match="no 'valid_unseen' folder for split 'test'"):
        AlfWorldEnv.list_tasks("test", data_dir=DATA)
    with pytest.raises(UnknownTaskError, match="valid splits: train, valid_train, valid_seen"):
        AlfWorldEnv.list_tasks("dev", data_dir=DATA)
    with pytest.raises(BridgeError, match="unknown option"):
        AlfWorldEnv.list_tasks("valid_seen", data_dir=DATA, size=3)


@needs_data
def test_data_comes_from_alfworld_data(monkeypatch):
    monkeypatch.setenv("ALFWORLD_DATA", str(DATA))
    assert AlfWorldEnv.list_tasks("valid_seen")[0] == LAMP
    # the folder with the split folders works as well as the one holding json_2.1.1/
    assert AlfWorldEnv.list_tasks("valid_seen", data_dir=DATA / "json_2.1.1")[0] == LAMP


def test_missing_data_says_how_to_get_it(monkeypatch, tmp_path):
    with pytest.raises(BridgeError, match="no ALFWorld trials") as caught:
        AlfWorldEnv.list_tasks("valid_seen", data_dir=tmp_path)
    message = str(caught.value)
    assert "ALFWORLD_DATA" in message and "data_dir=" in message
    assert "alfworld-download" in message and "json_2.1.1" in message
    monkeypatch.delenv("ALFWORLD_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(BridgeError, match=r"neither data_dir nor \$ALFWORLD_DATA is set"):
        list_tasks("alfworld", "valid_seen")
    with pytest.raises(BridgeError, match="data_dir: expected a path"):
        AlfWorldEnv.list_tasks("valid_seen", data_dir=3)


@pytest.mark.parametrize(
    ("task_id", "problem"),
    [
        ("pick_and_place_simple-Box-None-Dresser-224", "malformed task id"),
        ("../valid_seen/x-a-b-c-1/trial_T1_2_3", "malformed task id"),
        (LAMP + "/", "malformed task id"),
        (7, "expected a str task id"),
        (UNSOLVABLE, "no playable trial"),  # the release marks it unsolvable
        (LAMP.replace("323", "324"), f"Closest: {LAMP}"),
    ],
)
def test_bad_task_ids(cache, task_id, problem):
    with pytest.raises(UnknownTaskError, match=problem) as caught:
        AlfWorldEnv(task_id, data_dir=DATA, cache_dir=cache)
    assert "list_tasks" in str(caught.value)


def test_bad_options():
    with pytest.raises(BridgeError, match="max_steps: expected a positive int"):
        AlfWorldEnv(LAMP, data_dir=DATA, max_steps=0)
    with pytest.raises(BridgeError, match="cache_dir: expected a path"):
        AlfWorldEnv(LAMP, data_dir=DATA, cache_dir=3)
    with pytest.raises(BridgeError, match="data_dir: expected a path"):
        AlfWorldEnv(LAMP, data_dir=["x"])


def test_missing_alfworld_names_the_extra(monkeypatch):
    from envharness.bridges.alfworld import _kit

    monkeypatch.setattr(_kit, "_KIT", None)
    monkeypatch.setitem(sys.modules, "alfworld", None)  # `import alfworld` now fails
    with pytest.raises(DependencyNotInstalled, match=r"envharness\[alfworld\]"):
        load_bridge("alfworld", task_id=LAMP, data_dir=str(DATA))


@needs_data
def test_imports_leave_the_process_alone(tmp_path):
    """Listing imports no alfworld; playing leaves $ALFWORLD_DATA, ~/.cache and sys.argv alone."""
    code = textwrap.dedent(f"""
        import os, sys
        from envharness.bridges import get_bridge
        cls = get_bridge("alfworld")
        assert cls.list_tasks("valid_seen", data_dir={str(DATA)!r})
        assert "alfworld" not in sys.modules and "textworld" not in sys.modules
        argv = list(sys.argv)
        env = cls({LAMP!r}, data_dir={str(DATA)!r}, cache_dir={str(tmp_path / "cache")!r})
        env.reset()
        env.step(env.oracle_actions()[0])
        env.close()
        assert "ALFWORLD_DATA" not in os.environ, os.environ["ALFWORLD_DATA"]
        assert not os.path.exists(os.path.expanduser("~/.cache/alfworld"))
        assert sys.argv == argv, sys.argv
    """)
    environ = {k: v for k, v in os.environ.items() if k != "ALFWORLD_DATA"}
    environ["HOME"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", code], env=environ, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-2000:]


# -- the game -----------------------------------------------------------------------------------


def test_game_is_rebuilt_and_cached(make, cache):
    env = make(LAMP)
    built = env._built
    assert (
        built.folder.parent == Path(cache) and built.goal == "look at alarmclock under the desklamp"
    )
    game = json.loads(built.game_file.read_text())
    assert "Your task is to: look at alarmclock under the desklamp." in game["grammar"]
    assert "UNKNOWN GOAL" not in game["grammar"]
    trial = DATA / "json_2.1.1" / "valid_seen" / LAMP
    assert game["pddl_problem"] == (trial / "initial_state.pddl").read_text()
    import alfworld.info

    assert game["pddl_domain"] == Path(alfworld.info.ALFRED_PDDL_PATH).read_text()
    expert_view = json.loads((built.folder / "traj_data.json").read_text())
    assert expert_view["task_type"] == "look_at_obj_in_light"
    assert expert_view["pddl_params"]["object_target"] == "AlarmClock"
    assert make(LAMP)._built.folder == built.folder  # same content, same folder


def test_game_text_is_textworld_s_own(make):
    """The memoized translation and text writing give TextWorld's answers, step by step."""
    from envharness.bridges.alfworld._game import Game
    from envharness.bridges.alfworld._kit import kit

    parts = kit()
    built = make(LAMP)._built
    plain = parts.demangler(
        parts.pddl_env(parts.textworld.EnvInfos(admissible_commands=True, won=True)),
        shuffle=False,
    )
    plain.load(dict(built.data))  # TextWorld as shipped: no memoization
    ours = Game(parts, built.data)
    try:
        state, view = plain.reset(), ours.reset()
        rng = random.Random(5)
        for _ in range(8):
            assert view.feedback == state["feedback"]
            assert view.admissible == tuple(sorted(state["admissible_commands"]))
            command = rng.choice(view.admissible)
            state, view = plain.step(command)[0], ours.step(command)
    finally:
        ours.close()


def test_reset_and_state(make):
    env = make()
    with pytest.raises(EpisodeError, match="call reset"):
        env.step(act("look"))
    observation, info = env.reset(seed=3)
    assert observation.startswith("You are in the middle of a room. Looking quickly around you")
    assert observation.endswith("a safe 1, and a sidetable 1.")
    assert "Welcome" not in observation and "-=" not in observation
    assert "Your task is to" not in observation  # the instruction says it, once
    assert env.instruction.startswith("Your task is to: put a keychain in sidetable.\n")
    assert env.instruction.count("Your task is to") == 1
    assert "act(command)" in env.instruction
    assert env.observe() == observation
    state = env.get_env_state()
    assert set(state) == set(env.env_state_schema()["properties"])
    assert info["admissible_commands"] == state["admissible_commands"]
    assert info["task_type"] == state["task_type"] == "pick_and_place_simple"
    assert state["location"] == "middle of room" and state["inventory"] == []
    assert state["moves"] == 0 and state["won"] is False and state["last_command"] == ""
    assert state["description"] == observation and "a armchair 1" in state["description"]
    assert "go to armchair 1" in state["admissible_commands"]
    assert env.bridge_options() == {"data_dir": str(DATA), "cache_dir": env._cache_dir}
    assert make(max_steps=9).bridge_options()["max_steps"] == 9
    assert repr(make(max_steps=9)) == f"<AlfWorldEnv task={KEYCHAIN!r} max_steps=9>"


def test_the_game_answers_commands(make):
    env = make()
    env.reset()
    result = env.step(act("xyzzy"))
    assert result.observation == "Nothing happens."  # the game's own answer
    reason = result.info["invalid_action"]
    assert reason.startswith(
        "'xyzzy' is not a command that applies here; admissible commands now: "
    )
    assert "go to armchair 1; go to armchair 2" in reason and "inventory; look" in reason
    assert "more)" not in reason  # 18 commands here, all named
    assert (result.reward, result.terminated) == (0.0, False)
    result = env.step(act("take keychain 1 from armchair 1"))  # not there yet
    assert result.observation == "Nothing happens." and "invalid_action" in result.info
    assert "characters long" in env.step(act("go " * 100)).info["invalid_action"]
    result = env.step(act("  GO to\tArmchair 1\n"))  # cleaned up, as the game reads it
    assert "invalid_action" not in result.info
    assert result.observation.startswith("You arrive at armchair 1.")
    assert "keychain 1" in result.observation
    env.step(act("take keychain 1 from armchair 1"))
    env.step(act("go to drawer 1"))
    env.step(act("open drawer 1"))
    state = env.get_env_state()
    assert state["location"] == "drawer 1" and state["inventory"] == ["keychain 1"]
    assert state["opened"] == ["drawer 1"] and state["moves"] == 7
    assert state["last_command"] == "open drawer 1"
    assert env.step(act("inventory")).observation == "You are carrying: a keychain 1."


def test_winning_ends_the_episode(make):
    env = make(LAMP)
    env.reset()
    plan = commands(env.oracle_actions())
    assert plan == [
        "go to sidetable 1",
        "take alarmclock 3 from sidetable 1",
        "go to sidetable 2",
        "use desklamp 2",
    ]
    results = [env.step(act(c)) for c in plan]
    assert [r.reward for r in results] == [0.0, 0.0, 0.0, 1.0]
    assert [r.terminated for r in results] == [False, False, False, True]
    assert results[-1].observation == "You turn on the desklamp 2."
    assert env.get_env_state()["won"] and env.oracle_actions() == []
    assert env.evaluate().to_dict() == {
        "success": True,
        "score": 1.0,
        "details": {"won": True, "moves": 4, "task_type": "look_at_obj_in_light"},
    }
    with pytest.raises(EpisodeError, match="episode is over"):
        env.step(act("look"))
    env.close()
    env.close()
    assert env.evaluate().success and env.get_env_state()["won"]  # still readable
    with pytest.raises(EpisodeError, match="closed"):
        env.step(act("look"))
    env.reset()
    assert env.evaluate().success is False


def test_save_and_restore(make):
    env = make()
    env.reset()
    for command in ("go to armchair 1", "xyzzy", "take keychain 1 from armchair 1"):
        env.step(act(command))
    saved = json.loads(json.dumps(env.save_state()))
    clone = AlfWorldEnv.from_state(saved)
    try:
        assert clone.get_env_state() == env.get_env_state()
        assert clone.observe() == env.observe()
        assert clone.step(act("go to sidetable 1")) == env.step(act("go to sidetable 1"))
    finally:
        clone.close()
    fresh = AlfWorldEnv.from_state(make().save_state())
    with pytest.raises(EpisodeError):
        fresh.observe()
    fresh.close()
    with pytest.raises(BridgeError, match="missing key"):
        AlfWorldEnv.from_state({"bridge": "alfworld"})
    with pytest.raises(BridgeError, match="does not reproduce"):
        AlfWorldEnv.from_state({**saved, "observation": "something else"})
    with pytest.raises(BridgeError, match="'commands' must be a list of str"):
        AlfWorldEnv.from_state({**saved, "commands": "go to armchair 1"})


@pytest.mark.parametrize("task_id", [LAMP, KEYCHAIN])
def test_check_bridge(make, task_id):
    report = check_bridge(make(task_id))
    assert report.bridge == "alfworld"
    assert len(report.actions) == len(make(task_id).oracle_actions()) >= 4


# -- the oracle -----------------------------------------------------------------------------------


def test_the_oracle_is_alfworld_s_expert(make):
    """ALFWorld's AlfredExpert wrapper, run as its generation code runs it, plays the same plan."""
    from alfworld.agents.environment.alfred_tw_env import AlfredExpert

    from envharness.bridges.alfworld._kit import kit, memoized

    parts = kit()
    for task_id in (LAMP, KEYCHAIN):
        env = make(task_id)
        env.reset()
        plan = commands(env.oracle_actions())
        infos = parts.textworld.EnvInfos(admissible_commands=True, won=True, extras=["gamefile"])
        with memoized(parts):  # the same text as without (test_game_text_is_textworld_s_own)
            game = AlfredExpert(parts.demangler(parts.pddl_env(infos), shuffle=False))
            game.load(str(env._built.game_file))
            random.seed(0)
            state, played = game.reset(), []
            while not state["won"] and len(played) < 120:
                played.append(state["extra.expert_plan"][0])
                state = game.step(played[-1])[0]
        assert state["won"] and played[0] == "look"
        assert plan == played[1:]  # the oracle skips the first look, which changes nothing


def test_oracle_follows_the_current_state(make):
    env = make()
    env.reset()
    start = commands(env.oracle_actions())
    assert start[-3:] == [
        "take keychain 1 from armchair 1",
        "go to sidetable 1",
        "move keychain 1 to sidetable 1",
    ]
    env.step(act("look"))
    env.step(act("xyzzy"))
    assert commands(env.oracle_actions()) == start  # nothing changed in the world
    for command in ("go to armchair 1", "take keychain 2 from armchair 1", "go to drawer 2"):
        env.step(act(command))
    plan = commands(env.oracle_actions())  # holding the keychain: the planner's shortest plan
    assert plan == ["go to sidetable 1", "move keychain 2 to sidetable 1"]
    env.step(act("go to desk 1"))
    env.step(act("move keychain 2 to desk 1"))
    plan = commands(env.oracle_actions())  # hands empty again: the expert, from here
    assert "take keychain 2 from desk 1" in plan or "take keychain 1 from armchair 1" in plan
    for action in env.oracle_actions():
        result = env.step(action)
    assert result.terminated and env.evaluate().success


def test_oracle_episode_succeeds(make):
    trajectory = rollout(make(), OraclePolicy(1.0, seed=0), seed=0)
    assert trajectory.success and trajectory.end_reason == "terminated"
    assert trajectory.n_steps == 17
    trajectory = rollout(make(), OraclePolicy(0.7, seed=2), seed=0)
    assert trajectory.success


def test_random_episode_runs(make):
    trajectory = rollout(make(), RandomPolicy(seed=3), max_steps=30, seed=0)
    assert trajectory.error is None
    assert trajectory.end_reason in ("budget", "terminated")
    assert 1 <= trajectory.n_steps <= 30


# -- harnesses ----------------------------------------------------------------------------------


def test_stage_candidates_hide_the_object(make):
    env = make()
    stages = env.stage_candidates()
    assert 1 <= len(stages) <= 4 and env.stage_problem is None
    hide = [
        "go to drawer 1",
        "open drawer 1",
        "move {} to drawer 1",
        "close drawer 1",
    ]
    assert commands(stages[0]) == [  # both keychains lie on the armchair: both are hidden
        "go to armchair 1",
        "take keychain 1 from armchair 1",
        *(c.format("keychain 1") for c in hide),
        "go to armchair 1",
        "take keychain 2 from armchair 1",
        *(c.format("keychain 2") for c in hide),
        "go to armchair 1",  # back where they lay: the agent does not stand at the hiding place
    ]
    assert all(commands(stage)[-2].startswith("close drawer") for stage in stages)
    started = time.perf_counter()
    assert make().stage_candidates() == stages  # deterministic, and cached next to the game
    assert time.perf_counter() - started < 5

    staged = Setups(make(), stages[0])
    observation, info = staged.reset()
    assert info["setup_steps"] == 13
    # the staged state as a start describes it, not the last setup command's answer
    assert observation == staged.observe() == staged.unwrapped.observe()
    room = staged.get_env_state()["description"]
    assert observation == room.replace(
        "You are in the middle of a room.", "You are in a room, facing the armchair 1."
    )
    assert "keychain" not in observation and "You close" not in observation
    state = staged.get_env_state()
    assert state["inventory"] == [] and state["opened"] == [] and state["moves"] == 0
    assert state["last_command"] == "" and staged.evaluate().details["moves"] == 0
    assert "keychain" not in staged.step(act("go to armchair 1")).observation
    assert staged.step(act("go to drawer 1")).observation == (
        "You arrive at drawer 1. The drawer 1 is closed."
    )
    assert "keychain 1" in staged.step(act("open drawer 1")).observation
    assert staged.get_env_state()["moves"] == 3 == staged.evaluate().details["moves"]
    assert "Open now: drawer 1." in staged.observe()
    # a restored env replays every command, and counts the same moves
    bridge = staged.unwrapped
    clone = AlfWorldEnv.from_state(json.loads(json.dumps(bridge.save_state())))
    try:
        assert clone.get_env_state() == bridge.get_env_state()
        assert clone.observe() == bridge.observe() and clone.evaluate() == bridge.evaluate()
    finally:
        clone.close()
    restored = Setups.from_state(staged.save_state())
    try:
        assert restored.get_env_state() == staged.get_env_state()
    finally:
        restored.close()
    trajectory = rollout(Setups(make(), stages[0]), OraclePolicy(1.0), seed=0)
    assert trajectory.success


def test_no_stage_candidate_says_why(make):
    env = make(LAMP)  # an alarm clock fits no closed receptacle of this bedroom
    assert env.stage_problem is None  # not asked yet
    assert env.stage_candidates() == []
    assert env.stage_problem == (
        "no receptacle of this room that can hold the alarmclock can be closed (the trial's "
        "canContain lets it into: desk, dresser, sidetable), so it cannot be hidden"
    )
    assert make(LAMP).stage_candidates() == [] and make(LAMP).stage_problem is None  # lazy


def test_observe_describes_the_state_not_the_last_answer(make):
    env = make()
    observation, _ = env.reset()
    room = env.get_env_state()["description"]
    for command in ("go to armchair 1", "take keychain 1 from armchair 1", "go to drawer 1"):
        result = env.step(act(command))
    result = env.step(act("open drawer 1"))
    assert result.observation.startswith("You open the drawer 1.")
    described = env.observe()
    assert described != result.observation
    assert described == (
        room.replace("You are in the middle of a room.", "You are in a room, facing the drawer 1.")
        + "\n\nYou are carrying: a keychain 1.\n\nOpen now: drawer 1."
    )
    before = env.get_env_state()
    assert env.observe() == described and env.get_env_state() == before  # changes nothing
    env.step(act("xyzzy"))
    assert env.observe() == described  # an inadmissible command changes nothing
    env.reset()
    assert env.observe() == observation


def test_the_reason_lists_at_most_25_admissible_commands(make):
    env = make(BIG_KITCHEN)  # 27 drawers, 13 cabinets, ...
    env.reset()
    reason = env.step(act("go to sink 1")).info["invalid_action"]
    listed, more = reason.split("admissible commands now: ", 1)[1].rsplit(" (and ", 1)
    assert len(listed.split("; ")) == 25 and more.endswith(" more)")
    assert int(more.split()[0]) + 25 == len(env.get_env_state()["admissible_commands"])
    assert "go to sinkbasin 1" in env.get_env_state()["admissible_commands"]


def test_the_hints_name_real_receptacles(make):
    instruction = make().instruction
    for hint in (
        "clean <object> with sinkbasin <n>",
        "heat <object> with microwave <n>",
        "cool <object> with fridge <n>",
    ):
        assert hint in instruction
    assert "sink or basin" not in instruction


def _sample_trials() -> list[str]:
    if not HAVE_DATA:
        return []
    return [
        t
        for split in ("valid_seen", "valid_train")
        for t in list_tasks("alfworld", split, data_dir=str(DATA))
    ]


@pytest.mark.slow
@pytest.mark.parametrize("task_id", _sample_trials())
def test_hide_candidates_on_every_sample_trial(make, task_id):
    """Every candidate hides each object of the task's class; the oracle still wins from one.

    ``stage_candidates()`` itself keeps only candidates ALFWorld's expert wins from; the test
    replays the oracle through the real rollout loop from the first one of each trial (every
    candidate would take ~13 minutes of CI).
    """
    env = make(task_id)
    stages = env.stage_candidates()
    if not stages:
        assert env.stage_problem is not None and env.stage_problem.endswith(
            ("so it cannot be hidden", "so it is not hidden", "so none is offered")
        )
        return
    assert env.stage_problem is None
    target = str(env._built.params["object_target"]).lower()
    named = re.compile(rf"\b{re.escape(target)} \d")
    for stage in stages:
        hidden = commands(stage)
        place = hidden[-3].split(" to ", 1)[1]
        assert hidden[-3].startswith(f"move {target} ") and hidden[-2] == f"close {place}"
        staged = Setups(make(task_id), stage)
        observation, info = staged.reset()
        assert info["setup_steps"] == len(stage) and observation == staged.observe()
        assert named.search(observation) is None, observation  # the object is not in sight
        assert not observation.startswith(("You close", "You arrive"))  # not a setup answer
        state = staged.get_env_state()
        assert state["moves"] == 0 and state["inventory"] == [] and state["last_command"] == ""
        assert place not in state["opened"] and state["location"] != place
        if stage is stages[0]:
            trajectory = rollout(staged, OraclePolicy(1.0), seed=0)
            assert trajectory.success, (task_id, hidden)
        else:
            staged.close()


TRUNCATE_ROOM = """
class _Rules:
    def filter_observation(self, observation, state):
        room = state["description"]
        if room and room in observation:
            seen = room.split(", ")
            short = ", ".join(seen[:3]) + ", and more (look around to find the rest)."
            return observation.replace(room, short)
        return observation
"""

HOLD_TO_CLEAN = """
class _Rules:
    def filter_action(self, action, state):
        command = " ".join(str(action["args"].get("command", "")).lower().split())
        if command.startswith("clean ") and " with " in command:
            thing = command[len("clean "):].split(" with ")[0]
            if thing not in state["inventory"]:
                return "You need to hold the " + thing + " before you can clean it."
        return action
"""


def test_rules_truncate_the_room_description(make):
    env = Rules(make(LAMP), TRUNCATE_ROOM)
    try:
        observation, _ = env.reset()
        room = env.get_env_state()["description"]
        assert room in env.unwrapped.observe() and room not in observation
        assert observation.startswith(
            "You are in the middle of a room. Looking quickly around you, you see a bed 2, "
            "a bed 1, and more (look around to find the rest)."
        )
        assert "Your task is to" not in observation
        assert len(observation) < len(env.unwrapped.observe())
        assert rollout(env, OraclePolicy(1.0), close=False).success
    finally:
        env.close()


def test_rules_require_holding_before_cleaning(make):
    env = Rules(make(LADLE), HOLD_TO_CLEAN)
    try:
        env.reset()
        env.step(act("go to sinkbasin 1"))
        result = env.step(act("clean ladle 1 with sinkbasin 1"))
        assert result.info.get("blocked") is True
        assert result.observation == "You need to hold the ladle 1 before you can clean it."
        assert env.get_env_state()["moves"] == 1  # the game was not stepped
        for command in ("go to countertop 1", "take ladle 1 from countertop 1"):
            env.step(act(command))
        env.step(act("go to sinkbasin 1"))
        result = env.step(act("clean ladle 1 with sinkbasin 1"))
        assert result.info.get("blocked") is None
        assert result.observation == "You clean the ladle 1 using the sinkbasin 1."
        env.reset()
        trajectory = rollout(env, OraclePolicy(1.0), close=False)
        assert trajectory.success
    finally:
        env.close()


# -- the rigger ---------------------------------------------------------------------------------


def test_rig_cli_two_tasks(cache, tmp_path):
    pytest.importorskip("langgraph", reason="the rigger needs the 'rigger' extra")
    from typer.testing import CliRunner

    from envharness.cli import app
    from envharness.graph.outputs import accepted_path, rejected_path

    out = tmp_path / "rig"
    arguments = ["rig", "alfworld", "--tasks", "2", "--split", "valid_seen"]
    arguments += ["--policy", "oracle:0.8", "--k-observe", "2", "--k-validate", "2"]
    arguments += ["--max-iterations", "1", "--out", str(out)]
    # the CLI builds envs without options: the data and the cache come from the environment
    environ = {"ALFWORLD_DATA": str(DATA), "ENVHARNESS_CACHE": str(Path(cache).parent)}
    result = CliRunner().invoke(app, arguments, env=environ)
    assert result.exit_code == 0, result.output
    assert (out / "rig.json").exists()
    assert (out / "trajectories" / "trajectories.jsonl").exists()
    for task in AlfWorldEnv.list_tasks("valid_seen", data_dir=DATA)[:2]:
        assert accepted_path(out, task).exists() or rejected_path(out, task).exists()


# -- task fingerprint ---------------------------------------------------------------------------


def _copy_trial(task_id: str, root: Path) -> Path:
    """A writable copy of one trial under ``root/json_2.1.1``; returns the trial's folder."""
    import shutil

    (source,) = [p for p in (DATA / "json_2.1.1").glob(f"*/{task_id}") if p.is_dir()]
    target = root / "json_2.1.1" / source.parent.parent.name / task_id
    shutil.copytree(source, target)
    for path in target.iterdir():
        path.chmod(0o644)
    return target


@needs_data
def test_task_fingerprint_covers_the_trial_files_not_where_they_lie(make, cache, tmp_path):
    env = make()
    fingerprint = env.task_fingerprint()
    assert len(fingerprint) == 64 and int(fingerprint, 16) >= 0
    env.reset()
    env.step(act("look"))
    assert env.task_fingerprint() == fingerprint
    assert make(max_steps=3).task_fingerprint() == fingerprint
    assert make(LAMP).task_fingerprint() != fingerprint
    trial = _copy_trial(KEYCHAIN, tmp_path / "data")
    moved = load_bridge(
        "alfworld",
        task_id=KEYCHAIN,
        data_dir=str(tmp_path / "data"),
        cache_dir=str(tmp_path / "cache"),
    )
    try:
        assert moved.task_fingerprint() == fingerprint
    finally:
        moved.close()
    problem = trial / "initial_state.pddl"
    problem.write_text(problem.read_text() + "\n; edited\n")
    edited = load_bridge(
        "alfworld",
        task_id=KEYCHAIN,
        data_dir=str(tmp_path / "data"),
        cache_dir=str(tmp_path / "cache"),
    )
    try:
        assert edited.task_fingerprint() != fingerprint
    finally:
        edited.close()
