from __future__ import annotations

import pytest

from envharness.rollout.scheduling import MIN_JOB_SECONDS, JobPlanner, SingleJobs


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def drain(planner: JobPlanner, clock: Clock | None = None, seconds_per_request: float = 0.0):
    """Hands out every job, finishing each at once, with the clock at the given rate."""
    sizes = []
    while planner:
        job = planner.next_job()
        sizes.append(len(job))
        if clock is not None:
            clock.now += seconds_per_request * len(job) / 2  # two workers share the work
        planner.completed(len(job))
    return sizes


def test_jobs_cover_every_request_once_in_order():
    planner = JobPlanner(103, workers=2, chunksize=None, max_chunk=32)
    jobs = []
    while planner:
        jobs.append(planner.next_job())
    assert [i for job in jobs for i in job] == list(range(103))
    with pytest.raises(IndexError, match="handed out"):
        planner.next_job()


def test_slow_requests_shrink_jobs_to_one_by_the_end():
    clock = Clock()
    planner = JobPlanner(400, workers=2, chunksize=None, max_chunk=32, clock=clock)
    sizes = drain(planner, clock, seconds_per_request=1.0)
    assert sizes[0] == 32 and sizes[-1] == 1
    assert planner.largest_job == 32


def test_fast_requests_keep_jobs_of_the_time_floor_to_the_end():
    clock = Clock()
    per_request = MIN_JOB_SECONDS / 10  # ten requests make a floor's worth of work
    planner = JobPlanner(400, workers=2, chunksize=None, max_chunk=32, clock=clock)
    sizes = drain(planner, clock, per_request)
    assert min(sizes[:-1]) >= 10  # only the remainder may be smaller
    slow_clock = Clock()
    slow = JobPlanner(400, workers=2, chunksize=None, max_chunk=32, clock=slow_clock)
    assert len(sizes) < len(drain(slow, slow_clock, seconds_per_request=1.0))


def test_the_floor_never_exceeds_the_largest_chunk_and_chunking_off_means_one():
    clock = Clock()
    fast = JobPlanner(100, workers=2, chunksize=None, max_chunk=8, clock=clock)
    assert max(drain(fast, clock, 1e-9)) == 8
    assert set(drain(JobPlanner(10, workers=2, chunksize=None, max_chunk=1))) == {1}


def test_a_fixed_chunksize_gives_equal_jobs():
    assert drain(JobPlanner(10, workers=3, chunksize=4, max_chunk=32)) == [4, 4, 2]


def test_single_jobs_hand_out_one_request_each():
    jobs = SingleJobs([5, 2, 9])
    jobs.completed(1)
    assert [jobs.next_job() for _ in range(3)] == [[5], [2], [9]]
    assert not jobs
    with pytest.raises(IndexError):
        jobs.next_job()
