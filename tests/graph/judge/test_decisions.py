"""The judge: exact binomial cases, steps bands, auto shifts, fix-behaviour, and the error rate
of the sequential rule over policies drawn from the judge's own prior."""

from __future__ import annotations

import functools
import json
import math
import random

import pytest

from envharness.errors import RiggerError
from envharness.graph.judge import sequential
from envharness.graph.judge.decisions import Judgement, JudgeSettings, Outcomes, judge
from envharness.graph.judge.posterior import credible_interval, fisher_p_value
from envharness.graph.judge.sequential import validate_candidate

BAND = "sr:0.4-0.6"
ALWAYS = Outcomes(5, 5)  # a baseline the policy always solves
NEVER = Outcomes(5, 0)  # a baseline the policy never solves


def settings(confidence: float = 0.8, **kwargs) -> JudgeSettings:
    return JudgeSettings(confidence=confidence, futility=min(0.1, confidence / 2), **kwargs)


# -- success band ---------------------------------------------------------------------------


@pytest.mark.parametrize("successes", range(6))
def test_five_episodes_never_accept_a_band(successes):
    verdict = judge(BAND, "harden", Outcomes(5, successes), ALWAYS, settings(0.8))
    assert verdict.decision != "accept"
    assert verdict.method == "band"
    assert verdict.probability < 0.8


def test_three_of_five_is_not_enough_but_twenty_of_forty_is():
    three = judge(BAND, "harden", Outcomes(5, 3), ALWAYS)
    assert three.decision == "continue"
    assert three.side is None
    assert "not yet sure" in three.reason
    half = judge(BAND, "harden", Outcomes(40, 20), ALWAYS)
    assert half.decision == "accept"
    assert half.probability >= 0.8
    assert ">= 0.8 on 20/40 successes" in half.reason


@pytest.mark.parametrize(("successes", "side"), [(0, "too_hard"), (5, "too_easy")])
def test_all_or_nothing_in_five_is_refined_with_its_side(successes, side):
    verdict = judge(BAND, "harden", Outcomes(5, successes), ALWAYS)
    assert (verdict.decision, verdict.side) == ("refine", side)
    assert verdict.probability <= 0.1
    assert side.replace("_", " ") in verdict.reason


def test_band_far_outside_is_refined_and_the_side_follows_the_mass():
    below = judge("sr:0.7-0.9", "harden", Outcomes(20, 6), ALWAYS)
    above = judge("sr:0.1-0.3", "harden", Outcomes(20, 14), ALWAYS)
    assert (below.decision, below.side) == ("refine", "too_hard")
    assert (above.decision, above.side) == ("refine", "too_easy")


def test_no_rollouts_yet_is_continue():
    verdict = judge(BAND, "harden", Outcomes(), ALWAYS)
    assert (verdict.decision, verdict.method, verdict.n) == ("continue", "none", 0)


# -- steps band -----------------------------------------------------------------------------

STEPS = "steps:10-20"


def test_steps_band_waits_for_min_successes():
    verdict = judge(STEPS, "harden", Outcomes(10, 4, (15, 15, 15, 15)), ALWAYS)
    assert (verdict.decision, verdict.method) == ("continue", "steps-band")
    assert verdict.probability is None
    assert "needs 5" in verdict.reason
    fewer = settings(min_successes=4)
    assert judge(STEPS, "harden", Outcomes(10, 4, (15, 15, 15, 15)), ALWAYS, fewer).decision == (
        "accept"
    )


def test_steps_band_accepts_a_mean_well_inside():
    steps = (14, 15, 16, 15, 14, 16, 15, 15)
    verdict = judge(STEPS, "harden", Outcomes(10, 8, steps), ALWAYS)
    assert (verdict.decision, verdict.side) == ("accept", None)
    assert verdict.steps_mean == pytest.approx(15.0)
    assert verdict.probability >= 0.8


@pytest.mark.parametrize(
    ("steps", "side", "word"),
    [((5, 6, 5, 4, 6, 5), "too_easy", "short"), ((30, 31, 29, 30, 30, 28), "too_hard", "long")],
)
def test_steps_band_refines_too_short_and_too_long(steps, side, word):
    verdict = judge(STEPS, "harden", Outcomes(10, len(steps), steps), ALWAYS)
    assert (verdict.decision, verdict.side) == ("refine", side)
    assert f"too {word}" in verdict.reason


def test_steps_band_without_any_success_is_too_hard_after_two_batches():
    assert judge(STEPS, "harden", Outcomes(5, 0), ALWAYS).decision == "continue"
    verdict = judge(STEPS, "harden", Outcomes(10, 0), ALWAYS)
    assert (verdict.decision, verdict.side) == ("refine", "too_hard")


# -- auto: harden and scaffold --------------------------------------------------------------


