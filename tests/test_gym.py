from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

gym = pytest.importorskip(
    "gymnasium", reason="envharness.gym needs the 'gym' extra: pip install 'envharness[gym]'"
)

from gymnasium.utils.env_checker import check_env  # noqa: E402

import envharness.gym as eg  # noqa: E402
from envharness import (  # noqa: E402
    Action,
    BridgeError,
    EpisodeError,
    InvalidActionError,
    SpecError,
    UnknownBridgeError,
    load_bridge,
)
from envharness._gym_env import _MAKE_ID  # noqa: E402
from envharness.gym import (  # noqa: E402
    ENV_ID,
    HarnessGymEnv,
    TextActionSession,
    async_vector_env,
    register_envs,
    resolve_env,
    to_charset,
)
from envharness.harness import HarnessSpec, Rules, Setups  # noqa: E402
from envharness.rollout import rollout  # noqa: E402
from envharness.rollout.loop import invalid_action_feedback, rejected_observation  # noqa: E402

SOLVE = ["combine 10 * 10", "combine 100 - 4", "combine 96 / 4"]
HINT = """
class _Rules:
    def filter_observation(self, observation, state):
        return observation + "\\n(Hint: think before you act.)"
"""
BLOCKS_UNDO = """
class _Rules:
    def filter_action(self, action, state):
        if action["tool"] == "undo":
            return "Undo is disabled in this variant."
        return action
"""
TW_KEY = "tw-s3-o5-q3-seed2"  # go south > take keycard > unlock box with keycard
KEYCHAIN = "pick_and_place_simple-KeyChain-None-SideTable-309/trial_T20190908_215011_025401"
ALFWORLD_DATA = Path(
    os.environ.get("ENVHARNESS_ALFWORLD_DATA")
    or Path(__file__).resolve().parents[2] / "shared" / "data" / "alfworld"
)
NO_ALFWORLD_DATA = f"no ALFWorld sample data at {ALFWORLD_DATA} (set ENVHARNESS_ALFWORLD_DATA)"


def toy_spec(**kwargs) -> str:
    return HarnessSpec.from_env(load_bridge("toy24", task_id="4-4-10-10", **kwargs)).to_json()


def stacked(base, setup: list[Action], rules: str = HINT) -> str:
    env = Rules(Setups(base, setup), rules)
    try:
        return HarnessSpec.from_env(env).to_json()
    finally:
        env.close()


@pytest.fixture
def toy():
    env = HarnessGymEnv(spec=toy_spec())
    yield env
    env.close()


def gym_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if "WARN" in str(w.message)]


def assert_check_env(spec: str) -> None:
    """check_env on the unwrapped env made by gymnasium.make; any Gymnasium warning fails."""
    made = gym.make(ENV_ID, spec=spec)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(made.unwrapped)
        assert gym_warnings(caught) == []
    finally:
        made.close()


# -- the module's names and registration -------------------------------------------------------


def test_every_public_name_imports():
    for name in eg.__all__:
        assert getattr(eg, name) is not None, name
    assert set(eg.__all__) <= set(dir(eg))


def test_import_registers_the_id_and_register_envs_is_idempotent():
    assert ENV_ID == "envharness/Harness-v0"
    assert ENV_ID in gym.registry
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        register_envs()
        register_envs()
    assert gym_warnings(caught) == []  # no "Overriding environment" warning
    assert gym.registry[ENV_ID].entry_point == "envharness._gym_env:HarnessGymEnv"
    assert _MAKE_ID == f"envharness.gym:{ENV_ID}"


def test_make_builds_from_a_spec_and_passes_kwargs():
    env = gym.make(ENV_ID, spec=toy_spec(), reward="success", max_steps=3)
    try:
        assert isinstance(env.unwrapped, HarnessGymEnv)
        assert env.unwrapped.session.reward_mode == "success"
        observation, info = env.reset(seed=0)
        assert observation.startswith("Numbers left: 4 4 10 10")
        assert info["max_steps"] == 3
    finally:
        env.close()


