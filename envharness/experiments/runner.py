"""``run_skill_learning``: the paper's skill-learning experiment for any bridge, resumable.

For each skill arm and round ``r``: build the round's train environments (:mod:`.arms`; the
harness arm rigs them against the policy equipped with the arm's bank of rounds ``< r``), roll
the same equipped policy out ``rollouts_per_env`` times on each, extract skills from those
episodes (their verdicts are the bridges' own), and extend the arm's bank. Then every arm is
evaluated on the original test tasks after each round, ``runs`` times with the same seeds for
every arm, and scored (:mod:`.metrics`); round 0 is the policy without skills (the ``none`` arm),
always played, as every comparison's baseline. The report and plots are written (:mod:`.report`).

Everything is kept in the run directory (:class:`~.settings.ExperimentLayout`): rollouts in run
stores (a rerun plays only the missing ones), rigs in their checkpoints, a round's extraction is
marked done, so killing and rerunning the same experiment redoes nothing that finished.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from envharness.errors import ExperimentError
from envharness.experiments.arms import TrainEnv, equipped_policy, train_envs
from envharness.experiments.metrics import (
    ArmScore,
    PairedDifference,
    paired_difference,
    score_arm,
    task_success,
)
from envharness.experiments.settings import ExperimentLayout, SkillLearningSettings
from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.rollout.batch import RolloutRequest, run_batch
from envharness.rollout.executors import Executor, LocalExecutor
from envharness.rollout.factory import uses_skills
from envharness.rollout.policy import PolicyFactory
from envharness.rollout.store import RunStore
from envharness.rollout.trajectory import Trajectory
from envharness.skills.bank import SkillBank
from envharness.skills.extract import extract_skills
from envharness.skills.records import Skill

__all__ = ["ExperimentResult", "Progress", "run_skill_learning"]

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: called as the rollouts of a stage finish."""

_EXTRACTED = "extracted.json"
_RESULTS = "results.json"


@dataclass
class ExperimentResult:
    """What an experiment measured.

    Attributes:
        run_dir: The run directory.
        scores: Every arm after every round (``none`` at round 0), on the test tasks.
        paired: Per-task differences: every skill arm against ``none``, and ``harness`` and
            ``chain`` against ``original``, after each round.
        budget: Per arm and round: the train tasks, environments, rollouts, where the
            environments came from, and EnvRigger's own rollouts (reported, not counted).
        skills_use: Whether the policy reads skills (offline policies do not: their numbers
            check the machinery, not the method).
        seconds: Wall time of this call.
        resumed: Whether the run directory held a started experiment.
        report: The Markdown report.
        plots: The plots written.
    """

    run_dir: Path
    scores: list[ArmScore]
    paired: list[PairedDifference]
    budget: dict[str, list[dict[str, Any]]]
    skills_use: bool
    seconds: float
    resumed: bool
    report: Path | None = None
    plots: list[Path] = field(default_factory=list)

    def score(self, arm: str, round_index: int | None = None) -> ArmScore:
        """The score of ``arm`` after ``round_index`` rounds (its last round by default)."""
        rows = [s for s in self.scores if s.arm == arm]
        if not rows:
            raise KeyError(arm)
        if round_index is None:
            return max(rows, key=lambda s: s.round)
        for row in rows:
            if row.round == round_index:
                return row
        raise KeyError((arm, round_index))

    def to_dict(self) -> dict[str, Any]:
        """The result as written to ``results.json``."""
        return {
            "run_dir": str(self.run_dir),
            "scores": [asdict(s) for s in self.scores],
            "paired": [asdict(p) for p in self.paired],
            "budget": self.budget,
            "skills_use": self.skills_use,
            "seconds": self.seconds,
            "resumed": self.resumed,
            "report": None if self.report is None else str(self.report),
            "plots": [str(p) for p in self.plots],
        }


def _extractor(settings: SkillLearningSettings) -> Any:
    extractor = settings.extractor
    if extractor is None or extractor == "offline":
        from envharness.skills.offline import OfflineExtractor

        return OfflineExtractor()
    if isinstance(extractor, str):
        from envharness.rollout.chat import build_chat_model
        from envharness.skills.model_extractor import ModelExtractor

        return ModelExtractor(build_chat_model(extractor))
    if not callable(getattr(extractor, "extract", None)):
        raise ExperimentError(
            f"extractor: expected 'offline', a model string or an object with "
            f"extract(trajectory), got {type(extractor).__name__}"
        )
    return extractor


