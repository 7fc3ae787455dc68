"""Extraction: the offline extractor on played toy24, TextWorld and ALFWorld episodes (abstracted,
deterministic) and the model extractor with a scripted fake model (parsed, retried, reported)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from envharness import load_bridge
from envharness.harness import Rules
from envharness.harness.spec import HarnessSpec, Lineage
from envharness.rollout import OraclePolicy, RandomPolicy, RunStore, Step, Trajectory, rollout
from envharness.skills import (
    Abstraction,
    ModelExtractor,
    OfflineExtractor,
    SkillBank,
    SkillError,
    extract_skills,
    harness_target,
)

TOY = "4-4-10-10"
TW_KEY = "tw-s3-o5-q3-seed2"  # go south > take keycard > unlock box with keycard
KEYCHAIN = "pick_and_place_simple-KeyChain-None-SideTable-309/trial_T20190908_215011_025401"
ALFWORLD_DATA = Path(
    os.environ.get("ALFWORLD_DATA")
    or os.environ.get("ENVHARNESS_ALFWORLD_DATA")
    or Path(__file__).resolve().parents[3] / "shared" / "data" / "alfworld"
)
NO_ALFWORLD_DATA = f"no ALFWorld sample data at {ALFWORLD_DATA} (set ALFWORLD_DATA)"


PASS_RULES = "class _Rules:\n    def filter_action(self, action, state):\n        return action\n"


def text_of(skills) -> str:
    return "\n".join(skill.render() for skill in skills).lower()


def dicts(skills) -> list[dict]:
    return [skill.to_dict() for skill in skills]


def toy(policy, **kw) -> Trajectory:
    return rollout(load_bridge("toy24", task_id=TOY), policy, **kw)


# -- toy24 -------------------------------------------------------------------------------------


def test_toy24_success_gives_an_abstracted_procedure():
    episode = toy(OraclePolicy(1.0, seed=0))
    assert episode.success
    [skill] = extract_skills([episode])
    assert skill.kind == "strategy" and skill.tags == ("offline", "procedure", "original")
    assert skill.steps == (
        "combine(a=<number>, op='*', b=<number>)",
        "combine(a=<number>, op='-', b=<number>)",
        "combine(a=<number>, op='/', b=<number>)",
    )
    assert not re.search(r"\b(4|10|96|100)\b", " ".join(skill.steps))
    assert "<number>" in skill.when and "24" in skill.when  # the goal's 24 is no task value
    origin = skill.provenance
    assert (origin.bridge, origin.task_id, origin.success, origin.harnessed) == (
        "toy24",
        TOY,
        True,
        False,
    )
    assert origin.trajectory_key == RunStore.key_of(episode) and origin.extractor == "offline"


def test_toy24_failure_gives_a_pitfall_and_extraction_is_deterministic():
    def play():
        return [toy(RandomPolicy(seed=seed), max_steps=8) for seed in range(3)]

    first, second = play(), play()
    assert not any(t.success for t in first)
    skills = extract_skills(first)
    assert skills and all(s.kind == "pitfall" and not s.provenance.success for s in skills)
    assert dicts(skills) == dicts(extract_skills(second)) == dicts(extract_skills(first))
    assert {s.tags[1] for s in skills} <= {"invalid_actions", "loop", "budget"}


def test_harnessed_episode_records_the_rigged_target():
    env = Rules(load_bridge("toy24", task_id=TOY), PASS_RULES)
    spec = HarnessSpec.from_env(env).with_lineage(
        Lineage(
            task=TOY,
            policy="oracle:1",
            notes="only one undo",
            validation={"objective": "sr:0.4-0.6"},
        )
    )
    episode = rollout(env, OraclePolicy(1.0, seed=0))
    assert episode.spec_id == spec.spec_id and "lineage" not in episode.spec
    [plain] = extract_skills([episode])
    assert plain.provenance.harnessed and plain.provenance.target == ""
    [skill] = extract_skills([episode], specs={spec.spec_id: spec})
    assert skill.provenance.harnessed and skill.tags[-1] == "harnessed"
    assert skill.provenance.target == "only one undo (objective sr:0.4-0.6)"
    assert "rigged to: only one undo" in skill.when
    assert skill.key == plain.key  # the same procedure, wherever it was learned
    assert harness_target({}) == ""


WORDS = ["fly", "jump", "fly", "dig"]


def step(index, command=None, **kw) -> Step:
    action = {"tool": "act", "args": {"command": command}} if command else None
    return Step(index, action, kw.pop("observation", "ok"), **kw)


def made_up(
    steps, end_reason="budget", instruction="Your task is to: put a mug in cabinet.\n\nnotes"
):
    return Trajectory(
        "t1", "alfworld", "s1", {}, 0, "scripted", instruction, "", steps, None, end_reason
    )


@pytest.mark.parametrize(
    ("steps", "end", "category", "needle"),
    [
        (
            [step(i, "go to cabinet 1" if i % 2 else "take mug 1 from desk 2") for i in range(6)],
            "budget",
            "loop",
            "repeating act: take <object> from <place> then act: go to <receptacle> 3 times",
        ),
        (
            [
                step(i, w, invalid=f"'{w}' is not a command; admissible: look")
                for i, w in enumerate(WORDS)
            ],
            "budget",
            "invalid_actions",
            "'fly' is not a command",  # the most common (first) feedback
        ),
        (
            [
                step(i, f"open drawer {i}", blocked=True, observation="Examine mug 1 first.\nmore")
                for i in range(3)
            ],
            "budget",
            "blocked",
            'a rule blocked most actions ("examine <place> first',
        ),
        (
            [step(i, f"go to drawer {i % 2 + 1}") for i in range(2)]
            + [step(2, "look"), step(3, "go to drawer 1")],
            "budget",
            "budget",
            "the most repeated action was act: go to <place>",
        ),
        (
            [step(0, "look"), step(1, "move mug 1 to desk 1", terminated=True)],
            "terminated",
            "wrong_end",
            "ended after act: move <object> to <place>",
        ),
    ],
)
def test_pitfalls_from_failure_categories(steps, end, category, needle):
    [skill] = OfflineExtractor().extract(made_up(steps, end))
    assert skill.kind == "pitfall" and skill.tags[1] == category
    assert needle in skill.render().lower()
    assert "mug" not in " ".join((skill.title, skill.principle, *skill.steps))


def test_errors_and_empty_episodes_teach_nothing():
    assert OfflineExtractor().extract(made_up([step(0, "look")], "env_error")) == []
    assert OfflineExtractor().extract(made_up([], "timeout")) == []
    with pytest.raises(SkillError, match="trajectory 0: expected a Trajectory"):
        extract_skills([{"task_id": "t"}])
    with pytest.raises(SkillError, match="expected an extractor"):
        extract_skills([], extractor=object())


def test_abstraction_rules():
    rules = Abstraction.for_episode(
        "Take the red potato from the fridge and go east.\n\nYou can 'take apple'.",
        ["take red potato from fridge", "go east", "take apple 2", "eat potato"],
    )
    assert rules.action_text("take red potato from fridge") == "take <object> from <receptacle>"
    assert rules.action_text("go east") == "go <direction>"
    assert rules.action_text("take apple 2") == "take <item>"  # notes are not the task
    assert rules.text("Take the red potato now") == "Take the <object> now"
    assert rules.action_text("eat potato") == "eat <object>"  # a part of a name is the name


# -- TextWorld ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def textworld_cache(tmp_path_factory) -> str:
    pytest.importorskip("textworld", reason="needs the textworld extra")
    from envharness.bridges.textworld import ensure_game

    folder = tmp_path_factory.mktemp("textworld-cache")
    ensure_game(TW_KEY, folder)
    return str(folder)


def test_textworld_procedure_abstracts_the_instruction_nouns(textworld_cache):
    def play():
        env = load_bridge("textworld", task_id=TW_KEY, cache_dir=textworld_cache)
        return [
            rollout(env, OraclePolicy(1.0, seed=0), close=False),
            rollout(env, RandomPolicy(seed=1), max_steps=6),
        ]

    episodes = play()
    assert [t.success for t in episodes] == [True, False]
    skills = extract_skills(episodes)
    strategy = next(s for s in skills if s.kind == "strategy")
    assert strategy.steps == (
        "act: go <direction>",
        "act: take <object>",
        "act: unlock <object2> with <object>",
    )
    text = " ".join((strategy.title, strategy.when, *strategy.steps)).lower()
    assert not re.search(r"\b(keycard|box|south)\b", text)
    assert any(s.kind == "pitfall" for s in skills)
    assert dicts(skills) == dicts(extract_skills(play()))


# -- ALFWorld ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def alfworld_env(tmp_path_factory):
    if not (ALFWORLD_DATA / "json_2.1.1").is_dir():
        pytest.skip(NO_ALFWORLD_DATA)
    pytest.importorskip("alfworld", reason="needs the alfworld extra")
    cache = tmp_path_factory.mktemp("alfworld-cache")
    env = load_bridge(
        "alfworld", task_id=KEYCHAIN, data_dir=str(ALFWORLD_DATA), cache_dir=str(cache)
    )
    yield env
    env.close()


def test_alfworld_procedure_has_no_task_object_names(alfworld_env):
    def play():
        return [
            rollout(alfworld_env, OraclePolicy(1.0, seed=0), close=False),
            rollout(alfworld_env, RandomPolicy(seed=0), max_steps=6, close=False),
        ]

    episodes = play()
    assert [t.success for t in episodes] == [True, False]
    skills = extract_skills(episodes)
    strategy = skills[0]
    assert (
        strategy.kind == "strategy"
        and strategy.title == "Worked procedure: put a <object> in <receptacle>"
    )
    assert strategy.steps[-2:] == ("act: go to <receptacle>", "act: move <object> to <receptacle>")
    assert any(s.startswith("act: take <object> from <place>") for s in strategy.steps)
    text = " ".join((strategy.title, strategy.when, *strategy.steps)).lower()
    assert not re.search(r"keychain|sidetable|\d", re.sub(r"\(\d+ times in a row\)", "", text))
    assert skills[1].kind == "pitfall"
    assert dicts(skills) == dicts(extract_skills(play()))
    bank = SkillBank()
    assert bank.extend(skills) == len(skills)


# -- the model extractor -----------------------------------------------------------------------


SKILL_ARGS = {
    "title": "Search closed receptacles",
    "when": "the object is not in sight",
    "principle": "Objects hide in drawers and cabinets; open them in turn.",
    "steps": ["go to <receptacle>", "open <receptacle>", "take <object> from <receptacle>"],
}


def fake(responses):
    from envharness.testing import FakeToolCallingModel

    return FakeToolCallingModel(responses=responses, model_name="fake-extractor")


def shown(model, call=0) -> str:
    return "\n".join(str(m.content) for m in model.calls[call])


def test_model_extractor_parses_skills_and_keeps_provenance():
    pytest.importorskip("langchain_core")
    success = toy(OraclePolicy(1.0, seed=0))
    failure = toy(RandomPolicy(seed=0), max_steps=4)
    model = fake(
        [
            {"tool": "record_skills", "args": {"skills": [SKILL_ARGS]}},
            '```json\n{"skills": [{"title": "Stop undoing", "when": "nothing is combined", '
            '"principle": "undo only takes back a combine", "steps": ["combine first"]}]}\n```',
        ]
    )
    extractor = ModelExtractor(model)
    skills = extract_skills([success, failure], extractor)
    assert [s.kind for s in skills] == ["strategy", "pitfall"]
    assert skills[0].steps == tuple(SKILL_ARGS["steps"]) and skills[1].title == "Stop undoing"
    assert skills[0].provenance.extractor == "fake-extractor"
    assert skills[0].provenance.trajectory_key == RunStore.key_of(success)
    assert not skills[1].provenance.success and skills[0].tags == ("model", "original")
    assert model.bound_tools[0]["function"]["name"] == "record_skills"
    first, second = shown(model, 0), shown(model, 1)
    assert "This episode was a success" in first and "write strategies" in first
    assert "This episode was a failure" in second and "write pitfalls" in second
    assert "Harness: none: the original environment." in first
    assert (
        "combine(a='10', op='*', b='10')" in first and "Make 24 from the numbers 4 4 10 10" in first
    )
    assert extractor.calls == 2


def test_model_extractor_is_told_the_harness_lineage():
    pytest.importorskip("langchain_core")
    env = Rules(load_bridge("toy24", task_id=TOY), PASS_RULES)
    spec = HarnessSpec.from_env(env).with_lineage(Lineage(notes="teach to undo dead ends"))
    episode = rollout(env, OraclePolicy(1.0, seed=0))
    model = fake([{"tool": "record_skills", "args": {"skills": []}}])
    assert (
        extract_skills([episode], ModelExtractor(model), specs={spec.spec_id: spec.to_dict()}) == []
    )
    assert (
        f"harnessed with rules (spec {spec.spec_id}); it was rigged to: teach to undo dead ends"
        in shown(model)
    )


def test_a_malformed_reply_is_retried_with_the_error():
    pytest.importorskip("langchain_core")
    from langchain_core.messages import ToolMessage

    model = fake(
        [
            {
                "tool": "record_skills",
                "args": {"skills": [{"title": "No steps", "when": "w", "principle": "p"}]},
            },
            {"tool": "record_skills", "args": {"skills": [SKILL_ARGS]}},
        ]
    )
    [skill] = ModelExtractor(model).extract(toy(OraclePolicy(1.0, seed=0)))
    assert skill.title == SKILL_ARGS["title"]
    feedback = model.calls[1][-1]
    assert isinstance(feedback, ToolMessage)
    assert "ERROR: skill 1: expected 'steps' to be a list of str" in feedback.content


def test_a_second_malformed_reply_is_reported():
    pytest.importorskip("langchain_core")
    from langchain_core.messages import HumanMessage

    model = fake(["I think the agent did well.", {"tool": "something_else", "args": {}}])
    with pytest.raises(
        SkillError,
        match=r"fake-extractor replied malformed skills for episode '4-4-10-10'.*2 time\(s\); "
        r"last problem: called 'something_else'",
    ):
        ModelExtractor(model).extract(toy(OraclePolicy(1.0, seed=0)))
    assert isinstance(model.calls[1][-1], HumanMessage)
    assert "the text is not JSON" in model.calls[1][-1].content
    assert model.remaining == 0


def test_a_failing_model_and_bad_settings_are_reported():
    pytest.importorskip("langchain_core")
    model = fake([RuntimeError("quota exceeded")])
    with pytest.raises(
        SkillError, match="fake-extractor failed on episode.*RuntimeError: quota exceeded"
    ):
        ModelExtractor(model).extract(toy(OraclePolicy(1.0, seed=0)))
    with pytest.raises(SkillError, match="max_skills: expected an int >= 1"):
        ModelExtractor(model, max_skills=0)
    with pytest.raises(SkillError, match="expected a LangChain chat model"):
        ModelExtractor("gemini")
