"""SpreadsheetBench tasks in the benchmark's own format, scored as its evaluation scores them.

``load_bridge("spreadsheet", task_id=str(record_id), dataset=FOLDER)`` builds
:class:`~envharness.bridges.spreadsheet.bench.env.SpreadsheetBenchEnv` and
``list_tasks("spreadsheet", dataset=FOLDER)`` lists a folder's ids.

- :mod:`~envharness.bridges.spreadsheet.bench.dataset`: ``dataset.json`` records and workbooks.
- :mod:`~envharness.bridges.spreadsheet.bench.compare`: upstream's cell comparison.
- :mod:`~envharness.bridges.spreadsheet.bench.recalc`: formula values (engine or LibreOffice).
- :mod:`~envharness.bridges.spreadsheet.bench.verifier`: per-case verdicts, soft and hard.
- :mod:`~envharness.bridges.spreadsheet.bench.program`: solution programs in a locked-down
  process (``_runner.py`` is the child).
- :mod:`~envharness.bridges.spreadsheet.bench.oracle`: the oracle program.
- :mod:`~envharness.bridges.spreadsheet.bench.env`: the environment.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["SpreadsheetBenchEnv"]


def __getattr__(name: str) -> Any:
    # Lazy: env.py imports this package's modules, and this package is imported from env.py.
    if name == "SpreadsheetBenchEnv":
        return importlib.import_module(f"{__name__}.env").SpreadsheetBenchEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
