"""``Setups``: change the start state by replaying in-env actions after every reset."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from envharness.core import Action, ActionableEnv
from envharness.errors import EnvHarnessError, SetupError, SpecError
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

    Setups may not do the agent's task: a start state the bridge's verifier already scores as a
    success (``evaluate().success`` after the replay) raises ``SetupError``, and so does a replay
    that crosses a :class:`~envharness.harness.Link` into its second task (a handover, or an
    interleaved action that lands in task B) unless ``cross_link=True`` says so explicitly
    (stored in the spec).

    Args:
        env: The env to set up.
        in_env_actions: Actions (``Action`` or ``{"tool", "args"}`` dicts) in the env's own tools.
        cross_link: Allow the replay to play into a Link's second task.

    Example:
        >>> from envharness import load_bridge
        >>> env = Setups(load_bridge("toy24", task_id="4-4-10-10"),
        ...              [{"tool": "combine", "args": {"a": "10", "op": "*", "b": "10"}}])
        >>> observation, info = env.reset(seed=0)
        >>> info["setup_steps"]
        1
    """

    component_type = "setups"

    def __init__(
        self,
        env: ActionableEnv,
        in_env_actions: Sequence[Action | Mapping[str, Any]],
        *,
        cross_link: bool = False,
    ):
        super().__init__(env)
        if not isinstance(cross_link, bool):
            raise SetupError(in_env_actions, 0, f"cross_link must be a bool, got {cross_link!r}")
        self.cross_link = cross_link
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

    config_fields = frozenset({"in_env_actions", "cross_link"})

    def component_config(self) -> dict[str, Any]:
        """The replayed actions, as dicts, and ``cross_link`` when it is on."""
        config: dict[str, Any] = {"in_env_actions": [a.to_dict() for a in self.in_env_actions]}
        if self.cross_link:
            config["cross_link"] = True
        return config

    @classmethod
    def from_config(cls, env: ActionableEnv, config: dict[str, Any]) -> Setups:
        """Rebuilds the component from :meth:`component_config` output."""
        if "in_env_actions" not in config:
            raise SpecError("a setups component needs 'in_env_actions'")
        cross_link = config.get("cross_link", False)
        if not isinstance(cross_link, bool):
            raise SpecError(f"setups 'cross_link': expected true or false, got {cross_link!r}")
        return cls(env, config["in_env_actions"], cross_link=cross_link)

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
            if not self.cross_link and _crosses_link(result.info, index, len(self.in_env_actions)):
                raise SetupError(
                    action,
                    index,
                    "it plays into the Link's second task; Setups set up part 1 only unless "
                    "built with cross_link=True",
                )
        if self.in_env_actions and self.env.evaluate().success:
            last = len(self.in_env_actions) - 1
            raise SetupError(
                self.in_env_actions[last],
                last,
                "after the replay the task is already solved (the verifier passes before the "
                "agent acts); a start state must leave the task to the agent",
            )
        if self.in_env_actions:
            self.env.mark_episode_start()
            observation = self.env.observe()
        info = {**info, "setup_steps": len(self.in_env_actions)}
        return observation, info


def _crosses_link(info: Mapping[str, Any], index: int, count: int) -> bool:
    """Whether a setup step handed a Link over, or the next setup action would go to task B."""
    if "handover" in info:
        return True
    return info.get("link_stage") == "B" and index < count - 1
