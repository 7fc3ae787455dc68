"""JSON-Schema helpers for tool parameters: the Gemini-safe subset and argument checking.

Tool schemas stay in the subset of JSON Schema that every major function-calling API accepts
(Gemini's function declarations are the strictest): one ``type`` per node, no references and no
schema combinators. Arguments are checked against the same subset before an action reaches a bridge.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "FORBIDDEN_KEYWORDS",
    "JSON_TYPES",
    "check_arguments",
    "compile_checker",
    "gemini_schema_problems",
]

JSON_TYPES = ("string", "number", "integer", "boolean", "array", "object")
"""The scalar and container types a tool parameter may declare."""

FORBIDDEN_KEYWORDS = frozenset(
    {
        "$ref",
        "$defs",
        "definitions",
        "oneOf",
        "anyOf",
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "patternProperties",
        "dependentSchemas",
        "const",
    }
)
"""Keywords outside the Gemini function-declaration subset."""


def gemini_schema_problems(schema: Any, path: str = "parameters") -> list[str]:
    """Lists why ``schema`` falls outside the Gemini-safe subset (empty when it is inside).

    Args:
        schema: A JSON-Schema node.
        path: Where the node sits, for the messages.

    Returns:
        One message per problem, naming the path.
    """
    if not isinstance(schema, Mapping):
        return [f"{path}: expected a JSON-Schema object, got {type(schema).__name__}"]
    problems = [
        f"{path}: keyword {key!r} is not allowed" for key in schema if key in FORBIDDEN_KEYWORDS
    ]
    kind = schema.get("type")
    if kind not in JSON_TYPES:
        problems.append(
            f"{path}: expected 'type' to be one of {', '.join(JSON_TYPES)}, got {kind!r}"
        )
        return problems
    if "enum" in schema and (not isinstance(schema["enum"], list) or not schema["enum"]):
        problems.append(f"{path}: 'enum' must be a non-empty list")
    if kind == "object":
        properties = schema.get("properties", {})
        if not isinstance(properties, Mapping):
            problems.append(f"{path}: 'properties' must be an object")
            properties = {}
        for name, sub in properties.items():
            problems.extend(gemini_schema_problems(sub, f"{path}.{name}"))
        required = schema.get("required", [])
        if not isinstance(required, list) or any(r not in properties for r in required):
            problems.append(f"{path}: 'required' must list declared properties, got {required!r}")
    elif kind == "array":
        if "items" not in schema:
            problems.append(f"{path}: an array must declare 'items'")
        else:
            problems.extend(gemini_schema_problems(schema["items"], f"{path}[]"))
    return problems


def _type_matches(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "number":
        return (
            isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        )
    if kind == "array":
        return isinstance(value, list | tuple)
    if kind == "object":
        return isinstance(value, Mapping)
    return False


def check_arguments(args: Any, schema: Mapping[str, Any], path: str = "args") -> list[str]:
    """Checks tool-call arguments against a parameter schema in the Gemini subset.

    Args:
        args: The arguments (a mapping for an object schema).
        schema: The tool's ``parameters`` schema.
        path: Where the value sits, for the messages.

    Returns:
        One message per mismatch ("expected X, got Y"); empty when the arguments fit.
    """
    kind = schema.get("type", "object")
    if not _type_matches(args, kind):
        return [f"{path}: expected {kind}, got {type(args).__name__} {args!r}"]
    if "enum" in schema and args not in schema["enum"]:
        return [f"{path}: expected one of {schema['enum']!r}, got {args!r}"]
    problems: list[str] = []
    if kind == "object":
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in args:
                problems.append(f"{path}: missing required argument {name!r}")
        for name, value in args.items():
            if name not in properties:
                allowed = ", ".join(properties) or "none"
                problems.append(f"{path}: unexpected argument {name!r} (allowed: {allowed})")
            else:
                problems.extend(check_arguments(value, properties[name], f"{path}.{name}"))
    elif kind == "array" and "items" in schema:
        for i, item in enumerate(args):
            problems.extend(check_arguments(item, schema["items"], f"{path}[{i}]"))
    return problems


def compile_checker(schema: Mapping[str, Any]) -> Callable[[Any], bool]:
    """Compiles ``schema`` into a fast yes/no test that agrees with :func:`check_arguments`.

    Tools are checked on every step, so the common case (arguments that fit) must be cheap; on a
    ``False`` answer, call :func:`check_arguments` for the messages.
    """
    kind = schema.get("type", "object")
    enum = schema.get("enum")
    if kind == "object":
        properties = {
            name: compile_checker(sub) for name, sub in schema.get("properties", {}).items()
        }
        required = tuple(schema.get("required", ()))

        def check_object(value: Any) -> bool:
            if not isinstance(value, Mapping):
                return False
            for name in required:
                if name not in value:
                    return False
            for name, item in value.items():
                check = properties.get(name)
                if check is None or not check(item):
                    return False
            return enum is None or value in enum

        return check_object
    if kind == "array":
        item_check = compile_checker(schema["items"]) if "items" in schema else None

        def check_array(value: Any) -> bool:
            if not isinstance(value, list | tuple):
                return False
            if item_check is not None and not all(item_check(v) for v in value):
                return False
            return enum is None or value in enum

        return check_array
    if enum is not None:
        return lambda value: _type_matches(value, kind) and value in enum
    if kind == "string":
        return lambda value: isinstance(value, str)
    return lambda value: _type_matches(value, kind)