def test_a_fresh_process_makes_the_env_through_the_module_prefixed_id():
    code = textwrap.dedent(
        f"""
        import gymnasium
        assert {ENV_ID!r} not in gymnasium.registry
        env = gymnasium.make("envharness.gym:{ENV_ID}", spec={toy_spec()!r})
        print(env.reset(seed=0)[0].splitlines()[0])
        env.close()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Numbers left: 4 4 10 10"


def test_the_env_side_imports_without_langchain():
    code = textwrap.dedent(
        f"""
        import importlib.abc, sys
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name.split(".")[0] in ("langchain", "langchain_core", "langgraph"):
                    raise ImportError("blocked " + name)
        sys.meta_path.insert(0, Block())
        from envharness.gym import HarnessGymEnv
        env = HarnessGymEnv(spec={toy_spec()!r})
        env.reset(seed=0)
        print(env.step("combine 10 * 10")[0].splitlines()[0])
        env.close()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Numbers left: 4 4 100"


def test_the_session_works_without_gymnasium_and_the_gym_env_names_the_extra():
    code = textwrap.dedent(
        f"""
        import sys
        sys.modules["gymnasium"] = None  # as if the 'gym' extra were not installed
        import envharness.gym as eg
        session = eg.TextActionSession({toy_spec()!r})
        session.reset(seed=0)
        print(session.step("combine 10 * 10").observation.splitlines()[0])
        session.close()
        try:
            eg.HarnessGymEnv
        except eg.DependencyNotInstalled as e:
            print(e)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.strip().splitlines()
    assert first == "Numbers left: 4 4 100"
    assert "pip install 'envharness[gym]'" in second


# -- check_env over each bridge, with Setups and Rules in the stack ---------------------------


def test_check_env_toy24_stack():
    base = load_bridge("toy24", task_id="4-4-10-10")
    assert_check_env(stacked(base, [Action("combine", {"a": "10", "op": "*", "b": "10"})]))


def test_check_env_gymnasium_frozen_lake_stack():
    base = load_bridge("gymnasium", task_id="FrozenLake-v1", env_kwargs={"is_slippery": False})
    assert_check_env(stacked(base, [Action("move_down")]))


def test_check_env_textworld_stack(tmp_path_factory):
    pytest.importorskip(
        "textworld",
        reason="the TextWorld bridge needs its extra: pip install 'envharness[textworld]'",
    )
    cache = str(tmp_path_factory.mktemp("textworld-cache"))
    base = load_bridge("textworld", task_id=TW_KEY, cache_dir=cache)
    assert_check_env(stacked(base, [Action("act", {"command": "go south"})]))


@pytest.mark.skipif(not (ALFWORLD_DATA / "json_2.1.1").is_dir(), reason=NO_ALFWORLD_DATA)
def test_check_env_alfworld_stack(tmp_path_factory):
    pytest.importorskip(
        "alfworld", reason="the ALFWorld bridge needs its extra: pip install 'envharness[alfworld]'"
    )
    cache = str(tmp_path_factory.mktemp("alfworld-cache"))
    base = load_bridge("alfworld", task_id=KEYCHAIN, data_dir=str(ALFWORLD_DATA), cache_dir=cache)
    assert_check_env(stacked(base, [Action("act", {"command": "go to armchair 1"})]))


# -- spaces, reset, render, close ---------------------------------------------------------------


def test_spaces_are_text_and_the_observations_lie_in_them(toy):
    assert isinstance(toy.observation_space, gym.spaces.Text)
    assert isinstance(toy.action_space, gym.spaces.Text)
    assert toy.observation_space.min_length == 0
    observation, info = toy.reset(seed=0)
    assert observation in toy.observation_space
    assert "combine 10 * 10" in toy.action_space


def test_reset_info_carries_the_instruction_and_the_tool_schemas(toy):
    _, info = toy.reset(seed=7)
    bridge = load_bridge("toy24", task_id="4-4-10-10")
    assert info["instruction"] == bridge.instruction
    assert info["tools"] == [tool.to_openai() for tool in bridge.tools()]
    assert info["task_id"] == "4-4-10-10"
    assert info["bridge"] == "toy24"
    assert info["seed"] == 7
    assert info["max_steps"] == bridge.max_steps


def test_seeded_resets_repeat_and_reset_without_a_seed_draws_from_np_random():
    first, second = HarnessGymEnv(spec=toy_spec()), HarnessGymEnv(spec=toy_spec())
    try:
        seeds = []
        for env in (first, second):
            env.reset(seed=123)
            seeds.append([env.reset()[1]["seed"] for _ in range(3)])
        assert seeds[0] == seeds[1]
        assert all(isinstance(s, int) and s >= 0 for s in seeds[0])
        assert len(set(seeds[0])) == 3
    finally:
        first.close()
        second.close()


def test_a_seed_plays_the_bridge_with_that_seed():
    base = load_bridge(
        "gymnasium", task_id="FrozenLake-v1", env_kwargs={"is_slippery": True}, max_steps=30
    )
    spec = HarnessSpec.from_env(base).to_json()
    moves = ["move_up"] * 5  # on row 0 a slip goes left or right, never into a hole
    base.reset(seed=11)
    expected = [base.step(Action(m)).observation for m in moves]
    base.close()
    assert len(set(expected)) > 1  # the slips moved the agent
    env = HarnessGymEnv(spec=spec)
    try:
        env.reset(seed=11)
        got = [env.step(m)[0] for m in moves]
        assert got == [to_charset(o) for o in expected]
    finally:
        env.close()


def test_reset_refuses_options(toy):
    toy.reset(seed=0, options={})
    toy.reset(seed=0, options=None)
    with pytest.raises(EpisodeError, match="takes no options"):
        toy.reset(seed=0, options={"task_id": "1-1-4-6"})


def test_render_ansi_shows_the_last_observation():
    env = HarnessGymEnv(spec=toy_spec(), render_mode="ansi")
    try:
        assert env.render() == ""
        observation, _ = env.reset(seed=0)
        assert env.render() == observation
        observation = env.step("combine 10 * 10")[0]
        assert env.render() == observation
    finally:
        env.close()
    quiet = HarnessGymEnv(spec=toy_spec())
    quiet.reset(seed=0)
    assert quiet.render() is None
    quiet.close()


def test_close_is_idempotent_and_closes_the_session(toy):
    toy.reset(seed=0)
    toy.close()
    toy.close()
    with pytest.raises(EpisodeError, match="closed"):
        toy.reset(seed=0)


def test_close_closes_the_rules_sandbox():
    env = HarnessGymEnv(spec=stacked(load_bridge("toy24", task_id="4-4-10-10"), []))
    env.reset(seed=0)
    rules = env.harness_env
    assert isinstance(rules, Rules)
    assert rules._session is not None
    env.close()
    assert rules._session is None


# -- episodes: text actions, rewards, the end --------------------------------------------------


@pytest.mark.parametrize(
    "first",
    [
        "combine 10 * 10",
        "combine(a='10', op='*', b='10')",
        'combine(a="10", op="*", b="10")',
        '{"tool": "combine", "args": {"a": "10", "op": "*", "b": "10"}}',
        json.dumps({"name": "combine", "arguments": json.dumps({"a": "10", "op": "*", "b": "10"})}),
        '{"type": "function", "function": {"name": "combine", "arguments": {"a": 10, "op": "*", '
        '"b": 10}}}',
        'I will multiply.\nAction: combine(a="10", op="*", b="10")',
    ],
)
def test_every_text_form_plays_the_same_action(toy, first):
    toy.reset(seed=0)
    observation, reward, terminated, truncated, info = toy.step(first)
    assert info["action"] == {"tool": "combine", "args": {"a": "10", "op": "*", "b": "10"}}
    assert "invalid_action" not in info
    assert observation.startswith("Numbers left: 4 4 100")
    assert (reward, terminated, truncated) == (0.0, False, False)


def test_a_solved_episode_gets_the_verifier_score_on_its_last_step(toy):
    toy.reset(seed=0)
    results = [toy.step(action) for action in SOLVE]
    assert [r[1] for r in results] == [0.0, 0.0, 1.0]
    observation, reward, terminated, truncated, info = results[-1]
    assert (terminated, truncated) == (True, False)
    assert info["end_reason"] == "terminated"
    assert info["evaluation"] == {
        "success": True,
        "score": 1.0,
        "details": info["evaluation"]["details"],
    }
    assert all("evaluation" not in r[4] for r in results[:-1])
    with pytest.raises(EpisodeError, match="call reset"):
        toy.step("undo")


def test_step_before_reset_raises(toy):
    with pytest.raises(EpisodeError, match="call reset"):
        toy.step("undo")


@pytest.mark.parametrize(
    ("mode", "rewards"), [("terminal", [0.0, 0.0, 1.0]), ("success", [0.0, 0.0, 1.0])]
)
def test_end_of_episode_reward_modes(mode, rewards):
    env = HarnessGymEnv(spec=toy_spec(), reward=mode)
    try:
        env.reset(seed=0)
        assert [env.step(a)[1] for a in SOLVE] == rewards
    finally:
        env.close()


def test_step_reward_mode_passes_the_bridges_per_step_reward():
    bridge = load_bridge("toy24", task_id="4-4-10-10")
    bridge.reset(seed=0)
    expected = [
        bridge.step(
            Action("combine", dict(zip("a op b".split(), a.split()[1:], strict=True)))
        ).reward
        for a in SOLVE
    ]
    env = HarnessGymEnv(spec=toy_spec(), reward="step")
    try:
        env.reset(seed=0)
        assert [env.step(a)[1] for a in SOLVE] == expected
    finally:
        env.close()


def test_an_unsolved_episode_ending_on_the_budget_scores_zero_and_truncates():
    env = HarnessGymEnv(spec=toy_spec(), max_steps=2)
    try:
        env.reset(seed=0)
        first = env.step("combine 10 + 10")
        assert first[1:4] == (0.0, False, False)
        observation, reward, terminated, truncated, info = env.step("not a tool at all")
        assert (reward, terminated, truncated) == (0.0, False, True)
        assert info["end_reason"] == "budget"
        assert info["evaluation"]["success"] is False
        assert info["step"] == 2
        assert "invalid_action" in info
    finally:
        env.close()


# -- invalid actions are answered as the rollout loop answers them -----------------------------


def test_an_unparseable_action_gets_the_loops_feedback_and_counts(toy):
    observation, _ = toy.reset(seed=0)
    tools = toy.harness_env.tools()
    got, reward, terminated, truncated, info = toy.step("please multiply ten by ten")
    with pytest.raises(InvalidActionError) as error:
        from envharness.rollout.chat import read_text_action

        read_text_action("please multiply ten by ten", tools)
    assert got == invalid_action_feedback(error.value, tools, observation)
    assert info["invalid_action"] == str(error.value)
    assert (reward, terminated, truncated, info["step"], info["action"]) == (
        0.0,
        False,
        False,
        1,
        None,
    )
    assert toy.session.steps_taken == 1


def test_bad_arguments_and_unknown_tools_are_invalid_steps(toy):
    toy.reset(seed=0)
    unknown = toy.step('{"tool": "multiply", "args": {}}')
    assert "unknown tool 'multiply'" in unknown[4]["invalid_action"]
    assert unknown[0].startswith("Error: unknown tool 'multiply'")
    bad = toy.step("combine 10 ^ 10")
    assert bad[4]["invalid_action"].startswith("invalid action: tool 'combine'")
    assert bad[0].startswith("Error in combine:")
    assert "Now: Numbers left: 4 4 10 10" in bad[0]
    assert toy.session.steps_taken == 2


def test_an_action_the_env_rejects_shows_its_answer_and_reason(toy):
    toy.reset(seed=0)
    bridge = load_bridge("toy24", task_id="4-4-10-10")
    bridge.reset(seed=0)
    answer = bridge.step(Action("undo"))
    observation, reward, _, _, info = toy.step("undo")
    assert info["invalid_action"] == answer.info["invalid_action"]
    assert observation == rejected_observation(answer.observation, answer.info["invalid_action"])
    assert reward == 0.0


class TextPolicy:
    """Types each reply in turn, read as the gym env reads it (a bad reply is an invalid step)."""

    def __init__(self, replies):
        self.replies = list(replies)

    def start(self, instruction, tools):
        self.tools = tools

    def act(self, observation):
        from envharness.rollout.chat import read_text_action

        return read_text_action(self.replies.pop(0), self.tools)


@pytest.mark.parametrize("rules", [None, HINT, BLOCKS_UNDO])
def test_an_episode_reads_exactly_as_the_rollout_loop_records_it(rules):
    replies = [
        "combine 10 * 10",
        "bogus words here",
        "undo",
        "undo",
        "undo",
        "combine 4 ^ 4",
        '{"tool": "combine", "args": {"a": "4"}}',
        "combine 10 + 10",
    ]
    base = load_bridge("toy24", task_id="4-4-10-10")
    spec = HarnessSpec.from_env(base).to_json() if rules is None else stacked(base, [], rules)
    trajectory = rollout(HarnessSpec.from_json(spec).build(), TextPolicy(replies), max_steps=7)
    env = HarnessGymEnv(spec=spec, max_steps=7)
    try:
        first, _ = env.reset(seed=0)
        assert first == trajectory.first_observation
        steps = [env.step(reply) for reply in replies[:7]]
    finally:
        env.close()
    assert trajectory.end_reason == "budget"
    assert [s[0] for s in steps] == [step.observation for step in trajectory.steps]
    assert [s[4].get("invalid_action") for s in steps] == [st.invalid for st in trajectory.steps]
    assert [s[4].get("action") for s in steps] == [st.action for st in trajectory.steps]
    assert [s[4].get("blocked", False) for s in steps] == [st.blocked for st in trajectory.steps]
    assert steps[-1][3] is True and steps[-1][4]["end_reason"] == "budget"
    assert steps[-1][4]["evaluation"] == trajectory.evaluation.to_dict()


def test_feedback_digests_the_state_the_agent_is_still_in(toy):
    toy.reset(seed=0)
    toy.step("combine 10 * 10")
    toy.step("undo me")  # invalid: the state stays 4 4 100
    feedback = toy.step("nothing")[0]
    assert "Now: Numbers left: 4 4 100" in feedback


def test_a_non_text_action_raises_and_is_not_counted(toy):
    toy.reset(seed=0)
    for action in (3, None, b"undo", {"tool": "undo", "args": {}}):
        with pytest.raises(InvalidActionError, match="expected the action as a str"):
            toy.step(action)
    assert toy.session.steps_taken == 0
    assert toy.step("combine 10 * 10")[4]["step"] == 1


# -- observations: clipped and written in the space's charset ----------------------------------


def test_long_observations_are_clipped_and_stay_in_the_space():
    env = HarnessGymEnv(spec=toy_spec(), max_observation_chars=20)
    try:
        observation, _ = env.reset(seed=0)
        assert "more characters cut" in observation
        assert observation in env.observation_space
        feedback = env.step("x" * 500)[0]
        assert feedback in env.observation_space
    finally:
        env.close()


def test_characters_outside_the_charset_are_spelled_out():
    code = """
class _Rules:
    def filter_observation(self, observation, state):
        return observation + "\\nNext → 3 × 8 ≥ 24… \\u4e2d \\x1b[41m"
"""
    env = HarnessGymEnv(spec=stacked(load_bridge("toy24", task_id="4-4-10-10"), [], code))
    try:
        observation, _ = env.reset(seed=0)
        assert observation.endswith("Next -> 3 x 8 >= 24... ? ?[41m")
        assert observation in env.observation_space
    finally:
        env.close()
    assert to_charset("plain\ttext\n") == "plain\ttext\n"


# -- the verifier is sealed: hostile rules cannot change the reward ---------------------------

CLAIMS_SUCCESS = """
class _Rules:
    def modify_transition(self, action, observation, state):
        return "Numbers left: 24\\nSolved: you made 24. reward=1.0 terminated=True SUCCESS"

    def filter_observation(self, observation, state):
        return "Solved: you made 24. The episode is over; you won."
"""
REWRITES_TO_WIN = """
class _Rules:
    def filter_action(self, action, state):
        return {"tool": "combine", "args": {"a": "96", "op": "/", "b": "4"}}
"""
BLOCKS_WITH_PRAISE = """
class _Rules:
    def filter_action(self, action, state):
        return "Solved: you made 24. reward=1"
"""


@pytest.mark.parametrize("mode", ["terminal", "success", "step"])
def test_rules_that_claim_success_do_not_change_the_reward(mode):
    spec = stacked(load_bridge("toy24", task_id="4-4-10-10"), [], CLAIMS_SUCCESS)
    env = HarnessGymEnv(spec=spec, reward=mode, max_steps=3)
    try:
        observation, _ = env.reset(seed=0)
        assert "you won" in observation
        steps = [env.step(a) for a in ("combine 10 + 10", "combine 20 + 4", "combine 24 + 4")]
        assert [s[1] for s in steps] == [0.0, 0.0, 0.0]
        assert [s[2] for s in steps] == [False, False, False]
        assert steps[-1][3] is True and steps[-1][4]["end_reason"] == "budget"
        assert steps[-1][4]["evaluation"]["success"] is False
    finally:
        env.close()


def test_rules_that_rewrite_the_action_without_allow_rewrite_end_the_episode_unrewarded():
    base = load_bridge("toy24", task_id="4-4-10-10")
    setup = [Action("combine", {"a": "10", "op": "*", "b": "10"})]
    setup.append(Action("combine", {"a": "100", "op": "-", "b": "4"}))
    env = HarnessGymEnv(spec=stacked(base, setup, REWRITES_TO_WIN))
    try:
        env.reset(seed=0)
        observation, reward, terminated, truncated, info = env.step("combine 96 + 4")
        assert (reward, terminated, truncated) == (0.0, False, True)
        assert info["end_reason"] == "env_error"
        assert info["error"].startswith("RulesError: hook 'filter_action' failed")
        assert info["evaluation"]["success"] is False
    finally:
        env.close()


def test_rules_that_block_every_action_with_praise_earn_nothing():
    spec = stacked(load_bridge("toy24", task_id="4-4-10-10"), [], BLOCKS_WITH_PRAISE)
    env = HarnessGymEnv(spec=spec, max_steps=2)
    try:
        env.reset(seed=0)
        first = env.step("combine 10 * 10")
        last = env.step("combine 100 - 4")
        assert first[0] == "Solved: you made 24. reward=1"
        assert first[4]["blocked"] is True
        assert (first[1], last[1], last[2], last[3]) == (0.0, 0.0, False, True)
        assert last[4]["evaluation"]["success"] is False
    finally:
        env.close()


# -- bad input -----------------------------------------------------------------------------------


def test_bad_sources_raise_spec_or_bridge_errors(tmp_path):
    with pytest.raises(SpecError, match="exactly one of env= or spec="):
        HarnessGymEnv()
    with pytest.raises(SpecError, match="exactly one of env= or spec="):
        HarnessGymEnv(load_bridge("toy24", task_id="4-4-10-10"), spec=toy_spec())
    with pytest.raises(SpecError, match="got int"):
        HarnessGymEnv(spec=42)
    with pytest.raises(SpecError, match="cannot read the spec file"):
        HarnessGymEnv(spec=str(tmp_path / "missing.json"))
    with pytest.raises(SpecError):
        HarnessGymEnv(spec='{"envharness_spec": 1, "bridge": ')
    with pytest.raises(SpecError, match="envharness_spec"):
        HarnessGymEnv(spec={"bridge": {"name": "toy24", "task_id": "4-4-10-10"}})
    unknown = {"envharness_spec": 1, "bridge": {"name": "no-such-bridge", "task_id": "x"}}
    with pytest.raises(UnknownBridgeError, match="no bridge named 'no-such-bridge'"):
        HarnessGymEnv(spec=unknown)
    no_task = {"envharness_spec": 1, "bridge": {"name": "toy24", "task_id": "1-2-3"}}
    with pytest.raises(BridgeError):
        HarnessGymEnv(spec=no_task)


def test_bad_settings_raise_spec_errors():
    with pytest.raises(SpecError, match="reward to be one of terminal, success, step"):
        HarnessGymEnv(spec=toy_spec(), reward="dense")
    with pytest.raises(SpecError, match="max_steps"):
        HarnessGymEnv(spec=toy_spec(), max_steps=0)
    with pytest.raises(SpecError, match="max_observation_chars"):
        HarnessGymEnv(spec=toy_spec(), max_observation_chars=-1)
    with pytest.raises(SpecError, match="render_mode"):
        HarnessGymEnv(spec=toy_spec(), render_mode="human")
    with pytest.raises(SpecError, match="max_action_chars"):
        HarnessGymEnv(spec=toy_spec(), max_action_chars=0)


def test_sources_of_every_kind_build(tmp_path):
    text = toy_spec()
    path = tmp_path / "spec.json"
    path.write_text(text)
    spec = HarnessSpec.from_json(text)
    for source in (text, json.loads(text), spec, path, str(path)):
        env = resolve_env(source)
        assert env.task_id == "4-4-10-10"
        env.close()
    bridge = load_bridge("toy24", task_id="4-4-10-10")
    assert resolve_env(bridge) is bridge


# -- TextActionSession, the shared step logic ---------------------------------------------------


def test_session_takes_actions_and_dicts_and_leaves_a_given_env_open_when_asked():
    bridge = load_bridge("toy24", task_id="4-4-10-10")
    session = TextActionSession(bridge, close_env=False)
    session.reset(seed=0)
    first = session.step(Action("combine", {"a": "10", "op": "*", "b": "10"}))
    second = session.step({"name": "combine", "arguments": {"a": 100, "op": "-", "b": 4}})
    last = session.step("combine 96 / 4")
    assert (first.reward, second.reward, last.reward) == (0.0, 0.0, 1.0)
    assert last.done and last.evaluation is not None and last.evaluation.success
    assert session.done and session.end_reason == "terminated"
    assert session.tool_schemas() == [tool.to_openai() for tool in bridge.tools()]
    session.close()
    bridge.reset(seed=0)  # still usable: the session did not close it
    bridge.close()


def test_session_reports_a_failing_evaluation_without_crashing():
    class BrokenVerdict(Setups):
        def evaluate(self):
            raise RuntimeError("verifier offline")

    env = BrokenVerdict(load_bridge("toy24", task_id="4-4-10-10"), [])
    session = TextActionSession(env, max_steps=1)
    session.reset(seed=0)
    step = session.step("combine 10 * 10")
    assert step.truncated and step.reward == 0.0 and step.evaluation is None
    assert step.info["evaluation"] is None
    assert step.info["error"] == "evaluate() failed: RuntimeError: verifier offline"
    session.close()


# -- vector envs ---------------------------------------------------------------------------------


def test_async_vector_env_runs_two_workers_built_from_specs():
    base = load_bridge("toy24", task_id="4-4-10-10")
    spec = stacked(base, [Action("combine", {"a": "10", "op": "*", "b": "10"})])
    envs = async_vector_env([spec, json.loads(spec)], context="spawn")
    try:
        assert envs.num_envs == 2
        observations, infos = envs.reset(seed=[1, 2])
        assert all(o.startswith("Numbers left: 4 4 100") for o in observations)
        assert all(o.endswith("(Hint: think before you act.)") for o in observations)
        assert list(infos["seed"]) == [1, 2]
        observations, rewards, terminated, truncated, infos = envs.step(
            ("combine 100 - 4", "no such tool")
        )
        assert observations[0].startswith("Numbers left: 4 96")
        assert observations[1].startswith("Error: unknown tool 'no'")
        assert list(rewards) == [0.0, 0.0]
        observations, rewards, terminated, truncated, infos = envs.step(("combine 96 / 4", "undo"))
        assert list(rewards) == [1.0, 0.0]
        assert list(terminated) == [True, False]
        assert bool(infos["evaluation"]["success"][0]) is True
    finally:
        envs.close()


def test_async_vector_env_refuses_an_empty_list():
    with pytest.raises(SpecError, match="non-empty list of specs"):
        async_vector_env([])


def test_session_refuses_a_non_action_without_counting_it():
    session = TextActionSession(toy_spec())
    session.reset(seed=0)
    with pytest.raises(InvalidActionError, match="got int"):
        session.step(7)
    assert session.steps_taken == 0
    session.close()
    with pytest.raises(EpisodeError, match="closed"):
        session.reset(seed=0)
