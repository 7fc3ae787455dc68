"""``TextActionSession``: one episode of an ``ActionableEnv`` driven by text actions.

This is the step logic :class:`envharness.gym.HarnessGymEnv` runs, kept free of Gymnasium so
that trainer adapters can share it: text in (a model's reply), text out (what the agent sees
next), with the rollout loop's semantics (:mod:`envharness.rollout.loop`):

- a reply is read with :func:`~envharness.rollout.chat.read_text_action` (a JSON tool call,
  OpenAI-style or ``{"tool", "args"}``, a call ``combine(a="10", ...)`` or words
  ``combine 10 * 10``); one that holds no action, names an unknown tool or has bad arguments, and
  an action the env refuses with :class:`~envharness.errors.InvalidActionError`, is answered with
  :func:`~envharness.rollout.loop.invalid_action_feedback`; an action the env rejects
  (``info["invalid_action"]``) with its answer plus the reason
  (:func:`~envharness.rollout.loop.rejected_observation`). Either way the step counts and
  ``info["invalid_action"]`` says why;
- every step, an invalid one included, uses one of ``max_steps``; the step that uses the last
  one ends the episode as truncated (end reason ``"budget"``);
- observations are cut to ``max_observation_chars`` (:func:`~envharness.rollout.loop.
  clip_observation`);
- an env that raises while stepping (a bridge bug, rules code that fails in the sandbox) ends the
  episode as truncated with end reason ``"env_error"`` and ``info["error"]``, as in the loop;
- at the end the stack's ``evaluate()`` (the bridges' own verifiers) is recorded.

The reward comes from the verifier only. ``reward="terminal"`` (the default) is 0.0 on every
step and ``evaluate().score`` on the step that ends the episode (1.0/0.0 for pass/fail bridges,
the bridge's graded score otherwise); ``"success"`` is 1.0/0.0 from ``evaluate().success`` on
that step; ``"step"`` is the bridge's own per-step reward (0.0 on an invalid step). Harness
components cannot change either: rules code never sees the reward or ``evaluate()``.
"""

from __future__ import annotations

import copy
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from envharness.core import Action, ActionableEnv, Evaluation, ToolSpec
from envharness.errors import EpisodeError, InvalidActionError, SpecError
from envharness.harness.spec import HarnessSpec
from envharness.parsing import parse_action
from envharness.rollout.chat import read_text_action
from envharness.rollout.loop import (
    MAX_OBSERVATION_CHARS,
    clip_observation,
    invalid_action_feedback,
    rejected_observation,
)

__all__ = ["REWARD_MODES", "RewardMode", "TextActionSession", "TextStep", "resolve_env"]

RewardMode = Literal["terminal", "success", "step"]
REWARD_MODES: tuple[str, ...] = ("terminal", "success", "step")
"""The reward modes: the verifier's score at the end, its success at the end, per-step reward."""

_MAX_SPEC_BYTES = 16 * 1024 * 1024


