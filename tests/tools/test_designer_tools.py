from __future__ import annotations

import doctest
import importlib
import json
from collections.abc import Mapping

import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool

from envharness import Action
from envharness.errors import RiggerError
from envharness.graph.records import Candidate, Diagnosis, Weakness
from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.rollout import RolloutStats, ScriptedPolicy, rollout
from envharness.schema import gemini_schema_problems
from envharness.tools import (
    DESIGNER_TOOL_NAMES,
    DesignSession,
    ToolInputError,
    build_designer_tools,
    parse_in_env_actions,
)

TASK = "4-4-10-10"


def combine(a: str, op: str, b: str) -> dict:
    return {"tool": "combine", "args": {"a": a, "op": op, "b": b}}


def as_item(action: dict) -> dict:
    """An in_env_actions entry as the schema declares it: args as JSON text."""
    return {"tool": action["tool"], "args": json.dumps(action["args"])}


UNDO = {"tool": "undo", "args": {}}
SOLUTION = [combine("10", "*", "10"), combine("100", "-", "4"), combine("96", "/", "4")]
LOOP = [combine("10", "*", "10"), UNDO] * 6  # episode 0: an undo loop, runs out of steps
BAD = [combine("9", "+", "4")] * 12  # episode 2: the same invalid combine, over and over

BLOCK_UNDO = """
class _Rules:
    def filter_action(self, action, state):
        if action["tool"] == "undo":
            return "Undo is disabled: plan your next combine instead."
        return action
"""
HINT = """
class _Rules:
    def modify_transition(self, action, observation, state):
        return observation + "\\nHint: " + str(len(state["numbers"])) + " numbers left."
"""
CRASHES = """
class _Rules:
    def filter_action(self, action, state):
        return state["no such key"]
"""
BLOCK_ALL = """
class _Rules:
    def filter_action(self, action, state):
        return "Nothing is allowed."
"""


@pytest.fixture(scope="module")
def spec() -> HarnessSpec:
    return HarnessSpec(BridgeSpec("toy24", TASK))


@pytest.fixture(scope="module")
def baseline(spec):
    scripts = [LOOP, SOLUTION, BAD]
    return [
        rollout(spec.build(), ScriptedPolicy(script, on_exhausted="repeat_last"), seed=seed)
        for seed, script in enumerate(scripts)
    ]


@pytest.fixture
def session(spec, baseline) -> DesignSession:
    return DesignSession(spec, baseline, objective="sr:0.4-0.6")


@pytest.fixture
def tools(session):
    return {tool.name: tool for tool in build_designer_tools(session)}


# -- the tool set and its schemas ------------------------------------------------------------


def _objects_without_properties(schema: Mapping, path: str = "parameters") -> list[str]:
    found = []
    if schema.get("type") == "object" and not schema.get("properties"):
        found.append(path)
    for name, sub in (schema.get("properties") or {}).items():
        found += _objects_without_properties(sub, f"{path}.{name}")
    if "items" in schema:
        found += _objects_without_properties(schema["items"], f"{path}[]")
    return found


def test_the_eight_tools_in_order(session):
    names = [tool.name for tool in build_designer_tools(session)]
    assert (
        names
        == list(DESIGNER_TOOL_NAMES)
        == [
            "get_tool_schemas",
            "get_state_schema",
            "read_baseline",
            "get_stage_candidates",
            "list_sibling_tasks",
            "dry_run_setups",
            "check_rules",
            "submit_candidate",
        ]
    )


def test_every_tool_schema_is_in_the_gemini_subset(tools):
    for tool in tools.values():
        function = convert_to_openai_tool(tool)["function"]
        assert function["description"], tool.name
        parameters = function["parameters"]
        assert gemini_schema_problems(parameters) == [], tool.name
        # Gemini rejects (or langchain-google-genai coerces to STRING) objects without properties
        assert _objects_without_properties(parameters) == [], tool.name


def test_setup_actions_schema_names_the_bridge_tools(tools):
    parameters = convert_to_openai_tool(tools["submit_candidate"])["function"]["parameters"]
    item = parameters["properties"]["in_env_actions"]["items"]
    assert item["properties"]["tool"]["enum"] == ["combine", "undo"]
    assert item["properties"]["args"]["type"] == "string"
    assert parameters["required"] == ["rationale"]


