"""`envharness rollout` and `envharness rig` through langchain-openai's real client, on loopback.

The model is `envharness.testing.openai_server.OpenAIServer`, a scripted OpenAI-compatible HTTP
API on 127.0.0.1, found through the standard `OPENAI_BASE_URL` / `OPENAI_API_KEY` variables, as a
user points EnvHarness at vLLM, llama.cpp or Ollama.
"""

from __future__ import annotations

import importlib.util
import json
import re
import urllib.error
import urllib.request
from fractions import Fraction

import pytest
from typer.testing import CliRunner

from envharness.bridges.toy24.solver import solve_steps
from envharness.testing.openai_server import (
    ChatRequest,
    OpenAIServer,
    Reply,
    delayed,
    malformed,
    rate_limited,
)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # sys.modules holds None for it: imports of it fail
        return False


needs_openai = pytest.mark.skipif(
    not (_installed("langchain_openai") and _installed("langchain")),
    reason="needs langchain-openai and langchain (pip install 'envharness[openai,rigger]')",
)

TASK = "1-1-1-8"  # the first task of Toy24's train split
KEY = "sk-loopback-test"
_NUMBERS = re.compile(r"Numbers left:((?: -?\d+(?:/\d+)?)+)")


@pytest.fixture(autouse=True)
def _no_stray_openai_settings(monkeypatch):
    """The user's own OpenAI settings must not leak in (OPENAI_API_BASE beats OPENAI_BASE_URL)."""
    for name in ("OPENAI_API_BASE", "OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_ORG_ID"):
        monkeypatch.delenv(name, raising=False)


def env_for(server: OpenAIServer) -> dict[str, str]:
    # NO_PROXY keeps a proxy configured on the machine out of the loopback calls.
    return {**server.env(), "NO_PROXY": "127.0.0.1,localhost", "COLUMNS": "250"}


def cli(*args, server: OpenAIServer):
    from envharness.cli import app

    return CliRunner().invoke(app, [str(a) for a in args], env=env_for(server))


