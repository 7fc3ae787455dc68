"""Turning typed text into an :class:`~envharness.core.Action`.

What a human (or a text-only model) types is read in one of these forms, tried in this order:

- a JSON object: ``{"tool": "combine", "args": {...}}``, or an OpenAI-style call
  ``{"name": "combine", "arguments": {...}}`` (``arguments`` may be a JSON string, and the call
  may be wrapped as ``{"type": "function", "function": {...}}``);
- call syntax with literal values only: ``combine(4, "*", 6)``, ``combine(a=4, op="*", b=6)``
  (a bare word such as ``act(look)`` is read as the string ``"look"``);
- shell-like words: ``combine 4 * 6`` assigns the words to the tool's parameters in declaration
  order (``key=value`` words name a parameter); a tool with a single string parameter takes the
  rest of the line verbatim (``act go north``);
- a bare line, when the first word is not a tool and exactly one tool has a single string
  parameter: ``go north`` becomes ``act(command="go north")``.

Values are converted to each parameter's declared type, and the result is checked against the
tool's schema, so a parsed action always fits the tools.
"""

from __future__ import annotations

import ast
import json
import math
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from envharness._pyparse import parse
from envharness.core import Action, ToolSpec
from envharness.errors import InvalidActionError

__all__ = ["find_json_object", "parse_action", "tool_lines", "tool_usage"]

_CALL = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*\((.*)\)$", re.DOTALL)
_FIRST_WORD = re.compile(r"^(\S+)\s*(.*)$", re.DOTALL)
_KEYWORD = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
_TRUE = {"true", "yes", "y", "on", "1"}
_FALSE = {"false", "no", "n", "off", "0"}


def tool_usage(tool: ToolSpec) -> str:
    """A one-line usage for ``tool``: ``combine <a> <op> <b>``, optional parameters in brackets.

    Example:
        >>> tool_usage(ToolSpec("act", "", {"type": "object",
        ...     "properties": {"command": {"type": "string"}}, "required": ["command"]}))
        'act <command>'
    """
    required = set(tool.parameters.get("required", []))
    words = [tool.name]
    for name in tool.parameters.get("properties", {}):
        words.append(f"<{name}>" if name in required else f"[<{name}>]")
    return " ".join(words)


def tool_lines(tools: Sequence[ToolSpec], *, full: bool = False) -> list[str]:
    r"""One line per tool: its :func:`tool_usage`, a colon and its description.

    Args:
        tools: The tools to list.
        full: Keep the whole description (on one line); by default only its first line.

    Example:
        >>> tool_lines([ToolSpec("undo", "Take back the last move.\nCosts a step.")])
        ['undo: Take back the last move.']
    """
    lines = []
    for tool in tools:
        text = tool.description.strip()
        about = " ".join(text.split()) if full else (text.splitlines() or [""])[0].strip()
        lines.append(f"{tool_usage(tool)}: {about}" if about else tool_usage(tool))
    return lines


def find_json_object(text: str, prefer: Sequence[str] = ()) -> dict[str, Any] | None:
    """The first JSON object in ``text`` with one of the ``prefer`` keys, else the first at all.

    Objects may sit anywhere in the text (in prose, in a code fence); every ``{`` is tried as the
    start of one, so an object nested in another is found as well.

    Example:
        >>> find_json_object('I think {"x": 1} then {"tool": "undo"}', prefer=("tool",))
        {'tool': 'undo'}
        >>> find_json_object("no object here") is None
        True
    """
    decoder = json.JSONDecoder()
    first: dict[str, Any] | None = None
    position = text.find("{")
    while position >= 0:
        try:
            value, _ = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            if any(key in value for key in prefer):
                return value
            if first is None:
                first = value
        position = text.find("{", position + 1)
    return first


def _all_usages(tools: Sequence[ToolSpec]) -> str:
    return "tools: " + " | ".join(tool_usage(tool) for tool in tools)


def _tool_error(reason: str, tool: ToolSpec) -> InvalidActionError:
    return InvalidActionError(f"{reason}; usage: {tool_usage(tool)}", tool=tool.name)


