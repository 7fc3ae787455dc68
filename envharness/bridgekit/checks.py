"""Checks that every bridge makes on its arguments and saved states, with the errors they raise.

A bridge checks the same things in the same words: the options given to ``list_tasks``, the
split asked for, numeric and path options, and the shape of a state passed to ``from_state``.
These functions do it once, so that every bridge (third-party ones too) names what was wrong and
what would have been valid in the same way::

    class MyEnv(ActionableEnv):
        @classmethod
        def list_tasks(cls, split="train", **options):
            check_options(options, _OPTIONS, bridge="mine", where="list_tasks")
            check_split(split, ("train", "test", "all"), bridge="mine")
            ...

        @classmethod
        def from_state(cls, state):
            state = check_saved_state(
                state, bridge="mine", keys=_SAVED_KEYS, options=_OPTIONS, env_name="MyEnv"
            )
            env = cls(state["task_id"], **state["options"])
            if not state["started"]:
                check_nothing_recorded(state, ("actions",), bridge="mine", env_name="MyEnv")
                return env
            ...

Errors are :class:`~envharness.errors.BridgeError` (an unknown split:
:class:`~envharness.errors.UnknownTaskError`) tagged with the bridge's name; saved-state errors
read ``malformed <env name> state: <problem>``, and :func:`state_error` builds one for a bridge's
own further checks.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from envharness.errors import BridgeError, UnknownTaskError

__all__ = [
    "check_nothing_recorded",
    "check_options",
    "check_path",
    "check_positive_int",
    "check_saved_state",
    "check_split",
    "state_error",
]


def check_options(
    options: Iterable[str], allowed: Iterable[str], *, bridge: str, where: str | None = None
) -> None:
    """Checks that every option name is one of ``allowed``.

    Args:
        options: The options given (a mapping such as ``**options``, or their names).
        allowed: The option names the bridge takes, in the order to list them.
        bridge: The bridge's name, for the error.
        where: The call the options were given to (e.g. ``"list_tasks"``), named in the error.

    Raises:
        BridgeError: Naming the unknown options and listing the valid ones.

    Example:
        >>> check_options({"max_steps": 5}, ("cache_dir", "max_steps"), bridge="x")
        >>> check_options({"level": 2}, ("max_steps",), bridge="x")
        Traceback (most recent call last):
            ...
        envharness.errors.BridgeError: [x] unknown option(s) ['level']; valid options: max_steps
    """
    allowed = tuple(allowed)
    unknown = _unknown(options, allowed)
    if unknown:
        at = f" for {where}" if where else ""
        raise BridgeError(
            f"unknown option(s) {unknown}{at}; valid options: {', '.join(allowed)}", bridge=bridge
        )


def check_split(
    split: object, splits: Collection[str], *, bridge: str, note: str | None = None
) -> str:
    """Returns ``split`` after checking that it is one of ``splits``.

    Args:
        split: The split asked for.
        splits: The bridge's splits (names, or a mapping keyed by name), in the order to list them.
        bridge: The bridge's name, for the error.
        note: A remark added in parentheses after the list (e.g. what an alias stands for).

    Raises:
        UnknownTaskError: Naming the split and listing the valid ones.

    Example:
        >>> check_split("test", ("train", "test"), bridge="x")
        'test'
        >>> check_split("dev", ("train", "test"), bridge="x")
        Traceback (most recent call last):
            ...
        envharness.errors.UnknownTaskError: [x] unknown split 'dev'; valid splits: train, test
    """
    if not isinstance(split, str) or split not in splits:
        remark = f" ({note})" if note else ""
        raise UnknownTaskError(
            f"unknown split {split!r}; valid splits: {', '.join(splits)}{remark}", bridge=bridge
        )
    return split


def check_positive_int(name: str, value: object, *, bridge: str) -> int:
    """Returns ``value`` after checking that it is an int of at least 1 (``bool`` is not).

    Args:
        name: The option's name, for the error.
        value: The value given.
        bridge: The bridge's name, for the error.

    Raises:
        BridgeError: Naming the option and the value.

    Example:
        >>> check_positive_int("max_steps", 20, bridge="demo")
        20
        >>> check_positive_int("max_steps", 0, bridge="demo")
        Traceback (most recent call last):
            ...
        envharness.errors.BridgeError: [demo] max_steps: expected a positive int, got 0
    """
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise BridgeError(f"{name}: expected a positive int, got {value!r}", bridge=bridge)
    return value


def check_path(name: str, value: object, *, bridge: str) -> str | None:
    """Returns a path option as a ``str`` (``None`` stays ``None``), checking that it is a path.

    The path is neither made absolute nor looked up: that is for the bridge to do.

    Args:
        name: The option's name, for the error.
        value: A ``str`` or ``os.PathLike``, or ``None``.
        bridge: The bridge's name, for the error.

    Raises:
        BridgeError: Naming the option and the type given.

    Example:
        >>> from pathlib import Path
        >>> check_path("cache_dir", Path("/tmp/cache"), bridge="demo")
        '/tmp/cache'
        >>> check_path("cache_dir", 3, bridge="demo")
        Traceback (most recent call last):
            ...
        envharness.errors.BridgeError: [demo] cache_dir: expected a path, got int
    """
    if value is None:
        return None
    if not isinstance(value, str | os.PathLike):
        raise BridgeError(f"{name}: expected a path, got {type(value).__name__}", bridge=bridge)
    return os.fspath(value)


def state_error(problem: str, *, bridge: str, env_name: str | None = None) -> BridgeError:
    """The error for a saved state that ``from_state`` cannot restore.

    Args:
        problem: What is wrong with the state.
        bridge: The bridge's name.
        env_name: The env class the state is for (``"saved"`` is said when ``None``).

    Example:
        >>> str(state_error("'steps' must be an int", bridge="demo", env_name="DemoEnv"))
        "[demo] malformed DemoEnv state: 'steps' must be an int"
    """
    return BridgeError(f"malformed {env_name or 'saved'} state: {problem}", bridge=bridge)


def check_saved_state(
    state: object,
    *,
    bridge: str,
    keys: Sequence[str],
    options: Iterable[str] | None = None,
    env_name: str | None = None,
) -> Mapping[str, Any]:
    """Returns ``state`` after checking the shape every saved state shares.

    Checks, in order: that ``state`` is a mapping; that it has every key of ``keys`` (and
    ``"bridge"`` and ``"options"``); that ``state["bridge"]`` is ``bridge``; and that
    ``state["options"]`` is a mapping whose keys are all in ``options`` (any keys when
    ``options`` is ``None``). What the bridge records besides is for it to check.

    Args:
        state: What ``from_state`` was given.
        bridge: The bridge's name, which the state must name.
        keys: The keys ``save_state`` writes, in the order to report missing ones.
        options: The option names ``bridge_options`` may record, or ``None`` for any.
        env_name: The env class, for the message (see :func:`state_error`).

    Raises:
        BridgeError: Naming the first problem found (a missing key, the other bridge, the
            unknown options and the valid ones).

    Example:
        >>> saved = {"bridge": "x", "task_id": "t1", "options": {"max_steps": 5}}
        >>> keys = ("bridge", "task_id", "options")
        >>> check_saved_state(saved, bridge="x", keys=keys, options=["max_steps"])["task_id"]
        't1'
        >>> check_saved_state({**saved, "task_id": None}, bridge="y", keys=keys)
        Traceback (most recent call last):
            ...
        envharness.errors.BridgeError: [y] malformed saved state: 'bridge' is 'x', expected 'y'
    """
    if not isinstance(state, Mapping):
        raise state_error(
            f"expected a dict, got {type(state).__name__}", bridge=bridge, env_name=env_name
        )
    required = (*keys, *(k for k in ("bridge", "options") if k not in keys))
    missing = [k for k in required if k not in state]
    if missing:
        raise state_error(f"missing key(s) {missing}", bridge=bridge, env_name=env_name)
    if state["bridge"] != bridge:
        problem = f"'bridge' is {state['bridge']!r}, expected {bridge!r}"
        raise state_error(problem, bridge=bridge, env_name=env_name)
    problem = _options_problem(state["options"], None if options is None else tuple(options))
    if problem:
        raise state_error(problem, bridge=bridge, env_name=env_name)
    return state


def check_nothing_recorded(
    state: Mapping[str, Any], keys: Sequence[str], *, bridge: str, env_name: str | None = None
) -> None:
    """Checks that a state saved before any episode started records no progress under ``keys``.

    Call it once the state says no episode was started; each key's value must be empty (an empty
    list or dict, 0, ``None``).

    Args:
        state: The saved state (already checked by :func:`check_saved_state`).
        keys: The keys that record an episode's progress (actions, commands, steps ...).
        bridge: The bridge's name, for the error.
        env_name: The env class, for the message (see :func:`state_error`).

    Raises:
        BridgeError: Naming the keys.

    Example:
        >>> check_nothing_recorded({"actions": [], "steps": 0}, ("actions", "steps"), bridge="x")
        >>> try:
        ...     check_nothing_recorded({"steps": 3}, ("steps",), bridge="x", env_name="DemoEnv")
        ... except BridgeError as e:
        ...     print(e)
        [x] malformed DemoEnv state: steps were recorded but the episode has not started
    """
    if any(state[k] for k in keys):
        raise state_error(
            f"{' or '.join(keys)} were recorded but the episode has not started",
            bridge=bridge,
            env_name=env_name,
        )


def _unknown(names: Iterable[Any], allowed: tuple[str, ...]) -> list[Any]:
    """The names not in ``allowed``, sorted."""
    return sorted(set(names) - set(allowed), key=str)


def _options_problem(options: object, allowed: tuple[str, ...] | None) -> str | None:
    """Why ``options`` is not a saved options dict with keys from ``allowed``, or ``None``."""
    if allowed is None and isinstance(options, Mapping):
        return None
    if allowed is None:
        return f"'options' must be a dict, got {options!r}"
    unknown = _unknown(options, allowed) if isinstance(options, Mapping) else []
    if isinstance(options, Mapping) and not unknown:
        return None
    if not allowed:
        shape = "an empty dict"
    elif len(allowed) == 1:
        shape = f"a dict with at most {allowed[0]!r}"
    else:
        shape = f"a dict with keys from {allowed}"
    found = f"; unknown option(s) {unknown}" if unknown else ""
    return f"'options' must be {shape}, got {options!r}{found}"
