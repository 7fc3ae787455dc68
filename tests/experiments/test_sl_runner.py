"""run_skill_learning end to end on toy24: fake chat models, equal budgets, resume, report."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("langgraph", reason="the harness arm rigs with EnvRigger (envharness[rigger])")
pytest.importorskip("bm25s", reason="skill retrieval needs bm25s (envharness[skills])")

from fake_toy24 import reply  # noqa: E402

from envharness.errors import ExperimentError  # noqa: E402
from envharness.experiments import SkillLearningSettings, run_skill_learning  # noqa: E402
from envharness.rollout.chat import ChatModelPolicyFactory  # noqa: E402
from envharness.rollout.store import RunStore  # noqa: E402
from envharness.skills.offline import OfflineExtractor  # noqa: E402
from envharness.skills.records import SkillError  # noqa: E402
from envharness.testing import FakeToolCallingModel  # noqa: E402

TRAIN = ["1-1-1-8", "1-1-1-11", "1-1-1-12", "1-1-1-13"]
TEST = ["1-1-2-6", "1-1-2-12", "1-1-3-8"]


class CountingExtractor(OfflineExtractor):
    """The offline extractor, counting the episodes it reads."""

    def __init__(self) -> None:
        super().__init__()
        self.episodes = 0

    def extract(self, trajectory):
        self.episodes += 1
        return super().extract(trajectory)


def fake_settings(tmp_path, model, extractor, **changes) -> SkillLearningSettings:
    values = dict(
        bridge="toy24",
        policy=ChatModelPolicyFactory(model),
        train_tasks=TRAIN,
        test_tasks=TEST,
        out=tmp_path / "sl",
        runs=2,
        rounds=2,
        rollouts_per_env=2,
        k_observe=3,
        k_validate=3,
        max_iterations=2,
        max_steps=8,
        extractor=extractor,
    )
    values.update(changes)
    return SkillLearningSettings(**values)


def stored(path) -> int:
    with RunStore(path, readonly=True) as store:
        return len(store)


def test_three_arms_two_rounds_with_fake_models(tmp_path) -> None:
    model = FakeToolCallingModel(responses=[reply] * 20_000)
    extractor = CountingExtractor()
    settings = fake_settings(tmp_path, model, extractor)
    result = run_skill_learning(settings)

    # Equal budgets: the same train tasks, environments and rollouts per round for every arm.
    assert result.budget.keys() == {"original", "harness"}
    for r, (original, harness) in enumerate(zip(*result.budget.values(), strict=True), 1):
        assert original["train_tasks"] == harness["train_tasks"] == settings.round_tasks(r)
        assert original["envs"] == harness["envs"] == 2
        assert original["rollouts"] == harness["rollouts"] == 4
        assert sum(harness["sources"].values()) == 2
        assert harness["rig_rollouts"] > 0
    # Evaluation only on the original test tasks, disjoint from the train tasks: every policy
    # (the bare one and each arm's bank after each round) played each test task once per run.
    with RunStore(settings.out / "eval", readonly=True) as store:
        episodes = list(store)
    policies = {t.policy for t in episodes}
    assert len(policies) >= 3 and "fake-tool-calling" in policies
    assert len(episodes) == len(policies) * 2 * len(TEST)
    assert {t.task_id for t in episodes} == set(TEST)
    assert all(t.spec["components"] == [] for t in episodes)
    # The fake policy solves only when its prompt shows skills: the skill arms must beat none.
    assert result.score("none").success_mean == 0.0
    assert result.score("original").success_mean == 1.0
    assert result.score("harness").success_mean == 1.0
    assert result.score("original", 1).envs == 2 and result.score("original", 2).envs == 4
    assert result.score("original").tokens_per_episode > 0
    paired = {(p.arm, p.baseline, p.round): p for p in result.paired}
    assert paired[("harness", "none", 2)].mean == 1.0
    assert paired[("harness", "original", 2)].mean == 0.0
    # The report, the plots and results.json.
    report = (settings.out / "report.md").read_text()
    assert "## Paired per-task differences" in report and "## Skills learned" in report
    assert "Offline policy" not in report
    assert {p.name for p in result.plots} == {"success.png", "steps.png", "scaling.png"}
    assert all(p.stat().st_size > 1000 for p in result.plots)
    saved = json.loads((settings.out / "results.json").read_text())
    assert len(saved["scores"]) == 5 and saved["skills_use"] is True

    # A rerun redoes nothing: no model call, no extraction, no rollout.
    calls, episodes = len(model.calls), extractor.episodes
    again = run_skill_learning(fake_settings(tmp_path, model, extractor))
    assert again.resumed
    assert len(model.calls) == calls and extractor.episodes == episodes
    assert [s.success_mean for s in again.scores] == [s.success_mean for s in result.scores]


def test_a_killed_experiment_resumes_without_redoing_finished_work(tmp_path) -> None:
    model = FakeToolCallingModel(responses=[reply] * 20_000)
    extractor = CountingExtractor()
    settings = fake_settings(tmp_path, model, extractor, rounds=1, envs_per_round=2)

    def kill(stage: str, done: int, total: int) -> None:
        if stage.startswith("original round 1: test") and done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_skill_learning(settings, progress=kill)
    read_before = extractor.episodes
    assert read_before == 2 * 4  # both arms extracted before the kill
    assert stored(settings.out / "eval") == len(TEST) * 2 + 3  # none, then 3 of original's
    rig_store = settings.out / "arms" / "harness" / "round-1" / "rig" / "trajectories"
    rigged = stored(rig_store)

    calls = len(model.calls)
    result = run_skill_learning(
        fake_settings(tmp_path, model, extractor, rounds=1, envs_per_round=2)
    )
    assert result.resumed
    assert extractor.episodes == read_before
    assert stored(rig_store) == rigged
    with RunStore(settings.out / "eval", readonly=True) as store:
        episodes = list(store)
    policies = {t.policy for t in episodes}
    assert len(episodes) == len(policies) * 2 * len(TEST)
    # Only the missing test episodes were played: at most 8 model calls each.
    missing = len(episodes) - (len(TEST) * 2 + 3)
    assert len(model.calls) - calls <= missing * 8


def test_offline_chain_arm_links_pairs_of_train_tasks(tmp_path) -> None:
    settings = SkillLearningSettings(
        "toy24",
        "oracle:0.7",
        TRAIN,
        TEST,
        tmp_path / "chain",
        arms="none,original,chain",
        runs=1,
        rollouts_per_env=1,
    )
    result = run_skill_learning(settings)
    envs = json.loads((settings.out / "arms" / "chain" / "round-1" / "envs.json").read_text())
    assert len(envs) == 4
    for env in envs:
        assert env["source"] == "chain" and env["partner"] in TRAIN
        assert env["partner"] != env["task_id"]
        (link,) = env["spec"]["components"]
        assert link["type"] == "link"
        assert link["config"]["second"]["bridge"]["task_id"] == env["partner"]
    assert result.skills_use is False
    assert "Offline policy" in (settings.out / "report.md").read_text()
    assert [p.baseline for p in result.paired] == ["none", "none", "original"]


def test_a_corrupt_bank_on_resume_is_named(tmp_path) -> None:
    model = FakeToolCallingModel(responses=[reply] * 20_000)
    settings = fake_settings(tmp_path, model, "offline", arms="none,original", rounds=2, runs=1)
    run_skill_learning(settings, report=False)
    bank = settings.out / "arms" / "original" / "round-1" / "bank.jsonl"
    bank.write_text("this is not a bank\n")
    with pytest.raises(SkillError, match="bank.jsonl:1"):
        run_skill_learning(
            fake_settings(tmp_path, model, "offline", arms="none,original", rounds=2, runs=1)
        )


def test_another_experiment_in_the_same_directory_is_refused(tmp_path) -> None:
    settings = SkillLearningSettings(
        "toy24", "oracle:0.5", TRAIN[:1], TEST[:1], tmp_path / "x", arms="none", runs=1
    )
    run_skill_learning(settings, report=False)
    other = SkillLearningSettings(
        "toy24", "oracle:0.9", TRAIN[:1], TEST[:1], tmp_path / "x", arms="none", runs=1
    )
    with pytest.raises(ExperimentError, match="policy differ"):
        run_skill_learning(other)
