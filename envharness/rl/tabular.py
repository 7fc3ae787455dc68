"""Tabular Q-learning over the observation text: ``QTable``, its black-box policy, ``QLearner``.

The state is what :func:`~envharness.rl.discrete.observation_state` reads from the observation
(the learner never looks inside the env), prefixed with a short hash of the task's instruction
so two tasks with the same cells keep apart. The reward is the bridge's own (the verifier's): no
shaping, no component changes it.

Example:
    >>> from envharness.harness.spec import BridgeSpec, HarnessSpec
    >>> spec = HarnessSpec(BridgeSpec("gymnasium", "FrozenLake-v1",
    ...                               {"env_kwargs": {"is_slippery": False}}))
    >>> learner = QLearner(alpha=0.5, epsilon=0.2)
    >>> outcome = learner.train(learner.initial_policy([spec], seed=0), [spec], 3000, seed=1)
    >>> outcome.env_steps
    3000
    >>> from envharness.rollout import rollout
    >>> rollout(spec.build(), outcome.policy(seed=7)).success
    True
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envharness.core import Action, ActionableEnv, ToolSpec
from envharness.errors import EnvHarnessError, PolicyError
from envharness.harness.spec import HarnessSpec
from envharness.rl.discrete import StateReader, check_tabular, observation_state
from envharness.rl.trainer import TrainOutcome

__all__ = ["QLearner", "QTable", "QTablePolicy", "QTablePolicyFactory"]

QTABLE_FILE = "q_table.json"


def _context(instruction: str) -> str:
    return hashlib.sha256(instruction.encode("utf-8")).hexdigest()[:8]


def _check_rate(name: str, value: object, *, low_open: bool = False) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if ok and (0.0 < value <= 1.0 if low_open else 0.0 <= value <= 1.0):
        return float(value)
    interval = "(0, 1]" if low_open else "[0, 1]"
    raise PolicyError(f"{name}: expected a number in {interval}, got {value!r}")


@dataclass
class QTable:
    """Action values per state: ``values[state] = [Q(state, a) for a in actions]``.

    Attributes:
        actions: The action set (the env's tools, see
            :func:`~envharness.rl.discrete.discrete_actions`).
        values: ``"<instruction hash>|<state>"`` to one value per action; unseen states are 0.
    """

    actions: list[Action]
    values: dict[str, list[float]] = field(default_factory=dict)

    def row(self, key: str) -> list[float]:
        """The values of ``key`` (a fresh row of zeros, stored, when unseen)."""
        row = self.values.get(key)
        if row is None:
            row = self.values[key] = [0.0] * len(self.actions)
        return row

    def copy(self) -> QTable:
        """A deep copy (training never changes a table a factory already holds)."""
        return QTable(list(self.actions), {k: list(v) for k, v in self.values.items()})

    def digest(self) -> str:
        """A short hash of the actions and values (names the policy in records)."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]

    def to_dict(self) -> dict[str, Any]:
        """The table as JSON data."""
        return {"actions": [a.to_dict() for a in self.actions], "values": self.values}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QTable:
        """The table :meth:`to_dict` wrote.

        Raises:
            PolicyError: If ``data`` is not such a table.
        """
        try:
            actions = [Action.from_dict(a) for a in data["actions"]]
            values = {str(k): [float(x) for x in v] for k, v in dict(data["values"]).items()}
        except (KeyError, TypeError, ValueError, EnvHarnessError) as e:
            raise PolicyError(f"not a Q-table ({type(e).__name__}: {e})") from None
        if any(len(v) != len(actions) for v in values.values()):
            raise PolicyError(f"not a Q-table: each row must hold {len(actions)} values")
        return cls(actions, values)


def _choose(
    table: QTable, key: str, rng: random.Random, epsilon: float, refused: set[int] = frozenset()
) -> int:
    """ε-greedy over the actions not ``refused``; ties among the best go to a random one."""
    allowed = [i for i in range(len(table.actions)) if i not in refused] or list(
        range(len(table.actions))
    )
    if epsilon and rng.random() < epsilon:
        return rng.choice(allowed)
    row = table.values.get(key)
    if row is None:
        return rng.choice(allowed)
    best = max(row[i] for i in allowed)
    return rng.choice([i for i in allowed if row[i] == best])


