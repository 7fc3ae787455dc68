"""The Toy24 bridge: the game of 24, the paper's toy domain.

A task is a multiset of four numbers from 1 to 13 that can make 24; its id is the numbers in
ascending order joined by ``-`` (``"1-1-4-6"``, ``"3-3-8-8"``); there are 1,362 tasks. The agent
combines two of the numbers left at a time with ``+ - * /`` (exact fractions, no rounding) and
wins when the only number left is 24. ``undo`` takes back the last combination.

Splits are fixed by a hash of the id: a task is in ``"test"`` iff
``int(sha256(task_id).hexdigest()[:8], 16) % 5 == 0`` (about 20%), otherwise in ``"train"``;
``"all"`` lists both. Lists are in ascending numeric order of the four numbers.

Example:
    >>> env = Toy24Env("4-4-10-10")
    >>> print(env.reset()[0])
    Numbers left: 4 4 10 10
    Start: make 24 from 4 4 10 10.
    >>> print(env.step(Action("combine", {"a": "10", "op": "*", "b": "10"})).observation)
    Numbers left: 4 4 100
    Last: 10 * 10 = 100
"""

from __future__ import annotations

import hashlib
import operator
import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from functools import cache
from typing import Any, ClassVar

from envharness.bridgekit.checks import (
    check_nothing_recorded,
    check_options,
    check_positive_int,
    check_saved_state,
    check_split,
    state_error,
)
from envharness.bridgekit.fingerprint import cached_fingerprint, task_fingerprint
from envharness.bridges.toy24.hints import HINTS
from envharness.bridges.toy24.solver import TARGET, puzzles, solutions, solve_steps
from envharness.core import Action, ActionableEnv, Evaluation, StepResult, ToolSpec
from envharness.errors import BridgeError, EpisodeError, UnknownTaskError

__all__ = ["Toy24Env", "solutions", "solve_steps"]

_BRIDGE = "toy24"
_NAME = "Toy24Env"
_OPTIONS = ("max_steps",)
_DEFAULT_MAX_STEPS = 12
_SPLITS = ("train", "test", "all")
_OPS: dict[str, Callable[[Fraction, Fraction], Fraction]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
}
_NUMBER = re.compile(r"[+-]?(?:\d+/\d+|\d+(?:\.\d*)?|\.\d+)")
_MAX_NUMBER_TEXT = 64
_ID_FORMAT = (
    "a task id is four numbers from 1 to 13 in ascending order joined by '-' (e.g. '1-1-4-6'); "
    "see Toy24Env.list_tasks()"
)

_NUMBER_ARG = (
    "One of the numbers left, written exactly as shown in the observation, e.g. '6' or '8/3'."
)
_TOOLS = (
    ToolSpec(
        "combine",
        "Combine two of the numbers left with an operation; the result replaces them both. "
        "Arithmetic is exact: 8 / 3 gives the fraction 8/3.",
        {
            "type": "object",
            "properties": {
                "a": {"type": "string", "description": "The left operand. " + _NUMBER_ARG},
                "op": {
                    "type": "string",
                    "enum": ["+", "-", "*", "/"],
                    "description": "The operation: '+', '-', '*' or '/'.",
                },
                "b": {"type": "string", "description": "The right operand. " + _NUMBER_ARG},
            },
            "required": ["a", "op", "b"],
        },
    ),
    ToolSpec(
        "undo",
        "Take back the last combine, restoring the two numbers it used.",
        {"type": "object", "properties": {}},
    ),
)

_TEXT_LIST = {"type": "array", "items": {"type": "string"}}


