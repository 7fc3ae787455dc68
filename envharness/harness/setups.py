"""``Setups``: change the start state by replaying in-env actions after every reset."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from envharness.core import Action, ActionableEnv
from envharness.errors import EnvHarnessError, SetupError
from envharness.harness.base import EnvHarness

__all__ = ["Setups"]


class Setups(EnvHarness):
    """Replays ``in_env_actions`` through the env below after each ``reset`` (the paper's Stage).

    The replayed steps build the start state the agent sees; they are not agent steps, so they do
    not count against the agent's budget, are not part of the saved episode, and are not counted
    by the bridge (``mark_episode_start`` is called after them). The agent's first observation is
    the env's own description of the staged state (``observe()``), never the last setup step's
    answer, which would read as if the agent had acted. The same seed gives
    the same post-setup state. A replayed action that is rejected (schema mismatch, the
    environment's ``invalid_action`` feedback, a rule blocking it) or that ends the episode raises
    :class:`~envharness.errors.SetupError` naming it: the start state never shifts silently.

    Args:
        env: The env to set up.
        in_env_actions: Actions (``Action`` or ``{"tool", "args"}`` dicts) in the env's own tools.

    Example:
        >>> from envharness import load_bridge
        >>> env = Setups(load_bridge("toy24", task_id="4-4-10-10"),
        ...              [{"tool": "combine", "args": {"a": "10", "op": "*", "b": "10"}}])
        >>> observation, info = env.reset(seed=0)
        >>> info["setup_steps"]
        1
    """

    component_type = "setups"

    def __init__(self, env: ActionableEnv, in_env_actions: Sequence[Action | Mapping[str, Any]]):
        super().__init__(env)
        if isinstance(in_env_actions, str | bytes | Mapping) or not isinstance(
            in_env_actions, Sequence
        ):
            raise SetupError(in_env_actions, 0, "expected a list of actions")
        actions: list[Action] = []
        for index, raw in enumerate(in_env_actions):
            try:
                actions.append(env.check_action(raw))
            except EnvHarnessError as e:
                raise SetupError(raw, index, str(e)) from e
        self.in_env_actions: tuple[Action, ...] = tuple(actions)

    def component_config(self) -> dict[str, Any]:
        """The replayed actions, as dicts."""
        return {"in_env_actions": [a.to_dict() for a in self.in_env_actions]}

    def _reset(self, seed: int | None) -> tuple[str, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed)
        for index, action in enumerate(self.in_env_actions):
            try:
                result = self.env.step(action)
            except EnvHarnessError as e:
                raise SetupError(action, index, f"{type(e).__name__}: {e}") from e
            if result.info.get("blocked"):
                raise SetupError(action, index, f"a rule blocked it: {result.observation!r}")
            if result.info.get("invalid_action"):
                raise SetupError(
                    action, index, f"the environment rejected it: {result.info['invalid_action']}"
                )
            if result.terminated or result.truncated:
                raise SetupError(action, index, "it ended the episode")
        if self.in_env_actions:
            self.env.mark_episode_start()
            observation = self.env.observe()
        info = {**info, "setup_steps": len(self.in_env_actions)}
        return observation, info
