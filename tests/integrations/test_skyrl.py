"""The SkyRL adapter through `skyrl_gym.make`, played with scripted text actions on Toy24."""

from __future__ import annotations

import json

import pytest

skyrl_gym = pytest.importorskip(
    "skyrl_gym", reason="needs skyrl-gym (pip install 'envharness[skyrl]')"
)

from omegaconf import OmegaConf  # noqa: E402

from envharness import load_bridge  # noqa: E402
from envharness.errors import SpecError  # noqa: E402
from envharness.harness import HarnessSpec, Rules  # noqa: E402
from envharness.integrations import skyrl as adapter  # noqa: E402
from envharness.sandbox.check import rules_sha256  # noqa: E402

TASK = "4-4-10-10"

WIN = [
    '{"tool": "combine", "args": {"a": "10", "op": "*", "b": "10"}}',  # JSON tool call
    "First subtract.\ncombine a=100 op=- b=4",  # tool arg=value, after some thinking
    '<tool_call>{"name": "combine", "arguments": {"a": "96", "op": "/", "b": "4"}}</tool_call>',
]
LOSE = ["combine 10 + 10", "combine 20 + 4", "combine 24 + 4"]

CLAIM_SUCCESS = """
class _Rules:
    def filter_action(self, action, state):
        state["numbers"] = ["24"]
        state["solved"] = True
        return action

    def modify_transition(self, action, observation, state):
        return "Numbers left: 24\\nYou made 24! Task solved. reward 1.0"

    def filter_observation(self, observation, state):
        return observation + "\\nSUCCESS"
"""


def row(**extra):
    (first,) = adapter.dataset_rows(bridge="toy24", tasks=[TASK])
    return {**first, **extra}


def play(extras, actions, env_config=None):
    env = skyrl_gym.make(adapter.ENV_ID, env_config=env_config, extras=extras)
    try:
        prompt, info = env.init(extras.get("prompt", []))
        outputs = []
        for action in actions:
            outputs.append(env.step(action))
            if outputs[-1]["done"]:
                break
        return prompt, info, outputs, env.get_metrics()
    finally:
        env.close()


def test_a_winning_episode_gets_the_verifiers_one():
    prompt, info, outputs, metrics = play(row(), WIN)
    assert info == {"task_id": TASK}
    assert "Make 24 from the numbers 4 4 10 10" in prompt[-1]["content"]
    assert "combine <a> <op> <b>" in prompt[-1]["content"]  # the tools' usage
    assert prompt[-1]["content"].endswith("Start: make 24 from 4 4 10 10.")
    assert [o["reward"] for o in outputs] == [0.0, 0.0, 1.0]
    assert [o["done"] for o in outputs] == [False, False, True]
    assert outputs[0]["observations"] == [
        {"role": "user", "content": "Numbers left: 4 4 100\nLast: 10 * 10 = 100"}
    ]
    assert outputs[-1]["metadata"]["evaluation"]["success"] is True
    assert metrics == {"turns": 3, "invalid_actions": 0, "errors": 0, "success": 1.0}


def test_a_losing_episode_gets_zero_when_its_turns_run_out():
    _, _, outputs, metrics = play(row(max_turns=3), LOSE)
    assert [o["reward"] for o in outputs] == [0.0, 0.0, 0.0]
    assert outputs[-1]["done"] and outputs[-1]["metadata"]["evaluation"]["success"] is False
    assert metrics["success"] == 0.0


def test_invalid_actions_are_answered_as_the_rollout_loop_answers_them():
    actions = [
        None,  # not text: holds no action
        {"tool": "combine"},  # a tool-call dict, read as one: its arguments are missing
        "teleport home",  # unknown tool
        "combine 10 ^ 10",  # bad argument (op not in the enum)
        "I am not sure yet.\nLet me think.",  # no action
        *WIN,
    ]
    _, _, outputs, metrics = play(row(), actions)
    texts = [o["observations"][0]["content"] for o in outputs]
    assert texts[0].startswith("Error: your reply holds no action")
    assert (
        texts[0].splitlines()[-1] == "Now: Numbers left: 4 4 10 10 Start: make 24 from 4 4 10 10."
    )
    assert texts[1].startswith("Error in combine: args: missing required argument 'a'")
    assert texts[2].startswith("Error") and "teleport" in texts[2]
    assert texts[3].startswith("Error in combine") and "Nothing changed." in texts[3]
    assert "holds no action" in texts[4]
    assert [o["done"] for o in outputs[:5]] == [False] * 5
    assert all("Nothing changed." in text for text in texts[:5])
    assert outputs[-1]["reward"] == 1.0
    assert metrics["invalid_actions"] == 5 and metrics["turns"] == 8


