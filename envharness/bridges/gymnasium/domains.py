"""How the bridge reads a family of Gymnasium envs: action names, text, state fields, verdicts.

A :class:`Domain` answers for one family (FrozenLake, Taxi, ...): the tools' names, the words
that describe an observation, the decoded state fields, what counts as success, and, where the
domain has one, an oracle and start-state perturbations. :func:`domain_for` picks the domain by
the unwrapped env's class (subclasses included); anything else gets :class:`GenericDomain`, whose
single tool is ``act(action)`` and whose success rule is "terminated with a positive return".
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from envharness.bridges.gymnasium._loader import BRIDGE
from envharness.errors import BridgeError

__all__ = ["Domain", "GenericDomain", "Moment", "domain_for", "register_domain"]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_ACTION_LINE = re.compile(r"^\s*\([A-Za-z ]+\)\s*$")
_NAME = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class Moment:
    """The episode as a domain sees it (observations in their JSON form).

    Attributes:
        raw: The last observation.
        previous: The observation before the last action (``None`` after reset).
        action: The last action's index in the action space (``None`` after reset).
        reward: The last reward.
        total_reward: The return so far.
        steps: Env steps this episode.
        terminated: Whether the env terminated.
        truncated: Whether gymnasium's time limit truncated the episode.

    Example:
        >>> moment = Moment(raw=5, previous=4, action=2, steps=1)
        >>> moment.ended, moment.total_reward
        (False, 0.0)
    """

    raw: Any
    previous: Any = None
    action: int | None = None
    reward: float = 0.0
    total_reward: float = 0.0
    steps: int = 0
    terminated: bool = False
    truncated: bool = False

    @property
    def ended(self) -> bool:
        """Whether the episode is over."""
        return self.terminated or self.truncated


def shortest_plan(
    start: Any, successors: Callable[[Any], Iterable[tuple[int, Any, str | None]]]
) -> list[int] | None:
    """Breadth-first search: the fewest actions from ``start`` to a ``"goal"`` outcome.

    ``successors(state)`` yields ``(action, next_state, outcome)`` with outcome ``"goal"``,
    ``"fail"`` (a dead end) or ``None``. Ties go to the lower action index. ``None`` when no
    goal can be reached.

    Example:
        >>> line = lambda s: [(0, s - 1, None), (1, s + 1, "goal" if s + 1 == 3 else None)]
        >>> shortest_plan(0, line)
        [1, 1, 1]
    """
    parents: dict[Any, tuple[Any, int] | None] = {start: None}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        for action, after, outcome in successors(state):
            if outcome == "goal":
                plan = [action]
                link = parents[state]
                while link is not None:
                    state, step = link
                    plan.append(step)
                    link = parents[state]
                return plan[::-1]
            if outcome == "fail" or after in parents:
                continue
            parents[after] = (state, action)
            queue.append(after)
    return None


def tool_name(text: str) -> str:
    """A tool name from an action meaning.

    Example:
        >>> tool_name("UPRIGHT"), tool_name("No op")
        ('upright', 'no_op')
    """
    return _NAME.sub("_", text.strip().lower()).strip("_")[:64]


class Domain:
    """The generic reading of an env; subclasses override what their family knows.

    A subclass lists the env classes it reads in :attr:`classes` and is added with
    :func:`register_domain`; the bridge then uses it for those envs and their subclasses.

    Args:
        env_id: The task id.
        env: The unwrapped gymnasium env (read-only use: the bridge owns it).

    Example:
        >>> import gymnasium
        >>> env = gymnasium.make("FrozenLake-v1", is_slippery=False)
        >>> domain = domain_for("FrozenLake-v1", env.unwrapped)
        >>> domain.family, [name for name, _ in domain.actions()][:2]
        ('frozen_lake', ['move_left', 'move_down'])
        >>> domain.oracle(Moment(raw=14))
        [2]
    """

    family: ClassVar[str] = "generic"
    classes: ClassVar[tuple[str, ...]] = ()
    """``"module:Class"`` paths of the env classes (and their subclasses) this domain reads."""

    def __init__(self, env_id: str, env: Any) -> None:
        self.env_id = env_id
        self.env = env
        self.n = int(env.action_space.n)

    @classmethod
    def check_kwargs(cls, env_kwargs: Mapping[str, Any]) -> None:
        """Rejects ``env_kwargs`` that would make the env impossible to replay exactly."""

    def actions(self) -> list[tuple[str, str]] | None:
        """``(tool name, description)`` per action, or ``None`` for the generic ``act`` tool."""
        meanings = getattr(self.env, "get_action_meanings", None)
        if not callable(meanings):
            return None
        try:
            names = [tool_name(str(m)) for m in meanings()]
        except Exception:  # an env whose meanings need a live episode: fall back to act()
            return None
        if len(names) != self.n or len(set(names)) != self.n or not all(names):
            return None
        return [(name, f"Action {i}: {name.replace('_', ' ')}.") for i, name in enumerate(names)]

    def instruction(self) -> str:
        """What the agent is asked to do (the bridge appends how to call the tools)."""
        return (
            f"Play the Gymnasium environment {self.env_id} and collect as much reward as you can. "
            "Success means the episode terminates with a positive total reward."
        )

    def picture(self, rendering: str | None) -> str:
        """The env's ANSI rendering as plain text (colours and action echo lines removed)."""
        if not rendering:
            return ""
        lines = _ANSI.sub("", rendering).splitlines()
        kept = [line.rstrip() for line in lines if not _ACTION_LINE.match(line)]
        return "\n".join(kept).strip("\n")

    def describe(self, moment: Moment) -> str:
        """Words for the current observation."""
        return f"Observation: {format_value(moment.raw)}"

    def outcome(self, moment: Moment) -> str | None:
        """A word for how the episode ended (``None`` while it runs)."""
        if moment.terminated:
            return "success" if self.success(moment) else "terminated"
        return "time_limit" if moment.truncated else None

    def ending(self, moment: Moment) -> str:
        """The sentence that tells the agent how the episode ended."""
        if moment.truncated and not moment.terminated:
            return "the time limit was reached"
        verdict = "success" if self.success(moment) else "no success"
        return f"it ended with a total reward of {moment.total_reward:g} ({verdict})"

    def success(self, moment: Moment) -> bool:
        """The verdict: terminated with a positive total reward."""
        return moment.terminated and moment.total_reward > 0

    def fields(self, moment: Moment) -> dict[str, Any]:
        """Decoded state fields (JSON), added to ``get_env_state()``."""
        return {}

    def field_schemas(self) -> dict[str, Any]:
        """The JSON-Schema of each field of :meth:`fields`."""
        return {}

    def oracle(self, moment: Moment) -> list[int]:
        """Action indexes that solve the task from here (``[]`` when ended or unreachable).

        Raises:
            BridgeError: If the domain has no known solution procedure.
        """
        raise BridgeError(
            f"no oracle for {self.env_id!r}: oracles exist for FrozenLake, CliffWalking, Taxi "
            "and Blackjack",
            bridge=BRIDGE,
        )

    def stages(self, moment: Moment) -> list[list[int]]:
        """Start-state perturbations as action-index lists (none by default)."""
        return []


