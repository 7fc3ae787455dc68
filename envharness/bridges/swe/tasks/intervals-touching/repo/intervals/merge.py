"""Closed intervals ``[start, end]``: merging, measuring and finding gaps."""


def _sorted_pairs(intervals):
    """Checks the intervals and returns them as ``(start, end)`` tuples sorted by start."""
    pairs = []
    for interval in intervals:
        start, end = interval
        if start > end:
            raise ValueError(f"interval {interval!r} ends before it starts")
        pairs.append((start, end))
    return sorted(pairs)


def merge(intervals):
    """Merges overlapping intervals; returns them sorted, as ``(start, end)`` tuples.

    The intervals are closed, so two that share an end point overlap: ``[1, 3]`` and ``[3, 5]``
    merge into ``[1, 5]``.
    """
    merged = []
    for start, end in _sorted_pairs(intervals):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def total_length(intervals):
    """The total length the intervals cover (overlaps counted once)."""
    return sum(end - start for start, end in merge(intervals))


def covers(intervals, point):
    """Whether some interval contains ``point`` (end points included)."""
    return any(start <= point <= end for start, end in merge(intervals))


def gaps(intervals):
    """The open stretches between the merged intervals, as ``(end, next_start)`` tuples."""
    merged = merge(intervals)
    return [(left[1], right[0]) for left, right in zip(merged, merged[1:])]
