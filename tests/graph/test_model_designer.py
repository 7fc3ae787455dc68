from __future__ import annotations

import doctest
import importlib
import importlib.util
import json

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from envharness.errors import DependencyNotInstalled, DesignerError, RiggerError
from envharness.graph.designer import (
    DIAGNOSIS_TOOL,
    WRITER_RUN_NAME,
    model_diagnosis,
    read_report,
    resolve_model,
    run_designer,
)
from envharness.graph.records import Candidate, Diagnosis, Weakness
from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.rollout import ScriptedPolicy, rollout
from envharness.testing import FakeToolCallingModel
from envharness.tools import DESIGNER_TOOL_NAMES, DesignSession

TASK = "4-4-10-10"
UNDO = {"tool": "undo", "args": {}}


def combine(a: str, op: str, b: str) -> dict:
    return {"tool": "combine", "args": {"a": a, "op": op, "b": b}}


SOLUTION = [combine("10", "*", "10"), combine("100", "-", "4"), combine("96", "/", "4")]
LOOP = [combine("10", "*", "10"), UNDO] * 6
FIRST_MOVE = {"tool": "combine", "args": json.dumps(SOLUTION[0]["args"])}
BAD_MOVE = {"tool": "combine", "args": '{"a": "9", "op": "+", "b": "4"}'}
CRASHES = "class _Rules:\n    def filter_action(self, action, state):\n        return state['x']\n"
IMPORTS_OS = "import os\n\nclass _Rules:\n    pass\n"
DIAGNOSIS = Diagnosis(
    "fix-behaviour",
    [Weakness("loop", "It undoes every combine.", ["episode 0 steps 0-11 alternate"], 2)],
    summary="The policy loops between a combine and undo.",
    source="test",
)
REPORT = {
    "direction": "fix-behaviour",
    "summary": "It loops between combine and undo.",
    "weaknesses": [
        {
            "kind": "loop",
            "description": "combine then undo, again and again",
            "evidence": ["episode 0, steps 0-11: combine(10*10) / undo() x6"],
            "episodes": 2,
        }
    ],
}


@pytest.fixture(scope="module")
def spec() -> HarnessSpec:
    return HarnessSpec(BridgeSpec("toy24", TASK))


@pytest.fixture(scope="module")
def baseline(spec):
    return [
        rollout(spec.build(), ScriptedPolicy(script, on_exhausted="repeat_last"), seed=seed)
        for seed, script in enumerate([LOOP, SOLUTION, LOOP])
    ]


@pytest.fixture
def session(spec, baseline) -> DesignSession:
    return DesignSession(spec, baseline, diagnosis=DIAGNOSIS, objective="sr:0.4-0.6")


def tool_messages(messages) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


# -- resolve_model ---------------------------------------------------------------------------


def test_resolve_model_passes_a_model_object_through():
    model = FakeToolCallingModel()
    assert resolve_model(model) is model


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("heuristic", "'heuristic' is not a chat model"),
        ("nosuch:model", "unknown model provider 'nosuch'"),
        ("google_genai:", "no model name after the provider"),
        (42, "expected a LangChain chat model"),
    ],
)
def test_resolve_model_errors(spec, match):
    with pytest.raises(DesignerError, match=match):
        resolve_model(spec)


def test_resolve_model_kwargs_only_with_a_string():
    with pytest.raises(DesignerError, match="model_kwargs apply to a model string"):
        resolve_model(FakeToolCallingModel(), temperature=0)


def test_resolve_gemini_string_without_network(monkeypatch):
    pytest.importorskip("langchain_google_genai")
    monkeypatch.setenv("GOOGLE_API_KEY", "dummy-key-for-construction-only")
    model = resolve_model("google_genai:gemini-2.5-flash", temperature=0)
    assert type(model).__name__ == "ChatGoogleGenerativeAI"
    assert model.model.endswith("gemini-2.5-flash")
    assert model.temperature == 0


def test_resolve_gemini_without_a_key_is_a_designer_error(monkeypatch):
    pytest.importorskip("langchain_google_genai")
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(DesignerError, match="cannot build the chat model") as error:
        resolve_model("google_genai:gemini-2.5-flash")
    assert "API key" in str(error.value)


def test_resolve_model_names_the_extra_for_a_missing_provider(monkeypatch):
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return None if name == "langchain_google_genai" else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(DependencyNotInstalled, match=r"pip install 'envharness\[google\]'"):
        resolve_model("google_genai:gemini-2.5-flash")


