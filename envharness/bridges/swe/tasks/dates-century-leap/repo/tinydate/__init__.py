"""Parse and check ISO calendar dates."""

from tinydate.dates import Date, day_of_year, days_in_month, is_leap, parse_date

__all__ = ["Date", "day_of_year", "days_in_month", "is_leap", "parse_date"]
