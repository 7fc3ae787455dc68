"""The ``Policy`` protocol: the black box EnvHarness rigs environments for.

A policy sees only what an agent sees: the task's instruction, the tool schemas, its step budget
and each observation. One policy object plays one episode; a :data:`PolicyFactory` makes a fresh
one per episode from the episode's seed, and is picklable so it can run in another process.

Besides ``start`` and ``act``, a policy may offer these optional extras; the rollout loop and the
statistics look for them and do without when they are absent:

- ``usage() -> dict[str, int]``: the tokens spent this episode (``input_tokens``,
  ``output_tokens``, ``total_tokens``, summed over the model calls); read with
  :func:`policy_usage`.
- ``describe() -> str``: a short, stable name for reports (``"random"``, ``"oracle:0.5"``,
  ``"openai:gpt-4o-mini"``); read with :func:`describe_policy`. Factories offer it too.
- ``skills_shown() -> list``: the skills the policy was given this episode (a skill-equipped
  :class:`~envharness.rollout.chat.ChatModelPolicy` reports them); the loop records them in
  ``Trajectory.skills``.
- ``attach(env)``: privileged access to the environment (see :class:`PrivilegedPolicy`). Only
  calibrated test policies such as :class:`~envharness.rollout.policies.OraclePolicy` have it;
  the loop calls ``policy.attach(env)`` right after ``env.reset`` when the policy has it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from envharness.core import Action, ToolSpec

if TYPE_CHECKING:
    from envharness.core import ActionableEnv

__all__ = [
    "Policy",
    "PolicyFactory",
    "PrivilegedPolicy",
    "TokenUsage",
    "describe_policy",
    "policy_usage",
    "start_policy",
]

TokenUsage = dict[str, int]
"""Token counts: ``{"input_tokens": n, "output_tokens": n, "total_tokens": n}``."""

_USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens")


@runtime_checkable
class Policy(Protocol):
    """An agent that plays one episode.

    ``start`` may take a keyword ``max_steps``: the agent's step budget for the episode (every
    ``act`` call is one step, a rejected or malformed action included). The rollout loop passes
    it to a ``start`` that accepts it (see :func:`start_policy`), so policies written without it
    keep working.

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


@runtime_checkable
class PrivilegedPolicy(Policy, Protocol):
    """A policy that may look inside the environment, not only at observations.

    A black-box agent never has this. It exists for calibrated offline policies (the oracle
    policy reads the bridge's ``oracle_actions()``) whose weakness is known, so that rigging can
    be tested without an LLM. The rollout loop calls :meth:`attach` right after ``env.reset``,
    with the full harness stack the episode plays in.
    """

    def attach(self, env: ActionableEnv) -> None:
        """Gives the policy the environment of the current episode (after its reset)."""
        ...


PolicyFactory = Callable[[int], Policy]
"""Makes a fresh :class:`Policy` for one episode from the episode's seed (picklable)."""


def describe_policy(policy: Any) -> str:
    """A short name for a policy or a policy factory, for reports and trajectory records.

    Uses the object's ``describe()`` when it has one, else its class name.

    Example:
        >>> from envharness.rollout.policies import OraclePolicyFactory
        >>> describe_policy(OraclePolicyFactory(0.5))
        'oracle:0.5'
    """
    describe = getattr(policy, "describe", None)
    if callable(describe):
        text = describe()
        if isinstance(text, str) and text:
            return text
    return type(policy).__name__


def policy_usage(policy: Any) -> TokenUsage:
    """The policy's token usage this episode (all zeros when it does not report any).

    Example:
        >>> from envharness.rollout.policies import RandomPolicy
        >>> policy_usage(RandomPolicy(0))
        {'input_tokens': 0, 'output_tokens': 0, 'total_tokens': 0}
    """
    usage = getattr(policy, "usage", None)
    counts = usage() if callable(usage) else {}
    return {key: int(counts.get(key, 0) or 0) for key in _USAGE_KEYS}


def _takes_max_steps(start: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(start).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return False
    return any(
        p.kind is p.VAR_KEYWORD
        or (p.name == "max_steps" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
        for p in parameters
    )


def start_policy(
    policy: Policy, instruction: str, tools: Sequence[ToolSpec], max_steps: int | None
) -> None:
    """Calls ``policy.start``, with ``max_steps=`` when its ``start`` accepts that keyword.

    Example:
        >>> class Counting:
        ...     def start(self, instruction, tools, *, max_steps=None):
        ...         self.budget = max_steps
        ...     def act(self, observation): ...
        >>> policy = Counting()
        >>> start_policy(policy, "Win.", [], 30)
        >>> policy.budget
        30
    """
    if max_steps is not None and _takes_max_steps(policy.start):
        policy.start(instruction, tools, max_steps=max_steps)
    else:
        policy.start(instruction, tools)
