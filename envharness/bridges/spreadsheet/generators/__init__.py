"""Generators of the spreadsheet tasks: original data, Python-computed answers, reference formulas.

Each generator is a function of a seeded ``random.Random`` returning a :class:`Spec`; the answers
are computed in Python, independently of any formula engine, and ``build_tasks.py`` checks that
the reference formulas reproduce them (with the bridge's engine always, with LibreOffice when
asked).
Nothing here needs openpyxl; ``build_tasks.py`` writes the workbooks.

Example:
    >>> specs = all_specs()
    >>> len(specs) >= 15 and len({s.task_id for s in specs}) == len(specs)
    True
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

__all__ = ["GENERATORS", "Spec", "all_specs", "excel_round", "generator"]

Rows = list[list[Any]]


@dataclass
class Spec:
    """Everything one task is made of, before it is written to files.

    Attributes:
        task_id: The task's id.
        split: ``"train"`` or ``"test"``.
        category: What the task mainly exercises.
        instruction: The request, in words.
        sheets: Sheet name -> rows of values from ``A1`` (``None`` for an empty cell).
        answers: Range (``"Sales!F2:F41"``) -> rows of expected values; the ranges, joined by
            commas, are the answer position.
        oracle: Reference writes ``{"range": ..., "values": [[...]]}``.
        max_steps: The agent's step budget.
        shuffle_rows: A data range whose rows may be reordered without changing the answer.
        seed: The seed the data came from.
    """

    task_id: str
    split: str
    category: str
    instruction: str
    sheets: dict[str, Rows]
    answers: dict[str, Rows]
    oracle: list[dict[str, Any]]
    max_steps: int = 20
    shuffle_rows: str | None = None
    seed: int = 0

    @property
    def answer_position(self) -> str:
        """The answer ranges, comma-separated."""
        return ", ".join(self.answers)


GENERATORS: list[tuple[int, Callable[..., Spec]]] = []
"""Registered generators with their seeds (distinct; the task file follows their order)."""


def generator(seed: int) -> Callable[[Callable[..., Spec]], Callable[..., Spec]]:
    """Registers a generator, called with ``random.Random(seed)``."""

    def register(function: Callable[..., Spec]) -> Callable[..., Spec]:
        GENERATORS.append((seed, function))
        return function

    return register


def excel_round(x: float, digits: int = 0) -> float:
    """Rounds as Excel does: the 15-significant-digit decimal value, halves away from zero.

    Example:
        >>> excel_round(1.005, 2), excel_round(82.25, 1), excel_round(-2.5)
        (1.01, 82.3, -3.0)
    """
    exact = Decimal(f"{x:.15g}")
    return float(exact.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def day(year: int, month: int, day_: int) -> dt.datetime:
    """A date cell value."""
    return dt.datetime(year, month, day_)


def all_specs() -> list[Spec]:
    """Every task's spec: train tasks first, then test tasks, each in the order of their seeds."""
    import importlib
    import random

    for module in ("sales", "school", "operations", "finance", "people"):  # registers them
        importlib.import_module(f"{__name__}.{module}")
    specs = []
    for seed, function in sorted(GENERATORS, key=lambda entry: entry[0]):
        spec = function(random.Random(seed))
        spec.seed = seed
        specs.append(spec)
    return [s for s in specs if s.split == "train"] + [s for s in specs if s.split == "test"]
