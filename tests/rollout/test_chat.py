from __future__ import annotations

import importlib.util
import pickle
import socket

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from envharness import Action, InvalidActionError, load_bridge
from envharness.errors import DependencyNotInstalled, EnvHarnessError, PolicyError
from envharness.rollout.chat import (
    DEFAULT_SYSTEM_PROMPT,
    ChatModelPolicy,
    ChatModelPolicyFactory,
    check_model_string,
    model_providers,
)
from envharness.rollout.chat_context import message_tokens
from envharness.testing import FakeEnv, FakeToolCallingModel

TEN_TIMES_TEN = {"tool": "combine", "args": {"a": "10", "op": "*", "b": "10"}}


def combine(a: str, op: str, b: str) -> Action:
    return Action("combine", {"a": a, "op": op, "b": b})


@pytest.fixture
def toy():
    env = load_bridge("toy24", task_id="4-4-10-10")
    env.reset(seed=0)
    return env


def started(responses, toy, **options) -> tuple[ChatModelPolicy, FakeToolCallingModel]:
    model = FakeToolCallingModel(responses=responses, **options)
    policy = ChatModelPolicy(model)
    policy.start(toy.instruction, toy.tools())
    return policy, model


def test_tool_call_becomes_an_action_and_tools_are_bound(toy):
    policy, model = started([TEN_TIMES_TEN], toy)
    assert policy.native_tool_calling
    assert [t["function"]["name"] for t in model.bound_tools] == ["combine", "undo"]
    assert model.bound_tools == [tool.to_openai() for tool in toy.tools()]
    assert policy.act(toy.observe()) == combine("10", "*", "10")
    (messages,) = model.calls
    assert isinstance(messages[0], SystemMessage)
    assert messages[0].content.startswith(DEFAULT_SYSTEM_PROMPT)
    assert "calling exactly one of your tools" in messages[0].content
    assert isinstance(messages[1], HumanMessage)
    assert messages[1].content.startswith(toy.instruction)  # no "Task:" label before it
    assert "Numbers left: 4 4 10 10" in messages[1].content
    assert policy.describe() == "fake-tool-calling"


def test_each_observation_answers_the_previous_call(toy):
    policy, model = started(
        [TEN_TIMES_TEN, {"tool": "combine", "args": {"a": "100", "op": "-", "b": "4"}}], toy
    )
    first = policy.act(toy.observe())
    observation = toy.step(first).observation
    assert policy.act(observation) == combine("100", "-", "4")
    last = model.calls[1][-1]
    assert isinstance(last, ToolMessage)
    assert last.content == f"Step 2\n{observation}"
    assert last.tool_call_id == model.calls[1][-2].tool_calls[0]["id"]
    assert last.name == "combine" and last.status == "success"


def test_no_tool_call_is_invalid_and_feedback_goes_back_as_human_message(toy):
    policy, model = started(["I think 10 * 10 first.", TEN_TIMES_TEN], toy)
    with pytest.raises(InvalidActionError, match="your reply called no tool.*combine, undo"):
        policy.act(toy.observe())
    assert policy.act("Feedback: call a tool.") == combine("10", "*", "10")
    last = model.calls[1][-1]
    assert isinstance(last, HumanMessage) and "Feedback: call a tool." in last.content
    assert isinstance(model.calls[1][-2], AIMessage)


def test_unknown_tool_is_invalid_and_feedback_answers_the_call(toy):
    policy, model = started([{"tool": "fly", "args": {}, "id": "c1"}, TEN_TIMES_TEN], toy)
    with pytest.raises(InvalidActionError, match=r"unknown tool 'fly'; tools: combine <a>"):
        policy.act(toy.observe())
    policy.act("That tool does not exist.")
    last = model.calls[1][-1]
    assert isinstance(last, ToolMessage)
    assert (last.tool_call_id, last.status) == ("c1", "error")
    assert last.content == "Step 2\nThat tool does not exist."


def test_bad_arguments_are_invalid(toy):
    policy, _ = started(
        [
            {"tool": "combine", "args": {"a": "10", "op": "*"}},
            {"tool": "combine", "args": {"a": "10", "op": "^", "b": "10"}},
            {"tool": "combine", "args": {"a": 10, "op": "*", "b": 10}},
        ],
        toy,
    )
    with pytest.raises(InvalidActionError, match="missing required argument 'b'"):
        policy.act(toy.observe())
    with pytest.raises(InvalidActionError, match=r"tool 'combine': .*expected one of"):
        policy.act("bad")
    # numbers given for string parameters are converted, as the schema says
    assert policy.act("bad") == combine("10", "*", "10")


