import pytest

from tinyini import ParseError, get, parse

SAMPLE = """
# a comment
[server]
Host = example.org
port=8080

; another comment
[paths]
data = /var/lib/app
"""


def test_sections_and_keys():
    assert parse(SAMPLE) == {
        "server": {"host": "example.org", "port": "8080"},
        "paths": {"data": "/var/lib/app"},
    }


def test_get():
    sections = parse(SAMPLE)
    assert get(sections, "server", "HOST") == "example.org"
    assert get(sections, "server", "missing", "x") == "x"
    assert get(sections, "nowhere", "port") is None


def test_last_value_wins():
    assert parse("[a]\nk = 1\nk = 2\n") == {"a": {"k": "2"}}


def test_repeated_section_is_merged():
    assert parse("[a]\nx = 1\n[b]\n[a]\ny = 2\n") == {"a": {"x": "1", "y": "2"}, "b": {}}


def test_empty_value():
    assert parse("[a]\nk =\n") == {"a": {"k": ""}}


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("[a]\njust words\n", 2, "expected 'key = value'"),
        ("k = v\n", 1, "before the first section"),
        ("[ ]\n", 1, "empty section name"),
        ("[a]\n = v\n", 2, "empty key"),
    ],
)
def test_errors(text, line, reason):
    with pytest.raises(ParseError, match=reason) as caught:
        parse(text)
    assert caught.value.line == line
