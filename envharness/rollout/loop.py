"""The rollout loop: one policy plays one episode of one env, recorded as a :class:`Trajectory`.

:func:`rollout` never raises because the policy or the environment failed: a policy exception, a
policy that is too slow, an environment (or harness component) that raises, all end the episode
with an ``end_reason`` and an ``error`` in the trajectory, and the env is closed in every case.
Only programmer errors (an argument of the wrong kind) raise.
"""

from __future__ import annotations

import contextvars
import logging
import math
import reprlib
import threading
import time
from collections.abc import Sequence
from typing import Any

from envharness.core import Action, ActionableEnv, Evaluation, ToolSpec
from envharness.errors import InvalidActionError
from envharness.harness.spec import HarnessSpec
from envharness.rollout.policy import Policy, describe_policy, policy_usage, start_policy
from envharness.rollout.trajectory import Step, Trajectory

__all__ = [
    "MAX_OBSERVATION_CHARS",
    "clip_observation",
    "invalid_action_feedback",
    "rejected_observation",
    "rollout",
]

MAX_OBSERVATION_CHARS = 50_000
"""The most characters of one observation the policy is shown and the trajectory stores."""

_log = logging.getLogger("envharness.rollout")


class _PolicyTimeout(Exception):
    """The policy did not return an action before the step deadline."""


class _EpisodeOver(Exception):
    """Ends the episode with an end reason and an error text."""

    def __init__(self, end_reason: str, error: str) -> None:
        super().__init__(error)
        self.end_reason = end_reason
        self.error = error


