"""``RunStore``: a run directory of trajectories, appended as JSONL, resumable after a crash.

Layout of a run directory::

    run_dir/
      trajectories.jsonl   one Trajectory.to_json() per line, appended, flushed and fsync'd
      index.json           a summary: request key -> count and record numbers (0-based
                           positions in trajectories.jsonl), counts per task, times
      .lock                the advisory lock held by the one process writing the run

``trajectories.jsonl`` is the source of truth; ``index.json`` is rebuilt from it every time the
store is opened, and rewritten atomically (temporary file, then ``os.replace``) after appends, at
most once per ``index_interval`` seconds, and on :meth:`RunStore.close`, for tools that want a
summary without parsing the trajectories. A killed run can leave it a little behind; the next open
brings it up to date.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from envharness.errors import TrajectoryError
from envharness.rollout.trajectory import Trajectory

__all__ = ["INDEX_FILE", "LOCK_FILE", "TRAJECTORIES_FILE", "RunStore"]

TRAJECTORIES_FILE = "trajectories.jsonl"
INDEX_FILE = "index.json"
LOCK_FILE = ".lock"
_INDEX_VERSION = 1

_log = logging.getLogger("envharness.rollout")


class _Record(NamedTuple):
    """Where one trajectory lives in the JSONL file, and what the index needs of it."""

    offset: int
    length: int
    key: str
    task_id: str
    success: bool


def _record(offset: int, line: bytes, key: str, trajectory: Trajectory) -> _Record:
    return _Record(offset, len(line), key, trajectory.task_id, trajectory.success)


def _acquire_lock(path: Path) -> int | None:
    """Takes the run directory's advisory lock; returns its fd (``None`` without ``fcntl``)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no advisory locks, one writer is the caller's promise
        _log.warning("fcntl is unavailable; %s is not locked against other writers", path.parent)
        return None
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise TrajectoryError(
            f"cannot write in the run directory {str(path.parent)!r}: {e.strerror or e}; choose "
            "a directory you can write (--out)"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        holder = os.read(fd, 64).decode("ascii", "replace").strip()
        os.close(fd)
        if holder == str(os.getpid()):
            who = "another RunStore in this process (close it first)"
        else:
            who = f"another process (pid {holder})" if holder.isdigit() else "another process"
        raise TrajectoryError(
            f"run directory {str(path.parent)!r} is locked by {who}; one process writes a run "
            "directory at a time. Wait for it to finish, or open the store with readonly=True."
        ) from e
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _release(lock_fd: int | None, handles: list[BinaryIO]) -> None:
    """Closes the file handles and releases the lock (also run by the GC finalizer)."""
    for handle in handles:
        with contextlib.suppress(OSError):
            handle.close()
    handles.clear()
    if lock_fd is not None:
        with contextlib.suppress(OSError):
            os.close(lock_fd)  # closing the fd releases its flock


class RunStore:
    """The trajectories of one run directory, keyed by (spec id, policy, seed) for resuming.

    Opening a store reads ``trajectories.jsonl``. A last line that is incomplete (no trailing
    newline) or does not parse was half-written by a killed run: it is logged as a warning,
    dropped, and the file is truncated back to the last complete line so later appends stay
    well-formed. A corrupt line anywhere else raises :class:`~envharness.errors.TrajectoryError`
    naming the line, rather than silently losing data.

    Appends are safe from several threads of one process (a lock serializes them). One process
    writes a run directory at a time: a writable store holds an advisory ``fcntl.flock`` on
    ``run_dir/.lock`` until :meth:`close`, and opening a run another process holds raises
    ``TrajectoryError``. ``readonly=True`` takes no lock, never repairs the file and refuses
    :meth:`add`, so a run can be inspected while it is being written.

    Args:
        run_dir: The run directory (created if missing, unless ``readonly``).
        readonly: Open for reading only.
        index_interval: Seconds between rewrites of ``index.json`` while appending (``0``
            rewrites it after every append); it is always rewritten on open and :meth:`close`.

    Raises:
        TrajectoryError: If the directory is locked by another writer, is not a directory, or a
            line before the last is corrupt.

    Example:
        >>> import tempfile
        >>> from envharness.rollout.trajectory import Trajectory
        >>> with tempfile.TemporaryDirectory() as run_dir:
        ...     with RunStore(run_dir) as store:
        ...         key = store.add(Trajectory("1-1-4-6", "toy24", "ab12", {}, 0, "oracle:0.5"))
        ...     with RunStore(run_dir) as store:
        ...         wanted = [RunStore.key("ab12", "oracle:0.5", seed) for seed in range(3)]
        ...         len(store), store.has(key), len(store.missing(wanted))
        (1, True, 2)
    """

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        *,
        readonly: bool = False,
        index_interval: float = 1.0,
    ) -> None:
        if not isinstance(run_dir, str | os.PathLike):
            raise TypeError(f"expected a path for run_dir, got {type(run_dir).__name__}")
        if (
            isinstance(index_interval, bool)
            or not isinstance(index_interval, int | float)
            or not index_interval >= 0
        ):
            raise ValueError(
                f"expected index_interval to be a number of seconds >= 0, got {index_interval!r}"
            )
        self.index_interval = float(index_interval)
        self._index_due = 0.0
        self._index_stale = False
        self.run_dir = Path(run_dir)
        self.readonly = bool(readonly)
        self.path = self.run_dir / TRAJECTORIES_FILE
        self.index_path = self.run_dir / INDEX_FILE
        self._lock = threading.Lock()
        self._records: list[_Record] = []
        self._by_key: dict[str, list[int]] = {}
        self._handles: list[BinaryIO] = []
        self._writer: BinaryIO | None = None
        self._reader: BinaryIO | None = None
        self._closed = False
        self._lock_fd: int | None = None
        if self.run_dir.exists() and not self.run_dir.is_dir():
            raise TrajectoryError(f"run directory {str(self.run_dir)!r} is not a directory")
        if readonly:
            if not self.run_dir.is_dir():
                raise TrajectoryError(f"no run directory at {str(self.run_dir)!r}")
        else:
            try:
                self.run_dir.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise TrajectoryError(
                    f"cannot create the run directory {str(self.run_dir)!r}: "
                    f"{e.strerror or e}; choose a directory you can write (--out)"
                ) from None
            self._lock_fd = _acquire_lock(self.run_dir / LOCK_FILE)
        self._finalizer = weakref.finalize(self, _release, self._lock_fd, self._handles)
        try:
            self._size = self._load()
            self.created_at = self._previous_created_at()
            self.updated_at = self.created_at
            if not readonly:
                self.path.touch()
                self._writer = open(self.path, "ab")  # closed by close()
                self._handles.append(self._writer)
                self._write_index()
        except BaseException:
            self.close()
            raise

    # -- keys -----------------------------------------------------------------------------------

    @staticmethod
    def key(spec_id: str, policy: str, seed: int) -> str:
        """The request key of one rollout: a compact JSON array ``[spec_id, policy, seed]``.

        Raises:
            TypeError: If an argument has the wrong type.

        Example:
            >>> RunStore.key("ab12", "oracle:0.5", 3)
            '["ab12","oracle:0.5",3]'
        """
        if not isinstance(spec_id, str) or not spec_id:
            raise TypeError(f"expected a non-empty str spec_id, got {spec_id!r}")
        if not isinstance(policy, str):
            raise TypeError(f"expected a str policy description, got {policy!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"expected an int seed, got {seed!r}")
        return json.dumps([spec_id, policy, seed], separators=(",", ":"))

    @classmethod
    def key_of(cls, trajectory: Trajectory) -> str:
        """The request key a trajectory answers."""
        return cls.key(trajectory.spec_id, trajectory.policy, trajectory.seed)

    # -- reading --------------------------------------------------------------------------------

    def has(self, key: str) -> bool:
        """Whether a trajectory with ``key`` is stored."""
        with self._lock:
            return key in self._by_key

    __contains__ = has

    def get(self, key: str) -> Trajectory | None:
        """The first trajectory stored under ``key``, or ``None``."""
        with self._lock:
            numbers = self._by_key.get(key)
            return self._read(self._records[numbers[0]], numbers[0]) if numbers else None

    def get_all(self, key: str) -> list[Trajectory]:
        """Every trajectory stored under ``key``, in the order they were added."""
        with self._lock:
            return [self._read(self._records[i], i) for i in self._by_key.get(key, ())]

    def missing(self, keys: Iterable[str]) -> list[str]:
        """The keys not stored yet, in the given order without duplicates (what to run next)."""
        with self._lock:
            return [k for k in dict.fromkeys(keys) if k not in self._by_key]

    def keys(self) -> list[str]:
        """The stored request keys, in the order first added."""
        with self._lock:
            return list(self._by_key)

    def trajectories(self) -> list[Trajectory]:
        """Every stored trajectory, in file order."""
        return list(self)

    def __iter__(self) -> Iterator[Trajectory]:
        with self._lock:
            records = list(self._records)
        for number, record in enumerate(records):
            with self._lock:
                trajectory = self._read(record, number)
            yield trajectory

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    # -- writing --------------------------------------------------------------------------------

    def add(self, trajectory: Trajectory) -> str:
        """Appends a trajectory (flushed and fsync'd) and returns its request key.

        Raises:
            TypeError: If ``trajectory`` is not a :class:`Trajectory`.
            TrajectoryError: If the store is read-only or closed, or the trajectory holds
                something JSON cannot represent (nothing is written then).
        """
        if not isinstance(trajectory, Trajectory):
            raise TypeError(f"expected a Trajectory, got {type(trajectory).__name__}")
        try:
            line = (trajectory.to_json() + "\n").encode("utf-8")
        except (TypeError, ValueError) as e:
            raise TrajectoryError(f"trajectory cannot be stored as JSON: {e}") from e
        key = self.key_of(trajectory)
        with self._lock:
            writer = self._writer
            if writer is None:
                state = "read-only" if self.readonly else "closed"
                raise TrajectoryError(f"cannot add to {str(self.run_dir)!r}: the store is {state}")
            writer.write(line)
            writer.flush()
            os.fsync(writer.fileno())
            self._remember(_record(self._size, line, key, trajectory))
            self._size += len(line)
            self.updated_at = time.time()
            self._index_stale = True
            if time.monotonic() >= self._index_due:
                self._write_index()
        return key

    def close(self) -> None:
        """Closes the files and releases the lock (idempotent)."""
        with self._lock:
            try:
                if self._index_stale and self._writer is not None:
                    self._write_index()
            finally:
                self._closed = True
                self._writer = self._reader = None
                self._finalizer()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = ", readonly" if self.readonly else ""
        return f"<RunStore {str(self.run_dir)!r} trajectories={len(self._records)}{mode}>"

    # -- internals ------------------------------------------------------------------------------

    def _remember(self, record: _Record) -> None:
        self._by_key.setdefault(record.key, []).append(len(self._records))
        self._records.append(record)

    def _read(self, record: _Record, number: int) -> Trajectory:
        """Reads one record back (the caller holds the lock)."""
        if self._closed:
            raise TrajectoryError(f"cannot read from {str(self.run_dir)!r}: the store is closed")
        if self._reader is None:
            self._reader = open(self.path, "rb")  # closed by close()
            self._handles.append(self._reader)
        self._reader.seek(record.offset)
        data = self._reader.read(record.length)
        try:
            return Trajectory.from_json(data.decode("utf-8"))
        except (UnicodeDecodeError, TrajectoryError) as e:
            raise TrajectoryError(
                f"{self.path}: record {number} changed on disk since the store was opened: {e}"
            ) from e

    def _load(self) -> int:
        """Reads the JSONL file into the index; returns the size of its well-formed part."""
        if not self.path.exists():
            return 0
        offset = 0
        pending: tuple[int, int, bytes] | None = None
        with open(self.path, "rb") as handle:
            for number, line in enumerate(handle, start=1):
                if pending is not None:
                    self._parse(*pending, last=False)
                pending = (number, offset, line)
                offset += len(line)
        if pending is None:
            return 0
        number, start, line = pending
        if line.endswith(b"\n") and self._parse(number, start, line, last=True):
            return offset
        self._drop_tail(number, start, offset - start, line)
        return start

    def _parse(self, number: int, offset: int, line: bytes, *, last: bool) -> bool:
        """Indexes one line; returns False for a bad last line, raises for a bad middle one."""
        if not line.strip():
            return True
        try:
            trajectory = Trajectory.from_json(line.decode("utf-8"))
        except (UnicodeDecodeError, TrajectoryError) as e:
            if last:
                return False
            raise TrajectoryError(
                f"{self.path}: line {number} is corrupt ({e}); lines after it hold data, so it "
                "was not dropped. Repair or remove that line by hand."
            ) from e
        self._remember(_record(offset, line, self.key_of(trajectory), trajectory))
        return True

    def _drop_tail(self, number: int, start: int, size: int, line: bytes) -> None:
        """Drops a half-written last line (and truncates the file, unless read-only)."""
        complete = "that does not parse" if line.endswith(b"\n") else "without a trailing newline"
        if self.readonly:
            _log.warning(
                "%s: ignoring line %d (%d bytes) %s, probably being written or left by a killed "
                "run (read-only: not repaired)",
                self.path,
                number,
                size,
                complete,
            )
            return
        _log.warning(
            "%s: dropping line %d (%d bytes) %s, half-written by a killed run; truncating the "
            "file to its last complete line",
            self.path,
            number,
            size,
            complete,
        )
        with open(self.path, "r+b") as handle:
            handle.truncate(start)
            handle.flush()
            os.fsync(handle.fileno())

    def _previous_created_at(self) -> float:
        """The creation time recorded in an existing index, else now."""
        try:
            created = json.loads(self.index_path.read_text("utf-8")).get("created_at")
        except (OSError, ValueError, AttributeError):
            return time.time()
        return float(created) if isinstance(created, int | float) else time.time()

    def _index(self) -> dict[str, Any]:
        tasks: dict[str, dict[str, int]] = {}
        for record in self._records:
            counts = tasks.setdefault(record.task_id, {"count": 0, "successes": 0})
            counts["count"] += 1
            counts["successes"] += int(record.success)
        return {
            "envharness_run": _INDEX_VERSION,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "trajectories": len(self._records),
            "keys": {
                key: {"count": len(numbers), "records": numbers}
                for key, numbers in self._by_key.items()
            },
            "tasks": {task: tasks[task] for task in sorted(tasks)},
        }

    def _write_index(self) -> None:
        """Rewrites ``index.json`` atomically (the caller holds the lock)."""
        text = json.dumps(self._index(), indent=1)
        fd, temporary = tempfile.mkstemp(prefix=".index-", suffix=".tmp", dir=self.run_dir)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(temporary, self.index_path)
            self._index_stale = False
            self._index_due = time.monotonic() + self.index_interval
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
