"""Python methods generated from :class:`~envharness.core.ToolSpec` schemas.

Trainers such as TRL read a tool's schema from a Python callable: its name, its type hints and its
Google-style docstring (``transformers.utils.get_json_schema``). :func:`tool_method` writes such a
callable for a bridge tool, so the schema read back from it is the tool's own ``parameters``.

What a signature can say: each parameter's ``type`` (``array`` items included), its ``enum`` (as a
``Literal``), its ``description`` and whether it is required. What it cannot say (``minimum``,
``maxLength``, an array item's description, a nested object's ``properties`` ...) is written into
the parameter's description as JSON (``JSON Schema: {"minimum": 1}``), so the model still reads it;
:func:`expressed_parameters` gives the schema a method carries, and the arguments are still checked
against the tool's full schema when the call reaches the env.
"""

from __future__ import annotations

import inspect
import json
import keyword
from collections.abc import Callable, Mapping
from typing import Any, Literal

from envharness.core import ToolSpec
from envharness.errors import BridgeError

__all__ = ["expressed_parameters", "tool_method"]

_SCALARS: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool}
_ENUM_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "boolean": (bool,)}
_RETURNS = "The observation after the call."


def _enum_fits(kind: str, values: list[Any]) -> bool:
    """Whether ``Literal[values]`` reads back as ``{"type": kind, "enum": values}``."""
    allowed = _ENUM_TYPES.get(kind)
    if allowed is None or not values:
        return False
    if kind == "integer":
        return all(type(v) is int for v in values)
    return all(type(v) in allowed for v in values)


def _hint(schema: Mapping[str, Any], *, top: bool) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """A type hint for ``schema``, the schema the hint reads back as, and what it leaves unsaid.

    A parameter's own ``description`` goes into the docstring (``top``); an array item's cannot.
    """
    kind = schema.get("type")
    said = {"type", "enum", "items", "description"} if top else {"type", "enum", "items"}
    left: dict[str, Any] = {k: v for k, v in schema.items() if k not in said}
    expressed: dict[str, Any] = {"type": kind}
    if kind == "array":
        item_hint, item_expressed, item_left = _hint(schema.get("items") or {}, top=False)
        hint: Any = list[item_hint]
        expressed["items"] = item_expressed
        if item_left:
            left["items"] = item_left
    elif kind == "object":
        hint = dict
    else:
        hint = _SCALARS[kind]
    if "enum" in schema:
        values = list(schema["enum"])
        if _enum_fits(kind, values):
            hint = Literal[tuple(values)]
            expressed["enum"] = values
        else:
            left["enum"] = values
    return hint, expressed, left


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _parameter(tool: ToolSpec, name: str, schema: Mapping[str, Any]) -> tuple[Any, str, dict]:
    """The hint, the docstring description and the expressed schema of one parameter."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise BridgeError(
            f"tool {tool.name!r}: parameter {name!r} is not a Python identifier, so no method "
            "signature can carry it (trainers read tool schemas from signatures); rename the "
            "parameter in the bridge's ToolSpec"
        )
    if name == "self":
        raise BridgeError(
            f"tool {tool.name!r}: a parameter named 'self' cannot be a method argument; rename it"
        )
    hint, expressed, left = _hint(schema, top=True)
    description = _one_line(str(schema.get("description") or f"The {name} argument."))
    if left:
        description = f"{description} JSON Schema: {json.dumps(left, sort_keys=True)}"
    expressed["description"] = description
    return hint, description, expressed


def expressed_parameters(tool: ToolSpec) -> dict[str, Any]:
    """The parameters schema that :func:`tool_method`'s method carries for ``tool``.

    It equals ``tool.parameters`` when the schema holds only what a signature can say (types,
    enums, descriptions, required); otherwise the rest is written into the descriptions as JSON.
    Descriptions are put on one line, and a parameter without one is described by its name.

    Raises:
        BridgeError: If a parameter name is not a Python identifier.

    Example:
        >>> spec = ToolSpec("read_page", "Read a page.", {"type": "object", "properties": {
        ...     "page": {"type": "integer", "minimum": 1, "description": "The page."}},
        ...     "required": ["page"]})
        >>> expressed_parameters(spec)["properties"]["page"]["description"]
        'The page. JSON Schema: {"minimum": 1}'
    """
    return _build(tool)[2]


def _build(tool: ToolSpec) -> tuple[list[inspect.Parameter], str, dict[str, Any]]:
    properties = tool.parameters.get("properties") or {}
    required = set(tool.parameters.get("required") or ())
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    lines: list[str] = []
    expressed_properties: dict[str, Any] = {}
    for name, schema in properties.items():
        hint, description, expressed = _parameter(tool, name, schema)
        default = inspect.Parameter.empty if name in required else None
        kind = inspect.Parameter.KEYWORD_ONLY
        parameters.append(inspect.Parameter(name, kind, default=default, annotation=hint))
        lines.append(f"    {name}: {description}")
        expressed_properties[name] = expressed
    description = tool.description.strip()
    doc = description + "\n\n" if description else ""
    if lines:
        doc += "Args:\n" + "\n".join(lines) + "\n\n"
    doc += f"Returns:\n    {_RETURNS}\n"
    expressed_schema: dict[str, Any] = {"type": "object", "properties": expressed_properties}
    ordered = [name for name in properties if name in required]
    if ordered:
        expressed_schema["required"] = ordered
    return parameters, doc, expressed_schema


def tool_method(tool: ToolSpec, call: Callable[[Any, str, dict[str, Any]], str]) -> Callable:
    """A method for ``tool`` whose signature and docstring describe the tool's schema.

    The method accepts any keyword arguments (its ``__signature__`` is what readers see) and
    hands them to ``call(self, tool.name, arguments)``, so a call that does not fit the schema
    reaches ``call`` to be answered, instead of failing in Python's argument binding.

    Args:
        tool: The bridge tool.
        call: What the method does: ``call(self, tool_name, arguments) -> observation``.

    Returns:
        A function to set on a class under ``tool.name``.

    Raises:
        BridgeError: If a parameter name is not a Python identifier.
    """
    parameters, doc, _ = _build(tool)
    name = tool.name

    def method(self: Any, **arguments: Any) -> str:
        return call(self, name, arguments)

    method.__name__ = name
    method.__qualname__ = name
    method.__doc__ = doc
    method.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = {p.name: p.annotation for p in parameters[1:]} | {"return": str}
    return method