def test_gemini_request_keeps_every_declared_type(tools, monkeypatch):
    genai = pytest.importorskip("langchain_google_genai")
    monkeypatch.setenv("GOOGLE_API_KEY", "dummy-key-for-construction-only")
    model = genai.ChatGoogleGenerativeAI(model="gemini-2.5-flash")
    if not hasattr(model, "_prepare_request"):
        pytest.skip("this langchain-google-genai builds requests differently")
    from langchain_core.messages import HumanMessage

    bound = model.bind_tools(list(tools.values()))
    request = model._prepare_request([HumanMessage("hi")], **bound.kwargs)
    declarations = {
        fd.name: fd.parameters.model_dump(exclude_none=True, mode="json")
        for tool in request["config"].tools
        for fd in tool.function_declarations
    }
    assert set(declarations) == set(DESIGNER_TOOL_NAMES)
    actions = declarations["submit_candidate"]["properties"]["in_env_actions"]
    assert actions["type"] == "ARRAY"
    assert actions["items"]["type"] == "OBJECT"
    assert actions["items"]["properties"]["tool"]["enum"] == ["combine", "undo"]
    assert declarations["read_baseline"]["properties"]["episode"]["type"] == "INTEGER"


# -- reading the task --------------------------------------------------------------------------


def test_get_tool_schemas_lists_the_bridge_tools(tools):
    text = tools["get_tool_schemas"].invoke({})
    listed = json.loads(text[text.index("[") :])
    assert [tool["name"] for tool in listed] == ["combine", "undo"]
    assert listed[0]["parameters"]["required"] == ["a", "op", "b"]
    one = tools["get_tool_schemas"].invoke({"name": "undo"})
    assert [tool["name"] for tool in json.loads(one[one.index("[") :])] == ["undo"]
    assert (
        tools["get_tool_schemas"].invoke({"name": "jump"}).startswith("ERROR: no tool named 'jump'")
    )


def test_get_state_schema_shows_schema_and_start_state(tools):
    text = tools["get_state_schema"].invoke({})
    assert '"numbers"' in text and '"history"' in text
    assert "start state after reset (seed 0)" in text
    assert '"numbers": ["4", "4", "10", "10"]' in text
    assert "Numbers left: 4 4 10 10" in text
    short = tools["get_state_schema"].invoke({"with_example": False})
    assert '"numbers"' in short and "start state" not in short


def test_read_baseline_gives_statistics_and_every_episode(tools):
    text = tools["read_baseline"].invoke({})
    assert "Baseline statistics over K=3 rollouts" in text
    assert "success 1/3" in text
    assert "failure categories: loop 2" in text
    assert "episode 0 (seed 0): FAILED, end budget" in text
    assert "loop at steps 0-11 (a cycle of 2 action(s) x6)" in text
    assert "episode 1 (seed 1): SUCCESS, end terminated, 3/12 steps" in text
    assert "2: combine(a='96', op='/', b='4') -> Numbers left: 24" in text
    assert "[INVALID]" in text  # the env's feedback is in the observation already


def test_read_baseline_one_episode_in_full_and_out_of_range(tools):
    text = tools["read_baseline"].invoke({"episode": 0})
    assert "episode 0 (seed 0)" in text and "episode 1 (seed 1)" not in text
    assert text.count("undo()") == 6
    assert tools["read_baseline"].invoke({"episode": 7}) == (
        "ERROR: episode 7 does not exist; the baseline has episodes 0-2"
    )


def test_read_baseline_shortens_to_the_output_cap(spec, baseline):
    session = DesignSession(spec, baseline * 8, max_output_chars=1500)
    tools = {tool.name: tool for tool in build_designer_tools(session)}
    text = tools["read_baseline"].invoke({})
    assert len(text) <= 1500 + 40
    assert "steps omitted" in text or "more chars" in text


# -- dry runs ----------------------------------------------------------------------------------


def test_dry_run_setups_shows_the_start_the_policy_gets(tools):
    text = tools["dry_run_setups"].invoke({"in_env_actions": [as_item(SOLUTION[0])]})
    assert text.startswith("OK: 1 setup action(s) replayed without error (seed 0)")
    assert "Numbers left: 4 4 100" in text
    assert '"numbers": ["4", "4", "100"]' in text


