"""The designer and diagnoser interfaces: what each knows (a brief) and what it returns.

The writer node hands a :class:`DesignBrief` to whatever :class:`Designer` the rig was given —
the offline heuristic, a model agent, or a third party's — and gets a :class:`Design` back: a
:class:`~envharness.graph.records.Candidate` (components, knobs, rationale) or ``None`` when the
designer has nothing left to try. Verdicts in the brief are structured
(:class:`~envharness.graph.records.Verdict`: decision, side, judgement, knob values, the
oracle check), so no designer ever parses English; :attr:`DesignBrief.past` adds to each earlier
attempt a failed and a successful validation episode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from envharness.graph.events import EventWriter, ignore
from envharness.graph.judge.decisions import JudgeSettings
from envharness.graph.objective import Objective
from envharness.graph.records import Candidate, Diagnosis, Verdict
from envharness.harness.spec import HarnessSpec
from envharness.rollout.stats import RolloutStats
from envharness.rollout.trajectory import Trajectory

__all__ = [
    "DEFAULT_FEEDBACK_BUDGET",
    "Design",
    "DesignBrief",
    "Designer",
    "Diagnosed",
    "DiagnosisBrief",
    "Diagnoser",
    "PastAttempt",
]

DEFAULT_FEEDBACK_BUDGET = 6000
"""Tokens (about four characters each) a model designer's feedback on earlier attempts may use."""


@dataclass(frozen=True)
class PastAttempt:
    """One earlier write→validate iteration, with what its validation showed.

    Attributes:
        iteration: Its iteration number (1-based).
        candidate: The candidate, complete (code, Setups, Link, knobs).
        verdict: The validator's structured verdict (judgement, statistics, knob values tried,
            the oracle check).
        failed: A failed validation episode of the setting judged (``None`` when none failed
            or none was recorded).
        succeeded: A successful one (``None`` likewise).
    """

    iteration: int
    candidate: Candidate
    verdict: Verdict
    failed: Trajectory | None = None
    succeeded: Trajectory | None = None


@dataclass(frozen=True)
class DesignBrief:
    """Everything a designer knows when it proposes the next candidate.

    Attributes:
        task_id: The task being rigged.
        base_spec: The spec being rigged (its bridge gives the tools and the env-state schema).
        objective: The rig's objective.
        diagnosis: The diagnoser's conclusion (its direction steered by earlier verdicts).
        baseline: The baseline trajectories.
        baseline_stats: Their statistics.
        attempts: Earlier candidates and their structured verdicts, oldest first.
        past: The same attempts with their iteration numbers and a failed and a successful
            validation episode each (:class:`PastAttempt`), oldest first.
        iteration: This iteration's number (1-based).
        max_iterations: The iterations the rig may use.
        siblings: Other tasks of the bridge a candidate may link to.
        config: A LangChain run config for model calls (names, tags, metadata for tracing).
        judge: The validator's settings (confidence, budget, minimum effect).
        feedback_budget: Tokens (about four characters each) a model designer may spend on
            rendering :attr:`past`; the least useful parts are cut first.
        events: Where progress events go (the writer node's stream writer): a designer may
            report each model call as a ``designer_turn`` event
            (:class:`~envharness.graph.events.DesignerTurn`); it drops them outside a run.
    """

    task_id: str
    base_spec: HarnessSpec
    objective: Objective
    diagnosis: Diagnosis
    baseline: Sequence[Trajectory]
    baseline_stats: RolloutStats
    attempts: Sequence[tuple[Candidate, Verdict]] = ()
    iteration: int = 1
    max_iterations: int = 5
    siblings: Sequence[str] = ()
    config: dict[str, Any] = field(default_factory=dict)
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    past: Sequence[PastAttempt] = ()
    feedback_budget: int = DEFAULT_FEEDBACK_BUDGET
    events: EventWriter = field(default=ignore, repr=False, compare=False)

    def history(self) -> list[PastAttempt]:
        """:attr:`past`, or :attr:`attempts` numbered 1.. without episodes when it is empty."""
        if self.past:
            return list(self.past)
        return [PastAttempt(i, c, v) for i, (c, v) in enumerate(self.attempts, start=1)]


@dataclass(frozen=True)
class Design:
    """A designer's answer: the candidate (``None``: nothing left to try) and its cost."""

    candidate: Candidate | None
    model_calls: int = 0


@runtime_checkable
class Designer(Protocol):
    """Proposes candidates: ``name`` for records and traces, ``design(brief)`` for the work.

    Example:
        >>> class Nothing:
        ...     name = "nothing"
        ...     def design(self, brief):
        ...         return Design(None)
        >>> isinstance(Nothing(), Designer)
        True
    """

    name: str

    def design(self, brief: DesignBrief) -> Design:
        """The next candidate for ``brief``."""
        ...


@dataclass(frozen=True)
class DiagnosisBrief:
    """What a diagnoser reads: the task and its baseline.

    Attributes:
        task_id: The task being rigged.
        base_spec: The spec being rigged.
        objective: The rig's objective.
        baseline: The baseline trajectories.
        baseline_stats: Their statistics.
        config: A LangChain run config for model calls.
    """

    task_id: str
    base_spec: HarnessSpec
    objective: Objective
    baseline: Sequence[Trajectory]
    baseline_stats: RolloutStats
    config: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Diagnosed:
    """A diagnoser's answer and what it cost."""

    diagnosis: Diagnosis
    model_calls: int = 0


@runtime_checkable
class Diagnoser(Protocol):
    """Finds what the policy does wrong: ``name`` and ``diagnose(brief)``."""

    name: str

    def diagnose(self, brief: DiagnosisBrief) -> Diagnosed:
        """The diagnosis of ``brief``'s baseline."""
        ...
