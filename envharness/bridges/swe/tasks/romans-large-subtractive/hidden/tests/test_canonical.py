import pytest

from romans import from_roman, to_roman


@pytest.mark.parametrize(
    ("number", "numeral"),
    [(400, "CD"), (444, "CDXLIV"), (900, "CM"), (1994, "MCMXCIV"), (3999, "MMMCMXCIX")],
)
def test_hundreds_use_subtractive_pairs(number, numeral):
    assert to_roman(number) == numeral


def test_canonical_round_trip():
    for number in range(1, 4000):
        numeral = to_roman(number)
        assert from_roman(numeral) == number
        assert "CCCC" not in numeral and "DCCCC" not in numeral
