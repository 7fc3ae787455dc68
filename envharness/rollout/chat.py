"""``ChatModelPolicy``: any LangChain chat model as a black-box policy.

The model gets the bridge's tools through ``bind_tools`` (a call forced where the provider
supports it) and keeps one conversation per episode: the instruction and the first observation as
a human message, then each observation, headed ``Step k/N``, as the tool result answering the
model's previous call. Each call sends a bounded view of that conversation
(:mod:`~envharness.rollout.chat_context`). Models without native tool calling write one action
per reply instead, as a call (``combine(a="10", op="*", b="10")``) or a JSON object. LangChain is
imported only when a policy is built or started, so ``envharness.rollout`` imports without it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from envharness.core import Action, ToolSpec
from envharness.errors import (
    DependencyNotInstalled,
    EnvHarnessError,
    InvalidActionError,
    PolicyError,
)
from envharness.parsing import find_json_object, parse_action

if TYPE_CHECKING:
    from langchain_core.messages import AIMessage, BaseMessage

    from envharness.rollout.chat_context import ContextLimits
    from envharness.skills.records import Skill
    from envharness.skills.retrieval import SkillRetriever

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "DEFAULT_TOP_K",
    "SKILLS_TEMPLATE",
    "ChatModelPolicy",
    "ChatModelPolicyFactory",
    "build_chat_model",
    "chat_model_name",
    "check_model_string",
    "model_providers",
    "read_text_action",
]

DEFAULT_SYSTEM_PROMPT = """\
You are an agent acting in an environment to accomplish a task. Each action is one step, and \
the environment answers every step with an observation of what happened and what you see now.

- Read each observation carefully; it is the only way to learn what your action did. When an \
action is rejected, the answer says why: fix the action instead of repeating it.
- Use the tool names and the argument formats exactly as the tools describe them.
- Think before each move: every step counts, a rejected one included."""
"""The role description the policy's system prompt starts with unless one is given."""

_NATIVE_PROTOCOL = """\
Act by calling exactly one of your tools per reply; a reply without a tool call does nothing \
but use up a step."""

_TEXT_PROTOCOL = """\
Act by writing exactly one action per reply, in either form (the last one in your reply counts):
  tool_name(argument="value", ...)
  {"tool": "tool_name", "args": {"argument": "value"}}
The tools and their arguments (JSON Schema):"""

_BUDGET = """\
You have {max_steps} steps. Every reply uses one, a rejected or malformed action included, and \
the episode ends when they run out. Each observation starts with "Step k/{max_steps}": the step \
you are about to take."""

_NO_BUDGET = """\
Your steps are limited, and a rejected or malformed action uses one too. Each observation \
starts with "Step k": the step you are about to take."""

SKILLS_TEMPLATE = "Useful skills:\n{skills}"
"""The system prompt's last section: ``{skills}`` is one ``- `` item per skill shown.

A skill text is shown as given; a :class:`~envharness.skills.records.Skill` from a bank as its
:meth:`~envharness.skills.records.Skill.render` (headline, then numbered steps)."""

DEFAULT_TOP_K = 3
"""How many skills a bank or a retriever gives an episode unless ``top_k`` says otherwise."""

_FORCED_CHOICE = "any"  # LangChain's provider-neutral "call some tool" (OpenAI: "required")
_FENCE = re.compile(r"^\s*```")
_LABEL = re.compile(r"^\s*(?:[A-Za-z ]{1,20}:\s*)?`*(.*?)`*\s*$")

_IGNORED = "Ignored: one action per turn."
_USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens")

# Providers init_chat_model knows, with the module each needs (langchain's registry is merged in
# when langchain is installed, so newer providers are accepted too).
_PROVIDER_MODULES: dict[str, str] = {
    "anthropic": "langchain_anthropic",
    "anthropic_bedrock": "langchain_aws",
    "azure_ai": "langchain_azure_ai",
    "azure_openai": "langchain_openai",
    "baseten": "langchain_baseten",
    "bedrock": "langchain_aws",
    "bedrock_converse": "langchain_aws",
    "cohere": "langchain_cohere",
    "deepseek": "langchain_deepseek",
    "fireworks": "langchain_fireworks",
    "google_anthropic_vertex": "langchain_google_vertexai",
    "google_genai": "langchain_google_genai",
    "google_vertexai": "langchain_google_vertexai",
    "groq": "langchain_groq",
    "huggingface": "langchain_huggingface",
    "ibm": "langchain_ibm",
    "litellm": "langchain_litellm",
    "mistralai": "langchain_mistralai",
    "nvidia": "langchain_nvidia_ai_endpoints",
    "ollama": "langchain_ollama",
    "openai": "langchain_openai",
    "perplexity": "langchain_perplexity",
    "together": "langchain_together",
    "upstage": "langchain_upstage",
    "xai": "langchain_xai",
}
# Providers with an envharness extra that installs their package.
_PROVIDER_EXTRAS = {"google_genai": "google", "openai": "openai"}
# Fallback packages init_chat_model also accepts for a provider.
_PROVIDER_FALLBACKS = {"ollama": "langchain_community"}


