"""``diagnoser``: what is wrong with the policy on this task, through the Diagnoser protocol."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from envharness.graph.context import RiggerContext
from envharness.graph.designers import DiagnosisBrief, resolve_diagnoser
from envharness.graph.nodes._common import load_trajectories, trace_config
from envharness.graph.state import RiggerState
from envharness.harness.spec import HarnessSpec
from envharness.rollout.stats import RolloutStats

__all__ = ["diagnoser"]


def diagnoser(state: RiggerState, runtime: Runtime[RiggerContext]) -> dict[str, Any]:
    """Diagnoses the baseline with the rig's diagnoser (heuristic, model or a third party's)."""
    context = runtime.context
    brief = DiagnosisBrief(
        task_id=state["task_id"],
        base_spec=HarnessSpec.from_dict(state["base_spec"]),
        objective=context.objective,  # type: ignore[arg-type]
        baseline=load_trajectories(context, state["baseline"]),
        baseline_stats=RolloutStats.from_dict(state["baseline_stats"]),
        config=trace_config("diagnoser", state, context),
    )
    diagnosed = resolve_diagnoser(context.diagnoser_model).diagnose(brief)
    return {"diagnosis": diagnosed.diagnosis.to_dict(), "model_calls": diagnosed.model_calls}