def test_malformed_tool_call_arguments_are_invalid(toy):
    reply = AIMessage(
        content="",
        invalid_tool_calls=[
            {
                "type": "invalid_tool_call",
                "id": "c9",
                "name": "combine",
                "args": '{"a": 10,',
                "error": "unterminated",
            }
        ],
    )
    policy, model = started([reply, TEN_TIMES_TEN], toy)
    with pytest.raises(InvalidActionError, match="not valid JSON"):
        policy.act(toy.observe())
    policy.act("Fix the JSON.")
    assert model.calls[1][-1].tool_call_id == "c9"


def test_several_calls_play_the_first_and_ignore_the_rest(toy):
    policy, model = started(
        [[TEN_TIMES_TEN, {"tool": "undo", "args": {}}, {"tool": "undo", "args": {}}], "done"],
        toy,
    )
    assert policy.act(toy.observe()) == combine("10", "*", "10")
    with pytest.raises(InvalidActionError):
        policy.act("Numbers left: 4 4 100")
    reply = model.calls[1][-4]
    answers = model.calls[1][-3:]
    assert [m.tool_call_id for m in answers] == [c["id"] for c in reply.tool_calls]
    assert answers[0].content == "Step 2\nNumbers left: 4 4 100"
    assert [m.content for m in answers[1:]] == ["Ignored: one action per turn."] * 2


def test_usage_is_summed_over_the_episode(toy):
    policy, model = started([TEN_TIMES_TEN, "hmm", TEN_TIMES_TEN], toy)
    policy.act(toy.observe())
    with pytest.raises(InvalidActionError):
        policy.act("next")
    policy.act("next")
    inputs = sum(message_tokens(call) for call in model.calls)  # the fake model's estimate
    assert policy.usage() == {
        "input_tokens": inputs,
        "output_tokens": 15,
        "total_tokens": inputs + 15,
    }
    policy.start(toy.instruction, toy.tools())
    assert policy.usage()["total_tokens"] == 0


def test_own_usage_metadata_is_respected(toy):
    reply = AIMessage(
        content="",
        tool_calls=[{"name": "undo", "args": {}, "id": "u"}],
        usage_metadata={"input_tokens": 100, "output_tokens": 7, "total_tokens": 107},
    )
    policy, _ = started([reply], toy)
    policy.act(toy.observe())
    assert policy.usage() == {"input_tokens": 100, "output_tokens": 7, "total_tokens": 107}


def test_json_fallback_when_the_model_has_no_tool_calling(toy):
    replies = [
        'Let me multiply.\n```json\n{"tool": "combine", "args": {"a": "10", "op": "*", '
        '"b": "10"}}\n```',
        "I give up.",
        '{"name": "undo", "arguments": {}}',
        '{"tool": "jump", "args": {}}',
    ]
    policy, model = started(replies, toy, tool_calling=False)
    assert not policy.native_tool_calling and model.bound_tools == []
    system = policy.messages[0].content
    assert 'tool_name(argument="value", ...)' in system and '{"tool": "tool_name"' in system
    assert "calling exactly one of your tools" not in system  # one protocol, not two
    assert "- combine: Combine two" in system and '"enum":["+","-","*","/"]' in system
    assert policy.act(toy.observe()) == combine("10", "*", "10")
    with pytest.raises(InvalidActionError, match="unknown tool 'I'"):
        policy.act("Numbers left: 4 4 100")
    assert policy.act("Reply with JSON.") == Action("undo")
    assert isinstance(model.calls[2][-1], HumanMessage)
    assert "Reply with JSON." in model.calls[2][-1].content
    with pytest.raises(InvalidActionError, match="unknown tool 'jump'"):
        policy.act("ok")


def test_tool_calling_false_skips_bind_tools(toy):
    model = FakeToolCallingModel(responses=['{"tool": "undo", "args": {}}'])
    policy = ChatModelPolicy(model, tool_calling=False)
    policy.start(toy.instruction, toy.tools())
    assert model.bound_tools == [] and policy.act("x") == Action("undo")


def test_system_prompt_and_skills(toy):
    model = FakeToolCallingModel(responses=[TEN_TIMES_TEN])
    policy = ChatModelPolicy(
        model, system_prompt="You play the game of 24.", skills=["Aim for 4 * 6.", "Undo early."]
    )
    policy.start(toy.instruction, toy.tools())
    policy.act(toy.observe())
    system = model.calls[0][0].content
    assert system.startswith("You play the game of 24.")
    assert DEFAULT_SYSTEM_PROMPT not in system
    assert system.endswith("Useful skills:\n- Aim for 4 * 6.\n- Undo early.")