@cache
def model_providers() -> dict[str, str]:
    """The model providers accepted in ``"provider:model"`` strings, with their pip packages.

    Example:
        >>> model_providers()["google_genai"]
        'langchain-google-genai'
    """
    modules = dict(_PROVIDER_MODULES)
    if importlib.util.find_spec("langchain") is not None:
        try:
            from langchain.chat_models import base
        except ImportError:
            base = None
        registry = getattr(base, "_BUILTIN_PROVIDERS", None)
        if isinstance(registry, Mapping):
            for provider, entry in registry.items():
                if isinstance(entry, tuple) and entry and isinstance(entry[0], str):
                    modules.setdefault(provider, entry[0])
    return {
        provider: module.split(".")[0].replace("_", "-")
        for provider, module in sorted(modules.items())
    }


def check_model_string(model: object) -> tuple[str, str]:
    """Splits ``"provider:model"`` and checks that the provider is one ``init_chat_model`` knows.

    A string without ``:`` is returned with an empty provider: ``init_chat_model`` infers it
    from the name (``"gpt-4o-mini"`` → OpenAI).

    Returns:
        ``(provider, model_name)``.

    Raises:
        PolicyError: If ``model`` is not a non-empty str, or its provider is unknown.

    Example:
        >>> check_model_string("google_genai:gemini-2.5-flash")
        ('google_genai', 'gemini-2.5-flash')
    """
    if not isinstance(model, str) or not model.strip():
        raise PolicyError(f"expected a model string such as 'openai:gpt-4o-mini', got {model!r}")
    if ":" not in model:
        return "", model
    provider, name = model.split(":", 1)
    providers = model_providers()
    if provider not in providers:
        raise PolicyError(
            f"unknown model provider {provider!r} in {model!r}; write 'PROVIDER:MODEL' with one "
            f"of these providers: {', '.join(providers)}"
        )
    if not name:
        raise PolicyError(f"no model name after the provider in {model!r}")
    return provider, name


def _require_packages(model: str, provider: str) -> None:
    """Fails with the package (and extra) to install when ``model`` cannot be built here."""
    if importlib.util.find_spec("langchain") is None:
        raise DependencyNotInstalled("langchain", "rigger", purpose=f"the model {model!r}")
    if not provider:
        return
    package = model_providers()[provider]
    module = package.replace("-", "_")
    fallback = _PROVIDER_FALLBACKS.get(provider)
    if importlib.util.find_spec(module) is not None:
        return
    if fallback is not None and importlib.util.find_spec(fallback) is not None:
        return
    if provider in _PROVIDER_EXTRAS:
        raise DependencyNotInstalled(
            package, _PROVIDER_EXTRAS[provider], purpose=f"the model {model!r}"
        )
    raise PolicyError(
        f"the model {model!r} needs the package {package!r}, which is not installed; "
        f"install it with: pip install {package}"
    )


def build_chat_model(model: str, model_kwargs: Mapping[str, Any] | None = None) -> Any:
    """A LangChain chat model from a ``PROVIDER:MODEL`` string (``init_chat_model``).

    Raises:
        PolicyError: If the string is malformed, its provider unknown, or the model cannot be
            built.
        DependencyNotInstalled: If the provider's package is missing (names the extra).
    """
    return _build_model(model, model_kwargs or {})


def _build_model(model: str, model_kwargs: Mapping[str, Any]) -> Any:
    provider, _ = check_model_string(model)
    _require_packages(model, provider)
    from langchain.chat_models import init_chat_model

    try:
        return init_chat_model(model, **dict(model_kwargs))
    except Exception as e:
        raise PolicyError(f"cannot build the chat model {model!r}: {type(e).__name__}: {e}") from e


