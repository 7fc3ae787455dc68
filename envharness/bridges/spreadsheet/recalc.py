"""Formula recalculation: the pure-Python engine ``formulas``, checked against LibreOffice.

Why this engine: ``formulas`` (PyPI) parses and evaluates Excel formulas over an ``.xlsx`` file
with no office suite. The bridge builds the engine's model in memory from the workbook's cells;
measured on the task workbooks a recalculation takes 0.05-0.15 s, and the engine installs from
PyPI alone (on top of numpy and scipy). LibreOffice headless
(``libreoffice-calc-nogui``: a 90 MB download, 276 MB on disk) takes 1.3-1.7 s per
recalculation through ``soffice --convert-to``, and needs a system package in CI; it is used
only offline, by ``build_tasks.py --libreoffice``, to produce the reference values that
``data/engine_cases.json`` holds and the tests check the engine against.

What is supported (:data:`SUPPORTED_FUNCTIONS`): every function there has cases in
``engine_cases.json`` whose values agree with LibreOffice 7.4 (or, for functions that release
lacks, with Excel's documented results). Three places where ``formulas`` 1.3 differs from Excel
are corrected when the engine is first used (:func:`engine`): ``TRIM`` collapses inner runs of
spaces, ``ROUND``/``ROUNDUP``/``ROUNDDOWN`` round the 15-significant-digit decimal value
(``ROUND(1.005, 2)`` is 1.01), and wildcard criteria (``"*ab?"`` in ``COUNTIF``, ``SUMIF``...)
match case-insensitively and in full.

A formula this module cannot evaluate faithfully is refused before it reaches a cell
(:func:`formula_problem`), with the reason: a syntax error, a function outside the list
(volatile ones such as ``TODAY`` and ``RAND`` included: episodes are deterministic), a whole-row
reference, or a whole-column reference (``A:A``) anywhere but as a direct argument of a function
that ignores empty cells (:data:`WHOLE_COLUMN_FUNCTIONS`); such references are evaluated over the
rows in use. Formulas follow pre-dynamic-array Excel: a formula gives one value, and a range
where one value is expected is read by implicit intersection (``#VALUE!`` when there is none).
A cell the engine leaves without a value (which Excel would reject) reads as the error
``#ENGINE!``, and a circular reference as ``#CIRCULAR!``, never as a plausible number.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from decimal import ROUND_DOWN, ROUND_HALF_UP, ROUND_UP, Decimal, localcontext
from types import ModuleType
from typing import Any

from envharness.bridges.spreadsheet.cells import column_letter
from envharness.bridges.spreadsheet.values import CellError, excel_serial
from envharness.errors import BridgeError, DependencyNotInstalled

__all__ = [
    "CIRCULAR",
    "ENGINE_ERROR",
    "EXTRA",
    "SUPPORTED_FUNCTIONS",
    "WHOLE_COLUMN_FUNCTIONS",
    "engine",
    "expand_whole_columns",
    "formula_problem",
    "recalculate",
    "require_openpyxl",
]

EXTRA = "spreadsheet"
"""The optional-dependency extra that installs ``openpyxl`` and ``formulas``."""

ENGINE_ERROR = CellError("#ENGINE!")
"""The value of a formula cell the engine left without a result."""
CIRCULAR = CellError("#CIRCULAR!")
"""The value of a formula that depends on itself (Excel shows 0 and a warning)."""

SUPPORTED_FUNCTIONS: frozenset[str] = frozenset(
    """
    ABS CEILING EXP FLOOR INT LN LOG LOG10 MOD MROUND PI POWER PRODUCT ROUND ROUNDDOWN ROUNDUP
    SIGN SQRT SUM SUMIF SUMIFS SUMPRODUCT TRUNC
    AVERAGE AVERAGEIF AVERAGEIFS COUNT COUNTA COUNTBLANK COUNTIF COUNTIFS LARGE MAX MAXIFS MEDIAN
    MIN MINIFS MODE PERCENTILE QUARTILE RANK RANK.EQ SMALL STDEV STDEV.P STDEV.S VAR VAR.P VAR.S
    AND CHOOSE FALSE IF IFERROR IFNA IFS NOT OR SWITCH TRUE XOR
    HLOOKUP INDEX LOOKUP MATCH VLOOKUP XLOOKUP
    CHAR CLEAN CODE CONCAT CONCATENATE EXACT FIND LEFT LEN LOWER MID PROPER REPLACE REPT RIGHT
    SEARCH SUBSTITUTE T TEXT TEXTAFTER TEXTBEFORE TEXTJOIN TRIM UPPER VALUE
    ISBLANK ISERROR ISEVEN ISLOGICAL ISNA ISNUMBER ISODD ISTEXT N NA
    DATE DATEDIF DAY DAYS EDATE EOMONTH MONTH WEEKDAY YEAR
    FV PMT PV
    """.split()
)
"""Functions a formula may use; each is checked against reference values in the tests."""

WHOLE_COLUMN_FUNCTIONS: frozenset[str] = frozenset(
    """
    SUM SUMIF SUMIFS AVERAGE AVERAGEIF AVERAGEIFS COUNT COUNTA MAX MIN MAXIFS MINIFS MEDIAN
    LARGE SMALL VLOOKUP HLOOKUP XLOOKUP LOOKUP MATCH INDEX
    """.split()
)
"""Functions that may take a whole column (``A:A``) as a direct argument.

