"""``Trajectory``: the lossless JSON record of one episode."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Literal

import orjson

from envharness.core import Action, Evaluation
from envharness.errors import TrajectoryError

__all__ = ["END_REASONS", "EndReason", "Step", "Trajectory"]

EndReason = Literal[
    "terminated",  # the environment ended the episode
    "truncated",  # the environment cut the episode short
    "budget",  # the agent used its max_steps
    "policy_error",  # the policy raised something other than InvalidActionError
    "timeout",  # the policy took longer than the per-step limit
    "env_error",  # the environment (or a harness component, e.g. RulesError) raised
]
END_REASONS: tuple[str, ...] = (
    "terminated",
    "truncated",
    "budget",
    "policy_error",
    "timeout",
    "env_error",
)


def _action_key(action: Mapping[str, Any] | None) -> str | None:
    if action is None:
        return None
    return json.dumps(
        {"tool": action.get("tool"), "args": action.get("args") or {}},
        sort_keys=True,
        default=str,
    )


@dataclass
class Step:
    """One agent step.

    Attributes:
        index: 0-based step number.
        action: The action taken, or ``None`` when the policy produced no usable action.
        observation: What the agent saw after the step (feedback for an invalid step).
        reward: The bridge's reward.
        terminated: The environment ended the episode.
        truncated: The environment cut the episode short.
        blocked: A rule blocked the action (the env below was not stepped).
        invalid: Why the action was invalid (policy output or the env's own feedback), if it was.
        error: An error that ended the episode at this step, if any.
        policy_seconds: Wall time the policy took to act.
        env_seconds: Wall time the environment took to step.
        executed_action: The action a rule ran instead of the agent's ``action`` (Rules built
            with ``allow_rewrite=True``); ``None`` when the agent's own action ran.
    """

    index: int
    action: dict[str, Any] | None
    observation: str
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    blocked: bool = False
    invalid: str | None = None
    error: str | None = None
    policy_seconds: float = 0.0
    env_seconds: float = 0.0
    executed_action: dict[str, Any] | None = None

    @property
    def parsed_action(self) -> Action | None:
        """The action as an :class:`~envharness.core.Action`."""
        return Action.from_dict(self.action) if self.action is not None else None


@dataclass
class Trajectory:
    """One episode: who played what, every step, and the verifier's verdict.

    Attributes:
        task_id: The task.
        bridge: The bridge name.
        spec_id: The harness spec's id (the bare bridge has one too).
        spec: The harness spec as a dict (rebuilds the env).
        seed: The episode seed.
        policy: A description of the policy (e.g. ``"oracle:0.5"``).
        instruction: The instruction the policy was given.
        first_observation: The observation after reset.
        steps: The agent's steps.
        evaluation: The bridge's evaluation at the end (``None`` if reset failed).
        end_reason: Why the episode ended (one of :data:`END_REASONS`).
        error: The error that ended it, if any.
        usage: Token usage summed over the episode.
        started_at: UNIX time the episode started.
        duration_seconds: Wall time of the whole episode.
        max_steps: The agent's budget.
        skills: The skills the policy was shown, when it reports them (``skills_shown()``):
            each a ``Skill.to_dict()``, or ``{"text": TEXT}`` for a plain skill text; ``None``
            when the policy does not report skills (records written before this field too).
    """

    task_id: str
    bridge: str
    spec_id: str
    spec: dict[str, Any]
    seed: int
    policy: str
    instruction: str = ""
    first_observation: str = ""
    steps: list[Step] = field(default_factory=list)
    evaluation: Evaluation | None = None
    end_reason: str = "budget"
    error: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    started_at: float = 0.0
    duration_seconds: float = 0.0
    max_steps: int = 0
    skills: list[dict[str, Any]] | None = None

    @property
    def success(self) -> bool:
        """Whether the bridge's verifier says the task was accomplished."""
        return self.evaluation is not None and self.evaluation.success

    @property
    def n_steps(self) -> int:
        """The number of agent steps (invalid and blocked ones included)."""
        return len(self.steps)

    @property
    def n_invalid(self) -> int:
        """The number of steps whose action was invalid (policy output or the env's feedback)."""
        return sum(1 for s in self.steps if s.invalid is not None)

    @property
    def n_blocked(self) -> int:
        """The number of steps a rule blocked."""
        return sum(1 for s in self.steps if s.blocked)

    @property
    def n_rewritten(self) -> int:
        """The number of steps where a rule ran another action than the agent's."""
        return sum(1 for s in self.steps if s.executed_action is not None)

    def action_keys(self) -> list[str | None]:
        """One canonical text per step (``Action.key()``'s form); ``None`` for no action.

        This is the input :func:`envharness.rollout.stats.find_loop` expects; the position in the
        list is the step index.
        """
        return [_action_key(s.action) for s in self.steps]

    def to_dict(self, *, compact: bool = False) -> dict[str, Any]:
        """The trajectory as a JSON-able dict.

        Args:
            compact: Leave out each step's fields that hold their defaults (``reward`` 0.0,
                ``blocked`` false, ``error`` null ...); :meth:`from_dict` reads both forms. Worker
                processes send trajectories this way; files keep every field.
        """
        # Built field by field: dataclasses.asdict deep-copies every step, which costs a third
        # of a short episode. Actions, usage and specs are plain JSON data, copied shallowly.
        data = {f.name: getattr(self, f.name) for f in _TRAJECTORY_FIELDS}
        if compact:
            data["steps"] = [_compact_step(s) for s in self.steps]
        else:
            data["steps"] = [{f.name: getattr(s, f.name) for f in _STEP_FIELDS} for s in self.steps]
        data["evaluation"] = self.evaluation.to_dict() if self.evaluation is not None else None
        data["usage"] = dict(self.usage)
        if self.skills is None:  # left out, so records of policies without skills stay as before
            del data["skills"]
        else:
            data["skills"] = [dict(skill) for skill in self.skills]
        return data

    def to_json(self, *, compact: bool = False) -> str:
        """The trajectory as one line of JSON (NaN and infinities are refused).

        Args:
            compact: As in :meth:`to_dict`.
        """
        return json.dumps(self.to_dict(compact=compact), allow_nan=False, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Trajectory:
        """Rebuilds a trajectory from :meth:`to_dict` output.

        Raises:
            TrajectoryError: Naming what is malformed.
        """
        try:
            fields = dict(data)
            fields["steps"] = [Step(**s) for s in fields.get("steps", [])]
            if fields.get("evaluation") is not None:
                fields["evaluation"] = Evaluation.from_dict(fields["evaluation"])
            if fields.get("end_reason", "budget") not in END_REASONS:
                raise TrajectoryError(
                    f"expected end_reason in {END_REASONS}, got {fields['end_reason']!r}"
                )
            return cls(**fields)
        except (TypeError, KeyError, ValueError, AttributeError) as e:
            raise TrajectoryError(f"malformed trajectory: {e}") from e

    @classmethod
    def from_json(cls, text: str) -> Trajectory:
        """Parses one line of :meth:`to_json` output.

        Raises:
            TrajectoryError: If the text is not a valid trajectory.
        """
        try:
            data = _loads(text)
        except json.JSONDecodeError as e:
            raise TrajectoryError(f"trajectory is not valid JSON: {e}") from e
        if not isinstance(data, Mapping):
            raise TrajectoryError(f"expected a JSON object, got {type(data).__name__}")
        return cls.from_dict(data)


def _loads(text: str) -> Any:
    """``json.loads(text)``, through orjson when it can read the text.

    Parsing is the caller's share of a parallel batch (each worker's trajectory line is read
    here), and orjson reads one in a third to a half of json's time. It reads strict JSON only; what
    it refuses (``NaN``, integers beyond 64 bits, lone surrogates, or a malformed line) goes to
    the standard parser, so the result and the errors are exactly ``json.loads``'s.
    """
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


_STEP_FIELDS = fields(Step)
_TRAJECTORY_FIELDS = fields(Trajectory)
_STEP_DEFAULTS = tuple((f.name, f.default) for f in _STEP_FIELDS if f.default is not MISSING)
_STEP_REQUIRED = tuple(f.name for f in _STEP_FIELDS if f.default is MISSING)


def _compact_step(step: Step) -> dict[str, Any]:
    """A step's fields without those that equal their default (of the same type)."""
    data = {name: getattr(step, name) for name in _STEP_REQUIRED}
    for name, default in _STEP_DEFAULTS:
        value = getattr(step, name)
        if not (value is default or (type(value) is type(default) and value == default)):
            data[name] = value
    return data
