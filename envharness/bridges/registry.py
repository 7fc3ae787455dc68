"""The bridge registry: built-in bridges by name, third-party ones through entry points.

A bridge is an :class:`~envharness.core.ActionableEnv` subclass with two class-level entry points:
``Bridge(task_id=..., **options)`` builds one task, and ``Bridge.list_tasks(split=..., **options)``
lists task ids. Third-party packages register theirs under the entry-point group
``envharness.bridges`` (``name = "package.module:BridgeClass"``).
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

from envharness.core import ActionableEnv
from envharness.errors import BridgeError, UnknownBridgeError

__all__ = [
    "ENTRY_POINT_GROUP",
    "get_bridge",
    "list_bridges",
    "list_tasks",
    "load_bridge",
    "register",
]

ENTRY_POINT_GROUP = "envharness.bridges"

# name -> "module:Class" (imported lazily, so optional dependencies load only when used)
_BUILTIN: dict[str, str] = {
    "toy24": "envharness.bridges.toy24:Toy24Env",
    "textworld": "envharness.bridges.textworld:TextWorldEnv",
    "gymnasium": "envharness.bridges.gymnasium:GymnasiumEnv",
    "alfworld": "envharness.bridges.alfworld:AlfWorldEnv",
    "webshop": "envharness.bridges.webshop:WebShopEnv",
    "swe": "envharness.bridges.swe:SweEnv",
    "swebench": "envharness.bridges.swebench:SwebenchEnv",
    "spreadsheet": "envharness.bridges.spreadsheet:SpreadsheetEnv",
    "docqa": "envharness.bridges.docqa:DocQAEnv",
}
_REGISTERED: dict[str, type[ActionableEnv] | str] = {}


def register(name: str, bridge: type[ActionableEnv] | str) -> None:
    """Registers a bridge class (or a ``"module:Class"`` path) under ``name``.

    Raises:
        BridgeError: If ``name`` is empty or ``bridge`` is neither a class nor a path.
    """
    if not isinstance(name, str) or not name:
        raise BridgeError(f"expected a non-empty bridge name, got {name!r}")
    if not (isinstance(bridge, str) and ":" in bridge) and not (
        isinstance(bridge, type) and issubclass(bridge, ActionableEnv)
    ):
        raise BridgeError(
            f"expected an ActionableEnv subclass or a 'module:Class' path, got {bridge!r}",
            bridge=name,
        )
    _REGISTERED[name] = bridge


def _entry_point_bridges() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def list_bridges() -> list[str]:
    """Names of all bridges: built-in, registered at run time, and from entry points."""
    return sorted({*_BUILTIN, *_REGISTERED, *_entry_point_bridges()})


def _import_path(name: str, path: str) -> type[ActionableEnv]:
    module_name, _, attr = path.partition(":")
    module = importlib.import_module(module_name)  # DependencyNotInstalled propagates as is
    try:
        cls = getattr(module, attr)
    except AttributeError as e:
        raise BridgeError(f"{module_name!r} has no attribute {attr!r}", bridge=name) from e
    if not (isinstance(cls, type) and issubclass(cls, ActionableEnv)):
        raise BridgeError(f"{path!r} is not an ActionableEnv subclass", bridge=name)
    return cls


def get_bridge(name: str) -> type[ActionableEnv]:
    """The bridge class registered under ``name``.

    Raises:
        UnknownBridgeError: If no bridge has that name.
        DependencyNotInstalled: If the bridge needs an extra that is not installed.
    """
    target: type[ActionableEnv] | str | None = _REGISTERED.get(name) or _BUILTIN.get(name)
    if target is None:
        target = _entry_point_bridges().get(name)
    if target is None:
        raise UnknownBridgeError(name, list_bridges())
    return target if isinstance(target, type) else _import_path(name, target)


def load_bridge(name: str, *, task_id: str, **options: Any) -> ActionableEnv:
    """Builds the bridge ``name`` bound to one task.

    Example:
        >>> env = load_bridge("toy24", task_id="1-1-4-6")
        >>> env.bridge_name
        'toy24'

    Raises:
        UnknownBridgeError: If no bridge has that name.
        UnknownTaskError: If the bridge has no such task.
    """
    return get_bridge(name)(task_id=task_id, **options)


def list_tasks(name: str, split: str = "train", **options: Any) -> list[str]:
    """Task ids of bridge ``name`` in ``split``, in a stable order.

    Raises:
        UnknownBridgeError: If no bridge has that name.
        UnknownTaskError: If the bridge has no such split.
    """
    cls = get_bridge(name)
    lister = getattr(cls, "list_tasks", None)
    if lister is None:
        raise BridgeError("this bridge does not list its tasks", bridge=name)
    return list(lister(split=split, **options))
