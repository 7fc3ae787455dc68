"""``Rules``: LLM-written hooks that filter actions, rewrite transitions and filter observations.

The rules code runs in the sandbox (:mod:`envharness.sandbox`), one fresh child process and one
fresh ``_Rules()`` instance per episode; it never runs in the host. Hooks see JSON copies of the
action and of ``get_env_state()`` and return text or an action: they cannot reach the env, so the
reward, the termination flags and ``evaluate()`` always come from the bridge's own verifier.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envharness.core import Action, ActionableEnv, StepResult
from envharness.errors import EnvHarnessError, EpisodeError, RulesError, SpecError
from envharness.harness.base import EnvHarness
from envharness.harness.knobs import apply_knobs
from envharness.sandbox import RulesSandbox, RulesSession, SandboxLimits, rules_sha256

__all__ = ["Rules"]


class Rules(EnvHarness):
    """Applies sandboxed ``rules_code`` hooks around the env below (the paper's Contract).

    ``rules_code`` defines ``class _Rules`` with up to three hooks, each identity by default:

    - ``filter_action(action, state) -> action | str``: a str blocks the action and becomes the
      observation (the env below is not stepped); the action itself passes it through. A
      *changed* action dict is refused (:class:`~envharness.errors.RulesError`) unless the
      component is built with ``allow_rewrite=True``: rules that may swap the agent's action
      could play for it. With the opt-in, the changed action is stepped instead and the step's
      ``info["rules_replaced_action"]`` holds it (the rollout loop records it as
      ``Step.executed_action`` beside the agent's own action).
    - ``modify_transition(action, observation, state) -> str``: rewrites the observation after a
      step (``state`` is the state after it).
    - ``filter_observation(observation, state) -> str``: rewrites every observation, the reset's
      included (after ``modify_transition`` on a step).

    The code is checked statically when the component is built; a hook that raises, hangs, crashes
    or returns the wrong type raises :class:`~envharness.errors.RulesError` naming the hook.

    Args:
        env: The env to put rules around.
        rules_code: Python source defining ``class _Rules``.
        knobs: Values for the code's knobs (upper-case module-level numeric constants, see
            :mod:`envharness.harness.knobs`), e.g. ``{"DROP_P": 0.45}``.
        limits: Sandbox limits (per-call timeout, CPU, memory); defaults are safe.
        allow_rewrite: Let ``filter_action`` replace the agent's action (recorded in the spec as
            ``"allow_rewrite": true`` and in every rewritten step). EnvRigger never accepts a
            candidate whose successes depend on rewritten steps.

    Example:
        >>> from envharness import load_bridge
        >>> code = '''
        ... class _Rules:
        ...     def filter_action(self, action, state):
        ...         if action["tool"] == "undo":
        ...             return "Undo is disabled in this variant."
        ...         return action
        ... '''
        >>> env = Rules(load_bridge("toy24", task_id="4-4-10-10"), code)
    """

    component_type = "rules"
    config_fields = frozenset({"rules_code", "sha256", "knobs", "allow_rewrite"})

    def __init__(
        self,
        env: ActionableEnv,
        rules_code: str,
        *,
        knobs: Mapping[str, float] | None = None,
        limits: SandboxLimits | None = None,
        allow_rewrite: bool = False,
    ) -> None:
        super().__init__(env)
        if not isinstance(allow_rewrite, bool):
            raise RulesError(f"expected allow_rewrite to be a bool, got {allow_rewrite!r}")
        if not isinstance(rules_code, str):
            raise RulesError(f"expected rules_code to be a str, got {type(rules_code).__name__}")
        if knobs is not None and not isinstance(knobs, Mapping):
            raise RulesError(f"expected knobs to be a dict, got {type(knobs).__name__}")
        self.rules_code = rules_code
        self.knobs = dict(knobs or {})
        self.allow_rewrite = allow_rewrite
        self._sha256 = rules_sha256(rules_code)
        self._sandbox = RulesSandbox(apply_knobs(rules_code, self.knobs), limits=limits)
        self._session: RulesSession | None = None
        self._observation: str | None = None
        self._after_step = False  # whether the session has modify_transition/filter_observation

    @property
    def hooks(self) -> frozenset[str]:
        """The hooks the rules code defines."""
        return self._sandbox.info.hooks

    @property
    def rules_sha256(self) -> str:
        """The SHA-256 of the rules code as written, knobs unapplied (stored in specs)."""
        return self._sha256

    def component_config(self) -> dict[str, Any]:
        """The rules code, its hash, the knob values, and ``allow_rewrite`` when it is on."""
        config: dict[str, Any] = {"rules_code": self.rules_code, "sha256": self.rules_sha256}
        if self.knobs:
            config["knobs"] = dict(self.knobs)
        if self.allow_rewrite:
            config["allow_rewrite"] = True
        return config

    @classmethod
    def from_config(cls, env: ActionableEnv, config: dict[str, Any]) -> Rules:
        """Rebuilds the component; the stored hash must match the code."""
        from envharness.harness.spec import check_rules_hash

        check_rules_hash(config)
        allow_rewrite = config.get("allow_rewrite", False)
        if not isinstance(allow_rewrite, bool):
            raise SpecError(f"rules 'allow_rewrite': expected true or false, got {allow_rewrite!r}")
        return cls(
            env, config["rules_code"], knobs=config.get("knobs"), allow_rewrite=allow_rewrite
        )

    # -- episode ---------------------------------------------------------------------------------

    def _reset(self, seed: int | None) -> tuple[str, dict[str, Any]]:
        self._end_session()
        self._observation = None
        self._session = self._sandbox.start_episode(seed)
        self._after_step = bool(self._session.hooks & {"modify_transition", "filter_observation"})
        observation, info = self.env.reset(seed=seed)
        if "filter_observation" in self._session.hooks:
            needs = "filter_observation" in self._session.needs_state
            state = self.env.get_env_state() if needs else None
            observation = self._session.filter_observation(observation, state)
        self._observation = observation
        return observation, info

    def _step(self, action: Action) -> StepResult:
        session = self._session
        if session is None:
            raise EpisodeError(f"{self!r}: call reset() before step()")
        action = self.check_action(action)
        hooks = session.hooks
        sent = action.to_dict()
        replaced = False
        if "filter_action" in hooks:
            state = self.env.get_env_state() if "filter_action" in session.needs_state else None
            verdict = session.filter_action(sent, state)
            if verdict is not sent:  # the hook blocked or changed the action
                if isinstance(verdict, str):
                    self._observation = verdict
                    return StepResult(verdict, 0.0, False, False, {"blocked": True})
                try:
                    replacement = self.check_action(verdict)
                except EnvHarnessError as e:
                    raise RulesError(
                        f"returned an invalid action: {e}", hook="filter_action"
                    ) from e
                replaced = replacement != action
                if replaced and not self.allow_rewrite:
                    raise RulesError(
                        f"returned a different action ({replacement}) for the agent's {action}; "
                        "a hook may pass the action through or block it by returning a str. "
                        "Rewriting actions could play for the agent, so it is off unless the "
                        "Rules component is built with allow_rewrite=True",
                        hook="filter_action",
                    )
                if replaced:
                    action = replacement
                    sent = action.to_dict()
        result = self.env.step(action)
        observation = result.observation
        if self._after_step:
            state = self.env.get_env_state() if "after_step" in session.needs_state else None
            observation = session.after_step(sent, observation, state)
        self._observation = observation
        info = result.info
        if replaced or observation != result.observation:
            info = dict(info)
            if replaced:
                info["rules_replaced_action"] = action.to_dict()
            if observation != result.observation:
                info["rules_rewrote_observation"] = True
        # The verifier is sealed: reward and end flags pass through from the env below unchanged.
        return StepResult(observation, result.reward, result.terminated, result.truncated, info)

    def observe(self) -> str:
        """The current state as the agent is shown it: the rules' view of the env's ``observe()``.

        It is computed after a reset and at :meth:`mark_episode_start` (so ``Setups`` over
        ``Rules`` start from the staged state, never from the last setup step's answer); after an
        agent step it is that step's observation. Calling it runs no hook.
        """
        if self._observation is None:
            return self.env.observe()
        return self._observation

    def _mark_episode_start(self) -> None:
        """Passes the mark down, then shows the staged state through ``filter_observation``."""
        self.env.mark_episode_start()
        observation = self.env.observe()
        session = self._session
        if session is not None and "filter_observation" in session.hooks:
            observation = session.filter_observation(observation, self.env.get_env_state())
        self._observation = observation

    def _end_session(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def close(self) -> None:
        """Ends the sandbox session and closes the env below."""
        self._end_session()
        self.env.close()
