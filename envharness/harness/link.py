"""``Link``: chain two environments into one longer episode (the paper's Chain)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from envharness.core import Action, ActionableEnv, Evaluation, StepResult, ToolSpec
from envharness.errors import BridgeError, EpisodeError, SpecError
from envharness.harness.base import EnvHarness
from envharness.harness.spec import HarnessSpec

__all__ = ["HandoverCondition", "Link", "LinkMode"]

LinkMode = Literal["sequential", "branch", "switch", "interleave"]
_MODES = ("sequential", "branch", "switch", "interleave")
_BRANCHES = ("success", "failure")


@dataclass(frozen=True)
class HandoverCondition:
    """When a ``switch`` (or ``branch``) link hands over before the first env has ended.

    Any set field that matches triggers the handover, checked after each agent step in the first
    env. The condition is declarative so that the link serializes into a spec.

    Attributes:
        after_steps: Hand over once the agent has taken this many steps in the first env.
        on_tool: Hand over right after the agent calls this tool.
        state_key: A dotted path into the first env's ``get_env_state()``...
        equals: ...hand over when the value there equals this.
    """

    after_steps: int | None = None
    on_tool: str | None = None
    state_key: str | None = None
    equals: Any = None

    def __post_init__(self) -> None:
        if self.after_steps is None and self.on_tool is None and self.state_key is None:
            raise SpecError("a handover condition needs after_steps, on_tool or state_key")
        if self.after_steps is not None and (
            isinstance(self.after_steps, bool)
            or not isinstance(self.after_steps, int)
            or self.after_steps < 1
        ):
            raise SpecError(f"expected after_steps to be a positive int, got {self.after_steps!r}")
        for name in ("on_tool", "state_key"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise SpecError(f"expected {name} to be a non-empty str, got {value!r}")
        try:
            json.dumps(self.equals, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise SpecError(f"expected equals to be a JSON value, got {self.equals!r}") from e

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HandoverCondition:
        """Builds a condition from :meth:`to_dict` output, refusing unknown fields.

        Raises:
            SpecError: Naming an unknown field or a field of the wrong type.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(str(key) for key in data if key not in known)
        if unknown:
            raise SpecError(
                f"unknown handover condition field(s) {', '.join(map(repr, unknown))}; the "
                f"fields are {', '.join(sorted(known))}"
            )
        return cls(**data)

    def matches(self, steps: int, action: Action, state: Mapping[str, Any]) -> bool:
        """Whether the condition holds after ``steps`` agent steps ending with ``action``."""
        if self.after_steps is not None and steps >= self.after_steps:
            return True
        if self.on_tool is not None and action.tool == self.on_tool:
            return True
        if self.state_key is not None:
            value: Any = state
            for part in self.state_key.split("."):
                if not isinstance(value, Mapping) or part not in value:
                    return False
                value = value[part]
            return value == self.equals
        return False

    def describe(self) -> str:
        """The condition in words, for the agent's instruction."""
        parts = []
        if self.after_steps is not None:
            parts.append(f"after {self.after_steps} steps")
        if self.on_tool is not None:
            parts.append(f"when you call {self.on_tool}")
        if self.state_key is not None:
            parts.append(f"when {self.state_key} becomes {self.equals!r}")
        return " or ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The condition's set fields."""
        return {k: v for k, v in asdict(self).items() if v is not None}


