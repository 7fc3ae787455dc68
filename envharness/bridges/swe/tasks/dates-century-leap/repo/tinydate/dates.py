"""Dates of the proleptic Gregorian calendar, read from ISO ``YYYY-MM-DD`` text."""

import re
from typing import NamedTuple

_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class Date(NamedTuple):
    """A calendar date."""

    year: int
    month: int
    day: int

    def isoformat(self):
        """The date as ``YYYY-MM-DD``."""
        return f"{self.year:04d}-{self.month:02d}-{self.day:02d}"


def is_leap(year):
    """Whether ``year`` has a February 29 (Gregorian rules)."""
    return year % 4 == 0 and year % 100 != 0


def days_in_month(year, month):
    """How many days ``month`` (1-12) of ``year`` has."""
    if not 1 <= month <= 12:
        raise ValueError(f"month {month} is not in 1..12")
    if month == 2 and is_leap(year):
        return 29
    return _DAYS[month - 1]


def parse_date(text):
    """Reads ``YYYY-MM-DD`` into a :class:`Date`.

    Raises:
        ValueError: If ``text`` is not of that form or names a day that does not exist.
    """
    match = _ISO.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"expected YYYY-MM-DD, got {text!r}")
    year, month, day = (int(group) for group in match.groups())
    if not 1 <= day <= days_in_month(year, month):
        raise ValueError(f"{text!r} is not a day of the calendar")
    return Date(year, month, day)


def day_of_year(date):
    """The day's number in its year, from 1 (January 1)."""
    return sum(days_in_month(date.year, month) for month in range(1, date.month)) + date.day
