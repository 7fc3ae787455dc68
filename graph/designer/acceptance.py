"""The validator's acceptance rules in words, generated from the live settings and the judge.

:func:`acceptance_rules` states what the validator does with a candidate — batches, budget,
the judge's rule for the objective, the knob calibration, the oracle check — with the numbers of
the :class:`~envharness.graph.judge.JudgeSettings` in use. Where a number follows from the rule
(the fewest rollouts that can be accepted, which counts after one batch are refined), it is
found by asking :func:`~envharness.graph.judge.judge` itself, so the text cannot drift from
the code. :func:`budget_facts` states the sandbox and step-budget facts.

Example:
    >>> from envharness.graph.objective import Objective
    >>> text = acceptance_rules(Objective.parse("sr:0.4-0.6"), "harden", JudgeSettings())
    >>> "P(0.4 <= p <= 0.6) >= 0.8" in text
    True
"""

from __future__ import annotations

import math

from envharness.graph.judge.decisions import JudgeSettings, Outcomes, judge
from envharness.graph.judge.sequential import (
    _ABANDON_BELOW,
    MIN_FRESH_BATCHES,
    _tolerance,
    knob_aim,
)
from envharness.graph.limits import ORACLE_BUDGET_FACTOR, ORACLE_TRIES
from envharness.graph.objective import Objective

__all__ = ["acceptance_rules", "budget_facts", "earliest_accept"]


def _looks(settings: JudgeSettings) -> int:
    return math.ceil(settings.max_rollouts / settings.batch)


def earliest_accept(
    objective: Objective,
    direction: str,
    settings: JudgeSettings,
    rate: float,
    base_rate: float,
    *,
    paired: bool,
) -> int | None:
    """The fewest rollouts after which the judge accepts a candidate that performs as expected.

    The candidate's successes are ``round(rate * n)``, the baseline's ``round(base_rate * n)``
    over as many fresh rollouts (``paired``) or over one batch. ``None`` when no look within
    the budget would accept.
    """
    per_look = 2 if paired else 1
    n = settings.batch
    while n * per_look <= settings.max_rollouts:
        successes = round(rate * n)
        base_n = n if paired else settings.batch
        base = Outcomes(base_n, round(base_rate * base_n))
        steps = (1,) * successes
        verdict = judge(objective, direction, Outcomes(n, successes, steps), base, settings)
        if verdict.decision == "accept":
            return n
        n += settings.batch
    return None


def _band_lines(objective: Objective, direction: str, settings: JudgeSettings) -> list[str]:
    low, high = float(objective.low), float(objective.high)  # type: ignore[arg-type]
    c = f"{settings.confidence:g}"
    centre = (low + high) / 2
    earliest = earliest_accept(objective, direction, settings, centre, 0.0, paired=False)
    batch = settings.batch
    outcome = {
        s: judge(objective, direction, Outcomes(batch, s, (1,) * s), Outcomes(), settings)
        for s in range(batch + 1)
    }
    easy = [s for s, j in outcome.items() if j.side == "too_easy"]
    hard = [s for s, j in outcome.items() if j.side == "too_hard"]
    lines = [
        "Your objective is a success band: the success rate p after s successes in n rollouts "
        "has the posterior Beta(1 + s, 1 + n - s) (a uniform prior).",
        f"- accept when P({low:g} <= p <= {high:g}) >= {c}. "
        + (
            f"Even a candidate exactly at the band's centre ({centre:g}) is accepted at the "
            f"earliest after n = {earliest} rollouts of its own (a knob setting sooner, on "
            "the pooled knob model)."
            if earliest is not None
            else "No candidate can be accepted within the budget at this confidence: the band "
            "is too narrow."
        ),
        f"- refine as too easy when P(p > {high:g}) >= {c}, as too hard when "
        f"P(p < {low:g}) >= {c}; anything else continues to the next batch. After the first "
        f"batch of {batch}: "
        + (f"{_counts(easy)} successes are too easy" if easy else "nothing is too easy yet")
        + "; "
        + (f"{_counts(hard)} successes too hard" if hard else "nothing is too hard yet")
        + ".",
    ]
    return lines