# -- run_designer ----------------------------------------------------------------------------


def test_designer_agent_checks_fixes_and_submits(session):
    seen: dict[str, object] = {}

    def good_submission(messages):
        seen["submitted_before_good"] = session.submitted
        return {
            "tool": "submit_candidate",
            "args": {"in_env_actions": [FIRST_MOVE], "rationale": "Scaffold the first combine."},
        }

    model = FakeToolCallingModel(
        responses=[
            {"tool": "get_tool_schemas", "args": {}},
            {"tool": "dry_run_setups", "args": {"in_env_actions": [BAD_MOVE]}},
            {"tool": "check_rules", "args": {"rules_code": CRASHES}},
            {"tool": "submit_candidate", "args": {"rules_code": IMPORTS_OS, "rationale": "x"}},
            good_submission,
            "never used: the run ends on the accepted submission",
        ]
    )
    candidate = run_designer(
        model,
        session,
        diagnosis=DIAGNOSIS,
        objective="sr:0.4-0.6",
        feedback=None,
        max_turns=8,
    )
    assert candidate == Candidate(
        in_env_actions=[SOLUTION[0]], rationale="Scaffold the first combine."
    )
    assert session.submitted is candidate
    assert seen["submitted_before_good"] is None  # the bad submission was not kept
    assert session.end_reason == "submitted"
    assert len(model.calls) == 5 and model.remaining == 1
    assert [t["function"]["name"] for t in model.bound_tools] == list(DESIGNER_TOOL_NAMES)

    answers = [m.content for m in tool_messages(model.calls[-1])]
    assert len(answers) == 4
    assert answers[0].startswith("The environment's tools.")
    assert '"name": "combine"' in answers[0]
    assert answers[1].startswith("ERROR: setup action #0 combine(a='9', op='+', b='4') failed")
    assert answers[2].startswith("ERROR: at step 0: hook 'filter_action' failed: raised KeyError")
    assert answers[3].startswith("ERROR: submission not accepted; it was NOT sent to validation")
    assert "`import os` is not allowed" in answers[3]
    final = tool_messages(session.transcript)[-1]
    assert final.content.startswith("accepted for validation: Setups [combine(a='10'")

    assert [(r.tool, r.ok) for r in session.log] == [
        ("get_tool_schemas", True),
        ("dry_run_setups", False),
        ("check_rules", False),
        ("submit_candidate", False),
        ("submit_candidate", True),
    ]
    assert session.usage.calls == session.model_calls == 5
    assert session.usage.output_tokens == 25
    assert session.usage.input_tokens > 0
    assert session.usage.total_tokens == session.usage.input_tokens + 25


def test_designer_prompts_carry_objective_diagnosis_statistics_and_feedback(session):
    model = FakeToolCallingModel(
        responses=[
            {"tool": "submit_candidate", "args": {"in_env_actions": [FIRST_MOVE], "rationale": "r"}}
        ]
    )
    run_designer(
        model,
        session,
        diagnosis=DIAGNOSIS,
        objective="sr:0.4-0.6",
        feedback="success rate 100% (5/5) is outside the band sr:0.4-0.6: the harness is too easy",
    )
    system, task = model.calls[0][:2]
    assert isinstance(system, SystemMessage) and isinstance(task, HumanMessage)
    assert "Objective: bring the policy's success rate into 0.4-0.6 (sr:0.4-0.6)" in system.content
    assert "# About this environment: Toy24" in system.content  # the bridge's hint file
    assert "Design a harness for task 4-4-10-10 of the toy24 environment." in task.content
    assert "Make 24 from the numbers 4 4 10 10" in task.content
    assert "direction: fix-behaviour (by test)" in task.content
    assert "evidence: episode 0 steps 0-11 alternate" in task.content
    assert "success 1/3" in task.content
    assert "Your earlier candidates for this task" in task.content
    assert "success rate 100% (5/5) is outside the band" in task.content
    assert "You have at most 12 turns." in task.content


def test_designer_system_prompt_and_hints_can_be_replaced(session):
    model = FakeToolCallingModel(
        responses=[
            {"tool": "submit_candidate", "args": {"in_env_actions": [FIRST_MOVE], "rationale": "r"}}
        ]
    )
    run_designer(model, session, system_prompt="Be brief.", bridge_hints="")
    assert model.calls[0][0].content == "Be brief."
    model = FakeToolCallingModel(responses=[model.responses[0]])
    run_designer(model, session, bridge_hints="")
    assert "About this environment" not in model.calls[0][0].content
    assert "None: this is the first candidate" in model.calls[0][1].content


