from __future__ import annotations

import json

import pytest

from envharness import Evaluation
from envharness.rollout.stats import (
    FAILURE_CATEGORIES,
    RolloutStats,
    failure_category,
    find_loop,
    stats_by_task,
    wilson_interval,
)
from envharness.rollout.trajectory import END_REASONS, Step, Trajectory


def act(n: int) -> dict:
    return {"tool": "combine", "args": {"a": str(n), "op": "+", "b": "1"}}


def make(
    actions: list[dict | None] | None = None,
    *,
    success: bool = False,
    end_reason: str = "budget",
    invalid: set[int] = frozenset(),
    blocked: set[int] = frozenset(),
    task_id: str = "t",
) -> Trajectory:
    actions = [act(i) for i in range(4)] if actions is None else actions
    steps = [
        Step(i, a, f"obs {i}", invalid="no" if i in invalid else None, blocked=i in blocked)
        for i, a in enumerate(actions)
    ]
    evaluation = Evaluation(success, float(success))
    return Trajectory(
        task_id,
        "toy24",
        "spec",
        {},
        0,
        "p",
        steps=steps,
        evaluation=evaluation,
        end_reason=end_reason,
    )


# -- Wilson interval -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "n", "expected"),
    [
        (0, 5, (0.0, 0.4345)),
        (5, 5, (0.5655, 1.0)),
        (3, 10, (0.1078, 0.6032)),
        (50, 100, (0.4038, 0.5962)),
        (1, 1, (0.2065, 1.0)),
        (0, 0, (0.0, 1.0)),
    ],
)
def test_wilson_interval_known_values(k, n, expected):
    lo, hi = wilson_interval(k, n)
    assert (round(lo, 4), round(hi, 4)) == expected


def test_wilson_interval_narrows_with_z_and_n():
    assert wilson_interval(3, 10, z=1.0)[1] < wilson_interval(3, 10)[1]
    assert wilson_interval(30, 100)[1] < wilson_interval(3, 10)[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((6, 5), "expected 0 <= k <= n, got k=6, n=5"),
        ((-1, 5), "expected 0 <= k <= n"),
        ((1.0, 5), "expected an int k"),
        ((True, 5), "expected an int k"),
        ((1, "5"), "expected an int n"),
    ],
)
def test_wilson_interval_rejects_bad_counts(args, message):
    with pytest.raises(ValueError, match=message):
        wilson_interval(*args)


def test_wilson_interval_rejects_bad_z():
    with pytest.raises(ValueError, match="expected a positive z"):
        wilson_interval(1, 2, z=0)


# -- loops ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("actions", "expected"),
    [
        ([], None),
        (list("aab"), None),
        (list("aaa"), (0, 1, 3)),
        (list("xaaaaa"), (1, 1, 5)),
        (list("ababab"), (0, 2, 3)),
        (list("ababa"), None),
        (list("abababab"), (0, 2, 4)),
        (list("xabcabcabc"), (1, 3, 3)),
        (list("aabaabaab"), (0, 3, 3)),
        (list("abcabcab"), None),
        (list("aabb"), None),
        (list("abababccc"), (0, 2, 3)),  # the earliest loop is reported
        ([None, None, None], None),  # steps without an action never loop
        (["a", None, "a", None, "a", None], None),
        (list("abcdabcdabcd"), None),  # period 4 is not a short cycle
    ],
)
def test_find_loop(actions, expected):
    assert find_loop(actions) == expected


def test_find_loop_on_trajectory_action_keys():
    actions = [act(1), {"tool": "undo", "args": {}}, act(2)] * 3
    start, period, repeats = find_loop(make(actions).action_keys())
    assert (start, period, repeats) == (0, 3, 3)
    # Equal actions written with different key orders are the same action.
    reordered = {"args": {"b": "1", "op": "+", "a": "1"}, "tool": "combine"}
    assert find_loop(make([act(1), reordered, act(1)]).action_keys()) == (0, 1, 3)


# -- failure categories --------------------------------------------------------------------------


def test_failure_categories_in_priority_order():
    looping = [act(1)] * 3 + [act(2)]
    assert failure_category(make(success=True, end_reason="terminated")) is None
    assert failure_category(make(looping, end_reason="timeout")) == "timeout"
    assert failure_category(make(looping, end_reason="policy_error")) == "policy_error"
    assert failure_category(make(looping, end_reason="env_error")) == "env_error"
    assert failure_category(make(looping, invalid={0, 1, 2, 3})) == "loop"
    assert failure_category(make(invalid={0, 1})) == "invalid_actions"
    assert failure_category(make(invalid={0})) == "budget"
    assert failure_category(make(blocked={1, 3})) == "blocked"
    assert failure_category(make(invalid={0, 1}, blocked={2, 3})) == "invalid_actions"
    assert failure_category(make()) == "budget"
    assert failure_category(make(end_reason="terminated")) == "wrong_end"
    assert failure_category(make(end_reason="truncated")) == "wrong_end"
    assert failure_category(make([], end_reason="truncated")) == "wrong_end"