def test_model_failure_is_a_policy_error(toy):
    policy, _ = started([TimeoutError("the provider timed out")], toy)
    with pytest.raises(PolicyError, match="failed: TimeoutError: the provider timed out"):
        policy.act(toy.observe())


def test_running_out_of_replies_is_reported(toy):
    policy, _ = started([], toy)
    with pytest.raises(EnvHarnessError, match="ran out of scripted responses"):
        policy.act(toy.observe())


def test_bind_tools_failure_is_a_policy_error(toy):
    class Broken(FakeToolCallingModel):
        def bind_tools(self, tools, **kwargs):
            raise ValueError("schema rejected")

    with pytest.raises(PolicyError, match="cannot bind the tools .*schema rejected"):
        ChatModelPolicy(Broken()).start(toy.instruction, toy.tools())


def test_argument_errors(toy):
    model = FakeToolCallingModel()
    with pytest.raises(PolicyError, match="call start"):
        ChatModelPolicy(model).act("x")
    with pytest.raises(PolicyError, match="system_prompt: expected a str or None, got int"):
        ChatModelPolicy(model, system_prompt=3)  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="skills: expected a list of str, got str"):
        ChatModelPolicy(model, skills="be smart")  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="skills: expected non-empty str entries"):
        ChatModelPolicy(model, skills=[""])
    with pytest.raises(PolicyError, match="tool_calling: expected a bool"):
        ChatModelPolicy(model, tool_calling="yes")  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="expected a LangChain chat model or a model string"):
        ChatModelPolicy(object())
    with pytest.raises(PolicyError, match="model_kwargs apply to a model string"):
        ChatModelPolicy(model, model_kwargs={"temperature": 0})
    with pytest.raises(PolicyError, match="non-empty list of ToolSpec"):
        ChatModelPolicy(model).start("", [])


def test_plays_an_episode_through_the_rollout_loop():
    rollout = pytest.importorskip("envharness.rollout.loop").rollout
    model = FakeToolCallingModel(
        responses=[
            TEN_TIMES_TEN,
            "Now subtract.",
            {"tool": "combine", "args": {"a": "100", "op": "-", "b": "4"}},
            {"tool": "combine", "args": {"a": "96", "op": "/", "b": "4"}},
        ]
    )
    trajectory = rollout(load_bridge("toy24", task_id="4-4-10-10"), ChatModelPolicy(model), seed=0)
    assert trajectory.success
    assert len(trajectory.steps) == 4 and trajectory.steps[1].invalid
    feedback = model.calls[2][-1]
    assert isinstance(feedback, HumanMessage) and "called no tool" in feedback.content


# -- model strings ---------------------------------------------------------------------------------


def test_check_model_string():
    assert check_model_string("openai:gpt-4o-mini") == ("openai", "gpt-4o-mini")
    assert check_model_string("ollama:llama3:8b") == ("ollama", "llama3:8b")
    assert check_model_string("gpt-4o-mini") == ("", "gpt-4o-mini")
    assert model_providers()["ollama"] == "langchain-ollama"
    with pytest.raises(PolicyError, match="unknown model provider 'nope'.*google_genai"):
        check_model_string("nope:model")
    with pytest.raises(PolicyError, match="no model name after the provider"):
        check_model_string("openai:")
    with pytest.raises(PolicyError, match="expected a model string"):
        check_model_string("")


def _installed(*modules: str) -> bool:
    return any(importlib.util.find_spec(m) is not None for m in modules)


