"""``validate_candidate``: fresh contiguous seeds, one decision per setting, knob calibration."""

from __future__ import annotations

import json
import random

import pytest

from envharness.errors import RiggerError
from envharness.graph.judge.calibration import Knob, Point, band_probability_at
from envharness.graph.judge.decisions import JudgeSettings, Outcomes
from envharness.graph.judge.sequential import (
    MIN_FRESH_BATCHES,
    ValidationRun,
    knob_aim,
    validate_candidate,
)
from envharness.graph.objective import Objective

BAND = "sr:0.4-0.6"
ALWAYS = Outcomes(5, 5)
DROP = Knob("DROP_P", 0.0, 0.9, "high", 0.1)


class Policy:
    """A simulated policy: success with probability ``1 - DROP_P``, decided by the seed."""

    def __init__(self, run: int = 0) -> None:
        self.run = run
        self.calls: list[tuple[dict[str, float], int, int]] = []

    def __call__(self, values: dict[str, float], first_seed: int, n: int) -> Outcomes:
        self.calls.append((dict(values), first_seed, n))
        p = 1 - values["DROP_P"]
        wins = sum(
            random.Random(self.run * 1_000_003 + seed).random() < p
            for seed in range(first_seed, first_seed + n)
        )
        return Outcomes(n, wins, (3,) * wins)


def repeating(*successes: int):
    """A sampler whose batches succeed ``successes[0]``, ``successes[1]``, ... times, cycling."""
    calls: list[int] = []

    def sample(values, first_seed, n):
        wins = min(n, successes[len(calls) % len(successes)])
        calls.append(n)
        return Outcomes(n, wins)

    sample.calls = calls  # type: ignore[attr-defined]
    return sample


def check_bookkeeping(run: ValidationRun, first_seed: int, policy: Policy | None = None) -> None:
    assert run.seeds == list(range(first_seed, first_seed + run.rollouts))
    assert run.next_seed == first_seed + run.rollouts
    last = run.settings[-1]
    assert run.judgement == last.judgement
    assert run.judgement.n == last.outcomes.n
    assert run.values == last.values
    for record in run.settings:
        assert len(record.seeds) == record.outcomes.n > 0
        assert record.judgement.n == record.outcomes.n
    assert run.calibrated == (len(run.settings) > 1)
    if policy is not None:  # what the sampler was asked for, batch by batch
        asked = [seed for _, start, n in policy.calls for seed in range(start, start + n)]
        assert asked == run.seeds
        assert len(set(asked)) == len(asked)


def test_knob_calibration_lands_in_the_band_in_most_runs():
    right = accepted = 0
    for run_id in range(50):
        policy = Policy(run_id)
        first = 1000 + 7 * run_id
        run = validate_candidate(BAND, "harden", ALWAYS, policy, first_seed=first, knobs=[DROP])
        check_bookkeeping(run, first, policy)
        assert run.rollouts <= JudgeSettings().max_rollouts
        assert DROP.low <= run.values["DROP_P"] <= DROP.high
        if run.decision == "accept":
            accepted += 1
            right += 0.4 <= 1 - run.values["DROP_P"] <= 0.6
    print(f"knob runs accepted in the band: {right}/50 = {right / 50:.2f} "
          f"({accepted} accepted, {right}/{accepted} of them truly in the band)")  # fmt: skip
    assert right / 50 >= 0.6


def test_a_knob_far_off_is_moved_and_the_first_setting_does_not_decide():
    policy = Policy(3)
    run = validate_candidate(BAND, "harden", ALWAYS, policy, first_seed=0, knobs=[DROP])
    check_bookkeeping(run, 0, policy)
    assert run.calibrated
    assert run.settings[0].values == {"DROP_P": 0.1}
    assert run.settings[0].judgement.decision != "accept"
    values = [tuple(r.values.items()) for r in run.settings]
    assert len(set(values)) > 1
    json.dumps([r.to_dict() for r in run.settings])  # the records are JSON-able


