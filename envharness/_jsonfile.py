"""``write_json``: a JSON file written atomically (a temporary file renamed into place).

A reader sees the old file or the new one, never half of one, and a crash leaves no partial file;
run directories, caches and records across the package write through it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["write_json"]


def write_json(path: str | os.PathLike[str], data: Any, *, indent: int | None = 2) -> None:
    """Writes ``data`` as JSON to ``path`` atomically, creating its folder.

    Args:
        path: The file.
        data: JSON-able data (NaN and infinities are refused).
        indent: ``json.dump``'s indent (``None`` for one line).

    Raises:
        TypeError, ValueError: If ``data`` is not JSON-able (nothing is written).
        OSError: If the folder cannot be written.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, scratch = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle, indent=indent, allow_nan=False)
            handle.write("\n")
        os.replace(scratch, target)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise
