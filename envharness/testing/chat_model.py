"""``FakeToolCallingModel``: a scripted LangChain chat model for offline tests.

It replays given replies in order, supports ``bind_tools`` (recording what was bound), records
every conversation it was sent and reports token usage, so code that drives a tool-calling model
(``ChatModelPolicy``, a LangGraph ``ToolNode``, ``langchain.agents.create_agent``) can be tested
without a network or a key. This module needs ``langchain-core``; ``envharness.testing`` imports
it lazily.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from envharness.errors import EnvHarnessError
from envharness.rollout.chat_context import message_tokens

__all__ = ["FakeToolCallingModel"]

_OUTPUT_TOKENS = 5


class FakeToolCallingModel(BaseChatModel):
    """A chat model that returns scripted replies in order and supports ``bind_tools``.

    Each entry of ``responses`` is one reply:

    - an ``AIMessage``: returned as is (a copy);
    - a dict ``{"tool": name, "args": {...}}`` (``"name"`` also works, ``"id"`` is optional): an
      ``AIMessage`` with that one tool call and an automatic id (``call_<reply>_<k>``);
    - a list of such dicts: one ``AIMessage`` with several tool calls;
    - a str: a plain-text reply without a tool call;
    - a callable ``f(messages) -> reply``: computes the reply (any of the forms above) from the
      conversation, for replies that depend on what the model was shown;
    - an exception instance: raised, to test how callers handle a failing model.

    Every reply carries ``usage_metadata``: ``input_tokens`` = the estimate of
    :func:`~envharness.rollout.chat_context.message_tokens` for the messages sent,
    ``output_tokens`` = 5 (unless the given ``AIMessage`` has its own).
    ``bind_tools`` returns the model itself and records the tools in OpenAI form
    (:attr:`bound_tools`); with ``tool_calling=False`` it raises ``NotImplementedError`` like a
    model without native tool calling. Every list of messages received is kept in :attr:`calls`.

    Attributes:
        responses: The scripted replies.
        tool_calling: Whether ``bind_tools`` is supported.
        model_name: The name reported to callers (``describe()``, tracing).
        calls: The messages of every call, in order.
        bound_tools: The tools of the last ``bind_tools`` call, in OpenAI function form.
        tool_choice: The ``tool_choice`` of the last ``bind_tools`` call.

    Example:
        >>> model = FakeToolCallingModel(responses=[{"tool": "say", "args": {"text": "hi"}}, "bye"])
        >>> model.invoke("Say hi.").tool_calls[0]["args"]
        {'text': 'hi'}
        >>> model.invoke("Thanks.").content
        'bye'
        >>> len(model.calls)
        2
    """

    responses: list[Any] = Field(default_factory=list)
    tool_calling: bool = True
    model_name: str = "fake-tool-calling"
    calls: list[list[BaseMessage]] = Field(default_factory=list)
    bound_tools: list[dict[str, Any]] = Field(default_factory=list)
    tool_choice: Any = None

    @property
    def _llm_type(self) -> str:
        return "fake-tool-calling"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    @property
    def remaining(self) -> int:
        """How many scripted replies are left."""
        return len(self.responses) - len(self.calls)

    def bind_tools(
        self,
        tools: Sequence[Mapping[str, Any] | type | Callable[..., Any] | Any],
        *,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Records ``tools`` (in OpenAI form) and returns the model itself.

        Raises:
            NotImplementedError: If the model was made with ``tool_calling=False``.
        """
        if not self.tool_calling:
            raise NotImplementedError("this FakeToolCallingModel was made without tool calling")
        self.bound_tools = [convert_to_openai_tool(tool) for tool in tools]
        self.tool_choice = tool_choice
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        index = len(self.calls)
        self.calls.append(list(messages))
        if index >= len(self.responses):
            raise EnvHarnessError(
                f"FakeToolCallingModel ran out of scripted responses: call {index + 1} but only "
                f"{len(self.responses)} responses were given"
            )
        entry = self.responses[index]
        if callable(entry) and not isinstance(entry, BaseMessage):
            entry = entry(list(messages))
        if isinstance(entry, BaseException):
            raise entry
        message = self._to_message(entry, index)
        if message.usage_metadata is None:
            inputs = message_tokens(messages)
            message.usage_metadata = {
                "input_tokens": inputs,
                "output_tokens": _OUTPUT_TOKENS,
                "total_tokens": inputs + _OUTPUT_TOKENS,
            }
        return ChatResult(generations=[ChatGeneration(message=message)])

    @staticmethod
    def _to_message(entry: Any, index: int) -> AIMessage:
        if isinstance(entry, AIMessage):
            return copy.deepcopy(entry)
        if isinstance(entry, str):
            return AIMessage(content=entry)
        if isinstance(entry, Mapping):
            entry = [entry]
        if isinstance(entry, list) and all(isinstance(call, Mapping) for call in entry):
            calls = [_tool_call(call, index, k) for k, call in enumerate(entry)]
            return AIMessage(content="", tool_calls=calls)
        raise EnvHarnessError(
            f"FakeToolCallingModel response {index + 1}: expected an AIMessage, a "
            f"{{'tool', 'args'}} dict, a list of them, a str, a callable or an exception, "
            f"got {type(entry).__name__} {entry!r}"
        )


def _tool_call(call: Mapping[str, Any], index: int, k: int) -> dict[str, Any]:
    name = call.get("tool", call.get("name"))
    if not isinstance(name, str) or not name:
        raise EnvHarnessError(
            f"FakeToolCallingModel response {index + 1}: a tool call needs a 'tool' name, "
            f"got {dict(call)!r}"
        )
    return {
        "name": name,
        "args": dict(call.get("args") or {}),
        "id": str(call.get("id") or f"call_{index + 1}_{k + 1}"),
        "type": "tool_call",
    }