def test_pooled_acceptance_waits_for_fresh_batches_and_counts_every_rollout():
    neutral = Knob("DROP_P", 0.0, 0.9, "high", 0.1, neutral=0.0)
    pooled = 0
    for run_id in range(30):
        policy = Policy(run_id)
        run = validate_candidate(BAND, "harden", ALWAYS, policy, first_seed=0, knobs=[neutral])
        check_bookkeeping(run, 0, policy)
        verdict = run.judgement
        if run.decision != "accept" or verdict.method != "band-pooled":
            assert verdict.pooled_n is None
            continue
        pooled += 1
        own = run.settings[-1].outcomes
        assert own.n >= MIN_FRESH_BATCHES * JudgeSettings().batch
        assert verdict.n == own.n and verdict.successes == own.successes
        assert verdict.pooled_n == run.rollouts + ALWAYS.n  # every setting and the baseline
        assert verdict.probability >= JudgeSettings().confidence
        assert "pooled over" in verdict.reason
    assert pooled >= 10  # the pooled model decides most calibrated runs


def test_pooled_acceptance_needs_the_settings_own_batches_to_agree_with_the_model():
    # 300 baseline rollouts at the neutral value say 0.5 there; the candidate, started at the
    # neutral value, shows 3/10 per batch. The pooled posterior is almost sure of the band, but
    # the setting's own 6/20 puts the model's 0.49 outside its 80% interval: no acceptance.
    knob = Knob("DROP_P", 0.0, 0.9, "high", 0.0, neutral=0.0)
    baseline = Outcomes(300, 150)
    settings = JudgeSettings(batch=10)
    run = validate_candidate(
        BAND, "harden", baseline, repeating(3), first_seed=0, knobs=[knob], settings=settings
    )
    pool = [Point(0.0, 150, 300), Point(0.0, 6, 20)]
    assert band_probability_at(knob, pool, 0.0, 0.4, 0.6) > 0.99  # what the model alone says
    first = run.settings[0]
    assert first.values == {"DROP_P": 0.0}
    assert first.outcomes.n > 20  # not accepted at its second batch
    assert all(r.judgement.method != "band-pooled" for r in run.settings)


def test_a_setting_that_looked_right_is_moved_once_the_pooled_model_says_it_is_off():
    # Two batches at the start value look centred (5/10), then it shows ~1/5 per batch: the
    # pooled model (its own rollouts included) must move the dial at the next checkpoint
    # instead of sampling on until the claim's probability alone gives up.
    seen: dict[float, int] = {}

    def sample(values, first_seed, n):
        value = values["DROP_P"]
        count = seen.get(value, 0)
        seen[value] = count + n
        if value == 0.5:
            return Outcomes(n, 3 if count < 5 else 2 if count < 10 else 1)
        seeds = range(first_seed, first_seed + n)
        wins = sum(random.Random(seed).random() < 1 - value for seed in seeds)
        return Outcomes(n, wins)

    knob = Knob("DROP_P", 0.0, 0.9, "high", 0.5, neutral=0.0)
    run = validate_candidate(BAND, "harden", ALWAYS, sample, first_seed=0, knobs=[knob])
    check_bookkeeping(run, 0)
    first = run.settings[0]
    assert first.values == {"DROP_P": 0.5}
    assert first.outcomes.n == 20  # moved at the first checkpoint after it fell off
    assert run.settings[1].values["DROP_P"] < 0.5  # towards the easier end


def test_without_knobs_accept_and_refine_are_final():
    accept = validate_candidate(BAND, "harden", ALWAYS, repeating(2, 3), first_seed=5)
    check_bookkeeping(accept, 5)
    assert accept.decision == "accept"
    assert accept.values == {} and not accept.calibrated
    assert accept.judgement.probability >= 0.8
    refine = validate_candidate(BAND, "harden", ALWAYS, repeating(5), first_seed=5)
    check_bookkeeping(refine, 5)
    assert (refine.decision, refine.judgement.side, refine.rollouts) == ("refine", "too_easy", 5)


def test_budget_exhaustion_is_undecided_never_accepted():
    # About 0.63 against a 0.4-0.6 band: at its edge, so never sure inside nor surely outside.
    sample = repeating(3, 3, 4, 3, 3, 3, 2)
    s = JudgeSettings(max_rollouts=32)
    run = validate_candidate(BAND, "harden", ALWAYS, sample, first_seed=10, settings=s)
    check_bookkeeping(run, 10)
    assert run.decision == "undecided"
    assert run.judgement.decision == "continue"
    assert 0.1 < run.judgement.probability < 0.8
    assert run.rollouts == 32
    assert sample.calls == [5, 5, 5, 5, 5, 5, 2]  # the last batch only what the budget left


