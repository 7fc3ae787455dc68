from minimatrix import Matrix


def test_wide_times_tall():
    a = Matrix([[1, 2, 3], [4, 5, 6]])
    b = Matrix([[7, 8], [9, 10], [11, 12]])
    assert a @ b == Matrix([[58, 64], [139, 154]])


def test_tall_times_wide_is_an_outer_product():
    column = Matrix([[1], [2], [3]])
    row = Matrix([[4, 5, 6]])
    assert (column @ row).shape == (3, 3)
    assert column @ row == Matrix([[4, 5, 6], [8, 10, 12], [12, 15, 18]])


def test_dot_product():
    assert (Matrix([[1, 2, 3]]) @ Matrix([[4], [5], [6]])) == Matrix([[32]])


def test_product_with_transpose():
    a = Matrix([[1, 2, 3], [4, 5, 6]])
    assert (a @ a.T).shape == (2, 2)
    assert (a.T @ a).shape == (3, 3)
