"""``ChatModelPolicy``: any LangChain chat model as a black-box policy.

The model gets the bridge's tools through ``bind_tools`` and keeps one conversation per episode:
the instruction and the first observation as a human message, then each observation as the tool
result answering the model's previous call. Models without native tool calling reply with one
JSON object per turn instead. LangChain is imported only when a policy is built or started, so
``envharness.rollout`` imports without it.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from envharness.core import Action, ToolSpec
from envharness.errors import (
    DependencyNotInstalled,
    EnvHarnessError,
    InvalidActionError,
    PolicyError,
)
from envharness.parsing import parse_action

if TYPE_CHECKING:
    from langchain_core.messages import AIMessage, BaseMessage

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "ChatModelPolicy",
    "ChatModelPolicyFactory",
    "check_model_string",
    "model_providers",
]

DEFAULT_SYSTEM_PROMPT = """\
You are an agent acting in an environment to accomplish a task. You act only by calling the \
tools you are given: each call is one step, and the environment answers every step with an \
observation of what happened and what you see now.

- Make exactly one tool call per turn, then wait for its observation.
- Read each observation carefully; it is the only way to learn what your action did. When an \
action is rejected, the observation says why: fix the call instead of repeating it.
- Use the tool names and the argument formats exactly as the tools describe them.
- Your steps are limited, so think before each move and do not waste steps."""
"""The role description the policy's system prompt starts with unless one is given."""

_JSON_FORMAT = """\
You cannot call tools directly. To act, reply with exactly one JSON object of the form
{"tool": "<tool name>", "args": {<arguments>}}
and nothing else counts as an action. The tools and their arguments (JSON Schema):"""

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
_PROVIDER_EXTRAS = {"google_genai": "google"}
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


def _build_model(model: str, model_kwargs: Mapping[str, Any]) -> Any:
    provider, _ = check_model_string(model)
    _require_packages(model, provider)
    from langchain.chat_models import init_chat_model

    try:
        return init_chat_model(model, **dict(model_kwargs))
    except Exception as e:
        raise PolicyError(f"cannot build the chat model {model!r}: {type(e).__name__}: {e}") from e


def _object_name(model: Any) -> str:
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


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
        raise PolicyError(f"skills: expected a list of str, got {type(skills).__name__}")
    for skill in skills:
        if not isinstance(skill, str) or not skill.strip():
            raise PolicyError(f"skills: expected non-empty str entries, got {skill!r}")
    if not isinstance(tool_calling, bool):
        raise PolicyError(f"tool_calling: expected a bool, got {tool_calling!r}")
    return system_prompt, tuple(s.strip() for s in skills)


def _check_model_object(model: object) -> None:
    if not callable(getattr(model, "invoke", None)):
        raise PolicyError(
            "model: expected a LangChain chat model or a model string such as "
            f"'google_genai:gemini-2.5-flash', got {type(model).__name__}"
        )


