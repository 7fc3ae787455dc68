from __future__ import annotations

import doctest
import fnmatch
import importlib
import tomllib
from pathlib import Path

import pytest

from envharness import load_bridge
from envharness.errors import RiggerError
from envharness.prompts import load_hints, load_prompt, placeholders, prompt_names
from envharness.sandbox import ALLOWED_IMPORTS, HOOKS

ROOT = Path(__file__).resolve().parents[2]
BUILTIN_BRIDGES = (
    "toy24", "alfworld", "textworld", "gymnasium", "webshop", "swe", "spreadsheet", "docqa",
)  # fmt: skip

EXPECTED_PLACEHOLDERS = {
    "designer": {"objective", "allowed_imports", "hints", "acceptance_rules", "budget_facts"},
    "designer_task": {
        "task_id",
        "bridge",
        "iteration",
        "max_iterations",
        "iterations_left",
        "instruction",
        "objective",
        "diagnosis",
        "stats",
        "feedback",
        "max_turns",
    },
    "designer_nudge": set(),
    "diagnoser": {"objective", "hints"},
    "diagnoser_task": {"task_id", "bridge", "instruction", "baseline", "reply_format"},
    "skill_extractor": {"outcome", "kind_rule", "max_skills"},
    "skill_extractor_task": {"bridge", "task_id", "harness", "instruction", "episode"},
}


def test_the_templates_and_their_placeholders():
    assert prompt_names() == sorted(EXPECTED_PLACEHOLDERS)
    for name, expected in EXPECTED_PLACEHOLDERS.items():
        assert placeholders(name) == expected, name


def test_every_template_ships_as_package_data():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["envharness.prompts"]
    for path in (ROOT / "prompts").iterdir():
        if path.suffix in (".md", ".txt"):
            assert any(fnmatch.fnmatch(path.name, p) for p in patterns), path.name
            assert path.stem in prompt_names()


def test_load_prompt_fills_placeholders_once():
    text = load_prompt(
        "designer",
        objective="{hints} stays literal",
        allowed_imports="math, re",
        hints="H!",
        acceptance_rules="R!",
        budget_facts="B!",
    )
    assert "Objective: {hints} stays literal" in text
    assert "It may import only: math, re." in text
    assert text.rstrip().endswith("H!")
    assert '`{"tool": str, "args": dict}`' in text  # braces that are not placeholders survive


def test_load_prompt_raw_and_by_file_name():
    raw = load_prompt("designer")
    assert "{objective}" in raw
    assert load_prompt("designer.md") == raw


def test_load_prompt_errors():
    with pytest.raises(RiggerError, match=r"no prompt named 'writer'; available: designer"):
        load_prompt("writer")
    with pytest.raises(
        RiggerError, match="prompt 'designer' needs values for: acceptance_rules, allowed_imports"
    ):
        load_prompt("designer", objective="auto")
    with pytest.raises(RiggerError, match="expected a prompt name as a str"):
        load_prompt(None)  # type: ignore[arg-type]


def test_designer_prompt_teaches_the_method():
    text = load_prompt("designer")
    for signature in (
        "filter_action(self, action, state) -> dict | str",
        "modify_transition(self, action, observation, state) -> str",
        "filter_observation(self, observation, state) -> str",
    ):
        assert signature in text
    for hook in HOOKS:
        assert f"def {hook}(self, " in text
    for idea in (
        "replayed through the environment",  # Setups after reset
        "step budget is unchanged",
        "A fresh `_Rules()` instance is created for every episode",
        "Look before you decide",
        "whether to scaffold or to harden",
        "statistics of the K baseline rollouts",
        "never from one trajectory",
        "Never make the task unsolvable",
        "teaches it nothing",
        "Prefer small, local changes to blanket bans",
        "dry_run_setups",
        "check_rules",
        "submit_candidate(rules_code, in_env_actions, knobs, link_task_ids, rationale)",
        "Submit once",
        "read the feedback on your earlier attempts",
        "get_stage_candidates",
        "list_sibling_tasks",
        "check_rules with your rules_code and the candidate's in_env_actions",
        "cannot change the reward",
    ):
        assert idea in text, idea


