"""``OraclePolicy``: the calibrated black box (the one policy that looks inside the env)."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass

from envharness.core import Action, ActionableEnv, ToolSpec
from envharness.errors import BridgeError, PolicyError
from envharness.rollout.policies._common import _check_seed, _check_tools
from envharness.rollout.policies.sampling import RandomPolicy

__all__ = ["OraclePolicy", "OraclePolicyFactory"]

_RANDOM_RETRIES = 10
"""How many random draws the oracle makes to avoid a move a rule keeps blocking."""


def _check_skill(skill: object) -> float:
    if (
        isinstance(skill, bool)
        or not isinstance(skill, int | float)
        or not 0.0 <= float(skill) <= 1.0
    ):
        raise PolicyError(f"skill: expected a number in [0, 1], got {skill!r}")
    return float(skill)


def _state_key(env: ActionableEnv) -> str:
    return json.dumps(env.get_env_state(), sort_keys=True, default=str)


class OraclePolicy:
    """A calibrated offline policy: the oracle's move with probability ``skill``, else random.

    **This is the one policy allowed privileged access.** Every other policy is a black box that
    sees only observations; this one is attached to the environment (the loop calls
    :meth:`attach` after reset, with the whole harness stack) and reads ``env.oracle_actions()``
    at the current state, so its weakness is known and rigging can be tested without an LLM.

    Each turn, with probability ``skill`` it plays the first action of the oracle's plan from the
    current state; otherwise, a :class:`RandomPolicy` move. When the oracle has no plan (the state
    can no longer be solved), it recovers: with an ``undo`` tool that takes no arguments it undoes,
    else it plays a random move.

    A blocking rule cannot trap it in a loop: when one of its oracle moves left the environment's
    state unchanged (a rule blocked it), that move is set aside and random moves are played
    instead, for 1 turn after the first block, 2 after the second, 4 after the third, and so on.
    So a move blocked only for a while (e.g. until the agent has looked around) is retried, and
    one blocked for good costs few steps.

    Args:
        skill: The probability of playing the oracle's move, in ``[0, 1]``.
        seed: Seeds every random choice, so an episode replays exactly.

    Attributes:
        oracle_moves: Oracle (or recovery) moves played this episode.
        random_moves: Random moves played this episode.

    Raises:
        PolicyError: If ``skill`` is outside ``[0, 1]`` or ``seed`` is not an int.

    Example:
        >>> from envharness import load_bridge
        >>> env = load_bridge("toy24", task_id="4-4-10-10")
        >>> policy = OraclePolicy(skill=1.0, seed=0)
        >>> observation, _ = env.reset(seed=0)
        >>> policy.start(env.instruction, env.tools())
        >>> policy.attach(env)
        >>> for _ in range(3):
        ...     result = env.step(policy.act(observation))
        ...     observation = result.observation
        >>> result.terminated
        True
    """

    def __init__(self, skill: float = 1.0, seed: int = 0) -> None:
        self.skill = _check_skill(skill)
        self.seed = _check_seed(seed)
        self._rng = random.Random(seed)
        self._random = RandomPolicy(self._rng.getrandbits(32))
        self._env: ActionableEnv | None = None
        self._tools: list[ToolSpec] | None = None
        self._forget()

    def _forget(self) -> None:
        """Clears the episode's memory: turn count, blocked moves and move counts."""
        self._turn = 0
        self._pending: tuple[str, str] | None = None
        self._blocks: dict[str, int] = {}
        self._set_aside_until: dict[str, int] = {}
        self.oracle_moves = 0
        self.random_moves = 0

    def attach(self, env: ActionableEnv) -> None:
        """Gives the policy the episode's environment (the full harness stack), after reset.

        Raises:
            PolicyError: If ``env`` is not an :class:`~envharness.core.ActionableEnv`.
        """
        if not isinstance(env, ActionableEnv):
            raise PolicyError(f"attach: expected an ActionableEnv, got {type(env).__name__}")
        self._env = env
        self._pending = None

    def start(self, instruction: str, tools: Sequence[ToolSpec]) -> None:
        """Remembers the tools and clears the memory of the previous episode."""
        self._tools = _check_tools(tools, "OraclePolicy")
        self._random.start(instruction, self._tools)
        self._forget()

    def act(self, observation: str) -> Action:
        """The oracle's next move with probability ``skill``, else a random one.

        Raises:
            PolicyError: Before :meth:`attach` or :meth:`start`, or if the env has no oracle.
        """
        env = self._env
        if env is None:
            raise PolicyError(
                "OraclePolicy is not attached to an environment: the rollout loop must call "
                "policy.attach(env) right after env.reset() (it does for any policy with attach)"
            )
        if self._tools is None:
            raise PolicyError("call start() before act(): the policy needs the tools")
        self._turn += 1
        state = _state_key(env)
        if self._pending is not None:
            before, move = self._pending
            if before == state:  # the move changed nothing: a rule blocked it
                blocks = self._blocks[move] = self._blocks.get(move, 0) + 1
                self._set_aside_until[move] = self._turn + 2 ** (blocks - 1) - 1
            self._pending = None
        action = self._oracle_move(env) if self._rng.random() < self.skill else None
        if action is not None and not self._set_aside(action):
            self._pending = (state, action.key())
            self.oracle_moves += 1
            return action
        self.random_moves += 1
        return self._random_move(observation)

    def _set_aside(self, action: Action) -> bool:
        return self._set_aside_until.get(action.key(), 0) >= self._turn

    def _oracle_move(self, env: ActionableEnv) -> Action | None:
        try:
            plan = env.oracle_actions()
        except BridgeError as e:
            raise PolicyError(f"OraclePolicy needs an environment with an oracle: {e}") from e
        if plan:
            return Action.from_dict(plan[0])
        for tool in self._tools or ():
            if tool.name == "undo" and not tool.check({}):
                return Action("undo", {})
        return None

    def _random_move(self, observation: str) -> Action:
        action = self._random.act(observation)
        for _ in range(_RANDOM_RETRIES):
            if not self._set_aside(action):
                break
            action = self._random.act(observation)
        return action

    def describe(self) -> str:
        """``"oracle:<skill>"``, e.g. ``"oracle:0.5"``."""
        return f"oracle:{self.skill:g}"


@dataclass(frozen=True)
class OraclePolicyFactory:
    """Makes ``OraclePolicy(skill, seed)`` per episode; picklable.

    Attributes:
        skill: The probability of playing the oracle's move, in ``[0, 1]``.

    Example:
        >>> OraclePolicyFactory(0.5)(seed=1).describe()
        'oracle:0.5'
    """

    skill: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "skill", _check_skill(self.skill))

    def __call__(self, seed: int) -> OraclePolicy:
        """``OraclePolicy(skill, seed)``."""
        return OraclePolicy(self.skill, seed)

    def describe(self) -> str:
        """``"oracle:<skill>"``."""
        return f"oracle:{self.skill:g}"