@pytest.mark.skipif(
    _installed("langchain_ollama", "langchain_community"), reason="an ollama package is installed"
)
def test_missing_provider_package_names_it():
    with pytest.raises(PolicyError, match="needs the package 'langchain-ollama'.*pip install"):
        ChatModelPolicy("ollama:llama3")
    with pytest.raises(PolicyError, match="pip install langchain-ollama"):
        ChatModelPolicyFactory("ollama:llama3")


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a network connection was attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    for key in ("GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(key, raising=False)


def test_google_model_string_without_key_makes_no_network_call(no_network):
    if not _installed("langchain_google_genai"):
        with pytest.raises(DependencyNotInstalled, match=r"pip install 'envharness\[google\]'"):
            ChatModelPolicy("google_genai:gemini-2.5-flash")
        with pytest.raises(DependencyNotInstalled, match="langchain-google-genai"):
            ChatModelPolicyFactory("google_genai:gemini-2.5-flash")
        return
    try:
        policy = ChatModelPolicy("google_genai:gemini-2.5-flash")
    except PolicyError as e:  # no key: a clear error, still without a connection
        assert "gemini-2.5-flash" in str(e)
    else:
        assert policy.describe() == "google_genai:gemini-2.5-flash"


@pytest.fixture
def fake_init(monkeypatch):
    import langchain.chat_models

    built = []

    def init_chat_model(model, **kwargs):
        if model == "broken":
            raise ValueError("no such model")
        built.append((model, kwargs))
        return FakeToolCallingModel(responses=[{"tool": "noop", "args": {}}], model_name=model)

    monkeypatch.setattr(langchain.chat_models, "init_chat_model", init_chat_model)
    return built


def test_model_string_is_resolved_with_init_chat_model(fake_init):
    policy = ChatModelPolicy("my-model", model_kwargs={"temperature": 0})
    assert fake_init == [("my-model", {"temperature": 0})]
    assert policy.describe() == "my-model"
    env = FakeEnv()
    policy.start(env.instruction, env.tools())
    assert policy.act(env.reset()[0]) == Action("noop")
    with pytest.raises(PolicyError, match="cannot build the chat model 'broken': ValueError"):
        ChatModelPolicy("broken")


def test_factory_with_a_model_string_pickles_and_builds_once_per_process(fake_init):
    factory = ChatModelPolicyFactory("my-model", skills=["Be brief."])
    copy = pickle.loads(pickle.dumps(factory))
    assert copy.describe() == "my-model" and fake_init == []
    first, second = copy(0), copy(1)
    assert len(fake_init) == 1 and first.model is second.model
    assert first.describe() == "my-model" and first.skills == ("Be brief.",)
    again = pickle.loads(pickle.dumps(copy))
    assert again._built is None


def test_factory_with_a_model_object_is_for_threads_only(toy):
    model = FakeToolCallingModel(responses=[TEN_TIMES_TEN])
    factory = ChatModelPolicyFactory(model, tool_calling=True)
    policy = factory(0)
    assert policy.model is model and factory.describe() == "fake-tool-calling"
    policy.start(toy.instruction, toy.tools())
    assert policy.act(toy.observe()) == combine("10", "*", "10")
    with pytest.raises(PolicyError, match="cannot cross process boundaries"):
        pickle.dumps(factory)
    assert "fake-tool-calling" in repr(factory)


# -- the budget, forced calls, the text protocol and the bounded context ------------------------


def test_the_budget_is_stated_and_every_observation_is_headed_with_the_step(toy):
    model = FakeToolCallingModel(responses=[TEN_TIMES_TEN, {"tool": "undo", "args": {}}])
    policy = ChatModelPolicy(model)
    policy.start(toy.instruction, toy.tools(), max_steps=12)
    policy.act(toy.observe())
    policy.act("Numbers left: 4 4 100")
    system = model.calls[0][0].content
    assert "You have 12 steps" in system and "a rejected or malformed action included" in system
    assert "Step 1/12\nNumbers left: 4 4 10 10" in model.calls[0][1].content
    assert model.calls[1][-1].content == "Step 2/12\nNumbers left: 4 4 100"


def test_the_rollout_loop_gives_the_policy_its_budget(toy):
    from envharness.rollout import rollout

    model = FakeToolCallingModel(responses=[TEN_TIMES_TEN, "no call", TEN_TIMES_TEN])
    trajectory = rollout(toy, ChatModelPolicy(model), max_steps=3)
    assert "You have 3 steps" in model.calls[0][0].content
    feedback = model.calls[2][-1]
    assert isinstance(feedback, HumanMessage) and feedback.content.startswith("Step 3/3\nError:")
    assert (
        "Nothing changed" in feedback.content and "Now: Numbers left: 4 4 100" in feedback.content
    )
    assert len(feedback.content) < 300
    assert trajectory.end_reason == "budget"


def test_tool_calls_are_forced_and_the_option_turns_it_off(toy):
    policy, model = started([], toy)
    assert model.tool_choice == "any" and policy.tool_choice == "any"
    model = FakeToolCallingModel()
    ChatModelPolicy(model, force_tool_call=False).start(toy.instruction, toy.tools())
    assert model.tool_choice is None


def test_a_model_that_refuses_tool_choice_is_bound_without_it(toy):
    class NoChoice(FakeToolCallingModel):
        def bind_tools(self, tools, *, tool_choice=None, **kwargs):
            if tool_choice is not None:
                raise ValueError("tool_choice is not supported by this provider")
            return super().bind_tools(tools)

    model = NoChoice(responses=[TEN_TIMES_TEN])
    policy = ChatModelPolicy(model)
    policy.start(toy.instruction, toy.tools())
    assert policy.native_tool_calling and policy.tool_choice is None
    assert policy.act(toy.observe()) == combine("10", "*", "10")


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('combine(a="10", op="*", b="10")', combine("10", "*", "10")),
        ('I multiply first.\nAction: `combine(a=10, op="*", b=10)`', combine("10", "*", "10")),
        ("```\ncombine 10 * 10\n```", combine("10", "*", "10")),
        ('First combine(4, "+", 4)?\nNo:\ncombine(10, "*", 10)', combine("10", "*", "10")),
        ('{"tool": "undo", "args": {}}', Action("undo")),
        ("undo", Action("undo")),
    ],
)
def test_text_replies_are_read_with_the_play_parser(toy, reply, expected):
    policy, _ = started([reply], toy, tool_calling=False)
    assert policy.act(toy.observe()) == expected


