import csv
import io

from csvlite import format_field, format_rows


def test_newline_is_quoted():
    assert format_field("line one\nline two") == '"line one\nline two"'


def test_carriage_return_is_quoted():
    assert format_field("a\rb") == '"a\rb"'


def test_round_trip_with_line_breaks():
    rows = [["id", "note"], ["1", "first line\nsecond line"], ["2", "crlf\r\ninside"]]
    text = format_rows(rows)
    assert list(csv.reader(io.StringIO(text, newline=""))) == rows
