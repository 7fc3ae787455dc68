from __future__ import annotations

import pytest

from envharness.core import Evaluation
from envharness.errors import DesignerError, RiggerError
from envharness.graph.heuristic import (
    DesignContext,
    HeuristicDesigner,
    Target,
    candidate_key,
    heuristic_diagnosis,
)
from envharness.graph.heuristic.designer import RETEST_MAX_ROLLOUTS
from envharness.graph.heuristic.rules_code import parts_of
from envharness.graph.objective import Objective
from envharness.graph.records import Candidate, Diagnosis, Verdict
from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.rollout import OraclePolicy, rollout
from envharness.rollout.trajectory import Step, Trajectory

TOY = HarnessSpec(BridgeSpec("toy24", "4-4-10-10"))
SIBLINGS = ["3-3-8-8", "1-1-4-6", "2-3-4-6"]


def baseline(skill: float, spec: HarnessSpec = TOY, k: int = 5) -> list[Trajectory]:
    return [rollout(spec.build(), OraclePolicy(skill, s), seed=s) for s in range(k)]


def setup(skill: float, objective: str, spec: HarnessSpec = TOY, siblings=SIBLINGS):
    trajectories = baseline(skill, spec)
    objective_ = Objective.parse(objective)
    diagnosis = heuristic_diagnosis(trajectories, objective_)
    context = DesignContext.from_spec(spec, trajectories, siblings=siblings)
    return context, diagnosis, objective_


def verdict(successes: int, n: int = 5, steps: float = 3.0, decision: str = "refine") -> Verdict:
    stats = {
        "n": n,
        "successes": successes,
        "success_rate": successes / n,
        "success_steps_mean": steps if successes else None,
        "steps_mean": steps,
    }
    return Verdict(decision, "synthetic", stats, n)  # type: ignore[arg-type]


def drop_p(candidate: Candidate) -> float:
    drops = [p for p in parts_of(candidate.rules_code) if p.kind == "drop_actions"]
    return drops[0].params["probability"] if drops else 0.0


# -- steering on a success band -------------------------------------------------------------------


def test_harden_into_a_success_band_declares_the_drop_knob_once():
    context, diagnosis, objective = setup(1.0, "sr:0.4-0.6")
    designer = HeuristicDesigner()
    first = designer.propose(context, diagnosis, objective, [])
    assert first.template == "drop_actions(0.45)"
    assert first.rationale.startswith("heuristic template drop_actions(0.45): ")
    # The dial is the validator's to turn: declared as a knob the rules code reads.
    assert first.knobs == [
        {
            "name": "DROP_P",
            "low": 0.0,
            "high": 0.9,
            "harder": "high",
            "value": 0.45,
            "integer": False,
            "neutral": 0.0,  # alone, DROP_P = 0 is the bare task: the baseline counts there
        }
    ]
    assert "DROP_P = 0.45" in first.rules_code and first.knob_specs()[0].name == "DROP_P"
    # Calibrated and still too easy at the knob's end: the same structure is not tried again.
    too_easy = Verdict(
        "refine", "too easy", verdict(5).stats, 40, side="too_easy", knobs={"DROP_P": 0.9}
    )
    after = designer.propose(context, diagnosis, objective, [(first, too_easy)])
    assert after is None or candidate_key(after) != candidate_key(first)
    # Knob values do not make two candidates different structures.
    moved = Candidate(**{**first.to_dict(), "rules_code": first.rules_code.replace("0.45", "0.3")})
    assert candidate_key(moved) == candidate_key(first)


def scaffold_case(successes: int) -> tuple[DesignContext, Diagnosis, Objective]:
    objective = Objective.parse("sr:0.4-0.6")
    stats = {"n": 5, "successes": successes, "success_rate": successes / 5, "steps_mean": 12.0}
    context = DesignContext.from_spec(TOY, baseline(0.0), siblings=[])
    return context, Diagnosis("scaffold", stats=stats), objective


def test_scaffold_into_a_success_band_walks_the_head_starts_then_tunes():
    context, diagnosis, objective = scaffold_case(1)
    designer = HeuristicDesigner()
    first = designer.propose(context, diagnosis, objective, [])
    assert first.template == "setups_oracle_prefix(1)"  # predicted closest to the band
    stronger = designer.propose(context, diagnosis, objective, [(first, verdict(0))])
    assert stronger.template == "setups_oracle_prefix(2)"
    tuned = designer.propose(
        context, diagnosis, objective, [(first, verdict(0)), (stronger, verdict(5))]
    )
    assert tuned.template.startswith("setups_oracle_prefix(2) + drop_actions(")
    assert tuned.in_env_actions == stronger.in_env_actions
    history = [(first, verdict(0)), (stronger, verdict(1))]
    retest = designer.propose(context, diagnosis, objective, history)  # nothing easier is left
    assert retest.template == "retest(setups_oracle_prefix(2))"  # 1/5 came closest to the band
    assert candidate_key(retest) == candidate_key(stronger)
    assert "retested on fresh seeds" in retest.rationale
    assert designer.propose(context, diagnosis, objective, [*history, (retest, verdict(1))]) is None


