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