class _Runner:
    """One experiment's state while it runs (not public: use :func:`run_skill_learning`)."""

    def __init__(
        self,
        settings: SkillLearningSettings,
        executor: Executor,
        progress: Progress | None,
        log: Callable[[str], None] | None,
    ) -> None:
        self.settings = settings
        self.layout = ExperimentLayout(settings.out)
        self.executor = executor
        self.progress = progress
        self.log = log or (lambda message: None)
        self._extractor: Any = None

    # -- rollouts ----------------------------------------------------------------------------------

    def _play(
        self,
        stage: str,
        run_dir: Path,
        requests: Sequence[RolloutRequest],
        policy: PolicyFactory,
    ) -> list[Trajectory]:
        total = len(requests)

        def tick(done: int, _total: int, _trajectory: Trajectory) -> None:
            if self.progress is not None:
                self.progress(stage, done, total)

        with RunStore(run_dir) as store:
            trajectories = run_batch(
                requests, policy, executor=self.executor, store=store, progress=tick
            )
        if self.progress is not None:
            self.progress(stage, total, total)
        return trajectories

    # -- learning --------------------------------------------------------------------------------

    def learn(self, arm: str) -> list[dict[str, Any]]:
        """Runs every round of one skill arm; returns its budget records."""
        records = []
        for r in range(1, self.settings.rounds + 1):
            before = self.layout.bank(arm, r - 1) if r > 1 else None
            policy = equipped_policy(self.settings.policy, before, self.settings.top_k)
            envs = train_envs(
                arm,
                r,
                self.settings,
                self.layout,
                policy=policy,
                executor=self.executor,
                log=self.log,
            )
            requests = [
                RolloutRequest(env.spec, seed, self.settings.max_steps)
                for env in envs
                for seed in self.settings.train_seeds(r)
            ]
            trajectories = self._play(
                f"{arm} round {r}: train rollouts",
                self.layout.round_dir(arm, r) / "train",
                requests,
                policy,
            )
            added = self._extract(arm, r, envs, trajectories, before)
            records.append(self._budget(arm, r, envs, trajectories, added))
        return records

    def _extract(
        self,
        arm: str,
        r: int,
        envs: list[TrainEnv],
        trajectories: list[Trajectory],
        before: Path | None,
    ) -> int:
        folder = self.layout.round_dir(arm, r)
        marker = folder / _EXTRACTED
        if marker.exists():
            return int(json.loads(marker.read_text())["skills"])
        if self._extractor is None:
            self._extractor = _extractor(self.settings)
        specs = {HarnessSpec.from_dict(e.spec).spec_id: e.spec for e in envs}
        self.log(f"{arm} round {r}: extracting skills from {len(trajectories)} episode(s)")
        skills = extract_skills(trajectories, self._extractor, specs=specs)
        for name in ("skills.jsonl", "bank.jsonl"):  # a killed extraction left partial files
            (folder / name).unlink(missing_ok=True)
        found = SkillBank(folder / "skills.jsonl")
        found.extend(skills)
        bank = SkillBank(self.layout.bank(arm, r))
        if before is not None and before.exists():
            bank.extend(SkillBank.load(before).skills)
        added = bank.extend(skills)
        marker.write_text(json.dumps({"skills": len(found), "added_to_bank": added}) + "\n")
        return len(found)

    def _budget(
        self,
        arm: str,
        r: int,
        envs: list[TrainEnv],
        trajectories: list[Trajectory],
        skills: int,
    ) -> dict[str, Any]:
        sources: dict[str, int] = {}
        for env in envs:
            sources[env.source] = sources.get(env.source, 0) + 1
        record: dict[str, Any] = {
            "round": r,
            "train_tasks": [env.task_id for env in envs],
            "envs": len(envs),
            "rollouts": len(trajectories),
            "train_successes": sum(t.success for t in trajectories),
            "sources": sources,
            "skills_extracted": skills,
            "policy": self.settings.policy_name,
            "extractor": self.settings.extractor_name,
        }
        if arm == "harness":
            record["rig_rollouts"] = _rig_rollouts(self.layout.round_dir(arm, r) / "rig")
        if arm == "chain":
            record["partners"] = [env.partner for env in envs]
        return record

    # -- evaluation ------------------------------------------------------------------------------

    def evaluate(self, arm: str, r: int) -> list[list[Trajectory]]:
        """The test episodes of ``arm`` after ``r`` rounds, grouped by run."""
        bank = self.layout.bank(arm, r) if r > 0 else None
        policy = equipped_policy(self.settings.policy, bank, self.settings.top_k)
        s = self.settings
        requests = [
            RolloutRequest(
                HarnessSpec(BridgeSpec(s.bridge, task, dict(s.bridge_options))),
                s.eval_seed(run),
                s.max_steps,
            )
            for run in range(s.runs)
            for task in s.test_tasks
        ]
        label = "none" if r == 0 else f"{arm} round {r}"
        played = self._play(f"{label}: test episodes", self.layout.eval_dir, requests, policy)
        n = len(s.test_tasks)
        return [played[i * n : (i + 1) * n] for i in range(s.runs)]