def _counts(values: list[int]) -> str:
    if len(values) == 1:
        return str(values[0])
    return f"{values[0]}-{values[-1]}"


def _steps_lines(objective: Objective, settings: JudgeSettings) -> list[str]:
    low, high = float(objective.low), float(objective.high)  # type: ignore[arg-type]
    c = f"{settings.confidence:g}"
    return [
        "Your objective is a band on the mean steps of the successful episodes.",
        f"- nothing is judged before {settings.min_successes} episodes succeeded; with no "
        f"success in {2 * settings.batch} rollouts the candidate is refined as too hard.",
        f"- then the mean steps of the successes get a Student-t posterior (its scale at least "
        f"0.5 steps / sqrt(m)); accept when P({low:g} <= mean <= {high:g}) >= {c}; refine as "
        f"too easy (too short: make it longer) when P(mean < {low:g}) >= {c}, as too hard (too "
        f"long) when P(mean > {high:g}) >= {c}.",
    ]


def _shift_lines(direction: str, settings: JudgeSettings, baseline: Outcomes | None) -> list[str]:
    c, f, d = f"{settings.confidence:g}", f"{settings.futility:g}", f"{settings.min_effect:g}"
    level = settings.level_per_look
    paired = settings.max_rollouts // 2
    lines = [
        f"Your objective is automatic ({direction}): the candidate is compared with fresh "
        f"baseline rollouts (the bare task) drawn beside it, {settings.batch} of each per batch, "
        f"so at most {paired} of each; both rates get their own Beta posterior.",
        f'- a candidate is accepted only when the one-sided Fisher exact test also rejects "no '
        f'change" at p <= {level:.2g} (alpha {settings.alpha:g} over the {_looks(settings)} '
        "looks the budget allows).",
    ]
    if direction == "scaffold":
        lines.append(
            f"- accept when P(p - p_base >= {d}) >= {c}; refine (scaffold more) when it falls "
            f"to {f} or below."
        )
    elif direction == "harden":
        lines.append(
            f"- accept when P(p_base - p >= {d}) >= {c} and the policy still succeeds sometimes; "
            f"refine (harden more) when that probability falls to {f} or below; no success in "
            f"{2 * settings.batch} rollouts is refined as too hard (unsolvable for this policy)."
        )
    else:
        lines.append(
            f"- accept when the share of episodes with a behaviour failure (a loop, or invalid "
            f"or blocked actions on at least half the steps) fell by {d} with P >= {c}, the "
            f"success rate did not fall by more than {d} with P >= {c}, and the Fisher test on "
            f"the behaviour agrees; refine when that falls to {f} or below."
        )
    if baseline is not None and baseline.n and direction in ("scaffold", "harden"):
        objective = Objective.parse("auto")
        aim = knob_aim(objective, direction, baseline, settings)
        assert aim is not None
        rate = baseline.rate
        n = earliest_accept(objective, direction, settings, aim[1], rate, paired=True)
        at = f"after n = {n} rollouts of each" if n is not None else "not within the budget"
        lines.append(
            f"- with the baseline at {rate:.2f} ({baseline.successes}/{baseline.n}), a candidate "
            f"at {aim[1]:.2f} (the knob's aim) is accepted at the earliest {at}; a change "
            f"smaller than {d} is never accepted."
        )
    return lines