def _describe_error(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _read_spec_file(path: Path) -> HarnessSpec:
    try:
        if path.stat().st_size > _MAX_SPEC_BYTES:
            raise SpecError(f"{path} is over {_MAX_SPEC_BYTES >> 20} MiB: not a harness spec")
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise SpecError(
            f"cannot read the spec file {path}: {e.strerror or e}; give a path to a harness "
            "spec (.json), the spec's JSON text, a dict, a HarnessSpec or an ActionableEnv"
        ) from None
    except UnicodeDecodeError:
        raise SpecError(f"{path} is not UTF-8 text; give a harness spec (.json)") from None
    return HarnessSpec.from_json(text)


def _as_spec(source: Any) -> HarnessSpec:
    if isinstance(source, HarnessSpec):
        return source
    if isinstance(source, Mapping):
        return HarnessSpec.from_dict(dict(source))
    if isinstance(source, str) and source.lstrip().startswith("{"):
        return HarnessSpec.from_json(source)
    if isinstance(source, str | os.PathLike):
        return _read_spec_file(Path(source))
    raise SpecError(
        "expected an ActionableEnv, a HarnessSpec, spec JSON text, a spec dict or a path to a "
        f"spec file, got {type(source).__name__}"
    )


def resolve_env(source: Any) -> ActionableEnv:
    """The env ``source`` stands for: an ``ActionableEnv`` as is, else a spec built.

    Args:
        source: An :class:`~envharness.core.ActionableEnv` (used as is), a
            :class:`~envharness.harness.HarnessSpec`, a spec dict, spec JSON text, or the path to
            a spec file (``str`` or ``os.PathLike``).

    Returns:
        The env; one built from a spec is new, and its caller owns it (closes it).

    Raises:
        SpecError: If ``source`` is none of these, cannot be read, or is not a valid spec.
        BridgeError: If the spec's bridge or task cannot be loaded.
        DependencyNotInstalled: If the bridge needs an extra that is not installed.

    Example:
        >>> from envharness import load_bridge
        >>> spec = HarnessSpec.from_env(load_bridge("toy24", task_id="4-4-10-10"))
        >>> resolve_env(spec.to_json())
        <Toy24Env task='4-4-10-10'>
    """
    if isinstance(source, ActionableEnv):
        return source
    spec = _as_spec(source)
    return spec.build()


def _check_reward(reward: Any) -> str:
    if reward not in REWARD_MODES:
        raise SpecError(f"expected reward to be one of {', '.join(REWARD_MODES)}, got {reward!r}")
    return str(reward)


def _positive_int(value: Any, name: str, fix: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SpecError(f"expected {name} to be a positive int, got {value!r}; {fix}")
    return value


def _json_copy(value: Any) -> Any:
    """A deep copy of ``value`` (the bridge's info dicts), left as is if it cannot be copied."""
    try:
        return copy.deepcopy(value)
    except Exception:
        return value


def _not_an_action(action: Any) -> InvalidActionError:
    return InvalidActionError(
        "expected the action as text (a str such as 'tool arg=value' or a JSON tool call), an "
        f"Action or a tool-call dict, got {type(action).__name__}"
    )


@dataclass(frozen=True)
class TextStep:
    """What one :meth:`TextActionSession.step` returns.

    Attributes:
        observation: What the agent is shown next (feedback after an invalid action).
        reward: The step's reward in the session's reward mode.
        terminated: The env ended the episode (e.g. the task was solved).
        truncated: The episode was cut short: the env truncated it, the budget ran out, or the
            env raised (``info["end_reason"]`` says which).
        info: ``step`` (steps taken so far), ``action`` (the action played, as a dict, or
            ``None``), ``invalid_action`` (why the action was invalid or rejected) when it was,
            ``blocked`` when a rule blocked it, ``env_info`` (the env's own step info); when the
            episode ends, ``end_reason``, ``evaluation`` (``success``, ``score``, ``details``, or
            ``None`` when ``evaluate()`` failed) and ``error`` when the env or its evaluation
            failed.
        action: The action played, or ``None`` when the reply held none that fits the tools.
        invalid: The reason the action was invalid or rejected, else ``None``.
        evaluation: The verifier's verdict when the episode ended, else ``None``.
    """

    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
    action: Action | None = None
    invalid: str | None = None
    evaluation: Evaluation | None = None

    @property
    def done(self) -> bool:
        """Whether the episode is over (terminated or truncated)."""
        return self.terminated or self.truncated

    def as_tuple(self) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Gymnasium's ``(observation, reward, terminated, truncated, info)``."""
        return self.observation, self.reward, self.terminated, self.truncated, self.info


class TextActionSession:
    """Plays episodes of one env from text actions, as the rollout loop would (module docstring).

    One session holds one env and plays one episode at a time: :meth:`reset`, then
    :meth:`step` until :attr:`TextStep.done`, then :meth:`reset` again. It imports no Gymnasium
    and no LLM library, so trainer adapters can drive an env with it.

    Args:
        env: The env to play, or anything :func:`resolve_env` builds one from (a spec, its JSON,
            a dict, a path).
        reward: ``"terminal"`` (default), ``"success"`` or ``"step"`` (see the module docstring).
        max_steps: The agent's step budget per episode; ``env.max_steps`` by default.
        max_observation_chars: Observations longer than this are cut, the cut said in the text.
        close_env: Whether :meth:`close` closes the env (an env built from a spec is always
            closed).

    Raises:
        SpecError: If an argument is wrong, or the spec does not build.
        BridgeError: If the spec's bridge or task cannot be loaded.

    Example:
        >>> session = TextActionSession({"envharness_spec": 1,
        ...     "bridge": {"name": "toy24", "task_id": "4-4-10-10"}})
        >>> observation, info = session.reset(seed=0)
        >>> session.step("combine(a='10', op='*', b='10')").reward
        0.0
        >>> session.step("combine 100 - 4").info["step"]
        2
        >>> last = session.step('{"tool": "combine", "args": {"a": "96", "op": "/", "b": "4"}}')
        >>> last.terminated, last.reward, last.info["evaluation"]["success"]
        (True, 1.0, True)
        >>> session.close()
    """

    def __init__(
        self,
        env: Any,
        *,
        reward: RewardMode = "terminal",
        max_steps: int | None = None,
        max_observation_chars: int = MAX_OBSERVATION_CHARS,
        close_env: bool = True,
    ) -> None:
        self.reward_mode = _check_reward(reward)
        if max_steps is not None:
            _positive_int(max_steps, "max_steps", "or pass None for the env's own max_steps")
        self.max_observation_chars = _positive_int(
            max_observation_chars, "max_observation_chars", "e.g. 50000"
        )
        built = not isinstance(env, ActionableEnv)
        self.env: ActionableEnv = resolve_env(env)
        self._close_env = close_env or built
        self._max_steps = max_steps
        self.tools: list[ToolSpec] = []
        self.instruction = ""
        self.budget = 0
        self.steps_taken = 0
        self.observation = ""
        self.evaluation: Evaluation | None = None
        self.end_reason: str | None = None
        self._current = ""
        self._running = False
        self._closed = False
        try:
            self.budget = self._budget()
        except BaseException:
            if built:
                self.env.close()
            raise

    def _budget(self) -> int:
        if self._max_steps is not None:
            return self._max_steps
        return _positive_int(
            getattr(self.env, "max_steps", None),
            f"{self.env!r}'s max_steps",
            "pass max_steps= to set the agent's step budget",
        )

    @property
    def done(self) -> bool:
        """Whether no episode is running (before the first reset, or after the last step)."""
        return not self._running

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The tools as OpenAI function tools (:meth:`~envharness.core.ToolSpec.to_openai`)."""
        return [tool.to_openai() for tool in self.tools]

    def reset(self, *, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Starts an episode and returns ``(observation, info)``.

        ``info`` holds ``instruction``, ``tools`` (OpenAI function tools), ``task_id``,
        ``bridge``, ``max_steps`` (the budget), ``seed`` and ``env_info`` (the env's own reset
        info).

        Raises:
            EpisodeError: If the session is closed.
        """
        if self._closed:
            raise EpisodeError("this TextActionSession is closed; make a new one")
        self._running = False
        observation, env_info = self.env.reset(seed=seed)
        self.tools = list(self.env.tools())
        self.instruction = str(self.env.instruction)
        self.budget = self._budget()
        self.steps_taken = 0
        self.evaluation = None
        self.end_reason = None
        self.observation = clip_observation(str(observation), self.max_observation_chars)
        self._current = self.observation
        self._running = True
        info = {
            "instruction": self.instruction,
            "tools": self.tool_schemas(),
            "task_id": str(getattr(self.env, "task_id", "")),
            "bridge": str(getattr(self.env.unwrapped, "bridge_name", "")),
            "max_steps": self.budget,
            "seed": seed,
            "env_info": _json_copy(env_info) if isinstance(env_info, dict) else {},
        }
        return self.observation, info

    def parse(self, action: Any) -> Action:
        """Reads ``action`` (text, an :class:`Action` or a tool-call dict) as an action.

        A dict may be ``{"tool", "args"}`` or OpenAI-style ``{"name", "arguments"}`` (arguments
        as a dict or JSON text); values are converted to the tools' declared types.

        Raises:
            InvalidActionError: If it holds no action that fits the tools (shown as feedback by
                :meth:`step`), or is of another type (raised by :meth:`step` too).
        """
        if isinstance(action, Action):
            return action
        if isinstance(action, str):
            return read_text_action(action, self.tools)
        if isinstance(action, Mapping):
            try:
                text = json.dumps(dict(action))
            except (TypeError, ValueError) as e:
                raise InvalidActionError(f"the tool call is not JSON-able: {e}") from None
            return parse_action(text, self.tools)
        raise _not_an_action(action)

    def step(self, action: str | Action | Mapping[str, Any]) -> TextStep:
        """Plays one action; an invalid one is answered with feedback and counts as a step.

        Args:
            action: The agent's reply (text), an :class:`Action`, or a tool-call dict.

        Returns:
            The step (see :class:`TextStep`).

        Raises:
            EpisodeError: If no episode is running (call :meth:`reset`).
            InvalidActionError: If ``action`` is not a str, an ``Action`` or a dict (a
                programming error, not a move: nothing is stepped or counted).
        """
        if not self._running:
            raise EpisodeError(
                "no episode is running: call reset() first (and again after the episode ends)"
            )
        if not isinstance(action, str | Action | Mapping):
            raise _not_an_action(action)
        self.steps_taken += 1
        info: dict[str, Any] = {"step": self.steps_taken, "action": None}
        try:
            parsed = self.parse(action)
        except InvalidActionError as e:
            return self._invalid(e, info)
        info["action"] = parsed.to_dict()
        try:
            result = self.env.step(parsed)
        except InvalidActionError as e:
            return self._invalid(e, info, parsed)
        except Exception as e:
            info["error"] = _describe_error(e)
            return self._end("", 0.0, False, True, info, "env_error", parsed)
        try:
            observation, reward, terminated, truncated, env_info = result
            reward = float(reward)
        except (TypeError, ValueError):
            info["error"] = f"TypeError: expected env.step() to return a StepResult, got {result!r}"
            return self._end("", 0.0, False, True, info, "env_error", parsed)
        env_info = env_info if isinstance(env_info, dict) else {}
        info["env_info"] = _json_copy(env_info)
        observation = clip_observation(str(observation), self.max_observation_chars)
        invalid = env_info.get("invalid_action")
        invalid = None if invalid is None or invalid is False else str(invalid)
        if invalid is not None:
            observation = rejected_observation(observation, invalid)
            info["invalid_action"] = invalid
        blocked = bool(env_info.get("blocked", False))
        if blocked:
            info["blocked"] = True
        if invalid is None and not blocked:
            self._current = observation
        step_reward = reward if self.reward_mode == "step" and math.isfinite(reward) else 0.0
        if terminated or truncated:
            reason = "terminated" if terminated else "truncated"
            return self._end(
                observation, step_reward, bool(terminated), not terminated, info, reason, parsed
            )
        if self.steps_taken >= self.budget:
            return self._end(observation, step_reward, False, True, info, "budget", parsed)
        self.observation = observation
        return TextStep(observation, step_reward, False, False, info, parsed, invalid)

    def _invalid(
        self, error: InvalidActionError, info: dict[str, Any], action: Action | None = None
    ) -> TextStep:
        feedback = invalid_action_feedback(error, self.tools, self._current)
        info["invalid_action"] = str(error)
        if self.steps_taken >= self.budget:
            return self._end(feedback, 0.0, False, True, info, "budget", action, str(error))
        self.observation = feedback
        return TextStep(feedback, 0.0, False, False, info, action, str(error))

    def _end(
        self,
        observation: str,
        reward: float,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
        end_reason: str,
        action: Action | None,
        invalid: str | None = None,
    ) -> TextStep:
        """Ends the episode: evaluates it and adds the terminal reward."""
        self._running = False
        self.end_reason = end_reason
        self.observation = observation
        evaluation = self._evaluate(info)
        self.evaluation = evaluation
        info["end_reason"] = end_reason
        info["evaluation"] = None if evaluation is None else evaluation.to_dict()
        if evaluation is not None and self.reward_mode == "terminal":
            reward = float(evaluation.score) if math.isfinite(evaluation.score) else 0.0
        elif evaluation is not None and self.reward_mode == "success":
            reward = 1.0 if evaluation.success else 0.0
        invalid = invalid if invalid is not None else info.get("invalid_action")
        return TextStep(
            observation, reward, terminated, truncated, info, action, invalid, evaluation
        )

    def _evaluate(self, info: dict[str, Any]) -> Evaluation | None:
        try:
            evaluation = self.env.evaluate()
            if not isinstance(evaluation, Evaluation):
                raise TypeError(
                    f"expected evaluate() to return an Evaluation, got {type(evaluation).__name__}"
                )
        except Exception as e:
            message = f"evaluate() failed: {_describe_error(e)}"
            info["error"] = f"{info['error']}; {message}" if "error" in info else message
            return None
        return Evaluation(evaluation.success, evaluation.score, _json_copy(evaluation.details))

    def close(self) -> None:
        """Ends the episode and closes the env (unless ``close_env=False``). Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._running = False
        if self._close_env:
            self.env.close()

    def __enter__(self) -> TextActionSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<TextActionSession {self.env!r} reward={self.reward_mode!r}>"
