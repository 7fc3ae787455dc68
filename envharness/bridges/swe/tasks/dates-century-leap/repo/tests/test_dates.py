import pytest

from tinydate import Date, day_of_year, days_in_month, is_leap, parse_date


def test_parse():
    assert parse_date("2024-03-15") == Date(2024, 3, 15)
    assert parse_date(" 1999-12-31 ").isoformat() == "1999-12-31"


@pytest.mark.parametrize("text", ["2024-3-15", "15/03/2024", "2024-03-15T10:00", ""])
def test_bad_format(text):
    with pytest.raises(ValueError, match="expected YYYY-MM-DD"):
        parse_date(text)


@pytest.mark.parametrize("text", ["2023-02-29", "2024-04-31", "2024-00-10", "2024-13-01"])
def test_days_that_do_not_exist(text):
    with pytest.raises(ValueError):
        parse_date(text)


def test_ordinary_leap_years():
    assert is_leap(2024) and is_leap(1996)
    assert not is_leap(2023) and not is_leap(1900)
    assert parse_date("2024-02-29") == Date(2024, 2, 29)


def test_days_in_month():
    assert [days_in_month(2023, m) for m in range(1, 13)] == [
        31,
        28,
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ]


def test_day_of_year():
    assert day_of_year(Date(2023, 1, 1)) == 1
    assert day_of_year(Date(2023, 12, 31)) == 365
    assert day_of_year(Date(2024, 3, 1)) == 61
