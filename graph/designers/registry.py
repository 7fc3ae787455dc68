"""Designers by name: the built-ins, and any a third party registers."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from envharness.errors import RiggerError
from envharness.graph.designers.builtin import (
    HeuristicDesign,
    HeuristicDiagnosis,
    ModelDesign,
    ModelDiagnosis,
)
from envharness.graph.designers.protocol import Designer, Diagnoser

__all__ = ["register_designer", "registered_designers", "resolve_designer", "resolve_diagnoser"]

_REGISTRY: dict[str, Callable[[], Designer]] = {"heuristic": HeuristicDesign}
_LOCK = threading.Lock()


def register_designer(name: str, factory: Callable[[], Designer]) -> None:
    """Makes ``designer=name`` (and ``--designer name``) build ``factory()``.

    Raises:
        RiggerError: An empty name, a name already taken, or a factory that is not callable.
    """
    if not isinstance(name, str) or not name.strip():
        raise RiggerError(f"expected a designer name, got {name!r}")
    if not callable(factory):
        raise RiggerError(f"expected a callable factory for designer {name!r}, got {factory!r}")
    with _LOCK:
        if name in _REGISTRY:
            raise RiggerError(f"a designer named {name!r} is already registered")
        _REGISTRY[name] = factory


def registered_designers() -> list[str]:
    """The registered designer names."""
    with _LOCK:
        return sorted(_REGISTRY)


def resolve_designer(spec: Any, *, max_turns: int = 12) -> Designer:
    """The designer ``spec`` names: a :class:`Designer`, a registered name, or a chat model.

    A string that is not a registered name is a model for ``init_chat_model``
    (``google_genai:gemini-2.5-flash``); any other object that is not a :class:`Designer` is
    taken to be a LangChain chat model.
    """
    if spec is None:
        spec = "heuristic"
    if isinstance(spec, Designer):
        return spec
    if isinstance(spec, str):
        with _LOCK:
            factory = _REGISTRY.get(spec.strip().lower()) or _REGISTRY.get(spec.strip())
        if factory is not None:
            return factory()
    return ModelDesign(spec, max_turns=max_turns)


def resolve_diagnoser(spec: Any) -> Diagnoser:
    """The diagnoser ``spec`` names: a :class:`Diagnoser`, ``"heuristic"``, or a chat model."""
    if spec is None or (isinstance(spec, str) and spec.strip().lower() == "heuristic"):
        return HeuristicDiagnosis()
    if isinstance(spec, Diagnoser):
        return spec
    return ModelDiagnosis(spec)
