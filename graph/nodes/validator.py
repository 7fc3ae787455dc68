"""``validator``: fresh rollouts of the candidate, judged sequentially, its knob calibrated.

Every rollout here uses seeds no earlier step of the task's rig used (the state's
``next_seed``); :func:`~envharness.graph.judge.validate_candidate` looks at the data after
every batch of ``k_validate`` and stops as soon as the judge is sure, moving the candidate's
first knob by the pooled monotone model when a setting misses. A candidate whose budget
(``max_rollouts``) runs out without a sure decision is *undecided*; a task whose iterations end
with undecided candidates and none accepted ends ``undecided``. The validator writes no file:
the ``approval`` node (under ``require_approval``) and the ``recorder`` come after it.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from envharness.errors import BridgeError, EnvHarnessError
from envharness.graph.context import RiggerContext
from envharness.graph.events import EventWriter, VerdictEvent, ignore
from envharness.graph.judge.decisions import Outcomes
from envharness.graph.judge.sequential import validate_candidate
from envharness.graph.limits import ORACLE_BUDGET_FACTOR as _LONGER
from envharness.graph.limits import ORACLE_TRIES as _ORACLE_TRIES
from envharness.graph.nodes._common import play
from envharness.graph.records import Candidate, Verdict
from envharness.graph.state import Attempt, RiggerState
from envharness.harness.spec import HarnessSpec, Lineage
from envharness.rollout.loop import rollout
from envharness.rollout.policies import OraclePolicy
from envharness.rollout.stats import RolloutStats
from envharness.rollout.trajectory import Trajectory

__all__ = ["ending_update", "oracle_check", "validator"]


def _episode(trajectory: Trajectory) -> dict[str, Any]:
    """How one oracle episode went, as plain data."""
    return {
        "seed": trajectory.seed,
        "success": trajectory.success,
        "end_reason": trajectory.end_reason,
        "steps": trajectory.n_steps,
        "max_steps": trajectory.max_steps,
        "blocked": trajectory.n_blocked,
        "invalid": trajectory.n_invalid,
        "error": (trajectory.error or "")[:300] or None,
    }


def _oracle_episodes(spec: HarnessSpec, tries: int = _ORACLE_TRIES) -> list[dict[str, Any]] | None:
    """The oracle's episodes on ``spec``, seeds ``0 ..`` until one succeeds (at most ``tries``).

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
    episodes = []
    for seed in range(tries):
        episodes.append(_episode(rollout(spec.build(), OraclePolicy(1.0, seed=seed), seed=seed)))
        if episodes[-1]["success"]:
            break
    return episodes


def _oracle_solves(spec: HarnessSpec, tries: int = _ORACLE_TRIES) -> bool | None:
    """Whether the bridge's oracle solves ``spec`` on one of seeds ``0 .. tries - 1``."""
    episodes = _oracle_episodes(spec, tries)
    return None if episodes is None else any(e["success"] for e in episodes)


def _how_it_ended(episode: dict[str, Any]) -> str:
    """One oracle episode in words: ``seed 0: budget after 12/12 steps (9 blocked)``."""
    budget = episode["max_steps"] or "?"
    outcome = "solved" if episode["success"] else f"{episode['end_reason']}"
    text = f"seed {episode['seed']}: {outcome} after {episode['steps']}/{budget} steps"
    counts = [f"{episode[k]} {k}" for k in ("blocked", "invalid") if episode.get(k)]
    if counts:
        text += f" ({', '.join(counts)})"
    if episode.get("error"):
        text += f", error: {episode['error'][:160]}"
    return text


