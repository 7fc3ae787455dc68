"""``writer``: the designer proposes a candidate harness (heuristic templates or a model agent)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from langgraph.runtime import Runtime

from envharness.graph.context import RiggerContext
from envharness.graph.heuristic import DesignContext, HeuristicDesigner
from envharness.graph.nodes._common import load_trajectories, trace_config
from envharness.graph.records import Candidate, Diagnosis, Verdict
from envharness.graph.state import RiggerState
from envharness.harness.spec import HarnessSpec

__all__ = ["writer"]

_CODE_CHARS = 800
_NOTHING_TO_CHANGE = "the baseline already meets the objective; no component is needed"


def _history(state: RiggerState) -> list[tuple[Candidate, Verdict]]:
    return [
        (Candidate.from_dict(a["candidate"]), Verdict.from_dict(a["verdict"]))
        for a in state.get("attempts", [])
        if a["candidate"] is not None
    ]


def _feedback(history: list[tuple[Candidate, Verdict]]) -> str | None:
    """Every earlier attempt and its verdict, so the designer can steer (e.g. bisect a knob)."""
    if not history:
        return None
    lines = []
    for number, (candidate, verdict) in enumerate(history, start=1):
        parts = []
        if candidate.in_env_actions:
            parts.append(f"Setups {candidate.in_env_actions}")
        if candidate.rules_code is not None:
            code = candidate.rules_code.strip()
            if len(code) > _CODE_CHARS:
                code = code[:_CODE_CHARS] + "\n    ... (truncated)"
            parts.append(f"Rules:\n{code}\n")
        if candidate.link_task_ids:
            parts.append(f"Link to {candidate.link_task_ids}")
        what = ", ".join(parts) or "no change"
        why = f" — rationale: {candidate.rationale}" if candidate.rationale else ""
        lines.append(
            f"attempt {number}: {what}{why}\n  verdict: {verdict.decision}: {verdict.reason}"
        )
    return "\n".join(lines)


def _steered(diagnosis: Diagnosis, history: list[tuple[Candidate, Verdict]]) -> Diagnosis:
    """The diagnosis, its direction set by the fresh rollouts when "nothing to change" missed.

    A baseline diagnosed as already on target is confirmed on fresh seeds first; when that
    confirmation refines the empty candidate, its side says which way to go.
    """
    if diagnosis.direction != "none" or not history:
        return diagnosis
    side = next((v.side for _, v in reversed(history) if v.side is not None), None)
    if side is None:
        return diagnosis
    direction = "harden" if side == "too_easy" else "scaffold"
    return replace(diagnosis, direction=direction)


def writer(state: RiggerState, runtime: Runtime[RiggerContext]) -> dict[str, Any]:
    """Writes the next candidate, steered by the diagnosis and the previous verdicts."""
    context = runtime.context
    iteration = state.get("iteration", 0) + 1
    diagnosis = Diagnosis.from_dict(state["diagnosis"])
    base = HarnessSpec.from_dict(state["base_spec"])
    history = _history(state)
    designer = context.model_name("writer")
    calls = 0
    diagnosis = _steered(diagnosis, history)
    if diagnosis.direction == "none":
        candidate: Candidate | None = Candidate(rationale=_NOTHING_TO_CHANGE, template="none")
    elif context.uses_heuristic("writer"):
        baseline = load_trajectories(context, state["baseline"])
        siblings = [t for t in context.siblings if t != state["task_id"]]
        # No siblings given: let the designer find other tasks of the bridge itself.
        design = DesignContext.from_spec(base, baseline, siblings=siblings or None)
        candidate = HeuristicDesigner().propose(design, diagnosis, context.objective, history)
    else:
        from envharness.graph.designer import resolve_model, run_designer
        from envharness.rollout.stats import RolloutStats
        from envharness.tools import DesignSession

        session = DesignSession(
            base_spec=base,
            trajectories=load_trajectories(context, state["baseline"]),
            stats=RolloutStats.from_dict(state["baseline_stats"]),
            diagnosis=diagnosis,
            objective=context.objective,
        )
        feedback = _feedback(history)
        candidate = run_designer(
            resolve_model(context.writer_model),
            session,
            diagnosis=diagnosis,
            objective=context.objective,
            feedback=feedback,
            max_turns=context.max_designer_turns,
            config=trace_config("writer", state, context),
        )
        calls = session.model_calls
    return {
        "candidate": candidate.to_dict() if candidate is not None else None,
        "candidate_designer": designer,
        "candidate_model_calls": calls,
        "iteration": iteration,
        "model_calls": calls,
    }
