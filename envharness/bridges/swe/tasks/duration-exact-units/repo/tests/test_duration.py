import pytest

from humantime import format_duration, parse_duration


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (42, "42s"), (125, "2m 05s"), (3599, "59m 59s"), (3725, "1h 02m 05s")],
)
def test_format(seconds, text):
    assert format_duration(seconds) == text


def test_many_hours():
    assert format_duration(26 * 3600 + 61) == "26h 01m 01s"


@pytest.mark.parametrize("seconds", [-1, 1.5, "10", True])
def test_format_rejects(seconds):
    with pytest.raises(ValueError):
        format_duration(seconds)


def test_parse():
    assert parse_duration("1h 2m 5s") == 3725
    assert parse_duration("90s") == 90
    assert parse_duration(" 2M ") == 120


@pytest.mark.parametrize("text", ["", "5 minutes", "1h and 2m", "h"])
def test_parse_rejects(text):
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


def test_round_trip():
    for seconds in range(0, 20000, 37):
        assert parse_duration(format_duration(seconds)) == seconds
