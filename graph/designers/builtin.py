"""The two built-in designers behind the :class:`~envharness.graph.designers.Designer` protocol.

- :class:`HeuristicDesign` — the offline template search
  (:class:`~envharness.graph.heuristic.HeuristicDesigner`).
- :class:`ModelDesign` — the tool-calling designer agent over any LangChain chat model; the
  brief's attempts become its feedback (code, verdict, side, judgement and knob values).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from envharness.graph.designers.protocol import Design, DesignBrief, Diagnosed, DiagnosisBrief
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


def attempts_feedback(attempts: Sequence[tuple[Candidate, Verdict]]) -> str | None:
    """Every earlier attempt and its structured verdict, for a model designer's prompt."""
    if not attempts:
        return None
    lines = []
    for number, (candidate, verdict) in enumerate(attempts, start=1):
        parts = []
        if candidate.in_env_actions:
            parts.append(f"Setups {candidate.in_env_actions}")
        if candidate.rules_code is not None:
            parts.append(f"Rules:\n{candidate.rules_code.strip()}\n")
        if candidate.link_task_ids:
            parts.append(f"Link to {candidate.link_task_ids}")
        if candidate.components:
            parts.append(f"components {json.dumps(candidate.components)}")
        what = ", ".join(parts) or "no change"
        why = f" — rationale: {candidate.rationale}" if candidate.rationale else ""
        side = f" ({verdict.side.replace('_', ' ')})" if verdict.side else ""
        knobs = f"; knobs calibrated to {json.dumps(verdict.knobs)}" if verdict.knobs else ""
        lines.append(
            f"attempt {number}: {what}{why}\n  verdict: {verdict.decision}{side}: "
            f"{verdict.reason}{knobs}"
        )
    return "\n".join(lines)


class ModelDesign:
    """The designer agent: a tool-calling chat model driving the designer tools.

    Args:
        model: A chat model object or an ``init_chat_model`` string.
        max_turns: Model calls it may spend per candidate.
    """

    def __init__(self, model: Any, *, max_turns: int = 12) -> None:
        self.model = model
        self.max_turns = max_turns
        self.name = (
            model
            if isinstance(model, str)
            else (
                getattr(model, "model_name", None)
                or getattr(model, "model", None)
                or type(model).__name__
            )
        )

    def design(self, brief: DesignBrief) -> Design:
        """Runs the agent until it submits a candidate (or gives up)."""
        from envharness.graph.designer import resolve_model, run_designer
        from envharness.tools import DesignSession

        session = DesignSession(
            base_spec=brief.base_spec,
            trajectories=list(brief.baseline),
            stats=brief.baseline_stats,
            diagnosis=brief.diagnosis,
            objective=brief.objective,
        )
        candidate = run_designer(
            resolve_model(self.model),
            session,
            diagnosis=brief.diagnosis,
            objective=brief.objective,
            feedback=attempts_feedback(brief.attempts),
            max_turns=self.max_turns,
            config=brief.config,
            judge_settings=brief.judge,
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
        from envharness.graph.designer import model_diagnosis, resolve_model
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