def test_designer_max_turns_exhausted(session):
    model = FakeToolCallingModel(responses=[{"tool": "read_baseline", "args": {}}] * 5)
    assert run_designer(model, session, max_turns=3) is None
    assert len(model.calls) == 3
    assert session.end_reason == "max_turns"
    assert session.end_detail.startswith("3 model turns were spent (max_turns=3)")
    assert session.submitted is None and session.usage.calls == 3


def test_designer_submitting_on_the_last_turn_counts(session):
    model = FakeToolCallingModel(
        responses=[
            {"tool": "read_baseline", "args": {}},
            {
                "tool": "submit_candidate",
                "args": {"in_env_actions": [FIRST_MOVE], "rationale": "r"},
            },
        ]
    )
    assert run_designer(model, session, max_turns=2) is not None
    assert session.end_reason == "submitted"


def test_designer_that_stops_calling_tools_is_nudged_once(session):
    model = FakeToolCallingModel(responses=["I am done.", "Still done."])
    assert run_designer(model, session) is None
    assert session.end_reason == "no_submission"
    assert len(model.calls) == 2
    nudge = model.calls[1][-1]
    assert isinstance(nudge, HumanMessage)
    assert nudge.content.startswith("You ended your turn without an accepted submission")


def test_designer_nudge_can_lead_to_a_submission(session):
    model = FakeToolCallingModel(
        responses=[
            "Here is my idea, in words.",
            {
                "tool": "submit_candidate",
                "args": {"in_env_actions": [FIRST_MOVE], "rationale": "r"},
            },
        ]
    )
    assert run_designer(model, session).in_env_actions == [SOLUTION[0]]
    assert session.end_reason == "submitted"


def test_a_new_run_clears_the_previous_submission(session):
    first = FakeToolCallingModel(
        responses=[
            {"tool": "submit_candidate", "args": {"in_env_actions": [FIRST_MOVE], "rationale": "r"}}
        ]
    )
    assert run_designer(first, session) is not None
    second = FakeToolCallingModel(responses=["no idea", "none"])
    assert run_designer(second, session) is None
    assert session.submitted is None
    assert session.usage.calls == 3  # usage accumulates over runs


def test_designer_model_failure_is_a_designer_error(session):
    model = FakeToolCallingModel(responses=[TimeoutError("provider timed out")])
    with pytest.raises(DesignerError, match="designer model fake-tool-calling failed: Timeout"):
        run_designer(model, session)


def test_designer_model_strings_are_resolved(session):
    with pytest.raises(DesignerError, match="'heuristic' is not a chat model"):
        run_designer("heuristic", session)
    with pytest.raises(DesignerError, match="unknown model provider"):
        model_diagnosis("nosuch:model", session.trajectories)


def test_designer_needs_tool_calling(session):
    model = FakeToolCallingModel(responses=["x"], tool_calling=False)
    with pytest.raises(DesignerError, match="cannot call tools"):
        run_designer(model, session)


@pytest.mark.parametrize("turns", [0, -1, True, 2.5])
def test_designer_max_turns_must_be_positive(session, turns):
    with pytest.raises(DesignerError, match="expected max_turns to be a positive int"):
        run_designer(FakeToolCallingModel(), session, max_turns=turns)


class _Runs(BaseCallbackHandler):
    def __init__(self) -> None:
        self.runs: list[tuple[str | None, list[str], dict]] = []

    def on_chain_start(self, serialized, inputs, *, tags=None, metadata=None, **kwargs):
        self.runs.append((kwargs.get("name"), list(tags or []), dict(metadata or {})))


def test_designer_run_is_named_tagged_and_annotated(session):
    runs = _Runs()
    model = FakeToolCallingModel(
        responses=[
            {"tool": "submit_candidate", "args": {"in_env_actions": [FIRST_MOVE], "rationale": "r"}}
        ]
    )
    run_designer(
        model,
        session,
        config={"callbacks": [runs], "tags": ["task:4-4-10-10"], "metadata": {"iteration": 2}},
    )
    name, tags, metadata = runs.runs[0]
    assert name == WRITER_RUN_NAME == "envrigger.writer"
    assert tags[:3] == ["task:4-4-10-10", "envrigger", "writer"]
    assert metadata["task_id"] == TASK and metadata["iteration"] == 2
    assert metadata["designer_model"] == "fake-tool-calling"


