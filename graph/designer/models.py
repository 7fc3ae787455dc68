"""Resolving the designer's and diagnoser's chat models, and tracing config for their runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from envharness.errors import DependencyNotInstalled, DesignerError, PolicyError
from envharness.rollout.chat import build_chat_model, chat_model_name

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["model_label", "resolve_model", "run_config"]


def resolve_model(spec: str | BaseChatModel, **model_kwargs: Any) -> BaseChatModel:
    """A chat model from a model string (``init_chat_model`` form) or a model object.

    Strings go through the same checks as the rollout's ``ChatModelPolicy``: the provider must be
    one ``init_chat_model`` knows and its package must be installed. ``"heuristic"`` is not a
    model: the rigger runs its built-in heuristic designer for it before calling this.

    Args:
        spec: ``"provider:model"`` (e.g. ``"google_genai:gemini-2.5-flash"``) or a LangChain chat
            model, returned as is.
        **model_kwargs: Extra ``init_chat_model`` arguments (with a string only), e.g.
            ``temperature=0``, or ``base_url="http://localhost:8000/v1"`` and ``api_key`` for an
            ``openai:NAME`` model on an OpenAI-compatible server (vLLM, llama.cpp, Ollama); the
            ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` environment variables do the same for
            every ``openai:`` model string, the CLI's included.

    Raises:
        DependencyNotInstalled: The provider's package is missing and an envharness extra
            installs it (``google_genai`` → ``envharness[google]``), or langchain is missing.
        DesignerError: ``"heuristic"``, an unknown provider, a missing package without an extra,
            a model that cannot be built (e.g. no API key), or an object that is not a chat model.

    Example:
        >>> from envharness.testing import FakeToolCallingModel
        >>> model = FakeToolCallingModel()
        >>> resolve_model(model) is model
        True
    """
    if isinstance(spec, str):
        if spec.strip().lower() == "heuristic":
            raise DesignerError(
                "'heuristic' is not a chat model: the rigger runs its built-in heuristic "
                "designer for it; give resolve_model a model string such as "
                "'google_genai:gemini-2.5-flash' or a chat model object"
            )
        try:
            return build_chat_model(spec, model_kwargs)
        except DependencyNotInstalled:
            raise
        except PolicyError as e:
            raise DesignerError(str(e)) from e
    if model_kwargs:
        raise DesignerError("model_kwargs apply to a model string, not to a model object")
    if not callable(getattr(spec, "invoke", None)) or not callable(
        getattr(spec, "bind_tools", None)
    ):
        raise DesignerError(
            "expected a LangChain chat model or a model string such as "
            f"'google_genai:gemini-2.5-flash', got {type(spec).__name__}"
        )
    return spec


def model_label(model: Any) -> str:
    """A short name for a model object (its model name, else its class name)."""
    return chat_model_name(model)


def run_config(
    config: Mapping[str, Any] | None,
    *,
    run_name: str,
    tags: Sequence[str],
    metadata: Mapping[str, Any],
    recursion_limit: int | None = None,
) -> dict[str, Any]:
    """``config`` with a default run name, and the given tags and metadata merged in.

    The caller's ``run_name`` and metadata values win; tags are the union, in order.

    Example:
        >>> config = run_config({"tags": ["mine"]}, run_name="envrigger.writer",
        ...                     tags=["envrigger"], metadata={"task_id": "t"})
        >>> config["run_name"], config["tags"], config["metadata"]
        ('envrigger.writer', ['mine', 'envrigger'], {'task_id': 't'})
    """
    merged = dict(config or {})
    merged["tags"] = list(dict.fromkeys([*(merged.get("tags") or ()), *tags]))
    merged.setdefault("run_name", run_name)
    merged["metadata"] = {**metadata, **(merged.get("metadata") or {})}
    if recursion_limit is not None:
        merged.setdefault("recursion_limit", recursion_limit)
    return merged
