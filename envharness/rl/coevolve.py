"""``coevolve``: rounds of rig → train → evaluate, with a pluggable trainer.

Each round, EnvRigger rigs the current policy on every task (by default the offline heuristic
designer aiming at the band ``sr:0.4-0.6``: start states and rules that make the task of
intermediate difficulty for this policy), the trainer trains on the accepted specs (the original
env for a task whose rig accepted nothing), and the new policy is evaluated on the **original**
envs with seeds that neither training nor rigging used. With ``rig=False`` every round trains on
the original envs: the baseline arm of a comparison, with the same step accounting.

Costs are kept apart: ``env_steps`` counts the learner's own actions (what ``steps_per_round``
caps, the same for both arms), ``rig_env_steps`` the rigger's rollouts of the policy, and
``eval_env_steps`` the evaluation. See :mod:`envharness.rl.rounds` for the run directory.

Example:
    >>> import tempfile
    >>> from envharness.rl import QLearner, coevolve
    >>> with tempfile.TemporaryDirectory() as out:
    ...     run = coevolve("gymnasium", ["FrozenLake-v1"], QLearner(alpha=0.5), rounds=1,
    ...                    steps_per_round=500, out_dir=out, rig=False, eval_episodes=2,
    ...                    bridge_options={"env_kwargs": {"is_slippery": False}})
    >>> [r.env_steps for r in run.rounds]
    [0, 500]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cloudpickle

from envharness.errors import PolicyError, RiggerError
from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.rl.rounds import (
    ROUND_FILE,
    RoundResult,
    SeedPlan,
    check_settings,
    read_round,
    round_dir,
    write_json,
)
from envharness.rl.trainer import Trainer, TrainOutcome
from envharness.rollout.batch import run_rollouts
from envharness.rollout.executors import Executor, LocalExecutor
from envharness.rollout.policy import PolicyFactory, describe_policy
from envharness.rollout.store import RunStore

if TYPE_CHECKING:
    from envharness.graph.run import TaskResult

__all__ = ["DEFAULT_RIGGER", "CoevolveResult", "coevolve"]

DEFAULT_RIGGER: dict[str, Any] = {
    "designer": "heuristic",
    "k_observe": 5,
    "k_validate": 5,
    "max_iterations": 3,
    "max_rollouts": 100,
}
"""EnvRigger settings per round (``RiggerContext`` fields), cheaper than a one-off rig's.

