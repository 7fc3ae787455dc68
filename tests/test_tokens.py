from __future__ import annotations

import pytest

from envharness.tokens import CHARS_PER_TOKEN, budget_chars, estimate_tokens


@pytest.mark.parametrize(("size", "tokens"), [(0, 0), (3, 0), (4, 1), (41, 10)])
def test_text_and_lengths_give_the_same_estimate(size, tokens):
    assert estimate_tokens("x" * size) == estimate_tokens(size) == tokens


def test_a_budget_and_its_estimate_agree():
    assert estimate_tokens(budget_chars(250)) == 250
    assert budget_chars(1) == CHARS_PER_TOKEN


def test_the_fake_chat_model_reports_the_policys_own_estimate():
    pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage, HumanMessage

    from envharness.rollout.chat_context import message_tokens
    from envharness.testing import FakeToolCallingModel

    call = AIMessage(content="", tool_calls=[{"name": "undo", "args": {}, "id": "1"}])
    messages = [HumanMessage(content="y" * 37), call]
    reply = FakeToolCallingModel(responses=["ok"]).invoke(messages)
    assert reply.usage_metadata["input_tokens"] == message_tokens(messages) == (37 + 6) // 4
