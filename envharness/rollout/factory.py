"""Policy strings: what the CLI's ``--policy`` takes, turned into picklable policy factories.

Accepted forms:

- ``oracle`` or ``oracle:SKILL``: :class:`~envharness.rollout.policies.OraclePolicyFactory` with
  that skill (1.0 when omitted), e.g. ``oracle:0.5``;
- ``random``: :class:`~envharness.rollout.policies.RandomPolicyFactory`;
- ``scripted:FILE``: :class:`~envharness.rollout.policies.ScriptedPolicyFactory` over the script
  file (JSON list, JSON lines or text lines, see :func:`~envharness.rollout.policies.load_script`);
- ``PROVIDER:MODEL``: :class:`~envharness.rollout.chat.ChatModelPolicyFactory` for a LangChain chat
  model, e.g. ``google_genai:gemini-2.5-flash``, ``openai:gpt-4o-mini``, ``ollama:llama3``.
"""

from __future__ import annotations

from envharness.errors import PolicyError
from envharness.rollout.chat import ChatModelPolicyFactory, check_model_string, model_providers
from envharness.rollout.policies import (
    OraclePolicyFactory,
    RandomPolicyFactory,
    ScriptedPolicyFactory,
    load_script,
)
from envharness.rollout.policy import PolicyFactory

__all__ = ["POLICY_FORMS", "policy_factory"]

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


def policy_factory(policy: str | PolicyFactory) -> PolicyFactory:
    """Turns a ``--policy`` string into a policy factory; a factory is returned as is.

    Args:
        policy: A policy string (forms in the module docstring) or a ready factory.

    Returns:
        A picklable ``factory(seed) -> Policy`` (a chat model factory pickles because it holds
        only the model string).

    Raises:
        PolicyError: If the string is unknown or malformed, a skill is out of range, a script
            file is bad, or a model provider is unknown (listing the accepted forms), or its
            package is missing.
        DependencyNotInstalled: If a model's provider package is missing and an envharness
            extra installs it (``google_genai`` → ``envharness[google]``).

    Example:
        >>> policy_factory("oracle:0.5")
        OraclePolicyFactory(skill=0.5)
        >>> policy_factory("random")(seed=3).describe()
        'random'
    """
    if callable(policy) and not isinstance(policy, str):
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
        return ChatModelPolicyFactory(text)
    raise PolicyError(f"unknown policy {text!r}; {_accepted()}")