def test_dry_run_setups_reports_the_failing_action(tools):
    text = tools["dry_run_setups"].invoke(
        {"in_env_actions": [as_item(SOLUTION[0]), as_item(combine("9", "+", "4"))]}
    )
    assert text.startswith("ERROR: setup action #1 combine(a='9', op='+', b='4') failed")
    assert "9 is not one of the numbers left" in text


def test_dry_run_setups_refuses_actions_that_end_the_episode(tools):
    text = tools["dry_run_setups"].invoke({"in_env_actions": [as_item(a) for a in SOLUTION]})
    assert text.startswith("ERROR: setup action #2") and "it ended the episode" in text


@pytest.mark.parametrize(
    ("actions", "expected"),
    [
        ([{"tool": "combine", "args": "{a: 1}"}], "in_env_actions[0].args: expected a JSON object"),
        ([{"tool": "fly", "args": "{}"}], "tool 'fly': unknown tool; available tools: combine"),
        ([{"tool": "combine", "args": "{}"}], "missing required argument 'a'"),
        ([{"tool": "undo", "args": "{}", "why": "x"}], "unexpected keys ['why']"),
        ("not json", "got text that is not JSON"),
        ({"tool": "undo"}, "expected a list"),
    ],
)
def test_dry_run_setups_explains_malformed_actions(tools, actions, expected):
    text = tools["dry_run_setups"].invoke({"in_env_actions": actions})
    assert text.startswith("ERROR:")
    assert expected in text


def test_setup_actions_also_accepted_as_objects_or_json_text():
    assert parse_in_env_actions([combine("4", "*", "6")]) == [combine("4", "*", "6")]
    assert parse_in_env_actions(json.dumps([as_item(UNDO)])) == [UNDO]
    assert parse_in_env_actions([{"tool": "undo"}]) == [UNDO]
    assert parse_in_env_actions(None) == parse_in_env_actions("") == []
    with pytest.raises(ToolInputError, match=r"in_env_actions\[0\]: expected an object"):
        parse_in_env_actions(["undo"])


# -- checking rules ----------------------------------------------------------------------------


def test_check_rules_reports_what_filter_action_did_at_each_step(tools):
    text = tools["check_rules"].invoke({"rules_code": BLOCK_UNDO, "episode": 0})
    assert text.startswith("Static check passed (hooks: filter_action).")
    assert "Replayed baseline episode 0 (seed 0, FAILED, 12 steps)" in text
    assert "6 blocked, 0 changed, 0 observations rewritten" in text
    assert 'undo(): filter_action BLOCKED with "Undo is disabled: plan your next combine' in text
    assert "combine(a='10', op='*', b='10'): filter_action kept it" in text


def test_check_rules_shows_observation_rewrites(tools):
    text = tools["check_rules"].invoke({"rules_code": HINT, "episode": 1})
    assert "3 observations rewritten" in text
    assert (
        "0 combine(a='10', op='*', b='10'): observation changed from line 3: \"\" -> "
        '"Hint: 3 numbers left."'
    ) in text
    assert 'observation changed from line 4: "" -> "Hint: 1 numbers left."' in text


def test_check_rules_static_failure_names_the_line(tools):
    code = "class _Rules:\n    def filter_action(self):\n        return 'no'\n"
    text = tools["check_rules"].invoke({"rules_code": code})
    assert text.startswith("ERROR: hook 'filter_action' failed: line 2: hook `filter_action(self)`")
    broken = tools["check_rules"].invoke({"rules_code": "class _Rules:\n    def x(self\n"})
    assert broken.startswith("ERROR: rules code failed: line 2: syntax error")


def test_check_rules_hook_failure_names_the_step_and_hook(tools):
    text = tools["check_rules"].invoke({"rules_code": CRASHES})
    assert text.startswith(
        "ERROR: at step 0: hook 'filter_action' failed: raised KeyError: 'no such key'"
    )