def oracle_check(spec: HarnessSpec, base: HarnessSpec) -> dict[str, Any] | None:
    """The oracle sanity check on ``spec`` as plain data, ``None`` when the bridge has no oracle.

    A privileged check before spending policy rollouts: a harness that even the oracle cannot
    get through on any of a few seeds teaches nothing. It only counts when the oracle solves
    the task without the harness (in stochastic domains it may fail either way). The oracle's
    rollouts are neither stored nor counted as the policy's.

    Returns:
        ``passed`` (``False`` only when it counts against the candidate), ``problem``
        (``unsolvable``: the oracle fails it even with more steps; ``out_of_steps``: every
        episode used up its step budget, and with more steps the oracle solves it;
        ``does_not_start``; or ``None``), ``message`` (why, with
        the statistics), ``episodes`` and ``plain`` (the oracle on the bare task, when played).
    """
    try:
        episodes = _oracle_episodes(spec)
    except EnvHarnessError as e:
        message = f"the candidate does not start: {type(e).__name__}: {e}"
        return {"passed": False, "problem": "does_not_start", "message": message,
                "episodes": [], "plain": None, "longer": None}  # fmt: skip
    if episodes is None:
        return None
    record: dict[str, Any] = {"passed": True, "problem": None, "message": "", "episodes": episodes}
    record["plain"] = record["longer"] = None
    ended = "; ".join(_how_it_ended(e) for e in episodes)
    if any(e["success"] for e in episodes):
        record["message"] = f"the bridge's oracle solves the candidate ({ended})"
        return record
    plain = _oracle_episodes(base)
    record["plain"] = plain
    if not plain or not any(e["success"] for e in plain):
        record["message"] = (
            f"the bridge's oracle fails the candidate ({ended}) but also the plain task, so the "
            "check does not count"
        )
        return record
    solved = next(e for e in plain if e["success"])
    versus = f"it solves the task without the candidate in {solved['steps']} steps"
    record["passed"] = False
    out_of_steps = all(e["end_reason"] == "budget" for e in episodes)
    longer = _longer_episode(spec, episodes[0]) if out_of_steps else None
    record["longer"] = longer
    if longer is not None and longer["success"]:
        record["problem"] = "out_of_steps"
        blocked = sum(e["blocked"] for e in episodes)
        why = (
            f"; {blocked} of its steps were blocked by the rules, and blocked actions use up "
            "the step budget"
            if blocked
            else ""
        )
        record["message"] = (
            f"the bridge's oracle ran out of steps on all {len(episodes)} seeds ({ended}), "
            f"though {versus}; given {longer['max_steps']} steps it solves the candidate in "
            f"{longer['steps']}{why}: the task is still solvable, but not within the policy's "
            "step budget under this harness; block less often, or leave the oracle's path open"
        )
    else:
        record["problem"] = "unsolvable"
        more = (
            f"; with {longer['max_steps']} steps it still fails ({_how_it_ended(longer)})"
            if longer is not None
            else ""
        )
        record["message"] = (
            f"even the bridge's oracle fails this candidate on {len(episodes)} seeds ({ended}), "
            f"though {versus}{more}: the candidate made the task unsolvable"
        )
    return record


def _longer_episode(spec: HarnessSpec, first: dict[str, Any]) -> dict[str, Any] | None:
    """The oracle on seed ``first["seed"]`` with :data:`_LONGER` times the step budget."""
    budget = first.get("max_steps")
    if not budget:
        return None
    seed = first["seed"]
    trajectory = rollout(
        spec.build(), OraclePolicy(1.0, seed=seed), seed=seed, max_steps=_LONGER * budget
    )
    return _episode(trajectory)


def _oracle_problem(spec: HarnessSpec, base: HarnessSpec) -> str | None:
    """Why the candidate looks unsolvable to the bridge's own oracle, or ``None``."""
    record = oracle_check(spec, base)
    return None if record is None or record["passed"] else record["message"]


def _easiest_values(candidate: Candidate) -> dict[str, float]:
    """The calibrated knob at its easy end (``{}`` without knobs)."""
    knobs = candidate.knob_specs()
    if not knobs:
        return {}
    return {knobs[0].name: knobs[0].clamp(knobs[0].unscale(0.0))}


def _easiest(candidate: Candidate, base: HarnessSpec) -> HarnessSpec:
    """The candidate with its calibrated knob at the easy end: what the oracle check must pass.

    The validator may turn the knob anywhere in its range, so a candidate is unsolvable only
    when even its easiest setting is.
    """
    values = _easiest_values(candidate)
    return candidate.apply(base, values) if values else candidate.apply(base)


