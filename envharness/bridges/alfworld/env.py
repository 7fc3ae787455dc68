"""``AlfWorldEnv``: one ALFWorld trial, played through ``act(command)``."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from envharness.bridgekit.checks import (
    check_nothing_recorded,
    check_options,
    check_path,
    check_positive_int,
    check_saved_state,
    state_error,
)
from envharness.bridgekit.fingerprint import (
    cached_fingerprint,
    canonical_json,
    read_bytes,
    task_fingerprint,
)
from envharness.bridges.alfworld._build import build_game, default_cache_dir
from envharness.bridges.alfworld._data import data_root, find_trial, list_trials
from envharness.bridges.alfworld._game import START, Game, View, tidy
from envharness.bridges.alfworld._kit import kit
from envharness.bridges.alfworld._oracle import load_plans, lookup, solve
from envharness.bridges.alfworld._stages import cached_stages, find_stages
from envharness.bridges.alfworld._state import STATE_SCHEMA
from envharness.bridges.alfworld.hints import HINTS
from envharness.core import Action, ActionableEnv, Evaluation, StepResult, ToolSpec
from envharness.errors import BridgeError, EpisodeError

__all__ = ["AlfWorldEnv"]

_BRIDGE = "alfworld"
_NAME = "AlfWorldEnv"
_DEFAULT_MAX_STEPS = 50
_OPTIONS = ("data_dir", "cache_dir", "max_steps")
_MAX_COMMAND = 200
_NOTHING = "Nothing happens."
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")
_TASK = "Your task is to:"
_MIDDLE = "You are in the middle of a room. "
_MAX_LISTED = 25  # admissible commands named in an invalid_action reason
_HOW_TO = (
    "You are in a household (ALFWorld). Type one command per step with act(command); names carry "
    "numbers, e.g. 'drawer 1'. Commands: 'go to <receptacle>', 'open <receptacle>', 'close "
    "<receptacle>', 'take <object> from <receptacle>', 'move <object> to <receptacle>', "
    "'examine <something>', 'use desklamp <n>' (or floorlamp), 'heat <object> with microwave "
    "<n>', 'cool <object> with fridge <n>', 'clean <object> with sinkbasin <n>', 'inventory', "
    "'look'; go to a receptacle before using it or what is on it. A command that does not apply "
    "gets 'Nothing happens.'. The episode ends when the task is done."
)
_TOOLS = (
    ToolSpec(
        "act",
        "Type one command into the household; the game answers in text.",
        {
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": (
                        "One command, e.g. 'go to drawer 1', 'open drawer 1', 'take box 3 from "
                        "sofa 1', 'move box 3 to dresser 1', 'clean mug 1 with sinkbasin 1'."
                    ),
                }
            },
            "required": ["command"],
        },
    ),
)
_SAVED_KEYS = ("bridge", "task_id", "options", "started", "commands", "observation")


def _clean(command: str) -> str:
    """A command as the game reads it: printable ASCII, lowercase, single spaces."""
    return " ".join(_UNPRINTABLE.sub(" ", command).lower().split())


def _act(command: str) -> Action:
    return Action("act", {"command": command})


def _admissible(view: View) -> str:
    """Up to :data:`_MAX_LISTED` admissible commands of ``view``: what applies here comes first.

    Then ``go to ...`` and ``examine ...``, which every receptacle of the room adds.
    """
    ranked = sorted(
        view.admissible, key=lambda c: (c.startswith("examine "), c.startswith("go to "), c)
    )
    listed = ranked[:_MAX_LISTED]
    more = len(ranked) - len(listed)
    tail = f" (and {more} more)" if more else ""
    return f"admissible commands now: {'; '.join(listed)}{tail}"


def _bad_state(problem: str) -> BridgeError:
    return state_error(problem, bridge=_BRIDGE, env_name=_NAME)


class AlfWorldEnv(ActionableEnv):
    """One ALFWorld trial (a household task in a TextWorld PDDL game), played with ``act``.

    The game is rebuilt from the trial's ``initial_state.pddl`` and ``traj_data.json`` with the
    logic files the ``alfworld`` wheel ships, as ALFWorld's own generation code does. The
    observation is the game's answer (on reset: the room's introduction, the list of receptacles,
    without the welcome banner or the task sentence, which the instruction carries).
    ``observe()`` describes the current state as a start would: that introduction, where the
    agent is, what it holds and what is open (from the game's facts, never the last answer). A
    command that is not admissible leaves the world unchanged and gets the game's own answer,
    "Nothing happens.", with ``info["invalid_action"]`` naming the admissible commands. The
    reward is 1.0 on the step that completes the task, which ends the episode; ``evaluate()``
    says whether the goal holds. ``moves`` (in ``evaluate()`` and the state) counts the agent's
    commands, not those typed before ``mark_episode_start`` (a ``Setups`` replay). The game is
    deterministic, so ``reset``'s seed is ignored, and ``save_state()`` records the commands
    typed since reset, which ``from_state`` replays.

    ``oracle_actions()`` is ALFWorld's hand-coded expert, played on a private copy of the game
    from the current state (fast-downward's plan when the expert cannot); ``stage_candidates()``
    hide the task's object in a closed receptacle that can hold it, or are empty, saying why in
    :attr:`stage_problem`, where none fits.

    Args:
        task_id: The trial, ``'<task folder>/<trial folder>'`` inside its split folder.
        data_dir: The data folder (default: ``$ALFWORLD_DATA``, else ``~/.cache/alfworld``);
            either the folder holding ``json_2.1.1/`` or that folder itself.
        cache_dir: Where built games, plans and stages are cached (default:
            ``$ENVHARNESS_CACHE/alfworld``, else ``~/.cache/envharness/alfworld``).
        max_steps: The agent's step budget (the rollout loop enforces it).

    Raises:
        DependencyNotInstalled: If ``alfworld`` is not installed (extra ``alfworld``).
        BridgeError: If there is no data (the message says how to get it) or an option is bad.
        UnknownTaskError: If the data has no such playable trial.

    Example:
        >>> env = AlfWorldEnv(  # doctest: +SKIP
        ...     "pick_and_place_simple-Box-None-Dresser-224/trial_T20190907_164104_229696",
        ...     data_dir="/data/alfworld")
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
        data_dir: str | os.PathLike[str] | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        max_steps: int = _DEFAULT_MAX_STEPS,
    ) -> None:
        self.max_steps = check_positive_int("max_steps", max_steps, bridge=_BRIDGE)
        self._data_dir = check_path("data_dir", data_dir, bridge=_BRIDGE)
        self._cache_dir = check_path("cache_dir", cache_dir, bridge=_BRIDGE)
        self._parts = kit()
        trial = self._trial = find_trial(data_root(self._data_dir), task_id)
        cache = Path(self._cache_dir).expanduser() if self._cache_dir else default_cache_dir()
        self._built = build_game(self._parts, trial, task_id, cache)
        load_plans(self._built)
        self.task_id = task_id
        self.instruction = f"{_TASK} {self._built.goal}.\n\n{_HOW_TO}"
        self._game: Game | None = Game(self._parts, self._built.data)
        self._scratch: Game | None = None
        self._view: View | None = None
        self._room = ""
        self._observation: str | None = None
        self._commands: list[str] = []
        self._setup_moves = 0  # commands typed before mark_episode_start (a Setups replay)
        self._history: list[str] = []  # the admissible commands: what changed the world
        self._last_command = ""
        self._started = False
        self._stages: list[list[str]] | None = None
        self._stage_problem: str | None = None

    # -- tasks ------------------------------------------------------------------------------

    @classmethod
    def designer_hints(cls) -> str:
        """This bridge's notes for the designer's and diagnoser's prompts (its ``hints`` module)."""
        return HINTS

    @classmethod
    def list_tasks(cls, split: str = "train", **options: Any) -> list[str]:
        """The ids of the playable trials in ``split``, sorted.

        Args:
            split: A data folder: ``"train"``, ``"valid_train"``, ``"valid_seen"`` or
                ``"valid_unseen"`` (also ``"test"``, ALFWorld's out-of-distribution set).
            **options: Bridge options; ``data_dir`` says where the data is.

        Raises:
            UnknownTaskError: If ``split`` is not one of the splits.
            BridgeError: If an option is unknown, there is no data, or it lacks that split.
        """
        check_options(options, _OPTIONS, bridge=_BRIDGE, where="list_tasks")
        return list_trials(data_root(options.get("data_dir")), split)

    def bridge_options(self) -> dict[str, Any]:
        """``data_dir`` and ``cache_dir`` when given, ``max_steps`` when not the default (50)."""
        options: dict[str, Any] = {}
        if self._data_dir is not None:
            options["data_dir"] = self._data_dir
        if self._cache_dir is not None:
            options["cache_dir"] = self._cache_dir
        if self.max_steps != _DEFAULT_MAX_STEPS:
            options["max_steps"] = self.max_steps
        return options

    def task_fingerprint(self) -> str:
        """The hash of the trial's files and of the game whose goal check gives the verdict.

        It covers the trial's ``traj_data.json`` and ``initial_state.pddl`` (their bytes) and
        the built game the goal check runs on (the PDDL domain, the grammar with the goal
        sentence, the problem), with the task type, the goal and the PDDL parameters as the
        record. ``data_dir`` (where the same data lies), ``cache_dir`` and ``max_steps`` do
        not change it.
        """
        return cached_fingerprint(self, self._fingerprint)

    def _fingerprint(self) -> str:
        built = self._built
        files = {
            name: read_bytes(self._trial / name, f"the trial's {name}", bridge=_BRIDGE)
            for name in ("traj_data.json", "initial_state.pddl")
        }
        files["game"] = canonical_json(built.data).encode()
        record = {
            "bridge": _BRIDGE,
            "task_id": self.task_id,
            "task_type": built.task_type,
            "goal": built.goal,
            "pddl_params": built.params,
        }
        return task_fingerprint(json.loads(json.dumps(record)), files)

    # -- the episode ------------------------------------------------------------------------

    def tools(self) -> list[ToolSpec]:
        """``act(command)``."""
        return list(_TOOLS)

    def _running_game(self) -> Game:
        if self._game is None:
            self._game = Game(self._parts, self._built.data)
        return self._game

    def _restart(self) -> View:
        view = self._view = self._running_game().reset()
        self._commands, self._history, self._last_command = [], [], ""
        self._setup_moves = 0
        intro = tidy(view.feedback)
        at = intro.find(_TASK)
        self._room = (intro[:at] if at >= 0 else intro).strip()
        return view

    def reset(self, *, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Restarts the game; it is deterministic, so ``seed`` is ignored."""
        view = self._restart()
        self._observation = self._describe(view)
        self._started = True
        return self._observation, {
            "admissible_commands": list(view.admissible),
            "task_type": self._built.task_type,
        }

    def step(self, action: Action) -> StepResult:
        """Sends ``act``'s command to the game.

        Raises:
            InvalidActionError: If the action does not match the tool schema.
            EpisodeError: Before :meth:`reset`, after :meth:`close`, or once the task is done.
        """
        action = self.check_action(action)
        if not self._started:
            raise EpisodeError("no episode is running; call reset() first")
        if self._game is None:
            raise EpisodeError("the env was closed; call reset() to play again")
        if self._now().won:
            raise EpisodeError("episode is over (the task is done); call reset()")
        return self._send(action.args["command"])

    def _send(self, raw: str) -> StepResult:
        before = self._now()
        command = _clean(raw)
        self._commands.append(raw)
        self._last_command = command
        if command not in before.admissible:
            # The game would answer so and change nothing; skip its slow round trip.
            self._observation = _NOTHING
            why = (
                f"the command is {len(command)} characters long (at most {_MAX_COMMAND})"
                if len(command) > _MAX_COMMAND
                else f"{command!r} is not a command that applies here; {_admissible(before)}"
            )
            return StepResult(_NOTHING, 0.0, False, False, {"invalid_action": why})
        view = self._view = self._running_game().step(command)
        self._history.append(command)
        self._observation = tidy(view.feedback) or _NOTHING
        return StepResult(self._observation, 1.0 if view.won else 0.0, view.won, False, {})

    def _now(self) -> View:
        """The current game state (the start state before the first reset)."""
        if self._view is None:
            self._restart()
        assert self._view is not None
        return self._view

    def observe(self) -> str:
        """The current state as a start shows it, never the last command's answer.

        The room's introduction (the receptacles the game listed at reset), where the agent is
        (when not in the middle of the room), what it holds and what is open, from the game's
        facts. Right after :meth:`reset` it is the reset observation.

        Raises:
            EpisodeError: Before :meth:`reset`.
        """
        if self._observation is None:
            raise EpisodeError("no episode is running; call reset() first")
        return self._describe(self._now())

    def _describe(self, view: View) -> str:
        room = self._room
        if view.location != START:
            if room.startswith(_MIDDLE):
                room = f"You are in a room, facing the {view.location}. {room[len(_MIDDLE) :]}"
            else:
                room = f"{room}\n\nYou are facing the {view.location}."
        lines = [room]
        if view.inventory:
            lines.append(f"You are carrying: {', '.join('a ' + o for o in view.inventory)}.")
        if view.opened:
            lines.append(f"Open now: {', '.join(view.opened)}.")
        return "\n\n".join(lines)

    def mark_episode_start(self) -> None:
        """Stops counting the commands so far as moves (they were a ``Setups`` replay)."""
        self._setup_moves = len(self._commands)
        self._last_command = ""

    def _moves(self) -> int:
        return len(self._commands) - self._setup_moves

    def evaluate(self) -> Evaluation:
        """Success when the task's goal holds (ALFWorld's own check); score 1.0 or 0.0."""
        view = self._now()
        return Evaluation(
            view.won,
            1.0 if view.won else 0.0,
            {"won": view.won, "moves": self._moves(), "task_type": self._built.task_type},
        )

    # -- state ------------------------------------------------------------------------------

    def get_env_state(self) -> dict[str, Any]:
        """A fresh JSON-able view: where the agent is, what it holds, what is open, ..."""
        view = self._now()
        return {
            "task_type": self._built.task_type,
            "goal": self._built.goal,
            "location": view.location,
            "inventory": list(view.inventory),
            "opened": list(view.opened),
            "description": self._room,
            "admissible_commands": list(view.admissible),
            "moves": self._moves(),
            "won": view.won,
            "last_command": self._last_command,
        }

    def env_state_schema(self) -> dict[str, Any]:
        """The JSON-Schema of :meth:`get_env_state`, with a description per field."""
        return json.loads(json.dumps(STATE_SCHEMA))

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
    def from_state(cls, state: Mapping[str, Any]) -> AlfWorldEnv:
        """Rebuilds the environment :meth:`save_state` recorded, by reset and replay.

        Raises:
            BridgeError: If ``state`` is malformed, or the replay does not end where it did.
            UnknownTaskError: If the data has no such trial.
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
            if env._now().won:
                env.close()
                raise _bad_state(f"the task was done before commands[{index}] {command!r}")
            env._send(command)
        if setup and setup == len(commands):
            env.mark_episode_start()
        if state["observation"] is not None and env._observation != state["observation"]:
            env.close()
            raise _bad_state("replaying the commands does not reproduce the recorded observation")
        return env

    # -- solving ----------------------------------------------------------------------------

    def _scratch_game(self) -> Game:
        if self._scratch is None:
            self._scratch = Game(self._parts, self._built.data)
        return self._scratch

    def oracle_actions(self) -> list[Action]:
        """A winning plan from the current state; ``[]`` once the task is done.

        ALFWorld's hand-coded expert, played on a private copy of the game brought to the
        current state, with a fresh memory; when the agent holds something or the expert does not
        win, fast-downward's optimal plan. Plans are remembered per world state, so following one
        (or typing commands that change nothing) costs nothing more.

        Raises:
            EpisodeError: If the env was closed and this state's plan is not known.
        """
        view = self._now()
        if view.won:
            return []
        plan = lookup(self._built.key, view.fingerprint)
        if plan is None:
            if self._game is None:
                raise EpisodeError("the env was closed; call reset() to ask for a plan again")
            plan = solve(self._parts, self._scratch_game(), self._built, view, self._history)
        return [_act(command) for command in plan]

    def stage_candidates(self) -> list[list[Action]]:
        """Start states with the task's object hidden in a closed receptacle that can hold it.

        Each carries every object of the task's class that lies in the open, one at a time
        (opening and closing its receptacle when needed), into one closed receptacle the trial's
        PDDL lets it into (``canContain``): open, move in, close; then it goes back to where the
        first one lay. All in the game's own commands; the start observation then shows neither
        the object nor where it is. A
        candidate is kept only when each command is admissible, the task is not done on the
        way, and the oracle still wins from the state it makes within the default budget (50
        steps). At most four, deterministic; computed once per game (on a private copy) and
        cached next to it. Empty where no closed receptacle can hold the object
        (:attr:`stage_problem` says why).
        """
        if self._stages is None:
            found = cached_stages(self._built)
            if found is None:
                scratch = self._scratch_game()
                start = scratch.reset()
                plan = lookup(self._built.key, start.fingerprint)
                if plan is None:
                    plan = solve(self._parts, scratch, self._built, start, ())
                found = find_stages(self._parts, scratch, self._built, plan, _DEFAULT_MAX_STEPS)
            self._stages, self._stage_problem = found.stages, found.problem
        return [[_act(command) for command in stage] for stage in self._stages]

    @property
    def stage_problem(self) -> str | None:
        """Why :meth:`stage_candidates` offers none; ``None`` when it offers some or before asked.

        Example: ``"no closed receptacle of this room can hold the mug (the trial's canContain
        lets it into: diningtable, sidetable), so it cannot be hidden"``.
        """
        return self._stage_problem

    def close(self) -> None:
        """Unloads the games; the last state stays readable. Idempotent."""
        for game in (self._game, self._scratch):
            if game is not None:
                game.close()
        self._game = self._scratch = None

    def __repr__(self) -> str:
        extra = "" if self.max_steps == _DEFAULT_MAX_STEPS else f" max_steps={self.max_steps}"
        return f"<AlfWorldEnv task={self.task_id!r}{extra}>"