def _general_error(reason: str, tools: Sequence[ToolSpec]) -> InvalidActionError:
    return InvalidActionError(f"{reason}; {_all_usages(tools)}")


def _properties(tool: ToolSpec) -> dict[str, Any]:
    return dict(tool.parameters.get("properties", {}))


def _single_string_parameter(tool: ToolSpec) -> str | None:
    """The parameter's name when ``tool`` takes exactly one parameter and it is a string."""
    properties = _properties(tool)
    if len(properties) != 1:
        return None
    ((name, schema),) = properties.items()
    return name if isinstance(schema, Mapping) and schema.get("type") == "string" else None


def _convert(value: Any, schema: Mapping[str, Any], name: str, tool: ToolSpec) -> Any:
    """Converts ``value`` (often a typed word) to the parameter's declared type."""
    kind = schema.get("type")
    bad = _tool_error(f"<{name}> expects {kind}, got {value!r}", tool)
    if kind == "string":
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value) if isinstance(value, int | float) else value
    if kind == "boolean":
        if isinstance(value, str):
            lowered = value.strip().lower()
            if lowered in _TRUE | _FALSE:
                return lowered in _TRUE
            raise bad
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        return value
    if kind in ("integer", "number"):
        if isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                raise bad from None
            if not math.isfinite(number):
                raise bad
            if re.fullmatch(r"\s*[+-]?\d+\s*", value):
                return int(value)
            value = number
        if kind == "integer" and isinstance(value, float):
            if not value.is_integer():
                raise bad
            return int(value)
        return value
    if kind in ("array", "object") and isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            raise _tool_error(f"<{name}> expects a JSON {kind}, got {value!r}", tool) from None
        return parsed
    return value


def _finish(tool: ToolSpec, args: Mapping[str, Any]) -> Action:
    """Converts ``args`` to the declared types and checks them against the schema."""
    properties = _properties(tool)
    converted = {
        key: _convert(value, properties[key], key, tool) if key in properties else value
        for key, value in args.items()
    }
    problems = tool.check(converted)
    if problems:
        raise _tool_error("; ".join(problems), tool)
    return Action(tool.name, converted)


def _lookup(name: Any, by_name: Mapping[str, ToolSpec], tools: Sequence[ToolSpec]) -> ToolSpec:
    if name not in by_name:
        raise _general_error(f"unknown tool {name!r}", tools)
    return by_name[name]


def _from_json(line: str, by_name: Mapping[str, ToolSpec], tools: Sequence[ToolSpec]) -> Action:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as e:
        raise _general_error(f"not valid JSON ({e.msg} at column {e.colno})", tools) from None
    if isinstance(data, dict) and isinstance(data.get("function"), dict):
        data = data["function"]
    if "tool" in data:
        keys, name, args = {"tool", "args"}, data["tool"], data.get("args", {})
    elif "name" in data:
        keys, name, args = {"name", "arguments"}, data["name"], data.get("arguments", {})
    else:
        raise _general_error(
            'expected {"tool": ..., "args": {...}} or {"name": ..., "arguments": {...}}', tools
        )
    extra = sorted(set(data) - keys)
    if extra:
        raise _general_error(f"unexpected keys {extra} in {sorted(keys)} form", tools)
    tool = _lookup(name, by_name, tools)
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            raise _tool_error(f"arguments are not valid JSON: {args!r}", tool) from None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise _tool_error(f"expected the arguments as an object, got {type(args).__name__}", tool)
    return _finish(tool, args)


def _literal(node: ast.expr, tool: ToolSpec) -> Any:
    if isinstance(node, ast.Name):
        return node.id
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise _tool_error(
            f"call syntax takes literal values only, got {ast.unparse(node)!r}", tool
        ) from None


