"""SkillLearningSettings: what a skill-learning experiment may be asked to run."""

from __future__ import annotations

import json

import pytest

from envharness.errors import ExperimentError
from envharness.experiments.settings import ExperimentLayout, SkillLearningSettings, parse_arms

TRAIN = ["1-1-1-8", "1-1-1-11", "1-1-1-12", "1-1-1-13"]
TEST = ["1-1-2-6", "1-1-2-12"]


def settings(tmp_path, **changes) -> SkillLearningSettings:
    values = {
        "bridge": "toy24",
        "policy": "oracle:0.5",
        "train_tasks": TRAIN,
        "test_tasks": TEST,
        "out": tmp_path / "sl",
    }
    values.update(changes)
    return SkillLearningSettings(**values)


def test_arms_are_parsed_in_canonical_order() -> None:
    assert parse_arms("chain,none , harness") == ("none", "harness", "chain")
    assert parse_arms(["original"]) == ("original",)


@pytest.mark.parametrize("arms", ["none,skills", "", ",,"])
def test_unknown_or_missing_arms_are_refused(arms: str) -> None:
    with pytest.raises(ExperimentError, match="arm"):
        parse_arms(arms)


def test_rounds_take_disjoint_blocks_of_train_tasks(tmp_path) -> None:
    s = settings(tmp_path, rounds=2)
    assert s.envs_per_round == 2
    assert s.round_tasks(1) == TRAIN[:2] and s.round_tasks(2) == TRAIN[2:]
    assert s.train_seeds(1) != s.train_seeds(2)
    assert s.eval_seed(0) not in s.train_seeds(1) + s.train_seeds(2)
    assert s.skill_arms == ("original", "harness")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"runs": 0}, "runs must be an int >= 1"),
        ({"rounds": 0}, "rounds must be an int >= 1"),
        ({"top_k": True}, "top_k"),
        ({"seed": -1}, "seed"),
        ({"test_tasks": ["1-1-1-8", "1-1-2-6"]}, "both train and test tasks"),
        ({"test_tasks": []}, "test_tasks is empty"),
        ({"train_tasks": "1-1-1-8"}, "must be a list of task ids"),
        ({"train_tasks": ["1-1-1-8", "1-1-1-8"]}, "more than once"),
        ({"rounds": 5}, "cannot fill 5 round"),
        ({"rounds": 2, "envs_per_round": 3}, "need 6 train tasks"),
        ({"arms": "chain", "train_tasks": ["1-1-1-8"]}, "at least two"),
        ({"bridge_options": ["x"]}, "bridge_options must be a mapping"),
    ],
)
def test_bad_settings_say_what_is_wrong(tmp_path, changes, message) -> None:
    with pytest.raises(ExperimentError, match=message):
        settings(tmp_path, **changes)


def test_a_run_directory_holds_one_experiment(tmp_path) -> None:
    layout = ExperimentLayout(tmp_path / "sl")
    assert layout.prepare(settings(tmp_path)) is False
    assert layout.prepare(settings(tmp_path)) is True
    with pytest.raises(ExperimentError, match="runs differ"):
        layout.prepare(settings(tmp_path, runs=5))
    (tmp_path / "sl" / "experiment.json").write_text("{not json")
    with pytest.raises(ExperimentError, match="not an experiment's settings file"):
        layout.prepare(settings(tmp_path))


def test_the_recorded_settings_are_plain_json(tmp_path) -> None:
    s = settings(tmp_path, arms="none,chain")
    data = json.loads(json.dumps(s.to_dict()))
    assert data["arms"] == ["none", "chain"]
    assert data["policy"] == "oracle:0.5" and data["extractor"] == "offline"