def _find_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` that names a tool (else the first object at all)."""
    decoder = json.JSONDecoder()
    first: dict[str, Any] | None = None
    position = text.find("{")
    while position >= 0:
        try:
            value, _ = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            if "tool" in value or "name" in value:
                return value
            if first is None:
                first = value
        position = text.find("{", position + 1)
    return first


class ChatModelPolicy:
    """A LangChain chat model playing one episode through tool calls.

    In :meth:`start` the tools are bound with ``model.bind_tools`` (each
    :meth:`~envharness.core.ToolSpec.to_langchain`). The conversation is a system message (the
    role, ``system_prompt`` or :data:`DEFAULT_SYSTEM_PROMPT`, then the ``skills`` under "Useful
    skills"), a human message with the instruction and the first observation, and then each
    observation as a ``ToolMessage`` answering the model's last call. A reply with several calls
    plays the first; the others are answered "Ignored: one action per turn.".

    A reply without a tool call, a call to an unknown tool or with bad arguments raises
    :class:`~envharness.errors.InvalidActionError` with feedback for the model; the rollout loop
    records an invalid step and passes that feedback back to :meth:`act`, which sends it as the
    answer to the bad call (or as a human message when there was no call), so the conversation
    stays well-formed. A model without native tool calling (``bind_tools`` raises
    ``NotImplementedError``), or ``tool_calling=False``, is told to reply with one JSON object
    ``{"tool": ..., "args": {...}}`` per turn, read with :func:`~envharness.parsing.parse_action`.

    Args:
        model: A LangChain chat model, or a model string for ``init_chat_model`` such as
            ``"google_genai:gemini-2.5-flash"``, ``"openai:gpt-4o-mini"`` or ``"ollama:llama3"``.
        system_prompt: The role description; :data:`DEFAULT_SYSTEM_PROMPT` when ``None``.
        skills: Short texts appended to the system prompt under "Useful skills".
        tool_calling: ``False`` forces the JSON-in-text protocol.
        model_kwargs: Extra arguments for ``init_chat_model`` (with a model string only), e.g.
            ``{"temperature": 0}``.

    Raises:
        DependencyNotInstalled: If the model string's provider package has an envharness extra
            and is missing (``google_genai`` → ``envharness[google]``), or langchain is missing.
        PolicyError: If the provider is unknown, its package is missing (naming it), the model
            cannot be built, or an argument has the wrong type.

    Example:
        >>> from envharness.testing import FakeEnv, FakeToolCallingModel
        >>> model = FakeToolCallingModel(responses=[{"tool": "say", "args": {"text": "hello"}}])
        >>> env = FakeEnv()
        >>> policy = ChatModelPolicy(model)
        >>> policy.start(env.instruction, env.tools())
        >>> policy.act(env.reset()[0])
        Action(tool='say', args={'text': 'hello'})
        >>> policy.usage()["output_tokens"]
        5
    """

    def __init__(
        self,
        model: Any,
        system_prompt: str | None = None,
        skills: Sequence[str] | None = None,
        tool_calling: bool = True,
        *,
        model_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        self.system_prompt, self.skills = _check_options(system_prompt, skills, tool_calling)
        self.tool_calling = tool_calling
        if isinstance(model, str):
            self.model_name = model
            self.model = _build_model(model, model_kwargs or {})
        else:
            if model_kwargs:
                raise PolicyError("model_kwargs apply to a model string, not to a model object")
            _check_model_object(model)
            self.model_name = _object_name(model)
            self.model = model
        self.messages: list[BaseMessage] = []
        self.native_tool_calling = False
        self._bound: Any = None
        self._tools: list[ToolSpec] = []
        self._instruction = ""
        self._started = False
        self._first_turn = True
        self._reply_to: tuple[str, str] | None = None
        self._ignored: list[tuple[str, str]] = []
        self._last_invalid = False
        self._usage = dict.fromkeys(_USAGE_KEYS, 0)

    # -- the episode ------------------------------------------------------------------------------

    def start(self, instruction: str, tools: Sequence[ToolSpec]) -> None:
        """Binds the tools and opens the conversation with the system prompt.

        Raises:
            PolicyError: If there are no tools, or ``bind_tools`` fails for a reason other than
                the model lacking tool calling.
        """
        from langchain_core.messages import SystemMessage

        tools = list(tools)
        if not tools or not all(isinstance(tool, ToolSpec) for tool in tools):
            raise PolicyError("ChatModelPolicy: expected a non-empty list of ToolSpec objects")
        self._tools = tools
        self._bound = self.model
        self.native_tool_calling = False
        if self.tool_calling:
            try:
                self._bound = self.model.bind_tools([tool.to_langchain() for tool in tools])
                self.native_tool_calling = True
            except NotImplementedError:
                self._bound = self.model
            except Exception as e:
                raise PolicyError(
                    f"cannot bind the tools to the model {self.model_name}: {e}"
                ) from e
        self._instruction = str(instruction)
        self.messages = [SystemMessage(content=self._system_text())]
        self._started = True
        self._first_turn = True
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
        self.messages.extend(self._observation_messages(str(observation)))
        reply = self._invoke()
        self.messages.append(reply)
        self._count(reply)
        self._last_invalid = True
        if self.native_tool_calling:
            action = self._read_tool_calls(reply)
        else:
            action = self._read_json(reply)
        self._last_invalid = False
        return action

    def usage(self) -> dict[str, int]:
        """Tokens spent this episode, summed from each reply's ``usage_metadata``."""
        return dict(self._usage)

    def describe(self) -> str:
        """The model's name: the model string, or the model object's name."""
        return self.model_name

    # -- internals --------------------------------------------------------------------------------

    def _system_text(self) -> str:
        parts = [self.system_prompt if self.system_prompt is not None else DEFAULT_SYSTEM_PROMPT]
        if not self.native_tool_calling:
            listing = [_JSON_FORMAT]
            for tool in self._tools:
                schema = json.dumps(tool.parameters, separators=(",", ":"))
                listing.append(f"- {tool.name}: {tool.description}\n  arguments: {schema}")
            parts.append("\n".join(listing))
        if self.skills:
            parts.append("Useful skills:\n" + "\n".join(f"- {skill}" for skill in self.skills))
        return "\n\n".join(parts)

    def _observation_messages(self, observation: str) -> list[BaseMessage]:
        from langchain_core.messages import HumanMessage, ToolMessage

        if self._first_turn:
            self._first_turn = False
            text = f"Task: {self._instruction}\n\nObservation:\n{observation}"
            return [HumanMessage(content=text)]
        if self._reply_to is None:
            return [HumanMessage(content=f"Observation:\n{observation}")]
        call_id, name = self._reply_to
        status = "error" if self._last_invalid else "success"
        messages: list[BaseMessage] = [
            ToolMessage(content=observation, tool_call_id=call_id, name=name, status=status)
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
            reply = self._bound.invoke(list(self.messages))
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

    def _read_json(self, reply: AIMessage) -> Action:
        self._reply_to, self._ignored = None, []
        data = _find_json_object(reply.text)
        if data is None:
            raise InvalidActionError(
                "your reply contained no JSON object; to act, reply with exactly one JSON object "
                '{"tool": "<tool name>", "args": {<arguments>}}'
            )
        return parse_action(json.dumps(data), self._tools)


class ChatModelPolicyFactory:
    """Makes a :class:`ChatModelPolicy` per episode.

    With a model **string** the factory holds only strings, so it pickles and each worker process
    builds its own model (once, on first use). With a model **object** the factory shares that
    object between the episodes of one process: use it with a thread executor only — pickling
    it raises :class:`~envharness.errors.PolicyError` rather than copying a live client. The seed
    is not used (LLM sampling is not seeded).

    Args:
        model: A model string for ``init_chat_model`` or a LangChain chat model.
        system_prompt: As for :class:`ChatModelPolicy`.
        skills: As for :class:`ChatModelPolicy`.
        tool_calling: As for :class:`ChatModelPolicy`.
        model_kwargs: As for :class:`ChatModelPolicy`.

    Raises:
        DependencyNotInstalled: As for :class:`ChatModelPolicy` (checked here, before any
            worker starts; the model itself is built in the worker).
        PolicyError: As for :class:`ChatModelPolicy`.

    Example:
        >>> factory = ChatModelPolicyFactory("openai:gpt-4o-mini")  # doctest: +SKIP
        >>> factory.describe()  # doctest: +SKIP
        'openai:gpt-4o-mini'
    """

    def __init__(
        self,
        model: Any,
        system_prompt: str | None = None,
        skills: Sequence[str] | None = None,
        tool_calling: bool = True,
        *,
        model_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        self.system_prompt, self.skills = _check_options(system_prompt, skills, tool_calling)
        self.tool_calling = tool_calling
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

    def __call__(self, seed: int) -> ChatModelPolicy:
        """A fresh policy for one episode (the model is built on first use in this process)."""
        model = self.model
        if isinstance(model, str):
            if self._built is None:
                self._built = _build_model(model, self.model_kwargs)
            model = self._built
        policy = ChatModelPolicy(model, self.system_prompt, self.skills, self.tool_calling)
        policy.model_name = self.describe()
        return policy

    def describe(self) -> str:
        """The model string, or the model object's name."""
        return self.model if isinstance(self.model, str) else _object_name(self.model)

    def __getstate__(self) -> dict[str, Any]:
        if not isinstance(self.model, str):
            raise PolicyError(
                "a ChatModelPolicyFactory built on a model object cannot cross process "
                "boundaries; give it a model string (e.g. 'google_genai:gemini-2.5-flash') to "
                "run in worker processes, or run it with a thread executor"
            )
        state = dict(self.__dict__)
        state["_built"] = None
        return state

    def __repr__(self) -> str:
        return f"ChatModelPolicyFactory({self.describe()!r}, tool_calling={self.tool_calling})"
