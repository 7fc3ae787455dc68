"""Conversions between integers and Roman numerals (1 to 3999)."""

_NUMERALS = (
    (1000, "M"),
    (500, "D"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
)
_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def to_roman(number):
    """Returns the Roman numeral of ``number``, in canonical form.

    Raises:
        TypeError: If ``number`` is not an int.
        ValueError: If ``number`` is outside 1..3999.
    """
    if isinstance(number, bool) or not isinstance(number, int):
        raise TypeError(f"expected an int, got {type(number).__name__}")
    if not 1 <= number <= 3999:
        raise ValueError(f"{number} is outside 1..3999")
    parts = []
    for value, letters in _NUMERALS:
        count, number = divmod(number, value)
        parts.append(letters * count)
    return "".join(parts)


def from_roman(text):
    """Returns the integer a Roman numeral stands for (upper or lower case).

    Raises:
        ValueError: If ``text`` holds anything but the letters I, V, X, L, C, D and M.
    """
    letters = text.strip().upper()
    if not letters or any(letter not in _VALUES for letter in letters):
        raise ValueError(f"not a Roman numeral: {text!r}")
    total = 0
    largest = 0
    for letter in reversed(letters):
        value = _VALUES[letter]
        if value < largest:
            total -= value
        else:
            total += value
            largest = value
    return total
