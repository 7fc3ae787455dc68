r"""Knobs in rules code: module-level numeric constants a spec can override.

Rules code declares a knob as an upper-case module-level constant assigned a number::

    DROP_P = 0.3          # each action fails with this probability
    MAX_CHARS = 400       # observations are cut to this many characters

    class _Rules:
        def filter_action(self, action, state):
            ...  # reads DROP_P like any global

A Rules component built with ``knobs={"DROP_P": 0.45}`` runs the code with that constant's
literal replaced (the stored code and its sha256 stay the designer's; the values are stored
beside it in the spec). EnvRigger's validator tunes such knobs by statistics.

Example:
    >>> code = "DROP_P = 0.3\nclass _Rules:\n    pass\n"
    >>> rules_knobs(code)
    {'DROP_P': 0.3}
    >>> apply_knobs(code, {"DROP_P": 0.45}).splitlines()[0]
    'DROP_P = 0.45'
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping

from envharness._pyparse import parse
from envharness.errors import RulesError

__all__ = ["apply_knobs", "rules_knobs"]

_KNOB_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def _number(node: ast.expr | None) -> int | float | None:
    """The number a literal (``0.3``, ``-2``) stands for, else ``None``."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        sign = -1 if isinstance(node.op, ast.USub) else 1
        node = node.operand
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return sign * node.value
    return None


def _constants(code: str) -> dict[str, tuple[ast.expr, int | float]]:
    """Each knob's literal node (what an override replaces) and its value."""
    try:
        tree = parse(code)
    except SyntaxError as e:
        raise RulesError(f"rules code does not parse (line {e.lineno}): {e.msg}") from None
    found: dict[str, tuple[ast.expr, int | float]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        number = _number(value)
        if isinstance(target, ast.Name) and _KNOB_NAME.match(target.id) and number is not None:
            found[target.id] = (value, number)
    return found


def rules_knobs(code: str) -> dict[str, float]:
    """The knobs ``code`` declares: upper-case module-level constants assigned a number.

    Plain (``DROP_P = 0.3``), annotated (``DROP_P: float = 0.3``) and signed (``BIAS = -2``)
    assignments count; anything computed does not.
    """
    return {name: float(number) for name, (_, number) in _constants(code).items()}


def apply_knobs(code: str, values: Mapping[str, float]) -> str:
    """``code`` with each named constant's literal replaced by its value.

    Raises:
        RulesError: A name the code does not declare as a knob (the declared ones are listed),
            or a value that is not a finite number.
    """
    if not values:
        return code
    constants = _constants(code)
    lines = _LINES.findall(code)  # as ast counts lines: only \n, \r\n and \r end one
    edits = []
    for name, value in values.items():
        if name not in constants:
            declared = ", ".join(sorted(constants)) or "none"
            raise RulesError(
                f"rules code has no knob {name!r} (knobs are upper-case module-level constants "
                f"assigned a number, e.g. DROP_P = 0.3; this code declares: {declared})"
            )
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise RulesError(f"expected knob {name} to be a finite number, got {value!r}")
        node, number = constants[name]
        if node.lineno != node.end_lineno:
            raise RulesError(f"knob {name}'s value must be written on one line")
        literal = (
            repr(int(value))
            if float(value).is_integer() and isinstance(number, int)
            else repr(float(value))
        )
        edits.append((node.lineno - 1, node.col_offset, node.end_col_offset, literal))
    for row, start, end, literal in sorted(edits, reverse=True):
        line = lines[row]
        encoded = line.encode("utf-8")  # ast offsets count UTF-8 bytes
        lines[row] = (encoded[:start] + literal.encode() + encoded[end:]).decode("utf-8")
    return "".join(lines)