Fewer iterations than ``RiggerContext``'s default keep a round's rig short; ``max_rollouts``
stays near 100 because the judge needs about that many episodes to be sure a rate lies in a
band 0.2 wide (with 30, most rounds in ``benchmarks/coevolution.py`` ended undecided).
"""

_SET_BY_LOOP = ("run_dir", "policy", "objective", "seed", "executor")
_PICKLE = "policy.pkl"


@dataclass
class CoevolveResult:
    """A finished co-evolution run.

    Attributes:
        out_dir: The run directory.
        rounds: Round 0 (the untrained policy) and every round after it, in order.
        policy: The last round's policy factory.
    """

    out_dir: Path
    rounds: list[RoundResult]
    policy: PolicyFactory

    def to_dict(self) -> dict[str, Any]:
        """The rounds as JSON data."""
        return {"out_dir": str(self.out_dir), "rounds": [r.to_dict() for r in self.rounds]}


def _positive(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RiggerError(f"{name}: expected an int >= 1, got {value!r}")
    return value


def _rigger_settings(rigger: Mapping[str, Any] | None) -> dict[str, Any]:
    from envharness.graph.context import RiggerContext

    settings = {**DEFAULT_RIGGER, **dict(rigger or {})}
    known = {f.name for f in fields(RiggerContext)} - set(_SET_BY_LOOP)
    unknown = sorted(set(settings) - known)
    if unknown:
        raise RiggerError(
            f"rigger: unknown setting(s) {unknown}; accepted: {sorted(known)} (the loop sets "
            f"{', '.join(_SET_BY_LOOP)} itself)"
        )
    return settings


def _save(trainer: Trainer, policy: PolicyFactory, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    save = getattr(trainer, "save_policy", None)
    if callable(save):
        save(policy, folder)
    else:
        (folder / _PICKLE).write_bytes(cloudpickle.dumps(policy))


def _load(trainer: Trainer, folder: Path) -> PolicyFactory:
    load = getattr(trainer, "load_policy", None)
    if callable(load):
        return load(folder)
    try:
        return cloudpickle.loads((folder / _PICKLE).read_bytes())
    except Exception as e:  # a missing or foreign pickle
        raise PolicyError(
            f"cannot load the policy saved in {folder} ({type(e).__name__}: {e}); delete the "
            "folder to run that round again"
        ) from None


def _evaluate(
    specs: Sequence[HarnessSpec],
    policy: PolicyFactory,
    episodes: int,
    first_seed: int,
    executor: Executor,
) -> tuple[dict[str, dict[str, Any]], int]:
    """Per-task success on the original envs, and the env steps that took."""
    evaluation: dict[str, dict[str, Any]] = {}
    steps = 0
    for spec in specs:
        batch = run_rollouts(spec, policy, episodes, seed=first_seed, executor=executor)
        successes = sum(t.success for t in batch)
        steps += sum(t.n_steps for t in batch)
        returns = [t.evaluation.score if t.evaluation else 0.0 for t in batch]
        errors = [t.error for t in batch if t.error]
        evaluation[spec.bridge.task_id] = {
            "spec_id": spec.spec_id,
            "n": len(batch),
            "successes": successes,
            "success_rate": successes / len(batch),
            "mean_return": sum(returns) / len(batch),
            "steps_mean": sum(t.n_steps for t in batch) / len(batch),
            "first_seed": first_seed,
            "errors": errors[:3],
        }
    return evaluation, steps


def _rig(
    run: _Run, policy: PolicyFactory, folder: Path, seed: int
) -> tuple[list[HarnessSpec], list[dict[str, Any]], int, int]:
    """Rigs every task for ``policy``: the specs to train on, their sources, rollouts, steps."""
    from envharness.graph.context import RiggerContext
    from envharness.graph.run import rig

    context = RiggerContext(
        run_dir=str(folder / "rig"),
        policy=policy,
        objective=run.objective,
        seed=seed,
        executor=run.executor,
        **run.rigger,
    )
    task_ids = [spec.bridge.task_id for spec in run.originals]
    results: list[TaskResult] = rig(
        run.bridge,
        task_ids,
        context,
        bridge_options=run.options,
        max_concurrency=min(4, len(task_ids)),
    )
    specs: list[HarnessSpec] = []
    sources: list[dict[str, Any]] = []
    for original, result in zip(run.originals, results, strict=True):
        spec, source = original, "original"
        if result.status == "accepted" and result.accepted:
            spec = HarnessSpec.from_json(Path(result.accepted).read_text(encoding="utf-8"))
            source = "accepted"
        specs.append(spec)
        sources.append(
            {
                "task_id": result.task_id,
                "source": source,
                "spec_id": spec.spec_id,
                "components": [c.type for c in spec.components],
                "rig_status": result.status,
                "rig_reason": result.reason,
                "rig_success": result.final_success,
                "rig_baseline_success": result.baseline_success,
            }
        )
    rollouts = sum(r.rollouts for r in results)
    with RunStore(folder / "rig" / "trajectories", readonly=True) as store:
        steps = sum(t.n_steps for t in store)
    return specs, sources, rollouts, steps


def _train(
    trainer: Trainer,
    policy: PolicyFactory,
    specs: Sequence[HarnessSpec],
    budget: int,
    seed: int,
) -> TrainOutcome:
    outcome = trainer.train(policy, list(specs), budget, seed)
    if isinstance(outcome, TrainOutcome):
        if outcome.env_steps > budget:
            raise RiggerError(
                f"the trainer took {outcome.env_steps} env steps, over the round's budget of "
                f"{budget}; a trainer must stop at steps_budget"
            )
        return outcome
    if not callable(outcome):
        raise RiggerError(
            f"Trainer.train must return a TrainOutcome or a policy factory, got "
            f"{type(outcome).__name__}"
        )
    return TrainOutcome(policy=outcome, env_steps=budget, details={"steps_reported": False})


def coevolve(
    bridge: str,
    task_ids: Sequence[str],
    trainer: Trainer,
    *,
    rounds: int,
    steps_per_round: int,
    out_dir: str | Path,
    seed: int = 0,
    bridge_options: Mapping[str, Any] | None = None,
    rig: bool = True,
    objective: str = "sr:0.4-0.6",
    eval_episodes: int = 20,
    rigger: Mapping[str, Any] | None = None,
    executor: Executor | None = None,
    on_round: Callable[[RoundResult], None] | None = None,
) -> CoevolveResult:
    """Runs round 0 (evaluate the untrained policy) and ``rounds`` rounds of rig → train → eval.

    A finished round (its ``round.json`` written) is not run again: a rerun of the same command
    loads its policy and goes on; more ``rounds`` extend a run.

    Args:
        bridge: The bridge name.
        task_ids: The tasks (the original envs the policy is evaluated on).
        trainer: The train step (e.g. :class:`~envharness.rl.QLearner`).
        rounds: Rounds after round 0.
        steps_per_round: The learner's env-step budget per round.
        out_dir: The run directory.
        seed: The run's seed, in ``[0, 100000)`` (see :class:`~envharness.rl.rounds.SeedPlan`).
        bridge_options: ``load_bridge`` options for every task.
        rig: Rig each round (``False``: train on the original envs, the baseline arm).
        objective: EnvRigger's objective.
        eval_episodes: Evaluation episodes per task per round.
        rigger: ``RiggerContext`` settings over :data:`DEFAULT_RIGGER` (``designer``,
            ``k_observe``, ``k_validate``, ``max_iterations``, ``max_rollouts`` ...).
        executor: Where the rig's and the evaluation's rollouts run (inline by default).
        on_round: Called with each round's record as it finishes (or is found finished).

    Raises:
        RiggerError: If a count is not a positive int, the seed is out of range, there are no
            tasks, a rigger setting is unknown, or ``out_dir`` holds a run with other settings.
        UnknownBridgeError, UnknownTaskError: If the bridge or a task does not exist.
        PolicyError: If the trainer cannot learn these envs (e.g. not tabular for ``QLearner``).
    """
    rounds = _positive("rounds", rounds)
    steps_per_round = _positive("steps_per_round", steps_per_round)
    eval_episodes = _positive("eval_episodes", eval_episodes)
    plan = SeedPlan(seed)
    task_ids = list(task_ids)
    if not task_ids:
        raise RiggerError("no tasks: give at least one task id")
    options = dict(bridge_options or {})
    settings = _rigger_settings(rigger) if rig else {}
    if rig:
        from envharness.graph.objective import Objective

        objective = str(Objective.parse(objective))
    originals = [HarnessSpec(BridgeSpec(bridge, task, options)).pinned() for task in task_ids]
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RiggerError(
            f"cannot create {str(out)!r}: {e.strerror or e}; choose another --out"
        ) from None
    describe = getattr(trainer, "describe", None)
    check_settings(
        out,
        {
            "bridge": bridge,
            "tasks": task_ids,
            "bridge_options": options,
            "trainer": describe() if callable(describe) else type(trainer).__name__,
            "steps_per_round": steps_per_round,
            "seed": seed,
            "rig": rig,
            "objective": objective if rig else None,
            "eval_episodes": eval_episodes,
            "rigger": {k: v for k, v in settings.items() if isinstance(v, str | int | float)},
        },
    )
    run = _Run(
        bridge=bridge,
        originals=originals,
        trainer=trainer,
        plan=plan,
        runner=executor or LocalExecutor(workers=1, kind="inline"),
        executor=executor,
        rig=rig,
        objective=objective,
        rigger=settings,
        options=options,
        budget=steps_per_round,
        episodes=eval_episodes,
    )
    records: list[RoundResult] = []
    policy: PolicyFactory | None = None
    for number in range(rounds + 1):
        folder = round_dir(out, number)
        record = read_round(out, number)
        if record is not None:
            policy = _load(trainer, folder)
        else:
            total = records[-1].total_env_steps if records else 0
            record, policy = run.round(number, policy, folder, total)
            _save(trainer, policy, folder)
            write_json(folder / ROUND_FILE, record.to_dict())
        records.append(record)
        if on_round is not None:
            on_round(record)
    assert policy is not None
    return CoevolveResult(out, records, policy)


@dataclass(frozen=True)
class _Run:
    """What stays the same from round to round."""

    bridge: str
    originals: list[HarnessSpec]
    trainer: Trainer
    plan: SeedPlan
    runner: Executor
    executor: Executor | None
    rig: bool
    objective: str
    rigger: dict[str, Any]
    options: dict[str, Any]
    budget: int
    episodes: int

    def round(
        self, number: int, policy: PolicyFactory | None, folder: Path, total: int
    ) -> tuple[RoundResult, PolicyFactory]:
        """Runs round ``number`` (round 0: only the evaluation of the untrained policy)."""
        seconds: dict[str, float] = {}
        record = RoundResult(round=number, policy="", total_env_steps=total)
        if policy is None:
            policy = self.trainer.initial_policy(list(self.originals), self.plan.train(0))
        if number > 0:
            specs = list(self.originals)
            sources = [
                {"task_id": s.bridge.task_id, "source": "original", "spec_id": s.spec_id}
                for s in self.originals
            ]
            if self.rig:
                start = time.perf_counter()
                specs, sources, record.rig_rollouts, record.rig_env_steps = _rig(
                    self, policy, folder, self.plan.rig(number)
                )
                seconds["rig"] = time.perf_counter() - start
            start = time.perf_counter()
            record.train_first_seed = self.plan.train(number)
            outcome = _train(self.trainer, policy, specs, self.budget, record.train_first_seed)
            seconds["train"] = time.perf_counter() - start
            policy = outcome.policy
            record.rigged, record.trained_on = self.rig, sources
            record.env_steps, record.episodes = outcome.env_steps, outcome.episodes
            record.setup_steps = outcome.setup_steps
            record.steps_reported = outcome.details.get("steps_reported", True) is not False
            record.total_env_steps = total + outcome.env_steps
            record.train_details = outcome.details
        start = time.perf_counter()
        record.evaluation, record.eval_env_steps = _evaluate(
            self.originals, policy, self.episodes, self.plan.evaluation(), self.runner
        )
        seconds["evaluate"] = time.perf_counter() - start
        rates = [e["success_rate"] for e in record.evaluation.values()]
        record.success_rate = sum(rates) / len(rates)
        record.policy = describe_policy(policy)
        record.seconds = seconds
        return record, policy
