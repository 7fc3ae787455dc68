"""Stage candidates: the task's object hidden in a closed receptacle, in the game's own commands.

Each candidate goes to the target object, takes it (opening and closing its receptacle when
needed), goes to a closed receptacle, opens it, moves the object in and closes it. Where the
domain lets the object into no closed receptacle (an alarm clock fits no drawer), candidates
that leave it on another receptacle come after. Only receptacles the domain lets the object into
(PDDL ``canContain``) are tried, never one of the goal's class. A candidate is kept only when
every command is admissible, the goal does not hold on the way, and ALFWorld's expert, with a
fresh memory, still wins from the state it makes. Candidates are computed once per game and
cached next to it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from envharness.bridges.alfworld_env._build import Built, read_json, write_json
from envharness.bridges.alfworld_env._game import Game
from envharness.bridges.alfworld_env._kit import LOCK, Kit
from envharness.bridges.alfworld_env._oracle import persist, remember, run_expert
from envharness.bridges.cache import file_lock

__all__ = ["MAX_STAGES", "cached_stages", "find_stages", "kind"]

MAX_STAGES = 4
_MAX_TRIES = 8  # expert runs spent validating candidates, at most
_MAX_OBJECTS = 2
_APPLIANCES = frozenset({"fridge", "microwave"})  # tried last: they take part in some tasks
_FORMAT = 2


def kind(name: str) -> str:
    """The class of an object or receptacle name.

    Example:
        >>> kind("drawer 12"), kind("agent1")
        ('drawer', 'agent1')
    """
    head, _, number = name.rpartition(" ")
    return head if head and number.isdigit() else name


class _World:
    """What the stage search reads of the start state's facts."""

    def __init__(self, state: Any) -> None:
        self.inside: dict[str, str] = {}  # object -> the receptacle it lies in
        self.openable: set[str] = set()
        self.opened: set[str] = set()
        self.types: dict[str, str] = {}  # object or receptacle -> its type
        self.receptacles: set[str] = set()
        self.fits: set[tuple[str, str]] = set()  # (receptacle type, object type)
        for fact in state["facts"]:
            args = [str(a.name).strip() for a in fact.arguments]
            if len(args) == 1 and fact.name in ("openable", "opened"):
                (self.openable if fact.name == "openable" else self.opened).add(args[0])
            elif len(args) != 2:
                continue
            elif fact.name == "inreceptacle":
                self.inside[args[0]] = args[1]
            elif fact.name in ("objecttype", "receptacletype"):
                self.types[args[0]] = args[1]
                if fact.name == "receptacletype":
                    self.receptacles.add(args[0])
            elif fact.name == "cancontain":
                self.fits.add((args[0], args[1]))

    def fits_in(self, item: str, place: str) -> bool:
        """Whether the domain lets ``item`` be put in ``place`` (PutObject's ``canContain``)."""
        return (self.types.get(place), self.types.get(item)) in self.fits


def _targets(built: Built, world: _World, plan: Sequence[str]) -> list[str]:
    """Objects of the task's class, the one the oracle's plan takes first leading."""
    target = str(built.params.get("object_target", "")).lower()
    objects = sorted(o for o in world.inside if kind(o) == target)
    taken = [c.split(" from ", 1)[0][len("take ") :] for c in plan if c.startswith("take ")]
    first = [o for o in taken if o in objects][:1]
    return (first + [o for o in objects if o not in first])[:_MAX_OBJECTS]


def _places(built: Built, world: _World, item: str) -> list[tuple[bool, str]]:
    """Where ``item`` may go, as ``(closed, receptacle)``: closed receptacles first.

    Only receptacles the domain lets it into, neither where it lies nor of the goal's class;
    one of each class before the second of any, appliances last.
    """
    goal = str(built.params.get("parent_target", "")).lower()
    source = world.inside[item]
    places = sorted(
        r for r in world.receptacles if r != source and kind(r) != goal and world.fits_in(item, r)
    )
    rank: dict[str, int] = defaultdict(int)
    order = []
    for place in places:
        closed = place in world.openable and place not in world.opened
        order.append((not closed, kind(place) in _APPLIANCES, rank[closed, kind(place)], place))
        rank[closed, kind(place)] += 1
    return [(not opened, place) for opened, *_, place in sorted(order)]


def _candidates(built: Built, state: Any, plan: Sequence[str]) -> list[tuple[str, ...]]:
    world = _World(state)
    found = []
    for item in _targets(built, world, plan):
        source = world.inside[item]
        closed = source in world.openable and source not in world.opened
        take = (f"go to {source}", *((f"open {source}",) if closed else ()))
        take += (f"take {item} from {source}", *((f"close {source}",) if closed else ()))
        for hidden, place in _places(built, world, item):
            move = f"move {item} to {place}"
            put = (f"open {place}", move, f"close {place}") if hidden else (move,)
            found.append((*take, f"go to {place}", *put))
    return sorted(found, key=lambda stage: not stage[-1].startswith("close "))


def cached_stages(built: Built) -> list[list[str]] | None:
    """The stages cached next to the game, or ``None``."""
    data = read_json(built.folder / "stages.json")
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        return None
    stages = data.get("stages")
    if not isinstance(stages, list) or not all(
        isinstance(s, list) and all(isinstance(c, str) for c in s) for s in stages
    ):
        return None
    return stages


def find_stages(parts: Kit, scratch: Game, built: Built, plan: Sequence[str]) -> list[list[str]]:
    """Up to :data:`MAX_STAGES` validated hiding stages (cached next to the game).

    Args:
        parts: The imported ALFWorld pieces.
        scratch: A private copy of the game (reset and played here).
        built: The built game.
        plan: The oracle's plan from the start (to find the object it takes first).
    """
    cached = cached_stages(built)
    if cached is not None:
        return cached
    with LOCK:
        scratch.reset()
        candidates = _candidates(built, scratch.state(), plan)
        stages: list[list[str]] = []
        tries = 0
        for stage in candidates:
            if len(stages) == MAX_STAGES or tries == _MAX_TRIES:
                break
            tries += 1
            solution = run_expert(parts, scratch, built, stage)
            if solution is not None:
                remember(built.key, solution.plans())
                persist(built, solution.plans())
                stages.append(list(stage))
    try:
        with file_lock(built.folder / ".lock"):
            write_json(built.folder / "stages.json", {"format": _FORMAT, "stages": stages})
    except OSError:
        pass
    return stages
