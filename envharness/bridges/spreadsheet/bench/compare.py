"""SpreadsheetBench's cell comparison, as upstream's ``evaluation/evaluation.py`` does it.

Values are normalised first (:func:`transform_value`): numbers (``bool`` too) become floats
rounded to 2 decimals, a ``datetime.time`` its ``str`` without the last three characters
(``"12:34"``), a ``datetime.datetime`` its Excel serial rounded to whole days, a string that
``float()`` accepts that float rounded to 2 decimals; anything else (``None``,
``datetime.date``) stays. Then (:func:`compare_cell_value`) ``""`` and ``None`` are equal in
either order, values of different types are unequal, and otherwise ``==`` decides. Fill and font
colours are not compared (upstream's checks are commented out at the commit the data README
describes).

Example:
    >>> compare_cell_value(3.14159, "3.14"), compare_cell_value(None, "")
    (True, True)
    >>> compare_cell_value(1, "1x"), compare_cell_value(1, True)
    (False, True)
    >>> import datetime as dt
    >>> transform_value(dt.time(12, 34, 56)), transform_value(dt.datetime(2024, 3, 5, 18))
    ('12:34', 45357.0)
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from pathlib import Path
from typing import Any

from envharness.bridges.spreadsheet.recalc import require_openpyxl
from envharness.errors import BridgeError

__all__ = [
    "answer_sheets",
    "answer_values",
    "compare_cell_value",
    "json_value",
    "mismatch_reason",
    "transform_value",
]

_EPOCH = dt.datetime(1899, 12, 30)


def _serial(value: dt.datetime) -> float:
    delta = value - _EPOCH
    return delta.days + delta.seconds / 86400.0


def transform_value(value: Any) -> Any:
    """The value the comparison sees (upstream's ``transform_value``)."""
    if isinstance(value, int | float):
        return round(float(value), 2)
    if isinstance(value, dt.time):
        return str(value)[:-3]
    if isinstance(value, dt.datetime):
        return round(_serial(value), 0)
    if isinstance(value, str):
        try:
            return round(float(value), 2)
        except ValueError:
            return value
    return value


def compare_cell_value(expected: Any, got: Any) -> bool:
    """Whether two cell values count as equal (upstream's ``compare_cell_value``)."""
    v1, v2 = transform_value(expected), transform_value(got)
    if (v1 == "" and v2 is None) or (v1 is None and v2 == ""):
        return True
    if (v1 == "" and v2 == "") or (v1 is None and v2 is None):
        return True
    if type(v1) is not type(v2):
        return False
    return bool(v1 == v2)


def mismatch_reason(expected: Any, got: Any) -> str | None:
    """Why two values differ for the comparison, or ``None`` when they are equal.

    Example:
        >>> mismatch_reason(5, "5.001")
        >>> mismatch_reason(5, None)
        'type mismatch: expected float 5.0, got NoneType None'
        >>> mismatch_reason("a", "b")
        "value mismatch: expected 'a', got 'b'"
    """
    if compare_cell_value(expected, got):
        return None
    v1, v2 = transform_value(expected), transform_value(got)
    if type(v1) is not type(v2):
        return f"type mismatch: expected {type(v1).__name__} {v1!r}, got {type(v2).__name__} {v2!r}"
    return f"value mismatch: expected {v1!r}, got {v2!r}"


def json_value(value: Any) -> Any:
    """A cell value as JSON can hold it (dates and times as ISO text, NaN as text)."""
    if value is None or isinstance(value, bool | int | str):
        return value if not isinstance(value, str) else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    return str(value)


@functools.cache
def _answer_book(path: Path, mtime_ns: int) -> tuple[tuple[str, ...], dict[tuple[str, str], Any]]:
    openpyxl = require_openpyxl()
    try:
        book = openpyxl.load_workbook(path, data_only=True)
    except Exception as e:  # openpyxl raises zipfile, KeyError, ValueError... on a bad file
        raise BridgeError(
            f"cannot read the answer workbook {path}: {type(e).__name__}: {e}",
            bridge="spreadsheet",
        ) from e
    cells = {
        (sheet.title, cell.coordinate): cell.value
        for sheet in book.worksheets
        for row in sheet.iter_rows()
        for cell in row
        if cell.value is not None
    }
    return tuple(book.sheetnames), cells


def _load(path: Path) -> tuple[tuple[str, ...], dict[tuple[str, str], Any]]:
    path = Path(path).resolve()
    return _answer_book(path, path.stat().st_mtime_ns)


def answer_sheets(path: Path) -> list[str]:
    """The sheet names of an answer workbook, in order (read once per file version)."""
    return list(_load(path)[0])


def answer_values(path: Path) -> dict[tuple[str, str], Any]:
    """Every non-empty cell of an answer workbook (cached values), by ``(sheet, "B2")``."""
    return _load(path)[1]