def test_check_rules_warns_when_a_success_becomes_impossible(tools):
    text = tools["check_rules"].invoke({"rules_code": BLOCK_ALL, "episode": 1})
    assert "WARNING: every recorded action was blocked" in text
    assert "WARNING: the rules block actions of this successful episode (steps 0, 1, 2)" in text


def test_check_rules_episode_out_of_range(tools):
    text = tools["check_rules"].invoke({"rules_code": BLOCK_UNDO, "episode": 3})
    assert text == "ERROR: episode 3 does not exist; choose 0-2"


# -- submitting --------------------------------------------------------------------------------


def test_submission_failing_the_static_check_is_not_submitted(session, tools):
    text = tools["submit_candidate"].invoke(
        {"rules_code": "import os\nclass _Rules:\n    pass\n", "rationale": "harden"}
    )
    assert text.startswith("ERROR: submission not accepted; it was NOT sent to validation.")
    assert "rules_code does not pass the static check: line 1: `import os` is not allowed" in text
    assert session.submitted is None


def test_submission_lists_every_independent_problem(session, tools):
    text = tools["submit_candidate"].invoke(
        {
            "rules_code": "class Rules:\n    pass\n",
            "in_env_actions": [as_item(combine("9", "+", "4"))],
            "rationale": "scaffold",
        }
    )
    assert "- rules_code does not pass the static check" in text
    assert "- the dry run of in_env_actions failed: setup action #0" in text
    assert session.submitted is None


def test_submission_whose_hook_fails_on_the_baseline_is_not_submitted(session, tools):
    text = tools["submit_candidate"].invoke({"rules_code": CRASHES, "rationale": "r"})
    # the replay uses a successful baseline episode when there is one (episode 1)
    assert "a hook failed when baseline episode 1 was replayed: at step 0" in text
    assert session.submitted is None


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"rules_code": BLOCK_UNDO}, "ERROR: missing required argument(s): rationale"),
        ({"rationale": "nothing"}, "ERROR: the candidate changes nothing"),
        ({"rules_code": "  ", "in_env_actions": [], "rationale": "x"}, "changes nothing"),
        ({"rules_code": BLOCK_UNDO, "rationale": "   "}, "ERROR: rationale: expected"),
        ({"rules_code": 3, "rationale": "x"}, "ERROR: rules_code: expected string"),
    ],
)
def test_submission_argument_errors(session, tools, args, expected):
    text = tools["submit_candidate"].invoke(args)
    assert text.startswith("ERROR:") and expected in text
    assert session.submitted is None


def test_good_submission_is_accepted_once(session, tools, spec):
    text = tools["submit_candidate"].invoke(
        {
            "rules_code": BLOCK_UNDO,
            "in_env_actions": [as_item(SOLUTION[0])],
            "rationale": "  Scaffold the first combine and stop the undo loop.  ",
        }
    )
    assert text.startswith(
        "accepted for validation: Setups [combine(a='10', op='*', b='10')] + Rules."
    )
    assert session.submitted == Candidate(
        in_env_actions=[SOLUTION[0]],
        rules_code=BLOCK_UNDO,
        rationale="Scaffold the first combine and stop the undo loop.",
    )
    env = session.submitted.apply(spec).build()
    try:
        observation, _ = env.reset(seed=0)
        assert observation.startswith("Numbers left: 4 4 100")
        assert env.step(Action("undo")).observation.startswith("Undo is disabled")
    finally:
        env.close()
    again = tools["submit_candidate"].invoke({"rules_code": HINT, "rationale": "another"})
    assert again.startswith("ERROR: a candidate was already accepted")
    assert session.submitted.rules_code == BLOCK_UNDO


def test_rules_only_submission(session, tools):
    text = tools["submit_candidate"].invoke(
        {"rules_code": BLOCK_UNDO, "in_env_actions": None, "rationale": "no undo"}
    )
    assert text.startswith("accepted for validation: Rules.")
    assert session.submitted.in_env_actions == []


# -- robustness --------------------------------------------------------------------------------


