"""SpreadsheetBench datasets in the benchmark's own layout: ``dataset.json`` and ``spreadsheet/``.

A dataset folder holds ``dataset.json`` (a list of task records with upstream's fields) and, per
record, ``spreadsheet/<id>/<n>_<id>_{input,answer}.xlsx`` for the test cases ``n = 1, 2, 3``.
Records keep their id's type (an int or a string such as ``"79-7"``); task ids are
``str(record["id"])``. The folder is one split: point ``dataset=`` at another folder for another.

Example:
    >>> import pathlib
    >>> folder = pathlib.Path("../shared/data/spreadsheetbench")
    >>> tasks = load_dataset(folder) if folder.is_dir() else {"79-7": None}
    >>> "79-7" in tasks
    True
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envharness.errors import BridgeError, UnknownTaskError

__all__ = [
    "CASES",
    "REQUIRED_FIELDS",
    "AnswerPart",
    "BenchTask",
    "answer_parts",
    "get_bench_task",
    "list_bench_ids",
    "load_dataset",
]

CASES = (1, 2, 3)
"""The test cases every task has (upstream's evaluation always tries these three)."""
REQUIRED_FIELDS = ("id", "instruction", "spreadsheet_path", "instruction_type", "answer_position")
"""The fields every record needs (Sheet-Level records also carry ``answer_sheet`` and
``data_position``, which scoring does not read)."""
INSTRUCTION_TYPES = ("Cell-Level Manipulation", "Sheet-Level Manipulation")

_BRIDGE = "spreadsheet"
_CELL = re.compile(r"^\$?([A-Z]{1,3})\$?([1-9][0-9]{0,6})$")


@dataclass(frozen=True)
class AnswerPart:
    """One comma-separated part of ``answer_position``, read as upstream's evaluation reads it.

    Attributes:
        sheet: The sheet name, or ``None`` for a part without ``!`` (the answer workbook's first
            sheet).
        cell_range: ``"A2:B19"`` or a single cell such as ``"E1"``.
        cells: The cells' names in upstream's order (column by column).
    """

    sheet: str | None
    cell_range: str
    cells: tuple[str, ...]

    def label(self, first_sheet: str | None = None) -> str:
        """``Sheet!A2:B19`` (the sheet quoted when it needs it), for messages."""
        sheet = self.sheet if self.sheet is not None else first_sheet
        if sheet is None:
            return self.cell_range
        from envharness.bridges.spreadsheet.cells import quote_sheet

        return f"{quote_sheet(sheet)}!{self.cell_range}"


def _column_number(letters: str) -> int:
    number = 0
    for char in letters:
        number = number * 26 + ord(char) - 64
    return number


def _column_name(number: int) -> str:
    name = ""
    while number > 0:
        number, rest = divmod(number - 1, 26)
        name = chr(65 + rest) + name
    return name


def _cell(text: str, position: str) -> tuple[int, int]:
    match = _CELL.match(text)
    if match is None:
        raise ValueError(
            f"cannot read the cell {text!r} in answer_position {position!r}; expected A1-style "
            "cells in upper case such as 'B2' or 'B2:D9'"
        )
    return _column_number(match.group(1)), int(match.group(2))


def answer_parts(position: str) -> list[AnswerPart]:
    """Splits ``answer_position`` as upstream's ``compare_workbooks`` does.

    The text is split on ``,``; a part with ``!`` is a sheet and a range, and surrounding
    ``'`` are stripped from both (so ``'Sheet1!'A2:B19`` is sheet ``Sheet1``, range
    ``A2:B19``); a part without ``!`` is on the answer workbook's first sheet.

    Raises:
        ValueError: If a part has more than one ``!`` or its range is not A1-style.

    Example:
        >>> [(p.sheet, p.cell_range) for p in answer_parts("'Sheet1!'A2:B3,E1")]
        [('Sheet1', 'A2:B3'), (None, 'E1')]
        >>> answer_parts("A1:B2")[0].cells
        ('A1', 'A2', 'B1', 'B2')
    """
    parts = []
    for raw in position.split(","):
        if "!" in raw:
            pieces = raw.split("!")
            if len(pieces) != 2:
                raise ValueError(f"the part {raw!r} of answer_position has more than one '!'")
            sheet: str | None = pieces[0].strip("'")
            body = pieces[1]
        else:
            sheet, body = None, raw
        body = body.strip("'")
        if ":" in body:
            first, _, last = body.partition(":")
            (c1, r1), (c2, r2) = _cell(first, position), _cell(last, position)
            cells = tuple(
                f"{_column_name(col)}{row}"
                for col in range(c1, c2 + 1)
                for row in range(r1, r2 + 1)
            )
        else:
            _cell(body, position)
            cells = (body,)
        if not cells:
            raise ValueError(f"the range {body!r} of answer_position holds no cell")
        parts.append(AnswerPart(sheet, body, cells))
    return parts


@dataclass(frozen=True)
class BenchTask:
    """One SpreadsheetBench task of a dataset folder.

    Attributes:
        task_id: ``str(record["id"])``.
        record: The record as ``dataset.json`` has it (the id keeps its type).
        folder: The dataset folder.
    """

    task_id: str
    record: dict[str, Any]
    folder: Path

    @property
    def instruction(self) -> str:
        """The user's request."""
        return str(self.record["instruction"])

    @property
    def instruction_type(self) -> str:
        """``"Cell-Level Manipulation"`` or ``"Sheet-Level Manipulation"``."""
        return str(self.record["instruction_type"])

    @property
    def answer_position(self) -> str:
        """The cells the verifier compares, as the record gives them."""
        return str(self.record["answer_position"])

    @property
    def parts(self) -> list[AnswerPart]:
        """``answer_position`` split into its parts (checked when the dataset was read)."""
        return answer_parts(self.answer_position)

    def case_path(self, case: int, kind: str) -> Path:
        """The workbook of test case ``case``: ``kind`` is ``"input"`` or ``"answer"``."""
        name = f"{case}_{self.record['id']}_{kind}.xlsx"
        return self.folder / str(self.record["spreadsheet_path"]) / name

    def input_path(self, case: int) -> Path:
        """The input workbook of test case ``case``."""
        return self.case_path(case, "input")

    def answer_path(self, case: int) -> Path:
        """The answer workbook of test case ``case``."""
        return self.case_path(case, "answer")


def _error(message: str) -> BridgeError:
    return BridgeError(message, bridge=_BRIDGE)


def _check_record(record: Any, index: int, source: Path) -> str:
    """Checks one record's fields and types; returns its task id."""
    where = f"{source}: record #{index}"
    if not isinstance(record, dict):
        raise _error(
            f"{where} is a {type(record).__name__}, expected an object with the fields "
            f"{', '.join(REQUIRED_FIELDS)}"
        )
    if "id" in record:
        where += f" (id {record['id']!r})"
    for field in REQUIRED_FIELDS:
        if field not in record:
            raise _error(
                f"{where} has no field {field!r}; every record needs {', '.join(REQUIRED_FIELDS)}"
            )
    rid = record["id"]
    if isinstance(rid, bool) or not isinstance(rid, int | str) or str(rid) == "":
        raise _error(f"{where}: 'id' must be an int or a non-empty string, got {rid!r}")
    for field in REQUIRED_FIELDS[1:]:
        if not isinstance(record[field], str) or not record[field]:
            raise _error(f"{where}: {field!r} must be a non-empty string, got {record[field]!r}")
    if record["instruction_type"] not in INSTRUCTION_TYPES:
        raise _error(
            f"{where}: 'instruction_type' is {record['instruction_type']!r}; expected one of "
            f"{', '.join(INSTRUCTION_TYPES)}"
        )
    try:
        answer_parts(record["answer_position"])
    except ValueError as e:
        raise _error(f"{where}: {e}") from e
    return str(rid)


@functools.cache
def _read(folder: Path, mtime_ns: int) -> dict[str, BenchTask]:
    source = folder / "dataset.json"
    try:
        records = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise _error(f"cannot read {source}: {e}") from e
    if not isinstance(records, list):
        raise _error(
            f"{source} must hold a JSON list of task records, got {type(records).__name__}"
        )
    tasks: dict[str, BenchTask] = {}
    for index, record in enumerate(records):
        task_id = _check_record(record, index, source)
        if task_id in tasks:
            raise _error(f"{source}: the id {task_id!r} appears twice (records must be unique)")
        tasks[task_id] = BenchTask(task_id, dict(record), folder)
    return tasks


def _folder(dataset: object) -> Path:
    if not isinstance(dataset, str | Path):
        raise _error(f"dataset must be a folder path (str or Path), got {dataset!r}")
    folder = Path(dataset).expanduser().resolve()
    if not (folder / "dataset.json").is_file():
        raise _error(
            f"{folder} has no dataset.json; point dataset= at a SpreadsheetBench folder holding "
            "dataset.json and spreadsheet/<id>/<n>_<id>_{input,answer}.xlsx"
        )
    return folder


def load_dataset(dataset: str | Path) -> dict[str, BenchTask]:
    """Every task of a dataset folder by task id, in file order (reread when the file changes).

    Raises:
        BridgeError: If the folder has no ``dataset.json``, or a record is malformed (naming the
            record and the field).
    """
    folder = _folder(dataset)
    return dict(_read(folder, (folder / "dataset.json").stat().st_mtime_ns))


def list_bench_ids(dataset: str | Path) -> list[str]:
    """The task ids of a dataset folder, in file order."""
    return list(load_dataset(dataset))


def get_bench_task(dataset: str | Path, task_id: object) -> BenchTask:
    """The task ``task_id`` of a dataset folder, with its six workbooks checked.

    Raises:
        UnknownTaskError: If the dataset has no record with that id.
        BridgeError: If a workbook is missing or unreadable, or ``answer_position`` names a
            sheet an answer workbook lacks.
    """
    tasks = load_dataset(dataset)
    if not isinstance(task_id, str) or task_id not in tasks:
        shown = ", ".join(list(tasks)[:12]) + (" ..." if len(tasks) > 12 else "")
        raise UnknownTaskError(
            f"the dataset {_folder(dataset)} has no task {task_id!r} (task ids are str(record "
            f"id)); its ids: {shown}",
            bridge=_BRIDGE,
            task_id=task_id if isinstance(task_id, str) else None,
        )
    task = tasks[task_id]
    _check_files(task)
    return task


def _check_files(task: BenchTask) -> None:
    from envharness.bridges.spreadsheet.bench.compare import answer_sheets

    for case in CASES:
        for kind in ("input", "answer"):
            path = task.case_path(case, kind)
            if not path.is_file():
                raise _error(
                    f"task {task.task_id!r}: test case {case}'s {kind} workbook {path} is missing"
                )
        sheets = answer_sheets(task.answer_path(case))
        for part in task.parts:
            if part.sheet is not None and part.sheet not in sheets:
                raise _error(
                    f"task {task.task_id!r}: answer_position {task.answer_position!r} names the "
                    f"sheet {part.sheet!r}, which test case {case}'s answer workbook "
                    f"{task.answer_path(case).name} does not have (its sheets: "
                    f"{', '.join(sheets)})"
                )
