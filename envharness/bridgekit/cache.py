"""The on-disk cache bridges share: where it lives, and a lock for filling it across processes.

Bridges that build files once (generated TextWorld games, rebuilt ALFWorld games) keep them under
one root, each in a folder named after the bridge, and hold :func:`file_lock` while they write so
that concurrent processes build each entry once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - exercised only on platforms without fcntl
    fcntl = None  # type: ignore[assignment]

__all__ = ["bridge_cache_dir", "file_lock"]


def bridge_cache_dir(bridge: str) -> Path:
    """The default cache folder of ``bridge``.

    ``$ENVHARNESS_CACHE/<bridge>`` when that variable is set, else
    ``$XDG_CACHE_HOME/envharness/<bridge>``, else ``~/.cache/envharness/<bridge>``.

    Example:
        >>> bridge_cache_dir("textworld").name
        'textworld'
    """
    root = os.environ.get("ENVHARNESS_CACHE")
    if root:
        return Path(root).expanduser() / bridge
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "envharness" / bridge


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Holds an exclusive lock on ``path`` (created if needed) across processes.

    Without ``fcntl`` (not POSIX) it only opens the file: no lock is taken.
    """
    with open(path, "a+b") as handle:
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