def _state_schema() -> dict[str, Any]:
    number = "exact number text: '6', '-2' or a reduced fraction like '8/3'"
    return {
        "type": "object",
        "description": "The game of 24: combine the numbers two at a time until only 24 is left.",
        "properties": {
            "start": {
                **_TEXT_LIST,
                "description": f"The four start numbers of the task, ascending ({number}).",
            },
            "numbers": {
                **_TEXT_LIST,
                "description": (
                    f"The numbers left ({number}). Numbers not yet used keep their order; each "
                    "combine removes its two operands and appends its result at the end."
                ),
            },
            "history": {
                "type": "array",
                "description": (
                    "The combines in effect, oldest first; undo removes the last one. Invalid "
                    "actions and undone combines are not listed."
                ),
                "items": {
                    "type": "object",
                    "properties": {
                        "a": {"type": "string", "description": "The left operand."},
                        "op": {
                            "type": "string",
                            "enum": ["+", "-", "*", "/"],
                            "description": "The operation.",
                        },
                        "b": {"type": "string", "description": "The right operand."},
                        "result": {"type": "string", "description": "a op b, exact."},
                    },
                    "required": ["a", "op", "b", "result"],
                },
            },
            "steps": {
                "type": "integer",
                "description": "Agent steps this episode, counting undos and invalid actions.",
            },
            "solved": {
                "type": "boolean",
                "description": "True when the only number left is 24 (the episode is over).",
            },
        },
        "required": ["start", "numbers", "history", "steps", "solved"],
    }


@cache
def _task_lists() -> dict[str, tuple[str, ...]]:
    """The task ids per split, built once on first use."""
    every = tuple("-".join(map(str, quad)) for quad in puzzles(1, 13))
    test = tuple(t for t in every if _in_test(t))
    train = tuple(t for t in every if not _in_test(t))
    return {"train": train, "test": test, "all": every}


@cache
def _task_set() -> frozenset[str]:
    return frozenset(_task_lists()["all"])


def _in_test(task_id: str) -> bool:
    return int(hashlib.sha256(task_id.encode()).hexdigest()[:8], 16) % 5 == 0


def _parse_number(text: str) -> Fraction | None:
    """The exact value of number text (``"6"``, ``" 6.0 "``, ``"8/3"``, ``"2.5"``), or None."""
    text = "".join(text.split())
    if len(text) > _MAX_NUMBER_TEXT or not _NUMBER.fullmatch(text):
        return None
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def _start_numbers(task_id: object) -> tuple[Fraction, ...]:
    """The start numbers of a task id, or UnknownTaskError explaining what is wrong."""
    if not isinstance(task_id, str):
        raise UnknownTaskError(
            f"expected a str task id, got {type(task_id).__name__} {task_id!r}; {_ID_FORMAT}",
            bridge=_BRIDGE,
        )
    parts = task_id.split("-")
    if len(parts) != 4 or not all(p.isdigit() and 1 <= int(p) <= 13 for p in parts):
        raise UnknownTaskError(
            f"malformed task id {task_id!r}: {_ID_FORMAT}", bridge=_BRIDGE, task_id=task_id
        )
    canonical = "-".join(str(n) for n in sorted(int(p) for p in parts))
    if task_id != canonical:
        raise UnknownTaskError(
            f"unknown task id {task_id!r}: {_ID_FORMAT}; did you mean {canonical!r}?",
            bridge=_BRIDGE,
            task_id=task_id,
        )
    if task_id not in _task_set():
        raise UnknownTaskError(
            f"unknown task id {task_id!r}: these numbers cannot make 24, so it is not a task; "
            "see Toy24Env.list_tasks()",
            bridge=_BRIDGE,
            task_id=task_id,
        )
    return tuple(Fraction(p) for p in parts)


# One combine's outcome: (result, its text, the line "a op b = result" for observations).
_Outcome = tuple[Fraction, str, str]
# One combine in effect: (numbers before, their texts, (a, op, b) as texts, its outcome).
_Entry = tuple[tuple[Fraction, ...], tuple[str, ...], tuple[str, str, str], _Outcome]

# Outcomes keyed by operand texts, so repeated combines skip the Fraction arithmetic.
_ARITHMETIC: dict[tuple[str, str, str], _Outcome] = {}
_ARITHMETIC_LIMIT = 1 << 16


def _arithmetic(x: Fraction, op: str, y: Fraction, record: tuple[str, str, str]) -> _Outcome:
    """Computes ``x op y`` and its texts, and remembers them under ``record``."""
    result = _OPS[op](x, y)
    shown = str(result)
    a, _, b = record
    outcome = (result, shown, f"{_operand(a)} {op} {_operand(b)} = {shown}")
    if len(_ARITHMETIC) >= _ARITHMETIC_LIMIT:
        _ARITHMETIC.clear()
    _ARITHMETIC[record] = outcome
    return outcome