class QTablePolicy:
    """Plays from a Q-table, reading the state from each observation (a black box).

    Greedy by default (``epsilon=0``), ties broken at random. When an observation names no state
    (a rule refused the action, so the env did not move), the policy stays in the state it last
    read and sets that action aside in that state for the rest of the episode.

    Args:
        table: The Q-table (read, never changed).
        epsilon: The chance of a random action per step.
        seed: Seeds the tie-breaks and random actions.
        state_reader: Reads the state from an observation.

    Example:
        >>> from envharness import load_bridge
        >>> from envharness.rl import discrete_actions
        >>> env = load_bridge("gymnasium", task_id="FrozenLake-v1")
        >>> policy = QTablePolicy(QTable(discrete_actions(env.tools())), seed=0)
        >>> policy.start(env.instruction, env.tools())
        >>> policy.act(env.reset(seed=0)[0]).tool in {"move_left", "move_down", "move_right",
        ...                                           "move_up"}
        True
    """

    def __init__(
        self,
        table: QTable,
        *,
        epsilon: float = 0.0,
        seed: int = 0,
        state_reader: StateReader = observation_state,
    ) -> None:
        self.table = table
        self.epsilon = _check_rate("epsilon", epsilon)
        self._rng = random.Random(seed)
        self._reader = state_reader
        self._context = ""
        self._key: str | None = None
        self._last: int | None = None
        self._refused: dict[str, set[int]] = {}

    def start(self, instruction: str, tools: Sequence[ToolSpec]) -> None:
        """Begins an episode; the table's actions must be among ``tools``.

        Raises:
            PolicyError: If a table action names a tool the env does not offer.
        """
        names = {tool.name for tool in tools}
        missing = sorted({a.tool for a in self.table.actions} - names)
        if missing:
            raise PolicyError(
                f"the Q-table acts with {missing}, which this env does not offer "
                f"(its tools: {sorted(names)}); train a table on this env's tools"
            )
        self._context = _context(instruction)
        self._key, self._last, self._refused = None, None, {}

    def act(self, observation: str) -> Action:
        """The table's action for the state the observation names."""
        state = self._reader(observation)
        if state is None:
            if self._key is not None and self._last is not None:
                self._refused.setdefault(self._key, set()).add(self._last)
        else:
            self._key = f"{self._context}|{state}"
        key = self._key or f"{self._context}|?"
        index = _choose(self.table, key, self._rng, self.epsilon, self._refused.get(key, set()))
        self._last = index
        return self.table.actions[index]

    def describe(self) -> str:
        """``"qtable:<digest>"`` (``"qtable:<digest>:eps<ε>"`` when exploring)."""
        return _name(self.table.digest(), self.epsilon)


def _name(digest: str, epsilon: float) -> str:
    return f"qtable:{digest}" + (f":eps{epsilon:g}" if epsilon else "")


class QTablePolicyFactory:
    """Makes a :class:`QTablePolicy` per episode; pickles with its table (for worker processes).

    Args:
        table: The Q-table; the factory keeps its own copy.
        epsilon: The policies' chance of a random action.
        state_reader: Reads the state from an observation (a module-level function pickles).
    """

    def __init__(
        self,
        table: QTable,
        *,
        epsilon: float = 0.0,
        state_reader: StateReader = observation_state,
    ) -> None:
        self.table = table.copy()
        self.epsilon = _check_rate("epsilon", epsilon)
        self.state_reader = state_reader
        self._digest = self.table.digest()

    def __call__(self, seed: int) -> QTablePolicy:
        """A policy for one episode, seeded with the episode's seed."""
        return QTablePolicy(
            self.table, epsilon=self.epsilon, seed=seed, state_reader=self.state_reader
        )

    def describe(self) -> str:
        """``"qtable:<digest>"``: the same table gives the same name (and the same records)."""
        return _name(self._digest, self.epsilon)

    def __repr__(self) -> str:
        return f"QTablePolicyFactory({self.describe()}, states={len(self.table.values)})"


