"""Where ALFWorld's trials live: the data folder, its splits, and task ids.

ALFWorld's data release (``alfworld-download``) fills ``$ALFWORLD_DATA/json_2.1.1/<split>/``, one
folder per ALFRED task (``pick_and_place_simple-Box-None-Dresser-224``) holding one folder per
trial (``trial_T20190907_164104_229696``) with ``traj_data.json``, ``initial_state.pddl`` and
``game.tw-pddl``. A task id is the trial's path relative to its split folder.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

from envharness.bridgekit.checks import check_path, check_split
from envharness.errors import BridgeError, UnknownTaskError

__all__ = [
    "SPLITS",
    "TASK_TYPES",
    "data_root",
    "find_trial",
    "list_trials",
]

_BRIDGE = "alfworld"

SPLITS: dict[str, str] = {
    "train": "train",
    "valid_train": "valid_train",
    "valid_seen": "valid_seen",
    "valid_unseen": "valid_unseen",
    "test": "valid_unseen",
}
"""Split name -> data folder. ``test`` is ALFWorld's out-of-distribution set, ``valid_unseen``."""

TASK_TYPES: tuple[str, ...] = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
"""The six ALFWorld task types (the prefix of every task folder)."""

_RELEASE = "json_2.1.1"
_FOLDERS = tuple(dict.fromkeys(SPLITS.values()))
_NAME = r"[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+){4}"
_TRIAL = r"trial_T[0-9]+_[0-9]+_[0-9]+"
_ID = re.compile(rf"({_NAME})/({_TRIAL})")
_ID_FORMAT = (
    "a task id is a trial's path inside its split folder, '<task folder>/<trial folder>', e.g. "
    "'pick_and_place_simple-Box-None-Dresser-224/trial_T20190907_164104_229696'; list them with "
    "AlfWorldEnv.list_tasks(split) or `envharness tasks alfworld --split valid_seen`"
)
_SOLVABLE = re.compile(rb'"solvable"\s*:\s*(true|false|null)')
_TAIL = 8192


def _how_to_get_data(base: Path, source: str) -> str:
    return (
        f"no ALFWorld trials in {base} ({source}): expected folders "
        f"{base}/{_RELEASE}/<split>/<task>/<trial>/ (split one of {', '.join(_FOLDERS)}) holding "
        "traj_data.json and initial_state.pddl. Set ALFWORLD_DATA to the folder ALFWorld's data "
        "release was downloaded to, or pass data_dir=...; to get the data, run "
        "`pip install alfworld && alfworld-download` on a machine with network (it fills "
        "$ALFWORLD_DATA, by default ~/.cache/alfworld), then copy that folder here"
    )


def data_root(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding the split folders.

    ``data_dir`` when given, else ``$ALFWORLD_DATA``, else ALFWorld's own default
    ``~/.cache/alfworld``; inside it, ``json_2.1.1/`` when present (the release's layout), else
    the folder itself.

    Raises:
        BridgeError: If ``data_dir`` is not a path, or no split folder is there (the message says
            how to get the data).
    """
    data_dir = check_path("data_dir", data_dir, bridge=_BRIDGE)
    if data_dir is not None:
        base, source = Path(data_dir).expanduser(), "from data_dir"
    elif os.environ.get("ALFWORLD_DATA"):
        base, source = Path(os.environ["ALFWORLD_DATA"]).expanduser(), "from $ALFWORLD_DATA"
    else:
        base = Path.home() / ".cache" / "alfworld"
        source = "ALFWorld's default; neither data_dir nor $ALFWORLD_DATA is set"
    for root in (base / _RELEASE, base):
        if any((root / folder).is_dir() for folder in _FOLDERS):
            return root
    raise BridgeError(_how_to_get_data(base, source), bridge=_BRIDGE)


def _split_folder(root: Path, split: object) -> Path:
    split = check_split(split, SPLITS, bridge=_BRIDGE, note="'test' is valid_unseen")
    folder = root / SPLITS[split]
    if not folder.is_dir():
        present = [f for f in _FOLDERS if (root / f).is_dir()]
        raise BridgeError(
            f"the data in {root} has no {SPLITS[split]!r} folder for split {split!r} (it has "
            f"{', '.join(present)}); pick one of those, or download the full release with "
            "`alfworld-download`",
            bridge=_BRIDGE,
        )
    return folder


def _known_unsolvable(game: Path) -> bool:
    """Whether the release's ``game.tw-pddl`` says ``"solvable": false`` (read from its end)."""
    try:
        with open(game, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - _TAIL))
            tail = handle.read()
    except OSError:
        return False
    found = _SOLVABLE.findall(tail)
    return bool(found) and found[-1] == b"false"


def _playable(trial: Path) -> bool:
    """Whether ALFWorld plays this trial: a known task type, not sliced or movable, solvable."""
    task = trial.parent.name
    if "movable" in task or "Sliced" in task or task.split("-", 1)[0] not in TASK_TYPES:
        return False
    if not (trial / "traj_data.json").is_file() or not (trial / "initial_state.pddl").is_file():
        return False
    return not _known_unsolvable(trial / "game.tw-pddl")


def list_trials(root: Path, split: str) -> list[str]:
    """The task ids of ``split``, sorted: every playable trial under its folder.

    Like ALFWorld's own loader, trials of sliced objects or movable receptacles, and games the
    release marks unsolvable, are left out.

    Raises:
        UnknownTaskError: If ``split`` is not a split name.
        BridgeError: If the data has no folder for that split.
    """
    folder = _split_folder(root, split)
    ids = []
    for task in sorted(p for p in folder.iterdir() if p.is_dir()):
        for trial in sorted(p for p in task.iterdir() if p.is_dir()):
            if _ID.fullmatch(f"{task.name}/{trial.name}") and _playable(trial):
                ids.append(f"{task.name}/{trial.name}")
    return ids


def find_trial(root: Path, task_id: object) -> Path:
    """The folder of trial ``task_id``, looked for in each split folder present.

    Raises:
        UnknownTaskError: If the id is malformed, names no playable trial in the data, naming
            the closest ids and how to list them.
    """
    if not isinstance(task_id, str):
        raise UnknownTaskError(
            f"expected a str task id, got {type(task_id).__name__} {task_id!r}; {_ID_FORMAT}",
            bridge=_BRIDGE,
        )
    if _ID.fullmatch(task_id) is None:
        raise UnknownTaskError(
            f"malformed task id {task_id!r}: {_ID_FORMAT}", bridge=_BRIDGE, task_id=task_id
        )
    for folder in _FOLDERS:
        trial = root / folder / task_id
        if trial.is_dir() and _playable(trial):
            return trial
    known = [
        f"{task.name}/{trial.name}"
        for folder in _FOLDERS
        if (root / folder).is_dir()
        for task in (root / folder).iterdir()
        if task.is_dir()
        for trial in task.iterdir()
    ]
    close = difflib.get_close_matches(task_id, known, n=3, cutoff=0.6)
    hint = f" Closest: {', '.join(close)}." if close else ""
    raise UnknownTaskError(
        f"no playable trial {task_id!r} in {root} (looked in {', '.join(_FOLDERS)}; sliced, "
        f"movable-receptacle and unsolvable trials are not played).{hint} {_ID_FORMAT}",
        bridge=_BRIDGE,
        task_id=task_id,
    )