def test_a_bare_command_works_for_a_one_string_tool():
    from envharness.rollout.chat import read_text_action

    env = FakeEnv()
    say = [tool for tool in env.tools() if tool.name == "say"]
    assert read_text_action("hello there", say) == Action("say", {"text": "hello there"})
    with pytest.raises(InvalidActionError, match="holds no action"):
        read_text_action("Hmm.\nLet me think.", env.tools())


def _long_episode(policy: ChatModelPolicy, model: FakeToolCallingModel, steps: int) -> None:
    page = "A page with many products. " * 30
    policy.act(f"Start. {page}")
    for k in range(1, steps):
        policy.act(f"Page {k}. {page}")


def _undo_replies(steps: int) -> list:
    return [{"tool": "undo", "args": {}} for _ in range(steps)]


def test_the_context_keeps_the_last_turns_in_full_and_stubs_older_observations(toy):
    model = FakeToolCallingModel(responses=_undo_replies(30))
    policy = ChatModelPolicy(model, history_turns=3)
    policy.start(toy.instruction, toy.tools(), max_steps=30)
    _long_episode(policy, model, 30)
    sizes = [sum(len(str(m.content)) for m in call) for call in model.calls]
    assert sizes[10:] == sorted(sizes[10:]) and sizes[-1] - sizes[10] < 2500  # stubs only grow
    last = model.calls[-1]
    results = [m for m in last if isinstance(m, ToolMessage)]
    full = [m for m in results if "[shortened]" not in m.content]
    assert len(full) == 3 and full[-1].content.startswith("Step 30/30\nPage 29.")
    assert all(len(m.content) <= 120 for m in results[:-3])
    assert len(policy.messages) == 2 + 30 + 29  # the policy keeps everything
    unbounded = FakeToolCallingModel(responses=_undo_replies(30))
    everything = ChatModelPolicy(unbounded, history_turns=None)
    everything.start(toy.instruction, toy.tools(), max_steps=30)
    _long_episode(everything, unbounded, 30)
    assert sum(len(str(m.content)) for m in unbounded.calls[-1]) > 3 * sizes[-1]


def test_a_token_budget_leaves_out_the_oldest_turns_whole(toy):
    model = FakeToolCallingModel(responses=_undo_replies(20))
    policy = ChatModelPolicy(model, history_turns=None, max_context_tokens=1500)
    policy.start(toy.instruction, toy.tools(), max_steps=20)
    _long_episode(policy, model, 20)
    last = model.calls[-1]
    assert sum(len(str(m.content)) for m in last) // 4 <= 1500
    assert "earlier steps are left out" in last[1].content
    calls = {c["id"] for m in last if isinstance(m, AIMessage) for c in m.tool_calls}
    answers = [m.tool_call_id for m in last if isinstance(m, ToolMessage)]
    assert answers and set(answers) <= calls  # every result has its call: pairs go together
    assert isinstance(last[2], AIMessage)
    assert last[-1].content.startswith("Step 20/20\nPage 19.")


def test_context_options_are_checked_and_reach_the_factorys_policies():
    model = FakeToolCallingModel()
    with pytest.raises(PolicyError, match="history_turns: expected a positive int or None"):
        ChatModelPolicy(model, history_turns=0)
    with pytest.raises(PolicyError, match="max_context_tokens"):
        ChatModelPolicy(model, max_context_tokens=-5)
    with pytest.raises(PolicyError, match="force_tool_call: expected a bool"):
        ChatModelPolicy(model, force_tool_call="yes")  # type: ignore[arg-type]
    factory = ChatModelPolicyFactory(
        model, force_tool_call=False, history_turns=2, max_context_tokens=900
    )
    policy = factory(0)
    assert (policy.force_tool_call, policy.limits.turns, policy.limits.max_tokens) == (
        False,
        2,
        900,
    )