def _operand(text: str) -> str:
    """A number as an operand: fractions and negatives in parentheses (``8 / (1/3)``)."""
    return f"({text})" if "/" in text or text.startswith("-") else text


class Toy24Env(ActionableEnv):
    """The game of 24 on one task: make 24 from four numbers, combining two at a time.

    Tools: ``combine(a, op, b)`` replaces two of the numbers left by ``a op b`` (exact
    fractions), ``undo()`` takes back the last combine. Impossible moves (a number not left,
    division by zero, nothing to undo) are answered with feedback and ``info["invalid_action"]``.
    The episode ends, with reward 1.0, when the only number left is 24; a single other number is
    not an end (the agent can undo).

    Args:
        task_id: The task, e.g. ``"3-3-8-8"`` (see :meth:`list_tasks`).
        max_steps: The agent's step budget (the rollout loop enforces it).

    Raises:
        UnknownTaskError: If ``task_id`` is malformed or not a task.
        BridgeError: If ``max_steps`` is not a positive int.

    Example:
        >>> env = Toy24Env("1-1-4-6")
        >>> observation, info = env.reset()
        >>> for action in env.oracle_actions():
        ...     result = env.step(action)
        >>> result.reward, result.terminated, env.evaluate().success
        (1.0, True, True)
    """

    bridge_name: ClassVar[str] = _BRIDGE

    def __init__(self, task_id: str, *, max_steps: int = _DEFAULT_MAX_STEPS) -> None:
        self._start = _start_numbers(task_id)
        self.max_steps = check_positive_int("max_steps", max_steps, bridge=_BRIDGE)
        self.task_id = task_id
        self._start_texts = tuple(str(n) for n in self._start)
        shown = " ".join(self._start_texts)
        self._reset_observation = f"Numbers left: {shown}\nStart: make 24 from {shown}."
        self.instruction = (
            f"Make 24 from the numbers {shown}. Use each of the four numbers exactly once. "
            "Combine two numbers at a time with +, -, * or /: call combine(a, op, b) with two of "
            "the numbers left, and the result replaces them. Arithmetic is exact, so results "
            "may be fractions such as 8/3; write numbers exactly as the observation shows them. "
            "Call undo() to take back your last combine. You win when the only number left is 24."
        )
        self._numbers = self._start
        self._texts = self._start_texts
        self._stack: list[_Entry] = []
        self._steps = 0
        self._observation: str | None = None
        self._started = False
        self._terminated = False

    # -- tasks ------------------------------------------------------------------------------

    @classmethod
    def designer_hints(cls) -> str:
        """This bridge's notes for the designer's and diagnoser's prompts (its ``hints`` module)."""
        return HINTS

    @classmethod
    def list_tasks(cls, split: str = "train", **options: Any) -> list[str]:
        """The task ids of ``split`` in ascending numeric order.

        Args:
            split: ``"train"``, ``"test"`` (about 20%, fixed by a hash of the id) or ``"all"``.
            **options: Bridge options (``max_steps``); accepted for symmetry with
                ``load_bridge``, they do not change the list.

        Raises:
            UnknownTaskError: If ``split`` is not one of the splits.
            BridgeError: If an option is unknown.
        """
        check_options(options, _OPTIONS, bridge=_BRIDGE, where="list_tasks")
        check_split(split, _SPLITS, bridge=_BRIDGE)
        return list(_task_lists()[split])

    def bridge_options(self) -> dict[str, Any]:
        """``{"max_steps": n}`` when it differs from the default (12), else ``{}``."""
        if self.max_steps != _DEFAULT_MAX_STEPS:
            return {"max_steps": self.max_steps}
        return {}

    def task_fingerprint(self) -> str:
        """The hash of the task record: the four start numbers and the target, 24.

        The verifier reads nothing else (no data file); ``max_steps`` does not change it.
        """
        return cached_fingerprint(
            self,
            lambda: task_fingerprint(
                {
                    "bridge": _BRIDGE,
                    "task_id": self.task_id,
                    "start": list(self._start_texts),
                    "target": str(TARGET),
                }
            ),
        )

    # -- the episode ------------------------------------------------------------------------

    def tools(self) -> list[ToolSpec]:
        """``combine(a, op, b)`` and ``undo()``."""
        return list(_TOOLS)

    def reset(self, *, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Restores the start numbers; the game is deterministic, so ``seed`` is ignored."""
        self._numbers = self._start
        self._texts = self._start_texts
        self._stack = []
        self._steps = 0
        self._started = True
        self._terminated = False
        self._observation = self._reset_observation
        return self._observation, {"numbers": list(self._texts)}

    def step(self, action: Action) -> StepResult:
        """Applies ``combine`` or ``undo``.

        Raises:
            InvalidActionError: If the action does not match the tool schemas.
            EpisodeError: Before :meth:`reset`, or after the episode is over.
        """
        action = self.check_action(action)
        if not self._started:
            raise EpisodeError("no episode is running; call reset() first")
        if self._terminated:
            raise EpisodeError("episode is over; call reset()")
        self._steps += 1
        if action.tool == "undo":
            return self._undo()
        args = action.args
        return self._combine(args["a"], args["op"], args["b"])

    def _combine(self, a: str, op: str, b: str) -> StepResult:
        numbers, texts = self._numbers, self._texts
        if len(numbers) < 2:
            return self._invalid(
                f"only one number is left ({texts[0]}); call undo() to take back a combine"
            )
        i = self._locate(a, -1)
        if i < 0:
            return self._invalid(self._missing(a, i, None))
        j = self._locate(b, i)
        if j < 0:
            return self._invalid(self._missing(b, j, i))
        if op == "/" and not numbers[j]:
            return self._invalid(f"cannot divide {texts[i]} by zero")
        record = (texts[i], op, texts[j])
        done = _ARITHMETIC.get(record)
        if done is None:
            done = _arithmetic(numbers[i], op, numbers[j], record)
        result, shown, line = done
        self._stack.append((numbers, texts, record, done))
        lo, hi = (i, j) if i < j else (j, i)
        self._numbers = (*numbers[:lo], *numbers[lo + 1 : hi], *numbers[hi + 1 :], result)
        self._texts = (*texts[:lo], *texts[lo + 1 : hi], *texts[hi + 1 :], shown)
        observation = f"Numbers left: {' '.join(self._texts)}\nLast: {line}"
        if len(numbers) == 2:
            if result == TARGET:
                self._terminated = True
                self._observation = observation + "\nSolved: you made 24."
                return StepResult(self._observation, 1.0, True, False, {})
            observation += "\nOne number is left and it is not 24; call undo() to go back."
        self._observation = observation
        return StepResult(observation, 0.0, False, False, {})

    def _undo(self) -> StepResult:
        if not self._stack:
            return self._invalid("nothing to undo; no combine is in effect")
        self._numbers, self._texts, _, done = self._stack.pop()
        self._observation = f"Numbers left: {' '.join(self._texts)}\nUndid: {done[2]}"
        return StepResult(self._observation, 0.0, False, False, {})

    def _locate(self, text: str, skip: int) -> int:
        """Index of the number ``text`` names, not ``skip`` (-1: absent, -2: not a number)."""
        texts = self._texts
        if text in texts:  # the fast path: written exactly as shown
            k = texts.index(text)
            if k != skip:
                return k
            if text in texts[k + 1 :]:
                return texts.index(text, k + 1)
            return -1
        value = _parse_number(text)
        if value is None:
            return -2
        for k, number in enumerate(self._numbers):
            if number == value and k != skip:
                return k
        return -1

    def _missing(self, text: str, code: int, other: int | None) -> str:
        """Why the number ``text`` could not be used (``code`` from :meth:`_locate`)."""
        left = " ".join(self._texts)
        if code == -2:
            return (
                f"{text!r} is not a number; write one of the numbers left ({left}) exactly as "
                "shown, e.g. '6' or '8/3'"
            )
        if other is not None and _parse_number(text) == self._numbers[other]:
            return f"{self._texts[other]} is used twice, but only one {self._texts[other]} is left"
        return f"{text.strip()} is not one of the numbers left ({left})"

    def _invalid(self, reason: str) -> StepResult:
        self._observation = f"Invalid action: {reason}.\nNumbers left: {' '.join(self._texts)}"
        return StepResult(self._observation, 0.0, False, False, {"invalid_action": reason})

    def observe(self) -> str:
        """The numbers left, as a fresh start shows them; never the last step's answer.

        At the episode's start (no agent step yet, also after ``Setups``) it reads as the reset
        observation, e.g. "Numbers left: 4 4 100" then "Start: make 24 from 4 4 100."; later the
        numbers left, and whether they are solved or a dead end.

        Raises:
            EpisodeError: Before :meth:`reset`.
        """
        if self._observation is None:
            raise EpisodeError("no episode is running; call reset() first")
        shown = " ".join(self._texts)
        if self._solved():
            return f"Numbers left: {shown}\nSolved: you made 24."
        if len(self._numbers) == 1:
            return (
                f"Numbers left: {shown}\nOne number is left and it is not 24; call undo() to go "
                "back."
            )
        if self._steps == 0:
            return f"Numbers left: {shown}\nStart: make 24 from {shown}."
        return f"Numbers left: {shown}"

    def mark_episode_start(self) -> None:
        """Restarts the step count (the combines so far stay, and can still be undone)."""
        self._steps = 0

    def _solved(self) -> bool:
        return len(self._numbers) == 1 and self._numbers[0] == TARGET

    def evaluate(self) -> Evaluation:
        """Success when the only number left is 24; details name the numbers and steps."""
        success = self._solved()
        return Evaluation(
            success, 1.0 if success else 0.0, {"numbers": list(self._texts), "steps": self._steps}
        )

    # -- state ------------------------------------------------------------------------------

    def get_env_state(self) -> dict[str, Any]:
        """A fresh JSON-able view: start, numbers, history, steps, solved."""
        return {
            "start": list(self._start_texts),
            "numbers": list(self._texts),
            "history": [
                {"a": a, "op": op, "b": b, "result": outcome[1]}
                for _, _, (a, op, b), outcome in self._stack
            ],
            "steps": self._steps,
            "solved": self._solved(),
        }

    def env_state_schema(self) -> dict[str, Any]:
        """The JSON-Schema of :meth:`get_env_state`, with a description per field."""
        return _state_schema()

    def save_state(self) -> dict[str, Any]:
        """A JSON-able snapshot; the undo stack is rebuilt by replaying ``history``."""
        state = self.get_env_state()
        del state["solved"]
        return {
            "bridge": _BRIDGE,
            "task_id": self.task_id,
            "options": self.bridge_options(),
            **state,
            "observation": self._observation,
            "started": self._started,
            "terminated": self._terminated,
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> Toy24Env:
        """Rebuilds the environment :meth:`save_state` recorded.

        Raises:
            BridgeError: If ``state`` is malformed or inconsistent (naming the problem).
            UnknownTaskError: If its task id is not a task.
        """
        state = check_saved_state(
            state, bridge=_BRIDGE, keys=_SAVED_KEYS, options=_OPTIONS, env_name=_NAME
        )
        env = cls(state["task_id"], **state["options"])
        if state["start"] != list(env._start_texts):
            raise _bad_state(f"'start' {state['start']!r} does not match task {env.task_id!r}")
        history = state["history"]
        if not isinstance(history, list):
            raise _bad_state(f"'history' must be a list, got {history!r}")
        for k, entry in enumerate(history):
            env._replay(k, entry)
        if state["numbers"] != list(env._texts):
            raise _bad_state(
                f"'numbers' {state['numbers']!r} does not match the history, which gives "
                f"{list(env._texts)!r}"
            )
        steps, observation = state["steps"], state["observation"]
        started, terminated = state["started"], state["terminated"]
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
            raise _bad_state(f"'steps' must be a non-negative int, got {steps!r}")
        if not isinstance(started, bool) or not isinstance(terminated, bool):
            raise _bad_state("'started' and 'terminated' must be booleans")
        if started != isinstance(observation, str):
            raise _bad_state("'observation' must be a str once started and None before")
        if terminated != (started and env._solved()):
            raise _bad_state(f"'terminated' is {terminated} but the numbers say otherwise")
        if not started:
            check_nothing_recorded(state, ("history", "steps"), bridge=_BRIDGE, env_name=_NAME)
        env._steps, env._observation = steps, observation
        env._started, env._terminated = started, terminated
        return env

    def _replay(self, index: int, entry: Any) -> None:
        """Re-applies one saved history entry (without counting a step)."""
        if not isinstance(entry, Mapping) or set(entry) != {"a", "op", "b", "result"}:
            raise _bad_state(f"history[{index}] must have keys a, op, b, result; got {entry!r}")
        if entry["op"] not in _OPS or not all(isinstance(entry[k], str) for k in ("a", "b")):
            raise _bad_state(f"history[{index}] is not a valid combine: {entry!r}")
        before = len(self._stack)
        result = self._combine(entry["a"], entry["op"], entry["b"])
        if len(self._stack) == before:
            raise _bad_state(
                f"history[{index}] cannot be replayed: {result.info['invalid_action']}"
            )
        replayed = self._stack[-1][3][1]
        if replayed != entry["result"]:
            raise _bad_state(
                f"history[{index}] says result {entry['result']!r}, replay gives {replayed!r}"
            )

    # -- solving ----------------------------------------------------------------------------

    def oracle_actions(self) -> list[Action]:
        """Combines that reach 24 from the current numbers; ``[]`` if impossible or solved."""
        steps = solve_steps(self._numbers)
        return [_combine_action(a, op, b) for a, op, b in steps or ()]

    def stage_candidates(self) -> list[list[Action]]:
        """Start-state perturbations for ``Setups``, all keeping the task solvable.

        In order: a one-step and a two-step head start along the oracle's solution
        (scaffolding), then up to five other single combines of the start numbers (``a op b``
        with ``a >= b``) after which 24 can still be made, fewest remaining solutions first
        (harder starts first), ties in enumeration order.
        """
        plan = solve_steps(self._start) or []
        candidates = [[_combine_action(*s) for s in plan[:n]] for n in (1, 2) if len(plan) >= n]
        first = _after(self._start, plan[0]) if plan else None
        others: list[tuple[int, int, list[Action]]] = []
        seen = {first}
        for i, j in _pairs(len(self._start)):
            x, y = sorted((self._start[i], self._start[j]), reverse=True)
            rest = [n for k, n in enumerate(self._start) if k not in (i, j)]
            for op in _OPS:
                if op == "/" and not y:
                    continue
                after = tuple(sorted((*rest, _OPS[op](x, y))))
                if after in seen:
                    continue
                seen.add(after)
                count = len(solutions(after))
                if count:
                    others.append((count, len(others), [_combine_action(x, op, y)]))
        others.sort(key=lambda item: item[:2])
        return candidates + [actions for _, _, actions in others[:5]]

    def close(self) -> None:
        """Nothing to release."""

    def __repr__(self) -> str:
        extra = "" if self.max_steps == _DEFAULT_MAX_STEPS else f" max_steps={self.max_steps}"
        return f"<Toy24Env task={self.task_id!r}{extra}>"


_SAVED_KEYS = (
    "bridge",
    "task_id",
    "options",
    "start",
    "numbers",
    "history",
    "steps",
    "observation",
    "started",
    "terminated",
)


def _bad_state(problem: str) -> BridgeError:
    return state_error(problem, bridge=_BRIDGE, env_name=_NAME)


def _combine_action(a: Fraction, op: str, b: Fraction) -> Action:
    return Action("combine", {"a": str(a), "op": op, "b": str(b)})


def _after(
    numbers: tuple[Fraction, ...], step: tuple[Fraction, str, Fraction]
) -> tuple[Fraction, ...]:
    """The sorted multiset after playing ``step`` on ``numbers``."""
    a, op, b = step
    rest = list(numbers)
    rest.remove(a)
    rest.remove(b)
    return tuple(sorted((*rest, _OPS[op](a, b))))


def _pairs(n: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(n) for j in range(i + 1, n)]