def chat_model_name(model: Any) -> str:
    """A chat model object's name: its ``model_name``, ``model`` or ``model_id``, else its type."""
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def _check_limit(name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PolicyError(f"{name}: expected a positive int or None, got {value!r}")
    return value


def _check_context(
    force_tool_call: object, history_turns: object, max_context_tokens: object
) -> ContextLimits:
    from envharness.rollout.chat_context import ContextLimits

    if not isinstance(force_tool_call, bool):
        raise PolicyError(f"force_tool_call: expected a bool, got {force_tool_call!r}")
    return ContextLimits(
        _check_limit("history_turns", history_turns),
        _check_limit("max_context_tokens", max_context_tokens),
    )


def _check_options(
    system_prompt: object, skills: object, tool_calling: object
) -> tuple[str | None, tuple[str, ...]]:
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise PolicyError(
            f"system_prompt: expected a str or None, got {type(system_prompt).__name__}"
        )
    if skills is None:
        skills = ()
    if isinstance(skills, str) or not isinstance(skills, Sequence):
        hint = " (a bank file? pass it as a pathlib.Path)" if isinstance(skills, str) else ""
        raise PolicyError(
            f"skills: expected a list of str, got {type(skills).__name__}{hint}; or a skill bank "
            "(Skill objects, a SkillBank, the Path of a JSONL bank) or a SkillRetriever"
        )
    for skill in skills:
        if not isinstance(skill, str) or not skill.strip():
            raise PolicyError(f"skills: expected non-empty str entries, got {skill!r}")
    if not isinstance(tool_calling, bool):
        raise PolicyError(f"tool_calling: expected a bool, got {tool_calling!r}")
    return system_prompt, tuple(s.strip() for s in skills)


def _check_top_k(top_k: object) -> int:
    if top_k is None:
        return DEFAULT_TOP_K
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise PolicyError(f"top_k: expected a positive int (skills per episode), got {top_k!r}")
    return top_k


def _is_retriever(skills: object) -> bool:
    return callable(getattr(skills, "retrieve", None))


def _skill_bank(skills: object) -> list[Skill] | None:
    """The skills of ``skills`` when it is a bank (an iterable of Skill), else ``None``."""
    from envharness.skills.records import Skill

    if skills is None or isinstance(skills, str | bytes | Mapping) or _is_retriever(skills):
        return None
    if not isinstance(skills, Iterable):
        return None
    items = list(skills)
    if any(isinstance(item, Skill) for item in items):
        if not all(isinstance(item, Skill) for item in items):
            raise PolicyError(
                "skills: expected all entries to be str or all to be Skill, not a mix"
            )
        return items
    if not items and not isinstance(skills, Sequence):  # an empty SkillBank
        return items
    return None


def _retriever_for(skills: object) -> SkillRetriever | None:
    """A retriever for a bank (a Path, Skill objects, a SkillBank) or a retriever as is."""
    from envharness.skills.retrieval import BM25Retriever

    if _is_retriever(skills):
        return skills  # type: ignore[return-value]
    if isinstance(skills, os.PathLike):
        return BM25Retriever(os.fspath(skills))
    bank = _skill_bank(skills)
    return None if bank is None else BM25Retriever(bank)


def _skills_label(retriever: object, top_k: int) -> str:
    """``+skills:METHOD@DIGEST:kK``: what a policy's description adds for its skill bank."""
    describe = getattr(retriever, "describe", None)
    name = describe() if callable(describe) else None
    if not isinstance(name, str) or not name:
        name = type(retriever).__name__
    return f"+skills:{name}:k{top_k}"


def _retrieve(retriever: SkillRetriever, instruction: str, top_k: int) -> list[Skill]:
    from envharness.skills.records import Skill, SkillError

    try:
        shown = retriever.retrieve(instruction, top_k)
    except SkillError:
        raise
    except Exception as e:
        raise PolicyError(f"skill retrieval failed: {type(e).__name__}: {e}") from e
    if not isinstance(shown, Sequence) or not all(isinstance(s, Skill) for s in shown):
        raise PolicyError(
            f"skill retrieval: {type(retriever).__name__}.retrieve() must return a list of "
            f"Skill, got {type(shown).__name__}"
        )
    return list(shown)[:top_k]


def _check_model_object(model: object) -> None:
    if not callable(getattr(model, "invoke", None)):
        raise PolicyError(
            "model: expected a LangChain chat model or a model string such as "
            f"'google_genai:gemini-2.5-flash', got {type(model).__name__}"
        )


def _action_lines(text: str, tools: Sequence[ToolSpec]) -> list[str]:
    """The lines of ``text`` that start with a tool's name, labels and backticks removed."""
    names = {tool.name for tool in tools}
    lines = []
    for raw in text.splitlines():
        if _FENCE.match(raw):
            continue
        match = _LABEL.match(raw)
        line = (match.group(1) if match else raw).strip()
        head = re.split(r"[\s(]", line, maxsplit=1)[0] if line else ""
        if head in names:
            lines.append(line)
    return lines


def read_text_action(text: str, tools: Sequence[ToolSpec]) -> Action:
    r"""Reads a text-only model's reply as one action, with the CLI ``play`` parser.

    A JSON object naming a tool wins; else the last line that starts with a tool's name (a call
    ``combine(a="10", op="*", b="10")`` or words ``combine 10 * 10``; labels such as ``Action:``,
    backticks and code fences are ignored); else a one-line reply as a whole (``go north`` for a
    tool with one string argument).

    Raises:
        InvalidActionError: If the reply holds no action, or its action does not fit the tools.

    Example:
        >>> combine = ToolSpec("combine", "", {"type": "object", "properties": {
        ...     "a": {"type": "string"}, "op": {"type": "string"}, "b": {"type": "string"}},
        ...     "required": ["a", "op", "b"]})
        >>> read_text_action('Multiply first.\nAction: combine(a="10", op="*", b="10")', [combine])
        Action(tool='combine', args={'a': '10', 'op': '*', 'b': '10'})
    """
    data = find_json_object(text, prefer=("tool", "name"))
    if data is not None and ("tool" in data or "name" in data):
        return parse_action(json.dumps(data), tools)
    lines = _action_lines(text, tools)
    if lines:
        return parse_action(lines[-1], tools)
    body = [line for line in text.splitlines() if line.strip() and not _FENCE.match(line)]
    if len(body) == 1:
        return parse_action(body[0], tools)
    if data is not None:
        return parse_action(json.dumps(data), tools)
    names = ", ".join(tool.name for tool in tools)
    raise InvalidActionError(
        f"your reply holds no action; end it with one call to one of the tools ({names}), "
        'e.g. tool_name(argument="value")'
    )


class ChatModelPolicy:
    """A LangChain chat model playing one episode through tool calls.

    In :meth:`start` the tools are bound with ``model.bind_tools`` (each
    :meth:`~envharness.core.ToolSpec.to_langchain`), with ``tool_choice="any"`` so that every
    reply is a call where the provider supports it (a model whose ``bind_tools`` refuses the
    argument is bound without it). The system prompt is the role (``system_prompt`` or
    :data:`DEFAULT_SYSTEM_PROMPT`), how to act, the step budget when :meth:`start` gets
    ``max_steps`` (and that rejected actions use steps too), and the ``skills`` under "Useful
    skills". The first human message is the instruction and the first observation; each later
    observation answers the model's last call as a ``ToolMessage``. Every observation is headed
    ``Step k/N``. A reply with several calls plays the first; the others are answered "Ignored:
    one action per turn.".

    Each call sends a bounded view of the conversation (:func:`~envharness.rollout.chat_context.
    bounded_context`): the system prompt, the first message and the last ``history_turns`` turns
    in full, older observations as one-line stubs, and, past ``max_context_tokens``, the oldest
    turns left out whole. :attr:`messages` keeps everything.

    A reply without a tool call, a call to an unknown tool or with bad arguments raises
    :class:`~envharness.errors.InvalidActionError` with feedback for the model; the rollout loop
    records an invalid step and passes that feedback back to :meth:`act`, which sends it as the
    answer to the bad call (``status="error"``; the text itself says "Error", since some
    providers drop the status) or as a human message when there was no call, so the conversation
    stays well-formed. A model without native tool calling (``bind_tools`` raises
    ``NotImplementedError``), or ``tool_calling=False``, writes one action per reply, read with
    :func:`read_text_action` (a call, shell-like words, or a JSON object).

    Args:
        model: A LangChain chat model, or a model string for ``init_chat_model`` such as
            ``"google_genai:gemini-2.5-flash"``, ``"openai:gpt-4o-mini"`` or ``"ollama:llama3"``.
        system_prompt: The role description; :data:`DEFAULT_SYSTEM_PROMPT` when ``None``.
        skills: Short texts shown in every episode under "Useful skills"; or a skill bank (Skill
            objects, a ``SkillBank``, the ``pathlib.Path`` of a JSONL bank), searched with
            :class:`~envharness.skills.retrieval.BM25Retriever`; or any
            :class:`~envharness.skills.retrieval.SkillRetriever`. A bank or a retriever gives
            each episode the ``top_k`` skills for its instruction, in :meth:`start`
            (:data:`SKILLS_TEMPLATE`); :meth:`skills_shown` reports them for the trajectory.
        tool_calling: ``False`` uses the text protocol even when the model can call tools.
        force_tool_call: Bind the tools with ``tool_choice="any"`` (when the provider accepts it).
        history_turns: Turns sent in full; older observations become stubs (``None``: all).
        max_context_tokens: A budget for each call's messages (characters ÷ 4; ``None``: none).
        model_kwargs: Extra arguments for ``init_chat_model`` (with a model string only), e.g.
            ``{"temperature": 0}``.
        top_k: Skills per episode from a bank or a retriever (:data:`DEFAULT_TOP_K` when
            ``None``); a list of texts is shown whole.

    Raises:
        DependencyNotInstalled: If the model string's provider package has an envharness extra
            and is missing (``google_genai`` → ``envharness[google]``), or langchain is missing,
            or a bank is given and ``bm25s`` is missing (``envharness[skills]``).
        PolicyError: If the provider is unknown, its package is missing (naming it), the model
            cannot be built, or an argument has the wrong type.
        SkillError: If the bank is not a skill bank (in :meth:`start`: if retrieval fails so).

    Example:
        >>> from envharness.testing import FakeEnv, FakeToolCallingModel
        >>> model = FakeToolCallingModel(responses=[{"tool": "say", "args": {"text": "hello"}}])
        >>> env = FakeEnv()
        >>> policy = ChatModelPolicy(model)
        >>> policy.start(env.instruction, env.tools(), max_steps=10)
        >>> policy.act(env.reset()[0])
        Action(tool='say', args={'text': 'hello'})
        >>> model.tool_choice, policy.usage()["output_tokens"]
        ('any', 5)
    """

    def __init__(
        self,
        model: Any,
        system_prompt: str | None = None,
        skills: Sequence[str] | Iterable[Skill] | os.PathLike[str] | SkillRetriever | None = None,
        tool_calling: bool = True,
        *,
        force_tool_call: bool = True,
        history_turns: int | None = 5,
        max_context_tokens: int | None = None,
        model_kwargs: Mapping[str, Any] | None = None,
        top_k: int | None = None,
    ) -> None:
        self.top_k = _check_top_k(top_k)
        self.retriever: SkillRetriever | None = _retriever_for(skills)
        texts = None if self.retriever is not None else skills
        self.system_prompt, self.skills = _check_options(system_prompt, texts, tool_calling)
        self._shown: list[str | Skill] = []
        self.limits = _check_context(force_tool_call, history_turns, max_context_tokens)
        self.tool_calling = tool_calling
        self.force_tool_call = force_tool_call
        if isinstance(model, str):
            self.model_name = model
            self.model = _build_model(model, model_kwargs or {})
        else:
            if model_kwargs:
                raise PolicyError("model_kwargs apply to a model string, not to a model object")
            _check_model_object(model)
            self.model_name = chat_model_name(model)
            self.model = model
        self.messages: list[BaseMessage] = []
        self.native_tool_calling = False
        self.tool_choice: str | None = None
        self.max_steps: int | None = None
        self._bound: Any = None
        self._tools: list[ToolSpec] = []
        self._instruction = ""
        self._started = False
        self._step = 0
        self._reply_to: tuple[str, str] | None = None
        self._ignored: list[tuple[str, str]] = []
        self._last_invalid = False
        self._usage = dict.fromkeys(_USAGE_KEYS, 0)

    # -- the episode ------------------------------------------------------------------------------

    def start(
        self, instruction: str, tools: Sequence[ToolSpec], *, max_steps: int | None = None
    ) -> None:
        """Binds the tools, retrieves the episode's skills, and opens the conversation.

        Args:
            instruction: The task's instruction (also the query for the skill bank).
            tools: The tools the model may call.
            max_steps: The step budget, stated in the system prompt and in every ``Step k/N``.

        Raises:
            PolicyError: If there are no tools, ``max_steps`` is not a positive int,
                ``bind_tools`` fails for a reason other than the model lacking tool calling, or
                the retriever fails or returns something other than a list of Skill.
        """
        from langchain_core.messages import SystemMessage

        tools = list(tools)
        if not tools or not all(isinstance(tool, ToolSpec) for tool in tools):
            raise PolicyError("ChatModelPolicy: expected a non-empty list of ToolSpec objects")
        self.max_steps = _check_limit("max_steps", max_steps)
        self._tools = tools
        self._bound, self.tool_choice = self.model, None
        self.native_tool_calling = False
        if self.tool_calling:
            self._bind([tool.to_langchain() for tool in tools])
        self._instruction = str(instruction)
        if self.retriever is not None:
            self._shown = list(_retrieve(self.retriever, self._instruction, self.top_k))
        else:
            self._shown = list(self.skills)
        self.messages = [SystemMessage(content=self._system_text())]
        self._started = True
        self._step = 0
        self._reply_to = None
        self._ignored = []
        self._last_invalid = False
        self._usage = dict.fromkeys(_USAGE_KEYS, 0)

    def act(self, observation: str) -> Action:
        """Sends ``observation`` to the model and returns the action its reply calls.

        Raises:
            InvalidActionError: If the reply calls no tool, an unknown tool, or has bad
                arguments (the message is feedback for the model).
            PolicyError: Before :meth:`start`, or when the model call fails.
        """
        if not self._started:
            raise PolicyError("call start() before act(): the policy needs the tools")
        self._step += 1
        self.messages.extend(self._observation_messages(str(observation)))
        reply = self._invoke()
        self.messages.append(reply)
        self._count(reply)
        self._last_invalid = True
        if self.native_tool_calling:
            action = self._read_tool_calls(reply)
        else:
            self._reply_to, self._ignored = None, []
            action = read_text_action(reply.text, self._tools)
        self._last_invalid = False
        return action

    def context(self) -> list[BaseMessage]:
        """The messages the next call sends: the bounded view of :attr:`messages`."""
        from envharness.rollout.chat_context import bounded_context

        return bounded_context(self.messages, self.limits)

    def usage(self) -> dict[str, int]:
        """Tokens spent this episode, summed from each reply's ``usage_metadata``."""
        return dict(self._usage)

    def skills_shown(self) -> list[dict[str, Any]]:
        """The skills in this episode's system prompt, for the trajectory's ``skills`` field.

        A retrieved skill is its :meth:`~envharness.skills.records.Skill.to_dict`; a skill text
        is ``{"text": TEXT}``. Empty before :meth:`start`.
        """
        return [
            {"text": skill} if isinstance(skill, str) else skill.to_dict() for skill in self._shown
        ]

    def describe(self) -> str:
        """The model's name (the model string, or the model object's name).

        With a skill bank or a retriever, ``+skills:METHOD@DIGEST:kK`` follows
        (``openai:gpt-4o-mini+skills:bm25@1a2b3c4d:k3``), so runs with and without skills, or
        with different banks, are stored and compared apart.
        """
        if self.retriever is None:
            return self.model_name
        return self.model_name + _skills_label(self.retriever, self.top_k)

    # -- internals --------------------------------------------------------------------------------

    def _bind(self, tools: list[dict[str, Any]]) -> None:
        """Binds ``tools``, forcing a call when the model accepts it; text protocol otherwise."""
        choices = [_FORCED_CHOICE, None] if self.force_tool_call else [None]
        for choice in choices:
            extra = {} if choice is None else {"tool_choice": choice}
            try:
                self._bound = self.model.bind_tools(tools, **extra)
            except NotImplementedError:
                continue
            except (TypeError, ValueError) as e:
                if choice is not None:
                    continue
                raise PolicyError(
                    f"cannot bind the tools to the model {self.model_name}: {e}"
                ) from e
            except Exception as e:
                raise PolicyError(
                    f"cannot bind the tools to the model {self.model_name}: {e}"
                ) from e
            self.native_tool_calling, self.tool_choice = True, choice
            return
        self._bound = self.model

    def _system_text(self) -> str:
        parts = [self.system_prompt if self.system_prompt is not None else DEFAULT_SYSTEM_PROMPT]
        if self.native_tool_calling:
            parts.append(_NATIVE_PROTOCOL)
        else:
            listing = [_TEXT_PROTOCOL]
            for tool in self._tools:
                schema = json.dumps(tool.parameters, separators=(",", ":"))
                listing.append(f"- {tool.name}: {tool.description}\n  arguments: {schema}")
            parts.append("\n".join(listing))
        if self.max_steps is None:
            parts.append(_NO_BUDGET)
        else:
            parts.append(_BUDGET.format(max_steps=self.max_steps))
        if self._shown:
            items = [f"- {s if isinstance(s, str) else s.render()}" for s in self._shown]
            parts.append(SKILLS_TEMPLATE.format(skills="\n".join(items)))
        return "\n\n".join(parts)

    def _headed(self, observation: str) -> str:
        budget = "" if self.max_steps is None else f"/{self.max_steps}"
        return f"Step {self._step}{budget}\n{observation}"

    def _observation_messages(self, observation: str) -> list[BaseMessage]:
        from langchain_core.messages import HumanMessage, ToolMessage

        text = self._headed(observation)
        if self._step == 1:
            return [HumanMessage(content=f"{self._instruction.strip()}\n\n{text}")]
        if self._reply_to is None:
            return [HumanMessage(content=text)]
        call_id, name = self._reply_to
        status = "error" if self._last_invalid else "success"
        messages: list[BaseMessage] = [
            ToolMessage(content=text, tool_call_id=call_id, name=name, status=status)
        ]
        messages.extend(
            ToolMessage(content=_IGNORED, tool_call_id=other_id, name=other, status="error")
            for other_id, other in self._ignored
        )
        self._reply_to, self._ignored = None, []
        return messages

    def _invoke(self) -> AIMessage:
        from langchain_core.messages import AIMessage

        try:
            reply = self._bound.invoke(self.context())
        except EnvHarnessError:
            raise
        except Exception as e:
            raise PolicyError(
                f"the chat model {self.model_name} failed: {type(e).__name__}: {e}"
            ) from e
        if isinstance(reply, str):
            reply = AIMessage(content=reply)
        if not isinstance(reply, AIMessage):
            raise PolicyError(
                f"the chat model {self.model_name} returned {type(reply).__name__}, "
                "expected an AIMessage"
            )
        return reply

    def _count(self, reply: AIMessage) -> None:
        metadata = reply.usage_metadata or {}
        inputs = int(metadata.get("input_tokens", 0) or 0)
        outputs = int(metadata.get("output_tokens", 0) or 0)
        total = int(metadata.get("total_tokens", 0) or 0) or inputs + outputs
        self._usage["input_tokens"] += inputs
        self._usage["output_tokens"] += outputs
        self._usage["total_tokens"] += total

    def _read_tool_calls(self, reply: AIMessage) -> Action:
        calls = [(c.get("id"), c.get("name"), c.get("args"), None) for c in reply.tool_calls]
        calls += [
            (c.get("id"), c.get("name"), c.get("args"), c.get("error") or "malformed call")
            for c in reply.invalid_tool_calls
        ]
        if not calls:
            self._reply_to, self._ignored = None, []
            names = ", ".join(tool.name for tool in self._tools)
            raise InvalidActionError(
                f"your reply called no tool; to act, call exactly one of the tools ({names})"
            )
        (call_id, name, args, error), rest = calls[0], calls[1:]
        self._reply_to = (str(call_id or ""), str(name or ""))
        self._ignored = [(str(other_id or ""), str(other or "")) for other_id, other, _, _ in rest]
        if error is not None:
            raise InvalidActionError(
                f"the arguments of your call are not valid JSON ({error}): {args!r}",
                tool=str(name) if name else None,
            )
        call = json.dumps({"tool": name, "args": args or {}}, default=str)
        return parse_action(call, self._tools)


class ChatModelPolicyFactory:
    """Makes a :class:`ChatModelPolicy` per episode.

    With a model **string** the factory holds only strings, so it pickles and each worker process
    builds its own model (once, on first use). With a model **object** the factory shares that
    object between the episodes of one process: use it with a thread executor only — pickling
    it raises :class:`~envharness.errors.PolicyError` rather than copying a live client. The seed
    is not used (LLM sampling is not seeded).

    A skill bank is read here, once (so a file that is not a bank fails before any worker
    starts), and indexed once per process. A bank given as a ``pathlib.Path`` pickles as the path
    (each worker reads it again and checks that it has not changed); Skill objects pickle as
    they are; a retriever object is shared like a model object, for thread executors only.

    Args:
        model: A model string for ``init_chat_model`` or a LangChain chat model.
        system_prompt: As for :class:`ChatModelPolicy`.
        skills: As for :class:`ChatModelPolicy`.
        tool_calling: As for :class:`ChatModelPolicy`.
        force_tool_call: As for :class:`ChatModelPolicy`.
        history_turns: As for :class:`ChatModelPolicy`.
        max_context_tokens: As for :class:`ChatModelPolicy`.
        model_kwargs: As for :class:`ChatModelPolicy`.
        top_k: As for :class:`ChatModelPolicy`.

    Raises:
        DependencyNotInstalled: As for :class:`ChatModelPolicy` (checked here, before any
            worker starts; the model itself is built in the worker).
        PolicyError: As for :class:`ChatModelPolicy`.
        SkillError: If the bank is not a skill bank.

    Example:
        >>> factory = ChatModelPolicyFactory("openai:gpt-4o-mini")  # doctest: +SKIP
        >>> factory.describe()  # doctest: +SKIP
        'openai:gpt-4o-mini'
    """

    def __init__(
        self,
        model: Any,
        system_prompt: str | None = None,
        skills: Sequence[str] | Iterable[Skill] | os.PathLike[str] | SkillRetriever | None = None,
        tool_calling: bool = True,
        *,
        force_tool_call: bool = True,
        history_turns: int | None = 5,
        max_context_tokens: int | None = None,
        model_kwargs: Mapping[str, Any] | None = None,
        top_k: int | None = None,
    ) -> None:
        self.top_k = _check_top_k(top_k)
        self.bank_path: str | None = None
        self.bank: tuple[Skill, ...] | None = None
        self.retriever: SkillRetriever | None = None
        if isinstance(skills, os.PathLike):
            self.bank_path = os.fspath(skills)
        elif _is_retriever(skills):
            self.retriever = skills  # type: ignore[assignment]
        else:
            bank = _skill_bank(skills)
            self.bank = None if bank is None else tuple(bank)
        has_bank = any(x is not None for x in (self.bank_path, self.bank, self.retriever))
        texts = None if has_bank else skills
        self.system_prompt, self.skills = _check_options(system_prompt, texts, tool_calling)
        self.limits = _check_context(force_tool_call, history_turns, max_context_tokens)
        self.tool_calling = tool_calling
        self.force_tool_call = force_tool_call
        self.model_kwargs = dict(model_kwargs or {})
        if isinstance(model, str):
            provider, _ = check_model_string(model)
            _require_packages(model, provider)
        else:
            if model_kwargs:
                raise PolicyError("model_kwargs apply to a model string, not to a model object")
            _check_model_object(model)
        self.model = model
        self._built: Any = None
        self._index: SkillRetriever | None = None
        self._skills_label = ""
        if has_bank:
            self._skills_label = _skills_label(self.skill_retriever(), self.top_k)

    def __call__(self, seed: int) -> ChatModelPolicy:
        """A fresh policy for one episode (the model is built on first use in this process)."""
        model = self.model
        if isinstance(model, str):
            if self._built is None:
                self._built = _build_model(model, self.model_kwargs)
            model = self._built
        retriever = self.skill_retriever()
        policy = ChatModelPolicy(
            model,
            self.system_prompt,
            self.skills if retriever is None else retriever,
            self.tool_calling,
            force_tool_call=self.force_tool_call,
            history_turns=self.limits.turns,
            max_context_tokens=self.limits.max_tokens,
            top_k=self.top_k,
        )
        policy.model_name = self._model_description()
        return policy

    def with_skills(
        self,
        skills: Iterable[Skill] | os.PathLike[str] | SkillRetriever | None,
        top_k: int | None = None,
    ) -> ChatModelPolicyFactory:
        """A factory like this one (same model and options) that shows ``skills`` instead.

        Args:
            skills: A bank (as for the constructor), or ``None`` for no skills.
            top_k: Skills per episode (this factory's when ``None``).

        Raises:
            SkillError: If ``skills`` is not a skill bank.
        """
        return ChatModelPolicyFactory(
            self.model,
            self.system_prompt,
            skills,
            self.tool_calling,
            force_tool_call=self.force_tool_call,
            history_turns=self.limits.turns,
            max_context_tokens=self.limits.max_tokens,
            model_kwargs=self.model_kwargs or None,
            top_k=self.top_k if top_k is None else top_k,
        )

    def describe(self) -> str:
        """The model string or the model object's name, and the skill bank's label if any.

        The label is as for :meth:`ChatModelPolicy.describe` (``+skills:bm25@DIGEST:k3``).
        """
        return self._model_description() + self._skills_label

    def _model_description(self) -> str:
        return self.model if isinstance(self.model, str) else chat_model_name(self.model)

    def skill_retriever(self) -> SkillRetriever | None:
        """The policies' retriever, built once per process (``None`` without a bank).

        Raises:
            PolicyError: If a bank file changed since the factory read it.
        """
        if self.retriever is not None:
            return self.retriever
        if self._index is None and (self.bank_path is not None or self.bank is not None):
            from envharness.skills.retrieval import BM25Retriever

            source: Any = self.bank_path if self.bank_path is not None else self.bank
            index = BM25Retriever(source)
            label = _skills_label(index, self.top_k)
            if self._skills_label and label != self._skills_label:
                raise PolicyError(
                    f"the skill bank {self.bank_path!r} changed since this policy factory read "
                    f"it ({self._skills_label[1:]} then, {label[1:]} now); the episodes of one "
                    "run must see the same bank"
                )
            self._index = index
        return self._index

    def __getstate__(self) -> dict[str, Any]:
        if not isinstance(self.model, str):
            raise PolicyError(
                "a ChatModelPolicyFactory built on a model object cannot cross process "
                "boundaries; give it a model string (e.g. 'google_genai:gemini-2.5-flash') to "
                "run in worker processes, or run it with a thread executor"
            )
        if self.retriever is not None:
            raise PolicyError(
                "a ChatModelPolicyFactory built on a retriever object "
                f"({type(self.retriever).__name__}) cannot cross process boundaries; give it the "
                "bank's path (pathlib.Path) or its Skill objects to run in worker processes "
                "(they are searched with BM25), or run it with a thread executor"
            )
        state = dict(self.__dict__)
        state["_built"] = None
        state["_index"] = None
        return state

    def __repr__(self) -> str:
        return f"ChatModelPolicyFactory({self.describe()!r}, tool_calling={self.tool_calling})"
