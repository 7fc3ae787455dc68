import csv
import io

import pytest

from csvlite import format_field, format_row, format_rows


def test_plain_fields():
    assert format_row(["a", 1, 2.5, None]) == "a,1,2.5,"


def test_delimiter_is_quoted():
    assert format_field("a,b") == '"a,b"'
    assert format_field("a;b") == "a;b"
    assert format_field("a;b", delimiter=";") == '"a;b"'


def test_quotes_are_doubled():
    assert format_field('say "hi"') == '"say ""hi"""'


def test_rows_end_with_crlf():
    assert format_rows([["a", "b"], ["c", "d"]]) == "a,b\r\nc,d\r\n"


def test_round_trip_through_csv_module():
    rows = [["name", "quote"], ["Ada", 'said "hello, world"'], ["", "x"]]
    text = format_rows(rows)
    assert list(csv.reader(io.StringIO(text, newline=""))) == rows


@pytest.mark.parametrize("delimiter", ["", ";;", '"'])
def test_bad_delimiter(delimiter):
    with pytest.raises(ValueError, match="bad delimiter"):
        format_field("x", delimiter=delimiter)
