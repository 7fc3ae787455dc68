"""SpreadsheetBench's verdict: each test case's answer cells against its answer workbook.

A test case passes when every part of ``answer_position`` passes, and a part passes when its
sheet exists in the solution's workbook and every cell compares equal
(:func:`~envharness.bridges.spreadsheet.bench.compare.compare_cell_value`) with the answer
workbook's cached value; a missing or unreadable workbook fails the case. Upstream stops at the
first differing cell; here every cell is compared (the verdict is the same) so the details can
say what mismatched. The task's soft score is the fraction of the three cases that pass, the
hard score 1 only when all do: :class:`~envharness.core.Evaluation` carries ``success`` = hard
and ``score`` = soft.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envharness.bridges.spreadsheet.bench.compare import (
    answer_sheets,
    answer_values,
    json_value,
    mismatch_reason,
)
from envharness.bridges.spreadsheet.bench.dataset import CASES, BenchTask
from envharness.bridges.spreadsheet.bench.recalc import read_values
from envharness.core import Evaluation
from envharness.errors import BridgeError

__all__ = ["MAX_MISMATCHES", "answer_cells", "score_case", "score_task"]

MAX_MISMATCHES = 10
"""How many mismatching cells each part of a case lists in the details."""


def answer_cells(task: BenchTask, case: int) -> list[tuple[str, str, int]]:
    """``(sheet, cell, part index)`` of every answer cell of a case, sheets resolved."""
    first = answer_sheets(task.answer_path(case))[0]
    return [
        (part.sheet if part.sheet is not None else first, name, index)
        for index, part in enumerate(task.parts)
        for name in part.cells
    ]


def score_case(
    task: BenchTask, case: int, output: Path | None, *, mode: str = "auto", missing: str = ""
) -> dict[str, Any]:
    """One test case's verdict and what mismatched.

    Args:
        task: The task.
        case: 1, 2 or 3.
        output: The solution's workbook for this case, or ``None`` when there is none.
        mode: How formulas are recalculated (see the ``recalc`` module).
        missing: Why there is no output (when ``output`` is ``None``).

    Returns:
        ``{"case", "passed", "error", "recalculation", "note", "cells", "matched", "parts"}``;
        each part ``{"sheet", "range", "passed", "cells", "matched", "mismatches"}`` with up to
        :data:`MAX_MISMATCHES` ``{"cell", "expected", "got", "reason"}``.
    """
    cells = answer_cells(task, case)
    verdict: dict[str, Any] = {
        "case": case,
        "passed": False,
        "error": None,
        "recalculation": None,
        "note": None,
        "cells": len(cells),
        "matched": 0,
        "parts": [],
    }
    if output is None:
        verdict["error"] = missing or "no solution workbook for this case"
        return verdict
    try:
        read = read_values(output, [(s, c) for s, c, _ in cells], mode=mode)
    except BridgeError as e:
        verdict["error"] = str(e)
        return verdict
    verdict["recalculation"] = read.method
    verdict["note"] = read.note
    expected = answer_values(task.answer_path(case))
    parts = []
    for index, part in enumerate(task.parts):
        sheet = part.sheet if part.sheet is not None else cells[0][0]
        mine = [(s, c) for s, c, i in cells if i == index]
        entry: dict[str, Any] = {
            "sheet": sheet,
            "range": part.cell_range,
            "passed": False,
            "cells": len(mine),
            "matched": 0,
            "mismatches": [],
        }
        if sheet not in read.sheets:
            entry["error"] = f"worksheet not found: the solution's workbook has no sheet {sheet!r}"
            parts.append(entry)
            continue
        for s, c in mine:
            want, got = expected.get((s, c)), read.values.get((s, c))
            reason = mismatch_reason(want, got)
            if reason is None:
                entry["matched"] += 1
            elif len(entry["mismatches"]) < MAX_MISMATCHES:
                entry["mismatches"].append(
                    {
                        "cell": f"{s}!{c}",
                        "expected": json_value(want),
                        "got": json_value(got),
                        "reason": reason,
                    }
                )
        entry["passed"] = entry["matched"] == entry["cells"]
        parts.append(entry)
    verdict["parts"] = parts
    verdict["matched"] = sum(p["matched"] for p in parts)
    verdict["passed"] = all(p["passed"] for p in parts)
    return verdict


def score_task(
    task: BenchTask,
    outputs: Sequence[Path | None],
    *,
    mode: str = "auto",
    missing: Sequence[str] = ("", "", ""),
    extra: dict[str, Any] | None = None,
) -> Evaluation:
    """Scores the three cases' solution workbooks (``None`` where a case has none).

    Returns:
        ``success`` = hard score, ``score`` = soft score; ``details`` hold the record's id,
        ``instruction_type``, ``answer_position``, ``test_case_results`` (0/1 per case),
        ``soft_restriction``, ``hard_restriction``, ``cases`` (see :func:`score_case`), and
        ``matched``/``cells`` of case 1, plus ``extra``.
    """
    cases = [
        score_case(task, case, output, mode=mode, missing=why)
        for case, output, why in zip(CASES, outputs, missing, strict=True)
    ]
    results = [int(c["passed"]) for c in cases]
    soft = results.count(1) / len(results)
    hard = 0 if 0 in results else 1
    details = {
        "id": task.record["id"],
        "instruction_type": task.instruction_type,
        "answer_position": task.answer_position,
        "test_case_results": results,
        "soft_restriction": soft,
        "hard_restriction": hard,
        "matched": cases[0]["matched"],
        "cells": cases[0]["cells"],
        "cases": cases,
        **(extra or {}),
    }
    return Evaluation(hard == 1, soft, details)
