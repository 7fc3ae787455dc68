"""Merge and measure closed intervals."""

from intervals.merge import covers, gaps, merge, total_length

__all__ = ["covers", "gaps", "merge", "total_length"]
