"""The records EnvRigger passes between its nodes: diagnoses, candidates and verdicts.

They are plain dataclasses with ``to_dict``/``from_dict`` so they live in the graph's
(checkpointed, JSON-serialized) state and in the run directory.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from envharness.core import Action
from envharness.errors import RiggerError
from envharness.graph.judge.calibration import Knob
from envharness.harness.spec import BridgeSpec, ComponentSpec, HarnessSpec
from envharness.sandbox import rules_sha256

__all__ = ["SETUP_STEPS", "Candidate", "Diagnosis", "Direction", "Verdict", "Weakness"]

SETUP_STEPS = "SETUP_STEPS"
"""The knob name for how many of a candidate's in-env actions are replayed."""

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
        components: Further components stacked last, as ``{"type", "config"}`` dicts
            (:class:`~envharness.harness.spec.ComponentSpec`): any registered component, e.g. a
            ``link`` to a spec of another bridge.
        knobs: The candidate's numeric dials (:class:`~envharness.graph.judge.Knob` dicts): a
            rules-code constant (``DROP_P``), or ``SETUP_STEPS`` (how many of the in-env
            actions are replayed). The validator calibrates the first one.
    """

    in_env_actions: list[dict[str, Any]] = field(default_factory=list)
    rules_code: str | None = None
    link_task_ids: list[str] = field(default_factory=list)
    rationale: str = ""
    template: str | None = None
    components: list[dict[str, Any]] = field(default_factory=list)
    knobs: list[dict[str, Any]] = field(default_factory=list)

    def knob_specs(self) -> list[Knob]:
        """The knobs as :class:`~envharness.graph.judge.Knob` objects.

        Raises:
            RiggerError: A malformed knob, or a knob the candidate has nothing to apply to.
        """
        from envharness.harness.knobs import rules_knobs

        knobs = [Knob.from_dict(k) for k in self.knobs]
        declared = rules_knobs(self.rules_code) if self.rules_code is not None else {}
        for knob in knobs:
            if knob.name == SETUP_STEPS:
                if not self.in_env_actions:
                    raise RiggerError(f"knob {SETUP_STEPS} needs in-env actions to replay")
                if not knob.integer or knob.low < 0 or knob.high > len(self.in_env_actions):
                    raise RiggerError(
                        f"knob {SETUP_STEPS} must be an integer knob within "
                        f"0..{len(self.in_env_actions)} (the number of in-env actions)"
                    )
            elif knob.name not in declared:
                names = ", ".join(sorted(declared)) or "none"
                raise RiggerError(
                    f"knob {knob.name!r} is not a constant of the rules code (declared: {names}); "
                    "write it as an upper-case module-level constant, e.g. DROP_P = 0.3"
                )
        return knobs

    def apply(self, base: HarnessSpec, knob_values: dict[str, float] | None = None) -> HarnessSpec:
        """The spec of ``base`` with this candidate's components stacked on top.

        Setups go first (the start state), then Rules (around the agent's steps), then the Link
        to the extra tasks (their bare bridges), so the rules govern part 1 only, then any
        further components.

        Args:
            base: The spec being rigged.
            knob_values: Knob values to build with (the knobs' own values when omitted).
        """
        values = {k["name"]: k["value"] for k in self.knobs}
        values.update(knob_values or {})
        components = list(base.components)
        actions = [Action.from_dict(a).to_dict() for a in self.in_env_actions]
        if SETUP_STEPS in values:
            actions = actions[: int(values.pop(SETUP_STEPS))]
        if actions:
            components.append(ComponentSpec("setups", {"in_env_actions": actions}))
        if self.rules_code is not None:
            config: dict[str, Any] = {
                "rules_code": self.rules_code,
                "sha256": rules_sha256(self.rules_code),
            }
            if values:
                config["knobs"] = dict(values)
            components.append(ComponentSpec("rules", config))
        for task_id in self.link_task_ids:
            second = HarnessSpec(BridgeSpec(base.bridge.name, task_id, dict(base.bridge.options)))
            components.append(
                ComponentSpec("link", {"mode": "sequential", "second": second.to_dict()})
            )
        for component in self.components:
            if not isinstance(component, dict) or set(component) != {"type", "config"}:
                raise RiggerError(
                    f"expected a component as {{'type': ..., 'config': {{...}}}}, got {component!r}"
                )
            components.append(ComponentSpec(component["type"], dict(component["config"])))
        return HarnessSpec(base.bridge, tuple(components), base.lineage)

    def is_empty(self) -> bool:
        """Whether the candidate changes nothing."""
        return (
            not self.in_env_actions
            and self.rules_code is None
            and not self.link_task_ids
            and not self.components
        )

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
        decision: ``accept``, ``refine`` (try again with feedback), ``undecided`` (the budget
            ran out before the judge was sure either way) or ``reject`` (give up).
        reason: Why, in a sentence the writer can act on.
        stats: The final setting's rollout statistics as a dict (the rollouts judged).
        rollouts: Policy rollouts the validation spent (every knob setting included).
        early_stopped: Whether the judge decided before the candidate's rollout budget ran out.
        side: For a refine, ``too_easy`` (make it harder or longer) or ``too_hard``; ``None``
            when the verdict has no side.
        judgement: The judge's :class:`~envharness.graph.judge.Judgement` as a dict (n,
            successes, interval, posterior probability, p-value, effect).
        knobs: The final knob values (empty without knobs).
        seeds: The seeds of the rollouts judged.
        calibration: Every knob setting sampled: values, n, successes, the judge's decision.
        baseline: For ``auto``, the fresh baseline rollouts the candidate was compared with
            (:class:`~envharness.graph.judge.Outcomes` as a dict).
        trajectories: Run-store keys of the rollouts judged (those of :attr:`seeds`, in order),
            so a designer can read validation episodes.
        oracle: The validator's oracle sanity check (``None`` when it did not run): ``passed``
            (``True``, ``False``, or ``None`` for a bridge without an oracle), ``problem``
            (``unsolvable``, ``out_of_steps``, ``does_not_start`` or ``None``), ``knobs`` (the
            easiest knob values it was run at), ``episodes`` (per seed: ``seed``, ``success``,
            ``end_reason``, ``steps``, ``max_steps``, ``blocked``, ``invalid``, ``error``) and
            ``plain`` (the same for the task without the candidate, when it was played),
            ``longer`` (one oracle episode with a larger step budget, when every episode ran
            out of steps) and ``message`` (the outcome in a sentence, with these numbers).
    """

    decision: Literal["accept", "refine", "undecided", "reject"]
    reason: str
    stats: dict[str, Any] = field(default_factory=dict)
    rollouts: int = 0
    early_stopped: bool = False
    side: Literal["too_easy", "too_hard"] | None = None
    judgement: dict[str, Any] | None = None
    knobs: dict[str, float] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=list)
    calibration: list[dict[str, Any]] = field(default_factory=list)
    baseline: dict[str, Any] | None = None
    trajectories: list[str] = field(default_factory=list)
    oracle: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The verdict as a plain dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        """Rebuilds a verdict from :meth:`to_dict` output."""
        return cls(**data)