# -- model_diagnosis ---------------------------------------------------------------------------


def test_diagnosis_through_the_report_tool(baseline):
    model = FakeToolCallingModel(responses=[{"tool": "report_diagnosis", "args": REPORT}])
    diagnosis = model_diagnosis(model, baseline, None, "auto", bridge_hints="Toy hints here.")
    assert diagnosis.direction == "fix-behaviour"
    assert diagnosis.weaknesses == [
        Weakness(
            "loop",
            "combine then undo, again and again",
            ["episode 0, steps 0-11: combine(10*10) / undo() x6"],
            2,
        )
    ]
    assert diagnosis.summary == "It loops between combine and undo."
    assert diagnosis.source == "fake-tool-calling"
    assert diagnosis.stats["n"] == 3 and diagnosis.stats["successes"] == 1
    assert [t["function"]["name"] for t in model.bound_tools] == ["report_diagnosis"]
    assert model.tool_choice == "report_diagnosis"
    system, task = model.calls[0]
    assert "Objective of the rig: auto" in system.content
    assert system.content.endswith("Toy hints here.")
    assert "Diagnose the policy on task 4-4-10-10 of the toy24 environment." in task.content
    assert "episode 0 (seed 0): FAILED" in task.content
    assert task.content.endswith("Report your diagnosis by calling report_diagnosis exactly once.")


def test_diagnosis_from_json_text_without_tool_calling(baseline):
    reply = "My analysis:\n" + json.dumps(REPORT) + "\nThat is all."
    model = FakeToolCallingModel(responses=[reply], tool_calling=False)
    diagnosis = model_diagnosis(model, baseline)
    assert diagnosis.direction == "fix-behaviour"
    assert "Reply with one JSON object" in model.calls[0][1].content


def test_malformed_diagnosis_is_retried_with_the_problems(baseline):
    bad = {"direction": "sideways", "summary": "?", "weaknesses": []}
    model = FakeToolCallingModel(
        responses=[
            {"tool": "report_diagnosis", "args": bad, "id": "first"},
            {"tool": "report_diagnosis", "args": REPORT},
        ]
    )
    assert model_diagnosis(model, baseline).direction == "fix-behaviour"
    retry = model.calls[1]
    assert isinstance(retry[-2], AIMessage)
    answer = retry[-1]
    assert isinstance(answer, ToolMessage) and answer.tool_call_id == "first"
    assert answer.content.startswith("ERROR: the diagnosis is malformed:")
    assert "report.direction: expected one of" in answer.content
    assert "call report_diagnosis again" in answer.content


def test_malformed_diagnosis_twice_is_a_designer_error(baseline):
    model = FakeToolCallingModel(
        responses=[
            {"tool": "report_diagnosis", "args": {"direction": "harden"}},
            "I would rather not say.",
        ]
    )
    with pytest.raises(DesignerError, match="malformed diagnosis 2 times") as error:
        model_diagnosis(model, baseline)
    message = str(error.value)
    assert "reply 1: report: missing required argument 'summary'" in message
    assert "reply 2: your reply contained no report_diagnosis call and no JSON object" in message
    assert isinstance(model.calls[1][-1], ToolMessage)


def test_diagnosis_problems_are_specific():
    ok = dict(REPORT)
    _, problems = read_report({**ok, "weaknesses": [{**ok["weaknesses"][0], "episodes": 9}]}, 3)
    assert problems == ["report.weaknesses[0].episodes: expected 0-3 (K=3), got 9"]
    _, problems = read_report({**ok, "weaknesses": [{**ok["weaknesses"][0], "evidence": []}]}, 3)
    assert problems == ["report.weaknesses[0].evidence: give at least one concrete item"]
    fields, problems = read_report({**ok, "direction": "Fix_Behavior", "confidence": 0.9}, 3)
    assert problems == [] and fields["direction"] == "fix-behaviour"
    fields, _ = read_report({"direction": "none", "summary": "fine", "weaknesses": []}, 3)
    assert fields == {"direction": "none", "summary": "fine", "weaknesses": []}
    assert read_report(["not", "an", "object"], 3) == (None, ["expected a JSON object, got list"])


