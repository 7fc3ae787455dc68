"""The core contracts: actions, tool schemas, step results, evaluations and ``ActionableEnv``.

Every bridge implements :class:`ActionableEnv`; every harness component is one. The types here are
small, strict and JSON-friendly, because they cross process boundaries (executors, the sandbox)
and end up in trajectories on disk. This module is the bottom layer: it imports no other part of
the package but the errors and the schema checks (an env's serializable description is
:meth:`envharness.harness.HarnessSpec.from_env`, a layer above).
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from envharness.errors import BridgeError, InvalidActionError
from envharness.schema import check_arguments, compile_checker, gemini_schema_problems

if TYPE_CHECKING:
    from typing import Self

__all__ = ["Action", "ActionableEnv", "Evaluation", "StepResult", "ToolSpec"]

_TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


@dataclass(frozen=True)
class Action:
    """One tool call.

    Attributes:
        tool: The tool's name.
        args: The arguments, JSON-able.

    Example:
        >>> Action("combine", {"a": 4, "op": "*", "b": 6})
        Action(tool='combine', args={'a': 4, 'op': '*', 'b': 6})
    """

    tool: str
    args: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.tool, str) or not self.tool:
            raise InvalidActionError(f"expected a non-empty tool name, got {self.tool!r}")
        if not isinstance(self.args, Mapping):
            raise InvalidActionError(
                f"expected args to be a dict, got {type(self.args).__name__}", tool=self.tool
            )
        object.__setattr__(self, "args", dict(self.args))

    def key(self) -> str:
        """A canonical JSON text of the call: equal actions have equal keys."""
        return json.dumps({"tool": self.tool, "args": self.args}, sort_keys=True, default=str)

    def __hash__(self) -> int:
        return hash(self.key())

    def __str__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        return f"{self.tool}({inner})"

    def to_dict(self) -> dict[str, Any]:
        """The action as ``{"tool": ..., "args": {...}}``."""
        return {"tool": self.tool, "args": dict(self.args)}

    @classmethod
    def from_dict(cls, data: Any) -> Action:
        """Builds an action from ``{"tool": ..., "args": {...}}``.

        Raises:
            InvalidActionError: If ``data`` is not of that shape.
        """
        if isinstance(data, Action):
            return data
        if not isinstance(data, Mapping) or "tool" not in data:
            raise InvalidActionError(f"expected {{'tool': str, 'args': dict}}, got {data!r}")
        extra = set(data) - {"tool", "args"}
        if extra:
            raise InvalidActionError(f"unexpected keys {sorted(extra)} in action {dict(data)!r}")
        return cls(data["tool"], data.get("args") or {})


@dataclass(frozen=True)
class ToolSpec:
    """A tool the agent may call, described by a JSON-Schema object in the Gemini-safe subset.

    Attributes:
        name: The tool's name (letters, digits, ``_`` or ``-``; at most 64 characters).
        description: What the tool does, for the model.
        parameters: A JSON-Schema ``object`` describing the arguments.

    Example:
        >>> spec = ToolSpec("act", "Run a text command.", {
        ...     "type": "object",
        ...     "properties": {"command": {"type": "string"}},
        ...     "required": ["command"],
        ... })
        >>> spec.to_openai()["function"]["name"]
        'act'
    """

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _TOOL_NAME.match(self.name):
            raise BridgeError(
                f"expected a tool name of letters, digits, '_' or '-' (≤ 64), got {self.name!r}"
            )
        if not isinstance(self.description, str):
            raise BridgeError(f"tool {self.name!r}: expected a str description")
        problems = gemini_schema_problems(self.parameters)
        if not problems and self.parameters.get("type") != "object":
            problems.append("parameters: expected type 'object'")
        if problems:
            raise BridgeError(
                f"tool {self.name!r} has an unsupported schema: {'; '.join(problems)}"
            )
        object.__setattr__(self, "_fits", compile_checker(self.parameters))

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI function-tool form: ``{"type": "function", "function": {...}}``."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": json.loads(json.dumps(self.parameters)),
            },
        }

    def to_langchain(self) -> dict[str, Any]:
        """The JSON-Schema tool form that LangChain's ``bind_tools`` accepts on every provider.

        It is a titled schema (``title`` = tool name), which ``convert_to_openai_tool`` turns into
        the same function declaration as :meth:`to_openai`; no LangChain import is needed.
        """
        schema = json.loads(json.dumps(self.parameters))
        return {"title": self.name, "description": self.description, **schema}

    def check(self, args: Mapping[str, Any]) -> list[str]:
        """Lists how ``args`` fails this tool's schema (empty when it fits)."""
        if self._fits(args):
            return []
        return check_arguments(args, self.parameters)

    def to_dict(self) -> dict[str, Any]:
        """The spec as a plain dict."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolSpec:
        """Builds a spec from :meth:`to_dict` output."""
        return cls(data["name"], data.get("description", ""), dict(data.get("parameters") or {}))


class StepResult(NamedTuple):
    """What one step returns; unpacks as Gymnasium's 5-tuple and reads by name.

    Attributes:
        observation: The text the agent sees next.
        reward: The bridge's own reward (no harness component may change it).
        terminated: The episode ended in the environment (e.g. the task was solved).
        truncated: The episode was cut short for a reason outside the task.
        info: Extra data; ``info["invalid_action"]`` holds the reason the environment rejected a
            well-formed action, shown to the policy; ``info["blocked"]`` is ``True`` when a rule
            blocked it.
    """

    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


@dataclass(frozen=True)
class Evaluation:
    """What a bridge's own verifier says about the episode.

    Attributes:
        success: Whether the task was accomplished.
        score: A score in the bridge's own scale (1.0/0.0 for pass/fail tasks).
        details: Verifier-specific details, JSON-able.
    """

    success: bool
    score: float
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The evaluation as a plain dict."""
        return {"success": self.success, "score": self.score, "details": dict(self.details)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Evaluation:
        """Builds an evaluation from :meth:`to_dict` output."""
        return cls(bool(data["success"]), float(data["score"]), dict(data.get("details") or {}))


class ActionableEnv(ABC):
    """One environment instance bound to one task, driven by tool calls.

    Bridges and harness components implement this interface. Override the abstract methods; the
    base owns the machinery (:meth:`check_action`, :attr:`unwrapped`, the context manager).
    ``HarnessSpec.from_env(env)`` describes any env as a spec. ``max_steps`` is the task's step
    budget for the agent: the rollout loop enforces it by counting agent steps, so bridges do not
    truncate on it themselves.

    Attributes:
        bridge_name: The name the bridge is registered under (bridges set it).
        task_id: The task this instance plays.
        instruction: The task, in words, for the agent.
        max_steps: The agent's step budget for this task.
    """

    bridge_name: ClassVar[str] = ""
    task_id: str
    instruction: str
    max_steps: int

    # -- override these ---------------------------------------------------------------------

    @abstractmethod
    def tools(self) -> list[ToolSpec]:
        """The tools the agent may call."""

    @abstractmethod
    def reset(self, *, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Starts a new episode and returns ``(observation, info)``."""

    @abstractmethod
    def step(self, action: Action) -> StepResult:
        """Applies one action.

        A well-formed action the environment cannot carry out is answered with feedback and
        ``info["invalid_action"]``: the reason the environment rejected a well-formed action,
        shown to the policy (so say what was wrong and, where it helps, what would work). An
        action that does not match the tool schemas raises.

        Raises:
            InvalidActionError: If the action names an unknown tool or has bad arguments.
            EpisodeError: If no episode is running.
        """

    @abstractmethod
    def observe(self) -> str:
        """The current state, described as a fresh start in it would be; changes nothing.

        Right after :meth:`reset` this is the reset observation. Later it is what ``reset``
        would show if the episode began in the current state (for a text game: the room, where
        the agent is and what it holds), never the last step's answer: ``Setups`` shows it as
        the agent's first observation after replaying its actions, and a policy may be shown it
        as "the world now". An ended episode may say how it ended.

        Raises:
            EpisodeError: Before :meth:`reset`, where there is no state to describe.
        """

    @abstractmethod
    def evaluate(self) -> Evaluation:
        """The bridge's own verdict on the episode so far."""

    @abstractmethod
    def get_env_state(self) -> dict[str, Any]:
        """A JSON-able, read-only view of the state (a fresh copy on every call)."""

    @abstractmethod
    def env_state_schema(self) -> dict[str, Any]:
        """A JSON-Schema describing :meth:`get_env_state`'s output."""

    @abstractmethod
    def save_state(self) -> dict[str, Any]:
        """A JSON-able snapshot from which :meth:`from_state` rebuilds an equal environment."""

    @classmethod
    @abstractmethod
    def from_state(cls, state: Mapping[str, Any]) -> Self:
        """Builds an environment in the state :meth:`save_state` recorded."""

    def close(self) -> None:  # noqa: B027 - optional hook with a no-op default
        """Releases resources (processes, browsers, containers). Idempotent."""

    # -- optional capabilities ----------------------------------------------------------------

    def bridge_options(self) -> dict[str, Any]:
        """The options given to ``load_bridge`` that rebuild this task (JSON-able)."""
        return {}

    def task_fingerprint(self) -> str | None:
        """The hex SHA-256 of everything this task's verifier reads, or ``None``.

        It covers the task record (canonical JSON: ``json.dumps(record, sort_keys=True,
        separators=(",", ":"))``) and the bytes of every data file the verdict depends on (an
        expected workbook, hidden tests, a game file ...; see
        :func:`envharness.bridgekit.fingerprint.task_fingerprint`). Options that do not change
        the verdict (``max_steps``, cache folders, the runtime) do not change it; data that
        changes the verdict does. A spec records it and ``HarnessSpec.build()`` refuses a bridge
        whose fingerprint differs, so options cannot point a spec at another answer key.
        Bridges compute it lazily, once per instance. On a harness stack it is the fingerprint
        of the bridge at the bottom (:attr:`unwrapped`).

        Returns:
            64 lowercase hex digits, or ``None`` (the default) when this bridge cannot say.
        """
        bridge = self.unwrapped
        return None if bridge is self else bridge.task_fingerprint()

    def oracle_actions(self) -> list[Action]:
        """Actions that solve the task from the current state; empty when it cannot be solved.

        Raises:
            BridgeError: If the bridge's domain has no known solution procedure.
        """
        raise BridgeError("this bridge offers no oracle", bridge=self.bridge_name or None)

    def stage_candidates(self) -> list[list[Action]]:
        """Natural start-state perturbations, each a list of in-env actions for ``Setups``."""
        return []

    def mark_episode_start(self) -> None:  # noqa: B027 - optional hook with a no-op default
        """Makes the current state the start of the agent's episode.

        ``Setups`` calls it after replaying its actions (harness components pass it down the
        stack). A bridge that counts steps or moves (in :meth:`evaluate` or
        :meth:`get_env_state`) restarts those counters here, and forgets its "last action", so
        that setup steps are not counted as the agent's; the world itself does not change.
        :meth:`save_state` must record the mark, so that :meth:`from_state` restores equal
        counters. The default does nothing.
        """

    # -- machinery the base owns --------------------------------------------------------------

    @property
    def unwrapped(self) -> ActionableEnv:
        """The bridge at the bottom of a harness stack (the env itself for a bridge)."""
        return self

    def check_action(self, action: Action | Mapping[str, Any]) -> Action:
        """Returns ``action`` as an :class:`Action` after checking it against :meth:`tools`.

        Raises:
            InvalidActionError: Naming the unknown tool or each bad argument.
        """
        action = Action.from_dict(action)
        tools = {t.name: t for t in self.tools()}
        tool = tools.get(action.tool)
        if tool is None:
            raise InvalidActionError(
                f"unknown tool; available tools: {', '.join(sorted(tools))}", tool=action.tool
            )
        problems = tool.check(action.args)
        if problems:
            raise InvalidActionError("; ".join(problems), tool=action.tool)
        return action

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} task={getattr(self, 'task_id', '?')!r}>"
