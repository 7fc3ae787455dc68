"""The TextWorld bridge: text adventures made by TextWorld's own game generator.

A task is one generated game, named by its generation settings and seed:
``tw-s{world_size}-o{nb_objects}-q{quest_length}-seed{seed}``. ``"tw-s5-o10-q5-seed42"`` is the
game ``tw-make custom --world-size 5 --nb-objects 10 --quest-length 5 --seed 42`` makes (same
generator settings, same seed, same game). Games are generated on first use through TextWorld's
Python API and cached on disk, keyed by the task id, in ``cache_dir`` (an option), else
``$ENVHARNESS_CACHE/textworld``, else ``$XDG_CACHE_HOME/envharness/textworld``, else
``~/.cache/envharness/textworld``. Generation is safe when several processes ask for the same game
at once (a lock file per game; files are written to a temporary folder and renamed into place).

Splits list games of the default size (5 rooms, 10 objects, quest length 5): ``"train"`` is
seeds 0-99, ``"test"`` seeds 1000-1049, ``"all"`` both. Any well-formed id is a task, in or out
of a split.

The agent types commands with one tool, ``act(command)``; the game's own answers are the
observations, its score the reward, and winning the game the success.

Example:
    >>> GameSettings.parse("tw-s5-o10-q5-seed42")
    GameSettings(world_size=5, nb_objects=10, quest_length=5, seed=42)
    >>> TextWorldEnv.list_tasks("test")[:2]
    ['tw-s5-o10-q5-seed1000', 'tw-s5-o10-q5-seed1001']
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, NamedTuple

from envharness.bridgekit.cache import bridge_cache_dir, file_lock
from envharness.bridgekit.checks import (
    check_nothing_recorded,
    check_options,
    check_path,
    check_positive_int,
    check_saved_state,
    check_split,
    state_error,
)
from envharness.bridgekit.fingerprint import cached_fingerprint, read_bytes, task_fingerprint
from envharness.bridges.textworld.hints import HINTS
from envharness.core import Action, ActionableEnv, Evaluation, StepResult, ToolSpec
from envharness.errors import (
    BridgeError,
    DependencyNotInstalled,
    EpisodeError,
    UnknownTaskError,
)

__all__ = ["GameSettings", "TextWorldEnv", "default_cache_dir", "ensure_game"]

_MAX_LISTED = 25  # admissible commands named when a command is not one of them

_BRIDGE = "textworld"
_NAME = "TextWorldEnv"
_DEFAULT_MAX_STEPS = 50
_DEFAULT_SIZE = (5, 10, 5)
_SPLITS: dict[str, tuple[range, ...]] = {
    "train": (range(0, 100),),
    "test": (range(1000, 1050),),
    "all": (range(0, 100), range(1000, 1050)),
}
_LIMITS = {"world_size": (1, 30), "nb_objects": (0, 100), "quest_length": (1, 30)}
_MAX_SEED = 2**32 - 1
_NUMBER = r"(0|[1-9][0-9]*)"
_ID = re.compile(rf"tw-s{_NUMBER}-o{_NUMBER}-q{_NUMBER}-seed{_NUMBER}")
_ID_FORMAT = (
    "a task id is 'tw-s<world size>-o<objects>-q<quest length>-seed<seed>', e.g. "
    "'tw-s5-o10-q5-seed42' (world size 1-30, objects 0-100, quest length 1-30, seed 0-2**32-1, "
    "no leading zeros); see TextWorldEnv.list_tasks()"
)
_OPTIONS = ("cache_dir", "max_steps")
_SERIAL = slice(0x12, 0x18)  # the Z-machine header's serial number: Inform writes the build date
_MAX_COMMAND = 200
_RESERVED_WORDS = frozenset(
    "restart restore save quit q undo script unscript transcript noscript print_state".split()
)
_RESERVED_PHRASES = ("print state option", "restrict commands")
_END_PROMPT = "Would you like to RESTART"
_BLANK_LINES = re.compile(r"\n{3,}")
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")
_MAX_STAGES = 4

# TextWorld keeps module-level state (its knowledge base, loaded lazily); generating and starting
# games from several threads at once goes through this lock.
_TEXTWORLD_LOCK = threading.RLock()

_COMMAND = {
    "type": "string",
    "description": (
        "One command in plain words, e.g. 'look', 'inventory', 'go north', 'open chest', "
        "'take key from chest', 'unlock door with key', 'put apple on table'."
    ),
}
_TOOLS = (
    ToolSpec(
        "act",
        "Type one command into the text adventure; the game answers in text.",
        {"type": "object", "properties": {"command": _COMMAND}, "required": ["command"]},
    ),
)
_STATE_FIELDS: dict[str, Any] = {
    "location": {"type": "string", "description": "The room the player is in (lowercase)."},
    "inventory": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Names of the objects the player carries, sorted.",
    },
    "description": {
        "type": "string",
        "description": "The current room's description, as the command 'look' prints it.",
    },
    "score": {"type": "integer", "description": "The game's score so far."},
    "max_score": {"type": "integer", "description": "The highest score the game gives."},
    "moves": {
        "type": "integer",
        "description": (
            "Agent steps this episode (not setup steps), invalid and refused commands included."
        ),
    },
    "admissible_commands": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Commands that do something in this state, sorted (lowercase).",
    },
    "won": {"type": "boolean", "description": "The objective is done (the episode is over)."},
    "lost": {"type": "boolean", "description": "The game is lost (the episode is over)."},
    "last_command": {
        "type": "string",
        "description": "The last command the agent typed, cleaned up ('' before any).",
    },
}
_STATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A TextWorld text adventure: the player's whereabouts, belongings and score.",
    "properties": _STATE_FIELDS,
    "required": list(_STATE_FIELDS),
}
_SAVED_KEYS = ("bridge", "task_id", "options", "started", "commands", "observation")


class GameSettings(NamedTuple):
    """The generation settings of one game, as its task id spells them.

    Attributes:
        world_size: Rooms in the world.
        nb_objects: Objects in the world (at least; quest objects come first).
        quest_length: Actions the quest needs.
        seed: The generator's seed.

    Example:
        >>> GameSettings(3, 5, 3, 7).task_id
        'tw-s3-o5-q3-seed7'
    """

    world_size: int
    nb_objects: int
    quest_length: int
    seed: int

    @property
    def task_id(self) -> str:
        """The task id of these settings."""
        return f"tw-s{self.world_size}-o{self.nb_objects}-q{self.quest_length}-seed{self.seed}"

    @classmethod
    def parse(cls, task_id: object) -> GameSettings:
        """Reads a task id.

        Raises:
            UnknownTaskError: If ``task_id`` is not a well-formed id, naming the format.
        """
        if not isinstance(task_id, str):
            raise UnknownTaskError(
                f"expected a str task id, got {type(task_id).__name__} {task_id!r}; {_ID_FORMAT}",
                bridge=_BRIDGE,
            )
        match = _ID.fullmatch(task_id)
        if match is None:
            raise UnknownTaskError(
                f"malformed task id {task_id!r}: {_ID_FORMAT}", bridge=_BRIDGE, task_id=task_id
            )
        settings = cls(*(int(group) for group in match.groups()))
        for name, (low, high) in _LIMITS.items():
            value = getattr(settings, name)
            if not low <= value <= high:
                raise UnknownTaskError(
                    f"task id {task_id!r}: {name} {value} is outside {low}-{high}; {_ID_FORMAT}",
                    bridge=_BRIDGE,
                    task_id=task_id,
                )
        if settings.seed > _MAX_SEED:
            raise UnknownTaskError(
                f"task id {task_id!r}: seed {settings.seed} is above 2**32-1; {_ID_FORMAT}",
                bridge=_BRIDGE,
                task_id=task_id,
            )
        return settings


# -- the game cache -------------------------------------------------------------------------------


def _textworld() -> ModuleType:
    """The ``textworld`` package, or DependencyNotInstalled naming the extra."""
    try:
        import textworld
    except ImportError as e:
        raise DependencyNotInstalled(
            "textworld", "textworld", purpose="the TextWorld bridge"
        ) from e
    return textworld


def default_cache_dir() -> Path:
    """Where games are cached when no ``cache_dir`` is given.

    ``$ENVHARNESS_CACHE/textworld`` when that variable is set, else
    ``$XDG_CACHE_HOME/envharness/textworld``, else ``~/.cache/envharness/textworld``.
    """
    return bridge_cache_dir(_BRIDGE)


def _complete(game: Path) -> bool:
    """Whether both files of a cached game are in place (the ``.z8`` is renamed in last)."""
    return game.is_file() and game.with_suffix(".json").is_file()


def ensure_game(task_id: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The path of the game file of ``task_id``, generating and caching it on first use.

    Generation runs TextWorld's generator with the settings ``tw-make custom`` uses for the same
    arguments; the same task id always gives the same game.

    Args:
        task_id: The task, e.g. ``"tw-s5-o10-q5-seed42"``.
        cache_dir: The cache folder; :func:`default_cache_dir` when ``None``.

    Returns:
        The ``.z8`` game file (its ``.json`` game description lies next to it).

    Raises:
        UnknownTaskError: If ``task_id`` is malformed.
        DependencyNotInstalled: If the game must be generated and ``textworld`` is missing.
        BridgeError: If TextWorld cannot generate the game (e.g. no quest fits the settings).

    Example:
        >>> path = ensure_game("tw-s3-o5-q3-seed1", "/tmp/tw-cache")  # doctest: +SKIP
        >>> path.name  # doctest: +SKIP
        'tw-s3-o5-q3-seed1.z8'
    """
    settings = GameSettings.parse(task_id)
    folder = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    game = folder / f"{task_id}.z8"
    if _complete(game):
        return game
    textworld = _textworld()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BridgeError(f"cannot create the game cache {folder}: {e}", bridge=_BRIDGE) from e
    with file_lock(folder / f"{task_id}.lock"), _TEXTWORLD_LOCK:
        if not _complete(game):  # another process may have made it while we waited
            _generate(textworld, settings, folder)
    return game