def test_unknown_and_mistyped_arguments_come_back_as_errors(tools):
    assert tools["read_baseline"].invoke({"episode": "first"}) == (
        "ERROR: episode: expected integer, got str 'first'"
    )
    assert (
        tools["read_baseline"]
        .invoke({"page": 2})
        .startswith("ERROR: unexpected argument(s) ['page']; this tool takes: episode")
    )
    assert tools["read_baseline"].invoke({"episode": None}).startswith("Baseline statistics")
    assert "episode 1 (seed 1)" in tools["read_baseline"].invoke({"episode": 1.0})


def test_a_tool_never_raises_into_the_agent_loop(tools, monkeypatch):
    reading = importlib.import_module("envharness.tools.reading")

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(reading, "baseline_digest", broken)
    assert tools["read_baseline"].invoke({}) == (
        "ERROR: read_baseline failed unexpectedly (RuntimeError: disk on fire)"
    )


def test_outputs_are_capped(spec, baseline):
    session = DesignSession(spec, baseline, max_output_chars=600)
    tools = {tool.name: tool for tool in build_designer_tools(session)}
    text = tools["get_state_schema"].invoke({})
    assert len(text) < 650 and text.endswith("more chars]")


def test_session_logs_every_call(session, tools):
    tools["read_baseline"].invoke({"episode": 9})
    tools["get_tool_schemas"].invoke({})
    assert [(r.tool, r.ok) for r in session.log] == [
        ("read_baseline", False),
        ("get_tool_schemas", True),
    ]
    assert session.log[0].args == {"episode": 9}
    assert session.calls_of("get_tool_schemas")[0].output.startswith("The environment's tools")


# -- the session -------------------------------------------------------------------------------


def test_session_normalizes_its_inputs(spec, baseline):
    diagnosis = Diagnosis("scaffold", [Weakness("loop", "undo loop", ["episode 0"], 1)])
    stats = RolloutStats.from_trajectories(baseline)
    session = DesignSession(spec, baseline[1:], stats=stats, diagnosis=diagnosis)
    assert session.stats == stats.to_dict()
    assert session.rollout_stats == stats
    assert session.diagnosis == diagnosis.to_dict()
    assert session.objective.kind == "auto"
    assert session.seed == 1  # the first baseline episode's seed
    assert (session.task_id, session.bridge) == (TASK, "toy24")
    assert session.model_calls == 0 and session.submitted is None


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"base_spec": "toy24"}, "base_spec: expected a HarnessSpec"),
        ({"trajectories": ["t"]}, r"trajectories\[0\]: expected a Trajectory"),
        ({"stats": 3}, "stats: expected RolloutStats"),
        ({"diagnosis": "loops"}, "diagnosis: expected a Diagnosis"),
        ({"objective": "sr:0.9-0.1"}, "expected a band"),
        ({"seed": "0"}, "seed: expected an int"),
        ({"max_output_chars": 10}, "max_output_chars: expected an int >= 500"),
    ],
)
def test_session_rejects_bad_arguments(spec, kwargs, match):
    arguments = {"base_spec": spec, **kwargs}
    with pytest.raises(RiggerError, match=match):
        DesignSession(**arguments)


def test_tools_need_a_session_whose_spec_builds():
    with pytest.raises(RiggerError, match="expected a DesignSession"):
        build_designer_tools("session")  # type: ignore[arg-type]
    broken = DesignSession(HarnessSpec(BridgeSpec("toy24", "1-1-1-1")), [])
    with pytest.raises(RiggerError, match="the base spec of task '1-1-1-1' does not build"):
        build_designer_tools(broken)


@pytest.mark.parametrize(
    "module",
    [
        "envharness.tools",
        "envharness.tools.actions",
        "envharness.tools.build",
        "envharness.tools.digest",
        "envharness.tools.session",
        "envharness.tools.staging",
    ],
)
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_all_names_import():
    package = importlib.import_module("envharness.tools")
    for name in package.__all__:
        assert hasattr(package, name), name


DROP_CODE = (
    "import random\n"
    "DROP_P = 0.3\n\n"
    "class _Rules:\n"
    "    def filter_action(self, action, state):\n"
    "        if random.random() < DROP_P:\n"
    "            return 'That action failed; try again.'\n"
    "        return action\n"
)