def _lineage(
    state: RiggerState,
    context: RiggerContext,
    candidate: Candidate,
    verdict: Verdict,
    iteration: int,
    rollouts: int,
    seeds: list[int],
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
            "judgement": verdict.judgement,
            "fresh_baseline": verdict.baseline,
            "judge": context.judge_settings.to_dict(),
            "knobs": verdict.knobs,
            "calibration": verdict.calibration,
            "confirmation_seeds": verdict.seeds,
            "oracle_check": verdict.oracle,
            "seeds": sorted(seeds),
            "base_spec": base.to_dict(),
            "iterations": iteration,
            "rollouts": rollouts,
            "designer": state.get("candidate_designer", "heuristic"),
            "template": candidate.template,
        },
        notes=candidate.rationale,
    )


def _validate(
    context: RiggerContext,
    state: RiggerState,
    candidate: Candidate,
    base: HarnessSpec,
    write: EventWriter = ignore,
) -> tuple[Verdict, list[str], int]:
    """Runs the sequential validation; returns the verdict, the run-store keys and next seed.

    Every rollout, the candidate's and the fresh baseline's, is reported to ``write`` (phase
    ``validate``).
    """
    keys: list[str] = []
    iteration = state.get("iteration", 1)
    judged: dict[int, Trajectory] = {}
    judged_keys: dict[int, str] = {}

    def sample(values: dict[str, float], first_seed: int, n: int) -> Outcomes:
        spec = candidate.apply(base, values)
        trajectories, batch_keys = play(
            context,
            spec,
            n,
            first_seed=first_seed,
            phase="validate",
            iteration=iteration,
            write=write,
        )
        keys.extend(batch_keys)
        judged.update((t.seed, t) for t in trajectories)
        judged_keys.update((t.seed, key) for t, key in zip(trajectories, batch_keys, strict=True))
        return Outcomes.from_trajectories(trajectories)

    def sample_baseline(first_seed: int, n: int) -> Outcomes:
        trajectories, batch_keys = play(
            context,
            base,
            n,
            first_seed=first_seed,
            phase="validate",
            iteration=iteration,
            write=write,
        )
        keys.extend(batch_keys)
        return Outcomes.from_trajectories(trajectories)

    run = validate_candidate(
        context.objective,
        state["diagnosis"]["direction"],
        Outcomes.from_dict(state["baseline_outcomes"]),
        sample,
        first_seed=state["next_seed"],
        settings=context.judge_settings,
        knobs=candidate.knob_specs(),
        sample_baseline=sample_baseline,
    )
    final = run.settings[-1] if run.settings else None
    seeds = list(final.seeds) if final is not None else []
    stats = RolloutStats.from_trajectories(judged[s] for s in seeds)
    verdict = Verdict(
        run.decision,
        run.judgement.reason,
        stats.to_dict(),
        rollouts=run.rollouts,
        early_stopped=run.decision != "undecided",
        side=run.judgement.side if run.decision == "refine" else None,
        judgement=run.judgement.to_dict(),
        knobs=dict(run.values),
        seeds=seeds,
        baseline=run.baseline.to_dict() if run.baseline is not None else None,
        trajectories=[judged_keys[s] for s in seeds],
        calibration=[
            {
                "values": s.values,
                "n": s.outcomes.n,
                "successes": s.outcomes.successes,
                "decision": s.judgement.decision,
                "probability": s.judgement.probability,
            }
            for s in run.settings
        ],
    )
    return verdict, keys, run.next_seed


def _best_undecided(attempts: list[Attempt]) -> Attempt | None:
    """The undecided attempt whose claim came closest to the confidence."""
    undecided = [a for a in attempts if a["verdict"]["decision"] == "undecided"]
    if not undecided:
        return None
    return max(
        undecided, key=lambda a: (a["verdict"].get("judgement") or {}).get("probability") or 0.0
    )