# -- skill-equipped policies: a bank or a retriever gives each episode its top-k skills ----------


def _skill(title, when, principle, steps, tags=(), kind="strategy"):
    from envharness.skills.records import Provenance, Skill

    origin = Provenance("alfworld", f"task-{title}", "spec0", False, kind == "strategy")
    return Skill(title, when, principle, tuple(steps), kind, origin, tuple(tags))


CLEAN_SKILL = _skill(
    "Clean at the sinkbasin before placing",
    "the task asks to put a clean object somewhere",
    "Cleaning happens at the sinkbasin; take the object there first.",
    ["take the object", "go to sinkbasin 1 and clean it", "put it in the target"],
    tags=["clean"],
)
HEAT_SKILL = _skill(
    "Heat with the microwave",
    "the task asks to heat something",
    "Heating is done with the microwave.",
    ["take the object", "go to microwave 1 and heat it", "put it in the target"],
    tags=["heat"],
)
SAY_SKILL = _skill(
    "Say the target word",
    "the task asks to say a word",
    "Call say with exactly the word asked for.",
    ["read the word in quotes", "say it"],
    tags=["say", "word"],
)
SKILL_BANK = [HEAT_SKILL, CLEAN_SKILL, SAY_SKILL]
CLEAN_MUG = "Your task is to: put a clean mug in coffeemachine."
SAY = {"tool": "say", "args": {"text": "hello"}}


def _write_bank(path, skills):
    import json

    path.write_text("".join(json.dumps(s.to_dict()) + "\n" for s in skills))
    return path


needs_bm25s = pytest.mark.skipif(
    importlib.util.find_spec("bm25s") is None, reason="bm25s is not installed"
)


@needs_bm25s
def test_a_bank_shows_the_model_the_top_k_skills_for_the_instruction():
    from envharness.rollout.chat import SKILLS_TEMPLATE

    env = FakeEnv()
    model = FakeToolCallingModel(responses=[SAY])
    policy = ChatModelPolicy(model, skills=SKILL_BANK, top_k=1)
    policy.start(CLEAN_MUG, env.tools())
    policy.act("You are in the middle of a room.")
    system = model.calls[0][0].content
    assert system.endswith(SKILLS_TEMPLATE.format(skills="- " + CLEAN_SKILL.render()))
    assert "Useful skills:\n- Clean at the sinkbasin before placing (strategy)" in system
    assert "  2. go to sinkbasin 1 and clean it" in system
    assert "microwave" not in system
    assert policy.skills_shown() == [CLEAN_SKILL.to_dict()]
    assert policy.describe().startswith("fake-tool-calling+skills:bm25@")
    assert policy.describe().endswith(":k1")

    model = FakeToolCallingModel(responses=[SAY])
    policy = ChatModelPolicy(model, skills=SKILL_BANK)  # top_k 3 by default: all three
    policy.start("Your task is to: heat some egg.", env.tools())
    policy.act("x")
    assert [s["title"] for s in policy.skills_shown()][0] == HEAT_SKILL.title
    assert len(policy.skills_shown()) == 3 and policy.top_k == 3


@needs_bm25s
def test_each_episode_retrieves_for_its_own_instruction():
    env = FakeEnv()
    policy = ChatModelPolicy(FakeToolCallingModel(), skills=SKILL_BANK, top_k=1)
    policy.start(CLEAN_MUG, env.tools())
    assert policy.skills_shown()[0]["title"] == CLEAN_SKILL.title
    policy.start("heat an egg", env.tools())
    assert policy.skills_shown()[0]["title"] == HEAT_SKILL.title
    assert ChatModelPolicy(FakeToolCallingModel(), skills=SKILL_BANK).skills_shown() == []


@needs_bm25s
def test_the_skills_shown_are_recorded_in_the_trajectory():
    from envharness.rollout import rollout
    from envharness.rollout.trajectory import Trajectory

    model = FakeToolCallingModel(responses=[SAY])
    env = FakeEnv(instruction="Say the word 'hello'.")
    trajectory = rollout(env, ChatModelPolicy(model, skills=SKILL_BANK, top_k=2))
    assert trajectory.success
    assert trajectory.skills is not None and trajectory.skills[0] == SAY_SKILL.to_dict()
    assert len(trajectory.skills) == 2
    assert "Say the target word (strategy)" in model.calls[0][0].content
    again = Trajectory.from_json(trajectory.to_json())
    assert again.skills == trajectory.skills and again.policy == trajectory.policy
    assert "+skills:bm25@" in trajectory.policy