def _rig_rollouts(rig_dir: Path) -> int:
    """EnvRigger's own rollouts (observe and validate) in one rig run directory."""
    path = rig_dir / "trajectories"
    if not path.exists():
        return 0
    with RunStore(path, readonly=True) as store:
        return len(store)


def _check_budgets(budget: dict[str, list[dict[str, Any]]]) -> None:
    """Every skill arm had the same train tasks, environments and rollouts in every round."""
    shapes = {
        arm: [
            (b["train_tasks"], b["envs"], b["rollouts"], b["policy"], b["extractor"]) for b in rows
        ]
        for arm, rows in budget.items()
    }
    if len({json.dumps(s) for s in shapes.values()}) > 1:
        raise ExperimentError(
            "the arms did not get equal budgets (train tasks, environments, rollouts, policy, "
            f"extractor per round): {json.dumps(shapes)}; this is a bug, please report it"
        )


def run_skill_learning(
    settings: SkillLearningSettings,
    *,
    executor: Executor | None = None,
    progress: Progress | None = None,
    log: Callable[[str], None] | None = None,
    report: bool = True,
) -> ExperimentResult:
    """Runs (or resumes) a skill-learning experiment; returns its scores.

    Args:
        settings: What to run.
        executor: Where rollouts run; one inline worker by default (closed at the end).
        progress: Called as rollouts finish (``stage, done, total``).
        log: Called with one line per phase (rigging, extracting).
        report: Write ``report.md`` and the plots.

    Raises:
        ExperimentError: If the run directory holds another experiment, or the arms' budgets
            would differ.
        RiggerError, PolicyError, SpecError, SkillError: From the parts it runs.
    """
    start = time.monotonic()
    layout = ExperimentLayout(settings.out)
    resumed = layout.prepare(settings)
    own = executor is None
    runner_executor = LocalExecutor(1) if executor is None else executor
    try:
        runner = _Runner(settings, runner_executor, progress, log)
        budget = {arm: runner.learn(arm) for arm in settings.skill_arms}
        _check_budgets(budget)
        per_arm: dict[tuple[str, int], list[list[Trajectory]]] = {}
        per_arm[("none", 0)] = runner.evaluate("none", 0)
        for arm in settings.skill_arms:
            for r in range(1, settings.rounds + 1):
                per_arm[(arm, r)] = runner.evaluate(arm, r)
    finally:
        if own:
            runner_executor.close()
    scores = []
    for (arm, r), runs in per_arm.items():
        envs = r * int(settings.envs_per_round or 0)
        skills = len(SkillBank(layout.bank(arm, r))) if r > 0 else 0
        scores.append(score_arm(arm, r, envs, runs, skills))
    paired = _comparisons(settings, per_arm)
    base = equipped_policy(settings.policy, None, settings.top_k)
    result = ExperimentResult(
        run_dir=layout.root,
        scores=scores,
        paired=paired,
        budget=budget,
        skills_use=uses_skills(base),
        seconds=time.monotonic() - start,
        resumed=resumed,
    )
    if report:
        from envharness.experiments.report import write_report

        result.report, result.plots = write_report(result, settings, _banks(settings, layout))
    (layout.root / _RESULTS).write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    return result


def _comparisons(
    settings: SkillLearningSettings, per_arm: dict[tuple[str, int], list[list[Trajectory]]]
) -> list[PairedDifference]:
    success = {key: task_success(runs) for key, runs in per_arm.items()}
    pairs = []
    for r in range(1, settings.rounds + 1):
        for arm in settings.skill_arms:
            pairs.append(
                paired_difference(
                    arm, "none", r, success[(arm, r)], success[("none", 0)], seed=settings.seed
                )
            )
        if "original" in settings.skill_arms:
            for arm in ("harness", "chain"):
                if arm in settings.skill_arms:
                    pairs.append(
                        paired_difference(
                            arm,
                            "original",
                            r,
                            success[(arm, r)],
                            success[("original", r)],
                            seed=settings.seed,
                        )
                    )
    return pairs


def _banks(settings: SkillLearningSettings, layout: ExperimentLayout) -> dict[str, list[Skill]]:
    """Each skill arm's final bank."""
    return {
        arm: list(SkillBank(layout.bank(arm, settings.rounds)).skills)
        for arm in settings.skill_arms
    }