They ignore empty cells (or find a position before them), so evaluating the column over the rows
in use gives Excel's result. ``COUNTIF``/``COUNTBLANK`` and element-wise arithmetic are not here:
on a whole column they count or compute the million empty cells.
"""

_BOOK = "book.xlsx"
_KEY = re.compile(r"^'\[[^\]]+\](?P<sheet>.+)'!(?P<cell>[A-Z]{1,3}[0-9]+)$")
_WHOLE_COLUMNS = re.compile(
    r"^(?P<sheet>(?:'(?:[^']|'')+'|[A-Za-z0-9_.]+)!)?"
    r"(?P<c1>\$?[A-Za-z]{1,3}):(?P<c2>\$?[A-Za-z]{1,3})$"
)
_WHOLE_ROWS = re.compile(r"^(?:(?:'(?:[^']|'')+'|[A-Za-z0-9_.]+)!)?\$?\d+:\$?\d+$")
_WILDCARD = re.compile(r"(?<!~)[?*]")
_WILDCARD_SPLIT = re.compile(r"(~[?*~]|[?*])")
_LOCK = threading.Lock()
_ENGINE: ModuleType | None = None


def require_openpyxl() -> ModuleType:
    """The ``openpyxl`` package, or DependencyNotInstalled naming the ``spreadsheet`` extra."""
    try:
        import openpyxl
    except ImportError as e:
        raise DependencyNotInstalled(
            "openpyxl", EXTRA, purpose="reading and writing .xlsx workbooks"
        ) from e
    return openpyxl


def engine() -> ModuleType:
    """The ``formulas`` package, with its differences from Excel corrected (once per process).

    Raises:
        DependencyNotInstalled: If ``formulas`` is missing (the ``spreadsheet`` extra).
    """
    global _ENGINE
    if _ENGINE is not None:
        return _ENGINE
    with _LOCK:
        if _ENGINE is None:
            try:
                import formulas
            except ImportError as e:
                raise DependencyNotInstalled(
                    "formulas", EXTRA, purpose="recalculating spreadsheet formulas"
                ) from e
            _correct(formulas)
            _ENGINE = formulas
    return _ENGINE


# -- corrections to formulas 1.3 ------------------------------------------------------------------


def _excel_round(x: float, digits: float, rounding: str) -> float:
    """Rounds like Excel: on the 15-significant-digit decimal value, halves away from zero."""
    places = int(digits)
    with localcontext() as context:
        context.prec = 400
        exact = Decimal(f"{x:.15g}")
        unit = Decimal(1).scaleb(-places)
        return float(exact.quantize(unit, rounding=rounding))


def _excel_trim(text: str) -> str:
    """Excel's TRIM: no spaces at either end and single spaces inside (other whitespace stays)."""
    return re.sub(" {2,}", " ", text.strip(" "))


def _wildcard_part(part: str) -> str:
    """The regex of one piece of a criteria pattern: ``*``, ``?``, ``~x`` (a literal x) or text."""
    if part == "*":
        return ".*"
    if part == "?":
        return "."
    if len(part) == 2 and part[0] == "~":
        return re.escape(part[1])
    return re.escape(part)


