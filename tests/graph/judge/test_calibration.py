"""Knob calibration: knob validation, the constrained monotone fits, and the proposals."""

from __future__ import annotations

import math
import random

import pytest

from envharness.errors import RiggerError
from envharness.graph.judge.calibration import (
    Knob,
    Point,
    band_probability_at,
    fit_logistic,
    fit_steps,
    predict,
    propose_value,
)
from envharness.graph.judge.decisions import Outcomes, judge
from envharness.graph.judge.posterior import band_probability

DROP = Knob("DROP_P", 0.0, 1.0, "high", 0.1)


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


# -- Knob -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"name": "drop-p"}, "Python identifier"),
        ({"name": "1X"}, "Python identifier"),
        ({"name": ""}, "Python identifier"),
        ({"low": 1.0, "high": 1.0}, "low < high"),
        ({"low": 2.0, "high": 1.0}, "low < high"),
        ({"value": 1.5}, "outside its range"),
        ({"value": -0.1}, "outside its range"),
        ({"harder": "up"}, "harder='high' or 'low'"),
        ({"low": "0"}, "low to be a number"),
        ({"high": True}, "high to be a number"),
        ({"value": math.nan}, "value to be finite"),
        ({"high": math.inf}, "high to be finite"),
    ],
)
def test_knob_validation(kwargs, match):
    fields = {"name": "DROP_P", "low": 0.0, "high": 1.0, "harder": "high", "value": 0.5}
    with pytest.raises(RiggerError, match=match):
        Knob(**{**fields, **kwargs})


def test_knob_round_trips_and_rejects_unknown_or_missing_fields():
    knob = Knob("SETUP_STEPS", 0, 8, "low", 3, integer=True)
    assert Knob.from_dict(knob.to_dict()) == knob
    with pytest.raises(RiggerError, match=r"unknown knob field\(s\) \['step'\]"):
        Knob.from_dict({**knob.to_dict(), "step": 1})
    with pytest.raises(RiggerError, match="a knob needs name, low, high, harder and value"):
        Knob.from_dict({"name": "X", "low": 0, "high": 1})


def test_knob_scale_runs_from_easy_to_hard():
    low_is_hard = Knob("MAX_CHARS", 100, 500, "low", 400)
    assert DROP.scale(0.0) == 0.0 and DROP.scale(1.0) == 1.0
    assert low_is_hard.scale(500) == 0.0 and low_is_hard.scale(100) == 1.0
    assert low_is_hard.unscale(low_is_hard.scale(250)) == pytest.approx(250)
    assert low_is_hard.clamp(1000) == 500
    assert Knob("N", 0, 10, "high", 3, integer=True).clamp(4.6) == 5.0


# -- the fits -------------------------------------------------------------------------------


def test_fit_logistic_recovers_a_falling_response():
    rng = random.Random(7)
    data = []
    for u in (0.0, 0.25, 0.5, 0.75, 1.0):
        n = 2000
        data.append((u, sum(rng.random() < sigmoid(2 - 6 * u) for _ in range(n)), n))
    a, b = fit_logistic(data)
    assert b < 0
    assert a == pytest.approx(2, abs=0.3)
    assert b == pytest.approx(-6, abs=0.5)


def test_fit_logistic_is_constrained_to_the_declared_direction():
    rising = [(0.0, 2, 20), (0.5, 10, 20), (1.0, 18, 20)]  # harder end looks easier: noise
    a, b = fit_logistic(rising)
    assert b == 0.0
    assert sigmoid(a) == pytest.approx(0.5, abs=0.05)  # the pooled rate
    # Without data, the prior: about four logits over the knob's range.
    assert fit_logistic([]) == pytest.approx((0.0, -4.0))


def test_fit_steps_is_constrained_and_empty_without_data():
    assert fit_steps([(0.0, 10), (0.5, 20), (1.0, 30)]) == pytest.approx((10.0, 20.0))
    a, b = fit_steps([(0.0, 30), (1.0, 10)])  # shorter toward the hard end: flattened
    assert (a, b) == pytest.approx((20.0, 0.0))
    assert fit_steps([(0.3, 12), (0.3, 14)]) == pytest.approx((13.0, 0.0))
    assert fit_steps([]) is None


# -- proposals ------------------------------------------------------------------------------


def converge(seed: int, rounds: int = 8) -> float:
    """Propose, sample 20 episodes there, add the point with the judge's side; repeat."""
    rng = random.Random(seed)
    points: list[Point] = []
    value = DROP.value
    for _ in range(rounds):
        successes = sum(rng.random() < 1 - value for _ in range(20))  # success = 1 - DROP_P
        verdict = judge("sr:0.4-0.6", "harden", Outcomes(20, successes), Outcomes(5, 5))
        side = verdict.side if verdict.decision == "refine" else None
        points.append(Point(value, successes, 20, (), side))
        value = propose_value(DROP, points, 0.5)
        assert value is not None
        assert DROP.low <= value <= DROP.high
    return value


def test_propose_value_converges_on_a_monotone_response():
    finals = [converge(seed) for seed in range(20)]
    close = sum(abs(v - 0.5) <= 0.1 for v in finals)
    print(f"final proposals within 0.1 of 0.5: {close}/20; mean {sum(finals) / 20:.3f}")
    assert close >= 16
    assert sum(finals) / len(finals) == pytest.approx(0.5, abs=0.05)


def test_propose_value_stays_strictly_inside_the_bracket():
    points = [Point(0.2, 19, 20, (), "too_easy"), Point(0.4, 2, 20, (), "too_hard")]
    value = propose_value(DROP, points, 0.5)
    assert 0.2 < value < 0.4
    # A knob whose low end is the hard one: the bracket is read on the easy-to-hard scale.
    chars = Knob("MAX_CHARS", 0, 1000, "low", 900)
    chars_points = [Point(800, 20, 20, (), "too_easy"), Point(300, 0, 20, (), "too_hard")]
    assert 300 < propose_value(chars, chars_points, 0.5) < 800


