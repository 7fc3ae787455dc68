"""Stage candidates: the task's object hidden in a closed receptacle, in the game's own commands.

Each candidate takes every object of the task's class that lies in the open, one at a time
(opening and closing its receptacle when needed), into one closed receptacle that can hold it
(open, move in, close), then goes back to where the first one lay, so that neither the start
observation nor a walk past the open surfaces shows the object, and the agent does not stand at
the hiding place. "Can hold it" is the trial's own PDDL: ``canContain`` of the receptacle's
and the object's types, which ALFWorld's ``PutObject`` requires. Never tried: the object's own
receptacle; one of the goal's class when the task only moves the object (the move could do the
task); the appliance a heat or cool task needs (hiding a potato in the microwave of a heat task
would help). A candidate is kept only when every command is admissible, the goal does not hold
on the way, and the oracle still wins from the state it makes: ALFWorld's expert with a fresh
memory, or else fast-downward's plan (as ``oracle_actions`` falls back to), within the agent's
default budget.
Where nothing fits (a mug in a bedroom: only tables can hold it), there is no candidate, and
:func:`find_stages` says why. Candidates are computed once per game and cached next to it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, NamedTuple

from envharness.bridgekit.cache import file_lock
from envharness.bridges.alfworld._build import Built, read_json, write_json
from envharness.bridges.alfworld._game import Game
from envharness.bridges.alfworld._kit import LOCK, Kit
from envharness.bridges.alfworld._oracle import persist, remember, run_expert, run_planner

__all__ = ["MAX_STAGES", "Stages", "cached_stages", "find_stages", "kind"]

MAX_STAGES = 4
_MAX_TRIES = 8  # expert runs spent validating candidates, at most
_APPLIANCES = frozenset({"fridge", "microwave"})  # tried last: they take part in some tasks
_NEEDED = {"pick_heat_then_place_in_recep": "microwave", "pick_cool_then_place_in_recep": "fridge"}
_TRANSFORMS = frozenset(
    {
        "pick_clean_then_place_in_recep",
        "pick_heat_then_place_in_recep",
        "pick_cool_then_place_in_recep",
    }
)  # the goal needs more than the move, so the goal's class may hide the object
_FORMAT = 5  # 5: closed receptacles only, the walk back, the planner, why there are none


class Stages(NamedTuple):
    """What the stage search found.

    Attributes:
        stages: The validated candidates, each a list of commands.
        problem: Why there are none (``None`` when there are some).
    """

    stages: list[list[str]]
    problem: str | None


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
    """The objects of the task's class to hide, the one the oracle's plan takes first leading.

    Every one that lies in the open (on a receptacle that cannot be closed), since any of them
    would do the task; where all lie in closed receptacles already, the plan's first one, which
    is then moved to another.
    """
    target = str(built.params.get("object_target", "")).lower()
    objects = sorted(o for o in world.inside if kind(o) == target)
    taken = [c.split(" from ", 1)[0][len("take ") :] for c in plan if c.startswith("take ")]
    first = [o for o in taken if o in objects][:1]
    ordered = first + [o for o in objects if o not in first]
    visible = [o for o in ordered if world.inside[o] not in world.openable]
    return visible or ordered[:1]


def _places(built: Built, world: _World, item: str) -> list[str]:
    """The closed receptacles ``item`` may be hidden in, in the order to try them.

    Openable receptacles the domain lets it into (``canContain``), not where it lies, not of the
    goal's class when the task only moves the object, not the appliance the task needs; one of
    each class before the second of any, appliances and the goal's class last.
    """
    goal = str(built.params.get("parent_target", "")).lower()
    moves_only = built.task_type not in _TRANSFORMS
    needed = _NEEDED.get(built.task_type)
    source = world.inside[item]
    places = sorted(
        r
        for r in world.receptacles
        if r != source
        and r in world.openable
        and world.fits_in(item, r)
        and kind(r) != needed
        and not (moves_only and kind(r) == goal)
    )
    rank: dict[str, int] = defaultdict(int)
    order = []
    for place in places:
        order.append((kind(place) in _APPLIANCES, kind(place) == goal, rank[kind(place)], place))
        rank[kind(place)] += 1
    return [place for *_, place in sorted(order)]


def _holders(world: _World, item: str) -> list[str]:
    """The receptacle classes of this room that can hold ``item`` (open or not), sorted."""
    return sorted({kind(r) for r in world.receptacles if world.fits_in(item, r)})


def _fetch(world: _World, item: str) -> tuple[str, ...]:
    """The commands that pick ``item`` up where it lies (opening and closing its receptacle)."""
    source = world.inside[item]
    closed = source in world.openable and source not in world.opened
    take = (f"go to {source}", *((f"open {source}",) if closed else ()))
    return (*take, f"take {item} from {source}", *((f"close {source}",) if closed else ()))


def _candidates(
    built: Built, world: _World, plan: Sequence[str]
) -> tuple[list[tuple[str, ...]], str | None]:
    """The hiding candidates, one per hiding place, and why there are none (``None`` if some).

    A candidate carries each target object in turn into the same closed receptacle (the agent
    holds one thing at a time), then goes back to where the first one lay.
    """
    targets = _targets(built, world, plan)
    found = []
    if targets:
        fits = [set(_places(built, world, item)) for item in targets]
        for place in _places(built, world, targets[0]):
            if not all(place in f for f in fits):
                continue
            stage: tuple[str, ...] = ()
            for item in targets:
                opening = () if place in world.opened else (f"open {place}",)
                hide = (*opening, f"move {item} to {place}", f"close {place}")
                stage += (*_fetch(world, item), f"go to {place}", *hide)
            found.append((*stage, f"go to {world.inside[targets[0]]}"))
    if found:
        return found, None
    target = str(built.params.get("object_target", "")).lower()
    if not targets:
        return [], f"no {target} lies in a receptacle at the start, so there is nothing to hide"
    item = targets[0]
    holders = ", ".join(_holders(world, item)) or "nothing"
    closable = sorted(
        {kind(r) for r in world.receptacles if r in world.openable and world.fits_in(item, r)}
    )
    if not closable:
        return [], (
            f"no receptacle of this room that can hold the {target} can be closed (the trial's "
            f"canContain lets it into: {holders}), so it cannot be hidden"
        )
    return [], (
        f"the closed receptacles that can hold the {target} ({', '.join(closable)}) are the "
        "goal's or the appliance the task needs, where hiding it would help, so it is not hidden"
    )


def cached_stages(built: Built) -> Stages | None:
    """The stages cached next to the game (by this version of the search), or ``None``."""
    data = read_json(built.folder / "stages.json")
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        return None
    stages, problem = data.get("stages"), data.get("problem")
    if not isinstance(stages, list) or not all(
        isinstance(s, list) and all(isinstance(c, str) for c in s) for s in stages
    ):
        return None
    if not (problem is None or isinstance(problem, str)) or (problem is None) != bool(stages):
        return None
    return Stages(stages, problem)


def find_stages(
    parts: Kit, scratch: Game, built: Built, plan: Sequence[str], budget: int = 50
) -> Stages:
    """Up to :data:`MAX_STAGES` validated hiding stages, or why there are none (cached).

    Args:
        parts: The imported ALFWorld pieces.
        scratch: A private copy of the game (reset and played here).
        built: The built game.
        plan: The oracle's plan from the start (to find the object it takes first).
        budget: The agent's default step budget: a hiding place the oracle needs more steps
            from is not offered.
    """
    cached = cached_stages(built)
    if cached is not None:
        return cached
    with LOCK:
        scratch.reset()
        candidates, problem = _candidates(built, _World(scratch.state()), plan)
        stages: list[list[str]] = []
        tries = 0
        for stage in candidates:
            if len(stages) == MAX_STAGES or tries == _MAX_TRIES:
                break
            tries += 1
            solution = run_expert(parts, scratch, built, stage) or run_planner(scratch, stage)
            if solution is not None and len(solution.commands) <= budget:
                remember(built.key, solution.plans())
                persist(built, solution.plans())
                stages.append(list(stage))
    if candidates and not stages:
        problem = (
            f"the oracle did not win within {budget} steps from any of the {tries} hiding "
            "place(s) tried, so none is offered"
        )
    found = Stages(stages, problem)
    try:
        with file_lock(built.folder / ".lock"):
            write_json(
                built.folder / "stages.json",
                {"format": _FORMAT, "stages": stages, "problem": problem},
            )
    except OSError:
        pass
    return found
