"""``Matrix``: an immutable dense matrix of numbers."""


class ShapeError(ValueError):
    """Raised when the shapes of two matrices do not fit an operation."""


class Matrix:
    """A dense matrix, given as a list of equally long rows."""

    def __init__(self, rows):
        rows = [list(row) for row in rows]
        if not rows or not rows[0]:
            raise ShapeError("a matrix needs at least one row and one column")
        if any(len(row) != len(rows[0]) for row in rows):
            raise ShapeError("all rows must have the same length")
        self._rows = rows

    @classmethod
    def identity(cls, size):
        """The ``size`` x ``size`` identity matrix."""
        return cls([[int(i == j) for j in range(size)] for i in range(size)])

    @property
    def shape(self):
        """``(rows, columns)``."""
        return len(self._rows), len(self._rows[0])

    @property
    def rows(self):
        """The rows, as a list of lists (a copy)."""
        return [list(row) for row in self._rows]

    @property
    def T(self):  # noqa: N802 - the usual name for a transpose
        """The transpose."""
        return Matrix(zip(*self._rows))

    def __getitem__(self, index):
        row, column = index
        return self._rows[row][column]

    def __add__(self, other):
        if self.shape != other.shape:
            raise ShapeError(f"cannot add {self.shape} and {other.shape}")
        return Matrix([[a + b for a, b in zip(r, s)] for r, s in zip(self._rows, other._rows)])

    def __mul__(self, factor):
        return Matrix([[factor * value for value in row] for row in self._rows])

    __rmul__ = __mul__

    def __matmul__(self, other):
        n, inner = self.shape
        if other.shape[0] != inner:
            raise ShapeError(f"cannot multiply {self.shape} by {other.shape}")
        m = self.shape[1]
        return Matrix(
            [
                [sum(self[i, k] * other[k, j] for k in range(inner)) for j in range(m)]
                for i in range(n)
            ]
        )

    def __eq__(self, other):
        return isinstance(other, Matrix) and self._rows == other._rows

    def __repr__(self):
        return f"Matrix({self._rows!r})"
