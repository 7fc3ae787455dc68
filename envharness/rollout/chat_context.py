"""What a chat-model policy sends each turn: a bounded view of its conversation.

A long episode would resend every observation on every call, so the input grows with the square
of the episode's length (a web page per step is ~250 tokens; by step 30 each call carries ~8K).
:func:`bounded_context` keeps the system prompt, the first message and the last ``turns`` turns
in full, shortens older observations to one-line stubs, and, over a token budget, leaves out the
oldest turns whole: a model's call and the results answering it go together, as providers
require. The policy keeps the full conversation; only the view sent to the model is cut.

:class:`ContextLimits` imports without LangChain; the functions take LangChain messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from envharness.tokens import estimate_tokens

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

__all__ = ["ContextLimits", "bounded_context", "message_chars", "message_tokens"]

_STUB_CHARS = 80
_OLD_REPLY_CHARS = 300
_LEFT_OUT = "({count} earlier steps are left out of this conversation to save space.)"


@dataclass(frozen=True)
class ContextLimits:
    """How much of its conversation a chat-model policy sends per call.

    Attributes:
        turns: The last ``turns`` turns (a model reply and the results answering it) are sent in
            full; older observations become one-line stubs. ``None`` sends every turn in full.
        max_tokens: A budget for the whole view (characters ÷ 4); over it the oldest turns are
            left out whole, the latest one always kept. ``None`` sets no budget.
    """

    turns: int | None = 5
    max_tokens: int | None = None


def message_tokens(messages: Sequence[BaseMessage]) -> int:
    """A provider-independent size estimate: the characters of the messages' text ÷ 4.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> message_tokens([HumanMessage(content="x" * 40)])
        10
    """
    return estimate_tokens(sum(message_chars(message) for message in messages))


def _is_reply(message: BaseMessage) -> bool:
    return message.type == "ai"


def message_chars(message: BaseMessage) -> int:
    """The characters of a message's text and of its tool calls' names and arguments."""
    content = message.content
    size = len(content) if isinstance(content, str) else sum(len(str(p)) for p in content)
    for call in getattr(message, "tool_calls", None) or ():
        size += len(call["name"]) + len(str(call["args"]))
    return size


def _stub(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "… [shortened]"


def _shortened(message: BaseMessage) -> BaseMessage:
    """An older message as a stub: results cut to one line, long reply texts clipped."""
    if not isinstance(message.content, str):  # content blocks may carry provider signatures
        return message
    limit = _OLD_REPLY_CHARS if _is_reply(message) else _STUB_CHARS
    stub = _stub(message.content, limit)
    return message if stub == message.content else message.model_copy(update={"content": stub})


def _turns(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """The messages after the opening ones, grouped as (reply, the results answering it)."""
    turns: list[list[BaseMessage]] = []
    for message in messages:
        if _is_reply(message) or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
    return turns


def bounded_context(
    messages: Sequence[BaseMessage], limits: ContextLimits, *, opening: int = 2
) -> list[BaseMessage]:
    """The view of ``messages`` to send: the opening and the last turns, older ones shortened.

    Args:
        messages: The whole conversation: ``opening`` messages (the system prompt and the first
            human message), then turns that each start with the model's reply.
        limits: How many turns to keep in full, and the token budget.
        opening: How many leading messages are always sent unchanged.

    Example:
        >>> from langchain_core.messages import (
        ...     AIMessage, HumanMessage, SystemMessage, ToolMessage)
        >>> talk = [SystemMessage(content="Play."), HumanMessage(content="Start.")]
        >>> for k in range(4):
        ...     call = {"name": "look", "args": {}, "id": f"c{k}", "type": "tool_call"}
        ...     talk += [AIMessage(content="", tool_calls=[call]),
        ...              ToolMessage(content=f"Room {k}. " + "dust " * 40, tool_call_id=f"c{k}")]
        >>> view = bounded_context(talk, ContextLimits(turns=1))
        >>> [len(m.content) for m in view[3::2]]  # the old results are stubs
        [92, 92, 92, 208]
    """
    head, turns = list(messages[:opening]), _turns(messages[opening:])
    keep = len(turns) if limits.turns is None else limits.turns
    old = max(0, len(turns) - keep)
    shaped = [
        [_shortened(m) for m in turn] if k < old else list(turn) for k, turn in enumerate(turns)
    ]
    left_out = 0
    if limits.max_tokens is not None:
        size = message_tokens(head) + sum(message_tokens(turn) for turn in shaped)
        while len(shaped) > 1 and size > limits.max_tokens:
            size -= message_tokens(shaped.pop(0))
            left_out += 1
    if left_out and head:
        last = head[-1]
        if isinstance(last.content, str):
            note = _LEFT_OUT.format(count=left_out)
            head[-1] = last.model_copy(update={"content": f"{last.content}\n\n{note}"})
    return head + [message for turn in shaped for message in turn]