def test_designer_prompt_lists_exactly_the_allowed_imports():
    text = load_prompt(
        "designer",
        objective="auto",
        allowed_imports=", ".join(sorted(ALLOWED_IMPORTS)),
        hints="",
        acceptance_rules="",
        budget_facts="",
    )
    line = next(line for line in text.splitlines() if "It may import only:" in line)
    listed = line.split("It may import only: ", 1)[1].split(". ", 1)[0]
    assert set(listed.split(", ")) == set(ALLOWED_IMPORTS)


def test_diagnoser_prompt_asks_for_the_structured_diagnosis():
    text = load_prompt("diagnoser")
    for direction in ("`scaffold`", "`harden`", "`fix-behaviour`", "`none`"):
        assert direction in text
    for idea in ("episode and step numbers", "the repeated action", "quoted", "not from one"):
        assert idea in text, idea


def test_toy24_hints_describe_the_real_state():
    hints = load_hints("toy24")
    assert hints.startswith("# About this environment: Toy24")
    env = load_bridge("toy24", task_id="4-4-10-10")
    try:
        properties = env.env_state_schema()["properties"]
        tools = {tool.name for tool in env.tools()}
    finally:
        env.close()
    for key in properties:
        assert f"`{key}`" in hints, key
    for tool in tools:
        assert f"`{tool}(" in hints, tool


@pytest.mark.parametrize("name", ["nope", "", "../designer", "toy24/../x", 24])
def test_load_hints_is_empty_without_a_hint_file(name):
    assert load_hints(name) == ""  # type: ignore[arg-type]


def test_docstring_examples():
    result = doctest.testmod(importlib.import_module("envharness.prompts"))
    assert result.failed == 0 and result.attempted > 0


BRIDGE_TASKS = [
    ("toy24", "4-4-10-10", {}),
    ("spreadsheet", "sales-line-totals", {}),
    ("docqa", "ar23-employees", {}),
    ("swe", "intervals-touching", {"runtime": "local"}),
    ("gymnasium", "FrozenLake-v1", {}),
    ("textworld", "tw-s5-o10-q5-seed0", {}),
    ("webshop", "ws01", {}),
]


def test_bridge_hints_ship_beside_each_bridge_not_here():
    from envharness.bridges import get_bridge

    assert not [name for name in prompt_names() if name.startswith("hints")]
    for bridge in BUILTIN_BRIDGES:
        module = importlib.import_module(f"envharness.bridges.{bridge}.hints")
        assert get_bridge(bridge).designer_hints() == module.HINTS, bridge
        assert load_hints(bridge) == module.HINTS.strip(), bridge


def test_every_builtin_bridge_has_hints():
    from envharness.bridges import list_bridges

    for bridge in BUILTIN_BRIDGES:
        assert bridge in list_bridges()
        hints = load_hints(bridge)
        assert hints.startswith("# About this environment: "), bridge
        assert len(hints) < 2600, bridge  # short: they go into every designer prompt


@pytest.mark.parametrize(("bridge", "task_id", "options"), BRIDGE_TASKS)
def test_bridge_hints_name_the_real_state_and_tools(bridge, task_id, options):
    from envharness.errors import EnvHarnessError

    try:
        env = load_bridge(bridge, task_id=task_id, **options)
    except (EnvHarnessError, ImportError) as e:
        pytest.skip(f"{bridge} cannot be loaded here: {e}")
    try:
        properties = env.env_state_schema()["properties"]
        tools = [tool.name for tool in env.tools()]
    finally:
        env.close()
    hints = load_hints(bridge)
    assert [key for key in properties if f"`{key}`" not in hints] == []
    if bridge == "gymnasium":  # tools listed by family: `move_left/down/right/up`
        tools = [tool for tool in tools if not tool.startswith("move_")]
        assert "`move_left/down/right/up`" in hints
    assert [tool for tool in tools if f"`{tool}(" not in hints] == []
