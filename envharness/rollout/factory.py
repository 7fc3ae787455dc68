"""Policy strings: what the CLI's ``--policy`` takes, turned into picklable policy factories.

Accepted forms:

- ``oracle`` or ``oracle:SKILL``: :class:`~envharness.rollout.policies.OraclePolicyFactory` with
  that skill (1.0 when omitted), e.g. ``oracle:0.5``;
- ``random``: :class:`~envharness.rollout.policies.RandomPolicyFactory`;
- ``scripted:FILE``: :class:`~envharness.rollout.policies.ScriptedPolicyFactory` over the script
  file (JSON list, JSON lines or text lines, see :func:`~envharness.rollout.policies.load_script`);
- ``PROVIDER:MODEL``: :class:`~envharness.rollout.chat.ChatModelPolicyFactory` for a LangChain chat
  model, e.g. ``google_genai:gemini-2.5-flash``, ``openai:gpt-4o-mini``, ``ollama:llama3``.

``skills=BANK`` (the CLI's ``--skills``) equips a chat model with a skill bank: each episode's
system prompt shows the ``top_k`` skills retrieved for its instruction. The offline policies
(oracle, random, scripted) do not read prompts and ignore skills (:func:`uses_skills` says
which policies read them).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from envharness.errors import PolicyError
from envharness.rollout.chat import ChatModelPolicyFactory, check_model_string, model_providers
from envharness.rollout.policies import (
    OraclePolicyFactory,
    RandomPolicyFactory,
    ScriptedPolicyFactory,
    load_script,
)
from envharness.rollout.policy import PolicyFactory

__all__ = ["POLICY_FORMS", "policy_factory", "uses_skills"]

POLICY_FORMS = (
    "oracle",
    "oracle:SKILL",
    "random",
    "scripted:FILE",
    "PROVIDER:MODEL",
)
"""The forms :func:`policy_factory` accepts."""


def _accepted() -> str:
    return (
        "accepted forms: 'oracle' (skill 1.0), 'oracle:SKILL' (SKILL in [0, 1], e.g. "
        "'oracle:0.5'), 'random', 'scripted:FILE' (a JSON, JSONL or text script), or a chat "
        "model 'PROVIDER:MODEL' (e.g. 'google_genai:gemini-2.5-flash'; providers: "
        f"{', '.join(model_providers())})"
    )


def uses_skills(factory: object) -> bool:
    """Whether the policies of ``factory`` read skills (chat models do; offline policies not).

    Example:
        >>> uses_skills(policy_factory("oracle"))
        False
    """
    return isinstance(factory, ChatModelPolicyFactory)


def policy_factory(
    policy: str | PolicyFactory,
    *,
    skills: str | os.PathLike[str] | Any = None,
    top_k: int | None = None,
) -> PolicyFactory:
    """Turns a ``--policy`` string into a policy factory; a factory is returned as is.

    Args:
        policy: A policy string (forms in the module docstring) or a ready factory.
        skills: A skill bank for a chat model: the path of a JSONL bank (or of a run directory
            holding ``skills.jsonl``), or anything :class:`~envharness.rollout.chat.
            ChatModelPolicyFactory` takes as ``skills``. Offline policies ignore it.
        top_k: Skills per episode (:data:`~envharness.rollout.chat.DEFAULT_TOP_K` when
            ``None``).

    Returns:
        A picklable ``factory(seed) -> Policy`` (a chat model factory pickles because it holds
        only the model string, and the bank's path).

    Raises:
        PolicyError: If the string is unknown or malformed, a skill is out of range, a script
            file is bad, or a model provider is unknown (listing the accepted forms), or its
            package is missing; if ``skills`` is given with a ready factory.
        DependencyNotInstalled: If a model's provider package is missing and an envharness
            extra installs it (``google_genai`` → ``envharness[google]``), or ``bm25s`` for a
            bank (``envharness[skills]``).
        SkillError: If ``skills`` is not a skill bank.

    Example:
        >>> policy_factory("oracle:0.5")
        OraclePolicyFactory(skill=0.5)
        >>> policy_factory("random")(seed=3).describe()
        'random'
    """
    if callable(policy) and not isinstance(policy, str):
        if skills is not None:
            raise PolicyError(
                "skills apply to a policy string; give a ready policy factory its skills "
                "itself (e.g. ChatModelPolicyFactory(model, skills=bank))"
            )
        return policy
    if not isinstance(policy, str):
        raise PolicyError(
            f"expected a policy string or a policy factory, got {type(policy).__name__}; "
            + _accepted()
        )
    text = policy.strip()
    kind, colon, rest = text.partition(":")
    rest = rest.strip()
    if kind == "oracle":
        if not colon:
            return OraclePolicyFactory(1.0)
        try:
            skill = float(rest)
        except ValueError:
            raise PolicyError(
                f"bad skill {rest!r} in {text!r}: expected a number in [0, 1], e.g. 'oracle:0.5'"
            ) from None
        return OraclePolicyFactory(skill)
    if kind == "random":
        if colon:
            raise PolicyError(f"'random' takes no argument, got {text!r}; {_accepted()}")
        return RandomPolicyFactory()
    if kind == "scripted":
        if not rest:
            raise PolicyError(f"'scripted:FILE' needs a script file, got {text!r}")
        return ScriptedPolicyFactory(load_script(rest))
    if colon and kind:
        try:
            check_model_string(text)
        except PolicyError as e:
            raise PolicyError(f"unknown policy {text!r}: {e}; {_accepted()}") from e
        if isinstance(skills, str):
            skills = Path(skills)
        return ChatModelPolicyFactory(text, skills=skills, top_k=top_k)
    raise PolicyError(f"unknown policy {text!r}; {_accepted()}")