def _describe_error(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _signature(tool: ToolSpec) -> str:
    """``name(a, op, b?)``: the tool's parameters, optional ones marked with ``?``."""
    properties = tool.parameters.get("properties") or {}
    required = set(tool.parameters.get("required") or ())
    names = [name if name in required else f"{name}?" for name in properties]
    return f"{tool.name}({', '.join(names)})"


_DIGEST_CHARS = 160


def _digest(observation: str, limit: int = _DIGEST_CHARS) -> str:
    """``observation`` on one line, cut to ``limit`` characters (``…`` marks a cut)."""
    text = " ".join(observation.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def invalid_action_feedback(
    error: BaseException | str,
    tools: Sequence[ToolSpec],
    observation: str | None = None,
) -> str:
    """The observation an agent gets after an invalid action, in two or three short lines.

    The first line is the error and says that nothing changed; when the error names a tool and
    does not already show its usage, the tool's signature follows (when it names none, the
    tools' signatures, without their descriptions); the last line digests the current
    observation (the state the agent is still in).

    Args:
        error: The error (usually an :class:`~envharness.errors.InvalidActionError`) or its text.
        tools: The tools the agent may call.
        observation: The current observation; left out when ``None``.

    Example:
        >>> from envharness.core import ToolSpec
        >>> print(invalid_action_feedback(
        ...     "no tool call in the reply", [ToolSpec("undo", "Undo.")], "Numbers left: 4 4 10"
        ... ))
        Error: no tool call in the reply. Nothing changed.
        Tools: undo()
        Now: Numbers left: 4 4 10
    """
    tool_name = getattr(error, "tool", None)
    reason = getattr(error, "reason", None) if isinstance(error, InvalidActionError) else None
    text = str(reason if reason is not None else error).strip().rstrip(".")
    head = f"Error in {tool_name}: {text}" if tool_name else f"Error: {text}"
    lines = [f"{head}. Nothing changed."]
    tool = next((t for t in tools if t.name == tool_name), None)
    if tool is not None and "usage:" not in text:
        lines.append(f"Usage: {_signature(tool)}")
    elif tool is None and not any(t.name in text for t in tools):
        lines.append(f"Tools: {', '.join(_signature(t) for t in tools)}")
    if observation is not None and observation.strip():
        lines.append(f"Now: {_digest(observation)}")
    return "\n".join(lines)


def clip_observation(observation: str, limit: int | None = MAX_OBSERVATION_CHARS) -> str:
    r"""``observation`` cut to ``limit`` characters, the cut said in the text.

    Example:
        >>> clip_observation("x" * 30, 10)
        'xxxxxxxxxx\n[... 20 more characters cut: the observation was too long]'
    """
    if limit is None or len(observation) <= limit:
        return observation
    cut = len(observation) - limit
    return f"{observation[:limit]}\n[... {cut} more characters cut: the observation was too long]"


def rejected_observation(observation: str, reason: str) -> str:
    """The env's answer to a rejected action, with the env's reason added when it lacks it.

    Example:
        >>> print(rejected_observation("Nothing happens.", "'go to sink 1' is not admissible"))
        Nothing happens.
        Rejected: 'go to sink 1' is not admissible.
    """
    reason = reason.strip()
    if not reason or reason.rstrip(".") in observation:
        return observation
    return f"{observation.rstrip()}\nRejected: {reason.rstrip('.')}."


def _act_with_deadline(policy: Policy, observation: str, timeout: float) -> Any:
    """Runs ``policy.act`` in a daemon thread and waits at most ``timeout`` seconds.

    On a timeout the thread is abandoned, not stopped (Python cannot stop a thread): it may keep
    running in the background until ``act`` returns, and its result is discarded.
    """
    box: dict[str, Any] = {}
    done = threading.Event()
    context = contextvars.copy_context()

    def work() -> None:
        try:
            box["action"] = context.run(policy.act, observation)
        except BaseException as e:  # handed back to the caller's thread
            box["error"] = e
        finally:
            done.set()

    threading.Thread(target=work, name="envharness-policy-act", daemon=True).start()
    if not done.wait(timeout):
        raise _PolicyTimeout
    if "error" in box:
        raise box["error"]
    return box["action"]


class _Episode:
    """The state of one rollout while it runs (private: :func:`rollout` is the interface)."""

    def __init__(
        self,
        env: ActionableEnv,
        policy: Policy,
        *,
        budget: int,
        seed: int,
        step_timeout: float | None,
        policy_name: str,
        max_observation_chars: int | None = MAX_OBSERVATION_CHARS,
    ) -> None:
        self.env = env
        self.max_observation_chars = max_observation_chars
        self.policy = policy
        self.budget = budget
        self.seed = seed
        self.step_timeout = step_timeout
        self.tools: list[ToolSpec] = []
        self.reset_done = False
        spec_id, spec = _spec_of(env)
        self.trajectory = Trajectory(
            task_id=str(_attribute(env, "task_id", "")),
            bridge=str(_attribute(env, "bridge_name", "")),
            spec_id=spec_id,
            spec=spec,
            seed=seed,
            policy=policy_name,
            max_steps=budget,
        )

    def run(self) -> Trajectory:
        trajectory = self.trajectory
        trajectory.started_at = time.time()
        clock = time.perf_counter()
        try:
            observation = self._start()
            self._play(observation)
        except _EpisodeOver as over:
            trajectory.end_reason = over.end_reason
            trajectory.error = over.error
        self._finish()
        trajectory.duration_seconds = time.perf_counter() - clock
        return trajectory

    # -- phases ------------------------------------------------------------------------------

    def _start(self) -> str:
        env, policy, trajectory = self.env, self.policy, self.trajectory
        try:
            observation, _ = env.reset(seed=self.seed)
            self.reset_done = True
            trajectory.first_observation = clip_observation(
                str(observation), self.max_observation_chars
            )
            trajectory.instruction = str(env.instruction)
            self.tools = list(env.tools())
        except Exception as e:
            raise _EpisodeOver("env_error", _describe_error(e)) from e
        try:
            start_policy(policy, trajectory.instruction, list(self.tools), self.budget)
            trajectory.skills = _skills_of(policy)
            attach = getattr(policy, "attach", None)
            if callable(attach):
                attach(env)
        except Exception as e:
            raise _EpisodeOver("policy_error", _describe_error(e)) from e
        return trajectory.first_observation

    def _play(self, observation: str) -> None:
        steps = self.trajectory.steps
        current = observation  # the env's own view of the state the agent is in
        while len(steps) < self.budget:
            index = len(steps)
            clock = time.perf_counter()
            try:
                action = self._act(observation, index)
            except InvalidActionError as e:
                feedback = invalid_action_feedback(e, self.tools, current)
                steps.append(
                    Step(
                        index,
                        None,
                        feedback,
                        invalid=str(e),
                        policy_seconds=time.perf_counter() - clock,
                    )
                )
                observation = feedback
                continue
            policy_seconds = time.perf_counter() - clock
            step = self._env_step(index, action, policy_seconds, current)
            steps.append(step)
            if step.error is not None:
                raise _EpisodeOver("env_error", step.error)
            if step.terminated or step.truncated:
                self.trajectory.end_reason = "terminated" if step.terminated else "truncated"
                return
            observation = step.observation
            if step.invalid is None and not step.blocked:
                current = step.observation
        self.trajectory.end_reason = "budget"

    def _act(self, observation: str, index: int) -> Action:
        """The policy's next action; InvalidActionError passes through for an invalid step."""
        try:
            if self.step_timeout is None:
                raw = self.policy.act(observation)
            else:
                raw = _act_with_deadline(self.policy, observation, self.step_timeout)
        except _PolicyTimeout as e:
            raise _EpisodeOver(
                "timeout",
                f"the policy did not act within {self.step_timeout:g} s at step {index}",
            ) from e
        except InvalidActionError:
            raise
        except Exception as e:
            raise _EpisodeOver("policy_error", _describe_error(e)) from e
        if isinstance(raw, Action):
            return raw
        return Action.from_dict(raw)  # a dict is accepted; anything else is an invalid step

    def _env_step(self, index: int, action: Action, policy_seconds: float, current: str) -> Step:
        clock = time.perf_counter()
        try:
            result = self.env.step(action)
        except InvalidActionError as e:
            return Step(
                index,
                action.to_dict(),
                invalid_action_feedback(e, self.tools, current),
                invalid=str(e),
                policy_seconds=policy_seconds,
                env_seconds=time.perf_counter() - clock,
            )
        except Exception as e:
            return Step(
                index,
                action.to_dict(),
                "",
                error=_describe_error(e),
                policy_seconds=policy_seconds,
                env_seconds=time.perf_counter() - clock,
            )
        env_seconds = time.perf_counter() - clock
        try:
            observation, reward, terminated, truncated, info = result
            reward = float(reward)
        except (TypeError, ValueError):
            got = reprlib.repr(result)
            return Step(
                index,
                action.to_dict(),
                "",
                error=f"TypeError: expected env.step() to return a StepResult, got {got}",
                policy_seconds=policy_seconds,
                env_seconds=env_seconds,
            )
        info = info if isinstance(info, dict) else {}
        executed = info.get("rules_replaced_action")
        invalid = info.get("invalid_action")
        invalid = None if invalid is None or invalid is False else str(invalid)
        observation = clip_observation(str(observation), self.max_observation_chars)
        if invalid is not None:
            observation = rejected_observation(observation, invalid)
        return Step(
            index,
            action.to_dict(),
            observation,
            reward=reward,
            terminated=bool(terminated),
            truncated=bool(truncated),
            blocked=bool(info.get("blocked", False)),
            invalid=invalid,
            policy_seconds=policy_seconds,
            env_seconds=env_seconds,
            executed_action=dict(executed) if isinstance(executed, dict) else None,
        )

    def _finish(self) -> None:
        trajectory = self.trajectory
        if self.reset_done:
            try:
                evaluation = self.env.evaluate()
                if not isinstance(evaluation, Evaluation):
                    raise TypeError(
                        f"expected evaluate() to return an Evaluation, got "
                        f"{type(evaluation).__name__}"
                    )
                trajectory.evaluation = evaluation
            except Exception as e:
                trajectory.evaluation = None
                message = f"evaluate() failed: {_describe_error(e)}"
                if trajectory.error is None:
                    trajectory.end_reason = "env_error"
                    trajectory.error = message
                else:
                    _log.warning("%s (after the episode ended: %s)", message, trajectory.error)
        trajectory.usage = _usage_of(self.policy)


# -- helpers ---------------------------------------------------------------------------------


def _attribute(env: ActionableEnv, name: str, default: Any) -> Any:
    try:
        return getattr(env, name)
    except Exception:  # a broken property must not break the record
        return default


def _spec_of(env: ActionableEnv) -> tuple[str, dict[str, Any]]:
    """The env's spec id and spec dict; a minimal stand-in when the stack cannot be serialized."""
    try:
        spec = HarnessSpec.from_env(env)
        return spec.spec_id, spec.to_dict()
    except Exception as e:
        _log.warning("cannot describe %r as a HarnessSpec (%s); recording a minimal spec", env, e)
        return "unserializable", {
            "spec_id": "unserializable",
            "bridge": {
                "name": str(_attribute(env, "bridge_name", "")),
                "task_id": str(_attribute(env, "task_id", "")),
            },
            "env": repr(env),
            "error": _describe_error(e),
        }


def _policy_name(policy: Policy, policy_name: str | None) -> str:
    if policy_name is not None:
        return policy_name
    try:
        return describe_policy(policy)
    except Exception as e:
        _log.warning("%s.describe() failed: %s", type(policy).__name__, e)
        return type(policy).__name__


def _usage_of(policy: Policy) -> dict[str, int]:
    try:
        return policy_usage(policy)
    except Exception as e:
        _log.warning("%s.usage() failed: %s", type(policy).__name__, e)
        return {}


def _skills_of(policy: Policy) -> list[dict[str, Any]] | None:
    """The skills the policy reports showing this episode (its ``skills_shown()``), if any."""
    shown = getattr(policy, "skills_shown", None)
    if not callable(shown):
        return None
    try:
        skills = shown()
        if not isinstance(skills, list) or not all(isinstance(s, dict) for s in skills):
            raise TypeError(f"expected a list of dicts, got {reprlib.repr(skills)}")
        return [dict(s) for s in skills]
    except Exception as e:
        _log.warning("%s.skills_shown() failed: %s", type(policy).__name__, e)
        return None


def _close(env: ActionableEnv) -> None:
    try:
        env.close()
    except Exception as e:
        _log.warning("closing %r failed: %s", env, e)


def _check_arguments(
    env: object,
    policy: object,
    max_steps: object,
    seed: object,
    step_timeout: object,
    policy_name: object,
    max_observation_chars: object,
) -> None:
    if not isinstance(env, ActionableEnv):
        raise TypeError(f"expected an ActionableEnv, got {type(env).__name__}")
    if not isinstance(policy, Policy):
        raise TypeError(
            f"expected a Policy (an object with start(instruction, tools) and act(observation)), "
            f"got {type(policy).__name__}"
        )
    if max_steps is not None and (
        isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1
    ):
        raise ValueError(f"expected max_steps to be a positive int or None, got {max_steps!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"expected an int seed, got {seed!r}")
    if step_timeout is not None and (
        isinstance(step_timeout, bool)
        or not isinstance(step_timeout, int | float)
        or not 0 < step_timeout < math.inf
    ):
        raise ValueError(
            f"expected step_timeout to be a positive number of seconds or None, got "
            f"{step_timeout!r}"
        )
    if policy_name is not None and (not isinstance(policy_name, str) or not policy_name):
        raise TypeError(f"expected policy_name to be a non-empty str or None, got {policy_name!r}")
    if max_observation_chars is not None and (
        isinstance(max_observation_chars, bool)
        or not isinstance(max_observation_chars, int)
        or max_observation_chars < 1
    ):
        raise ValueError(
            "expected max_observation_chars to be a positive int or None, got "
            f"{max_observation_chars!r}"
        )


def rollout(
    env: ActionableEnv,
    policy: Policy,
    *,
    max_steps: int | None = None,
    seed: int = 0,
    step_timeout: float | None = None,
    policy_name: str | None = None,
    close: bool = True,
    max_observation_chars: int | None = MAX_OBSERVATION_CHARS,
) -> Trajectory:
    """Plays one episode of ``env`` with ``policy`` and records it.

    The sequence is ``env.reset(seed=seed)``, ``policy.start(instruction, tools, max_steps=...)``,
    ``policy.attach(env)`` if the policy has it (privileged oracle policies only), then
    ``policy.act(observation)`` / ``env.step(action)`` until the env terminates or truncates, or
    ``max_steps`` agent steps (invalid ones included) are used, and finally ``env.evaluate()``.
    A policy with a ``skills_shown()`` extra (a skill-equipped
    :class:`~envharness.rollout.chat.ChatModelPolicy`) is asked after ``start`` which skills it
    was shown; they are recorded in ``Trajectory.skills``.

    How an episode ends (``Trajectory.end_reason``):

    - ``"terminated"`` / ``"truncated"``: the env said so.
    - ``"budget"``: ``max_steps`` steps were used.
    - ``"policy_error"``: ``start``, ``attach`` or ``act`` raised something other than
      :class:`~envharness.errors.InvalidActionError` (no step is recorded for it).
    - ``"timeout"``: ``act`` took longer than ``step_timeout`` (no step is recorded for it).
    - ``"env_error"``: ``reset``, ``tools``, ``step`` or ``evaluate`` raised (a harness
      component's :class:`~envharness.errors.RulesError` included); a failed ``step`` is recorded
      as a step holding the action and the error.

    An ``InvalidActionError`` from ``act`` (no usable action) or from ``env.step`` (the action
    does not fit the tool schemas) becomes an invalid step: its observation is short feedback
    (:func:`invalid_action_feedback`: the error, that nothing changed, the tool's usage when the
    call was malformed, a digest of the current observation), and that feedback is what the
    policy sees next. A well-formed action the env rejects keeps the env's own observation, with
    the env's reason (``info["invalid_action"]``) added when the observation does not already say
    it (:func:`rejected_observation`); the reason is recorded in ``Step.invalid`` and
    ``info["blocked"]`` in ``Step.blocked``. Errors are recorded as ``"ExceptionType: message"``.
    The policy's ``start`` gets the budget as ``max_steps=`` when it accepts that keyword.

    With ``step_timeout``, each ``act`` runs in a daemon thread. On a timeout the loop stops
    waiting and ends the episode, but Python cannot stop a thread: the abandoned ``act`` may keep
    running in the background until it returns (its result is discarded), so a policy that can
    hang should also bound its own calls (e.g. a model client timeout).

    Args:
        env: The env to play (a bridge or a harness stack).
        policy: A fresh policy for this episode.
        max_steps: The agent's step budget; ``env.max_steps`` by default.
        seed: The episode seed, given to ``env.reset``.
        step_timeout: Seconds the policy may take per action; ``None`` waits forever.
        policy_name: How to record the policy; by default ``policy.describe()`` if the policy has
            it, else its class name.
        close: Whether to close ``env`` at the end (always, errors included).
        max_observation_chars: Observations longer than this are cut (the cut said in the
            text) before the policy sees them and the trajectory stores them; ``None`` keeps
            them whole.

    Returns:
        The episode's :class:`~envharness.rollout.trajectory.Trajectory`.

    Raises:
        TypeError: If ``env`` is not an ``ActionableEnv``, ``policy`` has no ``start``/``act``,
            or ``seed`` or ``policy_name`` has the wrong type.
        ValueError: If ``max_steps`` or ``step_timeout`` is not positive.

    Example:
        >>> from envharness import Action, load_bridge
        >>> class Solve:
        ...     plan = [Action("combine", {"a": "6", "op": "*", "b": "4"}),
        ...             Action("combine", {"a": "24", "op": "*", "b": "1"}),
        ...             Action("combine", {"a": "24", "op": "*", "b": "1"})]
        ...     def start(self, instruction, tools):
        ...         self.queue = list(self.plan)
        ...     def act(self, observation):
        ...         return self.queue.pop(0)
        >>> trajectory = rollout(load_bridge("toy24", task_id="1-1-4-6"), Solve())
        >>> trajectory.end_reason, trajectory.success, len(trajectory.steps)
        ('terminated', True, 3)
    """
    try:
        _check_arguments(
            env, policy, max_steps, seed, step_timeout, policy_name, max_observation_chars
        )
        budget = env.max_steps if max_steps is None else max_steps
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise ValueError(
                f"{env!r} has max_steps={budget!r}; pass a positive int max_steps to rollout()"
            )
        episode = _Episode(
            env,
            policy,
            budget=budget,
            seed=seed,
            step_timeout=None if step_timeout is None else float(step_timeout),
            policy_name=_policy_name(policy, policy_name),
            max_observation_chars=max_observation_chars,
        )
        return episode.run()
    finally:
        if close and isinstance(env, ActionableEnv):
            _close(env)