def test_skill_texts_are_recorded_and_offline_policies_record_none(toy):
    from envharness.rollout import rollout
    from envharness.rollout.policies import RandomPolicy

    model = FakeToolCallingModel(responses=[TEN_TIMES_TEN])
    trajectory = rollout(toy, ChatModelPolicy(model, skills=["Aim for 4 * 6."]), max_steps=1)
    assert trajectory.skills == [{"text": "Aim for 4 * 6."}]
    assert trajectory.policy == "fake-tool-calling"  # texts do not change the name
    assert rollout(FakeEnv(), ChatModelPolicy(FakeToolCallingModel(responses=[SAY]))).skills == []
    offline = rollout(load_bridge("toy24", task_id="4-4-10-10"), RandomPolicy(0), max_steps=2)
    assert offline.skills is None and "skills" not in offline.to_dict()


@needs_bm25s
def test_a_bank_path_and_an_empty_bank(tmp_path):
    from pathlib import Path

    env = FakeEnv()
    path = _write_bank(tmp_path / "skills.jsonl", SKILL_BANK)
    policy = ChatModelPolicy(FakeToolCallingModel(responses=[SAY]), skills=path, top_k=1)
    policy.start(CLEAN_MUG, env.tools())
    assert policy.skills_shown() == [CLEAN_SKILL.to_dict()]
    policy = ChatModelPolicy(FakeToolCallingModel(responses=[SAY]), skills=Path(tmp_path))
    policy.start(CLEAN_MUG, env.tools())
    assert len(policy.skills_shown()) == 3  # a run directory: its skills.jsonl
    empty = _write_bank(tmp_path / "empty.jsonl", [])
    model = FakeToolCallingModel(responses=[SAY])
    policy = ChatModelPolicy(model, skills=empty)
    policy.start(CLEAN_MUG, env.tools())
    policy.act("x")
    assert policy.skills_shown() == [] and "Useful skills" not in model.calls[0][0].content


def test_a_retriever_object_is_asked_for_each_episode():
    class Keyword:
        def __init__(self):
            self.queries = []

        def retrieve(self, instruction, k):
            self.queries.append((instruction, k))
            return [s for s in SKILL_BANK if s.tags[0] in instruction][:k]

        def describe(self):
            return "keyword"

    retriever, env = Keyword(), FakeEnv()
    model = FakeToolCallingModel(responses=[SAY])
    policy = ChatModelPolicy(model, skills=retriever, top_k=2)
    policy.start("heat an egg", env.tools())
    policy.act("x")
    assert retriever.queries == [("heat an egg", 2)]
    assert policy.skills_shown() == [HEAT_SKILL.to_dict()]
    assert "Heat with the microwave (strategy)" in model.calls[0][0].content
    assert policy.describe() == "fake-tool-calling+skills:keyword:k2"


def test_embedding_retrieval_through_the_policy():
    from langchain_core.embeddings import Embeddings

    from envharness.skills.retrieval import EmbeddingRetriever

    class Words(Embeddings):
        words = ("clean", "heat", "say")

        def embed_documents(self, texts):
            return [self.embed_query(text) for text in texts]

        def embed_query(self, text):
            return [float(text.lower().count(word)) for word in self.words]

    model = FakeToolCallingModel(responses=[SAY])
    policy = ChatModelPolicy(model, skills=EmbeddingRetriever(SKILL_BANK, Words()), top_k=1)
    policy.start(CLEAN_MUG, FakeEnv().tools())
    policy.act("x")
    assert policy.skills_shown() == [CLEAN_SKILL.to_dict()]
    assert "Clean at the sinkbasin" in model.calls[0][0].content
    assert "+skills:embeddings(Words)@" in policy.describe()


def test_skill_argument_errors(tmp_path):
    from envharness.skills.records import SkillError

    model = FakeToolCallingModel()
    for bad in (0, -2, 1.5, True, "3"):
        with pytest.raises(PolicyError, match="top_k: expected a positive int"):
            ChatModelPolicy(model, skills=SKILL_BANK, top_k=bad)  # type: ignore[arg-type]
        with pytest.raises(PolicyError, match="top_k: expected a positive int"):
            ChatModelPolicyFactory(model, top_k=bad)  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="not a mix"):
        ChatModelPolicy(model, skills=[CLEAN_SKILL, "heat first"])  # type: ignore[list-item]
    with pytest.raises(PolicyError, match="a bank file\\? pass it as a pathlib.Path"):
        ChatModelPolicy(model, skills=str(tmp_path / "skills.jsonl"))  # type: ignore[arg-type]
    not_a_bank = tmp_path / "trajectories.jsonl"
    not_a_bank.write_text('{"task_id": "t", "steps": []}\n')
    with pytest.raises(SkillError, match="not a skill bank"):
        ChatModelPolicy(model, skills=not_a_bank)
    with pytest.raises(SkillError, match="no skill bank at"):
        ChatModelPolicyFactory(model, skills=tmp_path / "missing.jsonl")