def _generate(textworld: ModuleType, settings: GameSettings, folder: Path) -> None:
    """Generates one game into a scratch folder, then renames its files into ``folder``."""
    name = settings.task_id
    options = textworld.GameOptions()
    options.seeds = settings.seed
    options.nb_rooms = settings.world_size
    options.nb_objects = settings.nb_objects
    chaining = options.chaining  # as `tw-make custom --quest-length N` sets them
    chaining.min_length = chaining.max_length = chaining.max_depth = settings.quest_length
    chaining.min_depth, chaining.min_breadth, chaining.max_breadth = 1, 1, 5
    options.force_recompile = True
    with tempfile.TemporaryDirectory(prefix=f".{name}-", dir=folder) as scratch:
        options.path = os.path.join(scratch, f"{name}.z8")
        try:
            made, _ = textworld.make(options)
        except Exception as e:  # QuestGenerationError, a failed Inform 7 compile, ...
            raise BridgeError(
                f"TextWorld could not generate {name}: {type(e).__name__}: {e}".strip(),
                bridge=_BRIDGE,
            ) from e
        made = Path(made)
        os.replace(made.with_suffix(".json"), folder / f"{name}.json")
        os.replace(made, folder / f"{name}.z8")


# -- the running game -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _View:
    """What the bridge keeps of one TextWorld game state."""

    location: str
    inventory: tuple[str, ...]
    description: str
    score: int
    max_score: int
    won: bool
    lost: bool
    admissible: tuple[str, ...]
    policy: tuple[str, ...]


