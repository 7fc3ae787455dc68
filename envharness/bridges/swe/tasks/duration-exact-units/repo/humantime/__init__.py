"""Durations in seconds, written and read the way people write them."""

from humantime.duration import format_duration, parse_duration

__all__ = ["format_duration", "parse_duration"]
