"""How an executor cuts a batch into jobs: guided scheduling with a floor in time.

A job is a run of consecutive requests sent to one worker at once. Large jobs amortize the
messaging around each job (pickling, a pipe round trip, waking a thread); small ones keep every
worker busy to the end of the batch. :class:`JobPlanner` makes each job a quarter of a worker's
share of what is left (guided scheduling, so jobs shrink as the batch drains), but never shorter
than :data:`MIN_JOB_SECONDS` of work at the rate the batch has run so far: on an env whose episode
costs a millisecond the tail is not cut into single-episode jobs that cost more to send than to
run, while on one whose episode costs a second (or a model call) jobs still shrink to one.
Jobs are cut when a worker slot frees up, so the rate is known for all but the first ones.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

__all__ = ["MIN_JOB_SECONDS", "JobPlanner", "SingleJobs"]

MIN_JOB_SECONDS = 0.02
_CHUNKS_PER_WORKER = 4  # a job is at most 1/4 of a worker's share of what is left


class JobPlanner:
    """Cuts request indices ``0..n-1`` into jobs, in order, as they are asked for.

    Args:
        n: Requests in the batch.
        workers: Workers the jobs share.
        chunksize: A fixed job size, or ``None`` for guided sizes between 1 and ``max_chunk``.
        max_chunk: The largest job the guided sizes make (1 turns chunking off).
        clock: Seconds, monotonic (for tests).

    Example:
        >>> planner = JobPlanner(10, workers=1, chunksize=4, max_chunk=32)
        >>> [planner.next_job() for _ in range(3)]
        [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
        >>> bool(planner)
        False
    """

    def __init__(
        self,
        n: int,
        *,
        workers: int,
        chunksize: int | None,
        max_chunk: int,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._n = n
        self._workers = max(1, workers)
        self._chunksize = chunksize
        self._max_chunk = max(1, max_chunk)
        self._clock = clock
        self._start = clock()
        self._next = 0
        self._done = 0
        self.largest_job = 0
        """The most requests one job handed out so far has held."""

    def __bool__(self) -> bool:
        """Whether requests are left to hand out."""
        return self._next < self._n

    def completed(self, count: int) -> None:
        """Records that ``count`` more requests have finished (it sets the time floor)."""
        self._done += count

    def next_job(self) -> list[int]:
        """The next job's request indices.

        Raises:
            IndexError: If every request has been handed out.
        """
        left = self._n - self._next
        if left <= 0:
            raise IndexError("every request of the batch has been handed out")
        size = min(left, self._size(left))
        job = list(range(self._next, self._next + size))
        self._next += size
        self.largest_job = max(self.largest_job, size)
        return job

    def _size(self, left: int) -> int:
        if self._chunksize is not None:
            return self._chunksize
        guided = math.ceil(left / (self._workers * _CHUNKS_PER_WORKER))
        return max(1, min(self._max_chunk, max(guided, self._floor())))

    def _floor(self) -> int:
        """Requests that make :data:`MIN_JOB_SECONDS` of one worker's time (1 before any ends)."""
        if self._done == 0 or self._max_chunk == 1:
            return 1
        elapsed = self._clock() - self._start
        per_request = elapsed * self._workers / self._done  # one worker's seconds per request
        if per_request <= 0:
            return self._max_chunk
        return math.ceil(MIN_JOB_SECONDS / per_request)


class SingleJobs:
    """Hands out the given requests one per job (a retry that pins down a crashing request).

    Example:
        >>> jobs = SingleJobs([3, 7])
        >>> jobs.next_job(), jobs.next_job(), bool(jobs)
        ([3], [7], False)
    """

    def __init__(self, indices: list[int]) -> None:
        self._left = list(reversed(indices))

    def __bool__(self) -> bool:
        """Whether requests are left to hand out."""
        return bool(self._left)

    def completed(self, count: int) -> None:
        """Accepted for the planner's interface; single jobs need no rate."""

    def next_job(self) -> list[int]:
        """The next request, alone.

        Raises:
            IndexError: If every request has been handed out.
        """
        if not self._left:
            raise IndexError("every request has been handed out")
        return [self._left.pop()]