def _assign(
    tool: ToolSpec, positional: Sequence[Any], keywords: Sequence[tuple[str, Any]]
) -> dict[str, Any]:
    """Assigns keyword values by name and positional values to the remaining parameters in order."""
    names = list(_properties(tool))
    args: dict[str, Any] = {}
    for key, value in keywords:
        if key not in names:
            raise _tool_error(f"unknown parameter {key!r}", tool)
        if key in args:
            raise _tool_error(f"parameter {key!r} given twice", tool)
        args[key] = value
    free = [name for name in names if name not in args]
    if len(positional) > len(free):
        raise _tool_error(
            f"too many arguments: {len(positional)} given, {len(free)} expected", tool
        )
    args.update(zip(free, positional, strict=False))
    return args


def _from_call(name: str, inner: str, tool: ToolSpec) -> Action:
    try:
        tree = parse(f"_({inner})", mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise _tool_error(f"cannot read the call {name}({inner})", tool) from None
    call = tree.body
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "_"):
        raise _tool_error(f"cannot read the call {name}({inner})", tool)
    if any(isinstance(arg, ast.Starred) for arg in call.args) or any(
        kw.arg is None for kw in call.keywords
    ):
        raise _tool_error("call syntax does not take *args or **kwargs", tool)
    positional = [_literal(arg, tool) for arg in call.args]
    keywords = [(str(kw.arg), _literal(kw.value, tool)) for kw in call.keywords]
    return _finish(tool, _assign(tool, positional, keywords))


def _unquote(rest: str) -> str:
    """The rest of the line, without quotes when it is one quoted word (``"go north"``)."""
    if rest[:1] in ("'", '"'):
        try:
            words = shlex.split(rest)
        except ValueError:
            return rest
        if len(words) == 1:
            return words[0]
    return rest


def _from_words(tool: ToolSpec, rest: str) -> Action:
    text_parameter = _single_string_parameter(tool)
    if text_parameter is not None:
        return _finish(tool, {text_parameter: _unquote(rest)} if rest else {})
    try:
        words = shlex.split(rest)
    except ValueError as e:
        raise _tool_error(f"cannot split the arguments ({e})", tool) from None
    names = set(_properties(tool))
    positional: list[str] = []
    keywords: list[tuple[str, str]] = []
    for word in words:
        match = _KEYWORD.match(word)
        if match and match.group(1) in names:
            keywords.append((match.group(1), match.group(2)))
        else:
            positional.append(word)
    return _finish(tool, _assign(tool, positional, keywords))


def parse_action(text: str, tools: Sequence[ToolSpec]) -> Action:
    """Reads typed text as an action on one of ``tools`` (forms in the module docstring).

    Args:
        text: One line (or a JSON object) as typed.
        tools: The tools that may be called.

    Returns:
        An action whose arguments fit the tool's schema.

    Raises:
        InvalidActionError: If the text names no tool or does not fit it; the message gives the
            usage (``usage: combine <a> <op> <b>``), or every tool's usage when no tool is known.

    Example:
        >>> combine = ToolSpec("combine", "", {"type": "object", "properties": {
        ...     "a": {"type": "string"}, "op": {"type": "string", "enum": ["+", "*"]},
        ...     "b": {"type": "string"}}, "required": ["a", "op", "b"]})
        >>> parse_action("combine 4 * 6", [combine])
        Action(tool='combine', args={'a': '4', 'op': '*', 'b': '6'})
    """
    if not isinstance(text, str):
        raise InvalidActionError(f"expected the action as text, got {type(text).__name__}")
    tools = list(tools)
    if not tools:
        raise InvalidActionError("there are no tools to call")
    by_name = {tool.name: tool for tool in tools}
    line = text.strip()
    if not line:
        raise _general_error("empty input", tools)
    if line.startswith("{"):
        return _from_json(line, by_name, tools)
    call = _CALL.match(line)
    if call and call.group(1) in by_name:
        return _from_call(call.group(1), call.group(2), by_name[call.group(1)])
    match = _FIRST_WORD.match(line)
    first, rest = (match.group(1), match.group(2).strip()) if match else (line, "")
    if first in by_name:
        return _from_words(by_name[first], rest)
    text_tools = [tool for tool in tools if _single_string_parameter(tool) is not None]
    if len(text_tools) == 1:
        tool = text_tools[0]
        return _finish(tool, {str(_single_string_parameter(tool)): line})
    raise _general_error(f"unknown tool {first!r}", tools)