def test_diagnosis_errors(baseline):
    with pytest.raises(DesignerError, match="needs at least one baseline trajectory"):
        model_diagnosis(FakeToolCallingModel(), [])
    failing = FakeToolCallingModel(responses=[ConnectionError("no route")])
    with pytest.raises(DesignerError, match="diagnoser model fake-tool-calling failed: Connection"):
        model_diagnosis(failing, baseline)


def test_diagnosis_counts_usage_and_traces(baseline):
    from envharness.tools import ModelUsage

    runs, usage = _Runs(), ModelUsage()
    model = FakeToolCallingModel(responses=[{"tool": "report_diagnosis", "args": REPORT}])
    model_diagnosis(model, baseline, usage=usage, config={"callbacks": [runs]})
    assert usage.calls == 1 and usage.output_tokens == 5
    name, tags, metadata = runs.runs[0]
    assert name == "envrigger.diagnoser"
    assert tags == ["envrigger", "diagnoser"]
    assert metadata == {"task_id": TASK, "diagnoser_model": "fake-tool-calling"}


def test_diagnosis_tool_schema_is_gemini_safe():
    from envharness.schema import gemini_schema_problems

    assert gemini_schema_problems(DIAGNOSIS_TOOL.parameters) == []


@pytest.mark.parametrize(
    "module",
    [
        "envharness.graph.designer.models",
        "envharness.graph.designer.diagnosis",
        "envharness.graph.designer.acceptance",
        "envharness.graph.designers.feedback",
    ],
)
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0 and result.attempted > 0


def test_all_names_import():
    package = importlib.import_module("envharness.graph.designer")
    for name in package.__all__:
        assert hasattr(package, name), name


class _NoForcedTool(FakeToolCallingModel):
    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        if tool_choice is not None:
            raise ValueError("this provider does not take tool_choice")
        return super().bind_tools(tools, **kwargs)


def test_diagnosis_tool_unforced_when_the_provider_refuses_tool_choice(baseline):
    model = _NoForcedTool(responses=[{"tool": "report_diagnosis", "args": REPORT}])
    assert model_diagnosis(model, baseline).direction == "fix-behaviour"
    assert model.tool_choice is None
    assert [t["function"]["name"] for t in model.bound_tools] == ["report_diagnosis"]


# -- what the designer is told ------------------------------------------------------------------


def _submit_once() -> FakeToolCallingModel:
    return FakeToolCallingModel(
        responses=[
            {"tool": "submit_candidate", "args": {"in_env_actions": [FIRST_MOVE], "rationale": "r"}}
        ]
    )


def test_the_acceptance_rules_follow_the_live_judge_settings(session):
    from envharness.graph.judge import JudgeSettings

    harden = Diagnosis("harden", summary="always solves", source="test")
    prompts = {}
    for name, settings in (
        ("default", JudgeSettings()),
        ("live", JudgeSettings(confidence=0.9, batch=7, max_rollouts=70, min_effect=0.3)),
    ):
        model = _submit_once()
        run_designer(model, session, diagnosis=harden, objective="auto", judge_settings=settings)
        prompts[name] = model.calls[0][0].content
    live, default = prompts["live"], prompts["default"]
    assert "in batches of 7" in live and "at most 70 policy rollouts" in live
    assert "P(p_base - p >= 0.3) >= 0.9" in live and "at most 35 of each" in live
    assert "alpha 0.05 over the 10 looks" in live
    assert "no success in 14 rollouts is refined as too hard" in live
    assert "in batches of 5" in default and "P(p_base - p >= 0.2) >= 0.8" in default
    assert "baseline at 0.33 (1/3)" in default  # the baseline's own rate, from the session
    for text in (live, default):
        assert "The policy has 12 steps per episode" in text
        assert "blocks included" in text and "seeded with the episode's seed" in text
        assert "stochastic rule" in text and "do not bisect it by hand" in text


def test_a_band_objective_states_its_rule_and_the_earliest_acceptance(session):
    from envharness.graph.designer import designer_system_prompt
    from envharness.graph.judge import JudgeSettings
    from envharness.graph.objective import Objective

    text = designer_system_prompt(
        Objective.parse("sr:0.4-0.6"), "", settings=JudgeSettings(confidence=0.7)
    )
    assert "accept when P(0.4 <= p <= 0.6) >= 0.7" in text
    assert "refine as too easy when P(p > 0.6) >= 0.7" in text
    assert "accepted at the earliest after n = " in text
    assert "After the first batch of 5: " in text and "successes are too easy" in text


