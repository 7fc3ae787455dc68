"""A scripted chat model that plays toy24 well only when its system prompt shows skills."""

from __future__ import annotations

import re
from fractions import Fraction
from itertools import permutations

_LEFT = re.compile(r"Numbers left: ([^\n]+)")
_OPS = ("+", "-", "*", "/")


def _apply(a: Fraction, op: str, b: Fraction) -> Fraction | None:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    return None if b == 0 else a / b


def _solvable(numbers: list[Fraction]) -> bool:
    if len(numbers) == 1:
        return numbers[0] == 24
    return _first_move(numbers) is not None


def _first_move(numbers: list[Fraction]) -> tuple[Fraction, str, Fraction] | None:
    for i, j in permutations(range(len(numbers)), 2):
        rest = [n for k, n in enumerate(numbers) if k not in (i, j)]
        for op in _OPS:
            value = _apply(numbers[i], op, numbers[j])
            if value is not None and _solvable([*rest, value]):
                return numbers[i], op, numbers[j]
    return None


def _text(message: object) -> str:
    content = getattr(message, "content", "")
    return content if isinstance(content, str) else str(content)


def _numbers(messages: list[object]) -> list[Fraction]:
    for message in reversed(messages):
        found = _LEFT.findall(_text(message))
        if found:
            return [Fraction(x) for x in found[-1].split()]
    return []


def shows_skills(messages: list[object]) -> bool:
    """Whether the conversation's system prompt lists skills."""
    return bool(messages) and "Useful skills:" in _text(messages[0])


def reply(messages: list[object]) -> dict:
    """A solving move when skills are shown; otherwise ``undo()`` (never solves)."""
    move = _first_move(_numbers(messages)) if shows_skills(messages) else None
    if move is None:
        return {"tool": "undo", "args": {}}
    a, op, b = move
    return {"tool": "combine", "args": {"a": str(a), "op": op, "b": str(b)}}
