"""Cell addresses: column letters, A1 references and sheet-qualified ranges (``Sales!D2:D41``).

Pure Python (no openpyxl), so task lists and addresses work without the optional packages.

Example:
    >>> parse_range("'Q1 Sales'!b2:C3")
    CellRange(sheet='Q1 Sales', min_col=2, min_row=2, max_col=3, max_row=3)
    >>> parse_range("D7", default_sheet="Sales").label()
    'Sales!D7'
    >>> [str(r) for r in parse_ranges("Summary!B2:B5, Summary!D2", default_sheet="Data")]
    ['Summary!B2:B5', 'Summary!D2']
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "MAX_COL",
    "MAX_ROW",
    "CellRange",
    "RangeError",
    "column_index",
    "column_letter",
    "parse_range",
    "parse_ranges",
    "quote_sheet",
]

MAX_ROW = 1_048_576
"""The last row of an Excel sheet."""
MAX_COL = 16_384
"""The last column of an Excel sheet (``XFD``)."""

_SHEET = r"(?:'(?P<quoted>(?:[^']|'')+)'|(?P<plain>[A-Za-z_][A-Za-z0-9_.]*))!"
_CELL = r"\$?([A-Za-z]{1,3})\$?([1-9][0-9]{0,6})"
_AREA = re.compile(rf"^(?:{_SHEET})?(?P<body>.+)$")
_CELL_RE = re.compile(rf"^{_CELL}$")
_COLS_RE = re.compile(r"^\$?([A-Za-z]{1,3}):\$?([A-Za-z]{1,3})$")
_PLAIN_SHEET = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
_FORMAT_HINT = (
    "write a cell or range in A1 style, optionally with a sheet: 'D2', 'D2:D10', "
    "'Sales!D2:D10', \"'Q1 Sales'!A1:C3\", or whole columns 'Sales!A:C'"
)


class RangeError(ValueError):
    """Raised when a cell or range reference cannot be read."""


def column_index(letters: str) -> int:
    """The 1-based index of a column's letters.

    Example:
        >>> column_index("A"), column_index("z"), column_index("AA"), column_index("XFD")
        (1, 26, 27, 16384)
    """
    index = 0
    for char in letters.upper():
        if not "A" <= char <= "Z":
            raise RangeError(f"expected column letters, got {letters!r}")
        index = index * 26 + ord(char) - 64
    if not 1 <= index <= MAX_COL:
        raise RangeError(f"column {letters!r} is outside A-XFD")
    return index


def column_letter(index: int) -> str:
    """The letters of the 1-based column ``index``.

    Example:
        >>> column_letter(1), column_letter(28), column_letter(16384)
        ('A', 'AB', 'XFD')
    """
    if not 1 <= index <= MAX_COL:
        raise RangeError(f"column index {index} is outside 1-{MAX_COL}")
    letters = ""
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def quote_sheet(name: str) -> str:
    """A sheet name as a reference prefix needs it (quoted when it has spaces or symbols).

    Example:
        >>> quote_sheet("Sales"), quote_sheet("Q1 Sales"), quote_sheet("Bob's")
        ('Sales', "'Q1 Sales'", "'Bob''s'")
    """
    if _PLAIN_SHEET.match(name) and not _CELL_RE.match(name):
        return name
    return "'" + name.replace("'", "''") + "'"


@dataclass(frozen=True)
class CellRange:
    """A rectangle of cells on one sheet (1-based, inclusive bounds).

    Attributes:
        sheet: The sheet's name, or ``None`` when the reference named none.
        min_col: The first column.
        min_row: The first row.
        max_col: The last column.
        max_row: The last row.
    """

    sheet: str | None
    min_col: int
    min_row: int
    max_col: int
    max_row: int

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, columns)``."""
        return self.max_row - self.min_row + 1, self.max_col - self.min_col + 1

    @property
    def size(self) -> int:
        """The number of cells."""
        rows, cols = self.shape
        return rows * cols

    def body(self) -> str:
        """The A1 text without the sheet, e.g. ``D2:D10`` (``D2`` for one cell)."""
        first = f"{column_letter(self.min_col)}{self.min_row}"
        if self.size == 1:
            return first
        return f"{first}:{column_letter(self.max_col)}{self.max_row}"

    def label(self) -> str:
        """The sheet-qualified text, e.g. ``Sales!D2:D10``."""
        return self.body() if self.sheet is None else f"{quote_sheet(self.sheet)}!{self.body()}"

    def __str__(self) -> str:
        return self.label()

    def coordinates(self) -> Iterator[tuple[int, int]]:
        """``(row, col)`` of every cell, row by row."""
        for row in range(self.min_row, self.max_row + 1):
            for col in range(self.min_col, self.max_col + 1):
                yield row, col

    def cells(self) -> list[str]:
        """The A1 names of every cell, row by row (e.g. ``['D2', 'D3']``)."""
        return [f"{column_letter(col)}{row}" for row, col in self.coordinates()]

    def with_sheet(self, sheet: str) -> CellRange:
        """This range on ``sheet``."""
        return CellRange(sheet, self.min_col, self.min_row, self.max_col, self.max_row)

    def clip_rows(self, last_row: int) -> CellRange:
        """This range without the rows after ``last_row`` (at least its first row is kept)."""
        return CellRange(
            self.sheet,
            self.min_col,
            self.min_row,
            self.max_col,
            max(self.min_row, min(self.max_row, last_row)),
        )

    def contains(self, row: int, col: int) -> bool:
        """Whether the cell at ``(row, col)`` is inside this range."""
        return self.min_row <= row <= self.max_row and self.min_col <= col <= self.max_col


