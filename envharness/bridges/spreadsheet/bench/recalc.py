"""The values a solution's workbook holds in the answer cells, its formulas recalculated.

Upstream's evaluation reads the solution's workbook with ``data_only=True``, after LibreOffice (or
Excel) opened and saved it so that formulas carry cached values. A workbook saved by openpyxl
has none, so here the formulas are recalculated first. Which calculator is used when
(``recalc=`` of the bridge, :data:`MODES`):

- Every answer cell is read as upstream reads it (``data_only=True``): constants as stored, a
  formula by its cached value when the file carries formula values (some formula cell has a
  value: it was saved by a spreadsheet application, or is an input left as it was). A file
  whose formulas carry no values -- what openpyxl writes, so every workbook the agent's edits or
  its program produced -- has its answer cells' formulas recalculated; when they hold none the
  method is ``"none"``.
- ``"auto"`` (the default): the project's engine (:mod:`~envharness.bridges.spreadsheet.recalc`,
  the ``formulas`` package) when every formula of the workbook is one it evaluates faithfully
  (:func:`~envharness.bridges.spreadsheet.recalc.formula_problem` finds nothing, no array or
  table formula, at most :data:`ENGINE_MAX_FORMULAS` formulas) and it gives every answer cell a
  value; otherwise -- where its result could differ from a spreadsheet's, or it would be slow --
  LibreOffice headless (``soffice --convert-to xlsx``, a private
  profile per run), whose cached values are then read as upstream reads them. Without
  ``soffice`` on ``PATH`` the engine's values are used and the case records why.
- ``"engine"``: always the engine (cells it cannot evaluate read as ``#ENGINE!``).
- ``"libreoffice"``: always LibreOffice when an answer cell holds a formula (the bridge refuses
  this mode when ``soffice`` is missing).

Engine results are made to read as openpyxl reads LibreOffice's cached values: an error is its
code as text (``"#DIV/0!"``), and a number in a cell with a date or time format becomes a
``datetime`` (or ``time``), as openpyxl converts it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envharness.bridges.spreadsheet.recalc import (
    CIRCULAR,
    ENGINE_ERROR,
    formula_problem,
    recalculate,
    require_openpyxl,
)
from envharness.bridges.spreadsheet.values import CellError
from envharness.errors import BridgeError

__all__ = [
    "ENGINE_MAX_FORMULAS",
    "LIBREOFFICE_TIMEOUT",
    "MODES",
    "CellValues",
    "libreoffice_recalculate",
    "read_values",
    "soffice",
]

MODES = ("auto", "engine", "libreoffice")
"""The recalculation modes (see the module docstring)."""
ENGINE_MAX_FORMULAS = 300
"""In ``"auto"`` mode, a workbook with more formulas than this goes to LibreOffice when it is
installed: the engine evaluates every formula of the workbook and takes minutes on such a
workbook (215 s measured on task 49278's 1,326 formulas), LibreOffice seconds."""
LIBREOFFICE_TIMEOUT = 180.0
"""Seconds one LibreOffice conversion may take."""


def soffice() -> str | None:
    """The ``soffice`` executable on ``PATH`` (``$ENVHARNESS_SOFFICE`` overrides), or ``None``."""
    override = os.environ.get("ENVHARNESS_SOFFICE")
    if override:
        return override if shutil.which(override) else None
    return shutil.which("soffice") or shutil.which("libreoffice")


def libreoffice_recalculate(path: Path, folder: Path) -> Path:
    """Opens ``path`` in LibreOffice headless and saves it as ``.xlsx`` in ``folder``.

    LibreOffice recalculates on load and caches every formula's value in the saved file. A
    private profile (``-env:UserInstallation``) inside ``folder`` keeps parallel runs apart.

    Raises:
        BridgeError: If ``soffice`` is missing, fails, times out or writes no file.
    """
    program = soffice()
    if program is None:
        raise BridgeError(
            "LibreOffice is not installed (no soffice on PATH); install it (Debian: apt-get "
            "install libreoffice-calc) or use recalc='engine'",
            bridge="spreadsheet",
        )
    out = folder / "libreoffice"
    out.mkdir(parents=True, exist_ok=True)
    profile = (folder / "lo-profile").resolve().as_uri()
    command = [
        program,
        f"-env:UserInstallation={profile}",
        "--headless",
        "--norestore",
        "--nolockcheck",
        "--calc",
        "--convert-to",
        "xlsx:Calc MS Excel 2007 XML",
        "--outdir",
        str(out),
        str(path),
    ]
    env = {**os.environ, "HOME": str(folder)}
    try:
        done = subprocess.run(
            command, capture_output=True, timeout=LIBREOFFICE_TIMEOUT, env=env, check=False
        )
    except subprocess.TimeoutExpired as e:
        raise BridgeError(
            f"LibreOffice took over {LIBREOFFICE_TIMEOUT:g} s to recalculate {path.name}",
            bridge="spreadsheet",
        ) from e
    result = out / (path.stem + ".xlsx")
    if done.returncode != 0 or not result.is_file():
        detail = (done.stderr or done.stdout).decode(errors="replace").strip()[-500:]
        raise BridgeError(
            f"LibreOffice could not recalculate {path.name} (exit {done.returncode}): {detail}",
            bridge="spreadsheet",
        )
    return result


@dataclass
class CellValues:
    """The values of a solution workbook's answer cells.

    Attributes:
        sheets: The workbook's sheet names.
        values: ``{(sheet, "B2"): value}`` for the answer cells on sheets it has.
        method: ``"none"``, ``"engine"`` or ``"libreoffice"``: how formulas got their values.
        note: Why the engine was used where LibreOffice would have been, or ``None``.
        formula_cells: How many answer cells hold a formula without a cached value.
    """

    sheets: list[str]
    values: dict[tuple[str, str], Any] = field(default_factory=dict)
    method: str = "none"
    note: str | None = None
    formula_cells: int = 0


def _is_formula(value: Any) -> bool:
    if isinstance(value, str):
        return value.startswith("=")
    return type(value).__name__ in ("ArrayFormula", "DataTableFormula")


def _engine_value(value: Any, cell: Any) -> Any:
    from openpyxl.utils.datetime import from_excel

    if isinstance(value, CellError):
        return str(value)
    if isinstance(value, int | float) and not isinstance(value, bool) and cell.is_date:
        try:
            return from_excel(value)
        except (ValueError, OverflowError):
            return value
    return value


def _has_cache(book: Any, cached: Any) -> bool:
    """Whether the file carries formula values (any formula cell reads non-empty with data_only).

    openpyxl writes formulas without values; a spreadsheet application writes every value, so
    then an empty cached value is a real empty result.
    """
    for sheet in book.worksheets:
        values = cached[sheet.title]
        for row in sheet.iter_rows():
            for cell in row:
                if _is_formula(cell.value) and values[cell.coordinate].value is not None:
                    return True
    return False


def _engine(book: Any) -> tuple[dict[tuple[str, str], Any], str | None]:
    """The engine's values of every formula, and its error when it failed on the workbook."""
    snapshot = {
        (sheet.title, cell.row, cell.column): cell.value
        for sheet in book.worksheets
        for row in sheet.iter_rows()
        for cell in row
        if cell.value is not None and (isinstance(cell.value, str) or not _is_formula(cell.value))
    }
    try:
        return recalculate(snapshot, list(book.sheetnames)), None
    except BridgeError as e:
        return {}, str(e)


def _engine_doubts(book: Any) -> str | None:
    """Why the engine's values could differ from a spreadsheet's on this workbook, or None."""
    sheets = book.sheetnames
    count = sum(
        1
        for sheet in book.worksheets
        for row in sheet.iter_rows()
        for c in row
        if _is_formula(c.value)
    )
    if count > ENGINE_MAX_FORMULAS:
        return f"the workbook has {count} formulas (the engine is slow past {ENGINE_MAX_FORMULAS})"
    for sheet in book.worksheets:
        for row in sheet.iter_rows():
            for cell in row:
                value = cell.value
                if not _is_formula(value):
                    continue
                if not isinstance(value, str):
                    return f"{sheet.title}!{cell.coordinate} holds an array or table formula"
                problem = formula_problem(value, sheets)
                if problem is not None:
                    return f"{sheet.title}!{cell.coordinate}: {problem.split(';')[0]}"
    return None


def read_values(
    path: Path, cells: list[tuple[str, str]], *, mode: str = "auto", scratch: Path | None = None
) -> CellValues:
    """The values of ``cells`` (``(sheet, "B2")``) in the workbook at ``path``.

    Args:
        path: The solution's workbook.
        cells: The answer cells; those on sheets the workbook lacks are left out.
        mode: One of :data:`MODES`.
        scratch: A folder for LibreOffice's files (a temporary one when ``None``).

    Raises:
        BridgeError: If the workbook cannot be read, or LibreOffice fails when it is needed.
    """
    openpyxl = require_openpyxl()
    try:
        book = openpyxl.load_workbook(path)
    except Exception as e:  # zipfile/XML/KeyError...: not a workbook openpyxl can read
        raise BridgeError(
            f"cannot read the workbook: {type(e).__name__}: {e}", bridge="spreadsheet"
        ) from e
    cached = openpyxl.load_workbook(path, data_only=True)
    result = CellValues(list(book.sheetnames))
    present = [(s, c) for s, c in cells if s in book.sheetnames]
    formulas = (
        []
        if _has_cache(book, cached)
        else [(s, c) for s, c in present if _is_formula(book[s][c].value)]
    )
    result.formula_cells = len(formulas)
    result.values = {(s, c): cached[s][c].value for s, c in present}
    if not formulas:
        return result
    if mode == "libreoffice":
        return _via_libreoffice(path, formulas, result, scratch)
    doubt = _engine_doubts(book) if mode == "auto" else None
    if doubt is not None and soffice() is not None:
        return _via_libreoffice(path, formulas, result, scratch)
    computed, failure = _engine(book)
    if mode == "auto":
        missing = [
            f"{s}!{c}"
            for s, c in formulas
            if computed.get((s, c), ENGINE_ERROR) in (ENGINE_ERROR, CIRCULAR)
        ]
        if doubt is None and (failure is not None or missing):
            doubt = failure or f"the engine gave no value for {', '.join(missing[:3])}"
            if soffice() is not None:
                return _via_libreoffice(path, formulas, result, scratch)
        if doubt is not None:
            result.note = f"LibreOffice is not installed; the engine was used although {doubt}"
    result.method = "engine"
    for sheet, name in formulas:
        result.values[(sheet, name)] = _engine_value(
            computed.get((sheet, name), ENGINE_ERROR), book[sheet][name]
        )
    return result


def _via_libreoffice(
    path: Path, formulas: list[tuple[str, str]], result: CellValues, scratch: Path | None
) -> CellValues:
    openpyxl = require_openpyxl()
    folder = Path(tempfile.mkdtemp(prefix="envharness-lo-", dir=scratch))
    try:
        converted = libreoffice_recalculate(path, folder)
        try:
            book = openpyxl.load_workbook(converted, data_only=True)
        except Exception as e:  # a file LibreOffice wrote that openpyxl cannot read
            raise BridgeError(
                f"cannot read LibreOffice's recalculated workbook: {type(e).__name__}: {e}",
                bridge="spreadsheet",
            ) from e
        result.method = "libreoffice"
        for s, c in formulas:
            result.values[(s, c)] = book[s][c].value if s in book.sheetnames else None
        return result
    finally:
        shutil.rmtree(folder, ignore_errors=True)
