from tinyini import get, parse


def test_value_with_equals_sign():
    sections = parse("[db]\nurl = postgres://h/db?sslmode=require\n")
    assert get(sections, "db", "url") == "postgres://h/db?sslmode=require"


def test_value_with_several_equals_signs():
    assert parse("[calc]\nrule = a==b=c\n") == {"calc": {"rule": "a==b=c"}}


def test_spaces_around_first_equals_only():
    assert parse("[x]\nk= v = w \n") == {"x": {"k": "v = w"}}