def _start_game(textworld: ModuleType, path: Path) -> Any:
    infos = textworld.EnvInfos(
        feedback=True,
        description=True,
        facts=True,
        admissible_commands=True,
        policy_commands=True,
        score=True,
        max_score=True,
        won=True,
        lost=True,
    )
    with _TEXTWORLD_LOCK:
        # Jericho, below TextWorld, warns that it cannot list valid actions for generated games;
        # TextWorld lists them from the game's logic instead, so the warning is noise.
        warnings.filterwarnings(
            "ignore", message="Unable to find valid actions", category=UserWarning, module="jericho"
        )
        try:
            return textworld.start(str(path), request_infos=infos)
        except Exception as e:  # an unreadable or foreign game file
            raise BridgeError(
                f"cannot start the game {path}: {type(e).__name__}: {e}", bridge=_BRIDGE
            ) from e


def _view(state: Any) -> _View:
    """Reads a TextWorld ``GameState``; location and inventory come from the world's facts."""
    location, carried = "", []
    for fact in state["facts"]:
        args = fact.arguments
        if fact.name == "at" and len(args) == 2 and args[0].type == "P":
            location = args[1].name
        elif fact.name == "in" and len(args) == 2 and args[1].type == "I":
            carried.append(args[0].name)
    return _View(
        location=location,
        inventory=tuple(sorted(carried)),
        description=_tidy(state["description"] or ""),
        score=int(state["score"] or 0),
        max_score=int(state["max_score"] or 0),
        won=bool(state["won"]),
        lost=bool(state["lost"]),
        admissible=tuple(state["admissible_commands"] or ()),
        policy=tuple(state["policy_commands"] or ()),
    )


