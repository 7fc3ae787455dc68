"""FrozenLake and CliffWalking: grid worlds with a goal, holes or a cliff, and optional slip.

Both name their moves as gymnasium documents them, describe your cell and the goal in words (the
ANSI map loses FrozenLake's highlight once colours are stripped), and succeed when the episode
terminates on the goal cell.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from envharness.bridges.gymnasium._loader import BRIDGE
from envharness.bridges.gymnasium.domains import Moment, register_domain
from envharness.bridges.gymnasium.tabular import GridDomain
from envharness.errors import BridgeError

__all__ = ["CliffWalkingDomain", "FrozenLakeDomain"]

_TILES = {"S": "the start (S)", "F": "frozen ice (F)", "H": "a hole (H)", "G": "the goal (G)"}


def _move_tools(order: tuple[str, ...], note: str) -> list[tuple[str, str]]:
    compass = {"left": "west", "down": "south", "right": "east", "up": "north"}
    return [(f"move_{d}", f"Move one cell {d} ({compass[d]}).{note}") for d in order]


class FrozenLakeDomain(GridDomain):
    """FrozenLake: walk from S to G over frozen ice F without falling into a hole H."""

    family = "frozen_lake"
    classes = ("gymnasium.envs.toy_text.frozen_lake:FrozenLakeEnv",)
    deltas = {0: (0, -1), 1: (1, 0), 2: (0, 1), 3: (-1, 0)}

    def __init__(self, env_id: str, env: Any) -> None:
        super().__init__(env_id, env)
        self.rows = [b"".join(line).decode() for line in env.desc.tolist()]
        self.shape = (len(self.rows), len(self.rows[0]))

    @classmethod
    def check_kwargs(cls, env_kwargs: Mapping[str, Any]) -> None:
        """Refuses ``map_name=None`` without ``desc``: an unseeded random map cannot replay."""
        if (
            "map_name" in env_kwargs
            and env_kwargs["map_name"] is None
            and not env_kwargs.get("desc")
        ):
            raise BridgeError(
                "FrozenLake with map_name=None draws an unseeded random map, which cannot be "
                "replayed; pass desc=generate_random_map(size=8, seed=N) (a list of str rows) "
                "instead",
                bridge=BRIDGE,
            )

    def tile(self, row: int, col: int) -> str:
        """The map letter: S, F, H or G."""
        return self.rows[row][col]

    def actions(self) -> list[tuple[str, str]]:
        """``move_left``, ``move_down``, ``move_right``, ``move_up`` (gymnasium's 0 to 3)."""
        slip = " On slippery ice you may slide sideways instead." if self.stochastic else ""
        return _move_tools(("left", "down", "right", "up"), slip)

    def instruction(self) -> str:
        """Reach G without falling into a hole; the slip is explained when the ice is slippery."""
        slip = (
            " The ice is slippery: a move goes the way you chose only a third of the time and "
            "slides to one side otherwise."
            if self.stochastic
            else ""
        )
        return (
            "Cross the frozen lake from the start S to the goal G without falling into a hole H. "
            f"The map has {self.shape[0]} rows and {self.shape[1]} columns; row 0 is at the top, "
            "column 0 at the left. Moving off the edge leaves you in place. Reaching G gives "
            f"reward 1 and ends the episode; falling into a hole ends it with 0.{slip}"
        )

    def describe(self, moment: Moment) -> str:
        """What the last move did, where you are, where the goal is, and the map's legend."""
        row, col = self.cell(moment.raw)
        goal_row, goal_col = self.goal
        here = self.tile(row, col)
        return (
            f"{self.moved(moment)}You are at row {row}, col {col}, on {_TILES.get(here, here)}. "
            f"The goal is at row {goal_row}, col {goal_col}. Map legend: S start, F frozen ice, "
            "H hole, G goal."
        )

    def ending(self, moment: Moment) -> str:
        """Reached the goal, fell into a hole, or ran out of time."""
        row, col = self.cell(moment.raw)
        if moment.terminated and self.tile(row, col) == "G":
            return "you reached the goal"
        if moment.terminated:
            return f"you fell into the hole at row {row}, col {col}"
        return "the time limit was reached"

    def outcome(self, moment: Moment) -> str | None:
        """``goal``, ``hole``, ``time_limit`` or ``None``."""
        if moment.terminated:
            return "goal" if self.success(moment) else "hole"
        return "time_limit" if moment.truncated else None

    def success(self, moment: Moment) -> bool:
        """Success: the episode terminated on a goal tile."""
        return moment.terminated and self.goal_state(moment.raw)

    def fields(self, moment: Moment) -> dict[str, Any]:
        """Row, column, the goal's, the tile you stand on, and the map."""
        row, col = self.cell(moment.raw)
        return {**self.grid_fields(moment), "tile": self.tile(row, col), "map": list(self.rows)}

    def field_schemas(self) -> dict[str, Any]:
        """The schemas of :meth:`fields`."""
        return {
            **super().field_schemas(),
            "tile": {
                "type": "string",
                "enum": ["S", "F", "H", "G"],
                "description": "The tile you stand on: S start, F ice, H hole, G goal.",
            },
            "map": {
                "type": "array",
                "items": {"type": "string"},
                "description": "The map, one string per row (S, F, H, G as above).",
            },
        }


class CliffWalkingDomain(GridDomain):
    """CliffWalking: walk along the bottom row's cliff to the far corner without stepping off."""

    family = "cliff_walking"
    classes = ("gymnasium.envs.toy_text.cliffwalking:CliffWalkingEnv",)
    deltas = {0: (-1, 0), 1: (0, 1), 2: (1, 0), 3: (0, -1)}
    worst_setup_reward: ClassVar[float] = -1.0

    def __init__(self, env_id: str, env: Any) -> None:
        super().__init__(env_id, env)
        rows, cols = self.shape = (int(env.shape[0]), int(env.shape[1]))
        cliff = getattr(env, "_cliff", None)
        self.cliff = (
            {(r, c) for r in range(rows) for c in range(cols) if bool(cliff[r][c])}
            if cliff is not None
            else {(rows - 1, c) for c in range(1, cols - 1)}
        )

    def tile(self, row: int, col: int) -> str:
        """``C`` on the cliff, ``G`` at the goal, ``o`` elsewhere."""
        if (row, col) in self.cliff:
            return "C"
        return "G" if (row, col) == (self.shape[0] - 1, self.shape[1] - 1) else "o"

    def actions(self) -> list[tuple[str, str]]:
        """``move_up``, ``move_right``, ``move_down``, ``move_left`` (gymnasium's 0 to 3)."""
        slip = " The ground is slippery: you may move sideways instead." if self.stochastic else ""
        return _move_tools(("up", "right", "down", "left"), slip)

    def instruction(self) -> str:
        """Reach the far corner by the shortest safe path; the cliff costs -100."""
        rows, cols = self.shape
        slip = " The ground is slippery: a move may go sideways instead." if self.stochastic else ""
        return (
            f"Walk from the start (row {rows - 1}, col 0) to the goal T (row {rows - 1}, col "
            f"{cols - 1}) on a {rows}x{cols} grid. The cliff C runs between them along the bottom "
            "row: stepping onto it costs -100 and sends you back to the start. Every step costs "
            f"-1, so take the shortest safe path; reaching T ends the episode.{slip}"
        )

    def describe(self, moment: Moment) -> str:
        """What the last move did (a fall included), where you are, and the legend."""
        row, col = self.cell(moment.raw)
        goal_row, goal_col = self.goal
        fell = moment.action is not None and moment.reward <= -100
        event = (
            "You stepped off the cliff and are back at the start (-100). "
            if fell
            else self.moved(moment)
        )
        return (
            f"{event}You (x on the map) are at row {row}, col {col}. The goal T is at row "
            f"{goal_row}, col {goal_col}. Map legend: x you, o ground, C cliff, T goal."
        )

    def ending(self, moment: Moment) -> str:
        """Reached the goal, or ran out of time."""
        return "you reached the goal" if self.success(moment) else "the time limit was reached"

    def outcome(self, moment: Moment) -> str | None:
        """``goal``, ``time_limit`` or ``None``."""
        if moment.terminated:
            return "goal" if self.success(moment) else "terminated"
        return "time_limit" if moment.truncated else None

    def success(self, moment: Moment) -> bool:
        """Success: the episode terminated on the goal cell."""
        return moment.terminated and self.cell(moment.raw) == self.goal

    def fields(self, moment: Moment) -> dict[str, Any]:
        """Row, column, the goal's, and whether the last step went off the cliff."""
        fell = moment.action is not None and moment.reward <= -100
        return {**self.grid_fields(moment), "fell_off_cliff": fell}

    def field_schemas(self) -> dict[str, Any]:
        """The schemas of :meth:`fields`."""
        return {
            **super().field_schemas(),
            "fell_off_cliff": {
                "type": "boolean",
                "description": "True when the last step went off the cliff (back to the start).",
            },
        }


register_domain(FrozenLakeDomain)
register_domain(CliffWalkingDomain)
