"""``writer``: the rig's designer proposes a candidate, through the one Designer protocol."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from langgraph.runtime import Runtime

from envharness.errors import EnvHarnessError
from envharness.graph.context import RiggerContext
from envharness.graph.designers import (
    DesignBrief,
    HeuristicDesign,
    PastAttempt,
    resolve_designer,
)
from envharness.graph.designers.feedback import pick_episodes
from envharness.graph.nodes._common import load_trajectories, trace_config
from envharness.graph.records import Candidate, Diagnosis, Verdict
from envharness.graph.state import RiggerState
from envharness.harness.spec import HarnessSpec
from envharness.rollout.stats import RolloutStats

__all__ = ["writer"]

_NOTHING_TO_CHANGE = "the baseline already meets the objective; no component is needed"


def _history(state: RiggerState) -> list[tuple[Candidate, Verdict]]:
    return [
        (Candidate.from_dict(a["candidate"]), Verdict.from_dict(a["verdict"]))
        for a in state.get("attempts", [])
        if a["candidate"] is not None
    ]


def _past(context: RiggerContext, state: RiggerState) -> list[PastAttempt]:
    """The earlier attempts with a failed and a successful validation episode each.

    The episodes come from the rollouts judged (the verdict's trajectory keys); a run store
    that no longer holds them leaves the attempt without episodes.
    """
    past = []
    for attempt in state.get("attempts", []):
        if attempt["candidate"] is None:
            continue
        verdict = Verdict.from_dict(attempt["verdict"])
        try:
            judged = [t for t in load_trajectories(context, verdict.trajectories) if t]
        except (KeyError, OSError, EnvHarnessError):
            judged = []
        failed, succeeded = pick_episodes(judged)
        candidate = Candidate.from_dict(attempt["candidate"])
        past.append(PastAttempt(attempt["iteration"], candidate, verdict, failed, succeeded))
    return past


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
    """Writes the next candidate, steered by the diagnosis and the previous verdicts.

    A model designer reports each of its model calls on the stream (``designer_turn``; see
    :mod:`envharness.graph.events`); its trace metadata names the iteration it writes.
    """
    context = runtime.context
    iteration = state.get("iteration", 0) + 1
    history = _history(state)
    diagnosis = _steered(Diagnosis.from_dict(state["diagnosis"]), history)
    designer = resolve_designer(context.writer_model, max_turns=context.max_designer_turns)
    calls = 0
    if diagnosis.direction == "none":
        candidate: Candidate | None = Candidate(rationale=_NOTHING_TO_CHANGE, template="none")
    else:
        brief = DesignBrief(
            task_id=state["task_id"],
            base_spec=HarnessSpec.from_dict(state["base_spec"]),
            objective=context.objective,  # type: ignore[arg-type]
            diagnosis=diagnosis,
            baseline=load_trajectories(context, state["baseline"]),
            baseline_stats=RolloutStats.from_dict(state["baseline_stats"]),
            attempts=history,
            iteration=iteration,
            max_iterations=context.max_iterations,
            siblings=tuple(context.siblings),
            config=trace_config("writer", state, context, iteration=iteration),
            judge=context.judge_settings,
            past=[] if isinstance(designer, HeuristicDesign) else _past(context, state),
            feedback_budget=context.feedback_budget,
            events=runtime.stream_writer,
        )
        design = designer.design(brief)
        candidate, calls = design.candidate, design.model_calls
    return {
        "candidate": candidate.to_dict() if candidate is not None else None,
        "candidate_designer": designer.name,
        "candidate_model_calls": calls,
        "iteration": iteration,
        "model_calls": calls,
    }
