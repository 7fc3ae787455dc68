"""What makes an environment tabular: a finite action set and observations that name a state.

A tabular learner is a black box like any other policy: it reads the observation text, never
the environment's state. :func:`observation_state` finds the discrete state the text names:

- grid worlds (the ``gymnasium`` bridge's FrozenLake and CliffWalking): ``"are at row R, col C"``
  gives ``"cell:R,C"``;
- Taxi: ``"The taxi is at row R, col C. The passenger waits at P ...; the destination is D"``
  gives ``"taxi:R,C,P,D"`` (``P`` is ``in_taxi`` once picked up);
- any env whose description is ``"Observation: N"`` with integers only (a Discrete or small
  integer observation space) gives ``"obs:N"``.

An observation that names no state (a rule's refusal, a truncated text) gives ``None``; a policy
then keeps the state it last read (a refused action does not move the env).

:func:`discrete_actions` lists the actions: every tool without parameters is one action, and an
``act(action)`` tool with an integer range (the ``gymnasium`` bridge's generic tool) is one per
integer. :func:`check_tabular` raises :class:`~envharness.errors.PolicyError` for an env that is
not tabular in this sense (a text-command env, CartPole's real-valued observations).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from envharness.core import Action, ActionableEnv, ToolSpec
from envharness.errors import PolicyError

__all__ = ["StateReader", "check_tabular", "discrete_actions", "observation_state"]

StateReader = Callable[[str], "str | None"]
"""``reader(observation) -> state key`` (``None`` when the text names no state); picklable."""

MAX_ACTIONS = 64
"""The most actions an ``act(action)`` range may expand to."""

_TAXI = re.compile(
    r"The taxi is at row (\d+), col (\d+)\. The passenger "
    r"(?:(is in the taxi)|waits at (\w+))[^;]*; the destination is (\w+)"
)
_CELL = re.compile(r"\bare at row (\d+), col (\d+)\b")
_INTEGERS = re.compile(r"^Observation: \[?(-?\d+(?:, -?\d+)*)\]?\.?\s*$", re.MULTILINE)


def observation_state(observation: str) -> str | None:
    """The discrete state an observation names, or ``None`` (see the module docstring).

    Example:
        >>> observation_state("You are at row 3, col 0. The goal T is at row 3, col 11.")
        'cell:3,0'
        >>> observation_state("Moving there is not allowed.") is None
        True
    """
    if not isinstance(observation, str):
        return None
    taxi = _TAXI.search(observation)
    if taxi:
        row, col, in_taxi, waits, destination = taxi.groups()
        passenger = "in_taxi" if in_taxi else waits
        return f"taxi:{row},{col},{passenger},{destination}"
    cell = _CELL.search(observation)
    if cell:
        return f"cell:{cell.group(1)},{cell.group(2)}"
    numbers = _INTEGERS.search(observation)
    if numbers:
        return "obs:" + numbers.group(1).replace(" ", "")
    return None


def discrete_actions(tools: Sequence[ToolSpec]) -> list[Action]:
    """The finite action set of ``tools``, in tool order.

    Raises:
        PolicyError: If a tool takes arguments other than an ``act(action)`` integer range, or
            there are no tools.

    Example:
        >>> from envharness import load_bridge
        >>> env = load_bridge("gymnasium", task_id="FrozenLake-v1")
        >>> [action.tool for action in discrete_actions(env.tools())]
        ['move_left', 'move_down', 'move_right', 'move_up']
    """
    actions: list[Action] = []
    for tool in tools:
        properties = tool.parameters.get("properties") or {}
        if not properties:
            actions.append(Action(tool.name, {}))
            continue
        schema = properties.get("action") if len(properties) == 1 else None
        low = (schema or {}).get("minimum")
        high = (schema or {}).get("maximum")
        if (
            schema is None
            or schema.get("type") != "integer"
            or not isinstance(low, int)
            or not isinstance(high, int)
            or not 0 <= high - low < MAX_ACTIONS
        ):
            raise PolicyError(
                f"the tabular learner needs a finite action set, but tool {tool.name!r} takes "
                f"arguments {sorted(properties)}; it plays envs whose tools take no arguments "
                "(or one integer 'action' with a small minimum-maximum range), such as the "
                "'gymnasium' bridge's FrozenLake, CliffWalking and Taxi"
            )
        actions.extend(Action(tool.name, {"action": value}) for value in range(low, high + 1))
    if not actions:
        raise PolicyError("the tabular learner needs at least one action; the env has no tools")
    return actions


def check_tabular(env: ActionableEnv, reader: StateReader = observation_state) -> list[Action]:
    """The env's actions, after checking that its first observation names a discrete state.

    Resets ``env`` with seed 0 (the caller owns and closes it).

    Raises:
        PolicyError: If the tools are not a finite action set, or the observation after reset
            names no state ``reader`` can read.
    """
    actions = discrete_actions(env.tools())
    observation, _ = env.reset(seed=0)
    if reader(observation) is None:
        first = observation.strip().splitlines()[-1][:160] if observation.strip() else ""
        raise PolicyError(
            f"the tabular learner reads a discrete state from each observation, but "
            f"{env.task_id!r}'s observations name none ({first!r}); it plays grid worlds "
            "(FrozenLake, CliffWalking), Taxi and envs whose observation is one integer, or "
            "give QLearner(state_reader=...) a reader for this env's text"
        )
    return actions
