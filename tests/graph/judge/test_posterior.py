"""Posteriors: band mass, credible intervals, two-sample shifts, Fisher, means of steps."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from envharness.graph.judge.posterior import (
    PRIOR,
    STEPS_SD_FLOOR,
    band_probability,
    credible_interval,
    fisher_p_value,
    mean_band_probability,
    mean_interval,
    posterior,
    shift_probability,
)


def test_posterior_is_the_uniform_prior_updated():
    assert PRIOR == (1.0, 1.0)
    assert posterior(3, 5) == (4.0, 3.0)
    assert posterior(0, 0) == (1.0, 1.0)
    assert posterior(np.int64(2), np.int64(4)) == (3.0, 3.0)


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [(3, 5, 0.4, 0.6), (20, 40, 0.4, 0.6), (0, 5, 0.0, 0.2), (5, 5, 0.9, 1.0), (7, 30, 0.1, 0.5)],
)
def test_band_probability_matches_the_beta_cdf(successes, n, low, high):
    dist = stats.beta(1 + successes, 1 + n - successes)
    expected = dist.cdf(high) - dist.cdf(low)
    assert band_probability(successes, n, low, high) == pytest.approx(expected, abs=1e-12)


def test_band_probability_of_the_whole_range_and_of_a_point():
    assert band_probability(2, 9, 0.0, 1.0) == pytest.approx(1.0)
    assert band_probability(2, 9, 0.3, 0.3) == 0.0
    # Without data the posterior is the prior: the mass of a band is its width.
    assert band_probability(0, 0, 0.4, 0.6) == pytest.approx(0.2)


@pytest.mark.parametrize(("successes", "n"), [(0, 5), (3, 5), (5, 5), (20, 40), (1, 100)])
def test_credible_interval_holds_the_stated_mass(successes, n):
    lo, hi = credible_interval(successes, n, 0.9)
    dist = stats.beta(1 + successes, 1 + n - successes)
    assert 0.0 <= lo < hi <= 1.0
    assert dist.cdf(lo) == pytest.approx(0.05, abs=1e-9)
    assert dist.cdf(hi) == pytest.approx(0.95, abs=1e-9)
    assert lo < (1 + successes) / (2 + n) < hi  # the posterior mean
    wide, narrow = credible_interval(successes, n, 0.99), credible_interval(successes, n, 0.5)
    assert wide[0] < lo < narrow[0] < narrow[1] < hi < wide[1]


def test_credible_interval_narrows_with_more_data():
    lo5, hi5 = credible_interval(3, 5)
    lo50, hi50 = credible_interval(30, 50)
    assert hi50 - lo50 < hi5 - lo5


def _monte_carlo_shift(s: int, n: int, s0: int, n0: int, delta: float) -> float:
    rng = np.random.default_rng(12345)
    p1 = rng.beta(1 + s, 1 + n - s, 200_000)
    p0 = rng.beta(1 + s0, 1 + n0 - s0, 200_000)
    return float(np.mean(p1 - p0 >= delta))


@pytest.mark.parametrize(
    ("s", "n", "s0", "n0", "delta"),
    [
        (4, 5, 5, 5, 0.0),
        (2, 10, 5, 5, -0.2),  # fell by at most 0.2
        (4, 30, 5, 5, -0.2),
        (3, 5, 0, 5, 0.2),
        (12, 20, 2, 10, 0.3),
        (10, 40, 5, 5, -0.6),
        (0, 0, 0, 0, 0.0),
    ],
)
def test_shift_probability_matches_monte_carlo(s, n, s0, n0, delta):
    assert shift_probability(s, n, s0, n0, delta) == pytest.approx(
        _monte_carlo_shift(s, n, s0, n0, delta), abs=0.01
    )


def test_shift_probability_edges_and_symmetry():
    assert shift_probability(3, 7, 2, 9, -1.0) == pytest.approx(1.0, abs=1e-6)
    assert shift_probability(3, 7, 2, 9, 1.0) == pytest.approx(0.0, abs=1e-6)
    # Same data on both sides: a rise and a fall are equally likely.
    assert shift_probability(3, 5, 3, 5, 0.0) == pytest.approx(0.5, abs=1e-3)
    # P(p1 - p0 >= 0) is P(p0 - p1 <= 0) with the roles swapped.
    forward = shift_probability(4, 5, 5, 5, 0.0)
    assert forward == pytest.approx(1.0 - shift_probability(5, 5, 4, 5, 0.0), abs=1e-3)
    # Larger shifts are less probable.
    assert shift_probability(9, 10, 2, 10, 0.1) > shift_probability(9, 10, 2, 10, 0.5)


def test_fisher_p_value_one_sided():
    table = [[1, 9], [8, 2]]
    less = stats.fisher_exact(table, alternative="less").pvalue
    greater = stats.fisher_exact(table, alternative="greater").pvalue
    assert fisher_p_value(1, 10, 8, 10, "less") == pytest.approx(less)
    assert fisher_p_value(1, 10, 8, 10, "greater") == pytest.approx(greater)
    assert fisher_p_value(1, 10, 8, 10, "less") < 0.01 < 0.99 < greater
    # 0/5 against 5/5: the hypergeometric tail is 1 / C(10, 5).
    assert fisher_p_value(0, 5, 5, 5, "less") == pytest.approx(1 / 252)
    assert fisher_p_value(5, 5, 0, 5, "greater") == pytest.approx(1 / 252)
    assert fisher_p_value(4, 5, 5, 5, "less") == pytest.approx(0.5)
    # No episodes on one side: no evidence at all.
    assert fisher_p_value(0, 0, 5, 5, "less") == 1.0
    assert fisher_p_value(3, 5, 0, 0, "greater") == 1.0


def test_mean_band_probability_is_a_student_t():
    values = [10, 12, 11, 15, 9, 13]
    m = len(values)
    dist = stats.t(m - 1, loc=np.mean(values), scale=np.std(values, ddof=1) / np.sqrt(m))
    expected = dist.cdf(14) - dist.cdf(10)
    assert mean_band_probability(values, 10, 14) == pytest.approx(expected, abs=1e-12)
    lo, hi = mean_interval(values, 0.9)
    assert (lo, hi) == pytest.approx(tuple(dist.ppf([0.05, 0.95])))


def test_mean_band_probability_with_equal_values_uses_the_sd_floor():
    values = [10, 10, 10, 10]
    probability = mean_band_probability(values, 9.9, 10.1)
    dist = stats.t(3, loc=10.0, scale=STEPS_SD_FLOOR / 2)
    assert probability == pytest.approx(dist.cdf(10.1) - dist.cdf(9.9), abs=1e-12)
    assert 0.0 < probability < 1.0
    assert mean_band_probability(values, 9, 11) < 1.0
    lo, hi = mean_interval(values)
    assert lo < 10 < hi


def test_bad_input_raises():
    with pytest.raises(ValueError, match="0 <= successes <= n"):
        band_probability(6, 5, 0.4, 0.6)
    with pytest.raises(ValueError, match="0 <= successes <= n"):
        shift_probability(1, 5, 7, 5, 0.0)
    with pytest.raises(ValueError, match="0 <= successes <= n"):
        fisher_p_value(-1, 5, 5, 5, "less")
    with pytest.raises(ValueError, match="expected an int successes"):
        band_probability(2.5, 5, 0.4, 0.6)
    with pytest.raises(ValueError, match="expected an int n"):
        posterior(1, True)
    with pytest.raises(ValueError, match="level in"):
        credible_interval(3, 5, 1.5)
    with pytest.raises(ValueError, match="level in"):
        mean_interval([1, 2, 3], 0.0)
    with pytest.raises(ValueError, match="0 <= low <= high <= 1"):
        band_probability(3, 5, 0.6, 0.4)
    with pytest.raises(ValueError, match="0 <= low <= high <= 1"):
        band_probability(3, 5, -0.1, 0.4)
    with pytest.raises(ValueError, match="low <= high"):
        mean_band_probability([1, 2, 3], 5, 4)
    with pytest.raises(ValueError, match="at least 2 values"):
        mean_band_probability([7], 5, 9)
    with pytest.raises(ValueError, match="delta in"):
        shift_probability(1, 5, 1, 5, 1.5)
    with pytest.raises(ValueError, match="alternative"):
        fisher_p_value(1, 5, 1, 5, "two-sided")
