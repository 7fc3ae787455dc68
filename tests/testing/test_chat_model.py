from __future__ import annotations

import subprocess
import sys

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

import envharness.testing
from envharness.errors import EnvHarnessError
from envharness.testing import FakeToolCallingModel


@tool
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


def test_reply_forms_in_order():
    given = AIMessage(content="given")
    model = FakeToolCallingModel(
        responses=[
            {"tool": "add", "args": {"a": 1, "b": 2}},
            [{"name": "add", "args": {"a": 1, "b": 1}, "id": "mine"}, {"tool": "add"}],
            "plain text",
            given,
            lambda messages: f"seen {len(messages)} messages",
            ValueError("provider down"),
        ]
    )
    one = model.invoke("hi")
    assert one.tool_calls == [
        {"name": "add", "args": {"a": 1, "b": 2}, "id": "call_1_1", "type": "tool_call"}
    ]
    two = model.invoke("again")
    assert [c["id"] for c in two.tool_calls] == ["mine", "call_2_2"]
    assert two.tool_calls[1]["args"] == {}
    three = model.invoke("text?")
    assert three.content == "plain text" and three.tool_calls == []
    four = model.invoke("given?")
    assert four.content == "given" and given.usage_metadata is None
    assert model.invoke([HumanMessage("a"), HumanMessage("b")]).content == "seen 2 messages"
    assert model.remaining == 1
    with pytest.raises(ValueError, match="provider down"):
        model.invoke("fail")
    with pytest.raises(EnvHarnessError, match="ran out of scripted responses: call 7 but only 6"):
        model.invoke("more")


def test_records_calls_and_usage():
    model = FakeToolCallingModel(responses=["ok"])
    reply = model.invoke([HumanMessage("x" * 40)])
    assert reply.usage_metadata == {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    assert [m.content for m in model.calls[0]] == ["x" * 40]


def test_bind_tools_records_schemas_and_returns_the_model():
    model = FakeToolCallingModel(responses=[])
    bound = model.bind_tools(
        [add, {"title": "undo", "description": "Undo.", "type": "object", "properties": {}}],
        tool_choice="any",
    )
    assert bound is model
    assert [t["function"]["name"] for t in model.bound_tools] == ["add", "undo"]
    assert model.bound_tools[0]["function"]["parameters"]["required"] == ["a", "b"]
    assert model.tool_choice == "any"
    with pytest.raises(NotImplementedError, match="without tool calling"):
        FakeToolCallingModel(tool_calling=False).bind_tools([add])


def test_bad_responses():
    with pytest.raises(EnvHarnessError, match="response 1: expected an AIMessage"):
        FakeToolCallingModel(responses=[42]).invoke("x")
    with pytest.raises(EnvHarnessError, match="response 1: a tool call needs a 'tool' name"):
        FakeToolCallingModel(responses=[{"args": {}}]).invoke("x")


def test_works_with_langgraph_tool_node():
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    model = FakeToolCallingModel(responses=[{"tool": "add", "args": {"a": 2, "b": 3}}])
    bound = model.bind_tools([add])
    graph = StateGraph(MessagesState)
    graph.add_node("model", lambda state: {"messages": [bound.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode([add]))
    graph.add_edge(START, "model")
    graph.add_edge("model", "tools")
    graph.add_edge("tools", END)
    result = graph.compile().invoke({"messages": [HumanMessage("add 2 and 3")]})
    message = result["messages"][-1]
    assert isinstance(message, ToolMessage)
    assert message.content == "5" and message.tool_call_id == "call_1_1"


def test_works_with_create_agent():
    from langchain.agents import create_agent

    model = FakeToolCallingModel(
        responses=[{"tool": "add", "args": {"a": 20, "b": 4}}, "The sum is 24."]
    )
    agent = create_agent(model, tools=[add])
    result = agent.invoke({"messages": [HumanMessage("What is 20 + 4?")]})
    assert result["messages"][-1].content == "The sum is 24."
    assert any(isinstance(m, ToolMessage) and m.content == "24" for m in result["messages"])
    assert [t["function"]["name"] for t in model.bound_tools] == ["add"]
    assert len(model.calls) == 2


def test_lazy_export():
    assert "FakeToolCallingModel" in envharness.testing.__all__
    assert "FakeToolCallingModel" in dir(envharness.testing)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        envharness.testing.Nope  # noqa: B018


def test_testing_and_rollout_import_without_langchain():
    code = (
        "import sys\n"
        "for name in ('langchain', 'langchain_core', 'langgraph'):\n"
        "    sys.modules[name] = None\n"
        "import envharness.testing\n"
        "import envharness.rollout.policy, envharness.rollout.policies\n"
        "import envharness.rollout.chat, envharness.rollout.factory\n"
        "from envharness.rollout.factory import policy_factory\n"
        "assert policy_factory('oracle:0.5')(0).describe() == 'oracle:0.5'\n"
        "try:\n"
        "    envharness.testing.FakeToolCallingModel\n"
        "except ImportError as e:\n"
        "    print(type(e).__name__, e)\n"
        "try:\n"
        "    policy_factory('openai:gpt-4o-mini')\n"
        "except ImportError as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.splitlines()
    assert first.startswith("DependencyNotInstalled") and "envharness[rigger]" in first
    assert second.startswith("DependencyNotInstalled") and "'langchain'" in second
