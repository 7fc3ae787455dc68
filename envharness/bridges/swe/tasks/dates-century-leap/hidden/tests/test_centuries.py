import pytest

from tinydate import Date, day_of_year, is_leap, parse_date


@pytest.mark.parametrize("year", [1600, 2000, 2400])
def test_years_divisible_by_400_are_leap(year):
    assert is_leap(year)


@pytest.mark.parametrize("year", [1700, 1800, 1900, 2100])
def test_other_century_years_are_not_leap(year):
    assert not is_leap(year)


def test_february_29_2000():
    assert parse_date("2000-02-29") == Date(2000, 2, 29)
    assert day_of_year(Date(2000, 12, 31)) == 366
