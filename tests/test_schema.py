from __future__ import annotations

import pytest

from envharness.schema import check_arguments, compile_checker, gemini_schema_problems

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "mode": {"type": "string", "enum": ["a", "b"]},
        "nested": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
    },
    "required": ["name"],
}


def test_a_rich_schema_is_in_the_subset():
    assert gemini_schema_problems(SCHEMA) == []


def test_good_arguments_pass():
    args = {
        "name": "n",
        "count": 3,
        "ratio": 0.5,
        "flag": True,
        "tags": ["x"],
        "mode": "a",
        "nested": {"x": 1},
    }
    assert check_arguments(args, SCHEMA) == []
    assert check_arguments({"name": "n", "count": 2.0}, SCHEMA) == []  # integral float is an int
    assert compile_checker(SCHEMA)(args) and compile_checker(SCHEMA)({"name": "n", "count": 2.0})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "args: missing required argument 'name'"),
        ({"name": 1}, "args.name: expected string, got int 1"),
        ({"name": "n", "count": True}, "args.count: expected integer, got bool True"),
        ({"name": "n", "count": 1.5}, "args.count: expected integer"),
        ({"name": "n", "ratio": float("nan")}, "args.ratio: expected number"),
        ({"name": "n", "tags": ["x", 2]}, "args.tags[1]: expected string"),
        ({"name": "n", "mode": "c"}, "args.mode: expected one of ['a', 'b'], got 'c'"),
        ({"name": "n", "nested": {}}, "args.nested: missing required argument 'x'"),
        ({"name": "n", "colour": "red"}, "unexpected argument 'colour'"),
        ("name", "args: expected object, got str"),
    ],
)
def test_bad_arguments_are_named(args, message):
    problems = check_arguments(args, SCHEMA)
    assert any(message in p for p in problems), problems
    assert compile_checker(SCHEMA)(args) is False  # the fast path agrees


def test_problems_name_the_path():
    bad = {
        "type": "object",
        "properties": {
            "a": {"type": "object", "properties": {"b": {"oneOf": [], "type": "string"}}}
        },
    }
    assert gemini_schema_problems(bad) == ["parameters.a.b: keyword 'oneOf' is not allowed"]
    assert gemini_schema_problems("x") == ["parameters: expected a JSON-Schema object, got str"]
    assert (
        "'enum' must be a non-empty list"
        in gemini_schema_problems({"type": "string", "enum": []})[0]
    )
