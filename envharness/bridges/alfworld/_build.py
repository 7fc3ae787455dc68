"""Building a trial's game file, as ALFWorld's own generation code does, and caching it on disk.

A game is the wheel's logic (``alfworld/data/alfred.pddl`` and ``alfred.twl2``) with the task's
goal written into the grammar (ALFWorld's ``add_task_to_grammar``), plus the trial's
``initial_state.pddl``. The goal sentence is the release's own, read from the trial's
``game.tw-pddl`` when it has one, else ALFWorld's templated one (its template chosen with a
generator seeded by the task id). Built games live in a cache folder named by the hash of their
content, next to a small ``traj_data.json`` (ALFWorld's expert reads the task's parameters from
the game's folder) and JSON caches of the oracle's plans and the stage candidates.
"""

from __future__ import annotations

import hashlib
import json
import re
import zlib
from pathlib import Path
from typing import Any

from envharness._jsonfile import write_json
from envharness.bridgekit.cache import bridge_cache_dir, file_lock
from envharness.bridges.alfworld._data import TASK_TYPES
from envharness.bridges.alfworld._kit import Kit, seeded_random
from envharness.errors import BridgeError

__all__ = ["Built", "build_game", "default_cache_dir", "read_json", "write_json"]

_BRIDGE = "alfworld"
_FORMAT = 1  # bump when the built files change meaning
_GOAL = re.compile(r'"rhs"\s*:\s*"Your task is to: (.*?)"')
_PLACEHOLDER = "UNKNOWN GOAL"


def default_cache_dir() -> Path:
    """Where built games are cached when no ``cache_dir`` is given.

    ``$ENVHARNESS_CACHE/alfworld`` when that variable is set, else
    ``$XDG_CACHE_HOME/envharness/alfworld``, else ``~/.cache/envharness/alfworld``.
    """
    return bridge_cache_dir(_BRIDGE)


def read_json(path: Path) -> Any:
    """The JSON in ``path``, or ``None`` when it is missing or unreadable (a cache miss)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


class Built:
    """A built game in the cache.

    Attributes:
        folder: The game's cache folder.
        game_file: ``game.tw-pddl`` in it.
        data: The game file's content.
        goal: The task sentence, e.g. ``"put some box on dresser."``.
        task_type: One of :data:`~envharness.bridges.alfworld._data.TASK_TYPES`.
        params: The trial's ``pddl_params`` (``object_target``, ``parent_target``, ...).
    """

    def __init__(self, folder: Path, data: dict[str, Any], meta: dict[str, Any]) -> None:
        self.folder = folder
        self.game_file = folder / "game.tw-pddl"
        self.data = data
        self.goal = str(meta["goal"])
        self.task_type = str(meta["task_type"])
        self.params = dict(meta["pddl_params"])

    @property
    def key(self) -> str:
        """The content hash naming the folder."""
        return self.folder.name


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text()
    except OSError as e:
        raise BridgeError(f"cannot read the trial's {what} {path}: {e}", bridge=_BRIDGE) from e


def _release_goal(trial: Path) -> str | None:
    """The goal sentence of the release's ``game.tw-pddl``, without its final period."""
    try:
        grammar = json.loads((trial / "game.tw-pddl").read_text()).get("grammar", "")
    except (OSError, ValueError, AttributeError):
        return None
    found = _GOAL.search(grammar)
    if found is None or _PLACEHOLDER in found.group(1):
        return None
    return found.group(1).rstrip(".").strip() or None


def _goal(parts: Kit, trial: Path, traj: dict[str, Any], task_id: str) -> str:
    goal = _release_goal(trial)
    if goal is None:
        with seeded_random(zlib.crc32(task_id.encode())):
            goal = str(parts.templated_goal(traj))
    return goal


def _traj(trial: Path) -> dict[str, Any]:
    try:
        traj = json.loads(_read(trial / "traj_data.json", "trajectory"))
        params, task_type = dict(traj["pddl_params"]), str(traj["task_type"])
    except (ValueError, KeyError, TypeError) as e:
        raise BridgeError(
            f"malformed {trial / 'traj_data.json'}: {type(e).__name__}: {e}", bridge=_BRIDGE
        ) from e
    if task_type not in TASK_TYPES:
        raise BridgeError(f"{trial}: unknown task type {task_type!r}", bridge=_BRIDGE)
    return {"pddl_params": params, "task_type": task_type}


def build_game(parts: Kit, trial: Path, task_id: str, cache_dir: Path) -> Built:
    """The built game of ``trial``, from the cache or built into it.

    Raises:
        BridgeError: If the trial's files cannot be read or the cache cannot be written.
    """
    traj = _traj(trial)
    problem = _read(trial / "initial_state.pddl", "initial state")
    goal = _goal(parts, trial, traj, task_id)
    # ALFWorld's add_task_to_grammar, with the goal chosen above
    grammar = parts.grammar.replace(_PLACEHOLDER, goal)
    data = {
        "pddl_domain": parts.domain,
        "grammar": grammar,
        "pddl_problem": problem,
        "solvable": None,
        "walkthrough": None,
    }
    meta = {"task_id": task_id, "goal": goal, **traj}
    digest = hashlib.sha256(json.dumps([_FORMAT, data, meta], sort_keys=True).encode())
    name = f"{task_id.split('/', 1)[0][:80]}-{digest.hexdigest()[:16]}"
    folder = cache_dir / name
    if read_json(folder / "traj_data.json") == meta and (folder / "game.tw-pddl").is_file():
        return Built(folder, data, meta)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with file_lock(folder / ".lock"):
            write_json(folder / "game.tw-pddl", data)
            write_json(folder / "traj_data.json", meta)  # last: it marks the folder complete
    except OSError as e:
        raise BridgeError(f"cannot write the game cache {folder}: {e}", bridge=_BRIDGE) from e
    return Built(folder, data, meta)