def _verdict_event(state: RiggerState, iteration: int, verdict: Verdict) -> VerdictEvent:
    stats = verdict.stats or {}
    return VerdictEvent(
        event="verdict",
        task_id=state["task_id"],
        iteration=iteration,
        decision=verdict.decision,
        reason=verdict.reason,
        success_rate=stats.get("success_rate"),
        n=int(stats.get("n", 0) or 0),
        rollouts=verdict.rollouts,
    )


def validator(state: RiggerState, runtime: Runtime[RiggerContext]) -> dict[str, Any]:
    """Validates the writer's candidate and decides: accept, refine, undecided or reject.

    Its rollouts are reported on the stream (phase ``validate``), then the decision (a
    ``verdict`` event; see :mod:`envharness.graph.events`).
    """
    context = runtime.context
    iteration = state.get("iteration", 1)
    raw = state.get("candidate")
    spec: HarnessSpec | None = None
    keys: list[str] = []
    next_seed = state["next_seed"]
    candidate = None
    if raw is None:
        verdict = Verdict("reject", "the designer had no further candidate to propose")
    else:
        candidate = Candidate.from_dict(raw)
        base = HarnessSpec.from_dict(state["base_spec"])
        check = None
        if not candidate.is_empty():
            check = oracle_check(_easiest(candidate, base), base)
            if check is not None:
                check["knobs"] = _easiest_values(candidate)
        if check is not None and not check["passed"]:
            verdict = Verdict("refine", check["message"], side="too_hard", oracle=check)
        else:
            verdict, keys, next_seed = _validate(
                context, state, candidate, base, runtime.stream_writer
            )
            verdict.oracle = check
            spec = candidate.apply(base, verdict.knobs)
    spent = verdict.rollouts
    used = list(range(state["next_seed"], next_seed))
    out_of_iterations = iteration >= context.max_iterations
    if verdict.decision in ("refine", "undecided") and out_of_iterations:
        verdict.reason = (
            f"{verdict.reason} (no iterations left: {iteration}/{context.max_iterations})"
        )
        if verdict.decision == "refine":
            verdict.decision = "reject"
    runtime.stream_writer(_verdict_event(state, iteration, verdict))
    attempt: Attempt = {
        "iteration": iteration,
        "candidate": raw,
        "spec": spec.to_dict() if spec is not None else None,
        "verdict": verdict.to_dict(),
        "trajectories": keys,
        "designer": state.get("candidate_designer", "heuristic"),
        "model_calls": state.get("candidate_model_calls", 0),
    }
    update: dict[str, Any] = {
        "reason": verdict.reason,
        "attempts": [attempt],
        "rollouts": spent,
        "next_seed": next_seed,
        "seeds": used,
    }
    rollouts = state.get("rollouts", 0) + spent
    attempts = [*state.get("attempts", []), attempt]
    ending = verdict.decision == "reject" or (verdict.decision == "undecided" and out_of_iterations)
    if verdict.decision == "accept":
        assert spec is not None and candidate is not None
        seeds = [*state.get("seeds", []), *used]
        lineage = _lineage(state, context, candidate, verdict, iteration, rollouts, seeds)
        accepted = spec.with_lineage(lineage).to_dict()
        if context.require_approval:  # the approval node asks a human before anything is kept
            update["proposed_spec"] = accepted
        else:
            update |= {"status": "accepted", "accepted_spec": accepted}
    elif ending:
        update |= ending_update(state, context, attempts, verdict.reason)
    return update


def ending_update(
    state: RiggerState, context: RiggerContext, attempts: list[Attempt], reason: str
) -> dict[str, Any]:
    """The state update that ends a rig without an accepted spec: undecided or rejected.

    ``undecided`` when some attempt was undecided (its record names the closest one), else
    ``rejected``; the record (``outcome``) is what the recorder writes to the run directory.
    """
    record: dict[str, Any] = {
        "task_id": state["task_id"],
        "objective": str(context.objective),
        "diagnosis": state["diagnosis"],
        "baseline": state["baseline_stats"],
        "attempts": attempts,
        "reason": reason,
    }
    best = _best_undecided(attempts)
    if best is not None:
        record["best"] = best
        return {"status": "undecided", "accepted_spec": None, "outcome": record}
    return {"status": "rejected", "accepted_spec": None, "outcome": record}
