"""The Toy24 bridge: the game of 24, the paper's toy domain.

Registered as ``toy24``.

- :mod:`~envharness.bridges.toy24.env`: :class:`Toy24Env`, the bridge (tasks, splits, tools).
- :mod:`~envharness.bridges.toy24.solver`: the exact solver behind its oracle and its task list.
"""

from __future__ import annotations

from envharness.bridges.toy24.env import Toy24Env
from envharness.bridges.toy24.solver import (
    TARGET,
    Step,
    is_solvable,
    puzzles,
    solutions,
    solve_steps,
)

__all__ = ["TARGET", "Step", "Toy24Env", "is_solvable", "puzzles", "solutions", "solve_steps"]
