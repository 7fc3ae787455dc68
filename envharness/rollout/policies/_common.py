"""Argument checks shared by the offline policies."""

from __future__ import annotations

from collections.abc import Sequence

from envharness.core import ToolSpec
from envharness.errors import PolicyError


def _check_seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise PolicyError(f"seed: expected an int, got {type(seed).__name__} {seed!r}")
    return seed


def _check_tools(tools: Sequence[ToolSpec], policy: str) -> list[ToolSpec]:
    tools = list(tools)
    if not tools:
        raise PolicyError(f"{policy}: the environment offers no tools to call")
    for tool in tools:
        if not isinstance(tool, ToolSpec):
            raise PolicyError(f"{policy}: expected ToolSpec objects, got {type(tool).__name__}")
    return tools
