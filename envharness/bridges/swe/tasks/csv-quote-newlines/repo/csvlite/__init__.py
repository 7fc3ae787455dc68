"""Write CSV rows the way spreadsheets read them."""

from csvlite.writer import format_field, format_row, format_rows

__all__ = ["format_field", "format_row", "format_rows"]
