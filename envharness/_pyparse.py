"""``parse``: :func:`ast.parse`, safe to call from several threads at once.

CPython before 3.11.8 (gh-106905) can fail ``ast.parse`` with "AST constructor recursion depth
mismatch" when two threads parse at the same time, as concurrent rigs do (rules checks, knob
scans, action parsing). Parses are short, so serializing them costs nothing measurable.
"""

from __future__ import annotations

import ast
import threading
from typing import Any

__all__ = ["parse"]

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>", mode: str = "exec") -> Any:
    """``ast.parse(source, filename, mode)`` under a process-wide lock."""
    with _LOCK:
        return ast.parse(source, filename=filename, mode=mode)
