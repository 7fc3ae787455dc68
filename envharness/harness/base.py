"""``EnvHarness``: the base of every harness component.

A component holds the env below it and delegates every method explicitly (no ``__getattr__``
forwarding), overriding only what it changes. The base owns the episode bookkeeping that makes any
stack saveable: it records the reset seed and the agent's actions, so :meth:`save_state` is the
stack's spec plus that replay log, and :meth:`from_state` rebuilds the stack and replays it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from envharness.core import Action, ActionableEnv, Evaluation, StepResult, ToolSpec
from envharness.errors import EpisodeError, SpecError
from envharness.harness.spec import HarnessSpec

__all__ = ["EnvHarness"]


class EnvHarness(ActionableEnv):
    """A component stacked over an env; itself an :class:`ActionableEnv`.

    Subclasses set :attr:`component_type`, implement :meth:`component_config` and
    :meth:`from_config` (so the stack serializes as a :class:`~envharness.harness.HarnessSpec`),
    and override ``_reset``/``_step`` or any other method whose behaviour they change.

    Example:
        >>> from envharness import load_bridge
        >>> from envharness.harness import Setups
        >>> env = Setups(load_bridge("toy24", task_id="4-4-10-10"),
        ...              [{"tool": "combine", "args": {"a": "10", "op": "*", "b": "10"}}])
        >>> env
        <Setups<Toy24Env task='4-4-10-10'>>
    """

    component_type: ClassVar[str] = ""

    def __init__(self, env: ActionableEnv) -> None:
        if not isinstance(env, ActionableEnv):
            raise TypeError(f"expected an ActionableEnv to wrap, got {type(env).__name__}")
        self.env = env
        self._episode_seed: int | None = None
        self._episode_actions: list[dict[str, Any]] = []
        self._episode_mark: int | None = None  # agent actions before mark_episode_start()
        self._episode_started = False

    # -- serialization: override these ------------------------------------------------------------

    def component_config(self) -> dict[str, Any]:
        """This component's own settings, JSON-able (the env below is not included)."""
        return {}

    @classmethod
    def from_config(cls, env: ActionableEnv, config: Mapping[str, Any]) -> EnvHarness:
        """Rebuilds the component over ``env`` from :meth:`component_config` output."""
        try:
            return cls(env, **config)
        except TypeError as e:
            raise SpecError(f"bad config for component {cls.component_type!r}: {e}") from e

    # -- episode: override _reset / _step ---------------------------------------------------------

    def reset(self, *, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Starts a new episode (records the seed so the episode can be saved and replayed)."""
        self._episode_seed = seed
        self._episode_actions = []
        self._episode_mark = None
        self._episode_started = True
        return self._reset(seed)

    def step(self, action: Action) -> StepResult:
        """Applies one agent action (recorded for :meth:`save_state`)."""
        if not self._episode_started:
            raise EpisodeError(f"{self!r}: call reset() before step()")
        action = Action.from_dict(action)
        result = self._step(action)
        self._episode_actions.append(action.to_dict())
        return result

    def _reset(self, seed: int | None) -> tuple[str, dict[str, Any]]:
        return self.env.reset(seed=seed)

    def _step(self, action: Action) -> StepResult:
        return self.env.step(action)

    # -- explicit delegation ----------------------------------------------------------------------

    @property
    def unwrapped(self) -> ActionableEnv:
        """The bridge at the bottom of the stack."""
        return self.env.unwrapped

    @property
    def bridge_name(self) -> str:  # type: ignore[override]
        """The name of the bridge at the bottom of the stack."""
        return self.unwrapped.bridge_name

    @property
    def task_id(self) -> str:  # type: ignore[override]
        """The task of the env below."""
        return self.env.task_id

    @property
    def instruction(self) -> str:  # type: ignore[override]
        """The instruction of the env below."""
        return self.env.instruction

    @property
    def max_steps(self) -> int:  # type: ignore[override]
        """The agent's step budget of the env below."""
        return self.env.max_steps

    def tools(self) -> list[ToolSpec]:
        """The tools of the env below."""
        return self.env.tools()

    def observe(self) -> str:
        """The env below's description of the current state."""
        return self.env.observe()

    def evaluate(self) -> Evaluation:
        """The verdict of the bridge's own verifier (components never change it)."""
        return self.env.evaluate()

    def get_env_state(self) -> dict[str, Any]:
        """The state view of the env below."""
        return self.env.get_env_state()

    def env_state_schema(self) -> dict[str, Any]:
        """The state schema of the env below."""
        return self.env.env_state_schema()

    def bridge_options(self) -> dict[str, Any]:
        """The bridge options of the env below."""
        return self.env.bridge_options()

    def oracle_actions(self) -> list[Action]:
        """The oracle of the env below (privileged; for calibrated test policies)."""
        return self.env.oracle_actions()

    def stage_candidates(self) -> list[list[Action]]:
        """The start-state perturbations the env below offers."""
        return self.env.stage_candidates()

    def mark_episode_start(self) -> None:
        """Marks the episode's start in the stack below (recorded for :meth:`save_state`)."""
        self._episode_mark = len(self._episode_actions)
        self._mark_episode_start()

    def _mark_episode_start(self) -> None:
        """Passes the mark down (override to also restart this component's own counters)."""
        self.env.mark_episode_start()

    def close(self) -> None:
        """Closes the env below."""
        self.env.close()

    # -- save / restore by replay -----------------------------------------------------------------

    def save_state(self) -> dict[str, Any]:
        """The stack's spec, the seed and the agent actions so far (replayed on restore).

        ``mark`` says after how many of them :meth:`mark_episode_start` was called (``None``:
        never).

        Raises:
            SpecError: If a component of the stack cannot be serialized.
        """
        return {
            "harness": HarnessSpec.from_env(self).to_dict(),
            "started": self._episode_started,
            "seed": self._episode_seed,
            "actions": [dict(a) for a in self._episode_actions],
            "mark": self._episode_mark,
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> EnvHarness:
        """Rebuilds the stack from :meth:`save_state` output and replays its episode.

        Raises:
            SpecError: If ``state`` is not a harness snapshot.
        """
        if not isinstance(state, Mapping) or "harness" not in state:
            raise SpecError("expected a harness snapshot from EnvHarness.save_state()")
        env = HarnessSpec.from_dict(state["harness"]).build()
        if not isinstance(env, EnvHarness):
            raise SpecError("the snapshot's spec has no harness components")
        mark = state.get("mark")
        if mark is not None and (isinstance(mark, bool) or not isinstance(mark, int) or mark < 0):
            raise SpecError(f"expected the snapshot's 'mark' to be null or an int, got {mark!r}")
        if state.get("started"):
            env.reset(seed=state.get("seed"))
            for index, action in enumerate(state.get("actions", [])):
                if index == mark:
                    env.mark_episode_start()
                env.step(Action.from_dict(action))
            if mark is not None and mark >= len(state.get("actions", [])):
                env.mark_episode_start()
        return env

    def __repr__(self) -> str:
        return f"<{type(self).__name__}{self.env!r}>"