@pytest.mark.parametrize("confidence", [0.6, 0.8, 0.9])
def test_auto_never_accepts_one_episode_of_difference(confidence):
    s = settings(confidence)
    assert judge("auto", "harden", Outcomes(5, 4), ALWAYS, s).decision != "accept"
    assert judge("auto", "harden", Outcomes(5, 5), Outcomes(5, 4), s).decision != "accept"
    assert judge("auto", "scaffold", Outcomes(5, 1), NEVER, s).decision != "accept"
    # 5/5 against 4/5 is not harder at all: confidently refined, "harden more".
    easier = judge("auto", "harden", Outcomes(5, 5), Outcomes(5, 4), s)
    assert (easier.decision, easier.side) == ("refine", "too_easy")


def test_harden_that_made_the_task_unsolvable_is_too_hard():
    # P(fell by >= 0.2) is high, but a policy that never succeeds is no hardening.
    early = judge("auto", "harden", Outcomes(5, 0), ALWAYS)
    assert early.decision == "continue"
    assert early.probability >= 0.8
    verdict = judge("auto", "harden", Outcomes(10, 0), ALWAYS)
    assert (verdict.decision, verdict.side, verdict.method) == ("refine", "too_hard", "harden")
    assert "unsolvable" in verdict.reason


FRESH_ALWAYS = Outcomes(20, 20)  # fresh baseline rollouts drawn beside the candidate's


@pytest.mark.parametrize(("n", "successes"), [(30, 4), (20, 2), (15, 3), (30, 10)])
def test_clearly_harder_is_accepted(n, successes):
    verdict = judge("auto", "harden", Outcomes(n, successes), FRESH_ALWAYS)
    assert verdict.decision == "accept"
    assert verdict.method == "harden"
    assert verdict.probability >= 0.8
    assert verdict.effect == pytest.approx(successes / n - 1.0)
    assert verdict.p_value == pytest.approx(fisher_p_value(successes, n, 20, 20, "less"))
    assert verdict.p_value <= JudgeSettings().level_per_look


def test_a_large_effect_waits_for_the_two_sample_test():
    # 10/30 against 5/5 is probably 0.2 lower, but Fisher cannot yet tell it from no change
    # at 0.05 over the 40 looks the budget allows.
    verdict = judge("auto", "harden", Outcomes(30, 10), ALWAYS)
    assert verdict.probability >= 0.8 and verdict.p_value > JudgeSettings().level_per_look
    assert verdict.decision == "continue" and "Fisher p" in verdict.reason
    assert JudgeSettings().level_per_look == pytest.approx(0.05 / 40)


def test_clearly_scaffolded_is_accepted_and_no_gain_is_refined():
    verdict = judge("auto", "scaffold", Outcomes(20, 15), Outcomes(20, 0))
    assert (verdict.decision, verdict.method) == ("accept", "scaffold")
    assert verdict.effect == pytest.approx(0.75)
    assert verdict.p_value == pytest.approx(fisher_p_value(15, 20, 0, 20, "greater"))
    flat = judge("auto", "scaffold", Outcomes(20, 0), NEVER)
    assert (flat.decision, flat.side) == ("refine", "too_hard")
    assert "scaffold more" in flat.reason


# -- fix-behaviour and nothing to do --------------------------------------------------------


def test_fix_behaviour_accepts_fewer_behaviour_failures_at_kept_success():
    baseline = Outcomes(10, 2, behaviour=8)
    verdict = judge("auto", "fix-behaviour", Outcomes(30, 20, behaviour=1), baseline)
    assert (verdict.decision, verdict.method) == ("accept", "fix-behaviour")
    assert verdict.probability >= 0.8


def test_fix_behaviour_refines_when_failures_persist_or_success_collapses():
    baseline = Outcomes(10, 2, behaviour=8)
    same = judge("auto", "fix-behaviour", Outcomes(30, 2, behaviour=27), baseline)
    assert (same.decision, same.side) == ("refine", None)
    assert "target the diagnosed behaviour" in same.reason
    # Behaviour failures are gone, but so is success: not a fix.
    collapsed = judge("auto", "fix-behaviour", Outcomes(30, 0), Outcomes(10, 5, behaviour=5))
    assert collapsed.decision == "refine"


def test_nothing_to_change_is_refined_without_a_side():
    verdict = judge("auto", "none", Outcomes(5, 2), ALWAYS)
    assert (verdict.decision, verdict.side, verdict.method) == ("refine", None, "none")


# -- the record -----------------------------------------------------------------------------


def test_judgement_records_the_evidence_and_round_trips():
    verdict = judge("auto", "harden", Outcomes(30, 4, (3, 4, 5, 4)), ALWAYS)
    assert (verdict.n, verdict.successes) == (30, 4)
    assert verdict.rate == pytest.approx(4 / 30)
    assert verdict.interval == pytest.approx(credible_interval(4, 30))
    assert verdict.probability is not None
    assert verdict.p_value is not None and verdict.effect is not None
    assert verdict.confidence == 0.8
    assert verdict.steps_mean == pytest.approx(4.0)
    data = json.loads(json.dumps(verdict.to_dict()))
    assert Judgement.from_dict(data) == verdict
    band = judge(BAND, "harden", Outcomes(40, 20), ALWAYS)
    assert band.p_value is None and band.effect is None
    assert Judgement.from_dict(json.loads(json.dumps(band.to_dict()))) == band