class QLearner:
    """Tabular Q-learning (off-policy TD control), ε-greedy, over the bridge's own rewards.

    Each ``train`` call plays episodes of the given specs in turn (spec 1, 2, ..., 1, ...), with
    seeds ``seed``, ``seed + 1``, ..., and stops as soon as ``steps_budget`` env steps are taken
    (mid-episode if need be). An episode ends when the env terminates or truncates, or after the
    env's ``max_steps``; only a termination stops the bootstrap. A step that raises (a failing
    rule, say) ends its episode and is counted.

    Args:
        alpha: The learning rate, in ``(0, 1]``.
        gamma: The discount, in ``[0, 1]``.
        epsilon: The exploration rate while training, in ``[0, 1]``.
        eval_epsilon: The exploration rate of the policies it returns (0: greedy).
        state_reader: Reads the state from an observation.

    Raises:
        PolicyError: If a rate is out of range.
    """

    def __init__(
        self,
        *,
        alpha: float = 0.2,
        gamma: float = 0.99,
        epsilon: float = 0.1,
        eval_epsilon: float = 0.0,
        state_reader: StateReader = observation_state,
    ) -> None:
        self.alpha = _check_rate("alpha", alpha, low_open=True)
        self.gamma = _check_rate("gamma", gamma)
        self.epsilon = _check_rate("epsilon", epsilon)
        self.eval_epsilon = _check_rate("eval_epsilon", eval_epsilon)
        self.state_reader = state_reader

    def describe(self) -> str:
        """``"q-learning(alpha=…, gamma=…, epsilon=…)"``."""
        return f"q-learning(alpha={self.alpha:g}, gamma={self.gamma:g}, epsilon={self.epsilon:g})"

    def initial_policy(self, specs: Sequence[HarnessSpec], seed: int = 0) -> QTablePolicyFactory:
        """An all-zero table over the specs' actions (the same for every spec).

        Raises:
            PolicyError: If an env is not tabular, or the specs do not share one action set.
        """
        if not specs:
            raise PolicyError("initial_policy: expected at least one spec")
        actions: list[Action] | None = None
        for spec in specs:
            env = spec.build()
            try:
                found = check_tabular(env, self.state_reader)
            finally:
                env.close()
            if actions is not None and found != actions:
                raise PolicyError(
                    f"the specs do not share one action set ({[a.key() for a in actions]} vs "
                    f"{[a.key() for a in found]}); train one learner per family of tasks"
                )
            actions = found
        assert actions is not None
        return self._factory(QTable(actions))

    def _factory(self, table: QTable) -> QTablePolicyFactory:
        return QTablePolicyFactory(table, epsilon=self.eval_epsilon, state_reader=self.state_reader)

    def train(
        self,
        policy: QTablePolicyFactory,
        specs: Sequence[HarnessSpec],
        steps_budget: int,
        seed: int,
    ) -> TrainOutcome:
        """Q-learning on ``specs`` for exactly ``steps_budget`` env steps (or fewer on errors).

        Raises:
            PolicyError: If ``policy`` is not a :class:`QTablePolicyFactory`, ``specs`` is empty
                or the budget is not a non-negative int.
        """
        if not isinstance(policy, QTablePolicyFactory):
            raise PolicyError(
                f"QLearner trains a QTablePolicyFactory, got {type(policy).__name__}; start from "
                "QLearner.initial_policy(specs)"
            )
        if not specs:
            raise PolicyError("train: expected at least one spec to train on")
        if isinstance(steps_budget, bool) or not isinstance(steps_budget, int) or steps_budget < 0:
            raise PolicyError(f"steps_budget: expected an int >= 0, got {steps_budget!r}")
        table = policy.table.copy()
        rng = random.Random(seed)
        envs: dict[int, ActionableEnv] = {}
        counts = {"steps": 0, "episodes": 0, "setup_steps": 0, "successes": 0, "errors": 0}
        per_spec = [0] * len(specs)
        try:
            while counts["steps"] < steps_budget:
                index = counts["episodes"] % len(specs)
                if index not in envs:
                    envs[index] = specs[index].build()
                episode_seed = seed + counts["episodes"]
                counts["episodes"] += 1
                per_spec[index] += 1
                self._episode(envs[index], table, rng, episode_seed, steps_budget, counts)
        finally:
            for env in envs.values():
                env.close()
        return TrainOutcome(
            policy=self._factory(table),
            env_steps=counts["steps"],
            episodes=counts["episodes"],
            setup_steps=counts["setup_steps"],
            details={
                "successes": counts["successes"],
                "errors": counts["errors"],
                "episodes_per_spec": {s.spec_id: n for s, n in zip(specs, per_spec, strict=True)},
                "states": len(table.values),
                "first_seed": seed,
            },
        )

    def _episode(
        self,
        env: ActionableEnv,
        table: QTable,
        rng: random.Random,
        seed: int,
        budget: int,
        counts: dict[str, int],
    ) -> None:
        """One ε-greedy Q-learning episode, updating ``table`` and ``counts`` in place."""
        observation, info = env.reset(seed=seed)
        counts["setup_steps"] += int(info.get("setup_steps", 0) or 0)
        context = _context(env.instruction)
        state = self.state_reader(observation) or "?"
        for _ in range(env.max_steps):
            if counts["steps"] >= budget:
                return
            key = f"{context}|{state}"
            index = _choose(table, key, rng, self.epsilon)
            counts["steps"] += 1
            try:
                result = env.step(table.actions[index])
            except EnvHarnessError:
                counts["errors"] += 1
                return
            state = self.state_reader(result.observation) or state
            target = result.reward
            if not result.terminated:
                target += self.gamma * max(table.row(f"{context}|{state}"))
            row = table.row(key)
            row[index] += self.alpha * (target - row[index])
            if result.terminated or result.truncated:
                counts["successes"] += int(env.evaluate().success)
                return

    # -- saving a round's policy (coevolve resumes from it) ---------------------------------

    def save_policy(self, policy: QTablePolicyFactory, folder: str | Path) -> Path:
        """Writes the policy's table as JSON to ``folder/q_table.json``."""
        path = Path(folder) / QTABLE_FILE
        data = {"epsilon": policy.epsilon, "table": policy.table.to_dict()}
        path.write_text(json.dumps(data), encoding="utf-8")
        return path

    def load_policy(self, folder: str | Path) -> QTablePolicyFactory:
        """The policy :meth:`save_policy` wrote to ``folder``.

        Raises:
            PolicyError: If the file is missing or not a saved table.
        """
        path = Path(folder) / QTABLE_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise PolicyError(f"cannot read the saved Q-table {path}: {e}") from None
        if not isinstance(data, dict) or "table" not in data:
            raise PolicyError(f"{path} does not hold a saved Q-table")
        return QTablePolicyFactory(
            QTable.from_dict(data["table"]),
            epsilon=float(data.get("epsilon", 0.0)),
            state_reader=self.state_reader,
        )