def test_retests_only_candidates_refined_on_few_rollouts():
    context, diagnosis, objective = scaffold_case(1)
    designer = HeuristicDesigner()
    first = designer.propose(context, diagnosis, objective, [])
    stronger = designer.propose(context, diagnosis, objective, [(first, verdict(0))])
    well_measured = [(first, verdict(0, n=RETEST_MAX_ROLLOUTS + 5)), (stronger, verdict(4, n=40))]
    assert designer.propose(context, diagnosis, objective, well_measured) is None
    mixed = [(first, verdict(0, n=40)), (stronger, verdict(1))]
    assert designer.propose(context, diagnosis, objective, mixed).template == (
        "retest(setups_oracle_prefix(2))"
    )


def test_scaffold_from_zero_starts_with_the_strongest_head_start():
    context, diagnosis, objective = scaffold_case(0)
    first = HeuristicDesigner().propose(context, diagnosis, objective, [])
    assert first.template == "setups_oracle_prefix(2)"
    tuned = HeuristicDesigner().propose(context, diagnosis, objective, [(first, verdict(5))])
    assert tuned.template.startswith("setups_oracle_prefix(2) + drop_actions(")


def test_steps_band_lengthens_with_links_and_shortens_with_head_starts():
    context, diagnosis, objective = setup(1.0, "steps:5-8")
    first = HeuristicDesigner().propose(context, diagnosis, objective, [])
    assert first.template == "link_siblings(1)" and first.link_task_ids == ["3-3-8-8"]
    too_long = HeuristicDesigner().propose(
        context, diagnosis, objective, [(first, verdict(5, steps=9.0))]
    )
    assert too_long.template.startswith("drop_actions(")
    long_context = DesignContext.from_spec(TOY, [], siblings=[])
    long_diagnosis = Diagnosis(
        "scaffold", stats={"n": 5, "successes": 5, "success_rate": 1.0, "success_steps_mean": 11.0}
    )
    shorter = HeuristicDesigner().propose(
        long_context, long_diagnosis, Objective.parse("steps:5-8"), []
    )
    assert shorter.template == "setups_oracle_prefix(1)"


def test_auto_hardening_starts_with_the_mildest_natural_change():
    spec = HarnessSpec(BridgeSpec("toy24", "1-1-4-6"))
    context, diagnosis, objective = setup(1.0, "auto", spec)
    designer = HeuristicDesigner()
    first = designer.propose(context, diagnosis, objective, [])
    assert first.template == "setups_stage_candidate(2)"
    second = designer.propose(context, diagnosis, objective, [(first, verdict(5))])
    assert second.template == "link_siblings(1)"
    # one more task changed nothing: no second or third link, tune failing actions instead
    history = [(first, verdict(5)), (second, verdict(5))]
    third = designer.propose(context, diagnosis, objective, history)
    assert third.template.startswith("drop_actions(")
    # a link that did change something is followed by a longer one
    fourth = designer.propose(
        context, diagnosis, objective, [(first, verdict(5)), (second, verdict(4, 4))]
    )
    assert fourth.template == "link_siblings(2)"


def test_fix_behaviour_ladder_follows_the_diagnosed_weakness():
    confused = [
        Step(
            i,
            {"tool": "combine", "args": {"a": str(i + 20), "op": "+", "b": "4"}},
            "Invalid",
            invalid="x",
        )
        for i in range(6)
    ]
    ok = Evaluation(True, 1.0, {})
    episodes = [
        Trajectory("4-4-10-10", "toy24", "s", {}, s, "p", steps=confused, evaluation=None)
        for s in range(3)
    ] + [
        Trajectory("4-4-10-10", "toy24", "s", {}, s, "p", evaluation=ok, end_reason="terminated")
        for s in range(3, 5)
    ]
    diagnosis = heuristic_diagnosis(episodes, "auto")
    assert diagnosis.direction == "fix-behaviour"
    context = DesignContext.from_spec(TOY, episodes, siblings=[])
    designer = HeuristicDesigner()
    seen = []
    while (candidate := designer.propose(context, diagnosis, "auto", seen)) is not None:
        seen.append((candidate, verdict(2)))
    templates = [c.template for c, _ in seen]
    assert templates[0] == "answer_invalid_with_options"  # invalid steps, no loop
    assert templates[1] == "block_repeated_action(2)"
    assert len(templates) == 4


def test_direction_none_proposes_the_empty_candidate_once():
    context, diagnosis, objective = setup(1.0, "sr:0.9-1")
    assert diagnosis.direction == "none"
    designer = HeuristicDesigner()
    empty = designer.propose(context, diagnosis, objective, [])
    assert empty.is_empty() and empty.template == "none"
    assert empty.rationale.startswith("heuristic template none:")
    assert designer.propose(context, diagnosis, objective, [(empty, verdict(5))]) is None


def test_never_proposes_the_same_candidate_twice_and_runs_out():
    context, diagnosis, objective = setup(1.0, "sr:0.4-0.6")
    designer = HeuristicDesigner(dry_run=False)
    history: list[tuple[Candidate, Verdict]] = []
    for _ in range(40):
        candidate = designer.propose(context, diagnosis, objective, history)
        if candidate is None:
            break
        # a policy whose success jumps from 5/5 to 0/5: no probability lands in the band
        history.append((candidate, verdict(5 if drop_p(candidate) < 0.6 else 0)))
    else:
        pytest.fail("the designer never ran out of ideas")
    fresh = [candidate_key(c) for c, _ in history if not c.template.startswith("retest(")]
    assert len(fresh) == len(set(fresh))
    retests = [candidate_key(c) for c, _ in history if c.template.startswith("retest(")]
    assert len(retests) <= 1 and set(retests) <= set(fresh)  # one repeat, of a tried candidate
    assert all(c.rationale.startswith("heuristic template ") for c, _ in history)


def test_candidates_that_cannot_start_are_skipped():
    context, diagnosis, objective = setup(0.0, "sr:0.4-0.6")
    broken = DesignContext(
        TOY,
        tools=context.tools,
        state_schema=context.state_schema,
        baseline=context.baseline,
        # the plan's first step names a number that is not there: its head starts fail
        oracle_actions=[{"tool": "combine", "args": {"a": "7", "op": "+", "b": "4"}}]
        + context.oracle_actions[1:],
        max_steps=12,
    )
    candidate = HeuristicDesigner().propose(broken, diagnosis, objective, [])
    # both head starts fail their dry run; the next scaffold is a rules-only one
    assert candidate is not None and not candidate.in_env_actions
    assert candidate.rules_code is not None


def test_designer_errors():
    context, diagnosis, _ = setup(1.0, "auto")
    designer = HeuristicDesigner()
    assert designer.supports("sr:0.4-0.6") and not designer.supports("loops forever")
    with pytest.raises(DesignerError, match="cannot target a plain-language deficiency"):
        designer.propose(context, diagnosis, "loops forever", [])
    with pytest.raises(RiggerError, match="expected a DesignContext"):
        designer.propose(TOY, diagnosis, "auto", [])  # type: ignore[arg-type]
    with pytest.raises(RiggerError, match="expected a Diagnosis"):
        designer.propose(context, diagnosis.to_dict(), "auto", [])  # type: ignore[arg-type]


def test_attempts_from_other_designers_are_not_repeated_or_misread():
    context, diagnosis, objective = setup(1.0, "sr:0.4-0.6")
    foreign = Candidate(rules_code="class _Rules:\n    pass\n", template=None)
    candidate = HeuristicDesigner().propose(context, diagnosis, objective, [(foreign, verdict(0))])
    assert candidate.template == "drop_actions(0.45)"


def test_auto_targets_follow_the_wilson_interval():
    harden = Target.for_objective(Objective(), "harden", {"n": 5, "success_rate": 1.0})
    assert (harden.low, harden.high, harden.gentle) == (0.2, 0.8, True)
    scaffold = Target.for_objective(Objective(), "scaffold", {"n": 5, "success_rate": 0.2})
    assert scaffold.low == 0.6 and scaffold.high == 1.0
    steps = Target.for_objective(Objective.parse("steps:5-8"), "harden", {})
    assert steps.axis == "steps" and steps.aim == 6.5
    assert steps.side({"n": 5, "successes": 0}, 5) == "hard"
    assert steps.side({"n": 5, "successes": 5, "success_steps_mean": 3.0}, 5) == "easy"