class GenericDomain(Domain):
    """Any env with a Discrete action space: ``act(action)`` and numbers as text."""


def format_value(value: Any, labels: list[str] | None = None) -> str:
    """Numbers for reading: ``0.01234`` → ``0.01234``, lists joined, labels when known.

    Example:
        >>> format_value([0.5, -1.25], ["position", "velocity"])
        'position 0.5, velocity -1.25'
    """
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        shown = [format_value(v) for v in value]
        if labels and len(labels) == len(shown):
            return ", ".join(f"{label} {text}" for label, text in zip(labels, shown, strict=True))
        return "[" + ", ".join(shown) + "]"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {format_value(v)}" for k, v in value.items())
    return "none" if value is None else str(value)


class _ClassicControl(Domain):
    """Classic-control envs: named actions and labelled numbers; no oracle."""

    names: ClassVar[tuple[tuple[str, str], ...]] = ()
    labels: ClassVar[tuple[str, ...]] = ()
    task: ClassVar[str] = ""

    def actions(self) -> list[tuple[str, str]] | None:
        return list(self.names) if len(self.names) == self.n else None

    def instruction(self) -> str:
        return self.task

    def describe(self, moment: Moment) -> str:
        return f"Observation: {format_value(moment.raw, list(self.labels))}."


class CartPoleDomain(_ClassicControl):
    """CartPole: keep the pole up; success is lasting until gymnasium's time limit."""

    family = "cart_pole"
    classes = ("gymnasium.envs.classic_control.cartpole:CartPoleEnv",)
    names = (
        ("push_left", "Push the cart to the left."),
        ("push_right", "Push the cart to the right."),
    )
    labels = ("cart position", "cart velocity", "pole angle (rad)", "pole angular velocity")
    task = (
        "Keep the pole balanced upright on the cart. Each step you push the cart left or right; "
        "you get +1 per step. The episode fails when the pole tilts more than 12 degrees or the "
        "cart leaves the track; success is keeping it up until the time limit."
    )

    def success(self, moment: Moment) -> bool:
        """Success: still balancing when the time limit truncated the episode."""
        return moment.truncated and not moment.terminated


