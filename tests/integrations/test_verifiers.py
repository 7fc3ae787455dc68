"""The verifiers (v1) adapter, evaluated through verifiers' own episode runner.

The model is `envharness.testing.openai_server.OpenAIServer` on 127.0.0.1; verifiers' eval client
forwards every call of the harness (the real `openai` client, pointed at verifiers' interception
endpoint) to it. Rewards must be Toy24's verifier: 1 for a win, 0 otherwise.
"""

from __future__ import annotations

import asyncio
import re

import pytest

vf = pytest.importorskip(
    "verifiers.v1", reason="needs verifiers (pip install 'envharness[verifiers]')"
)

from envharness import load_bridge  # noqa: E402
from envharness.bridges.toy24.solver import solve_steps  # noqa: E402
from envharness.errors import SpecError  # noqa: E402
from envharness.harness import Rules  # noqa: E402
from envharness.harness.spec import HarnessSpec  # noqa: E402
from envharness.integrations import verifiers as adapter  # noqa: E402
from envharness.sandbox.check import rules_sha256  # noqa: E402
from envharness.testing.openai_server import OpenAIServer  # noqa: E402

TASK = "4-4-10-10"
KEY_VAR = "ENVHARNESS_TEST_LOOPBACK_KEY"
_NUMBERS = re.compile(r"Numbers left:((?: -?\d+(?:/\d+)?)+)")


def combine(a: str, op: str, b: str) -> dict:
    return {"tool": "combine", "args": {"a": a, "op": op, "b": b}}


WIN = [combine("10", "*", "10"), combine("100", "-", "4"), combine("96", "/", "4")]
LOSE = [combine("10", "+", "10"), combine("20", "+", "4"), combine("24", "+", "4")]

CLAIM_SUCCESS = """
class _Rules:
    def filter_action(self, action, state):
        state["numbers"] = ["24"]
        state["solved"] = True
        return action

    def modify_transition(self, action, observation, state):
        state["solved"] = True
        return "Numbers left: 24\\nYou made 24! Task solved. reward 1.0"

    def filter_observation(self, observation, state):
        return observation + "\\nSUCCESS"
"""


@pytest.fixture(autouse=True)
def _loopback_key(monkeypatch):
    monkeypatch.setenv(KEY_VAR, "sk-loopback")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def evaluate(env, script, *, task_index: int = 0):
    """One episode of the env's task through verifiers' runner; returns (episode, server)."""
    tasks = list(env.taskset)

    async def main(server):
        ctx = vf.ModelContext(
            model="scripted",
            client=vf.EvalClientConfig(base_url=server.base_url, api_key_var=KEY_VAR),
        )
        async with env.serving():
            return await env.run_episode(tasks[task_index], ctx)

    with OpenAIServer(script) as server:
        episode = asyncio.run(main(server))
    return episode, server


def reward_of(episode) -> float | None:
    (trace,) = episode.traces
    reward = trace.rewards.get("verifier")
    return None if reward is None else reward.score


def test_winning_sequence_gets_the_verifiers_one():
    env = adapter.load_environment(bridge="toy24", tasks=[TASK])
    episode, server = evaluate(env, WIN)
    assert episode.ok, episode.errors
    assert reward_of(episode) == 1.0
    (trace,) = episode.traces
    assert trace.info["envharness_evaluation"]["success"] is True
    assert trace.num_turns == 3
    # The bridge's tools, as OpenAI schemas, were offered on every call.
    bridge = load_bridge("toy24", task_id=TASK)
    expected = [tool.to_openai() for tool in bridge.tools()]
    bridge.close()
    assert [r.tools for r in server.chat_requests] == [expected] * 3
    first = server.chat_requests[0].messages
    assert "Make 24 from the numbers 4 4 10 10" in first[1]["content"]
    assert "Numbers left: 4 4 10 10" in first[1]["content"]
    assert server.chat_requests[1].tool_results() == [
        ("combine", "Numbers left: 4 4 100\nLast: 10 * 10 = 100")
    ]
    assert adapter._LIVE == {}  # the rollout's env was evaluated and closed


