"""The oracle: ALFWorld's hand-coded expert, run on a private copy of the game.

The expert (``HandCodedTWAgent``, the one ALFWorld's generation code checks games with) is
played on a second copy of the game, brought to the current state by replaying the commands so
far (those the game took), with a fresh memory (it is told the room's receptacles, then looks
around). What it plays until the goal holds is the plan. A plan is known per world state (the
facts, less the marks that looking leaves), so a plan stays valid while the agent follows it,
looks around or types commands the game ignores; plans are kept per process and, when the
agent's hands are empty, on disk next to the game. When the agent holds something, or the
expert does not win within its budget, the plan is fast-downward's optimal one from the current
state (ALFWorld's planner expert), also played out on the second copy. The game the agent plays
is never touched.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from envharness.bridgekit.cache import file_lock
from envharness.bridges.alfworld._build import Built, read_json, write_json
from envharness.bridges.alfworld._game import Game, View
from envharness.bridges.alfworld._kit import LOCK, Kit, seeded_random

__all__ = [
    "EXPERT_BUDGET",
    "Solution",
    "load_plans",
    "lookup",
    "persist",
    "remember",
    "run_planner",
    "replay",
    "run_expert",
    "solve",
]

EXPERT_BUDGET = 120
"""Most commands the expert may play (ALFWorld's games need up to about 90)."""

_MEMORY_SIZE = 4096
_DISK_SIZE = 512
_FORMAT = 1
_PLANS: OrderedDict[tuple[str, str], tuple[str, ...]] = OrderedDict()


@dataclass(frozen=True)
class Solution:
    """A winning run from a state: the commands, and the view after each (``views[0]``: start)."""

    commands: tuple[str, ...]
    views: tuple[View, ...]

    def plans(self) -> dict[str, tuple[str, ...]]:
        """The plan from each state passed through, by fingerprint (the shortest suffix wins)."""
        found: dict[str, tuple[str, ...]] = {}
        for index, view in enumerate(self.views[:-1]):
            found[view.fingerprint] = self.commands[index:]
        return found


# -- the plan memory ------------------------------------------------------------------------------


def lookup(game: str, fingerprint: str) -> tuple[str, ...] | None:
    """The known plan of game ``game`` from the world ``fingerprint``, or ``None``."""
    with LOCK:
        plan = _PLANS.get((game, fingerprint))
        if plan is not None:
            _PLANS.move_to_end((game, fingerprint))
        return plan


def remember(game: str, plans: dict[str, tuple[str, ...]]) -> None:
    """Keeps plans by fingerprint; a shorter plan replaces a longer one."""
    with LOCK:
        for fingerprint, plan in plans.items():
            known = _PLANS.get((game, fingerprint))
            if known is None or len(plan) < len(known):
                _PLANS[(game, fingerprint)] = tuple(plan)
            _PLANS.move_to_end((game, fingerprint))
        while len(_PLANS) > _MEMORY_SIZE:
            _PLANS.popitem(last=False)


def _disk_plans(built: Built) -> dict[str, tuple[str, ...]]:
    data = read_json(built.folder / "plans.json")
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        return {}
    plans = data.get("plans")
    if not isinstance(plans, dict):
        return {}
    return {
        str(k): tuple(v)
        for k, v in plans.items()
        if isinstance(v, list) and all(isinstance(c, str) for c in v)
    }


def load_plans(built: Built) -> None:
    """Loads the plans cached next to the game into the process's memory."""
    remember(built.key, _disk_plans(built))


def persist(built: Built, plans: dict[str, tuple[str, ...]]) -> None:
    """Adds ``plans`` to the game's ``plans.json`` (best effort: it is only a cache)."""
    try:
        with file_lock(built.folder / ".lock"):
            known = _disk_plans(built)
            for fingerprint, plan in plans.items():
                if fingerprint not in known and len(known) >= _DISK_SIZE:
                    continue
                if fingerprint not in known or len(plan) < len(known[fingerprint]):
                    known[fingerprint] = plan
            write_json(
                built.folder / "plans.json",
                {"format": _FORMAT, "plans": {k: list(v) for k, v in sorted(known.items())}},
            )
    except OSError:
        pass


# -- running the expert ---------------------------------------------------------------------------


def replay(game: Game, commands: Sequence[str]) -> View | None:
    """Resets ``game`` and plays ``commands``; ``None`` if one is inadmissible or wins the game."""
    view = game.reset()
    for command in commands:
        if view.won or command not in view.admissible:
            return None
        view = game.step(command)
    return None if view.won else view


def run_expert(
    parts: Kit, game: Game, built: Built, history: Sequence[str], budget: int = EXPERT_BUDGET
) -> Solution | None:
    """The expert's winning run after ``history``, with a fresh memory; ``None`` if it fails.

    ``None`` too when ``history`` cannot be replayed (a command inadmissible, or the game won).
    The expert's random choices come from a fixed seed, so the run is deterministic.
    """
    with LOCK:
        intro = game.reset().feedback
        view = replay(game, history)
        if view is None:
            return None
        commands: list[str] = []
        views = [view]
        expert = parts.expert(max_steps=budget)
        with seeded_random(0):
            try:
                expert.reset(str(built.game_file))
                expert.observe(intro)
                previous = ""
                while not view.won and len(commands) < budget:
                    command = "look"
                    if previous:
                        command = expert.act(game.state(), 0, view.won, previous)
                        if command not in view.admissible:
                            command = "look"  # what ALFWorld's AlfredExpert wrapper does
                    view = game.step(command)
                    commands.append(command)
                    views.append(view)
                    previous = command
            except Exception:  # the expert gives up (timeout, failure) or trips on a state
                return None
    return Solution(tuple(commands), tuple(views)) if view.won else None


def run_planner(game: Game, history: Sequence[str]) -> Solution | None:
    """Fast-downward's optimal plan after ``history``, played out on ``game``.

    ``None`` when ``history`` cannot be replayed, no plan exists, or the plan does not win.
    """
    with LOCK:
        view = replay(game, history)
        if view is None:
            return None
        commands = tuple(game.replan())
        views = [view]
        for command in commands:
            if command not in view.admissible:
                return None
            view = game.step(command)
            views.append(view)
    return Solution(commands, tuple(views)) if commands and view.won else None


def solve(
    parts: Kit, scratch: Game, built: Built, view: View, history: Sequence[str]
) -> tuple[str, ...]:
    """A plan from ``view``, the state ``history`` leads to; remembered, ``()`` if there is none.

    The expert's, played on ``scratch`` after ``history``, when the agent's hands are empty and
    it wins; else fast-downward's optimal plan. Plans found with empty hands are also written
    next to the game, so the next process need not run the expert again.
    """
    solution = None if view.inventory else run_expert(parts, scratch, built, history)
    if solution is None or view.fingerprint not in solution.plans():
        solution = run_planner(scratch, history)
    if solution is None or view.fingerprint not in solution.plans():
        plans: dict[str, tuple[str, ...]] = {view.fingerprint: ()}
    else:
        plans = solution.plans()
    remember(built.key, plans)
    if not view.inventory:
        persist(built, plans)
    found = lookup(built.key, view.fingerprint)
    return found if found is not None else ()
