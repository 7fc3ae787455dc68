import pytest

from wraptext import fill, indent, wrap


def test_short_text_is_one_line():
    assert wrap("hello world", 20) == ["hello world"]


def test_one_word_per_line():
    assert wrap("hello world", 5) == ["hello", "world"]


def test_whitespace_collapses():
    assert wrap("  a \n b\t\tc  ", 10) == ["a b c"]


def test_empty_text():
    assert wrap("", 10) == []
    assert wrap("   ", 10) == []


def test_long_word_gets_its_own_line():
    assert wrap("a abcdefghij b", 4) == ["a", "abcdefghij", "b"]


def test_fill():
    assert fill("the quick brown fox", 10) == "the quick\nbrown fox"


def test_indent():
    assert indent("one two three", "> ", 9) == "> one two\n> three"


@pytest.mark.parametrize("width", [0, -3, 2.5, True])
def test_bad_width(width):
    with pytest.raises(ValueError, match="positive int"):
        wrap("text", width)
