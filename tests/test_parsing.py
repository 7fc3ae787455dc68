from __future__ import annotations

import pytest

from envharness import Action, InvalidActionError, ToolSpec
from envharness.parsing import find_json_object, parse_action, tool_lines, tool_usage

COMBINE = ToolSpec(
    "combine",
    "Combine two numbers.",
    {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "op": {"type": "string", "enum": ["+", "-", "*", "/"]},
            "b": {"type": "string"},
        },
        "required": ["a", "op", "b"],
    },
)
UNDO = ToolSpec("undo", "Take back the last combine.", {"type": "object", "properties": {}})
TOY = [COMBINE, UNDO]

ACT = ToolSpec(
    "act",
    "Run a text command.",
    {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)
INVENTORY = ToolSpec("inventory", "List what you carry.", {"type": "object", "properties": {}})
TEXT = [ACT, INVENTORY]

TYPED = ToolSpec(
    "move",
    "Move a piece.",
    {
        "type": "object",
        "properties": {
            "row": {"type": "integer"},
            "speed": {"type": "number"},
            "fast": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "meta": {"type": "object", "properties": {}},
            "note": {"type": "string"},
        },
        "required": ["row"],
    },
)


def combine(a: str, op: str, b: str) -> Action:
    return Action("combine", {"a": a, "op": op, "b": b})


# -- forms -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "combine 4 * 6",
        "  combine   4   *   6  ",
        "combine a=4 op=* b=6",
        "combine 4 op=* 6",
        'combine "4" "*" "6"',
        "combine(4, '*', 6)",
        'combine(a="4", op="*", b="6")',
        "combine (4, '*', b=6)",
        '{"tool": "combine", "args": {"a": "4", "op": "*", "b": "6"}}',
        '{"tool": "combine", "args": {"a": 4, "op": "*", "b": 6}}',
        '{"name": "combine", "arguments": {"a": "4", "op": "*", "b": "6"}}',
        '{"name": "combine", '
        '"arguments": "{\\"a\\": \\"4\\", \\"op\\": \\"*\\", \\"b\\": \\"6\\"}"}',
        '{"type": "function", "function": {"name": "combine", "arguments": {"a": "4", "op": "*", '
        '"b": "6"}}}',
    ],
)
def test_every_form_gives_the_same_action(text):
    assert parse_action(text, TOY) == combine("4", "*", "6")


@pytest.mark.parametrize(
    "text",
    [
        "undo",
        "undo()",
        '{"tool": "undo"}',
        '{"tool": "undo", "args": {}}',
        '{"name": "undo", "arguments": ""}',
        '{"name": "undo", "arguments": null}',
    ],
)
def test_tools_without_parameters(text):
    assert parse_action(text, TOY) == Action("undo", {})


def test_fractions_and_negative_words_stay_strings():
    assert parse_action("combine 8/3 - -1", TOY) == combine("8/3", "-", "-1")


def test_text_tool_takes_the_rest_of_the_line_verbatim():
    assert parse_action("act go north", TEXT) == Action("act", {"command": "go north"})
    assert parse_action("act  take the 'old' key ", TEXT) == Action(
        "act", {"command": "take the 'old' key"}
    )
    assert parse_action("act it's here", TEXT) == Action("act", {"command": "it's here"})


def test_text_tool_unquotes_a_single_quoted_argument():
    assert parse_action('act "go north"', TEXT) == Action("act", {"command": "go north"})
    assert parse_action("act 'go' 'north'", TEXT) == Action("act", {"command": "'go' 'north'"})
    assert parse_action("act 'unbalanced", TEXT) == Action("act", {"command": "'unbalanced"})


def test_a_line_that_is_not_a_tool_goes_to_the_single_text_tool():
    assert parse_action("go north", TEXT) == Action("act", {"command": "go north"})
    assert parse_action("look (carefully)", TEXT) == Action("act", {"command": "look (carefully)"})
    assert parse_action("inventory", TEXT) == Action("inventory", {})


def test_call_syntax_on_a_text_tool():
    assert parse_action("act('help')", TEXT) == Action("act", {"command": "help"})
    assert parse_action("act(look)", TEXT) == Action("act", {"command": "look"})


def test_words_are_converted_to_the_declared_types():
    action = parse_action('move 3 2.5 yes \'["a", "b"]\' {} "hello there"', [TYPED])
    assert action == Action(
        "move",
        {
            "row": 3,
            "speed": 2.5,
            "fast": True,
            "tags": ["a", "b"],
            "meta": {},
            "note": "hello there",
        },
    )
    assert parse_action("move 4.0 7 off", [TYPED]).args == {"row": 4, "speed": 7, "fast": False}
    assert parse_action("move row=2", [TYPED]).args == {"row": 2}
    assert parse_action("move(1e1, fast=1)", [TYPED]).args == {"row": 10, "fast": True}
    assert parse_action('{"tool": "move", "args": {"row": "5"}}', [TYPED]).args == {"row": 5}


def test_call_syntax_literals_become_strings_for_string_parameters():
    tool = ToolSpec(
        "label", "", {"type": "object", "properties": {"text": {"type": "string"}}, "required": []}
    )
    assert parse_action("label(True)", [tool]).args == {"text": "true"}
    assert parse_action("label(2.5)", [tool]).args == {"text": "2.5"}


def test_optional_parameters_may_be_left_out():
    assert parse_action("move 1", [TYPED]) == Action("move", {"row": 1})


# -- usage -----------------------------------------------------------------------------------------