def _wildcard_filter(original: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps formulas' criteria test so wildcard criteria match whole texts, ignoring case."""
    import numpy as np

    def criteria(test_range: dict[str, Any], condition: Any) -> Any:
        if isinstance(condition, str):
            negate = condition.startswith("<>")
            body = condition[2:] if negate else condition.removeprefix("=")
            if _WILDCARD.search(body):
                pattern = "".join(_wildcard_part(p) for p in _WILDCARD_SPLIT.split(body))
                match = re.compile(pattern, re.IGNORECASE | re.DOTALL).fullmatch

                def test(value: Any) -> bool:
                    found = isinstance(value, str) and value != "" and match(value) is not None
                    return found != negate

                return np.vectorize(test, otypes=[bool])(test_range["raw"])
        return original(test_range, condition)

    return criteria


def _correct(formulas: ModuleType) -> None:
    """Replaces TRIM and ROUND*, and wraps the wildcard criteria test (see the module doc)."""
    import formulas.excel as excel
    import formulas.functions as functions
    import formulas.functions.text as text
    import tqdm as progress

    table = functions.get_functions()
    ufunc = functions.wrap_ufunc
    for name, mode in (("ROUND", ROUND_HALF_UP), ("ROUNDUP", ROUND_UP), ("ROUNDDOWN", ROUND_DOWN)):
        table[name] = ufunc(functools.partial(_excel_round, rounding=mode))
    table["TRIM"] = ufunc(_excel_trim, **text._kw1)
    namespace = vars(functions)
    if not getattr(namespace.get("__xfilter"), "_envharness", False):
        patched = _wildcard_filter(namespace["__xfilter"])
        patched._envharness = True  # type: ignore[attr-defined]
        namespace["__xfilter"] = patched

    class _QuietTqdm:  # formulas draws a progress bar on every model build; not here
        tqdm = functools.partial(progress.tqdm, disable=True)

    excel.tqdm = _QuietTqdm


# -- checking formulas -----------------------------------------------------------------------------


def _function_list() -> str:
    return ", ".join(sorted(SUPPORTED_FUNCTIONS))


def formula_problem(formula: str, sheets: Iterable[str] | None = None) -> str | None:
    """Why ``formula`` cannot be evaluated faithfully here, or ``None`` when it can.

    Args:
        formula: The formula, starting with ``=``.
        sheets: The workbook's sheet names; when given, a reference to another sheet is refused
            (Excel would ask for a file to link to; the engine would read it as empty).

    Example:
        >>> formula_problem("=SUM(B2:B9)*2") is None
        True
        >>> formula_problem("=TODAY()").split(";")[0]
        'the function TODAY is not supported here'
        >>> formula_problem("=SUM(A:A*2)").split(" of ")[0]
        'the whole-column reference A:A is only supported as a direct argument'
    """
    formulas = engine()
    try:
        tokens = formulas.Parser().ast(formula)[0]
    except Exception as e:  # the parser raises its own FormulaError/ParenthesesError family
        return f"the formula {formula!r} cannot be read ({type(e).__name__}); check its syntax"
    for token in tokens:
        kind = type(token).__name__
        name = str(getattr(token, "name", "")).upper().removeprefix("_XLFN.")
        if kind in ("Function", "Lambda") and name not in SUPPORTED_FUNCTIONS:
            return (
                f"the function {name} is not supported here; supported functions: "
                f"{_function_list()}"
            )
        if kind == "Range" and _WHOLE_ROWS.match(name):
            return (
                f"whole-row references such as {name} are not supported; use a bounded range "
                "such as A2:F2"
            )
        if kind == "Range" and sheets is not None and "!" in name:
            sheet = name.rsplit("!", 1)[0].strip("'").replace("''", "'")
            known = {s.upper(): s for s in sheets}
            if sheet not in known:
                return (
                    f"the formula refers to a sheet {sheet!r} that does not exist; sheets: "
                    f"{', '.join(known.values())}"
                )
    return _whole_column_problem(formula)


def _whole_column_problem(formula: str) -> str | None:
    try:
        ranges = _range_tokens(formula)
    except Exception as e:  # openpyxl's TokenizerError, for text the engine's parser let through
        return f"the formula {formula!r} cannot be read ({type(e).__name__}); check its syntax"
    for value, enclosing, direct in ranges:
        if not _WHOLE_COLUMNS.match(value):
            continue
        if enclosing is None or enclosing not in WHOLE_COLUMN_FUNCTIONS or not direct:
            return (
                f"the whole-column reference {value} is only supported as a direct argument of "
                f"{', '.join(sorted(WHOLE_COLUMN_FUNCTIONS))}; write a bounded range instead "
                "(e.g. A2:A50)"
            )
    return None


def _range_tokens(formula: str) -> list[tuple[str, str | None, bool]]:
    """Each range operand: its text, its innermost function, and whether it is a whole argument.

    A whole argument stands alone between the function's parentheses or commas, not inside an
    expression such as ``A:A*2``.
    """
    from openpyxl.formula.tokenizer import Token, Tokenizer

    items = [t for t in Tokenizer(formula).items if t.type != Token.WSPACE]
    stack: list[str | None] = []
    found: list[tuple[str, str | None, bool]] = []
    for index, token in enumerate(items):
        if token.type == Token.FUNC and token.subtype == Token.OPEN:
            stack.append(token.value[:-1].upper().removeprefix("_XLFN."))
        elif token.type == Token.PAREN and token.subtype == Token.OPEN:
            stack.append(None)
        elif token.subtype == Token.CLOSE and stack:
            stack.pop()
        elif token.type == Token.OPERAND and token.subtype == Token.RANGE:
            before = items[index - 1] if index else None
            after = items[index + 1] if index + 1 < len(items) else None
            opens = before is not None and (
                (before.type == Token.FUNC and before.subtype == Token.OPEN)
                or (before.type == Token.SEP and before.subtype == Token.ARG)
            )
            closes = after is not None and (
                (after.type == Token.FUNC and after.subtype == Token.CLOSE)
                or (after.type == Token.SEP and after.subtype == Token.ARG)
            )
            found.append((token.value, stack[-1] if stack else None, opens and closes))
    return found


def expand_whole_columns(formula: str, last_row: int) -> str:
    """``formula`` with each whole-column reference bounded to rows 1 to ``last_row``.

    Example:
        >>> expand_whole_columns("=SUM(Sales!D:D)+MAX($B:$C)", 41)
        '=SUM(Sales!D1:D41)+MAX($B1:$C41)'
    """
    from openpyxl.formula.tokenizer import Token, Tokenizer

    tokenizer = Tokenizer(formula)
    changed = False
    for token in tokenizer.items:
        if token.type == Token.OPERAND and token.subtype == Token.RANGE:
            match = _WHOLE_COLUMNS.match(token.value)
            if match:
                sheet = match.group("sheet") or ""
                token.value = f"{sheet}{match.group('c1')}1:{match.group('c2')}{last_row}"
                changed = True
    return tokenizer.render() if changed else formula


# -- recalculating ---------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A value from the engine as a plain Python value (errors as :class:`CellError`)."""
    formulas = engine()
    if isinstance(value, formulas.XlError):
        if type(value).__name__ == "XlCircular":  # shown as 0 by the engine, as by Excel
            return CIRCULAR
        return CellError(str(value))
    if type(value).__name__ == "Token":  # schedula's EMPTY: a reference to an empty cell
        return None
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, str):
        return str(value)
    return value


