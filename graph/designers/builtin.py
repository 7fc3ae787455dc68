"""The two built-in designers behind the :class:`~envharness.graph.designers.Designer` protocol.

- :class:`HeuristicDesign` — the offline template search
  (:class:`~envharness.graph.heuristic.HeuristicDesigner`).
- :class:`ModelDesign` — the tool-calling designer agent over any LangChain chat model; the
  brief's earlier attempts become its feedback (:mod:`~envharness.graph.designers.feedback`:
  the full candidates, verdicts with the judge's statistics, knob values tried, the oracle
  check and validation episodes, within a token budget).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from envharness.errors import RiggerError
from envharness.graph.designers.feedback import render_feedback
from envharness.graph.designers.protocol import (
    DEFAULT_FEEDBACK_BUDGET,
    Design,
    DesignBrief,
    Diagnosed,
    DiagnosisBrief,
    PastAttempt,
)
from envharness.graph.records import Candidate, Verdict

__all__ = [
    "HeuristicDesign",
    "HeuristicDiagnosis",
    "ModelDesign",
    "ModelDiagnosis",
    "attempts_feedback",
]


class HeuristicDesign:
    """The offline designer: template candidates chosen by a bracketing search."""

    name = "heuristic"

    def design(self, brief: DesignBrief) -> Design:
        """Proposes the next template candidate (``None`` when the templates are exhausted)."""
        from envharness.graph.heuristic import DesignContext, HeuristicDesigner

        siblings = [t for t in brief.siblings if t != brief.task_id]
        # No siblings given: let the designer find other tasks of the bridge itself.
        context = DesignContext.from_spec(
            brief.base_spec, list(brief.baseline), siblings=siblings or None
        )
        candidate = HeuristicDesigner().propose(
            context, brief.diagnosis, brief.objective, list(brief.attempts)
        )
        return Design(candidate)


def attempts_feedback(
    attempts: Sequence[tuple[Candidate, Verdict] | PastAttempt],
    *,
    budget: int = DEFAULT_FEEDBACK_BUDGET,
) -> str | None:
    """Every earlier attempt and its verdict, for a model designer's prompt (``None``: none).

    Args:
        attempts: ``(candidate, verdict)`` pairs (numbered 1..) or
            :class:`~envharness.graph.designers.PastAttempt` records, oldest first.
        budget: Tokens the text may fill (see :func:`render_feedback`).
    """
    past = [
        a if isinstance(a, PastAttempt) else PastAttempt(i, a[0], a[1])
        for i, a in enumerate(attempts, start=1)
    ]
    return render_feedback(past, budget=budget)


def _max_steps(brief: DesignBrief) -> int | None:
    """The policy's step budget on the task, as the baseline recorded it."""
    return next((t.max_steps for t in brief.baseline if t.max_steps), None)


class ModelDesign:
    """The designer agent: a tool-calling chat model driving the designer tools.

    Args:
        model: A chat model object or an ``init_chat_model`` string.
        max_turns: Model calls it may spend per candidate.
        feedback_budget: Tokens the feedback on earlier attempts may fill; the brief's
            (:attr:`DesignBrief.feedback_budget`) when ``None``.
    """

    def __init__(
        self, model: Any, *, max_turns: int = 12, feedback_budget: int | None = None
    ) -> None:
        if feedback_budget is not None and (
            isinstance(feedback_budget, bool)
            or not isinstance(feedback_budget, int)
            or feedback_budget < 1
        ):
            raise RiggerError(
                f"expected feedback_budget to be a positive int, got {feedback_budget!r}"
            )
        self.model = model
        self.max_turns = max_turns
        self.feedback_budget = feedback_budget
        self.name = _label(model)

    def feedback(self, brief: DesignBrief) -> str | None:
        """The rendered feedback on the brief's earlier attempts."""
        budget = self.feedback_budget or brief.feedback_budget
        return render_feedback(brief.history(), budget=budget)

    def design(self, brief: DesignBrief) -> Design:
        """Runs the agent until it submits a candidate (or gives up)."""
        # Imported here, not for a cycle: the agent loads LangChain and LangGraph, which
        # `import envharness.graph` and the heuristic designer do without.
        from envharness.graph.designer import resolve_model, run_designer
        from envharness.tools import DesignSession

        # The tools list siblings for link_task_ids; with none given they find the bridge's.
        siblings = [t for t in brief.siblings if t != brief.task_id] or None
        session = DesignSession(
            base_spec=brief.base_spec,
            trajectories=list(brief.baseline),
            stats=brief.baseline_stats,
            diagnosis=brief.diagnosis,
            objective=brief.objective,
            siblings=siblings,
        )
        candidate = run_designer(
            resolve_model(self.model),
            session,
            diagnosis=brief.diagnosis,
            objective=brief.objective,
            feedback=self.feedback(brief),
            max_turns=self.max_turns,
            config=brief.config,
            judge_settings=brief.judge,
            iteration=brief.iteration,
            max_iterations=brief.max_iterations,
            max_steps=_max_steps(brief),
            events=brief.events,
        )
        return Design(candidate, session.model_calls)


def _label(model: Any) -> str:
    if isinstance(model, str):
        return model
    return (
        getattr(model, "model_name", None) or getattr(model, "model", None) or type(model).__name__
    )


class HeuristicDiagnosis:
    """The offline diagnoser: direction and weaknesses from the baseline's statistics."""

    name = "heuristic"

    def diagnose(self, brief: DiagnosisBrief) -> Diagnosed:
        """Diagnoses the baseline without a model."""
        from envharness.graph.heuristic import heuristic_diagnosis

        return Diagnosed(heuristic_diagnosis(list(brief.baseline), brief.objective))


class ModelDiagnosis:
    """A chat model's structured diagnosis of the baseline.

    Args:
        model: A chat model object or an ``init_chat_model`` string.
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self.name = _label(model)

    def diagnose(self, brief: DiagnosisBrief) -> Diagnosed:
        """Asks the model once, with the bridge's hints."""
        from envharness.graph.designer import model_diagnosis, resolve_model  # LangChain: as above
        from envharness.prompts import load_hints

        diagnosis = model_diagnosis(
            resolve_model(self.model),
            list(brief.baseline),
            brief.baseline_stats,
            brief.objective,
            bridge_hints=load_hints(brief.base_spec.bridge.name),
            config=brief.config,
        )
        return Diagnosed(diagnosis, 1)
