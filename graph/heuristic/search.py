"""``heuristic_search``: observe → diagnose → write → validate for one task, without LangGraph.

This is the rig's loop with the heuristic designer in plain Python: the graph runs the same steps
as nodes. It makes the heuristic testable on its own, and it is what the coverage benchmark runs.

1. Observe: K rollouts of the base spec (seeds ``seed`` to ``seed + K - 1``).
2. Diagnose: :func:`~envharness.graph.heuristic.diagnose.heuristic_diagnosis`.
3. Write: :meth:`HeuristicDesigner.propose` (``None`` ends the search: out of ideas).
4. Validate: up to K rollouts of the candidate on the same seeds, judged by
   :func:`~envharness.graph.decision.decide`, stopping early once
   :func:`~envharness.graph.decision.settled` says the decision cannot change.
5. Accept, or refine (back to 3) while iterations remain.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from envharness.errors import DesignerError, EnvHarnessError, RiggerError
from envharness.graph.decision import decide, settled
from envharness.graph.heuristic.design_context import DesignContext
from envharness.graph.heuristic.designer import HeuristicDesigner
from envharness.graph.heuristic.diagnose import heuristic_diagnosis
from envharness.graph.objective import Objective
from envharness.graph.records import Candidate, Diagnosis, Verdict
from envharness.harness.spec import HarnessSpec
from envharness.rollout.loop import rollout
from envharness.rollout.policy import PolicyFactory
from envharness.rollout.stats import RolloutStats
from envharness.rollout.trajectory import Trajectory

__all__ = ["SearchTrace", "heuristic_search", "play"]

SearchTrace = Callable[[str, object], None]
"""``trace(event, payload)``: called with ``("baseline", trajectories)``, ``("diagnosis",
Diagnosis)``, ``("candidate", Candidate)`` and ``("verdict", Verdict)`` as the search runs."""


def play(
    spec: HarnessSpec,
    policy_factory: PolicyFactory,
    seeds: Sequence[int],
    *,
    stop: Callable[[list[Trajectory]], bool] | None = None,
) -> list[Trajectory]:
    """Plays one rollout per seed in order, in this thread; ``stop(so_far)`` can end it early.

    Each rollout gets a freshly built env and ``policy_factory(seed)``.

    Raises:
        EnvHarnessError: If the spec cannot be built (a bad component); failures during an
            episode are recorded in its trajectory instead.
    """
    trajectories: list[Trajectory] = []
    for seed in seeds:
        trajectories.append(rollout(spec.build(), policy_factory(seed), seed=seed))
        if stop is not None and stop(trajectories):
            break
    return trajectories


def _validate(
    spec: HarnessSpec,
    policy_factory: PolicyFactory,
    objective: Objective,
    diagnosis: Diagnosis,
    baseline: RolloutStats,
    k: int,
    seed: int,
) -> Verdict:
    direction = diagnosis.direction

    def stop(so_far: list[Trajectory]) -> bool:
        return settled(objective, direction, baseline, so_far, k)

    try:
        trajectories = play(spec, policy_factory, range(seed, seed + k), stop=stop)
    except EnvHarnessError as e:
        nothing = RolloutStats.from_trajectories([]).to_dict()
        return Verdict("refine", f"the candidate cannot be built: {e}", nothing, 0)
    verdict = decide(objective, direction, baseline, trajectories)
    verdict.early_stopped = len(trajectories) < k
    return verdict


def heuristic_search(
    base_spec: HarnessSpec,
    policy_factory: PolicyFactory,
    objective: Objective | str = "auto",
    *,
    k: int = 5,
    max_iterations: int = 5,
    seed: int = 0,
    siblings: Sequence[str] | None = None,
    designer: HeuristicDesigner | None = None,
    trace: SearchTrace | None = None,
) -> tuple[Candidate | None, list[tuple[Candidate, Verdict]]]:
    """Rigs one task with the heuristic designer: baseline, diagnosis, then write↔validate.

    Args:
        base_spec: The task (a bare bridge spec or an existing stack).
        policy_factory: ``policy_factory(seed) -> Policy``, e.g. ``OraclePolicyFactory(0.5)``.
        objective: ``auto``, a band (``sr:0.4-0.6``, ``steps:5-8``) or an :class:`Objective`.
        k: Rollouts for the baseline and for each validation (validation stops early when the
            decision is settled).
        max_iterations: Candidates to validate at most.
        seed: The first rollout seed; baseline and validations use the same seeds.
        siblings: Tasks to link for hardening; ``None`` discovers them from the bridge.
        designer: The designer (a default :class:`HeuristicDesigner` if omitted).
        trace: Called at each step (see :data:`SearchTrace`), e.g. to record rollouts spent.

    Returns:
        ``(accepted, attempts)``: the accepted candidate (``None`` if none was) and every
        validated candidate with its verdict, in order. When the baseline already meets the
        objective, the one attempt is the empty candidate (template ``none``).

    Raises:
        RiggerError: If ``k`` or ``max_iterations`` is not a positive int, or the objective is
            malformed.
        DesignerError: For a plain-language deficiency (the heuristic cannot target one).

    Example:
        >>> from envharness.harness.spec import BridgeSpec
        >>> from envharness.rollout import OraclePolicyFactory
        >>> spec = HarnessSpec(BridgeSpec("toy24", "4-4-10-10"))
        >>> accepted, attempts = heuristic_search(spec, OraclePolicyFactory(1.0), "steps:5-8")
        >>> accepted.template, attempts[-1][1].decision
        ('link_siblings(1)', 'accept')
    """
    for name, value in (("k", k), ("max_iterations", max_iterations)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise RiggerError(f"expected {name} to be a positive int, got {value!r}")
    objective = Objective.parse(objective)
    designer = designer or HeuristicDesigner()
    if not designer.supports(objective):
        raise DesignerError(
            "the heuristic designer cannot target a plain-language deficiency "
            f"({objective.text!r}); configure a model designer, or use 'auto' or a band"
        )
    emit = trace or (lambda event, payload: None)
    baseline = play(base_spec, policy_factory, range(seed, seed + k))
    emit("baseline", baseline)
    diagnosis = heuristic_diagnosis(baseline, objective)
    emit("diagnosis", diagnosis)
    stats = RolloutStats.from_trajectories(baseline)
    context = DesignContext.from_spec(base_spec, baseline, siblings=siblings, seed=seed)
    attempts: list[tuple[Candidate, Verdict]] = []
    while len(attempts) < max_iterations:
        candidate = designer.propose(context, diagnosis, objective, attempts)
        if candidate is None:
            break
        emit("candidate", candidate)
        spec = candidate.apply(base_spec)
        verdict = _validate(spec, policy_factory, objective, diagnosis, stats, k, seed)
        emit("verdict", verdict)
        attempts.append((candidate, verdict))
        if verdict.decision == "accept":
            return candidate, attempts
        if verdict.decision == "reject":
            break
    return None, attempts
