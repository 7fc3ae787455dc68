"""Gymnasium plumbing: the lazy import, task ids, ``make``, spaces as JSON, and the task lists.

Nothing here imports ``gymnasium`` at module import time: :func:`require_gymnasium` imports it on
first use and turns its absence into :class:`~envharness.errors.DependencyNotInstalled`.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import json
import math
import warnings
from collections.abc import Mapping
from functools import cache
from typing import Any

from envharness.bridgekit.checks import check_split
from envharness.errors import BridgeError, DependencyNotInstalled, UnknownTaskError

BRIDGE = "gymnasium"
SPLITS = ("train", "test", "all")
DEFAULT_MAX_STEPS = 100
MAX_OBSERVATION_VALUES = 256
"""Observations with more numbers than this (images) are rejected: they do not read as text."""

_TOY_TEXT = "gymnasium.envs.toy_text."
_FAMILY_ORDER = ("frozen_lake", "cliffwalking", "taxi", "blackjack")
_CHEAP_FAMILIES = ("gymnasium.envs.classic_control.", "gymnasium.envs.box2d.")
_HINT = "see list_tasks('gymnasium', 'all') for the ids this bridge knows"


def require_gymnasium() -> Any:
    """The ``gymnasium`` module.

    Raises:
        DependencyNotInstalled: If gymnasium is not installed (names the ``gym`` extra).
    """
    try:
        return importlib.import_module("gymnasium")
    except ImportError as e:
        if e.name is None or e.name.split(".")[0] == "gymnasium":
            raise DependencyNotInstalled(
                "gymnasium", "gym", purpose="the 'gymnasium' bridge"
            ) from e
        raise


def resolve_spec(task_id: object) -> Any:
    """The registered ``EnvSpec`` of ``task_id`` (``"FrozenLake-v1"`` or ``"module:Env-v0"``).

    Raises:
        UnknownTaskError: If the id is malformed, unregistered, unversioned or deprecated.
    """
    gym = require_gymnasium()
    if not isinstance(task_id, str) or not task_id:
        raise UnknownTaskError(
            f"expected a Gymnasium env id such as 'FrozenLake-v1', got {task_id!r}", bridge=BRIDGE
        )
    module, _, env_id = task_id.rpartition(":")
    if module:
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise UnknownTaskError(
                f"cannot import {module!r} to register {env_id!r}: {e}",
                bridge=BRIDGE,
                task_id=task_id,
            ) from e
    spec = gym.registry.get(env_id)
    if spec is not None:
        return spec
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            found = gym.spec(env_id)
        except gym.error.Error as e:
            reason = str(e).strip().rstrip(".")
        else:
            reason = f"use the versioned id {found.id!r}"
    close = difflib.get_close_matches(env_id, list(gym.registry), n=3)
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    raise UnknownTaskError(
        f"unknown Gymnasium env id {env_id!r}: {reason}{hint} ({_HINT})",
        bridge=BRIDGE,
        task_id=task_id,
    )


def check_env_kwargs(env_kwargs: object) -> dict[str, Any]:
    """A JSON-able copy of ``env_kwargs`` (the bridge rebuilds envs from it).

    Raises:
        BridgeError: If it is not a dict of JSON values with str keys, or sets ``render_mode``.
    """
    if env_kwargs is None:
        return {}
    if not isinstance(env_kwargs, Mapping) or not all(isinstance(k, str) for k in env_kwargs):
        raise BridgeError(
            f"env_kwargs: expected a dict with str keys, got {env_kwargs!r}", bridge=BRIDGE
        )
    if "render_mode" in env_kwargs:
        raise BridgeError(
            "env_kwargs: 'render_mode' is chosen by the bridge (ANSI text when the env has it)",
            bridge=BRIDGE,
        )
    try:
        return json.loads(json.dumps(dict(env_kwargs), allow_nan=False))
    except (TypeError, ValueError) as e:
        raise BridgeError(
            f"env_kwargs: expected JSON values (saved states rebuild the env from them): {e}",
            bridge=BRIDGE,
        ) from e


def _creator(spec: Any) -> Any:
    gym = require_gymnasium()
    if callable(spec.entry_point):
        return spec.entry_point
    return gym.envs.registration.load_env_creator(spec.entry_point)


def render_modes(spec: Any) -> list[str]:
    """The render modes the env class declares (empty when it cannot be told cheaply)."""
    try:
        metadata = getattr(_creator(spec), "metadata", None) or {}
    except Exception:  # a broken third-party entry point is reported by make()
        return []
    return list(metadata.get("render_modes") or ())


def make(spec: Any, env_kwargs: Mapping[str, Any]) -> Any:
    """``gymnasium.make`` with ANSI rendering when available and the registered time limit.

    The env checker is off (the bridge does its own checks); wrapper-level warnings are silenced.

    Raises:
        BridgeError: If gymnasium cannot build the env with these ``env_kwargs``.
    """
    gym = require_gymnasium()
    mode = "ansi" if "ansi" in render_modes(spec) else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return gym.make(spec.id, render_mode=mode, disable_env_checker=True, **env_kwargs)
        except Exception as e:  # a foreign error at the gymnasium boundary
            raise BridgeError(
                f"gymnasium could not make {spec.id!r} with env_kwargs {dict(env_kwargs)!r}: "
                f"{type(e).__name__}: {e}",
                bridge=BRIDGE,
            ) from e


# -- spaces ----------------------------------------------------------------------------------


def space_problem(gym: Any, space: Any) -> str | None:
    """Why the bridge cannot show observations of ``space`` as text, or ``None``."""
    spaces = gym.spaces
    if isinstance(space, spaces.Discrete | spaces.Text):
        return None
    if isinstance(space, spaces.Box | spaces.MultiDiscrete | spaces.MultiBinary):
        size = math.prod(space.shape)
        if size > MAX_OBSERVATION_VALUES:
            return (
                f"its observations hold {size} numbers (more than {MAX_OBSERVATION_VALUES}); "
                "image-like observations do not read as text"
            )
        return None
    if isinstance(space, spaces.Tuple):
        return next(filter(None, (space_problem(gym, s) for s in space.spaces)), None)
    if isinstance(space, spaces.Dict):
        return next(filter(None, (space_problem(gym, s) for s in space.spaces.values())), None)
    return f"its {type(space).__name__} observation space is not supported"


def space_schema(gym: Any, space: Any) -> dict[str, Any]:
    """The JSON-Schema of :func:`to_json` applied to an observation of ``space``."""
    spaces = gym.spaces
    if isinstance(space, spaces.Discrete):
        return {"type": "integer"}
    if isinstance(space, spaces.Text):
        return {"type": "string"}
    if isinstance(space, spaces.MultiDiscrete | spaces.MultiBinary):
        return {"type": "array", "items": {"type": "integer"}}
    if isinstance(space, spaces.Box):
        integer = space.dtype.kind in "iub"
        return {"type": "array", "items": {"type": "integer" if integer else "number"}}
    if isinstance(space, spaces.Tuple):
        kinds = [space_schema(gym, s) for s in space.spaces]
        same = all(k == kinds[0] for k in kinds)
        return {"type": "array", "items": kinds[0] if kinds and same else {"type": "number"}}
    properties = {k: space_schema(gym, s) for k, s in space.spaces.items()}
    return {"type": "object", "properties": properties, "required": list(properties)}


def to_json(value: Any) -> Any:
    """A gymnasium observation as JSON: ints, finite floats (others as None), lists, dicts."""
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        value = value.tolist()
    if isinstance(value, list | tuple):
        return [to_json(v) for v in _flat(value)]
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value


def _flat(items: list[Any] | tuple[Any, ...]) -> list[Any]:
    """Flattens nested lists of numbers (Box observations of any shape) to one list."""
    out: list[Any] = []
    for item in items:
        if isinstance(item, list | tuple) and not isinstance(item, str):
            out.extend(_flat(item))
        else:
            out.append(item)
    return out


# -- task lists --------------------------------------------------------------------------------


def _latest(specs: list[Any]) -> list[Any]:
    """The highest registered version of each (namespace, name), in registry order."""
    best: dict[tuple[Any, str], Any] = {}
    for spec in specs:
        key = (spec.namespace, spec.name)
        if key not in best or (spec.version or 0) > (best[key].version or 0):
            best[key] = spec
    return [s for s in specs if best[(s.namespace, s.name)] is s]


def _entry(spec: Any) -> str:
    return spec.entry_point if isinstance(spec.entry_point, str) else ""


def _family_rank(spec: Any) -> int:
    """FrozenLake, CliffWalking, Taxi, Blackjack first (sorted() keeps registry order after)."""
    module = _entry(spec)[len(_TOY_TEXT) :].partition(":")[0]
    return _FAMILY_ORDER.index(module) if module in _FAMILY_ORDER else len(_FAMILY_ORDER)


@cache
def _discrete(env_id: str) -> bool:
    """Whether gymnasium's own env ``env_id`` has a Discrete action space and text-able obs."""
    gym = require_gymnasium()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            env = gym.make(env_id, disable_env_checker=True)
    except Exception:  # a missing optional dependency (box2d ...): not listed
        return False
    try:
        return isinstance(env.action_space, gym.spaces.Discrete) and not space_problem(
            gym, env.observation_space
        )
    finally:
        env.close()