def test_a_failing_or_bad_retriever_is_a_policy_error():
    class Failing:
        def retrieve(self, instruction, k):
            raise ConnectionError("the index is down")

    class Wrong:
        def retrieve(self, instruction, k):
            return ["a text, not a Skill"]

    tools = FakeEnv().tools()
    with pytest.raises(PolicyError, match="skill retrieval failed: ConnectionError"):
        ChatModelPolicy(FakeToolCallingModel(), skills=Failing()).start("x", tools)
    with pytest.raises(PolicyError, match="must return a list of Skill"):
        ChatModelPolicy(FakeToolCallingModel(), skills=Wrong()).start("x", tools)


@needs_bm25s
def test_factory_with_a_bank_path_pickles_as_the_path(fake_init, tmp_path):
    path = _write_bank(tmp_path / "skills.jsonl", SKILL_BANK)
    factory = ChatModelPolicyFactory("my-model", skills=path, top_k=1)
    assert factory.describe().startswith("my-model+skills:bm25@")
    state = factory.__getstate__()
    assert state["bank_path"] == str(path) and state["_index"] is None
    copy = pickle.loads(pickle.dumps(factory))
    assert copy._index is None and copy.describe() == factory.describe()
    first, second = copy(0), copy(1)
    assert first.retriever is second.retriever  # indexed once per process
    assert first.describe() == factory.describe() and first.top_k == 1
    first.start(CLEAN_MUG, FakeEnv().tools())
    assert first.skills_shown() == [CLEAN_SKILL.to_dict()]
    _write_bank(path, SKILL_BANK[:2])  # the bank changes under a worker
    with pytest.raises(PolicyError, match="changed since this policy factory read it"):
        pickle.loads(pickle.dumps(factory))(0)


@needs_bm25s
def test_factory_with_skill_objects_pickles_and_a_retriever_is_for_threads_only(fake_init):
    from envharness.skills.retrieval import BM25Retriever

    factory = ChatModelPolicyFactory("my-model", skills=SKILL_BANK, top_k=2)
    copy = pickle.loads(pickle.dumps(factory))
    assert copy.bank == tuple(SKILL_BANK) and copy.describe() == factory.describe()
    live = ChatModelPolicyFactory("my-model", skills=BM25Retriever(SKILL_BANK))
    assert live(0).retriever is live.retriever
    assert live.describe() == factory.describe().replace(":k2", ":k3")
    with pytest.raises(PolicyError, match="retriever object .* cannot cross process"):
        pickle.dumps(live)
    plain = ChatModelPolicyFactory("my-model", skills=None, top_k=5)  # a "none" arm
    assert plain.describe() == "my-model" and plain(0).retriever is None


@needs_bm25s
def test_policy_strings_take_a_bank(fake_init, tmp_path):
    from envharness.rollout.factory import policy_factory, uses_skills
    from envharness.rollout.policies import OraclePolicyFactory

    path = _write_bank(tmp_path / "skills.jsonl", SKILL_BANK)
    factory = policy_factory("openai:my-model", skills=str(path), top_k=2)
    assert isinstance(factory, ChatModelPolicyFactory) and uses_skills(factory)
    assert factory.bank_path == str(path) and factory.top_k == 2
    oracle = policy_factory("oracle", skills=path)
    assert isinstance(oracle, OraclePolicyFactory) and not uses_skills(oracle)
    with pytest.raises(PolicyError, match="skills apply to a policy string"):
        policy_factory(oracle, skills=path)


def test_records_written_before_the_skills_field_still_load():
    from envharness.rollout.trajectory import Trajectory

    old = {"task_id": "t", "bridge": "fake", "spec_id": "s", "spec": {}, "seed": 0, "policy": "p"}
    trajectory = Trajectory.from_dict(old)
    assert trajectory.skills is None and "skills" not in trajectory.to_dict()
    shown = Trajectory.from_dict({**old, "skills": [{"text": "Undo early."}]})
    assert shown.skills == [{"text": "Undo early."}]
    assert Trajectory.from_json(shown.to_json()).skills == [{"text": "Undo early."}]
