from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from envharness import (
    Action,
    BridgeError,
    DependencyNotInstalled,
    EpisodeError,
    UnknownTaskError,
    load_bridge,
)
from envharness.bridges.textworld import GameSettings, TextWorldEnv, ensure_game
from envharness.harness import Rules, Setups
from envharness.rollout import OraclePolicy, RandomPolicy, rollout
from envharness.testing import check_bridge

# Small games: generation takes a second or two each, and happens once per test run.
KEY = "tw-s3-o5-q3-seed2"  # go south > take keycard > unlock box with keycard
PILLOW = "tw-s4-o6-q4-seed2"  # go north > open safe > take pillow from safe > put pillow on ...
# The extra is probed through a submodule: pytest puts tests/bridges on sys.path, where this
# test folder would import as an empty namespace package if textworld were not installed.
NEEDS_TEXTWORLD = "the TextWorld bridge needs its extra: pip install 'envharness[textworld]'"
FILES = (".json", ".lock", ".z8")  # what the cache holds per game


def act(command: str) -> Action:
    return Action("act", {"command": command})


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    pytest.importorskip("textworld.generator", reason=NEEDS_TEXTWORLD)
    folder = tmp_path_factory.mktemp("textworld-cache")
    for task in (KEY, PILLOW):
        ensure_game(task, folder)
    return str(folder)


@pytest.fixture
def make(cache):
    made: list[TextWorldEnv] = []

    def build(task_id: str = KEY, **options) -> TextWorldEnv:
        env = load_bridge("textworld", task_id=task_id, cache_dir=cache, **options)
        made.append(env)
        return env

    yield build
    for env in made:
        env.close()


# -- task ids and lists (no textworld needed) ---------------------------------------------------


def test_task_ids_round_trip():
    settings = GameSettings.parse("tw-s5-o10-q5-seed42")
    assert settings == GameSettings(5, 10, 5, 42)
    assert settings.task_id == "tw-s5-o10-q5-seed42"


@pytest.mark.parametrize(
    ("task_id", "problem"),
    [
        ("tw-s5-o10-q5", "malformed"),
        ("tw-s05-o10-q5-seed1", "malformed"),
        ("tw-s5-o10-q5-seed1 ", "malformed"),
        ("TW-s5-o10-q5-seed1", "malformed"),
        ("tw-s0-o10-q5-seed1", "world_size 0 is outside 1-30"),
        ("tw-s5-o10-q31-seed1", "quest_length 31 is outside 1-30"),
        ("tw-s5-o10-q5-seed4294967296", "above 2\\*\\*32-1"),
        (42, "expected a str task id"),
    ],
)
def test_bad_task_ids(task_id, problem):
    with pytest.raises(UnknownTaskError, match=problem) as caught:
        TextWorldEnv(task_id)
    assert "tw-s<world size>-o<objects>-q<quest length>-seed<seed>" in str(caught.value)


def test_splits():
    train = TextWorldEnv.list_tasks("train", cache_dir="/nowhere")
    test = TextWorldEnv.list_tasks("test")
    assert len(train) == 100 and len(test) == 50
    assert train[0] == "tw-s5-o10-q5-seed0" and test[-1] == "tw-s5-o10-q5-seed1049"
    assert TextWorldEnv.list_tasks("all") == train + test
    with pytest.raises(UnknownTaskError, match="valid splits: train, test, all"):
        TextWorldEnv.list_tasks("valid")
    with pytest.raises(BridgeError, match="unknown option"):
        TextWorldEnv.list_tasks("train", size=3)


def test_missing_textworld_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "textworld", None)  # `import textworld` now fails
    with pytest.raises(DependencyNotInstalled, match=r"envharness\[textworld\]"):
        load_bridge("textworld", task_id=KEY, cache_dir=str(tmp_path))
    with pytest.raises(DependencyNotInstalled):
        ensure_game(KEY, tmp_path)
    assert not list(tmp_path.iterdir())