# -- RolloutStats --------------------------------------------------------------------------------


def test_stats_over_a_mixed_batch():
    batch = [
        make([act(1), act(2)], success=True, end_reason="terminated"),
        make([act(1), act(2), act(3), act(4)], success=True, end_reason="terminated", blocked={0}),
        make([act(1)] * 6, invalid={0, 1}),  # loop
        make([act(1), act(2)], end_reason="timeout"),
        make([None, None, act(1), act(2)], invalid={0, 1}),  # invalid_actions
        make([], end_reason="env_error"),
    ]
    stats = RolloutStats.from_trajectories(batch)
    assert (stats.n, stats.successes) == (6, 2)
    assert stats.success_rate == pytest.approx(2 / 6)
    assert (stats.ci_low, stats.ci_high) == wilson_interval(2, 6)
    assert stats.steps_mean == pytest.approx(18 / 6)
    assert stats.steps_std == pytest.approx((22 / 6) ** 0.5)  # population std of 2 4 6 2 4 0
    assert (stats.steps_min, stats.steps_max) == (0, 6)
    assert stats.success_steps_mean == pytest.approx(3.0)
    assert stats.invalid_rate == pytest.approx(4 / 18)
    assert stats.blocked_rate == pytest.approx(1 / 18)
    assert (stats.timeouts, stats.errors, stats.loops) == (1, 1, 1)
    assert stats.end_reasons == {
        "terminated": 2,
        "truncated": 0,
        "budget": 2,
        "policy_error": 0,
        "timeout": 1,
        "env_error": 1,
    }
    assert list(stats.end_reasons) == list(END_REASONS)
    assert stats.failures == {"timeout": 1, "env_error": 1, "loop": 1, "invalid_actions": 1}
    assert sum(stats.failures.values()) == stats.n - stats.successes
    assert set(stats.failures) <= set(FAILURE_CATEGORIES)


def test_empty_batch_is_well_defined():
    stats = RolloutStats.from_trajectories([])
    assert (stats.n, stats.successes, stats.success_rate) == (0, 0, 0.0)
    assert (stats.ci_low, stats.ci_high) == (0.0, 1.0)
    assert (stats.steps_mean, stats.steps_std, stats.steps_min, stats.steps_max) == (0, 0, 0, 0)
    assert stats.success_steps_mean is None
    assert (stats.invalid_rate, stats.blocked_rate) == (0.0, 0.0)
    assert stats.failures == {} and sum(stats.end_reasons.values()) == 0


def test_stats_accept_any_iterable_and_reject_non_trajectories():
    stats = RolloutStats.from_trajectories(make() for _ in range(3))
    assert stats.n == 3 and stats.failures == {"budget": 3}
    with pytest.raises(TypeError, match="item 1: expected a Trajectory, got dict"):
        RolloutStats.from_trajectories([make(), {"task_id": "t"}])


def test_to_dict_is_json_and_round_trips():
    stats = RolloutStats.from_trajectories([make(success=True, end_reason="terminated"), make()])
    data = json.loads(json.dumps(stats.to_dict()))
    assert data["n"] == 2 and data["failures"] == {"budget": 1}
    assert RolloutStats.from_dict(data) == stats
    with pytest.raises(ValueError, match="malformed RolloutStats dict"):
        RolloutStats.from_dict({"n": 1})


def test_summary_is_one_line():
    stats = RolloutStats.from_trajectories(
        [make(success=True, end_reason="terminated")] * 3 + [make(end_reason="timeout")]
    )
    line = stats.summary()
    assert "\n" not in line
    assert line.startswith("n=4 success 3/4 (75%, 95% CI 30-95%) steps 4.0±0.0")
    assert line.endswith("loops 0 timeouts 1 errors 0")


def test_stats_by_task_groups_and_sorts():
    batch = [
        make(task_id="b", success=True, end_reason="terminated"),
        make(task_id="a"),
        make(task_id="b"),
    ]
    grouped = stats_by_task(batch)
    assert list(grouped) == ["a", "b"]
    assert (grouped["a"].n, grouped["a"].successes) == (1, 0)
    assert (grouped["b"].n, grouped["b"].successes) == (2, 1)
    assert stats_by_task([]) == {}
    with pytest.raises(TypeError, match="item 0: expected a Trajectory, got str"):
        stats_by_task(["t"])
