"""``SpreadsheetEnv``: one spreadsheet task, played through four tools."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, ClassVar

from envharness.bridgekit.checks import (
    check_nothing_recorded,
    check_options,
    check_positive_int,
    check_saved_state,
    state_error,
)
from envharness.bridgekit.fingerprint import cached_fingerprint, read_bytes, task_fingerprint
from envharness.bridges.spreadsheet import solutions
from envharness.bridges.spreadsheet._schema import MAX_READ_CELLS, STATE_SCHEMA, TOOLS
from envharness.bridges.spreadsheet.cells import (
    MAX_ROW,
    CellRange,
    RangeError,
    column_letter,
    parse_range,
    parse_ranges,
    quote_sheet,
)
from envharness.bridges.spreadsheet.hints import HINTS
from envharness.bridges.spreadsheet.recalc import engine, require_openpyxl
from envharness.bridges.spreadsheet.tasks import Task, get_task, list_task_ids
from envharness.bridges.spreadsheet.values import CellError, show
from envharness.bridges.spreadsheet.verifier import verify
from envharness.bridges.spreadsheet.workbook import LIMITS, EpisodeBook, WriteRefused
from envharness.core import Action, ActionableEnv, Evaluation, StepResult, ToolSpec
from envharness.errors import BridgeError, EpisodeError

__all__ = ["SpreadsheetEnv"]

_BRIDGE = "spreadsheet"
_NAME = "SpreadsheetEnv"
_OPTIONS = ("max_steps",)
_MAX_SHOWN_ROWS = 20
_MAX_CHANGED = 200
_SAVED_KEYS = ("bridge", "task_id", "options", "started", "actions", "observation")


_DATASET_CLASS: list[type[SpreadsheetEnv]] = []  # set by the bench package when imported


def register_dataset_class(cls: type[SpreadsheetEnv]) -> None:
    """Names the class that serves ``dataset=`` tasks (the bench package calls this)."""
    _DATASET_CLASS[:] = [cls]


def _dataset_class() -> type[SpreadsheetEnv]:
    if not _DATASET_CLASS:  # imported as a module on its own, not through the package
        raise BridgeError(
            "dataset= needs the SpreadsheetBench mode: import envharness.bridges.spreadsheet",
            bridge=_BRIDGE,
        )
    return _DATASET_CLASS[0]


def _bad_state(problem: str) -> BridgeError:
    return state_error(problem, bridge=_BRIDGE, env_name=_NAME)


class _Refused(Exception):
    """An action the workbook cannot carry out; the message is the agent's feedback."""


