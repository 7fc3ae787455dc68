"""What a failing hook's error says: the line of the rules code, and the valid keys."""

from __future__ import annotations

import pytest
from sandbox_helpers import ACTION, FAST, STATE

from envharness.errors import RulesError
from envharness.sandbox import RulesSandbox, check_rules_code

MISSING_KEY = (
    "class _Rules:\n"
    "    def filter_action(self, action, state):\n"
    "        room = state['room']\n"
    "        return state['no such key']\n"
)


def test_a_key_error_names_the_line_and_the_state_keys():
    session = RulesSandbox(MISSING_KEY, limits=FAST).start_episode()
    with pytest.raises(RulesError) as caught:
        session.filter_action(ACTION, STATE)
    message = str(caught.value)
    assert message.startswith(
        "hook 'filter_action' failed: raised KeyError: 'no such key' (at line 4 of the rules code)"
    )
    assert 'the keys of `state` are: "room", "step", "inventory"' in message
    assert 'action["args"] the keys: "to"' in message
    session.close()


def test_an_error_in_a_helper_names_the_innermost_rules_line():
    code = (
        "def _ratio(x):\n"
        "    return 1 / x\n"
        "\n"
        "class _Rules:\n"
        "    def filter_observation(self, observation, state):\n"
        "        return observation + str(_ratio(0))\n"
    )
    session = RulesSandbox(code, limits=FAST).start_episode()
    with pytest.raises(RulesError, match=r"raised ZeroDivisionError: .* \(at line 2 of the rules"):
        session.filter_observation("hi", STATE)
    session.close()


def test_other_errors_get_the_line_but_no_key_listing():
    code = "class _Rules:\n    def filter_observation(self, observation, state):\n        x = 1\n"
    code += "        raise ValueError('kaboom')\n"
    session = RulesSandbox(code, limits=FAST).start_episode()
    with pytest.raises(RulesError) as caught:
        session.filter_observation("hi", STATE)
    assert str(caught.value).endswith("raised ValueError: kaboom (at line 4 of the rules code)")
    session.close()


def test_loading_errors_name_the_line():
    code = "class _Rules:\n    def __init__(self):\n        raise ValueError('no')\n"
    with pytest.raises(RulesError, match=r"loading the code raised ValueError: no \(at line 3"):
        RulesSandbox(code, limits=FAST).start_episode()


def test_a_markdown_fence_is_named_as_the_problem():
    fenced = "```python\nclass _Rules:\n    pass\n```\n"
    with pytest.raises(RulesError, match=r"line 1: syntax error .*markdown fence"):
        check_rules_code(fenced)
    with pytest.raises(RulesError, match="fix the code so that it parses"):
        check_rules_code("class _Rules:\n    def x(self\n")
