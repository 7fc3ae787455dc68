"""``validator``: K fresh rollouts on the candidate, judged by statistics, with early stopping."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from envharness.errors import BridgeError, EnvHarnessError
from envharness.graph.context import RiggerContext
from envharness.graph.decision import decide, settled
from envharness.graph.nodes._common import executor_width, load_trajectories, play, task_seed
from envharness.graph.objective import Objective
from envharness.graph.outputs import accepted_path, rejected_path, write_json
from envharness.graph.records import Candidate, Verdict
from envharness.graph.state import Attempt, RiggerState
from envharness.harness.spec import HarnessSpec, Lineage
from envharness.rollout.loop import rollout
from envharness.rollout.policies import OraclePolicy
from envharness.rollout.stats import RolloutStats
from envharness.rollout.trajectory import Trajectory

__all__ = ["validator"]


_ORACLE_TRIES = 3  # seeds the sanity check tries before it calls a candidate unsolvable


def _oracle_solves(spec: HarnessSpec, tries: int = _ORACLE_TRIES) -> bool | None:
    """Whether the bridge's oracle solves ``spec`` on one of seeds ``0 .. tries - 1``.

    Several seeds, because one failure proves little in a stochastic harness or env: with
    ``drop_actions`` an oracle move can fail, and the random move played meanwhile can end the
    episode (a ``submit``). ``None`` when the bridge has no oracle.
    """
    env = spec.build()
    try:
        env.reset(seed=0)
        env.oracle_actions()
    except BridgeError:
        return None
    finally:
        env.close()
    return any(
        rollout(spec.build(), OraclePolicy(1.0, seed=seed), seed=seed).success
        for seed in range(tries)
    )


def _oracle_problem(spec: HarnessSpec, base: HarnessSpec) -> str | None:
    """Why the candidate looks unsolvable to the bridge's own oracle, or ``None``.

    A privileged sanity check before spending K policy rollouts: a harness that even the oracle
    cannot get through on any of a few seeds teaches nothing. It only counts when the oracle
    solves the task without the harness (in stochastic domains it may fail either way), and it
    is skipped for bridges without an oracle. The oracle's rollouts are neither stored nor
    counted as the policy's.
    """
    try:
        solved = _oracle_solves(spec)
    except EnvHarnessError as e:
        return f"the candidate does not start: {type(e).__name__}: {e}"
    if solved is None or solved or not _oracle_solves(base):
        return None
    return (
        f"even the bridge's oracle fails this candidate on {_ORACLE_TRIES} seeds, though it "
        "solves the task without it: the candidate made the task unsolvable"
    )


def _validate(
    context: RiggerContext,
    spec: HarnessSpec,
    direction: str,
    baseline: RolloutStats,
    first_seed: int,
) -> tuple[list[Trajectory], list[str]]:
    trajectories: list[Trajectory] = []
    keys: list[str] = []
    k, width = context.k_validate, executor_width(context)
    objective: Objective = context.objective  # type: ignore[assignment]
    while len(trajectories) < k and not settled(objective, direction, baseline, trajectories, k):
        n = min(width, k - len(trajectories))
        batch, batch_keys = play(context, spec, n, first_seed=first_seed + len(trajectories))
        trajectories += batch
        keys += batch_keys
    return trajectories, keys


def _lineage(
    state: RiggerState,
    context: RiggerContext,
    candidate: Candidate,
    verdict: Verdict,
    iteration: int,
    rollouts: int,
) -> Lineage:
    base = HarnessSpec.from_dict(state["base_spec"])
    return Lineage(
        task=state["task_id"],
        policy=context.policy_name,
        parent=base.spec_id,
        validation={
            "objective": str(context.objective),
            "direction": state["diagnosis"]["direction"],
            "baseline": state["baseline_stats"],
            "candidate": verdict.stats,
            "verdict": verdict.reason,
            "iterations": iteration,
            "rollouts": rollouts,
            "designer": state.get("candidate_designer", "heuristic"),
            "template": candidate.template,
        },
        notes=candidate.rationale,
    )


def validator(state: RiggerState, runtime: Runtime[RiggerContext]) -> dict[str, Any]:
    """Validates the writer's candidate and decides: accept, refine, or reject."""
    context = runtime.context
    iteration = state.get("iteration", 1)
    baseline = RolloutStats.from_dict(state["baseline_stats"])
    direction = state["diagnosis"]["direction"]
    raw = state.get("candidate")
    spec: HarnessSpec | None = None
    keys: list[str] = []
    spent = 0
    if raw is None:
        verdict = Verdict("reject", "the designer had no further candidate to propose")
        candidate = None
    else:
        candidate = Candidate.from_dict(raw)
        base = HarnessSpec.from_dict(state["base_spec"])
        spec = candidate.apply(base)
        if candidate.is_empty():  # nothing to change: judge the baseline itself
            keys = list(state["baseline"])
            trajectories = load_trajectories(context, keys)
            verdict = decide(context.objective, direction, baseline, trajectories)
        elif (problem := _oracle_problem(spec, base)) is not None:
            verdict = Verdict("refine", problem)
        else:
            first = task_seed(context, state["task_id"])
            trajectories, keys = _validate(context, spec, direction, baseline, first)
            spent = len(trajectories)  # policy rollouts; the oracle's check is not counted
            verdict = decide(context.objective, direction, baseline, trajectories)
            verdict.early_stopped = len(trajectories) < context.k_validate
    if verdict.decision == "accept" and context.require_approval:
        approved = interrupt(
            {
                "task_id": state["task_id"],
                "question": "Accept this harness?",
                "candidate": raw,
                "verdict": verdict.to_dict(),
            }
        )
        if not approved:
            verdict = Verdict("refine", "a human refused the candidate", verdict.stats, spent)
    if verdict.decision == "refine" and iteration >= context.max_iterations:
        verdict = Verdict(
            "reject",
            f"{verdict.reason} (no iterations left: {iteration}/{context.max_iterations})",
            verdict.stats,
            verdict.rollouts,
            verdict.early_stopped,
        )
    attempt: Attempt = {
        "iteration": iteration,
        "candidate": raw,
        "spec": spec.to_dict() if spec is not None else None,
        "verdict": verdict.to_dict(),
        "trajectories": keys,
        "designer": state.get("candidate_designer", "heuristic"),
        "model_calls": state.get("candidate_model_calls", 0),
    }
    update: dict[str, Any] = {"attempts": [attempt], "rollouts": spent}
    rollouts = state.get("rollouts", 0) + spent
    if verdict.decision == "accept":
        assert spec is not None and candidate is not None
        lineage = _lineage(state, context, candidate, verdict, iteration, rollouts)
        accepted = spec.with_lineage(lineage).to_dict()
        write_json(accepted_path(context.run_dir, state["task_id"]), accepted)
        update |= {"status": "accepted", "accepted_spec": accepted}
    elif verdict.decision == "reject":
        write_json(
            rejected_path(context.run_dir, state["task_id"]),
            {
                "task_id": state["task_id"],
                "objective": str(context.objective),
                "diagnosis": state["diagnosis"],
                "baseline": state["baseline_stats"],
                "attempts": [*state.get("attempts", []), attempt],
                "reason": verdict.reason,
            },
        )
        update |= {"status": "rejected", "accepted_spec": None}
    return update
