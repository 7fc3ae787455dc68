"""The oracle: a solution program that writes each test case's answer values.

The program knows the three cases by the SHA-256 of their input files and, for the case it is
given, writes every answer cell's value and number format from that case's answer workbook (cached
values, so formulas become their results) into the input and saves it (the format matters: a
number in a date-formatted cell reads back as a date). Cells the answer leaves empty are
cleared. ``cases`` limits it to some test cases: on the others it saves the input unchanged
(the tests use ``cases=(1,)`` for a program that is right on case 1 only).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from envharness.bridges.spreadsheet.bench.compare import answer_values
from envharness.bridges.spreadsheet.bench.dataset import CASES, BenchTask
from envharness.bridges.spreadsheet.bench.verifier import answer_cells
from envharness.bridges.spreadsheet.recalc import require_openpyxl

__all__ = ["oracle_program"]

_TEMPLATE = """import datetime
import hashlib

import openpyxl

ANSWERS = {answers}

with open(input_path, "rb") as f:
    key = hashlib.sha256(f.read()).hexdigest()
wb = openpyxl.load_workbook(input_path)
for sheet, cells in ANSWERS.get(key, {{}}).items():
    ws = wb[sheet] if sheet in wb.sheetnames else wb.create_sheet(sheet)
    for name, (value, number_format) in cells.items():
        cell = ws[name]
        if type(cell).__name__ == "MergedCell":
            if value is None:
                continue
            for merged in list(ws.merged_cells.ranges):
                if name in merged:
                    ws.unmerge_cells(str(merged))
            cell = ws[name]
        cell.value = value
        cell.number_format = number_format
        if isinstance(value, str) and value.startswith("="):
            cell.data_type = "s"
wb.save(output_path)
"""


def oracle_program(task: BenchTask, cases: Iterable[int] = CASES) -> str:
    """The source of the oracle program for ``task`` (answers for ``cases`` only)."""
    answers: dict[str, dict[str, dict[str, tuple[object, str]]]] = {}
    for case in cases:
        key = hashlib.sha256(task.input_path(case).read_bytes()).hexdigest()
        values = answer_values(task.answer_path(case))
        book = require_openpyxl().load_workbook(task.answer_path(case), data_only=True)
        sheets: dict[str, dict[str, tuple[object, str]]] = {}
        for sheet, name, _ in answer_cells(task, case):
            number_format = book[sheet][name].number_format
            sheets.setdefault(sheet, {})[name] = (values.get((sheet, name)), number_format)
        answers[key] = sheets
    return _TEMPLATE.format(answers=repr(answers))


_FORMULA_TEMPLATE = """import openpyxl

FORMULAS = {formulas}

wb = openpyxl.load_workbook(input_path)
for sheet, cells in FORMULAS.items():
    ws = wb[sheet]
    for name, formula in cells.items():
        ws[name] = formula
wb.save(output_path)
"""


def formula_program(task: BenchTask) -> str:
    """A program writing case 1's answer formulas (as text, no values) into any case's input.

    On a task whose answer cells are formulas that hold for every case, this solves all three
    the way a spreadsheet user would, and its cells must be recalculated to be scored.
    """
    book = require_openpyxl().load_workbook(task.answer_path(1))
    formulas: dict[str, dict[str, str]] = {}
    for sheet, name, _ in answer_cells(task, 1):
        value = book[sheet][name].value
        text = value if isinstance(value, str) else getattr(value, "text", None)
        if isinstance(text, str) and text.startswith("="):
            formulas.setdefault(sheet, {})[name] = text
    return _FORMULA_TEMPLATE.format(formulas=repr(formulas))