def catalogue() -> dict[str, list[str]]:
    """The task ids per split, from the installed gymnasium's registry.

    ``train`` holds the plain env of each toy-text family (the shortest name per entry point:
    ``FrozenLake-v1``, ``CliffWalking-v1``, ``Taxi-v4``, ``Blackjack-v1`` in gymnasium 1.4);
    ``test`` its registered variants (``FrozenLake8x8-v1``, ``CliffWalkingSlippery-v1``);
    ``all`` adds gymnasium's classic-control and Box2D envs with a Discrete action space.
    """
    gym = require_gymnasium()
    specs = _latest(list(gym.registry.values()))
    toy = sorted(
        (s for s in specs if _entry(s).startswith(_TOY_TEXT)), key=lambda s: _family_rank(s)
    )
    train: list[str] = []
    test: list[str] = []
    for entry in dict.fromkeys(_entry(s) for s in toy):
        family = sorted((s for s in toy if _entry(s) == entry), key=lambda s: (len(s.name), s.id))
        train.append(family[0].id)
        test.extend(s.id for s in family[1:])
    others = [s.id for s in specs if _entry(s).startswith(_CHEAP_FAMILIES) and not s.namespace]
    extra = [env_id for env_id in others if _discrete(env_id)]
    return {"train": train, "test": test, "all": [*train, *test, *extra]}


def accepts(spec: Any, env_kwargs: Mapping[str, Any]) -> bool:
    """Whether the env's constructor takes every key of ``env_kwargs`` (by its signature)."""
    if not env_kwargs:
        return True
    try:
        parameters = inspect.signature(_creator(spec)).parameters.values()
    except (TypeError, ValueError, ImportError, AttributeError):
        return False
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return True
    return set(env_kwargs) <= {p.name for p in parameters}


def list_task_ids(split: str, env_kwargs: Mapping[str, Any]) -> list[str]:
    """The ids of ``split`` whose envs accept ``env_kwargs``.

    Raises:
        UnknownTaskError: If ``split`` is not one of the splits.
    """
    check_split(split, SPLITS, bridge=BRIDGE)
    gym = require_gymnasium()
    ids = catalogue()[split]
    return [i for i in ids if accepts(gym.registry[i], env_kwargs)]