def _cell(text: str) -> tuple[int, int]:
    match = _CELL_RE.match(text)
    if match is None:
        raise RangeError(f"cannot read the cell {text!r}; {_FORMAT_HINT}")
    row = int(match.group(2))
    if row > MAX_ROW:
        raise RangeError(f"row {row} is past the last row {MAX_ROW}")
    return column_index(match.group(1)), row


def parse_range(text: str, default_sheet: str | None = None) -> CellRange:
    """Reads ``D2``, ``D2:D10``, ``Sales!D2:D10``, ``'Q1 Sales'!A1`` or ``Sales!A:C``.

    A whole-column reference (``A:C``) spans rows 1 to :data:`MAX_ROW`; callers clip it to the
    rows in use. Corners may come in any order (``D10:D2`` is ``D2:D10``).

    Args:
        text: The reference.
        default_sheet: The sheet of a reference that names none.

    Raises:
        RangeError: If the text is not a reference, naming the accepted forms.
    """
    if not isinstance(text, str) or not text.strip():
        raise RangeError(f"expected a cell or range, got {text!r}; {_FORMAT_HINT}")
    match = _AREA.match(text.strip())
    if match is None:  # pragma: no cover - the pattern accepts any non-empty text
        raise RangeError(f"cannot read {text!r}; {_FORMAT_HINT}")
    sheet = match.group("plain")
    if match.group("quoted") is not None:
        sheet = match.group("quoted").replace("''", "'")
    if sheet is None:
        sheet = default_sheet
    body = match.group("body").strip()
    columns = _COLS_RE.match(body)
    if columns is not None:
        first, last = column_index(columns.group(1)), column_index(columns.group(2))
        return CellRange(sheet, min(first, last), 1, max(first, last), MAX_ROW)
    corners = body.split(":")
    if len(corners) > 2:
        raise RangeError(f"cannot read {text!r}; {_FORMAT_HINT}")
    (col1, row1), (col2, row2) = _cell(corners[0]), _cell(corners[-1])
    return CellRange(sheet, min(col1, col2), min(row1, row2), max(col1, col2), max(row1, row2))


def parse_ranges(text: str, default_sheet: str | None = None) -> list[CellRange]:
    """Reads a comma-separated list of ranges (``"Summary!B2:B5, Summary!D2"``).

    Raises:
        RangeError: If any part is not a reference.
    """
    parts = [part for part in _split_outside_quotes(text) if part.strip()]
    if not parts:
        raise RangeError(f"expected at least one range, got {text!r}; {_FORMAT_HINT}")
    return [parse_range(part, default_sheet) for part in parts]


def _split_outside_quotes(text: str) -> list[str]:
    """Splits on commas that are not inside a quoted sheet name."""
    parts, current, quoted = [], [], False
    for char in text:
        if char == "'":
            quoted = not quoted
        if char == "," and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts
