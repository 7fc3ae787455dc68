from __future__ import annotations

import pytest

from envharness.errors import RiggerError
from envharness.graph import RiggerContext, build_rigger
from envharness.graph.designers import (
    Design,
    Designer,
    Diagnosed,
    Diagnoser,
    HeuristicDesign,
    HeuristicDiagnosis,
    ModelDesign,
    ModelDiagnosis,
    attempts_feedback,
    register_designer,
    registered_designers,
    resolve_designer,
    resolve_diagnoser,
)
from envharness.graph.records import Candidate, Verdict
from envharness.harness.spec import BridgeSpec, HarnessSpec

TASK = "4-4-10-10"


class LinkingDesigner:
    """A scripted third-party designer: first a Link to a spec of its choosing, then nothing."""

    name = "linker"

    def __init__(self) -> None:
        self.briefs = []

    def design(self, brief):
        self.briefs.append(brief)
        if brief.attempts:
            return Design(None)
        second = HarnessSpec(BridgeSpec("toy24", "1-1-4-6")).to_dict()
        link = {"type": "link", "config": {"mode": "sequential", "second": second}}
        return Design(Candidate(components=[link], rationale="play a second puzzle"), 0)


def run(tmp_path, designer, objective="sr:0.8-1.0"):
    context = RiggerContext(
        run_dir=str(tmp_path), policy="oracle:1.0", designer=designer, objective=objective
    )
    start = {"task_id": TASK, "base_spec": HarnessSpec(BridgeSpec("toy24", TASK)).to_dict()}
    return build_rigger().invoke(start, {"configurable": {"thread_id": TASK}}, context=context)


def test_a_third_party_designer_submits_a_link_through_the_graph(tmp_path):
    designer = LinkingDesigner()
    assert isinstance(designer, Designer)
    state = run(tmp_path, designer, objective="auto")
    first = state["attempts"][0]
    assert first["designer"] == "linker"
    assert [c["type"] for c in first["spec"]["components"]] == ["link"]
    brief = designer.briefs[0]
    assert brief.task_id == TASK and brief.iteration == 1 and brief.baseline_stats.n == 5
    assert brief.diagnosis.direction == "harden"  # oracle:1.0 always solves the bare task
    # The verdict came back structured: the second brief sees it, side and judgement included.
    if len(designer.briefs) > 1:
        _, verdict = designer.briefs[1].attempts[0]
        assert verdict.decision in ("refine", "undecided")
        assert verdict.judgement["n"] == first["verdict"]["rollouts"] or verdict.calibration


def test_registered_designers_resolve_by_name(tmp_path):
    name = "linker-test"
    if name not in registered_designers():
        register_designer(name, LinkingDesigner)
    assert isinstance(resolve_designer(name), LinkingDesigner)
    with pytest.raises(RiggerError, match="already registered"):
        register_designer(name, LinkingDesigner)
    with pytest.raises(RiggerError, match="callable factory"):
        register_designer("other", "not callable")  # type: ignore[arg-type]
    context = RiggerContext(run_dir=str(tmp_path), designer=name)
    assert context.model_name("writer") == name
    assert context.uses_heuristic("diagnoser")  # a designer name is not a model


def test_builtins_resolve_and_models_become_model_designers():
    assert isinstance(resolve_designer("heuristic"), HeuristicDesign)
    assert isinstance(resolve_designer(None), HeuristicDesign)
    model = resolve_designer("google_genai:gemini-2.5-flash")
    assert isinstance(model, ModelDesign) and model.name == "google_genai:gemini-2.5-flash"


def test_feedback_lists_sides_and_calibrated_knobs():
    code = "DROP_P = 0.3\n" + "class _Rules:\n    pass\n" * 100  # long code is never cut
    verdict = Verdict("refine", "too easy", side="too_easy", knobs={"DROP_P": 0.9})
    text = attempts_feedback([(Candidate(rules_code=code), verdict)])
    assert "refine, too easy" in text and "Final knob values: DROP_P=0.9" in text
    assert text.count("class _Rules") == 100
    assert attempts_feedback([]) is None


class ScaffoldEverything:
    """A scripted third-party diagnoser: whatever the baseline, it asks for scaffolding."""

    name = "always-scaffold"

    def __init__(self) -> None:
        self.briefs = []

    def diagnose(self, brief):
        from envharness.graph.records import Diagnosis

        self.briefs.append(brief)
        return Diagnosed(Diagnosis("scaffold", summary="scripted", source=self.name), 0)


def test_a_third_party_diagnoser_goes_through_the_same_kind_of_protocol(tmp_path):
    diagnoser = ScaffoldEverything()
    assert isinstance(diagnoser, Diagnoser) and not isinstance(diagnoser, Designer)
    context = RiggerContext(
        run_dir=str(tmp_path), policy="oracle:1.0", objective="auto", diagnoser=diagnoser,
        max_iterations=1,
    )  # fmt: skip
    start = {"task_id": TASK, "base_spec": HarnessSpec(BridgeSpec("toy24", TASK)).to_dict()}
    state = build_rigger().invoke(start, {"configurable": {"thread_id": TASK}}, context=context)
    assert state["diagnosis"]["source"] == "always-scaffold"
    assert state["diagnosis"]["direction"] == "scaffold"
    assert diagnoser.briefs[0].baseline_stats.n == 5 and len(diagnoser.briefs[0].baseline) == 5
    assert context.model_name("diagnoser") == "always-scaffold"
    assert isinstance(resolve_diagnoser("heuristic"), HeuristicDiagnosis)
    assert isinstance(resolve_diagnoser("google_genai:gemini-2.5-flash"), ModelDiagnosis)


# -- the model designer's feedback -------------------------------------------------------------


def _episodes(script, n=2):
    from envharness.rollout import ScriptedPolicy, rollout

    spec = HarnessSpec(BridgeSpec("toy24", TASK))
    return [
        rollout(spec.build(), ScriptedPolicy(script, on_exhausted="repeat_last"), seed=seed)
        for seed in range(n)
    ]


def _past(iteration, code, *, decision="refine", side="too_easy"):
    from envharness.graph.designers import PastAttempt
    from envharness.rollout.stats import RolloutStats

    solution = [
        {"tool": "combine", "args": {"a": "10", "op": "*", "b": "10"}},
        {"tool": "combine", "args": {"a": "100", "op": "-", "b": "4"}},
        {"tool": "combine", "args": {"a": "96", "op": "/", "b": "4"}},
    ]
    loop = [solution[0], {"tool": "undo", "args": {}}] * 6
    won, lost = _episodes(solution, 1)[0], _episodes(loop, 1)[0]
    stats = RolloutStats.from_trajectories([won, won, lost]).to_dict()
    judgement = {
        "decision": "refine", "side": side, "method": "band", "n": 3, "successes": 2,
        "rate": 2 / 3, "interval": [0.2, 0.94], "probability": 0.31, "p_value": None,
        "effect": None, "confidence": 0.8, "steps_mean": 3.0, "reason": "r",
    }  # fmt: skip
    verdict = Verdict(
        decision, f"verdict of attempt {iteration}", stats, rollouts=3, side=side,
        judgement=judgement, knobs={"DROP_P": 0.45},
        calibration=[{"values": {"DROP_P": 0.3}, "n": 3, "successes": 3, "decision": "refine",
                      "probability": 0.05},
                     {"values": {"DROP_P": 0.45}, "n": 3, "successes": 2, "decision": "refine",
                      "probability": 0.31}],
        oracle={"passed": True, "problem": None, "knobs": {"DROP_P": 0.0},
                "message": "the bridge's oracle solves the candidate (seed 0: solved after 3/12 "
                "steps)", "episodes": []},
    )  # fmt: skip
    knobs = [{"name": "DROP_P", "low": 0, "high": 0.9, "harder": "high", "value": 0.3}]
    candidate = Candidate(
        rules_code=code, knobs=knobs, in_env_actions=solution[:1], rationale=f"why {iteration}"
    )
    return PastAttempt(iteration, candidate, verdict, failed=lost, succeeded=won)


def test_feedback_says_when_the_knob_model_pooled_the_claim():
    from envharness.graph.designers import render_feedback

    past = _past(1, "DROP_P = 0.3\nclass _Rules:\n    pass\n")
    assert "pooled over" not in render_feedback([past])
    past.verdict.judgement["pooled_n"] = 40
    assert "P(claim) = 0.31, needed >= 0.8 (knob model pooled over 40 rollouts)" in (
        render_feedback([past])
    )


def test_feedback_renders_every_part_of_every_attempt():
    from envharness.graph.designers import render_feedback

    text = render_feedback([_past(1, "DROP_P = 0.3\nclass _Rules:\n    pass\n")])
    for part in (
        "### Attempt 1 (the latest): refine, too easy",
        "Verdict: verdict of attempt 1",
        "Setups (1 action(s)): combine(a='10', op='*', b='10')",
        'as in_env_actions: [{"tool": "combine", "args": "{\\"a\\": \\"10\\"',  # JSON text args
        "Rules code (complete, as submitted):\n--- rules_code ---\nDROP_P = 0.3\nclass _Rules:",
        "    pass\n--- end of rules_code ---",
        "Knobs: DROP_P in 0..0.9 (harder: high, started at 0.3)",
        "Rationale: why 1",
        "Oracle check with DROP_P=0: passed: the bridge's oracle solves the candidate",
        "Judge (band): 2/3 successes, rate 0.67, 95% credible interval 0.20-0.94",
        "P(claim) = 0.31, needed >= 0.8",
        "Rollouts judged: success 2/3 (67%",
        "blocked 0% of steps, invalid 0% of steps, 1 episode(s) with a loop",
        "end reasons: terminated 2, budget 1",
        "failure categories: loop 1",
        "Knob values tried (in order; the validator moved the knob, not you):",
        "DROP_P=0.3: 3/3 successes -> refine, P(claim) = 0.05",
        "Final knob values: DROP_P=0.45",
        "A failed validation episode:\nepisode (seed 0): FAILED, end budget, 12/12 steps",
        "A successful validation episode:\nepisode (seed 0): SUCCESS",
    ):
        assert part in text, part
    assert "Cut to fit" not in text


def test_feedback_cuts_the_least_useful_parts_first_and_says_so():
    from envharness.graph.designers import render_feedback

    code = "class _Rules:\n" + "".join(f"    X{i} = {i}\n" for i in range(40))
    past = [_past(1, code), _past(2, code), _past(3, code + "    LATEST = 1\n")]
    full = render_feedback(past, budget=100_000)
    assert full.count("A failed validation episode") == 3
    budget = (len(full) - 1500) // 4  # a little too small: only older episodes must go
    text = render_feedback(past, budget=budget)
    assert len(text) <= budget * 4
    assert text.count("A failed validation episode") == 1  # the latest attempt's only
    assert "[Cut to fit the feedback budget of" in text
    assert "the validation episodes of attempt 1; the validation episodes of attempt 2" in text
    assert (
        "    LATEST = 1\n--- end of rules_code ---" in text
        and "Rollouts judged: success 2/3" in text
    )
    tight = render_feedback(past, budget=900)
    assert len(tight) <= 900 * 4
    assert "the candidate of attempt 1" in tight  # older candidates go before the latest's
    assert "    LATEST = 1" in tight  # the latest attempt's code and statistics stay
    note = tight[tight.index("[Cut to fit") :]
    assert (
        note.index("the validation episodes of attempt 1")
        < note.index("attempt 3")
        < (note.index("the candidate of attempt 1"))
    )
    smallest = render_feedback(past, budget=300)
    assert len(smallest) <= 300 * 4 and "Cut to fit" in smallest
