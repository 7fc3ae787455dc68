"""Regenerates the spreadsheet task data: workbooks, ``tasks.json`` and (optionally) engine cases.

Run ``python -m envharness.bridges.spreadsheet.build_tasks`` (add ``--libreoffice`` to also
check every reference solution with LibreOffice and rebuild ``engine_cases.json``; that needs
``soffice``, e.g. Debian's ``libreoffice-calc-nogui``). Output is byte-for-byte reproducible: the
data come from seeded generators and the ``.xlsx`` files carry fixed timestamps.

Every run checks that the bridge's engine, applying each task's reference solution to its input
workbook, reproduces the Python-computed answers; a mismatch stops the build.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import re
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envharness.bridges.spreadsheet.cells import parse_range
from envharness.bridges.spreadsheet.generators import Rows, Spec, all_specs
from envharness.bridges.spreadsheet.recalc import require_openpyxl
from envharness.bridges.spreadsheet.tasks import DATA_DIR
from envharness.bridges.spreadsheet.values import compare, json_value

__all__ = ["build", "build_engine_cases", "main", "write_workbook"]

_STAMP = dt.datetime(2024, 1, 1)
_ZIP_TIME = (2024, 1, 1, 0, 0, 0)
_MODIFIED = re.compile(rb"(<dcterms:modified[^>]*>)[^<]*(</dcterms:modified>)")


def write_workbook(path: Path, sheets: dict[str, Rows]) -> None:
    """Writes sheets (rows from ``A1``) to ``path`` with fixed timestamps (reproducible bytes)."""
    openpyxl = require_openpyxl()
    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    book.properties.created = book.properties.modified = _STAMP
    buffer = io.BytesIO()
    book.save(buffer)
    _normalise_zip(buffer.getvalue(), path)


def _normalise_zip(data: bytes, path: Path) -> None:
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(path, "w") as target:
        for info in source.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=_ZIP_TIME)
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = info.external_attr
            data = source.read(info.filename)
            if info.filename == "docProps/core.xml":  # openpyxl stamps the save time here
                data = _MODIFIED.sub(rb"\g<1>2024-01-01T00:00:00Z\g<2>", data)
            target.writestr(fixed, data)


def _with_answers(spec: Spec) -> dict[str, Rows]:
    sheets = {name: [list(row) for row in rows] for name, rows in spec.sheets.items()}
    for label, grid in spec.answers.items():
        area = parse_range(label)
        rows = sheets[area.sheet]
        for dr, values in enumerate(grid):
            r = area.min_row - 1 + dr
            while len(rows) <= r:
                rows.append([])
            for dc, value in enumerate(values):
                c = area.min_col - 1 + dc
                rows[r].extend([None] * (c + 1 - len(rows[r])))
                rows[r][c] = value
    return sheets


def _record(spec: Spec) -> dict[str, Any]:
    return {
        "id": spec.task_id,
        "split": spec.split,
        "category": spec.category,
        "instruction": spec.instruction,
        "input": f"{spec.task_id}.input.xlsx",
        "answer": f"{spec.task_id}.answer.xlsx",
        "answer_position": spec.answer_position,
        "oracle": spec.oracle,
        "max_steps": spec.max_steps,
        "shuffle_rows": spec.shuffle_rows,
    }


def build(out: Path) -> list[Spec]:
    """Writes every task's workbooks to ``out/workbooks`` and ``out/tasks.json``."""
    specs = all_specs()
    books = out / "workbooks"
    books.mkdir(parents=True, exist_ok=True)
    for spec in specs:
        write_workbook(books / f"{spec.task_id}.input.xlsx", spec.sheets)
        write_workbook(books / f"{spec.task_id}.answer.xlsx", _with_answers(spec))
    payload = {"version": 1, "tasks": [_record(spec) for spec in specs]}
    (out / "tasks.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    return specs


# -- checks -------------------------------------------------------------------------------------


def _solved_copy(spec: Spec, source: Path, target: Path, *, xlfn: bool = False) -> None:
    """Writes ``source`` with the task's reference solution applied to ``target``."""
    from envharness.bridges.spreadsheet.workbook import EpisodeBook

    book = EpisodeBook(source)
    for write in spec.oracle:
        area = parse_range(write["range"])
        book.apply(area.sheet, book.plan_write(area, write["values"]))
    if xlfn:
        book.rewrite_formulas(_add_xlfn)
    book.save(target)


def _add_xlfn(formula: str) -> str:
    from envharness.bridges.spreadsheet.generators.engine_cases import XLFN

    names = "|".join(re.escape(name) for name in sorted(XLFN, key=len, reverse=True))
    return re.sub(rf"(?<![\w.])({names})\(", r"_xlfn.\1(", formula)


def _mismatches(spec: Spec, value_of: Any) -> list[str]:
    problems = []
    for label, grid in spec.answers.items():
        area = parse_range(label)
        for (row, col), expected in zip(
            area.coordinates(), (v for r in grid for v in r), strict=True
        ):
            reason = compare(expected, value_of(area.sheet, row, col))
            if reason:
                problems.append(f"{spec.task_id} {area.sheet}!R{row}C{col}: {reason}")
    return problems


def check_engine(specs: Sequence[Spec], out: Path) -> list[str]:
    """Applies each reference solution with the bridge's engine; lists answer mismatches."""
    from envharness.bridges.spreadsheet.workbook import EpisodeBook

    problems = []
    for spec in specs:
        book = EpisodeBook(out / "workbooks" / f"{spec.task_id}.input.xlsx")
        for write in spec.oracle:
            area = parse_range(write["range"])
            book.apply(area.sheet, book.plan_write(area, write["values"]))
        problems += _mismatches(spec, book.value)
    return problems


def _soffice(files: list[Path], out: Path) -> None:
    binary = shutil.which("soffice") or shutil.which("libreoffice")
    if binary is None:
        raise SystemExit("--libreoffice needs soffice (apt-get install libreoffice-calc-nogui)")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [binary, f"-env:UserInstallation=file://{profile}", "--headless", "--calc",
             "--convert-to", "xlsx", "--outdir", str(out), *map(str, files)],
            check=True, capture_output=True, timeout=600,
        )  # fmt: skip