def test_importing_the_bridges_does_not_import_textworld():
    code = (
        "import sys, envharness, envharness.bridges\n"
        "from envharness.bridges import get_bridge, textworld\n"
        "get_bridge('textworld').list_tasks('test')\n"
        "assert 'textworld' not in sys.modules, 'textworld was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_bad_options(cache):
    with pytest.raises(BridgeError, match="max_steps: expected a positive int"):
        TextWorldEnv(KEY, cache_dir=cache, max_steps=0)
    with pytest.raises(BridgeError, match="cache_dir: expected a path"):
        TextWorldEnv(KEY, cache_dir=3)


# -- generation and the cache -------------------------------------------------------------------


def test_same_seed_same_game(cache, tmp_path):
    again = ensure_game(KEY, tmp_path)
    assert again == tmp_path / f"{KEY}.z8"
    first = json.loads((Path(cache) / f"{KEY}.json").read_text())
    second = json.loads(again.with_suffix(".json").read_text())
    assert first == second
    walkthrough = ["go south", "take keycard", "unlock box with keycard"]
    assert second["metadata"]["walkthrough"] == walkthrough
    assert sorted(p.name for p in tmp_path.iterdir()) == [KEY + suffix for suffix in FILES]


def test_concurrent_processes_share_one_game(cache, tmp_path):
    code = textwrap.dedent(f"""
        from envharness.bridges.textworld import ensure_game
        print(ensure_game({PILLOW!r}, {str(tmp_path)!r}))
    """)
    workers = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [w.communicate(timeout=120)[0].strip() for w in workers]
    assert [w.returncode for w in workers] == [0, 0]
    assert outputs == [str(tmp_path / f"{PILLOW}.z8")] * 2
    # no scratch folders or partial files are left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == [PILLOW + suffix for suffix in FILES]
    assert (tmp_path / f"{PILLOW}.json").read_text() == (Path(cache) / f"{PILLOW}.json").read_text()


def test_failed_generation_leaves_nothing(cache, tmp_path, monkeypatch):
    import textworld

    def fail(options):
        raise RuntimeError("no quest fits")

    monkeypatch.setattr(textworld, "make", fail)
    with pytest.raises(BridgeError, match="could not generate tw-s3-o5-q3-seed9: RuntimeError"):
        ensure_game("tw-s3-o5-q3-seed9", tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["tw-s3-o5-q3-seed9.lock"]


# -- the contract -------------------------------------------------------------------------------


@pytest.mark.parametrize("task_id", [KEY, PILLOW])
def test_check_bridge(make, task_id):
    report = check_bridge(make(task_id))
    assert report.bridge == "textworld"
    assert len(report.actions) == len(make(task_id).oracle_actions()) >= 3


def test_reset_and_state(make):
    env = make()
    with pytest.raises(EpisodeError, match="call reset"):
        env.step(act("look"))
    observation, info = env.reset(seed=123)
    assert observation.startswith(env.instruction.split("\n")[0])  # the objective, no banner
    assert observation.count(env.instruction.split("\n")[0]) == 1
    assert "$$" not in observation and "-= " in observation
    assert info["admissible_commands"] == env.get_env_state()["admissible_commands"]
    state = env.get_env_state()
    assert set(state) == set(env.env_state_schema()["properties"])
    assert state["moves"] == 0 and state["last_command"] == "" and state["max_score"] == 1
    assert state["location"] and state["description"].startswith("-= ")
    assert "go south" in state["admissible_commands"]
    assert env.bridge_options() == {"cache_dir": env.bridge_options()["cache_dir"]}
    assert make(max_steps=9).bridge_options()["max_steps"] == 9


def test_observe_describes_the_state_without_playing(make):
    env = make()
    observation, _ = env.reset()
    assert observation.endswith("You are carrying: Advent Calendar, shadfly.")
    assert env.observe() == observation
    result = env.step(act("go south"))
    state = env.get_env_state()
    described = env.observe()
    assert described != result.observation or result.observation == state["description"]
    assert described == (
        f"{env.instruction.split(chr(10))[0]}\n\n{state['description']}\n\n"
        "You are carrying: Advent Calendar, shadfly."
    )
    assert env.observe() == described and env.get_env_state() == state  # nothing was sent
    env.step(act("take keycard"))
    assert env.observe().endswith("You are carrying: Advent Calendar, keycard, shadfly.")


def test_game_answers_invalid_commands(make):
    env = make()
    env.reset()
    result = env.step(act("xyzzy"))
    assert result.observation == "That's not a verb I recognise."
    assert "not one of the admissible commands" in result.info["invalid_action"]
    assert "see admissible_commands" not in result.info["invalid_action"]
    admissible = env.get_env_state()["admissible_commands"]
    assert all(command in result.info["invalid_action"] for command in sorted(admissible)[:3])
    assert (result.reward, result.terminated) == (0.0, False)
    result = env.step(act("take keycard"))  # the keycard is in another room
    assert "can't see" in result.observation and "invalid_action" in result.info
    for command in ("restart", "UNDO", "tw-print max_score", "save game", "x" * 300):
        result = env.step(act(command))
        assert "not available" in result.observation and "invalid_action" in result.info
    result = env.step(act("go\x00 south\n"))  # control characters never reach the interpreter
    assert "invalid_action" not in result.info and env.get_env_state()["last_command"] == "go south"
    assert env.get_env_state()["moves"] == 8


def test_winning_ends_the_episode(make):
    env = make()
    env.reset()
    results = [env.step(act(c)) for c in ("go south", "take keycard", "unlock box with keycard")]
    assert [r.reward for r in results] == [0.0, 0.0, 1.0]
    assert [r.terminated for r in results] == [False, False, True]
    assert "*** The End ***" in results[-1].observation
    assert "RESTART" not in results[-1].observation
    assert env.get_env_state()["won"] and env.oracle_actions() == []
    assert env.evaluate().to_dict() == {
        "success": True,
        "score": 1.0,
        "details": {"score": 1, "max_score": 1, "moves": 3, "won": True, "lost": False},
    }
    with pytest.raises(EpisodeError, match="episode is over"):
        env.step(act("look"))
    env.close()
    assert env.evaluate().success and env.get_env_state()["won"]  # still readable
    with pytest.raises(EpisodeError, match="closed"):
        env.step(act("look"))
    env.reset()
    assert env.evaluate().success is False


def test_oracle_follows_the_current_state(make):
    env = make()
    env.reset()
    walkthrough = [a.args["command"] for a in env.oracle_actions()]
    assert walkthrough == ["go south", "take keycard", "unlock box with keycard"]
    for command in ("go south", "take keycard", "go west", "drop keycard", "go east"):
        env.step(act(command))
    plan = [a.args["command"] for a in env.oracle_actions()]
    assert plan == ["go west", "take keycard", "go east", "unlock box with keycard"]
    for action in env.oracle_actions():
        result = env.step(action)
    assert result.terminated and env.evaluate().success


def test_save_and_restore(make):
    env = make()
    env.reset()
    for command in ("go south", "xyzzy", "take keycard"):
        env.step(act(command))
    saved = json.loads(json.dumps(env.save_state()))
    clone = TextWorldEnv.from_state(saved)
    try:
        assert clone.get_env_state() == env.get_env_state()
        assert clone.observe() == env.observe()
        assert clone.step(act("unlock box with keycard")).terminated
    finally:
        clone.close()
    fresh = TextWorldEnv.from_state(make().save_state())
    with pytest.raises(EpisodeError):
        fresh.observe()
    with pytest.raises(BridgeError, match="missing key"):
        TextWorldEnv.from_state({"bridge": "textworld"})
    with pytest.raises(BridgeError, match="does not reproduce"):
        TextWorldEnv.from_state({**saved, "observation": "something else"})
    with pytest.raises(BridgeError, match="'commands' must be a list of str"):
        TextWorldEnv.from_state({**saved, "commands": "go south"})


# -- episodes -----------------------------------------------------------------------------------


def test_oracle_episode_succeeds(make):
    trajectory = rollout(make(PILLOW), OraclePolicy(1.0, seed=0), seed=0)
    assert trajectory.success and trajectory.end_reason == "terminated"
    assert trajectory.n_steps == 4


def test_random_episode_runs(make):
    env = make(PILLOW)
    trajectory = rollout(env, RandomPolicy(seed=3), max_steps=25, seed=0)
    assert trajectory.error is None
    assert trajectory.end_reason in ("budget", "terminated")
    assert 1 <= trajectory.n_steps <= 25


# -- harnesses ----------------------------------------------------------------------------------


def test_stage_candidates_move_a_quest_object(make):
    env = make()
    stages = env.stage_candidates()
    assert stages == env.stage_candidates() == make().stage_candidates()  # deterministic
    assert 1 <= len(stages) <= 4
    first = [a.args["command"] for a in stages[0]]
    assert first == ["go south", "take keycard", "go west", "drop keycard"]
    plain = make()
    plain.reset()
    plain.step(act("go south"))
    keycard_room = plain.get_env_state()["location"]

    staged = Setups(make(), stages[0])
    observation, info = staged.reset()
    assert info["setup_steps"] == 4
    state = staged.get_env_state()
    assert state["location"] != keycard_room and "keycard" not in state["inventory"]
    # the staged state as a start describes it (objective, room, belongings), not "You drop ..."
    assert observation == staged.observe() == staged.unwrapped.observe()
    objective = staged.instruction.split("\n")[0]
    assert observation == (
        f"{objective}\n\n{state['description']}\n\n"
        f"You are carrying: {', '.join(state['inventory'])}."
    )
    assert "keycard" in state["description"] and not observation.startswith("You drop")
    assert state["moves"] == 0 and state["last_command"] == ""
    assert staged.evaluate().details["moves"] == 0
    assert "keycard" in staged.step(act("look")).observation  # it lies here now
    assert staged.get_env_state()["moves"] == 1
    bridge = staged.unwrapped  # the bridge's own snapshot replays all commands, counts the same
    clone = TextWorldEnv.from_state(json.loads(json.dumps(bridge.save_state())))
    try:
        assert clone.get_env_state() == bridge.get_env_state()
        assert clone.observe() == bridge.observe()
    finally:
        clone.close()
    assert [a.args["command"] for a in staged.oracle_actions()] != first
    trajectory = rollout(Setups(make(), stages[0]), OraclePolicy(1.0), seed=0)
    assert trajectory.success


BLOCK_LOOK = """
class _Rules:
    def filter_action(self, action, state):
        if action["args"].get("command", "").strip().lower() == "look":
            return "Looking around is not allowed in this variant."
        return action
"""

HIDE_ROOMS = """
class _Rules:
    def filter_observation(self, observation, state):
        room = state["description"]
        if room and room in observation:
            return observation.replace(room, room.split("\\n")[0] + " (details withheld)")
        return observation
"""


def test_rules_block_a_command(make):
    env = Rules(make(), BLOCK_LOOK)
    try:
        env.reset()
        result = env.step(act("look"))
        assert result.info.get("blocked") is True
        assert result.observation == "Looking around is not allowed in this variant."
        assert env.get_env_state()["moves"] == 0  # the game was not stepped
        assert env.step(act("go south")).info.get("blocked") is None
        assert env.get_env_state()["moves"] == 1
    finally:
        env.close()


def test_rules_truncate_room_descriptions(make):
    env = Rules(make(), HIDE_ROOMS)
    try:
        observation, _ = env.reset()
        full = env.unwrapped.observe()
        room = env.get_env_state()["description"]
        assert room in full and room not in observation
        assert "(details withheld)" in observation and observation.startswith(full[:40])
        after = env.step(act("go south")).observation
        assert after.endswith("(details withheld)") and len(after) < len(env.unwrapped.observe())
        assert rollout(env, OraclePolicy(1.0), close=False).success
    finally:
        env.close()


# -- the rigger ---------------------------------------------------------------------------------


def test_rig_two_tasks(cache, tmp_path):
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
        siblings=[KEY, PILLOW],  # link only to games already in the cache
    )
    results = rig("textworld", [KEY, PILLOW], context, bridge_options={"cache_dir": cache})
    assert [r.task_id for r in results] == [KEY, PILLOW]
    assert all(r.status in ("accepted", "rejected", "undecided") for r in results), results
    assert all(r.rollouts >= 3 for r in results)
    assert (tmp_path / "rig.json").exists()
    assert (tmp_path / "trajectories" / "trajectories.jsonl").exists()
    for result in results:
        if result.status == "accepted":
            assert Path(result.accepted).exists()


# -- task fingerprint ---------------------------------------------------------------------------


def test_task_fingerprint_covers_the_game_files_not_where_they_lie(make, cache, tmp_path):
    import shutil

    env = make()
    fingerprint = env.task_fingerprint()
    assert len(fingerprint) == 64 and int(fingerprint, 16) >= 0
    env.reset()
    env.step(act("go south"))
    assert env.task_fingerprint() == fingerprint
    assert make(max_steps=3).task_fingerprint() == fingerprint
    assert make(PILLOW).task_fingerprint() != fingerprint
    # the same game in another cache, built on another day (Inform's serial number is the date)
    for suffix in (".z8", ".json"):
        shutil.copy(Path(cache) / f"{KEY}{suffix}", tmp_path / f"{KEY}{suffix}")
    story = tmp_path / f"{KEY}.z8"
    data = bytearray(story.read_bytes())
    data[0x12:0x18] = b"991231"
    story.write_bytes(bytes(data))
    moved = load_bridge("textworld", task_id=KEY, cache_dir=str(tmp_path))
    try:
        assert moved.task_fingerprint() == fingerprint
    finally:
        moved.close()
    # a game description with another objective is other task data
    description = tmp_path / f"{KEY}.json"
    game = json.loads(description.read_text())
    game["objective"] = "Just look around."
    description.write_text(json.dumps(game))
    edited = load_bridge("textworld", task_id=KEY, cache_dir=str(tmp_path))
    try:
        assert edited.task_fingerprint() != fingerprint
    finally:
        edited.close()


def test_task_fingerprint_is_computed_once_per_env(make, monkeypatch):
    from envharness.bridges.textworld import env as textworld_env

    env = make()
    fingerprint = env.task_fingerprint()

    def unreadable(*args, **kwargs):
        raise AssertionError("the fingerprint was computed again")

    monkeypatch.setattr(textworld_env, "read_bytes", unreadable)
    assert env.task_fingerprint() == fingerprint
