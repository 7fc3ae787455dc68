import pytest

from romans import from_roman, to_roman


@pytest.mark.parametrize(
    ("number", "numeral"),
    [(1, "I"), (3, "III"), (4, "IV"), (9, "IX"), (14, "XIV"), (40, "XL"), (90, "XC"), (99, "XCIX")],
)
def test_small_numbers(number, numeral):
    assert to_roman(number) == numeral


def test_thousands():
    assert to_roman(1000) == "M"
    assert to_roman(2023) == "MMXXIII"
    assert to_roman(3888) == "MMMDCCCLXXXVIII"


def test_from_roman():
    assert from_roman("XLII") == 42
    assert from_roman("mmxxiii") == 2023
    assert from_roman("MCMXCIV") == 1994


def test_round_trip_below_four_hundred():
    for number in range(1, 400):
        assert from_roman(to_roman(number)) == number


@pytest.mark.parametrize("number", [0, -5, 4000])
def test_out_of_range(number):
    with pytest.raises(ValueError, match="outside"):
        to_roman(number)


def test_rejects_non_integers():
    with pytest.raises(TypeError):
        to_roman(3.0)
    with pytest.raises(TypeError):
        to_roman(True)


@pytest.mark.parametrize("text", ["", "ABC", "X I"])
def test_rejects_garbage(text):
    with pytest.raises(ValueError, match="not a Roman numeral"):
        from_roman(text)
