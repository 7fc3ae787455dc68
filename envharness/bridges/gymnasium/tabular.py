"""Planning over gymnasium's transition tables: the base of the grid-world and Taxi domains.

:class:`TabularDomain` reads envs that expose ``P[s][a] = [(p, s', r, terminated), ...]`` with
integer states. Deterministic dynamics plan with a breadth-first search over each action's
intended effect; stochastic ones (slippery ice, a slippery cliff) with the policy that maximizes
the discounted chance of reaching the goal (value iteration on ``P``), which an ``OraclePolicy``
re-plans from at every step. :class:`GridDomain` adds ``row * ncol + col`` grids.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from functools import cached_property
from typing import Any, ClassVar

from envharness.bridges.gymnasium.domains import Domain, Moment, shortest_plan

__all__ = ["GridDomain", "TabularDomain"]

_MAX_DETOURS = 3
_DETOUR_DEPTH = 3
_DISCOUNT = 0.99
_SWEEPS = 2000
_POLICY_CACHE = 16
INT = {"type": "integer"}

# One transition table: per state, per action, the outcomes (p, next state, is goal, terminates).
_Table = tuple[tuple[tuple[tuple[float, int, bool, bool], ...], ...], ...]
_POLICIES: dict[_Table, tuple[list[int], list[float]]] = {}


def _value_iteration(table: _Table) -> tuple[list[int], list[float]]:
    """In-place value iteration: reward 1 for entering a goal, 0 for any other end."""
    value = [0.0] * len(table)
    policy = [0] * len(table)
    for _ in range(_SWEEPS):
        change = 0.0
        for state, actions in enumerate(table):
            best, choice = -1.0, 0
            for action, outcomes in enumerate(actions):
                worth = 0.0
                for p, after, goal, done in outcomes:
                    if done:
                        worth += p if goal and after != state else 0.0
                    else:
                        worth += p * _DISCOUNT * value[after]
                if worth > best + 1e-12:
                    best, choice = worth, action
            change = max(change, abs(best - value[state]))
            value[state], policy[state] = best, choice
        if change < 1e-10:
            break
    return policy, value


class TabularDomain(Domain, ABC):
    """Envs with a transition table ``P[s][a] = [(p, s', r, terminated), ...]`` and int states.

    Subclasses give :meth:`successors` (the intended effect of each action) and
    :attr:`moves` (the actions that only move, for detours).
    """

    moves: ClassVar[tuple[int, ...]] = (0, 1, 2, 3)
    worst_setup_reward: ClassVar[float] = float("-inf")
    """A setup action whose possible reward is below this is not offered as a stage."""

    plans_with_policy: ClassVar[bool] = True
    """Stochastic envs plan with :meth:`policy` (else with the shortest intended plan)."""

    def __init__(self, env_id: str, env: Any) -> None:
        super().__init__(env_id, env)
        self._plans: dict[int, list[int] | None] = {}
        self._stochastic: bool | None = None
        self._policy: tuple[list[int], list[float]] | None = None

    @abstractmethod
    def successors(self, state: int) -> Iterator[tuple[int, int, str | None]]:
        """``(action, next state, "goal" | "fail" | None)`` per action, as intended."""

    def plan(self, state: int) -> list[int] | None:
        """The shortest intended plan from ``state`` (cached per state)."""
        if state not in self._plans:
            self._plans[state] = shortest_plan(state, self.successors)
        return self._plans[state]

    def oracle(self, moment: Moment) -> list[int]:
        """A plan to the goal from here; ``[]`` when ended or unreachable.

        Deterministic dynamics (and Taxi): the shortest plan. Stochastic grids: the actions of
        the policy that best secures the goal, along the intended path (see :meth:`policy`).
        """
        if moment.ended:
            return []
        state = int(moment.raw)
        if not (self.plans_with_policy and self.stochastic):
            return list(self.plan(state) or [])
        policy, value = self.policy()
        plan: list[int] = []
        seen = {state}
        while value[state] > 0:
            action = policy[state]
            plan.append(action)
            after = self.intended(state, action)
            if after in seen or self._goal_after(state, action):
                break
            seen.add(after)
            state = after
        return plan

    @property
    def stochastic(self) -> bool:
        """Whether some action has more than one possible outcome in gymnasium's table."""
        if self._stochastic is None:
            self._stochastic = any(
                len(outcomes) > 1 for per in self.env.P.values() for outcomes in per.values()
            )
        return self._stochastic

    def _goal_after(self, state: int, action: int) -> bool:
        return any(a == action and o == "goal" for a, _, o in self.successors(state))

    def goal_state(self, state: int) -> bool:
        """Whether a terminating transition into ``state`` is a success."""
        return False

    def policy(self) -> tuple[list[int], list[float]]:
        """The policy maximizing the discounted chance of reaching the goal, and its values.

        Value iteration on gymnasium's transition table (discount 0.99, so sooner is better and
        a setback such as the cliff's return to the start costs time). Computed once per
        transition table and shared by every env with the same table.
        """
        if self._policy is None:
            table = tuple(
                tuple(
                    tuple(
                        (
                            float(p),
                            int(after),
                            bool(done) and self.goal_state(int(after)),
                            bool(done),
                        )
                        for p, after, _, done in self.env.P[state][action]
                        if p > 0
                    )
                    for action in range(self.n)
                )
                for state in range(len(self.env.P))
            )
            self._policy = _POLICIES.get(table) or _value_iteration(table)
            if len(_POLICIES) >= _POLICY_CACHE:
                _POLICIES.pop(next(iter(_POLICIES)))
            _POLICIES[table] = self._policy
        return self._policy

    def safe(self, state: int, actions: list[int]) -> bool:
        """Whether every outcome the table allows keeps the episode running (and cheap)."""
        table = self.env.P
        states = {state}
        for action in actions:
            after: set[int] = set()
            for here in states:
                for p, there, reward, terminated in table[here][action]:
                    if p <= 0:
                        continue
                    if terminated or reward < self.worst_setup_reward:
                        return False
                    after.add(int(there))
            states = after
        return True

    def stages(self, moment: Moment) -> list[list[int]]:
        """Head starts along the plan (1 and 2 actions), then up to 3 detours off it.

        A detour is the shortest sequence of moves (at most 3) to a state off the plan's path
        from which the goal can still be reached; the farthest from the goal come first. Every
        candidate is safe under all of the env's possible outcomes (no termination, no cliff).
        """
        if moment.ended:
            return []
        start = int(moment.raw)
        plan, shortest = self.oracle(moment), self.plan(start)
        if not plan or not shortest:
            return []
        out = [plan[:k] for k in (1, 2) if len(plan) > k and self.safe(start, plan[:k])]
        path = {start}
        for steps in (plan, shortest):
            state = start
            for action in steps:
                state = self.intended(state, action)
                path.add(state)
        reached: dict[int, list[int]] = {start: []}
        frontier = [start]
        for _ in range(_DETOUR_DEPTH):
            grown = []
            for here in frontier:
                for action in self.moves:
                    there = self.intended(here, action)
                    if there not in reached:
                        reached[there] = [*reached[here], action]
                        grown.append(there)
            frontier = grown
        detours = []
        for there, actions in reached.items():
            rest = self.plan(there) if there not in path else None
            if rest and self.safe(start, actions):
                detours.append((-len(rest), len(actions), actions))
        detours.sort()
        return out + [actions for *_, actions in detours[:_MAX_DETOURS]]

    def intended(self, state: int, action: int) -> int:
        """The state ``action`` is meant to lead to from ``state`` (itself for a no-op)."""
        for a, after, _ in self.successors(state):
            if a == action:
                return after
        return state


class GridDomain(TabularDomain):
    """A grid world whose state is ``row * ncol + col``."""

    deltas: ClassVar[dict[int, tuple[int, int]]] = {}
    """Each move action's ``(row, col)`` step."""
    shape: tuple[int, int]

    def cell(self, state: int) -> tuple[int, int]:
        """``(row, col)`` of a state."""
        return divmod(int(state), self.shape[1])

    @abstractmethod
    def tile(self, row: int, col: int) -> str:
        """The map letter at a cell (``"G"`` goal, ``"H"``/``"C"`` dead ends, others free)."""

    def goal_state(self, state: int) -> bool:
        """Whether ``state`` is on a goal tile."""
        return self.tile(*self.cell(state)) == "G"

    def successors(self, state: int) -> Iterator[tuple[int, int, str | None]]:
        """One move per action in :attr:`deltas`, clamped at the edges."""
        row, col = self.cell(state)
        rows, cols = self.shape
        for action, (dr, dc) in self.deltas.items():
            r, c = min(max(row + dr, 0), rows - 1), min(max(col + dc, 0), cols - 1)
            tile = self.tile(r, c)
            outcome = "goal" if tile == "G" else "fail" if tile in "HC" else None
            yield action, r * cols + c, outcome

    def moved(self, moment: Moment) -> str:
        """What the last move did: moved, bumped into the edge, or slipped elsewhere."""
        if moment.action is None or moment.previous is None:
            return ""
        name = self.actions()[moment.action][0].removeprefix("move_")
        before, after = self.cell(moment.previous), self.cell(moment.raw)
        intended = self.intended(int(moment.previous), moment.action)
        if after == before and intended == int(moment.previous):
            return f"You tried to move {name} but the edge of the map stops you. "
        if int(moment.raw) == intended:
            return f"You moved {name}. "
        for action, (dr, dc) in self.deltas.items():
            if (before[0] + dr, before[1] + dc) == after:
                went = self.actions()[action][0].removeprefix("move_")
                return f"You tried to move {name} but slipped {went} instead. "
        return f"You tried to move {name} but slipped and stayed in place. "

    def grid_fields(self, moment: Moment) -> dict[str, Any]:
        """Your row and column and the goal's."""
        row, col = self.cell(moment.raw)
        goal_row, goal_col = self.goal
        return {"row": row, "col": col, "goal_row": goal_row, "goal_col": goal_col}

    def field_schemas(self) -> dict[str, Any]:
        """The schemas of :meth:`grid_fields`."""
        return {
            "row": {**INT, "description": "Your row, 0 at the top."},
            "col": {**INT, "description": "Your column, 0 at the left."},
            "goal_row": {**INT, "description": "The goal's row."},
            "goal_col": {**INT, "description": "The goal's column."},
        }

    @cached_property
    def goal(self) -> tuple[int, int]:
        """The first goal cell in reading order (the bottom-right corner if none)."""
        rows, cols = self.shape
        return next(
            ((r, c) for r in range(rows) for c in range(cols) if self.tile(r, c) == "G"),
            (rows - 1, cols - 1),
        )