def _tidy(text: str) -> str:
    """Game text without the end-of-game prompt, indentation or runs of blank lines."""
    cut = text.find(_END_PROMPT)
    if cut >= 0:
        text = text[:cut]
    text = "\n".join(line.strip() for line in text.splitlines())
    return _BLANK_LINES.sub("\n\n", text).strip()


def _clean(command: str) -> str:
    """A command as sent to the game: printable ASCII, single spaces."""
    return " ".join(_UNPRINTABLE.sub(" ", command).split())


def _refusal(command: str) -> str | None:
    """Why ``command`` (cleaned) is not sent to the game, or ``None``."""
    if len(command) > _MAX_COMMAND:
        return f"the command is {len(command)} characters long; at most {_MAX_COMMAND} are sent"
    lowered = command.lower()
    first = lowered.split(" ", 1)[0]
    if first in _RESERVED_WORDS or first.startswith("tw-") or lowered.endswith(_RESERVED_PHRASES):
        return (
            f"{command!r} is an interpreter or debug command (restart, restore, save, quit, undo, "
            "transcripts, tw-*), which this environment does not send to the game"
        )
    return None


def _with_inventory(text: str, inventory: tuple[str, ...]) -> str:
    """``text``, then what the player carries (nothing is added when it carries nothing)."""
    if not inventory:
        return text
    return f"{text}\n\nYou are carrying: {', '.join(inventory)}."


def _act(command: str) -> Action:
    return Action("act", {"command": command})


def _bad_state(problem: str) -> BridgeError:
    return state_error(problem, bridge=_BRIDGE, env_name=_NAME)