def test_submission_declares_knobs_and_links(session, tools):
    knob = {"name": "DROP_P", "low": 0, "high": 0.9, "harder": "high"}
    text = tools["submit_candidate"].invoke(
        {
            "rules_code": DROP_CODE,
            "knobs": [knob],
            "link_task_ids": ["1-1-4-6"],
            "rationale": "unreliable actions, then a second puzzle",
        }
    )
    assert "accepted for validation" in text and "knobs DROP_P" in text
    candidate = session.submitted
    assert candidate.link_task_ids == ["1-1-4-6"]
    # The knob starts at its value in the code; the validator calibrates it from there.
    assert candidate.knob_specs()[0].value == 0.3 and candidate.knobs[0]["harder"] == "high"
    links = [c for c in candidate.apply(session.base_spec).components if c.type == "link"]
    assert len(links) == 1


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"knobs": [{"name": "P", "low": 0, "high": 1, "harder": "high"}]}, "not an upper-case"),
        ({"knobs": [{"name": "DROP_P", "low": 1, "high": 0, "harder": "high"}]}, "low < high"),
        ({"knobs": [{"name": "DROP_P", "low": 0, "high": 1, "harder": "up"}]}, "harder"),
        ({"link_task_ids": ["no-such-task"]}, "unknown task(s) ['no-such-task']"),
    ],
)
def test_submission_knob_and_link_errors(session, tools, args, expected):
    text = tools["submit_candidate"].invoke({"rules_code": DROP_CODE, "rationale": "r", **args})
    assert text.startswith("ERROR:") and expected in text, text
    assert session.submitted is None


# -- issue 17: every lever the heuristic has, checks over the candidate's own start -------------

CRASHES_ON_UNDO = """
class _Rules:
    def filter_action(self, action, state):
        if action["tool"] == "undo":
            return state["undo budget"]
        return action
"""
PREFIX = """
class _Rules:
    def filter_observation(self, observation, state):
        return "You play a variant of the task.\\n" + observation
"""


def test_check_rules_shows_the_harnessed_first_observation(tools):
    text = tools["check_rules"].invoke(
        {"rules_code": PREFIX, "in_env_actions": [as_item(SOLUTION[0])], "episode": 1}
    )
    assert not text.startswith("ERROR"), text
    assert "after 1 Setups action(s)" in text and "filter_observation rewrote it" in text
    # the first observation the policy really gets: the Setups' start, then the hook's rewrite
    assert (
        "(up to 2000 characters):\n  You play a variant of the task.\n  Numbers left: 4 4 100\n"
        in (text)
    )
    assert "from the candidate's Setups (1 action(s))" in text
    # the bare start is not what it shows
    bare = tools["check_rules"].invoke({"rules_code": PREFIX, "episode": 1})
    assert "the bridge's own start, no Setups" in bare
    assert "  You play a variant of the task.\n  Numbers left: 4 4 10 10" in bare


def test_check_rules_replays_every_episode_and_catches_a_rare_tool(tools):
    # episode 1 (the success) never calls undo; only episode 0 does
    text = tools["check_rules"].invoke({"rules_code": CRASHES_ON_UNDO, "episode": 1})
    assert text.startswith(
        "ERROR: when baseline episode 0 was replayed: at step 1: hook 'filter_action' failed: "
        "raised KeyError: 'undo budget' (at line 5 of the rules code)"
    ), text
    assert "(the step called the tool 'undo')" in text


def test_submit_catches_a_hook_that_fails_only_on_a_rare_tool(session, tools):
    text = tools["submit_candidate"].invoke({"rules_code": CRASHES_ON_UNDO, "rationale": "r"})
    assert text.startswith("ERROR: submission not accepted")
    assert "a hook failed when baseline episode 0 was replayed: at step 1" in text
    assert "the tool 'undo'" in text
    assert session.submitted is None


def test_check_rules_summarizes_all_episodes_and_the_tools_exercised(tools):
    text = tools["check_rules"].invoke({"rules_code": BLOCK_UNDO, "episode": 1})
    assert "All baseline episodes through the hooks: 3 of 3 replayed" in text
    assert "27 steps, 6 blocked (22% of steps)" in text
    assert "Tools the baseline used: combine, undo; every one went through the hooks." in text


