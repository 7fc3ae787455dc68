import pytest

from wraptext import fill, wrap

TEXT = (
    "It was a bright cold day in April, and the clocks were striking thirteen. Winston Smith, "
    "his chin nuzzled into his breast in an effort to escape the vile wind, slipped quickly "
    "through the glass doors of Victory Mansions."
)


def test_exact_fit():
    assert wrap("aaa bbb", 7) == ["aaa bbb"]
    assert wrap("aaa bbb", 6) == ["aaa", "bbb"]


@pytest.mark.parametrize("width", range(8, 41))
def test_lines_never_exceed_width(width):
    lines = wrap(TEXT, width)
    assert all(len(line) <= width or " " not in line for line in lines)
    assert " ".join(lines) == " ".join(TEXT.split())


def test_fill_boundary():
    assert fill("ab cd ef", 5) == "ab cd\nef"
