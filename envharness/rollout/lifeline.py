"""Worker processes that die with the process that started them.

A :class:`~concurrent.futures.ProcessPoolExecutor` worker blocks reading its call queue, whose
write end every worker holds too, so when the caller is killed (SIGKILL, the OOM killer) nothing
wakes the workers: they live on, and with them the ``forkserver`` (each worker holds its "alive"
pipe) and the ``resource_tracker``. :func:`exit_with` is the pool's initializer: a daemon thread
waits on a pidfd of the caller (a poll of its pid where pidfds are missing) and ends the worker
the moment the caller ends; the forkserver and the tracker then see their pipes close and exit.
"""

from __future__ import annotations

import os
import select
import threading
import time

__all__ = ["EXIT_STATUS", "exit_with"]

EXIT_STATUS = 70
"""The status a worker exits with when its caller is gone."""

_POLL_SECONDS = 1.0


def _wait_for_exit(pid: int) -> None:
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfds here, or the process is already gone
        fd = None
    if fd is not None:
        try:
            select.select([fd], [], [])  # a pidfd turns readable when its process exits
        finally:
            os.close(fd)
        return
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        except PermissionError:  # alive, but another user's (a reused pid): keep watching
            pass
        time.sleep(_POLL_SECONDS)


def _watch(pid: int) -> None:
    _wait_for_exit(pid)
    os._exit(EXIT_STATUS)


def exit_with(pid: int) -> None:
    """Ends this process (status :data:`EXIT_STATUS`) as soon as process ``pid`` ends.

    Meant as a process pool's ``initializer`` with the caller's pid; returns at once.
    """
    threading.Thread(target=_watch, args=(pid,), name="envharness-lifeline", daemon=True).start()
