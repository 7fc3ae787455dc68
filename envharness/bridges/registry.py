"""The bridge registry: every bridge, built-in or third-party, is found through entry points.

A bridge is an :class:`~envharness.core.ActionableEnv` subclass with two class-level entry points:
``Bridge(task_id=..., **options)`` builds one task, and ``Bridge.list_tasks(split=..., **options)``
lists task ids; an optional ``Bridge.designer_hints()`` gives the rigger's prompts notes on it.

Bridges are registered in one way: an entry point in the group ``envharness.bridges``
(``name = "package.module:BridgeClass"``) of the distribution that ships them. envharness's own
``pyproject.toml`` declares its built-in bridges there exactly as a third-party package declares
its own, so adding a bridge is its folder under ``envharness/bridges/`` plus that one line::

    [project.entry-points."envharness.bridges"]
    mine = "my_package.env:MyEnv"

:func:`register` adds a bridge at run time (tests, notebooks) and takes precedence over entry
points. There is deliberately no second list of built-ins in the code: where envharness's
installed metadata is missing (a source tree put on ``sys.path`` without ``pip install``), a
lookup of a name that is not registered at run time raises a :class:`BridgeError` that says to
install the package. Entry points are read once per process, and again when a name is not found,
so a plugin installed while a process runs is still found.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, distribution, entry_points
from typing import Any, NamedTuple

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
_OWN_DISTRIBUTION = "envharness"

_REGISTERED: dict[str, type[ActionableEnv] | str] = {}


class _Source(NamedTuple):
    """Where an entry-point bridge comes from: its ``module:Class`` path and distribution."""

    target: str
    distribution: str


_scanned: dict[str, tuple[_Source, ...]] | None = None


def register(name: str, bridge: type[ActionableEnv] | str) -> None:
    """Registers a bridge class (or a ``"module:Class"`` path) under ``name`` for this process.

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


def _entry_point_bridges(*, refresh: bool = False) -> dict[str, tuple[_Source, ...]]:
    """Name → the distinct sources that declare it, from the installed metadata (cached)."""
    global _scanned
    if _scanned is None or refresh:
        found: dict[str, dict[str, str]] = {}
        for point in entry_points(group=ENTRY_POINT_GROUP):
            dist = getattr(getattr(point, "dist", None), "name", None) or "an unnamed distribution"
            found.setdefault(point.name, {}).setdefault(point.value, dist)
        _scanned = {
            name: tuple(_Source(target, dist) for target, dist in sources.items())
            for name, sources in found.items()
        }
    return _scanned


def list_bridges() -> list[str]:
    """Names of all bridges: from entry points (built-in and third-party) and run-time ones."""
    return sorted({*_REGISTERED, *_entry_point_bridges(refresh=True)})


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


def _entry_point_target(name: str) -> str | None:
    """The ``module:Class`` path that entry points give ``name``, or None when none does.

    Raises:
        BridgeError: If two distributions declare ``name`` with different classes.
    """
    sources = _entry_point_bridges().get(name) or _entry_point_bridges(refresh=True).get(name)
    if not sources:
        return None
    if len(sources) > 1:
        listing = "; ".join(f"{s.target} (from {s.distribution})" for s in sources)
        raise BridgeError(
            f"{len(sources)} installed distributions declare this bridge in the "
            f"{ENTRY_POINT_GROUP!r} entry-point group: {listing}. Uninstall one, or choose one "
            f"for this process with envharness.register({name!r}, 'module:Class')",
            bridge=name,
        )
    return sources[0].target


def _own_metadata_problem() -> str | None:
    """Why envharness's own bridges are not among the entry points, or None when they are."""
    for sources in _entry_point_bridges().values():
        if any(source.distribution == _OWN_DISTRIBUTION for source in sources):
            return None
    missing = (
        "none of envharness's built-in bridges is registered: they are entry points "
        f"({ENTRY_POINT_GROUP!r}) of the installed 'envharness' distribution"
    )
    try:
        found = distribution(_OWN_DISTRIBUTION)
    except PackageNotFoundError:
        return (
            f"{missing}, whose metadata was not found. Install the package (pip install -e . in "
            "a checkout) rather than putting its folder on sys.path"
        )
    return (
        f"{missing}, and the metadata found first on sys.path (under {found.locate_file('')}) "
        "declares none: a stale envharness.egg-info left there by a build? Delete it, or "
        "reinstall (pip install -e .)"
    )


def get_bridge(name: str) -> type[ActionableEnv]:
    """The bridge class registered under ``name``.

    Raises:
        UnknownBridgeError: If no bridge has that name.
        BridgeError: If envharness's own entry points are missing (it is not installed), or two
            distributions declare ``name``.
        DependencyNotInstalled: If the bridge needs an extra that is not installed.
    """
    target: type[ActionableEnv] | str | None = _REGISTERED.get(name)
    if target is None:
        target = _entry_point_target(name)
    if target is None:
        problem = _own_metadata_problem()
        if problem is not None:
            raise BridgeError(f"no bridge named {name!r}, and {problem}", bridge=name)
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
