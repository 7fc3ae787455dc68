"""Every harness stack is itself an ActionableEnv and must pass the bridge conformance suite."""

from __future__ import annotations

import pytest
from conftest import combine

from envharness import load_bridge
from envharness.harness import Link, Rules, Setups
from envharness.testing import check_bridge

RULES = """
class _Rules:
    def __init__(self):
        self.count = 0

    def filter_action(self, action, state):
        self.count += 1
        if action["tool"] == "undo" and self.count % 2:
            return "Not now."
        return action

    def filter_observation(self, observation, state):
        return observation + " [" + str(self.count) + "]"
"""


def toy(task_id: str = "4-4-10-10"):
    return load_bridge("toy24", task_id=task_id)


STACKS = {
    "setups": lambda: Setups(toy(), [combine("10", "*", "10")]),
    "rules": lambda: Rules(toy(), RULES),
    "rules-over-setups": lambda: Rules(Setups(toy(), [combine("10", "*", "10")]), RULES),
    "link-sequential": lambda: Link(toy(), toy("1-1-4-6")),
    "link-switch": lambda: Link(toy(), toy("3-3-8-8"), "switch", condition={"after_steps": 2}),
    "link-branch": lambda: Link(
        toy(), {"success": toy("3-3-8-8"), "failure": toy("1-1-4-6")}, "branch"
    ),
    "link-interleave": lambda: Link(toy(), toy("3-3-8-8"), "interleave"),
}


@pytest.mark.parametrize("name", list(STACKS))
def test_stack_passes_check_bridge(name):
    report = check_bridge(STACKS[name])
    assert "determinism" in report.passed and "save_state" in report.passed
    assert report.actions, "the suite played some actions"
