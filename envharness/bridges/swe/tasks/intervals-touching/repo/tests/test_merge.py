import pytest

from intervals import covers, gaps, merge, total_length


def test_overlapping():
    assert merge([(1, 4), (2, 6)]) == [(1, 6)]


def test_nested():
    assert merge([(1, 10), (2, 3), (4, 5)]) == [(1, 10)]


def test_unsorted_input():
    assert merge([(8, 9), (1, 3), (2, 4)]) == [(1, 4), (8, 9)]


def test_disjoint():
    assert merge([(1, 2), (4, 5)]) == [(1, 2), (4, 5)]


def test_empty():
    assert merge([]) == []


def test_lists_become_tuples():
    assert merge([[0.5, 1.5]]) == [(0.5, 1.5)]


def test_invalid_interval():
    with pytest.raises(ValueError, match="ends before it starts"):
        merge([(3, 1)])


def test_total_length():
    assert total_length([(1, 3), (2, 6), (10, 11)]) == 6


def test_covers():
    assert covers([(1, 3), (5, 7)], 3)
    assert not covers([(1, 3), (5, 7)], 4)


def test_gaps():
    assert gaps([(5, 7), (1, 2)]) == [(2, 5)]
    assert gaps([(1, 4), (2, 6)]) == []
