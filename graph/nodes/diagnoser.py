"""``diagnoser``: what is wrong with the policy on this task, from the baseline statistics."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from envharness.graph.context import RiggerContext
from envharness.graph.heuristic import heuristic_diagnosis
from envharness.graph.nodes._common import load_trajectories, trace_config
from envharness.graph.state import RiggerState

__all__ = ["diagnoser"]


def diagnoser(state: RiggerState, runtime: Runtime[RiggerContext]) -> dict[str, Any]:
    """Diagnoses the baseline with the heuristic or the diagnoser model."""
    context = runtime.context
    trajectories = load_trajectories(context, state["baseline"])
    if context.uses_heuristic("diagnoser"):
        return {"diagnosis": heuristic_diagnosis(trajectories, context.objective).to_dict()}
    from envharness.graph.designer import model_diagnosis, resolve_model
    from envharness.harness.spec import HarnessSpec
    from envharness.prompts import load_hints
    from envharness.rollout.stats import RolloutStats

    bridge = HarnessSpec.from_dict(state["base_spec"]).bridge.name
    diagnosis = model_diagnosis(
        resolve_model(context.diagnoser_model),
        trajectories,
        RolloutStats.from_dict(state["baseline_stats"]),
        context.objective,
        bridge_hints=load_hints(bridge),
        config=trace_config("diagnoser", state, context),
    )
    return {"diagnosis": diagnosis.to_dict(), "model_calls": 1}
