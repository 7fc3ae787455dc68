from __future__ import annotations

from typing import Any

import pytest

import envharness
from envharness.bridges import registry
from envharness.core import StepResult
from envharness.graph.limits import ORACLE_TRIES as _ORACLE_TRIES
from envharness.graph.nodes.validator import _oracle_problem
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


BLOCK_EVERY_COMBINE = (
    "class _Rules:\n"
    "    def filter_action(self, action, state):\n"
    "        if action['tool'] == 'combine':\n"
    "            return 'Combining is not allowed.'\n"
    "        return action\n"
)
BLOCK_THE_FIRST_TWELVE = (
    "class _Rules:\n"
    "    def __init__(self):\n"
    "        self.seen = 0\n"
    "    def filter_action(self, action, state):\n"
    "        self.seen += 1\n"
    "        if self.seen <= 12:\n"
    "            return 'Not yet.'\n"
    "        return action\n"
)


def toy24_with(rules_code: str) -> tuple[HarnessSpec, HarnessSpec]:
    from envharness.graph.records import Candidate

    base = HarnessSpec(BridgeSpec("toy24", "4-4-10-10"))
    return Candidate(rules_code=rules_code).apply(base), base


def test_the_oracle_check_tells_unsolvable_from_out_of_steps():
    from envharness.graph.nodes.validator import oracle_check

    stuck = oracle_check(*toy24_with(BLOCK_EVERY_COMBINE))
    assert stuck["passed"] is False and stuck["problem"] == "unsolvable"
    assert "made the task unsolvable" in stuck["message"]
    assert "seed 0: budget after 12/12 steps" in stuck["message"]  # how each seed ended
    assert [e["end_reason"] for e in stuck["episodes"]] == ["budget"] * _ORACLE_TRIES
    assert stuck["longer"]["success"] is False and stuck["longer"]["max_steps"] == 48
    assert stuck["plain"][0]["success"] and "in 3 steps" in stuck["message"]

    slow = oracle_check(*toy24_with(BLOCK_THE_FIRST_TWELVE))
    assert slow["passed"] is False and slow["problem"] == "out_of_steps"
    assert "ran out of steps on all 3 seeds" in slow["message"]
    assert "unsolvable" not in slow["message"]
    assert (
        "12 blocked" in slow["message"]
        and "blocked actions use up the step budget" in (slow["message"])
    )
    assert slow["longer"]["success"] and 12 < slow["longer"]["steps"] <= 48


def test_a_passing_oracle_check_carries_its_statistics():
    from envharness.graph.nodes.validator import oracle_check

    toy = HarnessSpec(BridgeSpec("toy24", "4-4-10-10"))
    record = oracle_check(toy, toy)
    assert record["passed"] and record["problem"] is None
    assert record["episodes"][0] == {
        "seed": 0, "success": True, "end_reason": "terminated", "steps": 3, "max_steps": 12,
        "blocked": 0, "invalid": 0, "error": None,
    }  # fmt: skip
    assert "solved after 3/12 steps" in record["message"]
