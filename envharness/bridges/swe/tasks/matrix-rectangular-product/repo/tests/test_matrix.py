import pytest

from minimatrix import Matrix, ShapeError


def test_shape_and_items():
    m = Matrix([[1, 2, 3], [4, 5, 6]])
    assert m.shape == (2, 3)
    assert m[1, 2] == 6


def test_bad_rows():
    with pytest.raises(ShapeError):
        Matrix([[1, 2], [3]])
    with pytest.raises(ShapeError):
        Matrix([])


def test_add_and_scale():
    a = Matrix([[1, 2], [3, 4]])
    assert a + a == Matrix([[2, 4], [6, 8]])
    assert 3 * a == a * 3 == Matrix([[3, 6], [9, 12]])
    with pytest.raises(ShapeError):
        a + Matrix([[1, 2]])


def test_transpose():
    assert Matrix([[1, 2, 3], [4, 5, 6]]).T == Matrix([[1, 4], [2, 5], [3, 6]])


def test_square_product():
    a = Matrix([[1, 2], [3, 4]])
    b = Matrix([[0, 1], [1, 0]])
    assert a @ b == Matrix([[2, 1], [4, 3]])


def test_identity():
    a = Matrix([[2, -1, 0], [1, 3, 5], [7, 0, 1]])
    assert a @ Matrix.identity(3) == a
    assert Matrix.identity(3) @ a == a


def test_product_shape_mismatch():
    with pytest.raises(ShapeError, match="cannot multiply"):
        Matrix([[1, 2]]) @ Matrix([[1, 2]])