def test_sampler_returning_the_wrong_count_raises():
    def short(values, first_seed, n):
        return Outcomes(n - 1, 0)

    with pytest.raises(RiggerError, match="sampler returned 4 episodes, expected 5"):
        validate_candidate(BAND, "harden", ALWAYS, short, first_seed=0)


def test_knob_names_and_start_values_are_checked():
    with pytest.raises(RiggerError, match="distinct knob names"):
        validate_candidate(BAND, "harden", ALWAYS, Policy(), first_seed=0, knobs=[DROP, DROP])
    with pytest.raises(RiggerError, match="unknown knob 'NOPE'"):
        validate_candidate(
            BAND, "harden", ALWAYS, Policy(), first_seed=0, knobs=[DROP], start={"NOPE": 0.5}
        )


def test_start_overrides_the_knob_value_within_its_range():
    policy = Policy(1)
    run = validate_candidate(
        BAND, "harden", ALWAYS, policy, first_seed=0, knobs=[DROP], start={"DROP_P": 5.0}
    )
    assert policy.calls[0][0] == {"DROP_P": 0.9}
    assert run.settings[0].values == {"DROP_P": 0.9}


def test_only_the_first_knob_is_calibrated():
    other = Knob("OTHER", 0.0, 1.0, "high", 0.25)
    policy = Policy(2)
    run = validate_candidate(BAND, "harden", ALWAYS, policy, first_seed=0, knobs=[DROP, other])
    assert all(values["OTHER"] == 0.25 for values, _, _ in policy.calls)
    assert run.values["OTHER"] == 0.25


def test_knob_aim():
    s = JudgeSettings()
    assert knob_aim(Objective.parse(BAND), "harden", ALWAYS, s) == ("success", 0.5)
    assert knob_aim(Objective.parse("steps:20-30"), "harden", ALWAYS, s) == ("steps", 25.0)
    axis, aim = knob_aim(Objective.parse("auto"), "harden", ALWAYS, s)
    assert (axis, aim) == ("success", pytest.approx(6 / 7 - 0.4))
    axis, aim = knob_aim(Objective.parse("auto"), "scaffold", Outcomes(5, 0), s)
    assert (axis, aim) == ("success", pytest.approx(1 / 7 + 0.4))
    assert knob_aim(Objective.parse("auto"), "fix-behaviour", ALWAYS, s) is None


def test_auto_compares_with_fresh_baseline_rollouts_drawn_beside_the_candidates():
    # The observe rollouts said 0/5 (an unlucky baseline); the fresh ones show it is ~0.9, so a
    # candidate at ~0.9 is no scaffold, however far above the observe rollouts it lies.
    base_calls: list[tuple[int, int]] = []

    def sample_baseline(first_seed, n):
        base_calls.append((first_seed, n))
        return Outcomes(n, n - (first_seed % 2))

    run = validate_candidate(
        "auto",
        "scaffold",
        Outcomes(5, 0),
        repeating(5, 4),
        first_seed=100,
        settings=JudgeSettings(max_rollouts=60),
        sample_baseline=sample_baseline,
    )
    assert run.decision != "accept"
    assert run.baseline is not None and run.baseline.n == len(run.baseline_seeds)
    candidate_seeds = set(run.seeds)
    assert not candidate_seeds & set(run.baseline_seeds)  # every rollout on its own seed
    assert sorted(candidate_seeds | set(run.baseline_seeds)) == list(range(100, run.next_seed))
    assert run.rollouts == len(candidate_seeds) + len(run.baseline_seeds) <= 60
    assert [n for _, n in base_calls] == [5] * len(base_calls)
    # Bands never draw a baseline.
    band = validate_candidate(
        BAND, "harden", ALWAYS, repeating(5), first_seed=0, sample_baseline=sample_baseline
    )
    assert band.baseline is None and band.baseline_seeds == []