def _engine_input(value: Any, last_row: int) -> Any:
    if isinstance(value, str) and value.startswith("="):
        return expand_whole_columns(value, last_row) if ":" in value else value
    if isinstance(value, dt.datetime | dt.date):
        return excel_serial(value)
    if isinstance(value, dt.time):
        return (value.hour * 3600 + value.minute * 60 + value.second) / 86400
    return value


def recalculate(
    cells: Mapping[tuple[str, int, int], Any], sheets: list[str]
) -> dict[tuple[str, str], Any]:
    """Evaluates every formula of a workbook given as its non-empty cells.

    The engine's model is built in memory from the cells (no file is written): constants as
    stored (dates as serial numbers), formulas as text with whole-column references bounded to
    the last row in use.

    Args:
        cells: ``{(sheet, row, col): content}``, formulas as ``"=..."`` text, already checked
            with :func:`formula_problem`.
        sheets: The workbook's sheet names, to map the engine's upper-cased names back.

    Returns:
        ``{(sheet, "D2"): value}`` for every cell the engine evaluated (none when there is no
        formula); values are plain Python values or :class:`CellError`.

    Raises:
        BridgeError: If the engine fails on the workbook as a whole.

    Example:
        >>> values = recalculate({("S", 1, 1): 2, ("S", 1, 2): "=A1*21"}, ["S"])
        >>> values[("S", "B1")]
        42.0
    """
    if not any(isinstance(v, str) and v.startswith("=") for v in cells.values()):
        return {}  # nothing to evaluate: every value is a constant
    formulas = engine()
    names = {name.upper(): name for name in sheets}
    last_row = max((row for _, row, _ in cells), default=1)
    book = {
        f"'[{_BOOK}]{sheet.upper()}'!{column_letter(col)}{row}": _engine_input(value, last_row)
        for (sheet, row, col), value in cells.items()
    }
    try:
        model = formulas.ExcelModel().from_dict(book)
        model.solve_circular()
        solution = model.calculate()
    except Exception as e:  # the engine's own errors, for a workbook it cannot take in
        raise BridgeError(
            f"the formula engine could not recalculate the workbook: {type(e).__name__}: {e}",
            bridge="spreadsheet",
        ) from e
    values: dict[tuple[str, str], Any] = {}
    for key, result in solution.items():
        match = _KEY.match(key) if isinstance(key, str) else None
        if match is None or match.group("sheet") not in names:
            continue
        grid = getattr(result, "value", result)
        try:
            value = grid[0][0]
        except (TypeError, IndexError, KeyError):
            value = grid
        values[(names[match.group("sheet")], match.group("cell"))] = _plain(value)
    return values
