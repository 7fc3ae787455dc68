"""Knobs in rules code: which constants are knobs, how values are applied, and ``Rules(knobs=)``."""

from __future__ import annotations

import math

import pytest
from conftest import combine

from envharness import Action, RulesError
from envharness.harness import Rules
from envharness.harness.knobs import apply_knobs, rules_knobs
from envharness.harness.spec import HarnessSpec
from envharness.sandbox import rules_sha256

MANY = '''"""Rules with every kind of module-level assignment."""
import random

DROP_P = 0.3  # each action fails with this probability
MAX_CHARS = 400
K2 = 1e-3
lower = 0.5
NAME = "DROP_P = 0.9"
FLAG = True
PAIR_A, PAIR_B = 1, 2
TYPED: int = 3
SCALED = DROP_P * 2


class _Rules:
    INSIDE = 5

    def filter_action(self, action, state):
        LOCAL = 7
        return action


def helper():
    INNER = 9
    return INNER
'''

BLOCK_UNDO = """
BLOCK = 1


class _Rules:
    def filter_action(self, action, state):
        if BLOCK and action["tool"] == "undo":
            return "Undo is disabled in this variant."
        return action
"""


def test_rules_knobs_finds_only_upper_case_module_level_numbers():
    assert rules_knobs(MANY) == {"DROP_P": 0.3, "MAX_CHARS": 400.0, "K2": 0.001, "TYPED": 3.0}
    assert rules_knobs("BIAS = -0.2\n") == {"BIAS": -0.2}  # signed literals count
    assert rules_knobs("class _Rules:\n    pass\n") == {}


def test_rules_knobs_rejects_code_that_does_not_parse():
    with pytest.raises(RulesError, match=r"does not parse \(line 1\)"):
        rules_knobs("DROP_P = = 0.3\n")


def test_apply_knobs_rewrites_only_the_literals():
    out = apply_knobs(MANY, {"DROP_P": 0.45, "MAX_CHARS": 250})
    expected = MANY.replace("DROP_P = 0.3  #", "DROP_P = 0.45  #").replace(
        "MAX_CHARS = 400", "MAX_CHARS = 250"
    )
    assert out == expected
    assert 'NAME = "DROP_P = 0.9"' in out  # a string that looks like a knob is left alone
    assert rules_knobs(out) == {"DROP_P": 0.45, "MAX_CHARS": 250.0, "K2": 0.001, "TYPED": 3.0}
    namespace: dict = {}
    exec(out, namespace)  # the rewritten code still runs, and reads the new values
    assert (namespace["DROP_P"], namespace["SCALED"], namespace["MAX_CHARS"]) == (0.45, 0.9, 250)


def test_apply_knobs_keeps_literal_types_and_handles_shared_lines():
    assert apply_knobs("N = 4\n", {"N": 6.0}) == "N = 6\n"  # an int knob stays an int
    assert apply_knobs("N = 4\n", {"N": 6.5}) == "N = 6.5\n"
    assert apply_knobs("P = 0.5\n", {"P": 1}) == "P = 1.0\n"
    assert apply_knobs("A = 1; B = 20\n", {"A": 300, "B": 4}) == "A = 300; B = 4\n"
    # ast offsets count UTF-8 bytes: a non-ASCII character earlier on the line must not shift.
    assert apply_knobs('NOTE = "café"; P = 0.5\n', {"P": 0.25}) == 'NOTE = "café"; P = 0.25\n'
    assert apply_knobs(MANY, {}) is MANY


def test_apply_knobs_after_a_form_feed_page_break():
    code = "P = 0.5\n\x0c\n# -- section two --\nQ = 2\n"
    assert apply_knobs(code, {"Q": 3}) == "P = 0.5\n\x0c\n# -- section two --\nQ = 3\n"


def test_apply_knobs_unknown_name_lists_the_declared_knobs():
    with pytest.raises(RulesError, match="no knob 'LOWER'.*declares: DROP_P, K2, MAX_CHARS"):
        apply_knobs(MANY, {"LOWER": 0.2})
    with pytest.raises(RulesError, match="no knob 'INSIDE'"):
        apply_knobs(MANY, {"INSIDE": 2})
    with pytest.raises(RulesError, match="declares: none"):
        apply_knobs("class _Rules:\n    pass\n", {"DROP_P": 0.2})


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, True, "0.4", None])
def test_apply_knobs_rejects_values_that_are_not_finite_numbers(value):
    with pytest.raises(RulesError, match="expected knob DROP_P to be a finite number"):
        apply_knobs(MANY, {"DROP_P": value})


def test_apply_knobs_rewrites_a_parenthesised_value_in_place():
    assert apply_knobs("P = (\n    0.5\n)\n", {"P": 0.2}) == "P = (\n    0.2\n)\n"


def _undo_is_blocked(env) -> bool:
    env.reset(seed=0)
    env.step(combine("10", "*", "10"))
    before = env.get_env_state()
    result = env.step(Action("undo"))
    blocked = result.info.get("blocked", False)
    assert blocked == (env.get_env_state() == before)  # blocked means the env was not stepped
    return blocked


def test_rules_env_behaves_by_the_knob_and_its_spec_round_trips(make_toy):
    default = Rules(make_toy(), BLOCK_UNDO)
    opened = Rules(make_toy(), BLOCK_UNDO, knobs={"BLOCK": 0})
    rebuilt = None
    try:
        assert _undo_is_blocked(default)
        assert not _undo_is_blocked(opened)
        assert opened.knobs == {"BLOCK": 0}
        assert opened.rules_code == BLOCK_UNDO  # stored as written
        assert opened.rules_sha256 == rules_sha256(BLOCK_UNDO) == default.rules_sha256
        assert "knobs" not in default.component_config()

        spec = HarnessSpec.from_env(opened)
        config = spec.components[-1].config
        assert config == {"rules_code": BLOCK_UNDO, "sha256": rules_sha256(BLOCK_UNDO),
                          "knobs": {"BLOCK": 0}}  # fmt: skip
        assert (
            spec.spec_id != HarnessSpec.from_env(default).spec_id
        )  # the knob value is part of the identity

        again = HarnessSpec.from_json(spec.to_json())
        assert again == spec
        rebuilt = again.build()
        assert isinstance(rebuilt, Rules)
        assert rebuilt.knobs == {"BLOCK": 0}
        assert rebuilt.rules_sha256 == rules_sha256(BLOCK_UNDO)
        assert not _undo_is_blocked(rebuilt)
    finally:
        for env in (default, opened, rebuilt):
            if env is not None:
                env.close()


def test_knob_can_switch_a_rule_on(make_toy):
    env = Rules(make_toy(), BLOCK_UNDO.replace("BLOCK = 1", "BLOCK = 0"), knobs={"BLOCK": 1})
    try:
        assert _undo_is_blocked(env)
    finally:
        env.close()


def test_rules_rejects_bad_knobs(make_toy):
    with pytest.raises(RulesError, match="no knob 'DROP_P'.*declares: BLOCK"):
        Rules(make_toy(), BLOCK_UNDO, knobs={"DROP_P": 0.3})
    with pytest.raises(RulesError, match="expected knobs to be a dict, got list"):
        Rules(make_toy(), BLOCK_UNDO, knobs=[("BLOCK", 0)])
    with pytest.raises(RulesError, match="finite number"):
        Rules(make_toy(), BLOCK_UNDO, knobs={"BLOCK": math.nan})
