from intervals import gaps, merge


def test_touching_intervals_merge():
    assert merge([(1, 3), (3, 5)]) == [(1, 5)]


def test_chain_of_touching_intervals():
    assert merge([(4, 6), (0, 2), (2, 4), (8, 9)]) == [(0, 6), (8, 9)]


def test_no_empty_gaps():
    assert gaps([(0, 1), (1, 2), (3, 4)]) == [(2, 3)]
