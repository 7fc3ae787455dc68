"""EnvHarness environments as a SkyRL text environment (``skyrl_gym``).

:class:`EnvHarnessTextEnv` is a ``skyrl_gym`` ``BaseTextEnv`` registered under :data:`ENV_ID`
(``"envharness"``) when this module is imported. SkyRL builds one per trajectory with
``skyrl_gym.make("envharness", env_config=..., extras=row)``: the dataset row's ``spec`` (a
:class:`~envharness.harness.spec.HarnessSpec` dict or JSON text; ``env_config.spec`` is the
fallback) is built, ``init`` resets it and adds the instruction and first observation to the
prompt, and each ``step`` reads the model's text as one action with the project's parser
(:func:`~envharness.rollout.chat.read_text_action`: a JSON tool call, ``tool arg=value``,
``tool(arg="value")``). Invalid actions are answered as the rollout loop answers them and use a
turn. The reward is 0 until the episode ends, then the score of the bridge's own
``env.evaluate()``; nothing a Rules layer writes reaches it.

A row that cannot be played (a spec that does not build, an env that fails mid-episode) never
raises into the trainer: the episode ends with reward 0 and ``metadata["error"]``, and
:meth:`EnvHarnessTextEnv.get_metrics` counts it. Check a dataset up front with
:func:`check_row`.

Example:
    >>> import skyrl_gym
    >>> import envharness.integrations.skyrl
    >>> row = dataset_rows(bridge="toy24", tasks=["4-4-10-10"])[0]
    >>> env = skyrl_gym.make("envharness", extras=row)
    >>> _ = env.init(row["prompt"])
    >>> env.step('combine(a="10", op="*", b="10")')["observations"][0]["content"][:21]
    'Numbers left: 4 4 100'
    >>> env.close()
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from envharness.core import ToolSpec
from envharness.errors import DependencyNotInstalled, EnvHarnessError, SpecError
from envharness.gym import TextActionSession
from envharness.harness.spec import HarnessSpec
from envharness.integrations._specs import check_seeds, read_spec, specs_from
from envharness.parsing import tool_lines

try:
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise DependencyNotInstalled(
        "skyrl-gym", "skyrl", purpose="envharness.integrations.skyrl"
    ) from e

__all__ = [
    "ENV_ID",
    "EnvHarnessTextEnv",
    "check_row",
    "dataset_rows",
    "register_env",
]

ENV_ID = "envharness"
"""The id :class:`EnvHarnessTextEnv` is registered under (SkyRL's ``env_class``)."""

_log = logging.getLogger("envharness.integrations.skyrl")

_PROTOCOL = (
    "Act by writing exactly one action per reply (the last one counts), as a call "
    'tool_name(argument="value"), as words tool_name argument=value, or as JSON '
    '{"tool": "tool_name", "args": {"argument": "value"}}. The tools:'
)


def _row_spec(extras: Mapping[str, Any], env_config: Any) -> HarnessSpec:
    if "spec" in extras:
        return read_spec(extras["spec"], "extras['spec']")
    fallback = _config_get(env_config, "spec")
    if fallback is None:
        raise SpecError(
            "no spec: put the harness spec in the dataset row (extras['spec']) or in the env "
            "config (environment.skyrl_gym.envharness.spec)"
        )
    return read_spec(_plain(fallback), "env_config.spec")


def _config_get(config: Any, key: str) -> Any:
    """``config[key]`` for a dict or an OmegaConf config (``None`` when absent)."""
    if config is None:
        return None
    getter = getattr(config, "get", None)
    return getter(key) if callable(getter) else getattr(config, key, None)


def _plain(value: Any) -> Any:
    """An OmegaConf container as plain dicts and lists; anything else as it is."""
    try:
        from omegaconf import OmegaConf
    except ImportError:  # pragma: no cover - omegaconf comes with skyrl-gym
        return value
    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value


def _positive_int(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SpecError(f"expected {name} to be a positive int, got {value!r}")
    return value


def _tools_text(tools: Sequence[ToolSpec]) -> str:
    return "\n".join(f"- {line}" for line in tool_lines(tools, full=True))


class EnvHarnessTextEnv(BaseTextEnv):
    """One SkyRL trajectory on a fresh env built from a harness spec.

    The steps are played by :class:`envharness.gym.TextActionSession` (the rollout loop's
    semantics, reward ``"terminal"``): every reply uses a turn, an invalid one included; the
    turn that uses the last one ends the episode; an env that raises ends it too.

    Args:
        env_config: SkyRL's ``environment.skyrl_gym.envharness`` config (optional keys
            ``spec``, ``max_turns``).
        extras: The dataset row: ``spec`` (wins over ``env_config.spec``), ``seed`` (default
            0), ``max_turns`` (default: ``env_config.max_turns``, else the env's ``max_steps``).
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        extras = dict(extras or {})
        self.session: TextActionSession | None = None
        self.error: str | None = None
        self.evaluation: dict[str, Any] | None = None
        self._invalid = 0
        try:
            self.spec = _row_spec(extras, env_config)
            self.seed = extras.get("seed", 0)
            if isinstance(self.seed, bool) or not isinstance(self.seed, int):
                raise SpecError(f"expected extras['seed'] to be an int, got {self.seed!r}")
            turns = _positive_int(extras.get("max_turns"), "extras['max_turns']")
            turns = turns or _positive_int(_config_get(env_config, "max_turns"), "max_turns")
            self.session = TextActionSession(self.spec, max_steps=turns)
            self.max_turns = self.session.budget
        except EnvHarnessError as e:
            self._fail(f"the row cannot be played: {type(e).__name__}: {e}")

    # -- the skyrl_gym interface ----------------------------------------------------------------

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Resets the env; returns ``prompt`` plus the instruction and first observation."""
        prompt = list(prompt or [])
        session = self.session
        if session is None:
            return prompt, {"error": self.error}
        try:
            observation, info = session.reset(seed=self.seed)
        except Exception as e:  # noqa: BLE001 - an env failure ends the episode, never the trainer
            self._fail(f"reset failed: {type(e).__name__}: {e}")
            return prompt, {"error": self.error}
        text = (
            f"{session.instruction}\n\n{_PROTOCOL}\n{_tools_text(session.tools)}\n\n{observation}"
        )
        return [*prompt, {"role": "user", "content": text}], {"task_id": info["task_id"]}

    def step(self, action: Any) -> BaseTextEnvStepOutput:
        """Plays the model's reply as one action; ends with the verifier's score as reward.

        A reply that is not text (nor a tool-call dict) holds no action: it is answered with
        the rollout loop's feedback and uses a turn.
        """
        session = self.session
        if session is None or session.done:
            return self._output(
                [], done=True, reward=0.0, error=self.error or "the episode is over"
            )
        self.turns += 1
        step = session.step(action if isinstance(action, str | Mapping) else "")
        if step.invalid is not None:
            self._invalid += 1
        if step.done:
            self.evaluation = step.info.get("evaluation")
            self.error = step.info.get("error", self.error)
        observations = [{"role": "user", "content": step.observation}] if step.observation else []
        return self._output(
            observations, done=step.done, reward=step.reward, error=step.info.get("error")
        )

    def get_metrics(self) -> dict[str, Any]:
        """``turns``, ``invalid_actions``, ``success`` (once evaluated) and ``errors`` (0 or 1)."""
        metrics: dict[str, Any] = {
            "turns": self.turns,
            "invalid_actions": self._invalid,
            "errors": int(self.error is not None),
        }
        if self.evaluation is not None:
            metrics["success"] = float(self.evaluation["success"])
        return metrics

    def close(self) -> None:
        """Closes the env (idempotent)."""
        session, self.session = self.session, None
        if session is not None:
            try:
                session.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                _log.warning("closing %r failed", session, exc_info=True)

    # -- internals ------------------------------------------------------------------------------

    def _fail(self, message: str) -> None:
        self.error = message
        _log.warning("envharness row not played: %s", message)
        if self.session is not None:
            self.close()

    def _output(
        self,
        observations: list[dict[str, str]],
        *,
        done: bool,
        reward: float,
        error: str | None = None,
    ) -> BaseTextEnvStepOutput:
        metadata: dict[str, Any] = {"turn": self.turns}
        if self.evaluation is not None and done:
            metadata["evaluation"] = self.evaluation
        if error is not None:
            metadata["error"] = error
        return BaseTextEnvStepOutput(
            observations=observations, reward=reward, done=done, metadata=metadata
        )


# -- datasets and registration --------------------------------------------------------------------


def dataset_rows(
    *,
    bridge: str | None = None,
    tasks: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
    run: str | Path | None = None,
    specs: Sequence[Any] | None = None,
    seeds: Sequence[int] = (0,),
    system_prompt: str | None = None,
) -> list[dict[str, Any]]:
    """SkyRL dataset rows: ``prompt``, ``env_class`` (:data:`ENV_ID`), ``spec`` (JSON), ``seed``.

    Give one source: ``bridge`` with ``tasks``, ``run`` (a rig run's ``RUN/accepted/*.json``)
    or ``specs`` (``HarnessSpec`` objects, dicts or JSON texts). The prompt holds only the
    system prompt, when given: :meth:`EnvHarnessTextEnv.init` adds the task. The spec is
    stored as JSON text, so the rows fit a parquet column.

    Raises:
        SpecError: If no source or several are given, or a spec is malformed.
    """
    found = specs_from(bridge=bridge, tasks=tasks, options=options, run=run, specs=specs)
    seeds = check_seeds(seeds)
    prompt = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return [
        {"prompt": list(prompt), "env_class": ENV_ID, "spec": spec.to_json(indent=None), "seed": s}
        for spec in found
        for s in seeds
    ]


def check_row(row: Mapping[str, Any], env_config: Any = None) -> None:
    """Builds a row's spec once and closes it, so a dataset fails before training, not during.

    Raises:
        SpecError: If the row's spec is missing, malformed or does not build.
    """
    spec = _row_spec(row, env_config)
    try:
        spec.build().close()
    except EnvHarnessError as e:
        raise SpecError(f"the spec {spec.spec_id} does not build: {e}") from e


def register_env(env_id: str = ENV_ID) -> None:
    """Registers :class:`EnvHarnessTextEnv` with ``skyrl_gym`` (again is a no-op)."""
    if env_id not in skyrl_gym.registry:
        skyrl_gym.register(id=env_id, entry_point=f"{__name__}:EnvHarnessTextEnv")


register_env()