class TextWorldEnv(ActionableEnv):
    """One generated TextWorld game, played through ``act(command)``.

    The observation is the game's answer (on reset: the objective, the first room without
    TextWorld's banner, and what the player carries). ``observe()`` describes the current state
    the same way (objective, the room as ``look`` prints it, what the player carries), never the
    last answer; it reads TextWorld's state infos and sends nothing to the game. Any command is
    sent to the game and its own answer ("That's not a verb I recognise.", "You can't see any
    such thing.") is the observation; a command that is not among the state's
    ``admissible_commands`` also sets ``info["invalid_action"]``. Interpreter and debug
    commands (restart, restore, save, quit, undo, transcripts, ``tw-*``) are refused without
    reaching the game, as invalid actions. The reward is the change of the game's score; the
    episode terminates when the game is won or lost. ``evaluate()``: success when won, score =
    score / max score; ``moves`` counts the agent's commands (not those typed before
    ``mark_episode_start``, i.e. a ``Setups`` replay). The game is deterministic, so ``reset``'s
    seed is ignored, and ``save_state()`` records the commands typed since reset, which
    ``from_state`` replays.

    Args:
        task_id: The game, e.g. ``"tw-s5-o10-q5-seed42"`` (see :class:`GameSettings`).
        cache_dir: Where games are cached (default: :func:`default_cache_dir`).
        max_steps: The agent's step budget (the rollout loop enforces it).

    Raises:
        UnknownTaskError: If ``task_id`` is malformed.
        DependencyNotInstalled: If ``textworld`` is not installed (extra ``textworld``).
        BridgeError: If the game cannot be generated or ``max_steps`` is not a positive int.

    Example:
        >>> env = TextWorldEnv("tw-s3-o5-q3-seed1", cache_dir="/tmp/tw-cache")  # doctest: +SKIP
        >>> observation, info = env.reset()  # doctest: +SKIP
        >>> for action in env.oracle_actions():  # doctest: +SKIP
        ...     result = env.step(action)
        >>> env.evaluate().success  # doctest: +SKIP
        True
    """

    bridge_name: ClassVar[str] = _BRIDGE

    def __init__(
        self,
        task_id: str,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        max_steps: int = _DEFAULT_MAX_STEPS,
    ) -> None:
        GameSettings.parse(task_id)
        self.max_steps = check_positive_int("max_steps", max_steps, bridge=_BRIDGE)
        self._cache_dir = check_path("cache_dir", cache_dir, bridge=_BRIDGE)
        self._textworld = _textworld()
        self.task_id = task_id
        self._path = ensure_game(task_id, self._cache_dir)
        try:
            description = json.loads(self._path.with_suffix(".json").read_text())
            self._objective = str(description.get("objective") or "")
            walkthrough = (description.get("metadata") or {}).get("walkthrough") or ()
        except (OSError, ValueError) as e:
            raise BridgeError(f"cannot read the game {self._path}: {e}", bridge=_BRIDGE) from e
        self._walkthrough = tuple(str(c) for c in walkthrough)
        self.instruction = (
            f"{self._objective}\n\nYou play a text adventure by typing commands with "
            "act(command), e.g. 'look', 'inventory', 'go north', 'open chest', 'take key from "
            "chest', 'unlock door with key', 'put apple on table'. The episode ends when the "
            "objective is done."
        )
        self._game: Any = None
        self._view_now: _View | None = None
        self._observation: str | None = None
        self._commands: list[str] = []
        self._setup_moves = 0  # commands typed before mark_episode_start (a Setups replay)
        self._last_command = ""
        self._started = False
        self._terminated = False
        self._stages: list[tuple[str, ...]] | None = None

    # -- tasks ------------------------------------------------------------------------------

    @classmethod
    def designer_hints(cls) -> str:
        """This bridge's notes for the designer's and diagnoser's prompts (its ``hints`` module)."""
        return HINTS

    @classmethod
    def list_tasks(cls, split: str = "train", **options: Any) -> list[str]:
        """Task ids of the default size (5 rooms, 10 objects, quest length 5) in ``split``.

        Args:
            split: ``"train"`` (seeds 0-99), ``"test"`` (seeds 1000-1049) or ``"all"`` (both).
            **options: Bridge options (``cache_dir``, ``max_steps``); accepted for symmetry with
                ``load_bridge``, they do not change the list.

        Raises:
            UnknownTaskError: If ``split`` is not one of the splits.
            BridgeError: If an option is unknown.

        Example:
            >>> len(TextWorldEnv.list_tasks("train")), TextWorldEnv.list_tasks("train")[0]
            (100, 'tw-s5-o10-q5-seed0')
        """
        check_options(options, _OPTIONS, bridge=_BRIDGE, where="list_tasks")
        check_split(split, _SPLITS, bridge=_BRIDGE)
        size = _DEFAULT_SIZE
        return [GameSettings(*size, seed).task_id for seeds in _SPLITS[split] for seed in seeds]

    def bridge_options(self) -> dict[str, Any]:
        """``cache_dir`` when given, ``max_steps`` when it differs from the default (50)."""
        options: dict[str, Any] = {}
        if self._cache_dir is not None:
            options["cache_dir"] = self._cache_dir
        if self.max_steps != _DEFAULT_MAX_STEPS:
            options["max_steps"] = self.max_steps
        return options

    def task_fingerprint(self) -> str:
        """The hash of the task id and the game files the verdict is read from.

        ``evaluate()`` asks the running game whether it is won, so the fingerprint covers the
        ``.z8`` story file (with the header's serial number, the build date Inform writes,
        blanked, so that the same game built on another day has the same fingerprint) and its
        ``.json`` game description (the quest, the objective, the walkthrough). ``cache_dir``
        and ``max_steps`` do not change it.
        """
        return cached_fingerprint(self, self._fingerprint)

    def _fingerprint(self) -> str:
        story = bytearray(read_bytes(self._path, "the game file", bridge=_BRIDGE))
        if len(story) >= _SERIAL.stop and 1 <= story[0] <= 8:  # a Z-machine story
            story[_SERIAL] = b"0" * (_SERIAL.stop - _SERIAL.start)
        description = read_bytes(
            self._path.with_suffix(".json"), "the game description", bridge=_BRIDGE
        )
        return task_fingerprint(
            {"bridge": _BRIDGE, "task_id": self.task_id},
            {"game.z8": bytes(story), "game.json": description},
        )

    # -- the episode ------------------------------------------------------------------------

    def tools(self) -> list[ToolSpec]:
        """``act(command)``."""
        return list(_TOOLS)

    def _running_game(self) -> Any:
        if self._game is None:
            self._game = _start_game(self._textworld, self._path)
        return self._game

    def _restart(self) -> Any:
        """Resets the game to its start; returns TextWorld's first ``GameState``."""
        state = self._running_game().reset()
        self._view_now = _view(state)
        self._commands = []
        self._setup_moves = 0
        self._last_command = ""
        self._terminated = False
        return state

    def reset(self, *, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Restarts the game; it is deterministic, so ``seed`` is ignored."""
        state = self._restart()
        feedback = state["feedback"] or ""
        at = feedback.find(self._objective) if self._objective else -1
        intro = feedback[at:] if at >= 0 else f"{self._objective}\n\n{state['description'] or ''}"
        view = self._now()
        self._observation = _with_inventory(_tidy(intro), view.inventory)
        self._started = True
        return self._observation, {
            "max_score": view.max_score,
            "admissible_commands": list(view.admissible),
        }

    def step(self, action: Action) -> StepResult:
        """Sends ``act``'s command to the game.

        Raises:
            InvalidActionError: If the action does not match the tool schema.
            EpisodeError: Before :meth:`reset`, after :meth:`close`, or after the game was won
                or lost.
        """
        action = self.check_action(action)
        if not self._started:
            raise EpisodeError("no episode is running; call reset() first")
        if self._game is None:
            raise EpisodeError("the env was closed; call reset() to play again")
        if self._terminated:
            raise EpisodeError("episode is over (the game was won or lost); call reset()")
        return self._send(action.args["command"])

    def _send(self, raw: str) -> StepResult:
        before = self._now()
        command = _clean(raw)
        self._commands.append(raw)
        self._last_command = command
        refused = _refusal(command)
        if refused is not None:
            self._observation = f"That command is not available here: {refused}."
            return StepResult(self._observation, 0.0, False, False, {"invalid_action": refused})
        state, _, _ = self._running_game().step(command)
        view = self._view_now = _view(state)
        self._terminated = view.won or view.lost
        self._observation = _tidy(state["feedback"] or "") or "(The game gives no answer.)"
        info: dict[str, Any] = {}
        if command.lower() not in before.admissible:
            listed = sorted(before.admissible)[:_MAX_LISTED]
            more = len(before.admissible) - len(listed)
            tail = f" (and {more} more)" if more else ""
            info["invalid_action"] = (
                f"{command!r} is not one of the admissible commands in this state; they were: "
                f"{'; '.join(listed)}{tail}"
            )
        reward = float(view.score - before.score)
        return StepResult(self._observation, reward, self._terminated, False, info)

    def _now(self) -> _View:
        """The current game state (the start state before the first reset)."""
        if self._view_now is None:
            self._restart()
        assert self._view_now is not None
        return self._view_now

    def observe(self) -> str:
        """The current state as a fresh start shows it: objective, room, what the player carries.

        The room is TextWorld's own ``look`` text for the current state, read from its state
        infos (nothing is sent to the game, so no counter moves); never the last answer.

        Raises:
            EpisodeError: Before :meth:`reset`.
        """
        if self._observation is None:
            raise EpisodeError("no episode is running; call reset() first")
        view = self._now()
        room = f"{self._objective}\n\n{view.description}" if self._objective else view.description
        return _with_inventory(room.strip(), view.inventory)

    def mark_episode_start(self) -> None:
        """Stops counting the commands so far as moves (they were a ``Setups`` replay)."""
        self._setup_moves = len(self._commands)
        self._last_command = ""

    def _moves(self) -> int:
        return len(self._commands) - self._setup_moves

    def evaluate(self) -> Evaluation:
        """Success when the game is won; score = score / max score; details give both and moves."""
        view = self._now()
        ratio = view.score / view.max_score if view.max_score else float(view.won)
        return Evaluation(
            view.won,
            ratio,
            {
                "score": view.score,
                "max_score": view.max_score,
                "moves": self._moves(),
                "won": view.won,
                "lost": view.lost,
            },
        )

    # -- state ------------------------------------------------------------------------------

    def get_env_state(self) -> dict[str, Any]:
        """A fresh JSON-able view: location, inventory, room description, score, moves, ..."""
        view = self._now()
        return {
            "location": view.location,
            "inventory": list(view.inventory),
            "description": view.description,
            "score": view.score,
            "max_score": view.max_score,
            "moves": self._moves(),
            "admissible_commands": list(view.admissible),
            "won": view.won,
            "lost": view.lost,
            "last_command": self._last_command,
        }

    def env_state_schema(self) -> dict[str, Any]:
        """The JSON-Schema of :meth:`get_env_state`, with a description per field."""
        return json.loads(json.dumps(_STATE_SCHEMA))

    def save_state(self) -> dict[str, Any]:
        """The task, its options and the commands typed since reset (replayed on restore)."""
        return {
            "bridge": _BRIDGE,
            "task_id": self.task_id,
            "options": self.bridge_options(),
            "started": self._started,
            "commands": list(self._commands),
            "setup_moves": self._setup_moves,
            "observation": self._observation,
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> TextWorldEnv:
        """Rebuilds the environment :meth:`save_state` recorded, by reset and replay.

        Raises:
            BridgeError: If ``state`` is malformed, or the replay does not end where it did
                (e.g. the cached game file changed).
            UnknownTaskError: If its task id is malformed.
        """
        state = check_saved_state(
            state, bridge=_BRIDGE, keys=_SAVED_KEYS, options=_OPTIONS, env_name=_NAME
        )
        commands = state["commands"]
        if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
            raise _bad_state("'commands' must be a list of str")
        setup = state.get("setup_moves", 0)
        if isinstance(setup, bool) or not isinstance(setup, int) or not 0 <= setup <= len(commands):
            raise _bad_state(f"'setup_moves' must be an int from 0 to {len(commands)}")
        env = cls(state["task_id"], **state["options"])
        if not state["started"]:
            check_nothing_recorded(state, ("commands",), bridge=_BRIDGE, env_name=_NAME)
            return env
        env.reset()
        for index, command in enumerate(commands):
            if index == setup and setup:
                env.mark_episode_start()
            if env._terminated:
                raise _bad_state(f"the game ended before commands[{index}] {command!r}")
            env._send(command)
        if setup and setup == len(commands):
            env.mark_episode_start()
        if state["observation"] is not None and env._observation != state["observation"]:
            raise _bad_state(
                "replaying the commands does not reproduce the recorded observation; was the "
                f"cached game {env._path} replaced?"
            )
        return env

    # -- solving ----------------------------------------------------------------------------

    def oracle_actions(self) -> list[Action]:
        """The game's own winning plan from the current state; ``[]`` when won, lost or stuck.

        The plan is TextWorld's ``policy_commands``, which it keeps up to date as the player moves
        away from or towards the goal; when that is empty while the commands so far follow the
        walkthrough, the rest of the walkthrough.
        """
        view = self._now()
        if view.won or view.lost:
            return []
        plan = list(view.policy)
        done = len(self._commands)
        if not plan and list(self._walkthrough[:done]) == self._commands:
            plan = list(self._walkthrough[done:])
        return [_act(command) for command in plan]

    def stage_candidates(self) -> list[list[Action]]:
        """Start states with a quest object moved or hidden, in the game's own commands.

        For each object the walkthrough needs (one the player starts with, or one it picks up),
        in walkthrough order: get it (the walkthrough up to picking it up), walk through one exit
        to a neighbouring room, and drop it there, or put it into or onto something in that room
        (closing a container after). Each candidate uses only admissible commands, does not
        change the score or end the game, and is kept only when TextWorld's own plan from the
        state it makes still wins the game. At most four, deterministic; computed once per env on
        a separate copy of the game, so the episode in progress is not disturbed.
        """
        if self._stages is None:
            scratch = _start_game(self._textworld, self._path)
            try:
                self._stages = _find_stages(scratch, self._walkthrough)
            finally:
                scratch.close()
        return [[_act(command) for command in stage] for stage in self._stages]

    def close(self) -> None:
        """Stops the game's interpreter; the last state stays readable. Idempotent."""
        game, self._game = self._game, None
        if game is not None:
            game.close()

    def __repr__(self) -> str:
        extra = "" if self.max_steps == _DEFAULT_MAX_STEPS else f" max_steps={self.max_steps}"
        return f"<TextWorldEnv task={self.task_id!r}{extra}>"


# -- stage candidates -----------------------------------------------------------------------------


def _replay(game: Any, commands: tuple[str, ...]) -> _View | None:
    """Resets ``game`` and plays ``commands``; ``None`` if one is not admissible or ends it."""
    view = _view(game.reset())
    for command in commands:
        if command not in view.admissible:
            return None
        view = _view(game.step(command)[0])
        if view.won or view.lost:
            return None
    return view


def _winnable(game: Any, stage: tuple[str, ...], budget: int) -> bool:
    """Whether ``stage`` keeps the score and TextWorld's own plan from there wins the game."""
    start = _view(game.reset())
    view = _replay(game, stage)
    if view is None or view.score != start.score or not view.policy:
        return False
    for _ in range(budget):
        if not view.policy:
            return False
        view = _view(game.step(view.policy[0])[0])
        if view.won:
            return True
        if view.lost:
            return False
    return False


def _walk(
    game: Any, walkthrough: tuple[str, ...]
) -> tuple[list[tuple[str, tuple[str, ...]]], set[str]]:
    """The objects the walkthrough needs, and the rooms it passes through.

    Each object comes with the commands after which the player holds it: none for an object held
    at the start and named in the walkthrough, the walkthrough up to the pick-up for one picked
    up along it.
    """
    view = _view(game.reset())
    named = " ".join(walkthrough)
    found = {
        item: ()
        for item in view.inventory
        if re.search(rf"\b{re.escape(item)}\b", named) is not None
    }
    rooms = {view.location}
    for index, command in enumerate(walkthrough[:-1]):  # the last command wins the game
        if command not in view.admissible:
            break
        held = set(view.inventory)
        view = _view(game.step(command)[0])
        if view.won or view.lost:
            break
        rooms.add(view.location)
        for item in view.inventory:
            if item not in held:
                found.setdefault(item, walkthrough[: index + 1])
    return list(found.items()), rooms


def _relocations(
    game: Any, item: str, prefix: tuple[str, ...], busy: set[str]
) -> list[tuple[str, ...]]:
    """Ways to leave ``item`` in a neighbouring room after ``prefix``, off the quest's path first.

    Per exit (in the game's order): dropped on the floor, then put into (and the container
    closed) or onto something there. Rooms in ``busy`` (the walkthrough passes through them) come
    after the others.
    """
    view = _replay(game, prefix)
    if view is None or item not in view.inventory:
        return []
    stow = re.compile(rf"(?:insert {re.escape(item)} into|put {re.escape(item)} on) (.+)")
    ranked: list[tuple[bool, tuple[str, ...]]] = []
    for go in (c for c in view.admissible if c.startswith("go ")):
        there = _replay(game, (*prefix, go))
        if there is None or there.location == view.location:
            continue
        on_path = there.location in busy
        if f"drop {item}" in there.admissible:
            ranked.append((on_path, (*prefix, go, f"drop {item}")))
        for command in there.admissible:
            match = stow.fullmatch(command)
            if match is None:
                continue
            stowed = _replay(game, (*prefix, go, command))
            close = f"close {match.group(1)}"
            if stowed is not None and close in stowed.admissible:
                ranked.append((on_path, (*prefix, go, command, close)))
            ranked.append((on_path, (*prefix, go, command)))
    ranked.sort(key=lambda entry: entry[0])  # stable: the game's order within each group
    return [stage for _, stage in ranked]


def _find_stages(game: Any, walkthrough: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Up to :data:`_MAX_STAGES` validated relocations, at most two per quest object."""
    budget = 3 * len(walkthrough) + 10
    items, busy = _walk(game, walkthrough)
    stages: list[tuple[str, ...]] = []
    for item, prefix in items:
        kept = 0
        for stage in _relocations(game, item, prefix, busy):
            if stage in stages or not _winnable(game, stage, budget):
                continue
            stages.append(stage)
            kept += 1
            if kept == 2 or len(stages) == _MAX_STAGES:
                break
        if len(stages) == _MAX_STAGES:
            break
    return stages
