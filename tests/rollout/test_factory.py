from __future__ import annotations

import importlib.util
import json
import pickle

import pytest

from envharness.errors import DependencyNotInstalled, PolicyError
from envharness.rollout.chat import ChatModelPolicyFactory
from envharness.rollout.factory import POLICY_FORMS, policy_factory
from envharness.rollout.policies import (
    OraclePolicy,
    OraclePolicyFactory,
    RandomPolicy,
    RandomPolicyFactory,
    ScriptedPolicy,
    ScriptedPolicyFactory,
)


def test_oracle_strings():
    assert policy_factory("oracle") == OraclePolicyFactory(1.0)
    assert policy_factory("oracle:0.5") == OraclePolicyFactory(0.5)
    assert policy_factory(" oracle:0 ") == OraclePolicyFactory(0.0)
    policy = policy_factory("oracle:0.25")(7)
    assert isinstance(policy, OraclePolicy) and (policy.skill, policy.seed) == (0.25, 7)


def test_random_and_scripted_strings(tmp_path):
    assert policy_factory("random") == RandomPolicyFactory()
    assert isinstance(policy_factory("random")(1), RandomPolicy)
    script = tmp_path / "moves.jsonl"
    script.write_text(json.dumps({"tool": "undo", "args": {}}) + "\n")
    factory = policy_factory(f"scripted:{script}")
    assert isinstance(factory, ScriptedPolicyFactory)
    assert isinstance(factory(0), ScriptedPolicy) and factory(0).act("").tool == "undo"


def test_factories_pass_through():
    factory = OraclePolicyFactory(0.3)
    assert policy_factory(factory) is factory


def test_every_string_factory_pickles(tmp_path):
    script = tmp_path / "moves.txt"
    script.write_text("undo\n")
    for text in ("oracle", "oracle:0.5", "random", f"scripted:{script}"):
        factory = policy_factory(text)
        assert pickle.loads(pickle.dumps(factory)).describe() == factory.describe()


@pytest.mark.skipif(
    importlib.util.find_spec("langchain_google_genai") is None, reason="no langchain-google-genai"
)
def test_model_string_gives_a_chat_factory():
    factory = policy_factory("google_genai:gemini-2.5-flash")
    assert isinstance(factory, ChatModelPolicyFactory)
    assert pickle.loads(pickle.dumps(factory)).describe() == "google_genai:gemini-2.5-flash"


@pytest.mark.skipif(
    importlib.util.find_spec("langchain_google_genai") is not None,
    reason="langchain-google-genai is installed",
)
def test_model_string_with_missing_package_fails_early():
    with pytest.raises(DependencyNotInstalled, match=r"envharness\[google\]"):
        policy_factory("google_genai:gemini-2.5-flash")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("oracle:abc", r"bad skill 'abc' in 'oracle:abc': expected a number in \[0, 1\]"),
        ("oracle:1.5", r"skill: expected a number in \[0, 1\], got 1.5"),
        ("oracle:nan", r"skill: expected a number in \[0, 1\]"),
        ("random:3", "'random' takes no argument.*accepted forms"),
        ("scripted:", "'scripted:FILE' needs a script file"),
        ("scripted:/no/such/file.txt", "cannot read the script file"),
        ("smart", "unknown policy 'smart'; accepted forms: 'oracle'.*'random'.*'scripted:FILE'"),
        ("", "unknown policy ''; accepted forms"),
        (
            "gpt5:turbo",
            "unknown policy 'gpt5:turbo': unknown model provider 'gpt5'.*accepted forms",
        ),
        (":x", "unknown policy ':x'"),
    ],
)
def test_bad_policy_strings(text, message):
    with pytest.raises(PolicyError, match=message):
        policy_factory(text)


def test_not_a_string():
    with pytest.raises(PolicyError, match="expected a policy string or a policy factory, got int"):
        policy_factory(3)  # type: ignore[arg-type]
    assert "PROVIDER:MODEL" in POLICY_FORMS


def test_model_string_with_installed_provider_gives_a_picklable_chat_factory(monkeypatch):
    import envharness.rollout.chat as chat

    monkeypatch.setattr(chat, "_require_packages", lambda model, provider: None)
    factory = policy_factory("openai:gpt-4o-mini")
    assert isinstance(factory, ChatModelPolicyFactory)
    assert pickle.loads(pickle.dumps(factory)).describe() == "openai:gpt-4o-mini"