def fmt(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else str(value)


def solver(request: ChatRequest):
    """A policy reply computed from what the model was shown: the next step of a solution."""
    shown = _NUMBERS.findall(request.last_text())
    steps = solve_steps(shown[-1].split()) if shown else None
    if not steps:
        return "I do not see the numbers."
    a, op, b = steps[0]
    return {"tool": "combine", "args": {"a": fmt(a), "op": op, "b": fmt(b)}}


def trajectories(run_dir):
    lines = (run_dir / "trajectories.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def rollout(server, tmp_path, *extra):
    run_dir = tmp_path / "run"
    result = cli(
        "rollout", "toy24", "--tasks", 1, "--k", 1, "--workers", 1,
        "--policy", "openai:local-model", "--out", run_dir, *extra,
        server=server,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (trajectory,) = trajectories(run_dir)
    return result, trajectory


# -- the fixture itself (standard library only) ----------------------------------------------------


def post(server, body, key=KEY):
    request = urllib.request.Request(
        server.base_url + "/chat/completions",
        json.dumps(body).encode(),
        {"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def test_the_server_answers_scripted_replies_and_failures():
    script = [
        Reply(content="thinking", tool_calls=[{"tool": "say", "args": {"x": 1}, "id": "c1"}]),
        rate_limited(0.5),
        malformed(),
    ]
    with OpenAIServer(script, api_key=KEY, models=["m"]) as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        status, _, text = post(
            server, {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        )
        reply = json.loads(text)
        message = reply["choices"][0]["message"]
        assert status == 200 and message["content"] == "thinking"
        assert message["tool_calls"] == [
            {"id": "c1", "type": "function", "function": {"name": "say", "arguments": '{"x": 1}'}}
        ]
        assert reply["choices"][0]["finish_reason"] == "tool_calls"
        usage = reply["usage"]
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        status, headers, text = post(server, {"messages": []})
        assert status == 429 and headers["Retry-After"] == "0.5"
        assert json.loads(text)["error"]["type"] == "rate_limit_error"
        assert post(server, {"messages": []})[2] == '{"id": "chatcmpl-broken", "choices": ['
        status, _, text = post(server, {"messages": []})
        assert status == 400 and "no reply left" in text  # the script is exhausted
        assert post(server, {"messages": []}, key="wrong")[0] == 401
        models = urllib.request.Request(server.base_url + "/models")
        models.add_header("Authorization", f"Bearer {KEY}")
        with urllib.request.urlopen(models, timeout=5) as response:
            assert json.load(response)["data"][0]["id"] == "m"
    assert [r.status for r in server.requests] == [200, 429, 200, 400, 401, 200]
    assert server.requests[0].usage == reply["usage"] and server.requests[0].reply == reply


def test_the_server_streams_tool_calls_and_usage():
    with OpenAIServer([{"tool": "say", "args": {"text": "hi"}}]) as server:
        body = {"messages": [], "stream": True, "stream_options": {"include_usage": True}}
        status, headers, text = post(server, body)
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    events = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    call = chunks[1]["choices"][0]["delta"]["tool_calls"][0]
    assert call["function"] == {"name": "say", "arguments": '{"text": "hi"}'}
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] >= 1


# -- envharness rollout --policy openai:NAME -----------------------------------------------------


@needs_openai
def test_rollout_plays_tool_calls_with_tool_results_and_usage(tmp_path):
    with OpenAIServer(solver, api_key=KEY) as server:
        result, trajectory = rollout(server, tmp_path)
    assert trajectory["evaluation"]["success"] is True
    assert trajectory["end_reason"] == "terminated"
    assert trajectory["policy"] == "openai:local-model"
    assert [s["action"]["tool"] for s in trajectory["steps"]] == ["combine"] * 3
    chats = server.chat_requests
    assert len(chats) == 3 and all(r.status == 200 for r in chats)
    assert {r.model for r in chats} == {"local-model"}
    assert chats[0].headers["authorization"] == f"Bearer {KEY}"
    assert chats[0].tool_names == ["combine", "undo"]
    assert chats[0].body["tool_choice"] == "required"  # the policy forces a call
    # Multi-turn: each observation goes back as the tool result of the call before it.
    assert [m["role"] for m in chats[2].messages] == [
        "system", "user", "assistant", "tool", "assistant", "tool"
    ]  # fmt: skip
    for earlier, later in zip(chats, chats[1:], strict=False):
        answered = later.messages[-1]
        assert answered["role"] == "tool" and answered["content"].startswith("Step ")
        (sent,) = earlier.reply["choices"][0]["message"]["tool_calls"]
        assert answered["tool_call_id"] == sent["id"]
        assert later.messages[-2]["tool_calls"] == [sent]  # the client sent the call back
        assert json.loads(sent["function"]["arguments"])["op"] in "+-*/"
    # Usage metadata: the trajectory's usage is what the server reported, summed.
    assert trajectory["usage"] == {
        "input_tokens": sum(r.usage["prompt_tokens"] for r in chats),
        "output_tokens": sum(r.usage["completion_tokens"] for r in chats),
        "total_tokens": sum(r.usage["total_tokens"] for r in chats),
    }
    assert "1/1 100%" in result.stdout


@needs_openai
def test_a_malformed_tool_call_is_an_invalid_step_and_a_429_is_retried(tmp_path):
    broken = {"tool": "combine", "arguments": '{"a": "1", "op": '}  # cut-off JSON arguments
    with OpenAIServer([rate_limited(0.3), broken, solver, solver, solver]) as server:
        _, trajectory = rollout(server, tmp_path)
    first, second, *_ = server.chat_requests
    assert first.status == 429 and second.status == 200
    assert second.received - first.received >= 0.3  # the client waited for Retry-After
    assert second.messages == first.messages  # and sent the same request again
    assert trajectory["evaluation"]["success"] is True, trajectory
    invalid = trajectory["steps"][0]
    assert invalid["invalid"] and "not valid JSON" in invalid["invalid"]
    assert [s["invalid"] is None for s in trajectory["steps"]] == [False, True, True, True]
    # The model was told: the next request answers the broken call with the feedback.
    feedback = server.chat_requests[2].messages[-1]
    assert feedback["role"] == "tool" and "not valid JSON" in feedback["content"]


@needs_openai
def test_a_garbled_response_body_ends_the_episode_with_a_clear_error(tmp_path):
    with OpenAIServer([malformed("this is not JSON")]) as server:
        result, trajectory = rollout(server, tmp_path)
    assert trajectory["end_reason"] == "policy_error"
    assert "the chat model openai:local-model failed" in trajectory["error"]
    assert "the chat model openai:local-model failed" in result.stderr


@needs_openai
def test_a_slow_server_ends_the_episode_at_the_step_timeout(tmp_path):
    with OpenAIServer([delayed(30, "too late")]) as server:
        result, trajectory = rollout(server, tmp_path, "--step-timeout", 0.5)
    assert trajectory["end_reason"] == "timeout"
    assert "the policy did not act within 0.5 s" in trajectory["error"]
    assert "did not act within 0.5 s" in result.stderr


@needs_openai
def test_the_client_timeout_retries_then_fails_the_episode(monkeypatch):
    from envharness.bridges.toy24 import Toy24Env
    from envharness.rollout.chat import ChatModelPolicyFactory
    from envharness.rollout.loop import rollout as play

    with OpenAIServer([delayed(30), delayed(30)]) as server:
        for name, value in env_for(server).items():
            monkeypatch.setenv(name, value)
        factory = ChatModelPolicyFactory(
            "openai:local-model", model_kwargs={"timeout": 0.3, "max_retries": 1}
        )
        trajectory = play(Toy24Env(TASK), factory(0), max_steps=4)
    assert trajectory.end_reason == "policy_error"
    assert "TimeoutError" in trajectory.error and "timed out" in trajectory.error
    assert len(server.chat_requests) == 2  # the first try and one retry


@needs_openai
def test_a_streaming_client_gets_tool_calls_and_usage(monkeypatch):
    from envharness.bridges.toy24 import Toy24Env
    from envharness.rollout.chat import ChatModelPolicy
    from envharness.rollout.loop import rollout as play

    with OpenAIServer(solver) as server:
        for name, value in env_for(server).items():
            monkeypatch.setenv(name, value)
        policy = ChatModelPolicy(
            "openai:local-model", model_kwargs={"streaming": True, "stream_usage": True}
        )
        trajectory = play(Toy24Env(TASK), policy, max_steps=6)
    assert trajectory.success
    chats = server.chat_requests
    assert all(r.stream for r in chats)
    assert trajectory.usage["total_tokens"] == sum(r.usage["total_tokens"] for r in chats) > 0


# -- envharness rig --policy openai:NAME --designer openai:NAME ------------------------------------

HEAD_START = [{"tool": "combine", "args": {"a": "1", "op": "+", "b": "1"}}]
DIAGNOSIS = {
    "direction": "harden",
    "summary": "The policy solves the task at once.",
    "weaknesses": [
        {
            "kind": "other",
            "description": "No weakness shows on this task.",
            "evidence": ["episode 0: solved in 3 steps"],
            "episodes": 2,
        }
    ],
}


def rig_model(request: ChatRequest):
    """Policy, diagnoser and designer replies, told apart by the tools each is offered."""
    if "combine" in request.tool_names:
        return solver(request)
    if request.tool_names == ["report_diagnosis"]:
        return {"tool": "report_diagnosis", "args": DIAGNOSIS}
    done = [name for name, _ in request.tool_results()]
    if not done:
        return {"tool": "get_tool_schemas", "args": {}}
    if done[-1] == "get_tool_schemas":
        return {
            "tool": "submit_candidate",
            "args": {
                "rules_code": "",
                "in_env_actions": json.dumps(HEAD_START),
                "rationale": "start one combination in",
            },
        }
    return "Submitted."


@needs_openai
def test_rig_drives_policy_diagnoser_and_designer_through_the_real_client(tmp_path):
    run_dir = tmp_path / "rig"
    limited: list[ChatRequest] = []

    def model(request: ChatRequest):
        if request.tool_names == ["report_diagnosis"] and not limited:
            limited.append(request)
            return rate_limited(0.1)  # the diagnoser's client retries too
        return rig_model(request)

    with OpenAIServer(model) as server:
        result = cli(
            "rig", "toy24", "--tasks", 1, "--policy", "openai:policy-model",
            "--designer", "openai:designer-model", "--objective", "sr:0.3-0.65",
            "--k-observe", 2, "--k-validate", 2, "--max-iterations", 1, "--max-rollouts", 4,
            "--out", run_dir,
            server=server,
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "designer openai:designer-model" in result.stderr
    assert re.search(rf"{TASK}: (accepted|rejected|undecided)", result.stderr), result.stderr
    chats = server.chat_requests
    assert [r.status for r in chats].count(429) == 1 and limited[0].status == 429
    chats = [r for r in chats if r.status == 200]
    by_model = {r.model for r in chats}
    assert by_model == {"policy-model", "designer-model"}
    diagnoser = [r for r in chats if r.tool_names == ["report_diagnosis"]]
    assert len(diagnoser) == 1 and diagnoser[0].model == "designer-model"
    assert diagnoser[0].body["tool_choice"]["function"]["name"] == "report_diagnosis"
    # The designer agent: a look at the tool schemas, then (having read them) a submission,
    # which ends its turn.
    designer = [r for r in chats if "submit_candidate" in r.tool_names]
    assert len(designer) == 2 and designer[0].body.get("tool_choice") is None
    assert designer[0].tool_results() == []
    ((name, schemas),) = designer[1].tool_results()
    assert name == "get_tool_schemas" and "combine" in schemas
    assert designer[1].messages[-2]["tool_calls"][0]["function"]["name"] == "get_tool_schemas"
    record = json.loads((run_dir / "rejected" / f"{TASK}.json").read_text())
    assert record["diagnosis"]["source"] == "designer-model"
    assert record["diagnosis"]["summary"] == DIAGNOSIS["summary"]
    (attempt,) = record["attempts"]
    assert attempt["designer"] == "openai:designer-model" and attempt["model_calls"] == 2
    assert attempt["candidate"]["in_env_actions"] == HEAD_START
    # Baseline and validation rollouts played the policy through the same server.
    stored = [
        json.loads(line)
        for path in (run_dir / "trajectories").glob("*.jsonl")
        for line in path.read_text().splitlines()
    ]
    played = [t for t in stored if t["policy"] == "openai:policy-model"]
    assert len(played) >= 4 and all(t["usage"]["total_tokens"] > 0 for t in played)
    with_head_start = [t for t in played if t["spec"]["components"]]
    assert with_head_start and all(len(t["steps"]) == 2 for t in with_head_start)


@pytest.mark.slow  # worker processes start and import langchain-openai (~15 s on 2 CPUs)
@needs_openai
def test_worker_processes_find_the_server_through_the_environment(tmp_path):
    # A fresh process, as a user runs the command: in-process, a forkserver an earlier test
    # started would hand its workers that test's environment, not the one set here.
    import os
    import subprocess
    import sys

    run_dir = tmp_path / "run"
    with OpenAIServer(solver) as server:
        args = [
            "rollout", "toy24", "--tasks", "2", "--k", "1", "--workers", "2",
            "--executor", "local", "--policy", "openai:local-model", "--out", str(run_dir),
        ]  # fmt: skip
        result = subprocess.run(
            [sys.executable, "-m", "envharness.cli", *args],
            env={**os.environ, **env_for(server)},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert result.returncode == 0, result.stdout + result.stderr
    played = trajectories(run_dir)
    assert len(played) == 2 and all(t["evaluation"]["success"] for t in played)
    assert {t["task_id"] for t in played} == {TASK, "1-1-1-11"}
    assert all(r.status == 200 for r in server.chat_requests)


@needs_openai
def test_policy_and_designer_on_two_servers_through_the_python_api(tmp_path):
    """Without the environment variables: each model string gets its own base_url."""
    from envharness.graph import RiggerContext
    from envharness.graph.designer.models import resolve_model
    from envharness.graph.run import rig
    from envharness.rollout.chat import ChatModelPolicyFactory

    with (
        OpenAIServer(solver, api_key="policy-key") as policy_server,
        OpenAIServer(rig_model, api_key="designer-key") as designer_server,
    ):
        policy = ChatModelPolicyFactory(
            "openai:policy-model",
            model_kwargs={"base_url": policy_server.base_url, "api_key": "policy-key"},
        )
        designer = resolve_model(
            "openai:designer-model", base_url=designer_server.base_url, api_key="designer-key"
        )
        context = RiggerContext(
            run_dir=str(tmp_path / "rig"),
            policy=policy,
            designer=designer,
            objective="sr:0.3-0.65",
            k_observe=2,
            k_validate=2,
            max_iterations=1,
            max_rollouts=4,
        )
        (result,) = rig("toy24", [TASK], context)
    assert result.status in ("accepted", "rejected", "undecided"), result.reason
    assert {r.model for r in policy_server.chat_requests} == {"policy-model"}
    assert {r.model for r in designer_server.chat_requests} == {"designer-model"}
    assert all(r.status == 200 for r in policy_server.requests + designer_server.requests)
    tools = [tuple(r.tool_names[:1]) for r in designer_server.chat_requests]
    assert tools == [("report_diagnosis",), ("get_tool_schemas",), ("get_tool_schemas",)]
