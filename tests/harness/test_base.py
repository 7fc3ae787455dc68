from __future__ import annotations

import pytest
from conftest import SOLVE_4_4_10_10, combine

from envharness import EpisodeError, SpecError
from envharness.harness import EnvHarness, Setups
from envharness.harness.base import EnvHarness as BaseHarness


def test_requires_an_env():
    with pytest.raises(TypeError, match="expected an ActionableEnv"):
        EnvHarness("not an env")


def test_delegates_explicitly_and_reaches_the_bridge(toy):
    env = EnvHarness(toy)
    assert env.unwrapped is toy
    assert env.task_id == toy.task_id
    assert env.instruction == toy.instruction
    assert env.max_steps == toy.max_steps
    assert env.bridge_name == "toy24"
    assert [t.name for t in env.tools()] == [t.name for t in toy.tools()]
    assert env.env_state_schema() == toy.env_state_schema()
    # No __getattr__ magic: bridge-only attributes are reached through `unwrapped`.
    assert not hasattr(BaseHarness, "__getattr__")
    with pytest.raises(AttributeError):
        env.oracle_cache_that_does_not_exist  # noqa: B018


def test_nested_repr(toy):
    stack = EnvHarness(Setups(toy, [combine("10", "*", "10")]))
    assert repr(stack) == f"<EnvHarness<Setups{toy!r}>>"


def test_step_before_reset_raises(toy):
    with pytest.raises(EpisodeError, match="reset"):
        EnvHarness(toy).step(combine("4", "+", "4"))


def test_delegated_episode_matches_the_bridge(make_toy):
    bare, wrapped = make_toy(), EnvHarness(make_toy())
    assert bare.reset(seed=0) == wrapped.reset(seed=0)
    for action in SOLVE_4_4_10_10:
        assert bare.step(action) == wrapped.step(action)
    assert bare.evaluate() == wrapped.evaluate()
    assert wrapped.evaluate().success


def test_save_state_replays_the_episode(toy):
    env = Setups(toy, [combine("10", "*", "10")])
    env.reset(seed=3)
    env.step(combine("100", "-", "4"))
    snapshot = env.save_state()
    assert snapshot["seed"] == 3
    assert snapshot["actions"] == [combine("100", "-", "4").to_dict()]
    restored = EnvHarness.from_state(snapshot)
    try:
        assert repr(restored) == repr(env)
        assert restored.get_env_state() == env.get_env_state()
        assert restored.observe() == env.observe()
        assert restored.step(combine("96", "/", "4")) == env.step(combine("96", "/", "4"))
    finally:
        restored.close()


def test_from_state_rejects_a_bridge_snapshot(toy):
    toy.reset()
    with pytest.raises(SpecError, match="harness snapshot"):
        EnvHarness.from_state(toy.save_state())