def test_the_sweep_exercises_new_tools_first_and_stops_at_the_time_limit(spec, baseline):
    from envharness.tools import replay_sweep

    sweep = replay_sweep(spec, BLOCK_UNDO, baseline, first=2, time_limit=0.0)
    assert list(sweep.reports) == [2] and sweep.skipped == [0, 1]  # 0 adds undo, 1 adds nothing
    session = DesignSession(spec, baseline, replay_seconds=0)
    tools = {tool.name: tool for tool in build_designer_tools(session)}
    text = tools["check_rules"].invoke({"rules_code": BLOCK_UNDO, "episode": 2})
    assert "1 of 3 replayed" in text and "Not replayed (time limit): episodes 0, 1" in text
    assert "NOT exercised: undo" in text


def test_check_rules_replays_the_knob_ends(tools):
    knob = {"name": "DROP_P", "low": 0, "high": 0.9, "harder": "high"}
    text = tools["check_rules"].invoke({"rules_code": DROP_CODE, "knobs": [knob], "episode": 1})
    assert "at each knob's ends" in text
    assert "DROP_P=0 (easier end): 3 of 3 episodes, 0 of 27 steps blocked (0%)" in text
    assert "DROP_P=0.9 (harder end):" in text
    bad = tools["check_rules"].invoke(
        {"rules_code": DROP_CODE, "knobs": [{**knob, "name": "P"}], "episode": 1}
    )
    assert bad.startswith("ERROR: knobs: 'P' is not an upper-case")


CRASHES_WHEN_HARD = DROP_CODE.replace(
    "        return action\n",
    "        if DROP_P > 0.5:\n            raise ValueError('too hard')\n        return action\n",
)


def test_a_hook_failing_only_at_a_knob_end_is_caught(session, tools):
    knob = {"name": "DROP_P", "low": 0, "high": 0.9, "harder": "high"}
    text = tools["check_rules"].invoke({"rules_code": CRASHES_WHEN_HARD, "knobs": [knob]})
    assert text.startswith(
        "ERROR: a hook failed at DROP_P=0.9 (harder end), when baseline episode 0 was replayed"
    ), text
    assert "raised ValueError: too hard (at line 9 of the rules code)" in text
    submitted = tools["submit_candidate"].invoke(
        {"rules_code": CRASHES_WHEN_HARD, "knobs": [knob], "rationale": "r"}
    )
    assert "- a hook failed at DROP_P=0.9 (harder end)" in submitted
    assert session.submitted is None


def test_key_errors_name_the_line_and_the_valid_state_keys(tools):
    text = tools["check_rules"].invoke({"rules_code": CRASHES})
    assert "raised KeyError: 'no such key' (at line 4 of the rules code)" in text
    assert "the keys of `state` are: " in text and '"numbers", "history"' in text
    assert 'action["args"] the keys: "a", "op", "b"' in text


FENCED = "```python\n" + BLOCK_UNDO.lstrip() + "```\n"


def test_a_fenced_rules_code_is_stripped_with_a_note(session, tools):
    text = tools["check_rules"].invoke({"rules_code": FENCED})
    assert text.startswith("NOTE: rules_code was wrapped in a markdown fence")
    assert "Static check passed (hooks: filter_action)." in text
    accepted = tools["submit_candidate"].invoke({"rules_code": FENCED, "rationale": "no undo"})
    assert accepted.startswith("accepted for validation: Rules.")
    assert "the fence lines were removed" in accepted
    assert session.submitted.rules_code == BLOCK_UNDO.lstrip()
    assert "```" not in session.submitted.rules_code


def test_a_fence_that_cannot_be_stripped_is_named_as_the_problem(tools):
    text = tools["check_rules"].invoke({"rules_code": "Here it is:\n" + FENCED})
    assert text.startswith("ERROR: rules code failed: line 1: syntax error")
    assert "markdown fence" in text
    empty = tools["check_rules"].invoke({"rules_code": "```python\n```"})
    assert empty == "ERROR: rules_code: the markdown fence holds no code"


