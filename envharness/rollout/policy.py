"""The ``Policy`` protocol: the black box EnvHarness rigs environments for.

A policy sees only what an agent sees: the task's instruction, the tool schemas and each
observation. One policy object plays one episode; a :data:`PolicyFactory` makes a fresh one per
episode from the episode's seed, and is picklable so it can run in another process.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from envharness.core import Action, ToolSpec

__all__ = ["Policy", "PolicyFactory", "TokenUsage"]

TokenUsage = dict[str, int]
"""Token counts: ``{"input_tokens": n, "output_tokens": n, "total_tokens": n}``."""


@runtime_checkable
class Policy(Protocol):
    """An agent that plays one episode.

    ``act`` may raise :class:`~envharness.errors.InvalidActionError` when the agent's reply is not
    a usable action (no tool call, an unknown tool, bad arguments): the rollout loop records an
    invalid step and sends the error back as the next observation. Any other exception ends the
    episode as a policy error.
    """

    def start(self, instruction: str, tools: Sequence[ToolSpec]) -> None:
        """Begins the episode with the task's instruction and the tools the agent may call."""
        ...

    def act(self, observation: str) -> Action:
        """Returns the next action for ``observation``."""
        ...


PolicyFactory = Callable[[int], Policy]
"""Makes a fresh :class:`Policy` for one episode from the episode's seed (picklable)."""
