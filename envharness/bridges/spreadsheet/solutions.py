"""Solving and perturbing tasks: the oracle's plan and the start-state candidates for ``Setups``.

The oracle (:func:`oracle_plan`) works from any state: it first writes back the input workbook's
contents wherever a cell outside the answer range was changed (so data the agent or a setup
disturbed is restored), then, unless the answer range is already right, the reference writes
whose cells do not hold their contents yet, then submits.

Start-state candidates (:func:`stage_candidates`) are ``write_cells`` actions a setup replays
after reset. Each keeps the task solvable (the oracle solves it from there; the tests check every
task): stale wrong values pre-filled in the answer range, a misleading "draft" column of those
values next to the data, and, for tasks whose answer does not depend on row order, the data rows
shuffled.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Mapping
from typing import Any

from envharness.bridges.spreadsheet.cells import CellRange, parse_range, parse_ranges
from envharness.bridges.spreadsheet.tasks import Task
from envharness.bridges.spreadsheet.verifier import answer_values
from envharness.bridges.spreadsheet.workbook import EpisodeBook, typed_text
from envharness.core import Action

__all__ = ["changed_cells", "oracle_plan", "stage_candidates"]

Snapshot = Mapping[tuple[str, int, int], Any]


def _write(area: CellRange, rows: list[list[str]]) -> Action:
    return Action("write_cells", {"range": area.label(), "values": rows})


def changed_cells(before: Snapshot, after: Snapshot) -> list[tuple[str, int, int]]:
    """The cells whose content differs between two snapshots, sorted."""
    keys = set(before) | set(after)
    return sorted(k for k in keys if before.get(k) != after.get(k))


def _written_areas(task: Task) -> list[CellRange]:
    """The answer ranges and the ranges the reference solution writes (helper cells included)."""
    areas = parse_ranges(task.answer_position)
    for write in task.oracle:
        area = parse_range(write["range"])
        if area.size == 1:
            rows = write["values"]
            area = CellRange(
                area.sheet,
                area.min_col,
                area.min_row,
                area.min_col + len(rows[0]) - 1,
                area.min_row + len(rows) - 1,
            )
        areas.append(area)
    return areas


def _in_answer(task: Task, sheet: str, row: int, col: int) -> bool:
    """Whether the cell is one the solution writes (so restoring the input must leave it)."""
    return any(area.sheet == sheet and area.contains(row, col) for area in _written_areas(task))


def _restore(task: Task, book: EpisodeBook, original: Snapshot) -> list[Action]:
    """Writes that put back the input's content of every changed cell outside the answer."""
    changed = [
        cell for cell in changed_cells(original, book.snapshot()) if not _in_answer(task, *cell)
    ]
    actions: list[Action] = []
    for sheet in book.sheet_names:
        mine = [(row, col) for name, row, col in changed if name == sheet]
        if not mine:
            continue
        rows, cols = [r for r, _ in mine], [c for _, c in mine]
        box = CellRange(sheet, min(cols), min(rows), max(cols), max(rows))
        if any(_in_answer(task, sheet, r, c) for r, c in box.coordinates()):
            boxes = [CellRange(sheet, c, r, c, r) for r, c in mine]
        else:
            boxes = [box]
        for area in boxes:
            grid = [
                [
                    typed_text(original.get((sheet, r, c)))
                    for c in range(area.min_col, area.max_col + 1)
                ]
                for r in range(area.min_row, area.max_row + 1)
            ]
            actions.append(_write(area, grid))
    return actions


def oracle_plan(task: Task, book: EpisodeBook, original: Snapshot, solved: bool) -> list[Action]:
    """The actions that solve ``task`` from the state of ``book``.

    Args:
        task: The task.
        book: The episode's workbook now.
        original: The input workbook's snapshot.
        solved: Whether the answer range already matches (then no answer is written).
    """
    actions = _restore(task, book, original)
    if not solved:
        actions += [
            Action("write_cells", dict(write))
            for write in task.oracle
            if not _in_place(book, write)
        ]
    return [*actions, Action("submit", {})]


def _in_place(book: EpisodeBook, write: Mapping[str, Any]) -> bool:
    """Whether every cell of a reference write already holds what the write would put there."""
    area = parse_range(write["range"])
    assert area.sheet is not None
    plan = book.plan_write(area, write["values"])
    return all(book.content(area.sheet, row, col) == content for row, col, content in plan)


# -- start-state candidates -------------------------------------------------------------------


def _stale(value: Any) -> str:
    """A plausible wrong value in place of an expected one."""
    if isinstance(value, bool):
        return "FALSE" if value else "TRUE"
    if isinstance(value, int | float):
        return typed_text(round(value * 1.1 + 1, 2))
    return "TBD"


def _stale_grids(task: Task) -> list[tuple[CellRange, list[list[str]]]]:
    expected = answer_values(task)
    grids = []
    for area in parse_ranges(task.answer_position):
        rows = [
            [_stale(expected[(area.sheet, r, c)]) for c in range(area.min_col, area.max_col + 1)]
            for r in range(area.min_row, area.max_row + 1)
        ]
        grids.append((area, rows))
    return grids


def _draft_column(task: Task, book: EpisodeBook) -> list[Action]:
    """A "Draft" column of stale answers, one empty column right of everything on the sheet."""
    grids = _stale_grids(task)
    area, rows = grids[0]
    assert area.sheet is not None
    used = book.used_range(area.sheet)
    right = max(area.max_col, used.max_col if used else 1) + 2
    values = [["Draft (unchecked)"], *([cell] for row in rows for cell in row)]
    if len(values) > 60:
        values = values[:60]
    top = CellRange(area.sheet, right, 1, right, len(values))
    return [_write(top, values)]


def _shuffled(task: Task, book: EpisodeBook) -> list[Action]:
    """The ``shuffle_rows`` data in a fixed, task-specific order that is not the original."""
    if task.shuffle_rows is None:
        return []
    area = parse_range(task.shuffle_rows)
    rows = [[typed_text(v) for v in row] for row in book.contents(area)]
    order = list(range(len(rows)))
    rng = random.Random(zlib.crc32(task.task_id.encode()))
    while order == sorted(order) and len(order) > 1:
        rng.shuffle(order)
    return [_write(area, [rows[i] for i in order])]


def stage_candidates(task: Task, book: EpisodeBook) -> list[list[Action]]:
    """Natural start-state perturbations of ``task``, given its freshly reset workbook."""
    stale = [_write(area, rows) for area, rows in _stale_grids(task)]
    candidates = [stale, _draft_column(task, book)]
    shuffled = _shuffled(task, book)
    if shuffled:
        candidates.append(shuffled)
    return candidates
