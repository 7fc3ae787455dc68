"""The records EnvRigger passes between its nodes: diagnoses, candidates and verdicts.

They are plain dataclasses with ``to_dict``/``from_dict`` so they live in the graph's
(checkpointed, JSON-serialized) state and in the run directory.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from envharness.core import Action
from envharness.harness.spec import BridgeSpec, ComponentSpec, HarnessSpec
from envharness.sandbox import rules_sha256

__all__ = ["Candidate", "Diagnosis", "Direction", "Verdict", "Weakness"]

Direction = Literal["scaffold", "harden", "fix-behaviour", "none"]
DIRECTIONS: tuple[str, ...] = ("scaffold", "harden", "fix-behaviour", "none")


@dataclass
class Weakness:
    """One weakness found in the baseline rollouts.

    Attributes:
        kind: A short category (``loop``, ``invalid_actions``, ``blocked``, ``budget``,
            ``wrong_end``, ``timeout``, ``policy_error``, ``env_error``, ``always_solves``,
            ``too_slow``, ``too_fast``, or a model's own word).
        description: The weakness in a sentence.
        evidence: Concrete pointers: episode and step numbers, repeated actions, error messages.
        episodes: How many of the K baseline episodes show it.
    """

    kind: str
    description: str
    evidence: list[str] = field(default_factory=list)
    episodes: int = 0


@dataclass
class Diagnosis:
    """What the diagnoser concluded from the baseline.

    Attributes:
        direction: ``scaffold`` (make it easier), ``harden`` (make it harder), ``fix-behaviour``
            (target a behaviour, e.g. a loop) or ``none`` (nothing to change).
        weaknesses: The weaknesses found, with evidence.
        stats: The baseline's :class:`~envharness.rollout.RolloutStats` as a dict.
        summary: A paragraph for the designer.
        source: ``heuristic`` or the model that produced it.
    """

    direction: Direction
    weaknesses: list[Weakness] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    summary: str = ""
    source: str = "heuristic"

    def to_dict(self) -> dict[str, Any]:
        """The diagnosis as a plain dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Diagnosis:
        """Rebuilds a diagnosis from :meth:`to_dict` output."""
        fields = dict(data)
        fields["weaknesses"] = [Weakness(**w) for w in fields.get("weaknesses", [])]
        return cls(**fields)


@dataclass
class Candidate:
    """A harness the writer proposes for one task.

    Attributes:
        in_env_actions: Setups actions (``{"tool", "args"}`` dicts), replayed after reset.
        rules_code: Rules code (``class _Rules``), or ``None`` for no Rules component.
        link_task_ids: Tasks of the same bridge played after this one (a sequential ``Link``), to
            lengthen the horizon.
        rationale: Why this should move the policy toward the objective.
        template: The heuristic template it came from, or ``None`` for a model's design.
    """

    in_env_actions: list[dict[str, Any]] = field(default_factory=list)
    rules_code: str | None = None
    link_task_ids: list[str] = field(default_factory=list)
    rationale: str = ""
    template: str | None = None

    def apply(self, base: HarnessSpec) -> HarnessSpec:
        """The spec of ``base`` with this candidate's components stacked on top.

        Setups go first (the start state), then Rules (around the agent's steps), then the Link
        to the extra tasks (their bare bridges), so the rules govern part 1 only.
        """
        components = list(base.components)
        if self.in_env_actions:
            actions = [Action.from_dict(a).to_dict() for a in self.in_env_actions]
            components.append(ComponentSpec("setups", {"in_env_actions": actions}))
        if self.rules_code is not None:
            config = {"rules_code": self.rules_code, "sha256": rules_sha256(self.rules_code)}
            components.append(ComponentSpec("rules", config))
        for task_id in self.link_task_ids:
            second = HarnessSpec(BridgeSpec(base.bridge.name, task_id, dict(base.bridge.options)))
            components.append(
                ComponentSpec("link", {"mode": "sequential", "second": second.to_dict()})
            )
        return HarnessSpec(base.bridge, tuple(components), base.lineage)

    def is_empty(self) -> bool:
        """Whether the candidate changes nothing."""
        return not self.in_env_actions and self.rules_code is None and not self.link_task_ids

    def to_dict(self) -> dict[str, Any]:
        """The candidate as a plain dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Candidate:
        """Rebuilds a candidate from :meth:`to_dict` output."""
        return cls(**data)


@dataclass
class Verdict:
    """The validator's decision on one candidate.

    Attributes:
        decision: ``accept``, ``refine`` (try again with feedback) or ``reject`` (give up).
        reason: Why, in a sentence the writer can act on.
        stats: The candidate's rollout statistics as a dict.
        rollouts: How many validation rollouts were spent (fewer than K when stopped early).
        early_stopped: Whether validation stopped before K rollouts because the decision could
            no longer change.
    """

    decision: Literal["accept", "refine", "reject"]
    reason: str
    stats: dict[str, Any] = field(default_factory=dict)
    rollouts: int = 0
    early_stopped: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The verdict as a plain dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        """Rebuilds a verdict from :meth:`to_dict` output."""
        return cls(**data)
