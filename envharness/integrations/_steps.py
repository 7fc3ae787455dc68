"""One agent step for the trainer adapters, answered as the rollout loop answers it.

Private to :mod:`envharness.integrations`; it imports no trainer. An invalid action (one the
parser or the env's schemas refuse) is answered with
:func:`~envharness.rollout.loop.invalid_action_feedback` and leaves the env as it was; an
action the env rejects is shown with its reason (:func:`~envharness.rollout.loop.
rejected_observation`). Any other exception from the env propagates: the adapter decides how
its trainer learns of a failed episode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from envharness.core import Action, ActionableEnv, ToolSpec
from envharness.errors import InvalidActionError
from envharness.rollout.chat import read_text_action
from envharness.rollout.loop import clip_observation, invalid_action_feedback, rejected_observation

__all__ = ["Outcome", "play_action", "play_text"]


@dataclass(frozen=True)
class Outcome:
    """What the agent is shown after one step.

    Attributes:
        observation: The text to answer the agent with.
        ended: The env ended the episode (terminated or truncated).
        moved: The step was carried out (not invalid, rejected or blocked), so ``observation``
            is the env's current view.
        invalid: The reason the action was invalid or rejected, else ``None``.
    """

    observation: str
    ended: bool = False
    moved: bool = False
    invalid: str | None = None


def play_action(
    env: ActionableEnv, action: Action | InvalidActionError, tools: Sequence[ToolSpec], current: str
) -> Outcome:
    """Steps ``env`` with ``action`` (an error from parsing it is answered without a step).

    Args:
        env: The env, with an episode running.
        action: The parsed action, or the :class:`InvalidActionError` parsing raised.
        tools: The env's tools (named in the feedback on an invalid action).
        current: The env's last observation (digested in the feedback on an invalid action).
    """
    if isinstance(action, InvalidActionError):
        return Outcome(invalid_action_feedback(action, tools, current), invalid=str(action))
    try:
        result = env.step(action)
    except InvalidActionError as e:
        return Outcome(invalid_action_feedback(e, tools, current), invalid=str(e))
    info = result.info if isinstance(result.info, dict) else {}
    observation = clip_observation(str(result.observation))
    ended = bool(result.terminated or result.truncated)
    invalid = info.get("invalid_action")
    if invalid:
        return Outcome(rejected_observation(observation, str(invalid)), ended, invalid=str(invalid))
    return Outcome(observation, ended, moved=not info.get("blocked"))


def play_text(env: ActionableEnv, text: Any, tools: Sequence[ToolSpec], current: str) -> Outcome:
    """Reads ``text`` with :func:`~envharness.rollout.chat.read_text_action` and plays it.

    A reply that is not a str, or holds no action that fits the tools, is an invalid action.
    """
    try:
        if not isinstance(text, str):
            raise InvalidActionError(f"expected the reply as text, got {type(text).__name__}")
        action: Action | InvalidActionError = read_text_action(text, tools)
    except InvalidActionError as e:
        action = e
    return play_action(env, action, tools, current)