class Link(EnvHarness):
    """One episode across two envs; success needs both bridges' verifiers.

    Modes:
        ``sequential``: play ``first``; when it ends, its end is masked and ``second`` is reset
            in its place.
        ``branch``: like sequential, but ``second`` is ``{"success": env, "failure": env}`` and
            the first env's outcome picks one (an optional ``condition`` can end part 1 early).
        ``switch``: ``condition`` (on the action or the first env's state) hands over
            mid-episode; the first env ending also hands over.
        ``interleave``: both envs run at once; the agent alternates between them every
            ``every`` steps (an ended env is skipped) until both have ended.

    The agent sees the union of both envs' tools; a tool the active env lacks is answered with
    feedback. Rewards and end flags come from the active env; the first env's end is masked.
    Rewards always agree with :meth:`evaluate`, which needs both verifiers: once the composite
    task can no longer succeed (part 1 handed over unsolved: a failure branch, an early switch,
    a sequential first part that ended in failure; or, interleaved, a task that ended
    unsolved), the rewards that follow are withheld (``0.0``; the bridge's own value is in
    ``info["link_withheld_reward"]``).

    Args:
        first: The env played first (the stack below this component).
        second: The env played second, or for ``branch`` a mapping of outcome to env.
        mode: One of ``sequential``, ``branch``, ``switch``, ``interleave``.
        condition: A :class:`HandoverCondition` (or its dict), required for ``switch``.
        every: For ``interleave``, the number of agent steps before switching env.

    Example:
        >>> from envharness import load_bridge
        >>> env = Link(load_bridge("toy24", task_id="4-4-10-10"),
        ...            load_bridge("toy24", task_id="3-3-8-8"))
        >>> env.task_id
        '4-4-10-10+3-3-8-8'
    """

    component_type = "link"
    config_fields = frozenset({"mode", "second", "condition", "every"})

    def __init__(
        self,
        first: ActionableEnv,
        second: ActionableEnv | Mapping[str, ActionableEnv],
        mode: LinkMode = "sequential",
        *,
        condition: HandoverCondition | Mapping[str, Any] | None = None,
        every: int = 1,
    ) -> None:
        super().__init__(first)
        if mode not in _MODES:
            raise SpecError(f"expected mode to be one of {', '.join(_MODES)}, got {mode!r}")
        self.mode: LinkMode = mode
        if mode == "branch":
            if not isinstance(second, Mapping) or set(second) != set(_BRANCHES):
                raise SpecError("a branch link expects second={'success': env, 'failure': env}")
            self.branches: dict[str, ActionableEnv] = dict(second)
        else:
            if not isinstance(second, ActionableEnv):
                raise SpecError(f"expected second to be an ActionableEnv, got {second!r}")
            self.branches = {"next": second}
        for env in self.branches.values():
            if not isinstance(env, ActionableEnv):
                raise SpecError(f"expected an ActionableEnv, got {type(env).__name__}")
        if isinstance(condition, Mapping):
            condition = HandoverCondition.from_dict(condition)
        elif condition is not None and not isinstance(condition, HandoverCondition):
            raise SpecError(
                f"expected condition to be a HandoverCondition or its dict, got {condition!r}"
            )
        if mode == "switch" and condition is None:
            raise SpecError("a switch link needs a condition, e.g. {'after_steps': 3}")
        if mode in ("sequential", "interleave") and condition is not None:
            raise SpecError(f"a {mode} link takes no condition; use mode='switch'")
        self.condition = condition
        if not isinstance(every, int) or every < 1:
            raise SpecError(f"expected every to be a positive int, got {every!r}")
        self.every = every
        self._tools = self._union_tools()
        self._tool_names = {
            id(env): frozenset(t.name for t in env.tools())
            for env in (self.env, *self.branches.values())
        }
        self._active: ActionableEnv | None = None
        self._second: ActionableEnv | None = None
        self._seed: int | None = None
        self._stage_steps = 0
        self._ended: set[int] = set()
        self._lost = False  # the composite task can no longer succeed

    @property
    def first(self) -> ActionableEnv:
        """The env played first."""
        return self.env

    def _union_tools(self) -> list[ToolSpec]:
        tools: dict[str, ToolSpec] = {}
        for env in (self.env, *self.branches.values()):
            for tool in env.tools():
                known = tools.get(tool.name)
                if known is not None and known.parameters != tool.parameters:
                    raise BridgeError(
                        f"cannot link: tool {tool.name!r} has different schemas in the two envs"
                    )
                tools.setdefault(tool.name, tool)
        return list(tools.values())

    # -- serialization ---------------------------------------------------------------------------

    def component_config(self) -> dict[str, Any]:
        """The mode, the second env's spec(s), the condition and the interleave period."""
        if self.mode == "branch":
            second: Any = {k: HarnessSpec.from_env(e).to_dict() for k, e in self.branches.items()}
        else:
            second = HarnessSpec.from_env(self.branches["next"]).to_dict()
        config: dict[str, Any] = {"mode": self.mode, "second": second}
        if self.condition is not None:
            config["condition"] = self.condition.to_dict()
        if self.mode == "interleave":
            config["every"] = self.every
        return config

    @classmethod
    def from_config(cls, env: ActionableEnv, config: Mapping[str, Any]) -> Link:
        """Rebuilds the link, building the second env(s) from their specs."""
        if "second" not in config:
            raise SpecError("a link component needs 'second'")
        raw = config["second"]
        mode = config.get("mode", "sequential")
        if mode == "branch":
            if not isinstance(raw, Mapping):
                raise SpecError("a branch link needs second={'success': spec, 'failure': spec}")
            second: Any = {k: HarnessSpec.from_dict(v).build() for k, v in raw.items()}
        else:
            second = HarnessSpec.from_dict(raw).build()
        return cls(
            env, second, mode, condition=config.get("condition"), every=config.get("every", 1)
        )

    # -- the combined task -----------------------------------------------------------------------

    @property
    def task_id(self) -> str:  # type: ignore[override]
        """Both tasks' ids joined by ``+`` (branches in parentheses)."""
        if self.mode == "branch":
            s, f = self.branches["success"].task_id, self.branches["failure"].task_id
            return f"{self.env.task_id}+({s}|{f})"
        return f"{self.env.task_id}+{self.branches['next'].task_id}"

    @property
    def instruction(self) -> str:  # type: ignore[override]
        """Both instructions, with how the episode moves from one to the other."""
        first = self.env.instruction
        if self.mode == "interleave":
            second = self.branches["next"].instruction
            return (
                "You work on two tasks at once; each observation says which task your next "
                f"action applies to.\nTask A: {first}\nTask B: {second}"
            )
        if self.mode == "branch":
            return (
                f"This episode has two parts.\nPart 1: {first}\nPart 2 depends on how part 1 "
                "ends; its instruction is shown when it starts."
            )
        when = "when part 1 ends"
        if self.condition is not None:
            when = f"{self.condition.describe()}, or {when}"
        second = self.branches["next"].instruction
        return f"This episode has two parts.\nPart 1: {first}\nPart 2 starts {when}: {second}"

    @property
    def max_steps(self) -> int:  # type: ignore[override]
        """The two budgets added (the larger branch for ``branch``)."""
        return self.env.max_steps + max(env.max_steps for env in self.branches.values())

    def tools(self) -> list[ToolSpec]:
        """The union of both envs' tools."""
        return list(self._tools)

    # -- episode ---------------------------------------------------------------------------------

    def _reset(self, seed: int | None) -> tuple[str, dict[str, Any]]:
        self._seed = seed
        self._stage_steps = 0
        self._ended = set()
        self._lost = False
        self._second = None
        observation, info = self.env.reset(seed=seed)
        self._active = self.env
        if self.mode == "interleave":
            second = self.branches["next"]
            second_observation, _ = second.reset(seed=seed)
            self._second = second
            observation = f"[Task A]\n{observation}\n\n[Task B]\n{second_observation}\n\n" + (
                "Your next action applies to task A."
            )
        return observation, {**info, "link_stage": "first"}

    def _step(self, action: Action) -> StepResult:
        result = self._route(action)
        if self._lost and result.reward != 0.0 and "handover" not in result.info:
            # The composite verdict is already a failure: a reward now would contradict it.
            info = {**result.info, "link_withheld_reward": result.reward}
            return result._replace(reward=0.0, info=info)
        return result

    def _route(self, action: Action) -> StepResult:
        active = self._active
        if active is None:
            raise EpisodeError(f"{self!r}: call reset() before step()")
        if action.tool not in self._tool_names[id(active)]:
            self.check_action(action)  # raises for a tool no env has, or bad arguments
            note = f"The tool {action.tool!r} is not available in this part of the episode."
            return StepResult(note, 0.0, False, False, {"invalid_action": note})
        result = active.step(action)
        self._stage_steps += 1
        if self.mode == "interleave":
            return self._after_interleaved_step(result)
        if active is self.env and (
            result.terminated
            or (
                self.condition is not None
                and self.condition.matches(self._stage_steps, action, self.env.get_env_state())
            )
        ):
            return self._hand_over(result)
        return result

    def _hand_over(self, result: StepResult) -> StepResult:
        first_won = self.env.evaluate().success
        self._lost = not first_won
        if self.mode == "branch":
            outcome = "success" if first_won else "failure"
            second = self.branches[outcome]
        else:
            outcome = "next"
            second = self.branches["next"]
        second_observation, _ = second.reset(seed=self._seed)
        self._second = second
        self._active = second
        self._stage_steps = 0
        observation = (
            f"{result.observation}\n\n--- Part 1 is over. Part 2 ---\n{second.instruction}\n\n"
            f"{second_observation}"
        )
        info = {**result.info, "link_stage": "second", "handover": outcome}
        # The first env's end is masked: the episode goes on in the second env.
        return StepResult(observation, result.reward, False, False, info)

    def _after_interleaved_step(self, result: StepResult) -> StepResult:
        envs = (self.env, self.branches["next"])
        index = 0 if self._active is self.env else 1
        if result.terminated or result.truncated:
            self._ended.add(index)
            if not envs[index].evaluate().success:
                self._lost = True
        if len(self._ended) == 2:
            return result._replace(info={**result.info, "link_stage": "done"})
        label = "AB"[index]
        nxt = index
        if index in self._ended or self._stage_steps >= self.every:
            other = 1 - index
            if other not in self._ended:
                nxt = other
            self._stage_steps = 0
        self._active = envs[nxt]
        observation = (
            f"[Task {label}]\n{result.observation}\n\nYour next action applies to task {'AB'[nxt]}."
        )
        if nxt != index:
            observation += f"\n[Task {'AB'[nxt]}]\n{envs[nxt].observe()}"
        return StepResult(
            observation, result.reward, False, False, {**result.info, "link_stage": "AB"[nxt]}
        )

    def observe(self) -> str:
        """The active env's description of its state; in ``interleave`` mode, both envs'.

        Interleaved, it reads as the reset observation does: both tasks, labelled, and which one
        the next action applies to.
        """
        active = self._active
        if active is None:
            return self.env.observe()
        if self.mode != "interleave":
            return active.observe()
        second = self.branches["next"]
        label = "A" if active is self.env else "B"
        return (
            f"[Task A]\n{self.env.observe()}\n\n[Task B]\n{second.observe()}\n\n"
            f"Your next action applies to task {label}."
        )

    def _mark_episode_start(self) -> None:
        """Marks the episode's start in the env(s) playing now; the link's step count restarts."""
        self._stage_steps = 0
        envs = [self._active or self.env]
        if self.mode == "interleave" and self._second is not None:
            envs = [self.env, self._second]
        for env in envs:
            env.mark_episode_start()

    def evaluate(self) -> Evaluation:
        """Success iff both bridges' verifiers say so (first env and the second it reached)."""
        first = self.env.evaluate()
        second = self._second.evaluate() if self._second is not None else None
        success = first.success and second is not None and second.success
        score = (first.score + (second.score if second is not None else 0.0)) / 2
        details = {
            "mode": self.mode,
            "first": first.to_dict(),
            "second": second.to_dict() if second is not None else None,
        }
        return Evaluation(success, score, details)

    def get_env_state(self) -> dict[str, Any]:
        """Both envs' states and which one is active."""
        stage = "first" if self._active is None or self._active is self.env else "second"
        branch = None
        if self.mode == "branch" and self._second is not None:
            branch = next(k for k, env in self.branches.items() if env is self._second)
        return {
            "mode": self.mode,
            "active": stage,
            "branch": branch,
            "first": self.env.get_env_state(),
            "second": self._second.get_env_state() if self._second is not None else None,
        }

    def env_state_schema(self) -> dict[str, Any]:
        """The link's state: the two envs' schemas side by side."""
        seconds = [env.env_state_schema() for env in self.branches.values()]
        second = seconds[0] if all(s == seconds[0] for s in seconds) else {"type": "object"}
        return {
            "type": "object",
            "description": f"Two envs linked in {self.mode} mode.",
            "properties": {
                "mode": {"type": "string", "description": "The link mode."},
                "active": {
                    "type": "string",
                    "enum": ["first", "second"],
                    "description": "Which env the next action goes to.",
                },
                "branch": {
                    "type": "string",
                    "nullable": True,
                    "description": "For branch links: the branch taken (null before handover).",
                },
                "first": self.env.env_state_schema(),
                "second": {
                    **second,
                    "nullable": True,
                    "description": "The second env's state (null before it starts).",
                },
            },
            "required": ["mode", "active", "branch", "first", "second"],
        }

    def oracle_actions(self) -> list[Action]:
        """The active env's oracle."""
        return (self._active or self.env).oracle_actions()

    def close(self) -> None:
        """Closes both envs."""
        self.env.close()
        for env in self.branches.values():
            env.close()

    def __repr__(self) -> str:
        seconds = ", ".join(repr(env) for env in self.branches.values())
        return f"<Link[{self.mode}]{self.env!r}, {seconds}>"