class SpreadsheetEnv(ActionableEnv):
    """One spreadsheet task: read and write a workbook's cells, then submit.

    Tools: ``list_sheets()``, ``read_range(range, formulas=False)``, ``write_cells(range,
    values)`` and ``submit()``. Each episode edits its own in-memory copy of the task's input
    workbook (``save_workbook`` writes it out); formulas are recalculated by the pure-Python
    engine (see :mod:`~envharness.bridges.spreadsheet.recalc`) when values are next shown or
    checked. A bad
    range, a write of the wrong shape or a formula the engine cannot evaluate is refused with the
    reason (``info["invalid_action"]``) and changes nothing. ``submit`` ends the episode with
    reward 1.0 when the verifier passes, else 0.0; other steps give 0.0. ``evaluate()`` may be
    called at any time. Episodes are deterministic (``reset``'s seed is ignored); ``save_state``
    records the actions since reset, which ``from_state`` replays.

    Args:
        task_id: A task id (see ``list_tasks``), e.g. ``"sales-line-totals"``.
        max_steps: The agent's step budget (default: the task's own).

    Raises:
        UnknownTaskError: If there is no such task.
        DependencyNotInstalled: If openpyxl or formulas is missing (extra ``spreadsheet``).
        BridgeError: If ``max_steps`` is not a positive int.

    Example:
        >>> env = SpreadsheetEnv("sales-line-totals")
        >>> observation, info = env.reset()
        >>> fill = {"range": "Sales!F2:F41", "values": [["=D2*E2"]]}
        >>> result = env.step(Action("write_cells", fill))
        >>> env.evaluate().success
        True
        >>> env.step(Action("submit")).reward
        1.0
        >>> env.close()
    """

    bridge_name: ClassVar[str] = _BRIDGE
    _option_names: ClassVar[tuple[str, ...]] = _OPTIONS

    def __new__(cls, *args: Any, dataset: Any = None, **options: Any) -> SpreadsheetEnv:
        """A SpreadsheetBench task (:class:`SpreadsheetBenchEnv`) when ``dataset`` is given."""
        if dataset is not None and cls is SpreadsheetEnv:
            return super().__new__(_dataset_class())
        return super().__new__(cls)

    def __init__(self, task_id: str, *, max_steps: int | None = None, dataset: None = None) -> None:
        self._task: Task = get_task(task_id)
        self._max_steps_option: int | None = None
        if max_steps is not None:
            self._max_steps_option = check_positive_int("max_steps", max_steps, bridge=_BRIDGE)
        require_openpyxl()
        engine()
        self.task_id = task_id
        self.max_steps = self._max_steps_option or self._task.max_steps
        self.instruction = (
            f"{self._task.instruction}\n\nPut the answer in {self._task.answer_position}; only "
            "those cells are checked, after formulas are recalculated. Tools: list_sheets(), "
            "read_range(range), write_cells(range, values) with a 2-D grid of cell texts "
            "('=...' for a formula), and submit() when done."
        )
        self._book: EpisodeBook | None = None
        self._original: dict[tuple[str, int, int], Any] | None = None
        self._observation: str | None = None
        self._actions: list[dict[str, Any]] = []
        self._counts = {"steps": 0, "reads": 0, "writes": 0, "invalid_actions": 0}
        self._setup_actions = 0  # actions before mark_episode_start (a Setups replay)
        self._last_action = ""
        self._started = False
        self._submitted = False
        self._closed = False
        self._stages: list[list[Action]] | None = None

    # -- tasks ------------------------------------------------------------------------------

    @classmethod
    def designer_hints(cls) -> str:
        """This bridge's notes for the designer's and diagnoser's prompts (its ``hints`` module)."""
        return HINTS

    @classmethod
    def list_tasks(cls, split: str = "train", **options: Any) -> list[str]:
        """Task ids in ``split`` (``"train"``, ``"test"`` or ``"all"``).

        Raises:
            UnknownTaskError: If ``split`` is not one of the splits.
            BridgeError: If an option is unknown.

        Example:
            >>> SpreadsheetEnv.list_tasks("test")[:2]
            ['inventory-category-max', 'payroll-overtime']
        """
        if options.get("dataset") is not None and cls is SpreadsheetEnv:
            return _dataset_class().list_tasks(split, **options)
        check_options(options, _OPTIONS, bridge=_BRIDGE, where="list_tasks")
        return list_task_ids(split)

    def bridge_options(self) -> dict[str, Any]:
        """``max_steps`` when given."""
        return {} if self._max_steps_option is None else {"max_steps": self._max_steps_option}

    @property
    def task(self) -> Task:
        """The task record."""
        return self._task

    def task_fingerprint(self) -> str:
        """The hash of the task record and its two workbooks.

        The verifier compares the answer position (in the record) of the episode's book with
        the answer workbook; the episode's book starts as the input workbook, so both files'
        bytes are covered. ``max_steps`` does not change it.
        """
        return cached_fingerprint(self, self._fingerprint)

    def _fingerprint(self) -> str:
        task = self._task
        files = {
            "input.xlsx": read_bytes(task.input_path, "the input workbook", bridge=_BRIDGE),
            "answer.xlsx": read_bytes(task.answer_path, "the answer workbook", bridge=_BRIDGE),
        }
        return task_fingerprint({"bridge": _BRIDGE, **task.to_dict()}, files)

    # -- the episode ------------------------------------------------------------------------

    def tools(self) -> list[ToolSpec]:
        """``list_sheets``, ``read_range``, ``write_cells``, ``submit``."""
        return list(TOOLS)

    def _fresh_book(self) -> EpisodeBook:
        return EpisodeBook(self._task.input_path)

    def _now(self) -> EpisodeBook:
        if self._book is None:
            self._book = self._fresh_book()
        return self._book

    def _original_cells(self) -> dict[tuple[str, int, int], Any]:
        if self._original is None:
            self._original = self._fresh_book().snapshot()
        return self._original

    def reset(self, *, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Starts from a fresh copy of the input workbook; ``seed`` is ignored."""
        self._closed = False
        self._book = self._fresh_book()
        self._actions = []
        self._counts = dict.fromkeys(self._counts, 0)
        self._setup_actions = 0
        self._last_action = ""
        self._submitted = False
        self._started = True
        self._observation = f"{self.instruction}\n\n{self._sheet_list()}"
        return self._observation, {
            "answer_position": self._task.answer_position,
            "sheets": self._now().sheet_names,
        }

    def step(self, action: Action) -> StepResult:
        """Applies one tool call.

        Raises:
            InvalidActionError: If the action does not match the tool schemas.
            EpisodeError: Before :meth:`reset`, after :meth:`close`, or after ``submit``.
        """
        action = self.check_action(action)
        if not self._started:
            raise EpisodeError("no episode is running; call reset() first")
        if self._closed:
            raise EpisodeError("the env was closed; call reset() to play again")
        if self._submitted:
            raise EpisodeError("episode is over (the answer was submitted); call reset()")
        self._actions.append(action.to_dict())
        return self._apply(action, render=True)

    def _apply(self, action: Action, *, render: bool) -> StepResult:
        """Carries out a checked action; without ``render`` no observation is built (replay)."""
        self._counts["steps"] += 1
        self._last_action = action.tool
        reward, info = 0.0, {}
        try:
            if action.tool == "list_sheets":
                self._counts["reads"] += 1
                observation = self._sheet_list() if render else ""
            elif action.tool == "read_range":
                self._counts["reads"] += 1
                formulas = bool(action.args.get("formulas"))
                observation = self._read(action.args["range"], formulas, render)
            elif action.tool == "write_cells":
                observation = self._write(action.args["range"], action.args["values"], render)
                self._counts["writes"] += 1
            elif action.tool == "submit":
                self._submitted = True
                evaluation = self.evaluate()
                reward = 1.0 if evaluation.success else 0.0
                info = {"evaluation": evaluation.to_dict()}
                observation = self._submitted_text(evaluation)
            else:
                observation, info = self._other_tool(action, render)
        except _Refused as refusal:
            self._counts["invalid_actions"] += 1
            observation = f"{action.tool} refused: {refusal}"
            info = {"invalid_action": str(refusal)}
        self._observation = observation
        return StepResult(observation, reward, self._submitted, False, info)

    def _submitted_text(self, evaluation: Evaluation) -> str:
        return (
            f"Submitted. {evaluation.details['matched']} of {evaluation.details['cells']} "
            f"answer cells in {self._task.answer_position} match."
        )

    def _other_tool(self, action: Action, render: bool) -> tuple[str, dict[str, Any]]:
        """A tool beyond the four (subclasses); the observation and the step's info."""
        raise _Refused(f"unknown tool {action.tool!r}")  # pragma: no cover - schemas stop it

    # -- tools ------------------------------------------------------------------------------

    def _sheet_list(self) -> str:
        book = self._now()
        lines = [f"The workbook has {len(book.sheet_names)} sheet(s):"]
        for name in book.sheet_names:
            used = book.used_range(name)
            if used is None:
                lines.append(f"- {name}: empty")
                continue
            rows, cols = used.shape
            header = CellRange(name, used.min_col, used.min_row, used.max_col, used.min_row)
            first = " | ".join(show(v) for v in book.values(header)[0])
            lines.append(
                f"- {name}: {used.body()} ({rows} rows x {cols} columns); "
                f"row {used.min_row}: {first}"
            )
        return "\n".join(lines)

    def _area(self, text: str) -> CellRange:
        book = self._now()
        try:
            area = parse_range(text, default_sheet=book.sheet_names[0])
        except RangeError as e:
            raise _Refused(str(e)) from e
        assert area.sheet is not None
        stored = book.sheet_name(area.sheet)
        if stored is None:
            raise _Refused(
                f"there is no sheet named {area.sheet!r}; sheets: {', '.join(book.sheet_names)}"
            )
        return area.with_sheet(stored)

    def _read(self, text: str, formulas: bool, render: bool) -> str:
        area = self._area(text)
        book = self._now()
        assert area.sheet is not None
        if not render:
            return ""
        note = ""
        if area.min_row == 1 and area.max_row == MAX_ROW:
            used = book.used_range(area.sheet)
            area = area.clip_rows(used.max_row if used else 1)
        if area.size > MAX_READ_CELLS:
            rows = max(1, MAX_READ_CELLS // area.shape[1])
            if area.shape[1] > MAX_READ_CELLS:
                raise _Refused(
                    f"{area.label()} has {area.shape[1]} columns; read at most "
                    f"{MAX_READ_CELLS} cells at a time"
                )
            shown = area.clip_rows(area.min_row + rows - 1)
            note = (
                f"\n(showing rows {shown.min_row}-{shown.max_row} of {area.min_row}-"
                f"{area.max_row}: at most {MAX_READ_CELLS} cells per read; read the rest with "
                "another range)"
            )
            area = shown
        kind = "formulas and values" if formulas else "values"
        return f"{area.label()} ({kind}):\n{book.grid(area, formulas=formulas)}{note}"

    def _write(self, text: str, rows: list[list[str]], render: bool) -> str:
        area = self._area(text)
        book = self._now()
        assert area.sheet is not None
        if sum(len(row) for row in rows) > LIMITS["cells"]:
            raise _Refused(f"at most {LIMITS['cells']} values can be written at a time")
        try:
            plan = book.plan_write(area, rows)
        except WriteRefused as e:
            raise _Refused(str(e)) from e
        book.apply(area.sheet, plan)
        if not render:
            return ""
        written = CellRange(
            area.sheet,
            min(c for _, c, _ in plan),
            min(r for r, _, _ in plan),
            max(c for _, c, _ in plan),
            max(r for r, _, _ in plan),
        )
        n_formulas = sum(1 for _, _, v in plan if isinstance(v, str) and v.startswith("="))
        shown = written.clip_rows(written.min_row + _MAX_SHOWN_ROWS - 1)
        more = "" if shown == written else f"\n(first {_MAX_SHOWN_ROWS} rows shown)"
        errors = [
            f"{column_letter(c)}{r} {v}"
            for r, c, _ in plan
            if isinstance(v := book.value(area.sheet, r, c), CellError)
        ]
        warning = ""
        if errors:
            listed = ", ".join(errors[:10]) + (" ..." if len(errors) > 10 else "")
            warning = f"\n{len(errors)} cell(s) evaluate to an error: {listed}"
        return (
            f"Wrote {len(plan)} cell(s) in {written.label()} ({n_formulas} formula(s)). "
            f"Values now:\n{book.grid(shown)}{more}{warning}"
        )

    def observe(self) -> str:
        """The workbook now, as the start shows it: the instruction and the sheets' outline.

        Raises:
            EpisodeError: Before :meth:`reset`.
        """
        if self._observation is None:
            raise EpisodeError("no episode is running; call reset() first")
        return f"{self.instruction}\n\n{self._sheet_list()}"

    def mark_episode_start(self) -> None:
        """Restarts the activity counts (the actions so far were a ``Setups`` replay)."""
        self._setup_actions = len(self._actions)
        self._counts = dict.fromkeys(self._counts, 0)
        self._last_action = ""

    def evaluate(self) -> Evaluation:
        """The verifier's verdict on the answer range now (see the ``verifier`` module)."""
        return verify(self._now(), self._task)

    # -- state ------------------------------------------------------------------------------

    def get_env_state(self) -> dict[str, Any]:
        """A fresh JSON-able view: sheets, answer cells, changed cells, activity counts."""
        book = self._now()
        sheets = []
        for name in book.sheet_names:
            used = book.used_range(name)
            sheets.append({"name": name, "used_range": used.body() if used else ""})
        evaluation = self.evaluate()
        cells, errors = [], []
        for area in parse_ranges(self._task.answer_position):
            assert area.sheet is not None
            for row, col in area.coordinates():
                label = f"{quote_sheet(area.sheet)}!{column_letter(col)}{row}"
                value = book.value(area.sheet, row, col)
                stored = book.content(area.sheet, row, col)
                formula = stored if isinstance(stored, str) and stored.startswith("=") else ""
                cells.append({"cell": label, "shown": show(value), "formula": formula})
                if isinstance(value, CellError):
                    errors.append(label)
        changed = solutions.changed_cells(self._original_cells(), book.snapshot())
        return {
            "sheets": sheets,
            "answer_position": self._task.answer_position,
            "answer_cells": cells,
            "answer_cells_correct": int(evaluation.details["matched"]),
            "changed_cells": [
                f"{quote_sheet(sheet)}!{column_letter(col)}{row}"
                for sheet, row, col in changed[:_MAX_CHANGED]
            ],
            "error_cells": errors,
            **self._counts,
            "last_action": self._last_action,
            "submitted": self._submitted,
        }

    def env_state_schema(self) -> dict[str, Any]:
        """The JSON-Schema of :meth:`get_env_state`, with a description per field."""
        return json.loads(json.dumps(STATE_SCHEMA))

    def save_state(self) -> dict[str, Any]:
        """The task, its options and the actions since reset (replayed on restore)."""
        return {
            "bridge": _BRIDGE,
            "task_id": self.task_id,
            "options": self.bridge_options(),
            "started": self._started,
            "actions": json.loads(json.dumps(self._actions)),
            "setup_actions": self._setup_actions,
            "observation": self._observation,
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> SpreadsheetEnv:
        """Rebuilds the environment :meth:`save_state` recorded, by reset and replay.

        Raises:
            BridgeError: If ``state`` is malformed or the replay does not end where it did.
            UnknownTaskError: If its task does not exist.
        """
        names = cls._option_names
        options = state.get("options") if isinstance(state, Mapping) else None
        if isinstance(options, Mapping) and options.get("dataset") is not None:
            names = _dataset_class()._option_names
        state = check_saved_state(
            state, bridge=_BRIDGE, keys=_SAVED_KEYS, options=names, env_name=_NAME
        )
        actions = state["actions"]
        if not isinstance(actions, list):
            raise _bad_state("'actions' must be a list of {'tool', 'args'} dicts")
        setup = state.get("setup_actions", 0)
        if isinstance(setup, bool) or not isinstance(setup, int) or not 0 <= setup <= len(actions):
            raise _bad_state(f"'setup_actions' must be an int from 0 to {len(actions)}")
        env = cls(state["task_id"], **state["options"])
        if not state["started"]:
            check_nothing_recorded(state, ("actions",), bridge=_BRIDGE, env_name=_NAME)
            return env
        env.reset()
        for index, raw in enumerate(actions):
            if index == setup and setup:
                env.mark_episode_start()
            if env._submitted:
                raise _bad_state(f"the episode ended before actions[{index}]")
            try:
                action = env.check_action(raw)
            except Exception as e:
                raise _bad_state(f"actions[{index}] is not a valid action: {e}") from e
            env._actions.append(action.to_dict())
            env._apply(action, render=index == len(actions) - 1)
        if setup and setup == len(actions):
            env.mark_episode_start()
        if state["observation"] is not None and env._observation != state["observation"]:
            raise _bad_state("replaying the actions does not reproduce the recorded observation")
        return env

    # -- solving ----------------------------------------------------------------------------

    def oracle_actions(self) -> list[Action]:
        """The reference solution from the current state; ``[]`` after ``submit``.

        Restores any changed cell outside the answer range to the input's content, writes the
        task's reference formulas (unless the answer range already matches), then submits.
        """
        if self._submitted:
            return []
        solved = self.evaluate().success
        return solutions.oracle_plan(self._task, self._now(), self._original_cells(), solved)

    def stage_candidates(self) -> list[list[Action]]:
        """Start states that keep the task solvable.

        Stale answers in the answer range, a misleading draft column next to the data, and
        (when the answer does not depend on row order) shuffled data rows.
        """
        if self._stages is None:
            self._stages = solutions.stage_candidates(self._task, self._fresh_book())
        return [list(stage) for stage in self._stages]

    def save_workbook(self, path: str | os.PathLike[str]) -> None:
        """Saves the episode's workbook as it is now (formulas kept) to an ``.xlsx`` file."""
        self._now().save(path)

    def close(self) -> None:
        """Ends the episode; the last state stays readable. Idempotent."""
        self._closed = True

    def __repr__(self) -> str:
        return f"<SpreadsheetEnv task={self.task_id!r}>"
