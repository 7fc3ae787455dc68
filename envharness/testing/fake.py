"""``FakeEnv``: a tiny deterministic bridge for tests, customisable with injected callables."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from envharness.core import Action, ActionableEnv, Evaluation, StepResult, ToolSpec
from envharness.errors import (
    BridgeError,
    EpisodeError,
    UnknownTaskError,
)

__all__ = ["FakeEnv"]

StepFn = Callable[["FakeEnv", Action], "StepResult | None"]
ResetFn = Callable[["FakeEnv", "int | None"], "str | None"]


class FakeEnv(ActionableEnv):
    """A small, deterministic bridge for tests: the agent must ``say`` a target word.

    Tools are ``say(text: str)`` and ``noop()``. The state is ``{"said": [...], "steps": n,
    "done": bool}``; the episode terminates with reward 1.0 when the target is said, and
    :meth:`evaluate` succeeds iff it was. Saying an empty text is a well-formed action the
    environment rejects (``info["invalid_action"]``).

    Behaviour can be customised per instance, like Gymnasium's generic test env: ``step_fn(env,
    action)`` runs (after the action is checked against the tools) before the default step, and
    its :class:`~envharness.core.StepResult` is returned as is; returning ``None`` falls through
    to the default. ``reset_fn(env, seed)`` runs after the default reset and may edit
    ``env.state``; a returned string replaces the first observation. Injected callables are not
    part of :meth:`save_state`, so :meth:`from_state` rebuilds the default behaviour; subclass and
    override :meth:`step`/:meth:`reset` for a behaviour that must survive a save and restore.

    The fake is not registered at import. Register it where a test needs it by name::

        envharness.register("fake", FakeEnv)

    :meth:`list_tasks` offers the one task ``"fake"`` in the ``train`` and ``test`` splits, but
    any non-empty task id is accepted, so tests can name their tasks freely.

    Attributes:
        target: The word the agent must say.
        state: The live state; injected callables may edit it.
        observation: The last observation.
        closed: Whether :meth:`close` was called.

    Example:
        >>> env = FakeEnv(target="hi")
        >>> env.reset(seed=0)[0]
        'A quiet room. Say something.'
        >>> env.step(Action("say", {"text": "hi"})).terminated
        True
        >>> env.evaluate().success
        True
    """

    bridge_name: ClassVar[str] = "fake"
    SPLITS: ClassVar[dict[str, tuple[str, ...]]] = {"train": ("fake",), "test": ("fake",)}

    def __init__(
        self,
        task_id: str = "fake",
        *,
        instruction: str | None = None,
        max_steps: int = 10,
        target: str = "hello",
        step_fn: StepFn | None = None,
        reset_fn: ResetFn | None = None,
    ) -> None:
        if not isinstance(task_id, str) or not task_id:
            raise BridgeError(f"expected a non-empty str task_id, got {task_id!r}", bridge="fake")
        if not isinstance(target, str) or not target.strip():
            raise BridgeError(f"expected a non-empty str target, got {target!r}", bridge="fake")
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise BridgeError(
                f"expected a positive int max_steps, got {max_steps!r}", bridge="fake"
            )
        if instruction is not None and not isinstance(instruction, str):
            raise BridgeError(
                f"expected a str instruction, got {type(instruction).__name__}", bridge="fake"
            )
        self.task_id = task_id
        self.target = target
        self.instruction = f"Say the word {target!r}." if instruction is None else instruction
        self.max_steps = max_steps
        self.step_fn = step_fn
        self.reset_fn = reset_fn
        self.state: dict[str, Any] = self._initial_state()
        self.observation = ""
        self.started = False
        self.closed = False

    @classmethod
    def list_tasks(cls, split: str = "train", **options: Any) -> list[str]:
        """Task ids in ``split`` (``train`` or ``test``); ``options`` do not change the list.

        Raises:
            UnknownTaskError: If there is no such split.
        """
        if split not in cls.SPLITS:
            raise UnknownTaskError(
                f"no split {split!r}; splits: {', '.join(cls.SPLITS)}", bridge=cls.bridge_name
            )
        return list(cls.SPLITS[split])

    @staticmethod
    def _initial_state() -> dict[str, Any]:
        return {"said": [], "steps": 0, "done": False}

    def tools(self) -> list[ToolSpec]:
        """``say(text)`` and ``noop()``."""
        return [
            ToolSpec(
                "say",
                "Say something out loud.",
                {
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "What to say."}},
                    "required": ["text"],
                },
            ),
            ToolSpec("noop", "Do nothing.", {"type": "object", "properties": {}}),
        ]

    def reset(self, *, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Starts an episode: nothing said yet.

        Raises:
            EpisodeError: If the env is closed.
        """
        if self.closed:
            raise EpisodeError("the fake env is closed")
        self.state = self._initial_state()
        self.started = True
        self.observation = "A quiet room. Say something."
        if self.reset_fn is not None:
            replaced = self.reset_fn(self, seed)
            if replaced is not None:
                self.observation = replaced
        return self.observation, {"seed": seed}

    def step(self, action: Action) -> StepResult:
        """Says a text or waits.

        Raises:
            InvalidActionError: If the action does not match the tools.
            EpisodeError: If the env is closed, not reset, or the episode has ended.
        """
        if self.closed:
            raise EpisodeError("the fake env is closed")
        if not self.started:
            raise EpisodeError("call reset() before step()")
        if self.state["done"]:
            raise EpisodeError("the episode has ended; call reset()")
        action = self.check_action(action)
        if self.step_fn is not None:
            custom = self.step_fn(self, action)
            if custom is not None:
                if isinstance(custom, StepResult):
                    self.observation = custom.observation
                return custom
        self.state["steps"] += 1
        info: dict[str, Any] = {}
        reward = 0.0
        if action.tool == "noop":
            self.observation = "You wait. Nothing happens."
        elif not action.args["text"].strip():
            self.observation = "You open your mouth, but say nothing."
            info["invalid_action"] = "nothing to say"
        else:
            text = action.args["text"]
            self.state["said"].append(text)
            if text == self.target:
                self.state["done"] = True
                reward = 1.0
                self.observation = f"You said {text!r}. Well done!"
            else:
                self.observation = f"You said {text!r}. Nothing happens."
        return StepResult(self.observation, reward, self.state["done"], False, info)

    def observe(self) -> str:
        """The last observation.

        Raises:
            EpisodeError: If the env was not reset.
        """
        if not self.started:
            raise EpisodeError("call reset() before observe()")
        return self.observation

    def evaluate(self) -> Evaluation:
        """Success iff the target was said."""
        success = self.target in self.state["said"]
        return Evaluation(
            success,
            1.0 if success else 0.0,
            {"target": self.target, "said": len(self.state["said"])},
        )

    def get_env_state(self) -> dict[str, Any]:
        """A deep copy of :attr:`state`."""
        return copy.deepcopy(self.state)

    def env_state_schema(self) -> dict[str, Any]:
        """The schema of :meth:`get_env_state`."""
        return {
            "type": "object",
            "properties": {
                "said": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Everything said so far, in order.",
                },
                "steps": {"type": "integer", "description": "Steps taken this episode."},
                "done": {"type": "boolean", "description": "Whether the target was said."},
            },
            "required": ["said", "steps", "done"],
        }

    def bridge_options(self) -> dict[str, Any]:
        """The options that rebuild this task with ``load_bridge("fake", ...)``."""
        return {"instruction": self.instruction, "max_steps": self.max_steps, "target": self.target}

    def save_state(self) -> dict[str, Any]:
        """A full JSON-able snapshot."""
        return {
            "task_id": self.task_id,
            **self.bridge_options(),
            "started": self.started,
            "observation": self.observation,
            "state": copy.deepcopy(self.state),
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> FakeEnv:
        """Rebuilds an env from :meth:`save_state` output (with the default behaviour).

        Raises:
            BridgeError: If ``state`` is not a snapshot of this bridge.
        """
        keys = {"task_id", "instruction", "max_steps", "target", "started", "observation", "state"}
        if not isinstance(state, Mapping) or set(state) != keys:
            got = sorted(state) if isinstance(state, Mapping) else type(state).__name__
            raise BridgeError(
                f"expected a snapshot with keys {sorted(keys)}, got {got}", bridge="fake"
            )
        env = cls(
            state["task_id"],
            instruction=state["instruction"],
            max_steps=state["max_steps"],
            target=state["target"],
        )
        env.started = bool(state["started"])
        env.observation = str(state["observation"])
        env.state = copy.deepcopy(dict(state["state"]))
        return env

    def oracle_actions(self) -> list[Action]:
        """``[say(target)]``, or nothing once the episode is done."""
        return [] if self.state["done"] else [Action("say", {"text": self.target})]

    def close(self) -> None:
        """Marks the env closed (idempotent)."""
        self.closed = True
