"""``band_operating_characteristic``: exact figures that agree with the validator it describes."""

from __future__ import annotations

import random

import pytest

from envharness.errors import RiggerError
from envharness.graph.judge.decisions import JudgeSettings, Outcomes
from envharness.graph.judge.operating import band_operating_characteristic
from envharness.graph.judge.sequential import validate_candidate

BAND = "sr:0.4-0.6"


def test_probabilities_sum_to_one_and_are_symmetric_about_the_band():
    low = band_operating_characteristic(BAND, 0.4, max_rollouts=100)
    high = band_operating_characteristic(BAND, 0.6, max_rollouts=100)
    assert low.accept + low.refine + low.undecided == pytest.approx(1.0)
    assert low.accept == pytest.approx(high.accept)
    assert 0 < low.expected_rollouts <= 100


def test_acceptance_grows_toward_the_centre_and_vanishes_far_outside():
    accepts = [band_operating_characteristic(BAND, p, max_rollouts=100).accept
               for p in (0.1, 0.3, 0.4, 0.45, 0.5)]  # fmt: skip
    assert accepts == sorted(accepts)
    assert accepts[0] < 1e-6
    # No acceptance is possible before 39 rollouts at confidence 0.8 (3/5, 20/39 ... all fail).
    assert band_operating_characteristic(BAND, 0.5, max_rollouts=35).accept == 0.0


def test_matches_the_validator_it_describes():
    rate, runs, accepted = 0.45, 600, 0
    settings = JudgeSettings(max_rollouts=80)
    for run in range(runs):

        def sample(values, first_seed, n, run=run):
            rng = random.Random(run)
            draws = [rng.random() for _ in range(first_seed + n)][first_seed:]
            return Outcomes(n, sum(d < rate for d in draws))

        result = validate_candidate(
            BAND, "harden", Outcomes(5, 5), sample, first_seed=0, settings=settings
        )
        accepted += result.decision == "accept"
    exact = band_operating_characteristic(BAND, rate, settings=settings).accept
    sd = (exact * (1 - exact) / runs) ** 0.5
    assert abs(accepted / runs - exact) < 4 * sd


@pytest.mark.parametrize(
    ("objective", "rate", "budget", "match"),
    [
        ("auto", 0.5, None, "success-band objective"),
        (BAND, 1.5, None, "rate to be a number in"),
        (BAND, 0.5, 0, "max_rollouts to be a positive int"),
    ],
)
def test_bad_input_is_named(objective, rate, budget, match):
    with pytest.raises(RiggerError, match=match):
        band_operating_characteristic(objective, rate, max_rollouts=budget)
