"""Small dense matrices in pure Python."""

from minimatrix.matrix import Matrix, ShapeError

__all__ = ["Matrix", "ShapeError"]
