"""One running ALFWorld game (TextWorld's PDDL env with ALFWorld's names) and what is read of it."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envharness.bridges.alfworld._kit import LOCK, Kit, memoized, release_lib
from envharness.errors import BridgeError

__all__ = ["START", "Game", "View", "tidy"]

_BRIDGE = "alfworld"
START = "middle of room"
"""The location before the agent first goes somewhere."""

_BANNER = re.compile(r"^\s*-=.*=-\s*$", re.MULTILINE)
_BLANK_LINES = re.compile(r"\n{3,}")
_NOT_WORLD = frozenset({"checked"})  # set by look/examine/inventory; no action needs it


def tidy(text: str) -> str:
    r"""Game text without the welcome banner, indentation or runs of blank lines.

    Example:
        >>> tidy("-= Welcome to TextWorld, ALFRED! =-\n\n  You are in the middle of a room.")
        'You are in the middle of a room.'
    """
    text = _BANNER.sub("", text)
    text = "\n".join(line.strip() for line in text.splitlines())
    return _BLANK_LINES.sub("\n\n", text).strip()


def _name(variable: Any) -> str:
    return str(variable.name).strip()


@dataclass(frozen=True)
class View:
    """What the bridge keeps of one game state.

    Attributes:
        feedback: The game's raw answer (the intro after a reset).
        admissible: The admissible commands, sorted.
        inventory: Objects the agent holds, sorted.
        opened: Open receptacles, sorted.
        location: The receptacle the agent last went to, or :data:`START`.
        won: The goal holds.
        fingerprint: A hash of the world's facts, without the ``checked`` marks that looking
            leaves: equal fingerprints, equal worlds, same outcome of any command sequence.
    """

    feedback: str
    admissible: tuple[str, ...]
    inventory: tuple[str, ...]
    opened: tuple[str, ...]
    location: str
    won: bool
    fingerprint: str

    def holds(self, name: str) -> bool:
        """Whether the agent holds ``name``."""
        return name in self.inventory


def _view(state: Any, location: str) -> View:
    inventory, opened, world = [], [], []
    for fact in state["facts"]:
        args = [_name(a) for a in fact.arguments]
        if fact.name == "holds" and len(args) == 2:
            inventory.append(args[1])
        elif fact.name == "opened" and len(args) == 1:
            opened.append(args[0])
        if fact.name not in _NOT_WORLD:
            world.append(f"{fact.name}({','.join(args)})")
    fingerprint = hashlib.sha256("\n".join(sorted(world)).encode()).hexdigest()[:32]
    return View(
        feedback=str(state["feedback"] or ""),
        admissible=tuple(sorted(state["admissible_commands"] or ())),
        inventory=tuple(sorted(inventory)),
        opened=tuple(sorted(opened)),
        location=location,
        won=bool(state["won"]),
        fingerprint=fingerprint,
    )


class Game:
    """One game, started from its data (``pddl_domain``, ``grammar``, ``pddl_problem``).

    Args:
        parts: The imported ALFWorld/TextWorld pieces.
        data: The game file's content.

    Raises:
        BridgeError: If TextWorld cannot load the game.
    """

    def __init__(self, parts: Kit, data: Mapping[str, Any]) -> None:
        self._parts = parts
        infos = parts.textworld.EnvInfos(admissible_commands=True, facts=True, won=True)
        try:
            with memoized(parts):
                env = parts.demangler(parts.pddl_env(infos), shuffle=False)
                env.load(dict(data))
        except Exception as e:  # a malformed PDDL problem, a grammar TextWorld cannot parse
            raise BridgeError(
                f"TextWorld cannot load the game: {type(e).__name__}: {e}", bridge=_BRIDGE
            ) from e
        self._env: Any = env
        self._location = START
        self.view: View | None = None

    def reset(self) -> View:
        """Restarts the game."""
        with memoized(self._parts):
            state = self._env.reset()
        self._location = START
        self.view = _view(state, START)
        return self.view

    def step(self, command: str) -> View:
        """Sends one command; an inadmissible one leaves the world as it was."""
        with memoized(self._parts):
            before = self.view
            state, _, _ = self._env.step(command)
            if before is not None and command in before.admissible and command.startswith("go to "):
                self._location = command[len("go to ") :]
            self.view = _view(state, self._location)
        return self.view

    def state(self) -> Any:
        """TextWorld's current ``GameState`` (what ALFWorld's expert reads)."""
        return self._env.state

    def replan(self) -> list[str]:
        """Fast-downward's optimal plan from the current state (``[]`` if none); no side effects.

        The same plan TextWorld's ``policy_commands`` and ALFWorld's planner expert give.
        """
        env = self._env.unwrapped
        with LOCK:
            return list(env._pddl_state.replan(env._entity_infos))

    def close(self) -> None:
        """Stops the game and hands its copy of fast-downward to the next game. Idempotent."""
        env, self._env = self._env, None
        if env is None:
            return
        with LOCK:
            lib = getattr(env.unwrapped, "downward_lib", None)
            env.close()
            if lib is not None:
                release_lib(lib)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._env is None
