"""``SpreadsheetBenchEnv``: one SpreadsheetBench task, its three test cases and a solution program.

Built by ``load_bridge("spreadsheet", task_id=str(record_id), dataset=FOLDER)``. The agent works
on test case 1's input workbook with the bridge's tools (``list_sheets``, ``read_range``,
``write_cells``) and can run a solution program with ``run_program(code)`` (see
:mod:`~envharness.bridges.spreadsheet.bench.program`: openpyxl Python, run in a locked-down
process, never in the host). A program that runs without error on case 1 becomes the solution:
the episode's workbook shows its output, and ``submit()``/``evaluate()`` run it on all three
test cases' inputs and score the outputs as SpreadsheetBench does (soft = cases passed / 3,
``success`` = hard, all three). Without a program, the episode's workbook is case 1's solution
and cases 2 and 3 have none, so the soft score is at most 1/3.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from envharness.bridgekit.checks import check_options, check_positive_int, check_split
from envharness.bridgekit.fingerprint import cached_fingerprint, read_bytes, task_fingerprint
from envharness.bridges.spreadsheet._schema import STATE_FIELDS, TOOLS
from envharness.bridges.spreadsheet.bench.compare import answer_values, compare_cell_value
from envharness.bridges.spreadsheet.bench.dataset import (
    CASES,
    BenchTask,
    get_bench_task,
    list_bench_ids,
)
from envharness.bridges.spreadsheet.bench.oracle import oracle_program
from envharness.bridges.spreadsheet.bench.program import (
    ALLOWED_IMPORTS,
    ProgramLimits,
    ProgramRun,
    check_code,
    run_programs,
)
from envharness.bridges.spreadsheet.bench.recalc import MODES, soffice
from envharness.bridges.spreadsheet.bench.verifier import answer_cells, score_task
from envharness.bridges.spreadsheet.cells import column_index, quote_sheet
from envharness.bridges.spreadsheet.env import SpreadsheetEnv, _Refused, register_dataset_class
from envharness.bridges.spreadsheet.recalc import engine, require_openpyxl
from envharness.bridges.spreadsheet.solutions import changed_cells
from envharness.bridges.spreadsheet.values import CellError, show
from envharness.bridges.spreadsheet.workbook import EpisodeBook
from envharness.core import Action, Evaluation, ToolSpec
from envharness.errors import BridgeError

__all__ = ["BENCH_OPTIONS", "RUN_PROGRAM", "SpreadsheetBenchEnv"]

BENCH_OPTIONS = ("dataset", "max_steps", "recalc", "program_timeout")
"""The options of a SpreadsheetBench task."""
SPLITS = ("train", "test", "all")
DEFAULT_MAX_STEPS = 30
_BRIDGE = "spreadsheet"
_MAX_CHANGED = 200

RUN_PROGRAM = ToolSpec(
    "run_program",
    "Run a solution program on this workbook (test case 1): Python using openpyxl that loads "
    "the workbook at `input_path` and saves the result to `output_path` (both variables are "
    "defined). If it runs without error, its output becomes the workbook you see and the "
    "program becomes your solution: submit() runs it on all three test cases. Allowed imports: "
    + ", ".join(sorted(ALLOWED_IMPORTS - {"__future__"}))
    + "; no other files, network or processes.",
    {
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "The program's Python source."},
        },
        "required": ["code"],
    },
)

STATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": (
        "A SpreadsheetBench task: test case 1's workbook (sheets, answer cells), the solution "
        "program and the activity."
    ),
    "properties": {
        **STATE_FIELDS,
        "answer_cells_correct": {
            "type": "integer",
            "description": "How many answer cells of test case 1's workbook match its answer now.",
        },
        "program": {"type": "boolean", "description": "A solution program has run without error."},
        "program_runs": {"type": "integer", "description": "run_program calls this episode."},
        "program_error": {
            "type": "string",
            "description": "Why the last run_program failed ('' when it ran, or before any).",
        },
    },
}
STATE_SCHEMA["required"] = list(STATE_SCHEMA["properties"])


class SpreadsheetBenchEnv(SpreadsheetEnv):
    """One SpreadsheetBench task: edit test case 1's workbook, run a solution program, submit.

    Tools: ``list_sheets()``, ``read_range(range, formulas=False)``, ``write_cells(range,
    values)``, ``run_program(code)`` and ``submit()``. ``evaluate()`` runs the last program that
    ran without error on all three test cases (cached per program) or, without one, scores the
    episode's workbook as case 1; ``details`` give per case and per cell what mismatched
    (:func:`~envharness.bridges.spreadsheet.bench.verifier.score_task`).

    Args:
        task_id: ``str(record["id"])`` of a record of ``dataset.json``.
        dataset: The dataset folder (``dataset.json`` and ``spreadsheet/``).
        max_steps: The agent's step budget (default 30).
        recalc: How formulas without cached values are recalculated: ``"auto"`` (the engine,
            LibreOffice where the engine's result could differ), ``"engine"`` or
            ``"libreoffice"`` (see :mod:`~envharness.bridges.spreadsheet.bench.recalc`).
        program_timeout: Wall-clock seconds one program run may take (default 60).

    Raises:
        UnknownTaskError: If the dataset has no such record.
        BridgeError: If the dataset or the task's workbooks are malformed, an option is bad, or
            ``recalc="libreoffice"`` without ``soffice``.

    Example:
        >>> from envharness import load_bridge
        >>> env = load_bridge("spreadsheet", task_id="39490",
        ...                   dataset="../shared/data/spreadsheetbench")  # doctest: +SKIP
        >>> _ = env.reset()  # doctest: +SKIP
        >>> env.step(env.oracle_actions()[0]).observation.split(".")[0]  # doctest: +SKIP
        'The program ran on test case 1'
    """

    _option_names: ClassVar[tuple[str, ...]] = BENCH_OPTIONS

    def __init__(
        self,
        task_id: str,
        *,
        dataset: str | Path,
        max_steps: int | None = None,
        recalc: str = "auto",
        program_timeout: float = 60.0,
    ) -> None:
        self._bench: BenchTask = get_bench_task(dataset, task_id)
        self._dataset = str(dataset)
        self._max_steps_option = None
        if max_steps is not None:
            self._max_steps_option = check_positive_int("max_steps", max_steps, bridge=_BRIDGE)
        if recalc not in MODES:
            raise BridgeError(
                f"recalc must be one of {', '.join(MODES)}, got {recalc!r}", bridge=_BRIDGE
            )
        if recalc == "libreoffice" and soffice() is None:
            raise BridgeError(
                "recalc='libreoffice' needs LibreOffice (soffice on PATH; Debian: apt-get "
                "install libreoffice-calc); use recalc='auto' or 'engine' without it",
                bridge=_BRIDGE,
            )
        if (
            isinstance(program_timeout, bool)
            or not isinstance(program_timeout, int | float)
            or not 0 < program_timeout <= 3600
        ):
            raise BridgeError(
                f"program_timeout must be a number of seconds in (0, 3600], got "
                f"{program_timeout!r}",
                bridge=_BRIDGE,
            )
        self._recalc = recalc
        self._program_timeout = program_timeout
        self._limits = ProgramLimits(
            wall_seconds=float(program_timeout), cpu_seconds=max(1, int(program_timeout))
        )
        require_openpyxl()
        engine()
        self._task = self._bench  # type: ignore[assignment]  # the parent's tools read its position
        self.task_id = task_id
        self.max_steps = self._max_steps_option or DEFAULT_MAX_STEPS
        self.instruction = (
            f"{self._bench.instruction}\n\nYou are given test case 1 of 3 of this task "
            f"({self._bench.instruction_type}); the checked cells are "
            f"{self._bench.answer_position}. Tools: list_sheets(), read_range(range), "
            "write_cells(range, values) and run_program(code). The other two test cases have "
            "different data, so to be scored on all three, solve the task with a solution "
            "program: run_program(code) runs Python (openpyxl) that loads `input_path` and "
            "saves to `output_path`; submit() then runs the last program that succeeded on all "
            "three test cases. Without a program only this workbook is scored, as case 1."
        )
        self._book = None
        self._original = None
        self._observation = None
        self._actions = []
        self._counts = {
            "steps": 0,
            "reads": 0,
            "writes": 0,
            "invalid_actions": 0,
            "program_runs": 0,
        }
        self._setup_actions = 0
        self._last_action = ""
        self._started = False
        self._submitted = False
        self._closed = False
        self._stages = None
        self._program: str | None = None
        self._program_error = ""
        self._edits = 0
        self._verdicts: dict[tuple[Any, ...], Evaluation] = {}

    # -- tasks ------------------------------------------------------------------------------

    @classmethod
    def list_tasks(cls, split: str = "train", **options: Any) -> list[str]:
        """The dataset's task ids (a dataset folder is one split: every split lists them all).

        Raises:
            BridgeError: If ``dataset`` is missing or malformed, or an option is unknown.
            UnknownTaskError: If ``split`` is not ``train``, ``test`` or ``all``.
        """
        check_options(options, BENCH_OPTIONS, bridge=_BRIDGE, where="list_tasks")
        check_split(split, SPLITS, bridge=_BRIDGE)
        if options.get("dataset") is None:
            raise BridgeError("list_tasks needs dataset=FOLDER", bridge=_BRIDGE)
        return list_bench_ids(options["dataset"])

    def bridge_options(self) -> dict[str, Any]:
        """``dataset``, and ``max_steps``/``recalc``/``program_timeout`` when not the defaults."""
        options: dict[str, Any] = {"dataset": self._dataset}
        if self._max_steps_option is not None:
            options["max_steps"] = self._max_steps_option
        if self._recalc != "auto":
            options["recalc"] = self._recalc
        if self._program_timeout != 60.0:
            options["program_timeout"] = self._program_timeout
        return options

    @property
    def task(self) -> BenchTask:  # type: ignore[override]
        """The task (its ``dataset.json`` record and workbook paths)."""
        return self._bench

    def task_fingerprint(self) -> str:
        """The hash of the record and the six workbooks (options do not change it)."""
        return cached_fingerprint(self, self._bench_fingerprint)

    def _bench_fingerprint(self) -> str:
        files = {}
        for case in CASES:
            for kind in ("input", "answer"):
                path = self._bench.case_path(case, kind)
                files[path.name] = read_bytes(path, f"case {case}'s {kind}", bridge=_BRIDGE)
        record = json.loads(json.dumps(self._bench.record, sort_keys=True))
        return task_fingerprint({"bridge": _BRIDGE, "format": "spreadsheetbench", **record}, files)

    # -- the episode ------------------------------------------------------------------------

    def tools(self) -> list[ToolSpec]:
        """``list_sheets``, ``read_range``, ``write_cells``, ``run_program``, ``submit``."""
        return [*TOOLS[:3], RUN_PROGRAM, TOOLS[3]]

    def _fresh_book(self) -> EpisodeBook:
        return _load_book(self._bench.input_path(1))

    def reset(self, *, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Starts from case 1's input workbook, with no program; ``seed`` is ignored."""
        self._program = None
        self._program_error = ""
        self._edits = 0
        observation, info = super().reset(seed=seed)
        return observation, {**info, "test_cases": len(CASES)}

    def _write(self, text: str, rows: Any, render: bool) -> str:
        observation = super()._write(text, rows, render)
        self._edits += 1
        return observation

    def _other_tool(self, action: Action, render: bool) -> tuple[str, dict[str, Any]]:
        code = action.args["code"]
        self._counts["program_runs"] += 1
        problem = check_code(code, self._limits)
        if problem is not None:
            self._program_error = problem
            raise _Refused(problem)
        run = run_programs(code, [self._bench.input_path(1)], self._limits)[0]
        try:
            if not run.ok:
                self._program_error = str(run.error)
                tail = run.log.strip()[-800:]
                return (
                    f"The program failed on test case 1: {run.error}\n{tail}\nThe workbook and "
                    "your solution are unchanged.",
                    {"program_error": run.error},
                )
            assert run.output is not None
            try:
                book = _load_book(run.output)
            except Exception as e:  # openpyxl cannot read what the program saved
                self._program_error = f"its output cannot be read: {type(e).__name__}: {e}"
                return (
                    f"The program ran but {self._program_error}; nothing changed.",
                    {"program_error": self._program_error},
                )
        finally:
            run.cleanup()
        self._book = book
        self._program = code
        self._program_error = ""
        self._edits = 0
        changed = changed_cells(self._original_cells(), book.snapshot())
        printed = run.log.strip()[-800:]
        text = (
            "The program ran on test case 1 and is now your solution; "
            f"{len(changed)} cell(s) differ from the input. submit() runs it on all three test "
            "cases."
        )
        if printed:
            text += f"\nIts output:\n{printed}"
        if render:
            text += "\n\n" + self._sheet_list()
        return text, {}

    def _submitted_text(self, evaluation: Evaluation) -> str:
        details = evaluation.details
        results = details["test_case_results"]
        how = "the solution program" if details["solution"] == "program" else "this workbook"
        return (
            f"Submitted {how}: test cases passed {results} (soft {details['soft_restriction']:.2f}"
            f", hard {details['hard_restriction']}); case 1: {details['matched']} of "
            f"{details['cells']} answer cells match."
        )

    def mark_episode_start(self) -> None:
        """Restarts the activity counts (the actions so far were a ``Setups`` replay)."""
        super().mark_episode_start()

    # -- the verifier -----------------------------------------------------------------------

    def evaluate(self) -> Evaluation:
        """SpreadsheetBench's verdict on the solution now (soft = ``score``, hard = ``success``)."""
        if self._program is not None:
            key: tuple[Any, ...] = ("program", hashlib.sha256(self._program.encode()).hexdigest())
        else:
            key = ("workbook", self._edits, len(self._actions), self._started)
        cached = self._verdicts.get(key)
        if cached is None:
            cached = self._verdict()
            self._verdicts = {key: cached}
        return Evaluation(cached.success, cached.score, json.loads(json.dumps(cached.details)))

    def _verdict(self) -> Evaluation:
        extra: dict[str, Any] = {"recalc": self._recalc}
        if self._program is None:
            with tempfile.TemporaryDirectory(prefix="envharness-sheet-") as folder:
                path = Path(folder) / "case1.xlsx"
                self._now().save(path)
                why = "no solution program was run, so there is no output for this case"
                return score_task(
                    self._bench,
                    [path, None, None],
                    mode=self._recalc,
                    missing=("", why, why),
                    extra={**extra, "solution": "workbook"},
                )
        runs: list[ProgramRun] = run_programs(
            self._program, [self._bench.input_path(c) for c in CASES], self._limits
        )
        try:
            extra.update(
                solution="program",
                program_sha256=hashlib.sha256(self._program.encode()).hexdigest(),
                program_runs=[
                    {"case": c, "ok": r.ok, "error": r.error, "seconds": round(r.seconds, 3)}
                    for c, r in zip(CASES, runs, strict=True)
                ],
                isolation=runs[0].protections,
            )
            return score_task(
                self._bench,
                [r.output for r in runs],
                mode=self._recalc,
                missing=[f"the program failed: {r.error}" if r.error else "" for r in runs],
                extra=extra,
            )
        finally:
            for run in runs:
                run.cleanup()

    # -- state ------------------------------------------------------------------------------

    def get_env_state(self) -> dict[str, Any]:
        """A fresh JSON-able view of case 1's workbook, the answer cells and the activity."""
        book = self._now()
        sheets = []
        for name in book.sheet_names:
            used = book.used_range(name)
            sheets.append({"name": name, "used_range": used.body() if used else ""})
        expected = answer_values(self._bench.answer_path(1))
        cells, errors, correct = [], [], 0
        for sheet, name, _ in answer_cells(self._bench, 1):
            label = f"{quote_sheet(sheet)}!{name}"
            stored_sheet = sheet if sheet in book.sheet_names else None
            value = stored = None
            if stored_sheet is not None:
                row, col = _row_col(name)
                value = book.value(stored_sheet, row, col)
                stored = book.content(stored_sheet, row, col)
            formula = stored if isinstance(stored, str) and stored.startswith("=") else ""
            cells.append({"cell": label, "shown": show(value), "formula": formula})
            if isinstance(value, CellError):
                errors.append(label)
                value = str(value)
            if stored_sheet is not None and compare_cell_value(expected.get((sheet, name)), value):
                correct += 1
        changed = changed_cells(self._original_cells(), book.snapshot())
        return {
            "sheets": sheets,
            "answer_position": self._bench.answer_position,
            "answer_cells": cells,
            "answer_cells_correct": correct,
            "changed_cells": [
                f"{quote_sheet(sheet)}!{_name(col, row)}"
                for sheet, row, col in changed[:_MAX_CHANGED]
            ],
            "error_cells": errors,
            **{k: v for k, v in self._counts.items() if k != "program_runs"},
            "last_action": self._last_action,
            "submitted": self._submitted,
            "program": self._program is not None,
            "program_runs": self._counts["program_runs"],
            "program_error": self._program_error,
        }

    def env_state_schema(self) -> dict[str, Any]:
        """The JSON-Schema of :meth:`get_env_state`, with a description per field."""
        return json.loads(json.dumps(STATE_SCHEMA))

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> SpreadsheetBenchEnv:
        """Rebuilds the environment :meth:`save_state` recorded, by reset and replay."""
        env = SpreadsheetEnv.from_state.__func__(cls, state)  # type: ignore[attr-defined]
        assert isinstance(env, SpreadsheetBenchEnv)
        return env

    # -- solving ----------------------------------------------------------------------------

    def oracle_actions(self) -> list[Action]:
        """Run the oracle program (it writes each case's answer values), then submit."""
        if self._submitted:
            return []
        if self._program is not None and self.evaluate().success:
            return [Action("submit", {})]
        return [Action("run_program", {"code": oracle_program(self._bench)}), Action("submit", {})]

    def stage_candidates(self) -> list[list[Action]]:
        """No start-state perturbations: the program is scored on fresh inputs of every case."""
        return []

    def __repr__(self) -> str:
        return f"<SpreadsheetBenchEnv task={self.task_id!r} dataset={self._dataset!r}>"


register_dataset_class(SpreadsheetBenchEnv)


def _load_book(path: Path) -> EpisodeBook:
    """An episode book of ``path``, array formulas stored as plain ones (the tools' view)."""
    book = EpisodeBook(path)
    book.flatten_array_formulas()
    return book


def _row_col(name: str) -> tuple[int, int]:
    letters = name.rstrip("0123456789").lstrip("$").replace("$", "")
    return int(name[len(name.rstrip("0123456789")) :]), column_index(letters)


def _name(col: int, row: int) -> str:
    from envharness.bridges.spreadsheet.cells import column_letter

    return f"{column_letter(col)}{row}"
