from __future__ import annotations

from typing import Any

import pytest

import envharness
from envharness.bridges import registry
from envharness.core import StepResult
from envharness.graph.nodes.validator import _ORACLE_TRIES, _oracle_problem
from envharness.harness.spec import BridgeSpec, HarnessSpec
from envharness.testing import FakeEnv


class UnluckyFake(FakeEnv):
    """Fails the first step on the ``unlucky`` seeds: a stochastic env the oracle can lose."""

    def __init__(self, task_id: str = "fake", *, unlucky: tuple[int, ...] = (), **kw: Any) -> None:
        super().__init__(task_id, **kw)
        self.unlucky = tuple(unlucky)
        self._seed: int | None = None

    def bridge_options(self) -> dict[str, Any]:
        return {**super().bridge_options(), "unlucky": list(self.unlucky)}

    def reset(self, *, seed: int | None = None):
        self._seed = seed
        return super().reset(seed=seed)

    def step(self, action):
        if self._seed in self.unlucky and self.state["steps"] == 0:
            self.state.update(steps=1, done=True)  # the episode ends, lost
            self.observation = "You slipped."
            return StepResult(self.observation, 0.0, True, False, {})
        return super().step(action)


@pytest.fixture(autouse=True)
def unlucky_bridge():
    envharness.register("unlucky", UnluckyFake)
    yield
    registry._REGISTERED.pop("unlucky", None)


def spec(*unlucky: int) -> HarnessSpec:
    return HarnessSpec(BridgeSpec("unlucky", "fake", {"unlucky": list(unlucky)}))


def test_one_lost_seed_does_not_make_a_candidate_unsolvable():
    # the oracle loses seed 0 of the candidate but wins seed 1: not proof of unsolvability
    assert _oracle_problem(spec(0), spec()) is None
    assert _oracle_problem(spec(*range(_ORACLE_TRIES - 1)), spec()) is None


def test_a_candidate_the_oracle_loses_on_every_seed_is_unsolvable():
    problem = _oracle_problem(spec(*range(_ORACLE_TRIES)), spec())
    assert problem is not None and f"on {_ORACLE_TRIES} seeds" in problem
    assert "made the task unsolvable" in problem


def test_the_check_counts_only_when_the_oracle_solves_the_plain_task():
    always = tuple(range(_ORACLE_TRIES))
    assert _oracle_problem(spec(*always), spec(*always)) is None


def test_a_knob_candidate_is_checked_at_its_easiest_setting():
    from envharness.graph.heuristic.design_context import DesignContext
    from envharness.graph.heuristic.templates import drop_actions
    from envharness.graph.nodes.validator import _easiest

    base = HarnessSpec(BridgeSpec("toy24", "4-4-10-10"))
    context = DesignContext.from_spec(base, [], siblings=[])
    candidate = drop_actions(context, 0.9)  # starts where even the oracle rarely gets through
    assert _oracle_problem(candidate.apply(base), base) is not None
    easiest = _easiest(candidate, base)
    assert easiest.components[-1].config["knobs"] == {"DROP_P": 0.0}
    assert _oracle_problem(easiest, base) is None
