"""Scores per arm and paired bootstrap differences."""

from __future__ import annotations

import pytest

from envharness.core import Evaluation
from envharness.experiments.metrics import paired_difference, score_arm, task_success
from envharness.rollout.trajectory import Step, Trajectory


def episode(task: str, success: bool, steps: int, tokens: int = 0) -> Trajectory:
    return Trajectory(
        task,
        "toy24",
        "spec",
        {},
        0,
        "p",
        steps=[Step(i, {"tool": "undo", "args": {}}, "ok") for i in range(steps)],
        evaluation=Evaluation(success, float(success), {}),
        usage={"input_tokens": tokens, "output_tokens": 0, "total_tokens": tokens},
    )


def test_an_arm_is_scored_per_run() -> None:
    runs = [
        [episode("a", True, 2, 10), episode("b", False, 6, 30)],
        [episode("a", True, 4, 10), episode("b", True, 4, 30)],
    ]
    score = score_arm("original", 1, 4, runs, skills=3)
    assert score.success_by_run == (0.5, 1.0)
    assert score.success_mean == pytest.approx(0.75)
    assert score.success_std == pytest.approx(0.35355, abs=1e-4)
    assert score.steps_mean == 4.0
    assert score.success_steps_mean == pytest.approx(10 / 3)
    assert score.tokens_per_episode == 20.0
    assert score.episodes == 4 and score.skills == 3


def test_no_usage_means_no_token_figure() -> None:
    score = score_arm("none", 0, 0, [[episode("a", False, 3)]], skills=0)
    assert score.tokens_per_episode is None and score.success_steps_mean is None


def test_task_success_averages_over_runs() -> None:
    runs = [[episode("a", True, 1), episode("b", False, 1)], [episode("a", False, 1)]]
    assert task_success(runs) == {"a": 0.5, "b": 0.0}


def test_paired_difference_is_reproducible_and_brackets_the_mean() -> None:
    arm = {f"t{i}": 1.0 if i % 4 else 0.0 for i in range(40)}
    base = {f"t{i}": 0.0 if i % 2 else 1.0 for i in range(40)}
    first = paired_difference("harness", "none", 1, arm, base, seed=3)
    again = paired_difference("harness", "none", 1, arm, base, seed=3)
    assert first == again
    assert first.tasks == 40
    assert first.mean == pytest.approx(0.25)
    assert first.low < first.mean < first.high
    assert first.better == 20 and first.worse == 10


def test_identical_arms_differ_by_exactly_zero() -> None:
    scores = {"a": 1.0, "b": 0.0}
    diff = paired_difference("original", "none", 1, scores, scores)
    assert (diff.mean, diff.low, diff.high, diff.better, diff.worse) == (0.0, 0.0, 0.0, 0, 0)


def test_only_shared_tasks_are_compared() -> None:
    diff = paired_difference("original", "none", 1, {"a": 1.0, "b": 1.0}, {"a": 0.0})
    assert diff.tasks == 1 and diff.mean == 1.0
    empty = paired_difference("original", "none", 1, {"a": 1.0}, {"b": 0.0})
    assert empty.tasks == 0
