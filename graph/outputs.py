"""What a rig leaves in its run directory: accepted specs and rejected attempts, per task.

``RUN/accepted/<task>.json`` is a :class:`~envharness.harness.HarnessSpec` with lineage (load it
with ``HarnessSpec.from_json``); ``RUN/rejected/<task>.json`` lists the attempts and why each
failed; ``RUN/undecided/<task>.json`` is a task whose budget ran out before the judge was sure,
with its best candidate and statistics. Trajectories live in ``RUN/trajectories/`` (a
:class:`~envharness.rollout.RunStore`).
"""

from __future__ import annotations

import re
from pathlib import Path

from envharness._jsonfile import write_json

__all__ = ["accepted_path", "rejected_path", "task_filename", "undecided_path", "write_json"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


def task_filename(task_id: str) -> str:
    """A file name for a task id (path separators and other unsafe characters replaced)."""
    name = _UNSAFE.sub("_", task_id).strip("._") or "task"
    return f"{name}.json"


def accepted_path(run_dir: str | Path, task_id: str) -> Path:
    """Where the accepted spec of ``task_id`` is written."""
    return Path(run_dir) / "accepted" / task_filename(task_id)


def rejected_path(run_dir: str | Path, task_id: str) -> Path:
    """Where the rejected attempts of ``task_id`` are written."""
    return Path(run_dir) / "rejected" / task_filename(task_id)


def undecided_path(run_dir: str | Path, task_id: str) -> Path:
    """Where a task left undecided (its budget ran out) is written, with its best candidate."""
    return Path(run_dir) / "undecided" / task_filename(task_id)