def test_stage_candidates_are_ready_to_submit(session, tools):
    text = tools["get_stage_candidates"].invoke({})
    assert "offers 2 stage candidate(s) for task '4-4-10-10'" in text
    assert "#0: HEAD START: the first 1 of the 3 steps of a known solution" in text
    assert "the policy's first observation then: Numbers left: 4 4 100" in text
    line = next(x for x in text.splitlines() if x.startswith("  in_env_actions: "))
    actions = json.loads(line.removeprefix("  in_env_actions: "))
    assert actions == [as_item(SOLUTION[0])]
    accepted = tools["submit_candidate"].invoke({"in_env_actions": actions, "rationale": "a"})
    assert accepted.startswith("accepted for validation: Setups [combine(a='10', op='*'")
    quick = tools["get_stage_candidates"].invoke({"with_effects": False})
    assert "#1: HEAD START" in quick and "first observation then" not in quick


def test_stage_candidates_say_when_the_bridge_has_none(tools, monkeypatch):
    from envharness.bridges.toy24 import Toy24Env

    monkeypatch.setattr(Toy24Env, "stage_candidates", lambda self: [])
    text = tools["get_stage_candidates"].invoke({})
    assert text.startswith("The bridge 'toy24' offers no stage candidates for task '4-4-10-10'")


def test_sibling_tasks_list_the_link_targets_with_instructions(spec, baseline):
    session = DesignSession(spec, baseline, siblings=["1-1-4-6", TASK, "1-1-4-6"])
    tools = {tool.name: tool for tool in build_designer_tools(session)}
    text = tools["list_sibling_tasks"].invoke({})
    assert "usable as link_task_ids" in text and "success needs every part" in text
    assert text.count("\n- ") == 1  # the task itself and the duplicate are dropped
    assert "- 1-1-4-6 [12 steps]: Make 24 from the numbers 1 1 4 6." in text
    accepted = tools["submit_candidate"].invoke({"link_task_ids": ["1-1-4-6"], "rationale": "l"})
    assert accepted.startswith("accepted for validation: Link to 1-1-4-6")


def test_sibling_tasks_are_discovered_or_absent(spec, baseline):
    found = DesignSession(spec, baseline)
    text = {t.name: t for t in build_designer_tools(found)}["list_sibling_tasks"].invoke(
        {"limit": 2}
    )
    assert text.count("\n- ") == 2 and f"- {TASK} " not in text
    none = DesignSession(spec, baseline, siblings=[])
    empty = {t.name: t for t in build_designer_tools(none)}["list_sibling_tasks"].invoke({})
    assert empty.startswith("No sibling tasks: the bridge 'toy24' lists no other tasks")


LONG_HINT = """
class _Rules:
    def modify_transition(self, action, observation, state):
        return observation + "\\n" + "A long note for the policy. " * 20 + "END OF NOTE"
"""


def test_read_baseline_one_episode_shows_full_observations(spec):
    long_spec = Candidate(rules_code=LONG_HINT).apply(spec)
    episode = rollout(long_spec.build(), ScriptedPolicy(SOLUTION), seed=0)
    session = DesignSession(long_spec, [episode])
    tools = {tool.name: tool for tool in build_designer_tools(session)}
    text = tools["read_baseline"].invoke({"episode": 0})
    assert "Episode 0 in full: each observation up to 2000 characters" in text
    assert "END OF NOTE" in text  # past 160 characters and past the second line
    assert "      Solved: you made 24." in text
    shortened = tools["read_baseline"].invoke({})
    assert "END OF NOTE" not in shortened


def test_session_checks_the_new_settings(spec):
    with pytest.raises(RiggerError, match="max_episode_chars: expected an int >= 500"):
        DesignSession(spec, [], max_episode_chars=10)
    with pytest.raises(RiggerError, match="replay_seconds: expected a number >= 0"):
        DesignSession(spec, [], replay_seconds=-1)
    with pytest.raises(RiggerError, match="siblings: expected a list"):
        DesignSession(spec, [], siblings="1-1-4-6")


def test_check_rules_refuses_rules_that_play_another_action_for_the_agent(tools):
    swap = (
        "class _Rules:\n"
        "    def filter_action(self, action, state):\n"
        "        if action['tool'] == 'combine':\n"
        "            return {'tool': 'combine', 'args': dict(action['args'], op='+')}\n"
        "        return action\n"
    )
    text = tools["check_rules"].invoke({"rules_code": swap})
    assert "ERROR" in text and "returned a different action" in text
