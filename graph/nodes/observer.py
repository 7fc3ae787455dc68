"""``observer``: K baseline rollouts of the policy on the task as it is."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from envharness.errors import RiggerError, SpecError
from envharness.graph.context import RiggerContext
from envharness.graph.judge.decisions import Outcomes
from envharness.graph.nodes._common import play, task_seed
from envharness.graph.state import RiggerState
from envharness.harness.spec import HarnessSpec
from envharness.rollout.stats import RolloutStats

__all__ = ["observer"]


_EXAMPLE = "{'task_id': T, 'base_spec': HarnessSpec(BridgeSpec('toy24', T)).to_dict()}"


def checked_input(state: RiggerState) -> HarnessSpec:
    """The base spec of a rig's input, checked against its ``task_id``.

    Raises:
        RiggerError: If ``base_spec`` or ``task_id`` is missing, the spec is malformed, or the
            two name different tasks.
    """
    raw = state.get("base_spec")
    if raw is None:
        raise RiggerError(
            f"the rigger's input needs base_spec, the HarnessSpec to rig as a dict: {_EXAMPLE}"
        )
    try:
        spec = HarnessSpec.from_dict(raw)
    except SpecError as e:
        raise RiggerError(f"the rigger's base_spec is not a harness spec: {e}") from None
    task_id = state.get("task_id")
    if task_id is None:
        raise RiggerError(f"the rigger's input needs task_id, the task of base_spec: {_EXAMPLE}")
    if task_id != spec.bridge.task_id:
        raise RiggerError(
            f"task_id {task_id!r} is not the task of base_spec ({spec.bridge.task_id!r}); give "
            "the task the spec is bound to"
        )
    return spec


def observer(state: RiggerState, runtime: Runtime[RiggerContext]) -> dict[str, Any]:
    """Plays ``k_observe`` episodes of the base spec and records their statistics.

    Each rollout is reported on the stream (``rollout_started``/``rollout_finished``, phase
    ``observe``; see :mod:`envharness.graph.events`).
    """
    context = runtime.context
    spec = checked_input(state)
    first = task_seed(context, state["task_id"])
    trajectories, keys = play(
        context,
        spec,
        context.k_observe,
        first_seed=first,
        phase="observe",
        write=runtime.stream_writer,
    )
    return {
        "baseline": keys,
        "baseline_stats": RolloutStats.from_trajectories(trajectories).to_dict(),
        "baseline_outcomes": Outcomes.from_trajectories(trajectories).to_dict(),
        "next_seed": first + context.k_observe,
        "seeds": list(range(first, first + context.k_observe)),
        "rollouts": len(trajectories),
        "iteration": 0,
        "status": "running",
        "settings": context.settings(),
    }