def check_libreoffice(specs: Sequence[Spec], out: Path) -> list[str]:
    """Recalculates each solved task with LibreOffice; lists answer mismatches."""
    openpyxl = require_openpyxl()
    problems = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        files = []
        for spec in specs:
            target = folder / f"{spec.task_id}.xlsx"
            _solved_copy(spec, out / "workbooks" / f"{spec.task_id}.input.xlsx", target, xlfn=True)
            files.append(target)
        _soffice(files, folder / "lo")
        for spec in specs:
            book = openpyxl.load_workbook(folder / "lo" / f"{spec.task_id}.xlsx", data_only=True)
            problems += _mismatches(spec, lambda s, r, c, b=book: b[s].cell(r, c).value)
    return problems


def build_engine_cases(out: Path) -> Path:
    """Evaluates the engine cases with LibreOffice and writes ``out/engine_cases.json``."""
    from envharness.bridges.spreadsheet.generators import engine_cases as ec

    openpyxl = require_openpyxl()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        sheets = _case_sheets(ec, [_add_xlfn(f) for f in ec.CASES])
        write_workbook(folder / "cases.xlsx", sheets)
        _soffice([folder / "cases.xlsx"], folder / "lo")
        data = openpyxl.load_workbook(folder / "lo" / "cases.xlsx", data_only=True)["Data"]
        cases = []
        for index, formula in enumerate(ec.CASES, start=1):
            if formula in ec.DOCUMENTED:
                expected, source = ec.DOCUMENTED[formula], "excel-documentation"
            else:
                expected, source = data.cell(index, 11).value, "libreoffice-7.4"
            if isinstance(expected, dt.datetime):  # a date result: its serial number
                expected = (expected - dt.datetime(1899, 12, 30)).days
            cases.append({"formula": formula, "expected": json_value(expected), "source": source})
    payload = {
        "version": 1,
        "sheets": {
            "Data": [[json_value(v) for v in row] for row in ec.DATA],
            "Table": [[json_value(v) for v in row] for row in ec.TABLE],
            "Other": [[json_value(v) for v in row] for row in ec.OTHER],
        },
        "cases": cases,
    }
    path = out / "engine_cases.json"
    path.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    return path


def _case_sheets(ec: Any, formulas: list[str]) -> dict[str, Rows]:
    rows = [list(row) for row in ec.DATA]
    for index, (low, grade) in enumerate(ec.TABLE, start=1):
        while len(rows) <= index:
            rows.append([])
        rows[index] += [None] * (7 - len(rows[index]))
        rows[index][7:9] = [low, grade]
    for index, formula in enumerate(formulas):
        while len(rows) <= index:
            rows.append([])
        rows[index] += [None] * (10 - len(rows[index]))
        rows[index][10:11] = [formula]
    return {"Data": rows, "Other": [list(row) for row in ec.OTHER]}


def evaluate_engine_cases(path: Path) -> list[tuple[str, Any, Any]]:
    """``(formula, expected, engine value)`` for every case of an ``engine_cases.json``."""
    from envharness.bridges.spreadsheet.generators import engine_cases as ec

    payload = json.loads(path.read_text(encoding="utf-8"))
    formulas = [case["formula"] for case in payload["cases"]]
    from envharness.bridges.spreadsheet.workbook import EpisodeBook

    with tempfile.TemporaryDirectory() as scratch:
        workbook = Path(scratch) / "cases.xlsx"
        write_workbook(workbook, _case_sheets(ec, formulas))
        book = EpisodeBook(workbook)  # evaluated as an episode evaluates them
        return [
            (case["formula"], case["expected"], book.value("Data", index, 11))
            for index, case in enumerate(payload["cases"], start=1)
        ]


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: rebuild the data, check it, optionally with LibreOffice."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DATA_DIR, help="where to write the data")
    parser.add_argument(
        "--libreoffice",
        action="store_true",
        help="also check the answers with LibreOffice and rebuild engine_cases.json",
    )
    args = parser.parse_args(argv)
    specs = build(args.out)
    problems = check_engine(specs, args.out)
    if args.libreoffice:
        problems += [f"libreoffice: {p}" for p in check_libreoffice(specs, args.out)]
        build_engine_cases(args.out)
    for problem in problems:
        print(problem)
    print(f"{len(specs)} tasks written to {args.out}; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
