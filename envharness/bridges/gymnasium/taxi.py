"""Taxi: drive to the passenger, pick them up, drive to the destination, drop them off.

States are gymnasium's encoding ``((row * 5 + col) * 5 + passenger) * 4 + destination``; the
domain decodes them into the taxi's cell, where the passenger is and where they want to go. The
oracle is the shortest plan over the most likely outcome of each action in gymnasium's table
(the intended one: rain may skid the taxi sideways, a fickle passenger may change their mind;
an ``OraclePolicy`` re-plans every step). Success is the +20 dropoff.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from envharness.bridges.gymnasium.domains import Moment, register_domain
from envharness.bridges.gymnasium.tabular import INT, TabularDomain

__all__ = ["TaxiDomain"]

_STOPS = ("red", "green", "yellow", "blue")
_IN_TAXI = 4


class TaxiDomain(TabularDomain):
    """Taxi: six tools (four moves, ``pickup``, ``dropoff``); success is the +20 dropoff."""

    family = "taxi"
    classes = ("gymnasium.envs.toy_text.taxi:TaxiEnv",)
    plans_with_policy = False

    @staticmethod
    def decode(state: int) -> tuple[int, int, int, int]:
        """``(taxi_row, taxi_col, passenger, destination)`` of an encoded state.

        Example:
            >>> TaxiDomain.decode(314)
            (3, 0, 3, 2)
        """
        state, destination = divmod(int(state), 4)
        state, passenger = divmod(state, 5)
        row, col = divmod(state, 5)
        return row, col, passenger, destination

    def successors(self, state: int) -> Iterator[tuple[int, int, str | None]]:
        """The most likely outcome per action from gymnasium's table (no-ops left out)."""
        for action in range(self.n):
            _, after, reward, terminated = max(self.env.P[state][action], key=lambda t: t[0])
            if int(after) != state or terminated:
                outcome = ("goal" if reward > 0 else "fail") if terminated else None
                yield action, int(after), outcome

    def actions(self) -> list[tuple[str, str]]:
        """The four moves (gymnasium's 0 to 3), ``pickup`` (4) and ``dropoff`` (5)."""
        rain = " In the rain the taxi may skid sideways." if self.stochastic else ""
        moves = [
            (f"move_{d}", f"Drive one cell {d} ({w}).{rain}")
            for d, w in (("south", "down"), ("north", "up"), ("east", "right"), ("west", "left"))
        ]
        return [
            *moves,
            ("pickup", "Pick up the passenger (the taxi must be at the passenger's stop)."),
            ("dropoff", "Drop off the passenger (at the destination to finish the ride)."),
        ]

    def instruction(self) -> str:
        """The map's stops, the rules and the rewards."""
        stops = ", ".join(self._stop(i) for i in range(len(_STOPS)))
        return (
            f"You drive a taxi on a 5x5 grid with four stops: {stops}. Row 0 is at the top, "
            "column 0 at the left. Drive to the passenger, pick them up, drive to their "
            "destination and drop them off. Walls '|' block east-west moves. Each step costs -1, "
            "an illegal pickup or dropoff -10, and a successful dropoff gives +20 and ends the "
            "episode."
        )

    def describe(self, moment: Moment) -> str:
        """What the last action did, the taxi's cell, the passenger and the destination."""
        row, col, passenger, destination = self.decode(moment.raw)
        where = "is in the taxi" if passenger == _IN_TAXI else f"waits at {self._stop(passenger)}"
        return (
            f"{self._event(moment)}The taxi is at row {row}, col {col}. The passenger {where}; "
            f"the destination is {self._stop(destination)}. Map legend: R G Y B stops, | wall, "
            ": open road."
        )

    def _stop(self, index: int) -> str:
        row, col = self.env.locs[index]
        return f"{_STOPS[index]} ({'RGYB'[index]}, row {row}, col {col})"

    def _event(self, moment: Moment) -> str:
        if moment.action is None or moment.previous is None:
            return ""
        name = self.actions()[moment.action][0]
        before, after = self.decode(moment.previous), self.decode(moment.raw)
        if name == "pickup":
            ok = before[2] != _IN_TAXI and after[2] == _IN_TAXI
            return "You picked up the passenger. " if ok else "Illegal pickup (-10). "
        if name == "dropoff":
            if moment.terminated:
                return "You dropped the passenger off at the destination (+20). "
            if before[2] == _IN_TAXI and after[2] != _IN_TAXI:
                return "You dropped the passenger off, but not at the destination. "
            return "Illegal dropoff (-10). "
        if before[:2] == after[:2]:
            return f"The taxi could not {name.replace('_', ' ')}: a wall or the edge is there. "
        return ""

    def ending(self, moment: Moment) -> str:
        """Delivered, or out of time."""
        return "the passenger was delivered" if moment.terminated else "the time limit was reached"

    def outcome(self, moment: Moment) -> str | None:
        """``delivered``, ``time_limit`` or ``None``."""
        if moment.terminated:
            return "delivered"
        return "time_limit" if moment.truncated else None

    def success(self, moment: Moment) -> bool:
        """Success: the episode terminated with the +20 dropoff."""
        return moment.terminated and moment.reward > 0

    def fields(self, moment: Moment) -> dict[str, Any]:
        """The taxi's cell, the passenger's whereabouts and the destination."""
        row, col, passenger, destination = self.decode(moment.raw)
        return {
            "taxi_row": row,
            "taxi_col": col,
            "passenger": "in_taxi" if passenger == _IN_TAXI else _STOPS[passenger],
            "destination": _STOPS[destination],
        }

    def field_schemas(self) -> dict[str, Any]:
        """The schemas of :meth:`fields`."""
        stops = list(_STOPS)
        return {
            "taxi_row": {**INT, "description": "The taxi's row, 0 at the top."},
            "taxi_col": {**INT, "description": "The taxi's column, 0 at the left."},
            "passenger": {
                "type": "string",
                "enum": [*stops, "in_taxi"],
                "description": "Where the passenger is: a stop's colour, or in_taxi.",
            },
            "destination": {
                "type": "string",
                "enum": stops,
                "description": "The stop the passenger wants to go to.",
            },
        }


register_domain(TaxiDomain)
