"""The workbook of one episode: an in-memory copy of the input workbook and its computed values.

:class:`EpisodeBook` loads a task's input workbook (formulas kept as text) into memory, applies
writes to that copy (the shipped file is never written), and gives every cell's value after
recalculation: constants as stored, formulas as the engine
(:mod:`~envharness.bridges.spreadsheet.recalc`) evaluates them. Recalculation happens only when a
value is asked for after a change.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from envharness.bridges.spreadsheet.cells import MAX_ROW, CellRange, column_letter
from envharness.bridges.spreadsheet.recalc import (
    ENGINE_ERROR,
    formula_problem,
    recalculate,
    require_openpyxl,
)
from envharness.bridges.spreadsheet.values import read_typed, show

__all__ = ["LIMITS", "EpisodeBook", "WriteRefused", "typed_text"]

LIMITS = {"cells": 5000, "rows": 10_000, "columns": 702, "text": 32_767, "formula": 8192}
"""What one write may do: cells written, last row and column (``ZZ``) reached, characters of a
text and of a formula. They keep recalculation cheap; Excel's own limits on text and formulas."""


class WriteRefused(ValueError):
    """Raised when a write cannot be applied; the message says why and what to do instead."""


def typed_text(value: Any) -> str:
    """The text that, typed into a cell, stores ``value`` (the inverse of ``read_typed``).

    Example:
        >>> [typed_text(v) for v in (None, 12, 0.5, True, "007", "North", "=A1*2")]
        ['', '12', '0.5', 'TRUE', "'007", 'North', '=A1*2']
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()[:10]
    text = str(value)
    if text.startswith("="):
        return text
    return text if read_typed(text) == text else "'" + text


class EpisodeBook:
    """One episode's workbook.

    Args:
        source: The task's input ``.xlsx`` (read, never modified).

    Raises:
        DependencyNotInstalled: If openpyxl is missing (the ``spreadsheet`` extra).
    """

    def __init__(self, source: Path) -> None:
        openpyxl = require_openpyxl()
        self._book = openpyxl.load_workbook(source)
        self._values: dict[tuple[str, str], Any] | None = None
        self.recalculations = 0

    # -- structure --------------------------------------------------------------------------

    @property
    def sheet_names(self) -> list[str]:
        """The sheets, in workbook order."""
        return list(self._book.sheetnames)

    def has_sheet(self, name: str) -> bool:
        """Whether a sheet has this name (compared without case, as spreadsheets do)."""
        return self.sheet_name(name) is not None

    def sheet_name(self, name: str) -> str | None:
        """The sheet's name as stored, for a name in any case; ``None`` if there is none."""
        for stored in self._book.sheetnames:
            if stored.lower() == name.lower():
                return stored
        return None

    def used_range(self, sheet: str) -> CellRange | None:
        """The smallest range holding every non-empty cell of ``sheet`` (``None`` when empty)."""
        rows, cols = [], []
        for row in self._book[sheet].iter_rows():
            for cell in row:
                if cell.value is not None:
                    rows.append(cell.row)
                    cols.append(cell.column)
        if not rows:
            return None
        return CellRange(sheet, min(cols), min(rows), max(cols), max(rows))

    def last_row(self) -> int:
        """The last row with content on any sheet (at least 1)."""
        ranges = [self.used_range(name) for name in self.sheet_names]
        return max([r.max_row for r in ranges if r is not None] or [1])

    # -- reading ----------------------------------------------------------------------------

    def content(self, sheet: str, row: int, col: int) -> Any:
        """What the cell stores: a constant, or a formula's text (``"=..."``)."""
        return self._book[sheet].cell(row=row, column=col).value

    def value(self, sheet: str, row: int, col: int) -> Any:
        """The cell's value: constants as stored, formulas as recalculated."""
        stored = self.content(sheet, row, col)
        if not (isinstance(stored, str) and stored.startswith("=")):
            return stored
        return self._computed().get((sheet, f"{column_letter(col)}{row}"), ENGINE_ERROR)

    def values(self, area: CellRange) -> list[list[Any]]:
        """The values of a range, row by row."""
        assert area.sheet is not None
        return [
            [self.value(area.sheet, row, col) for col in range(area.min_col, area.max_col + 1)]
            for row in range(area.min_row, area.max_row + 1)
        ]

    def contents(self, area: CellRange) -> list[list[Any]]:
        """What the cells of a range store (formulas as text), row by row."""
        assert area.sheet is not None
        return [
            [self.content(area.sheet, row, col) for col in range(area.min_col, area.max_col + 1)]
            for row in range(area.min_row, area.max_row + 1)
        ]

    def snapshot(self) -> dict[tuple[str, int, int], Any]:
        """Every non-empty cell's content, by ``(sheet, row, col)``."""
        cells: dict[tuple[str, int, int], Any] = {}
        for name in self.sheet_names:
            for row in self._book[name].iter_rows():
                for cell in row:
                    if cell.value is not None:
                        cells[(name, cell.row, cell.column)] = cell.value
        return cells

    def _computed(self) -> dict[tuple[str, str], Any]:
        if self._values is None:
            self._values = self._recalculate()
        return self._values

    def _recalculate(self) -> dict[tuple[str, str], Any]:
        self.recalculations += 1
        return recalculate(self.snapshot(), self.sheet_names)

    def rewrite_formulas(self, rewrite: Callable[[str], str]) -> None:
        """Replaces every formula by ``rewrite(formula)`` (e.g. to add ``_xlfn.`` prefixes)."""
        for name in self.sheet_names:
            for row in self._book[name].iter_rows():
                for cell in row:
                    if isinstance(cell.value, str) and cell.value.startswith("="):
                        cell.value = rewrite(cell.value)
        self._values = None

    def flatten_array_formulas(self) -> int:
        """Stores every array or table formula as its plain formula text; returns how many.

        openpyxl reads such cells as objects, which the tools can neither show nor recalculate;
        as plain formulas they read by implicit intersection (one value per cell).
        """
        count = 0
        for name in self.sheet_names:
            for row in self._book[name].iter_rows():
                for cell in row:
                    if cell.value is not None and not isinstance(
                        cell.value, str | int | float | bool | dt.datetime | dt.date | dt.time
                    ):
                        text = getattr(cell.value, "text", None)
                        cell.value = text if isinstance(text, str) and text else None
                        count += 1
        self._values = None
        return count

    def save(self, path: str | Path) -> None:
        """Saves the workbook as it is now (formulas as formulas) to an ``.xlsx`` file."""
        self._book.save(path)

    # -- writing ----------------------------------------------------------------------------

    def plan_write(
        self, area: CellRange, rows: Sequence[Sequence[str]]
    ) -> list[tuple[int, int, Any]]:
        """Checks a write and returns ``(row, col, content)`` per cell, without applying it.

        ``area`` is either the top-left cell (the values' shape gives the rest) or a range: of
        the values' shape, or of any shape when one value is given, which then fills the range
        (a formula's relative references shift per cell, as when a spreadsheet fills down).

        Raises:
            WriteRefused: If the shape does not fit, a formula cannot be evaluated here, or a
                value cannot be stored; nothing is written then.
        """
        assert area.sheet is not None
        if not rows or any(len(r) != len(rows[0]) for r in rows) or not rows[0]:
            widths = sorted({len(r) for r in rows})
            raise WriteRefused(
                "values must be a non-empty list of rows of equal length (a 2-D grid), got "
                f"{len(rows)} row(s) of length(s) {widths}"
            )
        height, width = len(rows), len(rows[0])
        if area.min_row == 1 and area.max_row == MAX_ROW:
            raise WriteRefused(f"{area.label()} is a whole column; write to a bounded range")
        if area.size == 1:
            area = CellRange(
                area.sheet,
                area.min_col,
                area.min_row,
                area.min_col + width - 1,
                area.min_row + height - 1,
            )
        fill = height == width == 1 and area.size > 1
        if not fill and area.shape != (height, width):
            raise WriteRefused(
                f"{area.label()} is {area.shape[0]} row(s) x {area.shape[1]} column(s) but the "
                f"values are {height} x {width}; give values of the range's shape, one value to "
                "fill the range, or only the top-left cell as the range"
            )
        if area.size > LIMITS["cells"]:
            raise WriteRefused(f"at most {LIMITS['cells']} cells can be written at a time")
        if area.max_row > LIMITS["rows"] or area.max_col > LIMITS["columns"]:
            raise WriteRefused(
                f"the write reaches {column_letter(min(area.max_col, 16_384))}"
                f"{min(area.max_row, MAX_ROW)}; this environment's sheets end at row "
                f"{LIMITS['rows']} and column {column_letter(LIMITS['columns'])}"
            )
        plan: list[tuple[int, int, Any]] = []
        origin = f"{column_letter(area.min_col)}{area.min_row}"
        for row, col in area.coordinates():
            text = rows[0][0] if fill else rows[row - area.min_row][col - area.min_col]
            content = read_typed(text)
            target = f"{column_letter(col)}{row}"
            if len(text) > LIMITS["text"] or (
                text.startswith("=") and len(text) > LIMITS["formula"]
            ):
                raise WriteRefused(
                    f"{target}: too long ({len(text)} characters; at most {LIMITS['text']} for "
                    f"text, {LIMITS['formula']} for a formula)"
                )
            if isinstance(content, str) and content.startswith("="):
                if text.startswith("'"):
                    raise WriteRefused(
                        f"{target}: text starting with '=' cannot be stored; drop the '=' or "
                        "write a formula"
                    )
                if fill and target != origin:
                    content = _translate(content, origin, target)
                problem = formula_problem(content, self.sheet_names)
                if problem is not None:
                    raise WriteRefused(f"{target}: {problem}")
            plan.append((row, col, content))
        return plan

    def apply(self, sheet: str, plan: Iterable[tuple[int, int, Any]]) -> None:
        """Stores a checked plan from :meth:`plan_write`."""
        worksheet = self._book[sheet]
        for row, col, content in plan:
            worksheet.cell(row=row, column=col).value = content
        self._values = None

    # -- showing ----------------------------------------------------------------------------

    def grid(self, area: CellRange, *, formulas: bool = False) -> str:
        """A range as a text table with column letters and row numbers.

        With ``formulas``, formula cells show their text instead of their value.
        """
        assert area.sheet is not None
        letters = [column_letter(c) for c in range(area.min_col, area.max_col + 1)]
        lines = ["    | " + " | ".join(letters)]
        for row in range(area.min_row, area.max_row + 1):
            cells = []
            for col in range(area.min_col, area.max_col + 1):
                stored = self.content(area.sheet, row, col)
                is_formula = isinstance(stored, str) and stored.startswith("=")
                cells.append(
                    stored if formulas and is_formula else show(self.value(area.sheet, row, col))
                )
            lines.append(f"{row:>3} | " + " | ".join(cells))
        return "\n".join(lines)


def _translate(formula: str, origin: str, target: str) -> str:
    """``formula`` written at ``origin``, as filled into ``target`` (relative references shift)."""
    from openpyxl.formula.translate import Translator

    return Translator(formula, origin=origin).translate_formula(target)