class MountainCarDomain(_ClassicControl):
    """MountainCar: reach the flag on the right hill; success is terminating."""

    family = "mountain_car"
    classes = ("gymnasium.envs.classic_control.mountain_car:MountainCarEnv",)
    names = (
        ("accelerate_left", "Accelerate to the left."),
        ("coast", "Do not accelerate."),
        ("accelerate_right", "Accelerate to the right."),
    )
    labels = ("position", "velocity")
    task = (
        "Drive the underpowered car up the right hill to the flag at position 0.5. The engine is "
        "too weak to climb directly: build momentum by rocking back and forth. -1 per step."
    )

    def success(self, moment: Moment) -> bool:
        """Success: the car reached the flag (the env terminated)."""
        return moment.terminated


class AcrobotDomain(_ClassicControl):
    """Acrobot: swing the free end above the line; success is terminating."""

    family = "acrobot"
    classes = ("gymnasium.envs.classic_control.acrobot:AcrobotEnv",)
    names = (
        ("torque_negative", "Apply torque -1 to the joint between the two links."),
        ("no_torque", "Apply no torque."),
        ("torque_positive", "Apply torque +1 to the joint between the two links."),
    )
    labels = (
        "cos(theta1)",
        "sin(theta1)",
        "cos(theta2)",
        "sin(theta2)",
        "theta1 velocity",
        "theta2 velocity",
    )
    task = (
        "Swing the two-link arm so its free end rises above the line one link length above the "
        "base. You act by applying torque to the middle joint. -1 per step until you succeed."
    )

    def success(self, moment: Moment) -> bool:
        """Success: the free end reached the height (the env terminated)."""
        return moment.terminated


_DOMAINS: list[type[Domain]] = [CartPoleDomain, MountainCarDomain, AcrobotDomain]


def register_domain(domain: type[Domain]) -> None:
    """Adds a domain; later registrations win over earlier ones for the same class.

    Raises:
        BridgeError: If ``domain`` is not a :class:`Domain` subclass.
    """
    if not (isinstance(domain, type) and issubclass(domain, Domain)):
        raise BridgeError(f"expected a Domain subclass, got {domain!r}", bridge=BRIDGE)
    _DOMAINS.insert(0, domain)


def domain_class(env: Any) -> type[Domain]:
    """The domain class for an unwrapped env (matched along its class's MRO)."""
    paths = {f"{c.__module__}:{c.__qualname__}" for c in type(env).__mro__}
    for domain in _DOMAINS:
        if paths & set(domain.classes):
            return domain
    return GenericDomain


def domain_for(env_id: str, env: Any) -> Domain:
    """The domain that reads ``env`` (the unwrapped gymnasium env)."""
    return domain_class(env)(env_id, env)