def test_tool_usage():
    assert tool_usage(COMBINE) == "combine <a> <op> <b>"
    assert tool_usage(UNDO) == "undo"
    assert tool_usage(TYPED) == "move <row> [<speed>] [<fast>] [<tags>] [<meta>] [<note>]"


def test_tool_lines_give_the_usage_and_the_description():
    about = ToolSpec("look", "Look around.\n  Costs   no step.")
    assert tool_lines([about, ToolSpec("wait", "")]) == ["look: Look around.", "wait"]
    assert tool_lines([about], full=True) == ["look: Look around. Costs no step."]


# -- JSON objects in prose -------------------------------------------------------------------------


def test_a_preferred_object_wins_over_an_earlier_one():
    text = 'Plan: {"note": 1}. Now {"tool": "undo", "args": {}} and {"tool": "other"}'
    assert find_json_object(text, prefer=("tool",)) == {"tool": "undo", "args": {}}
    assert find_json_object(text) == {"note": 1}


def test_an_object_nested_in_another_is_found_and_broken_ones_skipped():
    assert find_json_object('{"broken": } {"wrap": {"direction": "harden"}}', ("direction",)) == {
        "direction": "harden"
    }
    assert find_json_object("[1, 2] and {not json}") is None


# -- errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", r"empty input; tools: combine <a> <op> <b> \| undo"),
        ("   ", "empty input"),
        ("jump 4", r"unknown tool 'jump'; tools: combine <a> <op> <b> \| undo"),
        (
            "combine 4 * 6 8",
            r"too many arguments: 4 given, 3 expected; usage: combine <a> <op> <b>",
        ),
        ("combine 4 *", "missing required argument 'b'; usage: combine <a> <op> <b>"),
        ("combine 4 x 6", r"expected one of \['\+', '-', '\*', '/'\], got 'x'"),
        ("combine op=* op=+ 4 6", "parameter 'op' given twice"),
        ("combine 4 * 6 op=+", "too many arguments: 3 given, 2 expected"),
        ("combine '4 * 6", "cannot split the arguments"),
        ("undo now", "too many arguments: 1 given, 0 expected; usage: undo"),
        ("combine(4, '*', 6, 7)", "too many arguments"),
        ("combine(4, '*', c=6)", "unknown parameter 'c'"),
        ("combine(4, '*' 6)", r"cannot read the call combine\(4, '\*' 6\)"),
        ("combine(4)(5)", r"cannot read the call"),
        ("combine(*[4, '*', 6])", r"does not take \*args or \*\*kwargs"),
        ("combine(**{'a': 4})", r"does not take \*args or \*\*kwargs"),
        ("combine(4, '*', 2 + x)", "call syntax takes literal values only, got '2 \\+ x'"),
        ("{not json", r"not valid JSON \(.* at column 2\)"),
        ("[1, 2]", "unknown tool"),
        ('{"tool": "jump"}', r"unknown tool 'jump'; tools: combine <a> <op> <b> \| undo"),
        ('{"name": 3}', "unknown tool 3"),
        ('{"args": {}}', r'expected \{"tool": ..., "args": \{...\}\} or \{"name"'),
        ('{"tool": "undo", "arguments": {}}', r"unexpected keys \['arguments'\]"),
        ('{"tool": "undo", "args": [1]}', "expected the arguments as an object, got list"),
        ('{"name": "undo", "arguments": "{bad"}', "arguments are not valid JSON"),
        ('{"function": []}', r'expected \{"tool"'),
    ],
)
def test_errors_name_the_problem_and_the_usage(text, match):
    with pytest.raises(InvalidActionError, match=match):
        parse_action(text, TOY)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("move x", r"<row> expects integer, got 'x'; usage: move <row>"),
        ("move 1.5", r"<row> expects integer, got '1.5'"),
        ("move 1 nan", "<speed> expects number, got 'nan'"),
        ("move 1 fast", "<speed> expects number, got 'fast'"),
        ("move 1 2 maybe", "<fast> expects boolean, got 'maybe'"),
        ("move 1 2 yes notjson", "<tags> expects a JSON array, got 'notjson'"),
        ("move 1 2 yes {}", r"args.tags: expected array, got dict"),
        ("move(1, fast=2)", "args.fast: expected boolean, got int 2"),
    ],
)
def test_conversion_errors(text, match):
    with pytest.raises(InvalidActionError, match=match):
        parse_action(text, [TYPED])


def test_error_carries_the_tool():
    with pytest.raises(InvalidActionError) as e:
        parse_action("combine 4", TOY)
    assert e.value.tool == "combine"
    with pytest.raises(InvalidActionError) as e:
        parse_action("jump", TOY)
    assert e.value.tool is None


def test_text_tool_needs_its_argument():
    with pytest.raises(InvalidActionError, match="missing required argument 'command'; usage: act"):
        parse_action("act", TEXT)


def test_two_text_tools_make_a_bare_line_ambiguous():
    say = ToolSpec(
        "say", "", {"type": "object", "properties": {"text": {"type": "string"}}, "required": []}
    )
    with pytest.raises(
        InvalidActionError, match=r"unknown tool 'hello'; tools: act <command> \| say"
    ):
        parse_action("hello there", [ACT, say])


def test_no_tools_and_non_text_input():
    with pytest.raises(InvalidActionError, match="there are no tools to call"):
        parse_action("undo", [])
    with pytest.raises(InvalidActionError, match="expected the action as text, got dict"):
        parse_action({"tool": "undo"}, TOY)  # type: ignore[arg-type]