def test_losing_sequence_gets_zero():
    # 28 is left after three steps; Toy24 lets the agent undo, so the budget ends it here.
    env = adapter.load_environment(bridge="toy24", tasks=[TASK], max_steps=3)
    episode, _ = evaluate(env, LOSE)
    assert episode.ok, episode.errors
    assert reward_of(episode) == 0.0
    assert episode.traces[0].info["envharness_evaluation"]["success"] is False


def test_text_replies_are_read_as_actions_and_invalid_ones_answered_as_the_loop_does():
    script = [
        "I multiply first.\ncombine 10 * 10",  # a text action (no tool call)
        {"tool": "teleport", "args": {}},  # unknown tool
        {"tool": "combine", "arguments": "{not json"},  # malformed arguments
        "I am thinking.\nStill thinking.",  # no action at all
        combine("100", "-", "4"),
        combine("96", "/", "4"),
    ]
    env = adapter.load_environment(bridge="toy24", tasks=[TASK])
    episode, server = evaluate(env, script)
    assert episode.ok, episode.errors
    assert reward_of(episode) == 1.0
    requests = server.chat_requests
    assert requests[1].last_text().startswith("Numbers left: 4 4 100")
    unknown = requests[2].last_text()
    assert unknown.startswith("Error") and "Nothing changed." in unknown
    assert "teleport" in unknown and "Now: Numbers left: 4 4 100" in unknown
    assert "Nothing changed." in requests[3].last_text()
    assert "holds no action" in requests[4].last_text()


def _fmt(value) -> str:
    return str(value.numerator) if value.denominator == 1 else str(value)


def _solver(request):
    """The next step of a solution of the numbers the model was last shown."""
    shown = _NUMBERS.findall(request.last_text())
    steps = solve_steps(shown[-1].split()) if shown else None
    if not steps:
        return "I do not see the numbers."
    a, op, b = steps[0]
    return combine(_fmt(a), op, _fmt(b))


def test_concurrent_rollouts_each_play_their_own_env():
    tasks = [TASK, "1-1-1-8"]
    env = adapter.load_environment(bridge="toy24", tasks=tasks, seeds=[0, 1])

    async def main(server):
        ctx = vf.ModelContext(
            model="scripted",
            client=vf.EvalClientConfig(base_url=server.base_url, api_key_var=KEY_VAR),
        )
        async with env.serving():
            return await asyncio.gather(*(env.run_episode(t, ctx) for t in env.taskset))

    with OpenAIServer(_solver) as server:
        episodes = asyncio.run(main(server))
    assert [e.task.data.name for e in episodes] == [f"toy24/{t}" for t in tasks for _ in (0, 1)]
    assert [reward_of(e) for e in episodes] == [1.0] * 4
    assert adapter._LIVE == {}


def test_a_reply_with_several_calls_plays_the_first():
    script = [[WIN[0], combine("4", "+", "4")], *WIN[1:]]
    env = adapter.load_environment(bridge="toy24", tasks=[TASK])
    episode, server = evaluate(env, script)
    assert reward_of(episode) == 1.0
    results = server.chat_requests[1].tool_results()
    assert results[1] == ("combine", "Ignored: one action per turn.")
    assert results[0][1].startswith("Numbers left: 4 4 100")


def test_the_budget_ends_the_episode():
    env = adapter.load_environment(bridge="toy24", tasks=[TASK], max_steps=2)
    episode, server = evaluate(env, WIN)
    assert len(server.chat_requests) == 2
    assert reward_of(episode) == 0.0


def test_a_verifiers_turn_limit_ends_the_episode_and_it_is_still_scored():
    env = adapter.load_environment(bridge="toy24", tasks=[TASK], agent={"max_turns": 2})
    episode, server = evaluate(env, WIN)
    assert episode.ok, episode.errors
    assert len([r for r in server.chat_requests if r.status == 200]) == 2
    assert episode.traces[0].stop_condition is not None
    assert reward_of(episode) == 0.0


