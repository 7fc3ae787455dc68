"""The verifier: the answer range after recalculation against the answer workbook's values.

Every cell of the task's answer position is compared with the same cell of the answer workbook
(:func:`~envharness.bridges.spreadsheet.values.compare`: numbers within a relative and absolute
tolerance of 1e-6, text exactly after stripping surrounding whitespace, booleans as booleans,
empty matching empty). Success needs every cell to match; the score is the fraction that do.
Only the answer range counts: how the agent got there (formulas or typed values, helper cells
elsewhere) does not.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from envharness.bridges.spreadsheet.cells import column_letter, parse_ranges
from envharness.bridges.spreadsheet.recalc import require_openpyxl
from envharness.bridges.spreadsheet.tasks import Task
from envharness.bridges.spreadsheet.values import compare, json_value
from envharness.bridges.spreadsheet.workbook import EpisodeBook
from envharness.core import Evaluation

__all__ = ["MAX_REPORTED", "answer_values", "verify"]

MAX_REPORTED = 10
"""How many mismatching cells the evaluation details list."""


@functools.cache
def _answer_book(path: Path) -> dict[tuple[str, int, int], Any]:
    openpyxl = require_openpyxl()
    book = openpyxl.load_workbook(path, data_only=True)
    return {
        (sheet.title, cell.row, cell.column): cell.value
        for sheet in book.worksheets
        for row in sheet.iter_rows()
        for cell in row
        if cell.value is not None
    }


def answer_values(task: Task) -> dict[tuple[str, int, int], Any]:
    """The expected value of every cell of the answer position, by ``(sheet, row, col)``."""
    cells = _answer_book(task.answer_path)
    expected: dict[tuple[str, int, int], Any] = {}
    for area in parse_ranges(task.answer_position):
        assert area.sheet is not None
        for row, col in area.coordinates():
            expected[(area.sheet, row, col)] = cells.get((area.sheet, row, col))
    return expected


def verify(book: EpisodeBook, task: Task) -> Evaluation:
    """Compares the answer range of ``book`` with the task's answer workbook.

    Returns:
        ``success`` when every cell matches, ``score`` the fraction that do; ``details`` give
        the answer position, the counts and up to :data:`MAX_REPORTED` mismatches (cell,
        expected, got, reason).
    """
    expected = answer_values(task)
    mismatches: list[dict[str, Any]] = []
    matched = 0
    for (sheet, row, col), want in expected.items():
        got = book.value(sheet, row, col)
        reason = compare(want, got)
        if reason is None:
            matched += 1
        elif len(mismatches) < MAX_REPORTED:
            mismatches.append(
                {
                    "cell": f"{sheet}!{column_letter(col)}{row}",
                    "expected": json_value(want),
                    "got": json_value(got),
                    "reason": reason,
                }
            )
    total = len(expected)
    return Evaluation(
        matched == total,
        matched / total if total else 0.0,
        {
            "answer_position": task.answer_position,
            "cells": total,
            "matched": matched,
            "mismatches": mismatches,
        },
    )