def test_the_task_message_says_which_iteration_this_is(session):
    model = _submit_once()
    run_designer(model, session, iteration=2, max_iterations=5)
    task = model.calls[0][1].content
    assert "This is iteration 2 of 5: if this candidate is not accepted, 3 more candidates" in task
    model = _submit_once()
    run_designer(model, session, iteration=3, max_iterations=3)
    assert "This is iteration 3 of 3: this is the last candidate" in model.calls[0][1].content


def test_the_prompt_writes_setups_args_as_the_tool_schema_asks(session):
    model = _submit_once()
    run_designer(model, session)
    system = model.calls[0][0].content
    assert "whose `args` is a string: the JSON text of the tool's arguments" in system
    assert '"args": "{\\"<argument>\\": \\"<value>\\"}"' in system
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in model.bound_tools}
    item = tools["submit_candidate"]["properties"]["in_env_actions"]["items"]
    assert item["properties"]["args"]["type"] == "string"


def test_the_system_prompt_names_the_levers_and_how_to_check(session):
    model = _submit_once()
    run_designer(model, session)
    system = model.calls[0][0].content
    work = system[system.index("# How to work") :]
    assert "call get_stage_candidates first" in work
    assert "call list_sibling_tasks and Link" in work
    assert "run check_rules with your rules_code and the candidate's in_env_actions" in work


def _hinted_bridge():
    import envharness
    from envharness.testing import FakeEnv

    class Hinted(FakeEnv):
        @classmethod
        def designer_hints(cls) -> str:
            return "# About this environment: Hinted\n- Say the target word.\n"

    envharness.register("hinted", Hinted)
    return Hinted


def test_a_third_party_bridge_ships_its_hints_through_the_class_hook():
    from envharness.bridges import registry
    from envharness.prompts import load_hints

    _hinted_bridge()
    try:
        assert load_hints("hinted") == "# About this environment: Hinted\n- Say the target word."
        session = DesignSession(HarnessSpec(BridgeSpec("hinted", "fake")), [])
        model = FakeToolCallingModel(responses=["thinking", "still thinking"])
        run_designer(model, session)
        assert model.calls[0][0].content.endswith("- Say the target word.")
    finally:
        registry._REGISTERED.pop("hinted", None)


def test_a_broken_hints_hook_is_named():
    import envharness
    from envharness.bridges import registry
    from envharness.errors import RiggerError
    from envharness.prompts import load_hints
    from envharness.testing import FakeEnv

    class Broken(FakeEnv):
        @classmethod
        def designer_hints(cls):
            return 42

    envharness.register("broken-hints", Broken)
    try:
        with pytest.raises(RiggerError, match=r"Broken.designer_hints\(\) returned int"):
            load_hints("broken-hints")
    finally:
        registry._REGISTERED.pop("broken-hints", None)


def test_model_design_renders_the_brief_and_checks_its_budget(spec, baseline):
    from envharness.graph.designers import DesignBrief, ModelDesign, PastAttempt
    from envharness.graph.objective import Objective
    from envharness.graph.records import Verdict
    from envharness.rollout.stats import RolloutStats

    code = "class _Rules:\n" + "    # padding to be cut\n" * 400
    verdict = Verdict("refine", "too easy", side="too_easy")
    brief = DesignBrief(
        task_id=TASK,
        base_spec=spec,
        objective=Objective.parse("sr:0.4-0.6"),
        diagnosis=DIAGNOSIS,
        baseline=baseline,
        baseline_stats=RolloutStats.from_trajectories(baseline),
        past=[PastAttempt(1, Candidate(rules_code=code), verdict, succeeded=baseline[1])],
        iteration=2,
        max_iterations=4,
        feedback_budget=50_000,
    )
    model = _submit_once()
    design = ModelDesign(model).design(brief)
    assert design.candidate is not None and design.model_calls == 1
    task = model.calls[0][1].content
    assert task.count("# padding to be cut") == 400
    assert "This is iteration 2 of 4" in task and "A successful validation episode:" in task
    small = ModelDesign(model, feedback_budget=500).feedback(brief)
    assert len(small) <= 2000 and "Cut to fit the feedback budget of 500 tokens" in small
    with pytest.raises(RiggerError, match="feedback_budget to be a positive int"):
        ModelDesign(model, feedback_budget=0)
