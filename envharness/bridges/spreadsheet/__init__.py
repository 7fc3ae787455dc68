"""The spreadsheet bridge: SpreadsheetBench-shaped tasks on original workbooks.

Registered as ``spreadsheet``. A task is an instruction ("fill in the line totals"), an input
workbook, an answer workbook and an answer position (``Sales!F2:F41``). The agent reads and
writes cells with ``list_sheets()``, ``read_range(range)``, ``write_cells(range, values)`` and
``submit()``; the verifier recalculates the formulas and compares the answer range with the answer
workbook's values (numbers within 1e-6, text exactly after stripping). Needs the ``spreadsheet``
extra (``pip install 'envharness[spreadsheet]'``: openpyxl and the pure-Python formula engine
``formulas``); both are imported only when a task is built.

- :mod:`~envharness.bridges.spreadsheet.env`: :class:`SpreadsheetEnv`, the bridge.
- :mod:`~envharness.bridges.spreadsheet.tasks`: the task records and splits (``data/tasks.json``).
- :mod:`~envharness.bridges.spreadsheet.workbook`: the episode's workbook (reads, writes, grids).
- :mod:`~envharness.bridges.spreadsheet.recalc`: formula checking and recalculation, and why the
  engine is ``formulas`` rather than LibreOffice; :data:`SUPPORTED_FUNCTIONS` lists what works.
- :mod:`~envharness.bridges.spreadsheet.verifier`: the answer check.
- :mod:`~envharness.bridges.spreadsheet.solutions`: the oracle and the start-state candidates.
- :mod:`~envharness.bridges.spreadsheet.cells`, :mod:`~envharness.bridges.spreadsheet.values`:
  addresses and cell values.
- :mod:`~envharness.bridges.spreadsheet.build_tasks`: regenerates the task data.
- :mod:`~envharness.bridges.spreadsheet.bench`: real SpreadsheetBench tasks in the benchmark's
  own layout, ``load_bridge("spreadsheet", task_id=str(record_id), dataset=FOLDER)``
  (:class:`~envharness.bridges.spreadsheet.bench.env.SpreadsheetBenchEnv`): the agent edits test
  case 1's workbook and can run a solution program (openpyxl, in a locked-down process) that the
  verifier runs on all three test cases, scored exactly as upstream's evaluation (soft = cases
  passed / 3, ``success`` = hard).

Example:
    >>> from envharness import load_bridge
    >>> from envharness.rollout import OraclePolicy, rollout
    >>> env = load_bridge("spreadsheet", task_id="grades-average")
    >>> trajectory = rollout(env, OraclePolicy(1.0, seed=0), seed=0)
    >>> trajectory.success, trajectory.n_steps
    (True, 2)
"""

from __future__ import annotations

from envharness.bridges.spreadsheet.bench.env import SpreadsheetBenchEnv
from envharness.bridges.spreadsheet.env import SpreadsheetEnv
from envharness.bridges.spreadsheet.recalc import SUPPORTED_FUNCTIONS, WHOLE_COLUMN_FUNCTIONS
from envharness.bridges.spreadsheet.tasks import SPLITS, Task, get_task, list_task_ids, load_tasks

__all__ = [
    # the bridge
    "SpreadsheetEnv",
    "SpreadsheetBenchEnv",
    # tasks
    "SPLITS",
    "Task",
    "get_task",
    "list_task_ids",
    "load_tasks",
    # the formula engine
    "SUPPORTED_FUNCTIONS",
    "WHOLE_COLUMN_FUNCTIONS",
]
