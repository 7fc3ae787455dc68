"""``observer``: K baseline rollouts of the policy on the task as it is."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from envharness.graph.context import RiggerContext
from envharness.graph.judge.decisions import Outcomes
from envharness.graph.nodes._common import play, task_seed
from envharness.graph.state import RiggerState
from envharness.harness.spec import HarnessSpec
from envharness.rollout.stats import RolloutStats

__all__ = ["observer"]


def observer(state: RiggerState, runtime: Runtime[RiggerContext]) -> dict[str, Any]:
    """Plays ``k_observe`` episodes of the base spec and records their statistics."""
    context = runtime.context
    spec = HarnessSpec.from_dict(state["base_spec"])
    first = task_seed(context, state["task_id"])
    trajectories, keys = play(context, spec, context.k_observe, first_seed=first)
    return {
        "baseline": keys,
        "baseline_stats": RolloutStats.from_trajectories(trajectories).to_dict(),
        "baseline_outcomes": Outcomes.from_trajectories(trajectories).to_dict(),
        "next_seed": first + context.k_observe,
        "seeds": list(range(first, first + context.k_observe)),
        "rollouts": len(trajectories),
        "iteration": 0,
        "status": "running",
    }