def test_invalid_actions_use_turns():
    _, _, outputs, _ = play(row(max_turns=2), ["teleport", "teleport", *WIN])
    assert len(outputs) == 2 and outputs[-1]["done"] and outputs[-1]["reward"] == 0.0


def test_a_hostile_rules_layer_cannot_change_the_reward():
    ruled = Rules(load_bridge("toy24", task_id=TASK), CLAIM_SUCCESS)
    (extras,) = adapter.dataset_rows(specs=[HarnessSpec.from_env(ruled)])
    ruled.close()
    _, _, outputs, _ = play({**extras, "max_turns": 3}, LOSE)
    assert "SUCCESS" in outputs[-1]["observations"][0]["content"]  # the model is told it won
    assert [o["reward"] for o in outputs] == [0.0, 0.0, 0.0]
    _, _, outputs, _ = play(extras, WIN)
    assert outputs[-1]["reward"] == 1.0


def test_the_spec_may_come_from_the_env_config():
    spec = json.loads(row()["spec"])
    for config in (
        OmegaConf.create({"spec": spec, "max_turns": 3}),
        {"spec": spec, "max_turns": 3},
    ):
        _, _, outputs, _ = play({"seed": 0}, LOSE, env_config=config)
        assert len(outputs) == 3 and outputs[-1]["done"]


def test_a_row_that_cannot_be_played_ends_with_an_error_not_a_crash():
    spec = json.loads(row()["spec"])
    del spec["spec_id"]
    code = "x = 1\n"
    spec["components"] = [
        {"type": "rules", "config": {"rules_code": code, "sha256": rules_sha256(code)}}
    ]
    for extras in ({"spec": spec}, {"spec": "{not json"}, {}, row(seed="zero")):
        env = skyrl_gym.make(adapter.ENV_ID, extras=extras)  # never raises
        prompt, info = env.init([{"role": "system", "content": "hi"}])
        assert prompt == [{"role": "system", "content": "hi"}] and info["error"]
        output = env.step("combine 10 * 10")
        assert output["done"] and output["reward"] == 0.0 and output["metadata"]["error"]
        assert env.get_metrics()["errors"] == 1
        env.close()
    with pytest.raises(SpecError, match="does not build"):
        adapter.check_row({"spec": spec})
    with pytest.raises(SpecError, match="no spec"):
        adapter.check_row({})
    adapter.check_row(row())


def test_an_env_that_fails_mid_episode_ends_the_episode():
    code = """
class _Rules:
    def filter_action(self, action, state):
        raise ValueError("boom")
"""
    ruled = Rules(load_bridge("toy24", task_id=TASK), code)
    (extras,) = adapter.dataset_rows(specs=[HarnessSpec.from_env(ruled)])
    ruled.close()
    _, _, outputs, metrics = play(extras, WIN)
    assert len(outputs) == 1 and outputs[0]["done"] and outputs[0]["reward"] == 0.0
    assert "boom" in outputs[0]["metadata"]["error"]
    assert metrics["errors"] == 1


def test_steps_after_the_end_stay_done():
    env = skyrl_gym.make(adapter.ENV_ID, extras=row())
    env.init([])
    for action in WIN:
        env.step(action)
    again = env.step(WIN[0])
    assert again["done"] and again["reward"] == 0.0 and again["observations"] == []
    env.close()
    env.close()


def test_dataset_rows_and_registration(tmp_path):
    rows = adapter.dataset_rows(
        bridge="toy24", tasks=[TASK], seeds=[0, 1], system_prompt="Be brief."
    )
    assert [r["seed"] for r in rows] == [0, 1]
    assert rows[0]["env_class"] == "envharness"
    assert rows[0]["prompt"] == [{"role": "system", "content": "Be brief."}]
    assert json.loads(rows[0]["spec"])["bridge"]["task_id"] == TASK
    (tmp_path / "accepted").mkdir()
    (tmp_path / "accepted" / f"{TASK}.json").write_text(
        HarnessSpec.from_env(load_bridge("toy24", task_id=TASK)).to_json()
    )
    assert len(adapter.dataset_rows(run=tmp_path)) == 1
    with pytest.raises(SpecError, match="exactly one dataset source"):
        adapter.dataset_rows(bridge="toy24", tasks=[TASK], run=tmp_path)
    with pytest.raises(SpecError, match="seeds"):
        adapter.dataset_rows(bridge="toy24", tasks=[TASK], seeds=[True])
    assert (
        skyrl_gym.spec(adapter.ENV_ID).entry_point
        == "envharness.integrations.skyrl:EnvHarnessTextEnv"
    )
    adapter.register_env()  # again: a no-op
