import pytest

from humantime import format_duration


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(60, "1m 00s"), (3600, "1h 00m 00s"), (7200, "2h 00m 00s"), (61, "1m 01s"), (59, "59s")],
)
def test_whole_units(seconds, text):
    assert format_duration(seconds) == text
