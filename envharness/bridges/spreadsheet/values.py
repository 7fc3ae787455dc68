"""Cell values: reading what the agent types, showing values as text, comparing answers.

What the agent types into a cell is read the way a spreadsheet reads typing (:func:`read_typed`):
``=...`` is a formula, ``12.5``/``-3``/``1,250``/``12%`` a number, ``TRUE``/``FALSE`` a boolean,
``2024-03-05`` a date, ``''`` clears the cell, a leading apostrophe keeps the rest as text
(``'00123``), and anything else is text, kept exactly.

Example:
    >>> [read_typed(t) for t in ("=SUM(A1:A3)", "12.5", "7", "1,250", "12%", "true", "'007", "hi")]
    ['=SUM(A1:A3)', 12.5, 7, 1250, 0.12, True, '007', 'hi']
    >>> show(0.1 + 0.2), show(True), show(None), show("  padded ")
    ('0.3', 'TRUE', '', '"  padded "')
    >>> compare(88.25, 88.2500000001), compare("Alice Smith", " Alice Smith")
    (None, None)
    >>> compare(3, "3")
    "expected the number 3, got the text '3'"
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from typing import Any

__all__ = [
    "ABS_TOL",
    "REL_TOL",
    "CellError",
    "compare",
    "excel_serial",
    "json_value",
    "read_typed",
    "show",
]

REL_TOL = 1e-6
"""Relative tolerance when comparing numbers."""
ABS_TOL = 1e-6
"""Absolute tolerance when comparing numbers."""

_NUMBER = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")
_GROUPED = re.compile(r"^[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_PERCENT = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))%$")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_EPOCH = dt.datetime(1899, 12, 30)


class CellError(str):
    """An error value a formula evaluated to, e.g. ``#DIV/0!`` (a ``str`` with its code)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"CellError({str(self)!r})"


def _number(text: str) -> int | float:
    value = float(text)
    if re.fullmatch(r"[+-]?\d+", text) and abs(value) < 2**53:
        return int(text)
    return value


def read_typed(text: str) -> Any:
    """The value a spreadsheet stores when ``text`` is typed into a cell.

    Returns:
        ``None`` for ``""``; the formula text for ``=...``; an ``int`` or ``float`` for numbers
        (``1,250`` and ``12%`` included); a ``bool`` for ``TRUE``/``FALSE`` in any case; a
        ``datetime.datetime`` for an ISO date ``YYYY-MM-DD``; otherwise the text itself (without
        the leading apostrophe that forces text).
    """
    if text == "":
        return None
    if text.startswith("'"):
        return text[1:]
    if text.startswith("="):
        return text
    stripped = text.strip()
    if _NUMBER.match(stripped):
        return _number(stripped)
    if _GROUPED.match(stripped):
        return _number(stripped.replace(",", ""))
    percent = _PERCENT.match(stripped)
    if percent:
        return round(float(percent.group(1)) / 100, 15)
    if stripped.upper() in ("TRUE", "FALSE"):
        return stripped.upper() == "TRUE"
    date = _DATE.match(stripped)
    if date:
        try:
            return dt.datetime(*(int(part) for part in date.groups()))
        except ValueError:
            return text
    return text


def excel_serial(value: dt.date | dt.datetime) -> float:
    """The spreadsheet serial number of a date (days since 1899-12-30).

    Example:
        >>> excel_serial(dt.date(2024, 3, 5))
        45356.0
    """
    if not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    return (value - _EPOCH).total_seconds() / 86400


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _ambiguous(text: str) -> bool:
    """Whether text would be misread unquoted: padded, multi-spaced, number-like or a separator."""
    if text != text.strip() or "  " in text or "|" in text or "\n" in text or text == "":
        return True
    return not isinstance(read_typed(text), str) or text.startswith(("=", "'", "#"))


def show(value: Any) -> str:
    """A cell value as the agent sees it in a grid.

    Numbers print with up to 15 significant digits, booleans as ``TRUE``/``FALSE``, dates in ISO
    form, errors as their code (``#DIV/0!``), empty cells as nothing, and text as is, except text
    that would be misread (padded, with doubled spaces, number-like) which is shown in quotes.
    """
    if value is None:
        return ""
    if isinstance(value, CellError):
        return str(value)
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if _is_number(value):
        if isinstance(value, float) and not math.isfinite(value):
            return "#NUM!"
        if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.15g}"
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat(" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    text = str(value)
    return json.dumps(text, ensure_ascii=False) if _ambiguous(text) else text


def json_value(value: Any) -> Any:
    """A JSON-able form of a cell value: dates as ISO text, errors as their code."""
    if value is None or isinstance(value, bool | int | str):
        return str(value) if isinstance(value, CellError) else value
    if isinstance(value, float):
        return value if math.isfinite(value) else "#NUM!"
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    return str(value)


def _normal(value: Any) -> Any:
    if isinstance(value, str) and not isinstance(value, CellError):
        value = value.strip()
        return None if value == "" else value
    if isinstance(value, dt.date | dt.datetime):
        return excel_serial(value)
    return value


def _describe(value: Any) -> str:
    if value is None:
        return "an empty cell"
    if isinstance(value, CellError):
        return f"the error {value}"
    if isinstance(value, bool):
        return f"the boolean {show(value)}"
    if _is_number(value):
        return f"the number {show(value)}"
    return f"the text {str(value)!r}"


def compare(expected: Any, actual: Any) -> str | None:
    """Why ``actual`` does not match ``expected``, or ``None`` when it does.

    Numbers match within :data:`REL_TOL`/:data:`ABS_TOL` (dates compare as serial numbers), text
    matches exactly after stripping surrounding whitespace, booleans match booleans, and an empty
    cell matches empty text. A number never matches text that looks like it, nor a boolean.
    """
    want, got = _normal(expected), _normal(actual)
    if want is None or got is None:
        return None if want is got else f"expected {_describe(want)}, got {_describe(got)}"
    if isinstance(want, bool) or isinstance(got, bool):
        same = isinstance(want, bool) and isinstance(got, bool) and want == got
    elif _is_number(want):
        same = _is_number(got) and math.isclose(want, got, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    else:
        same = isinstance(got, str) and type(got) is type(want) and got == want
    return None if same else f"expected {_describe(want)}, got {_describe(got)}"