def test_refined_values_are_data_and_only_refined_ends_stop_the_search():
    # A refine is sure only to the judge's confidence: it does not wall off the values around.
    adjacent = [Point(0.5, 18, 20, (), "too_easy"), Point(0.51, 2, 20, (), "too_hard")]
    assert 0.45 <= propose_value(DROP, adjacent, 0.5) <= 0.55  # the prior keeps the slope mild
    assert propose_value(DROP, [Point(1.0, 20, 20, (), "too_easy")], 0.5) is None
    assert propose_value(DROP, [Point(0.0, 0, 20, (), "too_hard")], 0.5) is None


def test_integer_knob_proposals_are_integers_strictly_inside():
    knob = Knob("N", 0, 10, "high", 3, integer=True)
    for easy, hard in [(3, 6), (3, 5), (0, 10), (7, 9)]:
        points = [Point(easy, 18, 20, (), "too_easy"), Point(hard, 2, 20, (), "too_hard")]
        value = propose_value(knob, points, 0.5)
        assert value is not None and value == int(value)
        assert easy < value < hard
    adjacent = [Point(3, 18, 20, (), "too_easy"), Point(4, 2, 20, (), "too_hard")]
    assert propose_value(knob, adjacent, 0.5) is None


def test_predict_needs_data():
    assert predict(DROP, [], 0.3) is None
    assert predict(DROP, [Point(0.3, 0, 0)], 0.3) is None
    assert predict(DROP, [], 0.3, axis="steps") is None
    points = [Point(0.2, 18, 20), Point(0.8, 3, 20)]
    assert predict(DROP, points, 0.2) > predict(DROP, points, 0.5) > predict(DROP, points, 0.8)


def test_steps_axis_uses_the_steps_line():
    knob = Knob("SETUP_STEPS", 0, 20, "high", 2, integer=True)
    points = [
        Point(2, 5, 5, (12, 12, 12, 12, 12)),
        Point(10, 5, 5, (20, 20, 20, 20, 21)),
    ]
    assert predict(knob, points, 6, axis="steps") == pytest.approx(16.1, abs=0.1)
    value = propose_value(knob, points, 26, axis="steps")
    assert value == 16.0
    assert predict(knob, points, value, axis="steps") == pytest.approx(26, abs=1)


def test_bad_axis_or_aim_raises():
    with pytest.raises(RiggerError, match="axis 'success' or 'steps'"):
        propose_value(DROP, [], 0.5, axis="reward")
    with pytest.raises(RiggerError, match=r"success aim in \(0, 1\)"):
        propose_value(DROP, [Point(0.2, 10, 20)], 1.5)


# -- band_probability_at ----------------------------------------------------------------------


def test_band_probability_at_one_setting_is_close_to_its_flat_beta_posterior():
    knob = Knob("DROP_P", 0.0, 0.9, "high", 0.45)
    for successes, n in [(20, 40), (12, 20), (30, 50)]:
        pooled = band_probability_at(knob, [Point(0.45, successes, n)], 0.45, 0.4, 0.6)
        assert pooled == pytest.approx(band_probability(successes, n, 0.4, 0.6), abs=0.03)


def test_band_probability_at_pools_the_neighbouring_settings():
    knob = Knob("DROP_P", 0.0, 1.0, "high", 0.5)
    here = [Point(0.5, 10, 20)]
    around = [*here, Point(0.3, 15, 20), Point(0.7, 5, 20)]  # a curve through 0.5 at 0.5
    alone = band_probability_at(knob, here, 0.5, 0.4, 0.6)
    pooled = band_probability_at(knob, around, 0.5, 0.4, 0.6)
    assert alone is not None and pooled is not None
    assert pooled > alone + 0.1
    assert band_probability_at(knob, around, 0.05, 0.4, 0.6) < 0.05  # far up the curve


def test_band_probability_at_is_calibrated_when_the_model_holds():
    # Responses drawn from the prior itself: among values it calls in band with probability
    # >= 0.8, the true rate is in the band at least that often (up to sampling error).
    rng = random.Random(11)
    knob = Knob("K", 0.0, 1.0, "high", 0.5)
    claimed, truly = [], []
    while len(claimed) < 300:
        a, b = rng.gauss(0.0, 2.5), rng.gauss(-4.0, 2.5)
        if b > 0:
            continue
        points = []
        for u in (0.2, 0.5, 0.8):
            p = sigmoid(a + b * u)
            points.append(Point(u, sum(rng.random() < p for _ in range(30)), 30))
        probability = band_probability_at(knob, points, 0.5, 0.4, 0.6)
        assert probability is not None
        claimed.append(probability)
        truly.append(0.4 <= sigmoid(a + b * 0.5) <= 0.6)
    sure = [t for c, t in zip(claimed, truly, strict=True) if c >= 0.8]
    assert len(sure) >= 5
    assert sum(sure) / len(sure) >= 0.7
    assert abs(sum(claimed) / len(claimed) - sum(truly) / len(truly)) < 0.06


def test_band_probability_at_needs_data_and_a_band():
    knob = Knob("K", 0.0, 1.0, "high", 0.5)
    assert band_probability_at(knob, [], 0.5, 0.4, 0.6) is None
    assert band_probability_at(knob, [Point(0.5, 0, 0)], 0.5, 0.4, 0.6) is None
    with pytest.raises(RiggerError, match="0 <= low <= high <= 1"):
        band_probability_at(knob, [Point(0.5, 1, 2)], 0.5, 0.6, 0.4)
