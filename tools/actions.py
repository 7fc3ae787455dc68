"""Reading the designer's arguments: ``in_env_actions`` lists, rules code, the input errors."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from envharness.core import Action
from envharness.errors import EnvHarnessError

__all__ = ["ToolInputError", "parse_in_env_actions", "strip_fence"]


class ToolInputError(ValueError):
    """Raised inside a designer tool when the model's arguments are unusable (sent back as text)."""


def _parse_args(raw: Any, where: str) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as e:
            raise ToolInputError(
                f'{where}.args: expected a JSON object text such as \'{{"name": "value"}}\' '
                f"('{{}}' for no arguments), got {raw!r} ({e.msg})"
            ) from None
    if not isinstance(raw, Mapping):
        raise ToolInputError(f"{where}.args: expected a JSON object, got {type(raw).__name__}")
    return dict(raw)


def parse_in_env_actions(value: Any) -> list[dict[str, Any]]:
    """Normalizes the ``in_env_actions`` a model sent into ``{"tool", "args"}`` dicts.

    Accepted: ``None`` or ``""`` (no actions); a list of ``{"tool": name, "args": ...}`` objects
    whose ``args`` is an object or the JSON text of one; or the JSON text of such a list.

    Raises:
        ToolInputError: Naming the entry that is malformed and the expected form.

    Example:
        >>> parse_in_env_actions([{"tool": "combine", "args": '{"a": "4", "op": "*", "b": "6"}'}])
        [{'tool': 'combine', 'args': {'a': '4', 'op': '*', 'b': '6'}}]
    """
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as e:
            raise ToolInputError(
                f"in_env_actions: expected a list of {{'tool', 'args'}} objects, got text that is "
                f"not JSON ({e.msg})"
            ) from None
    if isinstance(value, Mapping) or not isinstance(value, Sequence) or isinstance(value, str):
        raise ToolInputError(
            f"in_env_actions: expected a list of {{'tool', 'args'}} objects, got "
            f"{type(value).__name__}"
        )
    actions: list[dict[str, Any]] = []
    for index, item in enumerate(value):
        where = f"in_env_actions[{index}]"
        if not isinstance(item, Mapping):
            raise ToolInputError(
                f"{where}: expected an object {{'tool': name, 'args': {{...}}}}, got "
                f"{type(item).__name__} {item!r}"
            )
        extra = sorted(set(item) - {"tool", "args"})
        if extra:
            raise ToolInputError(f"{where}: unexpected keys {extra}; only 'tool' and 'args'")
        tool = item.get("tool")
        if not isinstance(tool, str) or not tool:
            raise ToolInputError(f"{where}: expected a tool name in 'tool', got {tool!r}")
        try:
            action = Action(tool, _parse_args(item.get("args"), where))
        except EnvHarnessError as e:
            raise ToolInputError(f"{where}: {e}") from None
        actions.append(action.to_dict())
    return actions


_FENCED = re.compile(
    r"\A\s*```[ \t]*([A-Za-z0-9_.+-]*)[ \t]*\r?\n(.*?)^[ \t]*```[ \t]*\s*\Z", re.S | re.M
)

FENCE_NOTE = (
    "NOTE: rules_code was wrapped in a markdown fence (```python ... ```); the fence lines were "
    "removed and the code inside was used. Send the bare Python source."
)


def strip_fence(code: str) -> tuple[str, str | None]:
    r"""``code`` without a markdown fence wrapped around all of it, and a note when there was one.

    Example:
        >>> strip_fence("```python\nclass _Rules:\n    pass\n```")
        ('class _Rules:\n    pass\n', 'NOTE: rules_code was wrapped in a markdown fence ...')
        >>> strip_fence("class _Rules:\n    pass\n")
        ('class _Rules:\n    pass\n', None)
    """
    match = _FENCED.match(code)
    if match is None:
        return code, None
    return match.group(2), FENCE_NOTE
