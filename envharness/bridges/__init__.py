"""Bridges: adapters from benchmarks to :class:`~envharness.core.ActionableEnv`.

Bridge modules import lazily, so a bridge's optional dependency is needed only when it is used.
"""

from envharness.bridges.registry import (
    ENTRY_POINT_GROUP,
    get_bridge,
    list_bridges,
    list_tasks,
    load_bridge,
    register,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "get_bridge",
    "list_bridges",
    "list_tasks",
    "load_bridge",
    "register",
]
