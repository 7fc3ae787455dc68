"""The ``envharness`` command: list bridges and tasks, play a task by hand, check a bridge.

Commands:
    ``envharness bridges``                      the registered bridges and whether they import
    ``envharness tasks NAME``                   task ids, one per line (pipe-friendly)
    ``envharness play NAME --task ID``          an interactive session in the terminal
    ``envharness play --harness spec.json``     the same over a saved harness stack
    ``envharness check-bridge NAME``            the conformance suite on one task
    ``envharness rollout NAME --policy P``      K episodes on each of N tasks, stored and summarized
    ``envharness audit RUN``                    re-measure a rig's accepted harnesses on fresh seeds
    ``envharness experiment sl NAME``           skill learning: arms, rounds, report
    ``envharness export RUN --format F``        trajectories as chat records (chat-jsonl, parquet)
    ``envharness coevolve NAME --tasks IDS``    rounds of rig → train (tabular Q) → evaluate

Every :class:`~envharness.errors.EnvHarnessError` ends the command with one red line
``error: ...`` and exit code 2; ``check-bridge`` exits with 1 when the bridge fails a check.
"""

from __future__ import annotations

from envharness.cli import (  # noqa: F401 - registers the commands
    audit,
    coevolve,
    envs,
    experiment,
    export,
    report,
    rig,
    rollout,
    skills,
)
from envharness.cli._app import app

__all__ = ["app"]