def test_settings_and_outcomes_round_trip_and_add():
    s = JudgeSettings(confidence=0.9, max_rollouts=60, batch=10)
    assert JudgeSettings.from_dict(json.loads(json.dumps(s.to_dict()))) == s
    total = Outcomes(5, 2, (3, 4), 1) + Outcomes(5, 1, (6,), 2)
    assert total == Outcomes(10, 3, (3, 4, 6), 3)
    assert total.rate == pytest.approx(0.3)
    assert total.steps_mean == pytest.approx(13 / 3)
    assert Outcomes.from_dict(json.loads(json.dumps(total.to_dict()))) == total
    assert Outcomes().rate == 0.0 and Outcomes().steps_mean is None


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"confidence": 1.5}, "confidence"),
        ({"confidence": 0.0}, "confidence"),
        ({"futility": -0.1}, "futility"),
        ({"min_effect": 1.0}, "min_effect"),
        ({"max_rollouts": 0}, "max_rollouts"),
        ({"batch": True}, "batch"),
        ({"min_successes": 2.5}, "min_successes"),
        ({"confidence": 0.6, "futility": 0.6}, "futility < confidence"),
        ({"confidence": 0.3, "futility": 0.5}, "futility < confidence"),
    ],
)
def test_settings_errors_name_the_setting(kwargs, match):
    with pytest.raises(RiggerError, match=match):
        JudgeSettings(**kwargs)


def test_outcomes_reject_impossible_counts():
    with pytest.raises(RiggerError, match="successes, behaviour <= n"):
        Outcomes(5, 6)
    with pytest.raises(RiggerError, match="successes, behaviour <= n"):
        Outcomes(5, 2, behaviour=7)


# -- property: the stated error rate, over policies drawn from the prior --------------------

CANDIDATES = 2000


@pytest.fixture
def cached_judge(monkeypatch):
    """The shipped judge, memoised: it is a pure function of its (hashable) arguments."""
    monkeypatch.setattr(sequential, "judge", functools.lru_cache(maxsize=None)(judge))


def bernoulli(p: float, rng: random.Random):
    def sample(values, first_seed, n):
        return Outcomes(n, sum(rng.random() < p for _ in range(n)))

    return sample


def check_share(hits: int, accepts: int, confidence: float, label: str) -> None:
    share = hits / accepts
    slack = 3 * math.sqrt(confidence * (1 - confidence) / accepts)
    print(f"{label}: {hits}/{accepts} accepted truly right = {share:.3f} (need >= "
          f"{confidence - slack:.3f})")  # fmt: skip
    assert accepts >= 100
    assert share >= confidence - slack


@pytest.mark.parametrize("confidence", [0.8, 0.6])
def test_band_accepts_are_right_at_the_stated_rate(cached_judge, confidence):
    rng = random.Random(20240 + int(confidence * 10))
    s = settings(confidence)
    accepts = hits = 0
    for _ in range(CANDIDATES):
        p = rng.random()
        run = validate_candidate(
            BAND, "harden", ALWAYS, bernoulli(p, rng), first_seed=0, settings=s
        )
        assert run.rollouts <= s.max_rollouts
        if run.decision == "accept":
            accepts += 1
            hits += 0.4 <= p <= 0.6
    check_share(hits, accepts, confidence, f"band 0.4-0.6 at confidence {confidence}")


@pytest.mark.parametrize("confidence", [0.8, 0.6])
def test_harden_accepts_are_right_at_the_stated_rate(cached_judge, confidence):
    rng = random.Random(31337 + int(confidence * 10))
    s = settings(confidence)
    accepts = hits = 0
    for _ in range(CANDIDATES):
        while True:  # a baseline rate from the prior, kept when its 5 episodes all succeed
            p_base = rng.random()
            if all(rng.random() < p_base for _ in range(5)):
                break
        p = rng.random()
        run = validate_candidate(
            "auto", "harden", ALWAYS, bernoulli(p, rng), first_seed=0, settings=s
        )
        if run.decision == "accept":
            accepts += 1
            hits += p_base - p >= s.min_effect
    check_share(hits, accepts, confidence, f"auto harden at confidence {confidence}")


def test_successes_that_depend_on_rewritten_steps_do_not_count():
    from envharness import load_bridge
    from envharness.harness import Rules
    from envharness.rollout import ScriptedPolicy, rollout

    plays_for_the_agent = (
        "class _Rules:\n"
        "    def filter_action(self, action, state):\n"
        "        moves = {4: ('10', '*', '10'), 3: ('100', '-', '4'), 2: ('96', '/', '4')}\n"
        "        a, op, b = moves[len(state['numbers'])]\n"
        "        return {'tool': 'combine', 'args': {'a': a, 'op': op, 'b': b}}\n"
    )
    env = Rules(load_bridge("toy24", task_id="4-4-10-10"), plays_for_the_agent, allow_rewrite=True)
    trajectory = rollout(env, ScriptedPolicy(["undo"] * 6), max_steps=6)
    assert trajectory.success and trajectory.n_rewritten > 0  # the rule won it, not the agent
    outcomes = Outcomes.from_trajectories([trajectory])
    assert (outcomes.n, outcomes.successes, outcomes.success_steps) == (1, 0, ())