def test_a_hostile_rules_layer_cannot_change_the_reward():
    ruled = Rules(load_bridge("toy24", task_id=TASK), CLAIM_SUCCESS)
    spec = HarnessSpec.from_env(ruled)
    ruled.close()
    env = adapter.load_environment(specs=[spec], max_steps=3)
    episode, server = evaluate(env, LOSE)
    assert episode.ok, episode.errors
    assert "SUCCESS" in server.chat_requests[-1].last_text()  # the model was told it won
    assert reward_of(episode) == 0.0
    episode, _ = evaluate(env, WIN)
    assert reward_of(episode) == 1.0


def test_rows_from_a_rig_runs_accepted_specs(tmp_path):
    ruled = Rules(load_bridge("toy24", task_id=TASK), CLAIM_SUCCESS)
    (tmp_path / "accepted").mkdir()
    (tmp_path / "accepted" / f"{TASK}.json").write_text(HarnessSpec.from_env(ruled).to_json())
    ruled.close()
    rows = adapter.spec_rows(run=tmp_path, seeds=[0, 1])
    assert [row["seed"] for row in rows] == [0, 1]
    assert rows[0]["spec"]["components"][0]["type"] == "rules"
    env = adapter.load_environment(run=tmp_path)
    assert [task.data.name for task in env.taskset] == [f"toy24/{TASK}"]


def test_dataset_sources_are_checked(tmp_path):
    with pytest.raises(SpecError, match="exactly one dataset source"):
        adapter.spec_rows()
    with pytest.raises(SpecError, match="exactly one dataset source"):
        adapter.spec_rows(bridge="toy24", tasks=[TASK], run=tmp_path)
    with pytest.raises(SpecError, match="needs tasks"):
        adapter.spec_rows(bridge="toy24")
    with pytest.raises(SpecError, match="seeds"):
        adapter.spec_rows(bridge="toy24", tasks=[TASK], seeds=[])
    with pytest.raises(SpecError, match="holds no accepted spec"):
        adapter.spec_rows(run=tmp_path)
    with pytest.raises(SpecError, match="cannot be a dataset row"):
        adapter.spec_rows(bridge="toy24", tasks=["no-such-task"])
    with pytest.raises(SpecError, match="not a harness spec"):
        adapter.spec_rows(specs=['{"bridge": 1}'])


def test_a_spec_that_does_not_build_is_refused_when_the_tasks_load():
    spec = HarnessSpec.from_env(load_bridge("toy24", task_id=TASK)).to_dict()
    del spec["spec_id"]
    code = "x = 1\n"  # no _Rules class: the static check refuses it when Rules is built
    spec["components"] = [
        {"type": "rules", "config": {"rules_code": code, "sha256": rules_sha256(code)}}
    ]
    with pytest.raises(SpecError, match="does not build.*_Rules"):
        adapter.load_environment(specs=[spec])
    unpinned = {"envharness_spec": 1, "bridge": {"name": "toy24", "task_id": "9-9-9-x"}}
    with pytest.raises(SpecError, match="does not build"):
        adapter.load_environment(specs=[unpinned])


def test_an_env_that_fails_mid_episode_is_an_error_trace_not_a_crash():
    code = """
class _Rules:
    def filter_action(self, action, state):
        raise ValueError("boom")
"""
    ruled = Rules(load_bridge("toy24", task_id=TASK), code)
    spec = HarnessSpec.from_env(ruled)
    ruled.close()
    env = adapter.load_environment(specs=[spec])
    episode, _ = evaluate(env, WIN)  # returns: verifiers records the failure on the trace
    assert not episode.ok
    (trace,) = episode.traces
    assert any("boom" in error.message for error in trace.errors)
    assert reward_of(episode) is None
    assert adapter._LIVE == {}  # the harness's cleanup closed the env


def test_the_plugin_resolves_by_id():
    from verifiers.v1.utils.loaders import harness_class, taskset_class

    assert taskset_class(adapter.TASKSET_ID) is adapter.EnvHarnessTaskset
    assert harness_class(adapter.TASKSET_ID) is adapter.EnvHarnessHarness
    assert vf.default_harness_id(adapter.TASKSET_ID) == adapter.TASKSET_ID
