"""Formatting fields, rows and tables as CSV text (RFC 4180)."""

_QUOTE = '"'


def _needs_quotes(text, delimiter):
    """Whether ``text`` must be quoted to survive a round trip through a CSV reader."""
    return any(special in text for special in (delimiter, _QUOTE))


def format_field(value, delimiter=","):
    """One field as CSV text.

    ``None`` becomes an empty field; other values are written with ``str``. A field that
    contains the delimiter, a quote or a line break is quoted, and its quotes are doubled.
    """
    if len(delimiter) != 1 or delimiter == _QUOTE:
        raise ValueError(f"bad delimiter {delimiter!r}")
    text = "" if value is None else str(value)
    if _needs_quotes(text, delimiter):
        return _QUOTE + text.replace(_QUOTE, _QUOTE * 2) + _QUOTE
    return text


def format_row(fields, delimiter=","):
    """One row (no line ending)."""
    return delimiter.join(format_field(field, delimiter) for field in fields)


def format_rows(rows, delimiter=","):
    """Rows as CSV text, each ending with CRLF."""
    return "".join(format_row(row, delimiter) + "\r\n" for row in rows)