def _knob_lines(
    objective: Objective, direction: str, settings: JudgeSettings, baseline: Outcomes | None
) -> str:
    aim = knob_aim(objective, direction, baseline or Outcomes(), settings)
    if aim is None:
        return (
            "Knobs: with this objective the validator has no rate to aim at, so it does not move "
            "a knob: each stays at its value in rules_code."
        )
    batch = settings.batch
    axis = "success rate" if aim[0] == "success" else "mean steps of the successes"
    where = (
        f"{aim[1]:.2f}"
        if baseline is not None or objective.is_band
        else "a rate far enough from the baseline's to be accepted"
    )
    return (
        f"Knobs: the first knob you declare starts at its value in rules_code; the validator "
        f"then tunes it, so you need not guess the number. After two batches ({2 * batch} "
        f"rollouts) of a setting it fits a monotone model to every rollout so far (the success "
        f"rate against the knob: logistic; mean steps: a line) and moves the knob, within your "
        f"low..high, to the value predicted to put the {axis} at {where}, unless the setting "
        f"is predicted within {_tolerance(objective):g} of that; it also moves it when a "
        f"setting is refined with a side, or when a setting's claim is still below "
        f"P = {_ABANDON_BELOW:g} after four batches. Other knobs stay at their values. "
        + (
            f"For a success band, once a setting has {MIN_FRESH_BATCHES} batches of its own, "
            f"the model's posterior over all settings may accept it (P of the band >= "
            f"{settings.confidence:g} there, and the model agrees with the setting's own "
            f"rollouts). "
            if objective.kind == "success_band"
            else ""
        )
        + "So "
        "declare a range wide enough to hold that value, with `harder` set right, and let the "
        "validator find the number: do not bisect it by hand over iterations. The knob values "
        "it tried come back in the feedback."
    )


def acceptance_rules(
    objective: Objective,
    direction: str,
    settings: JudgeSettings,
    *,
    baseline: Outcomes | None = None,
) -> str:
    """How the validator decides on a candidate, with the live numbers.

    Args:
        objective: The rig's objective.
        direction: The diagnosis's direction (``auto`` and plain-language objectives use it).
        settings: The judge's settings in use.
        baseline: The baseline's outcomes (for the knob's aim and the earliest acceptance).
    """
    batch = settings.batch
    lines = [
        f"It plays the policy on your harness on fresh seeds (never the baseline's) in batches "
        f"of {batch} and asks the judge after every batch. One candidate may spend at most "
        f"{settings.max_rollouts} policy rollouts, knob calibration included; a candidate the "
        "judge is not sure about by then is left undecided (never accepted). A decision is made "
        "on the rollouts of one knob setting, sampled after that setting was chosen; a success "
        "band may also be accepted on the knob model pooled over every setting (see Knobs).",
        "",
    ]
    if objective.kind == "success_band":
        lines += _band_lines(objective, direction, settings)
    elif objective.kind == "steps_band":
        lines += _steps_lines(objective, settings)
    elif direction in ("scaffold", "harden", "fix-behaviour"):
        lines += _shift_lines(direction, settings, baseline)
    else:
        lines.append("The diagnosis found nothing to change: any candidate is refined.")
    lines += ["", _knob_lines(objective, direction, settings, baseline), ""]
    lines += [
        f"The oracle check: before any policy rollout, the bridge's oracle (a privileged solver, "
        f"where the bridge has one) plays your candidate with its first knob at the easy end, "
        f"on up to {ORACLE_TRIES} seeds. If it fails all of them while it solves the bare task, "
        'the candidate is refined as too hard at once, with how each seed ended: "out of '
        'steps" when every seed used up its step budget (often on blocked actions) but '
        f'{ORACLE_BUDGET_FACTOR} times the budget lets it through, "unsolvable" otherwise.',
    ]
    return "\n".join(lines)


def budget_facts(max_steps: int | None) -> str:
    """The sandbox and step-budget facts a harness design depends on."""
    steps = f"{max_steps} steps" if max_steps else "a fixed number of steps"
    return "\n".join(
        [
            f"- The policy has {steps} per episode. Every action it sends counts as one, invalid "
            "ones and those your filter_action blocks included: a rule that blocks often makes "
            "the policy run out of steps (end reason `budget`). Setups actions are replayed "
            "before its first step and do not count.",
            "- `random` (import it in rules code) is seeded with the episode's seed before "
            "`_Rules()` is created: its draws differ from episode to episode (validation "
            "plays fresh seeds) and repeat on the same seed (check_rules replays are "
            "reproducible). Do not seed it yourself: every episode would draw the same numbers.",
            "- A baseline whose K episodes are identical (a deterministic policy: the same "
            "actions, the same outcome) stays identical under a deterministic harness: every "
            "episode succeeds or every one fails. To land between, use a stochastic rule "
            "(`random.random() < P`) with P a declared knob.",
        ]
    )
