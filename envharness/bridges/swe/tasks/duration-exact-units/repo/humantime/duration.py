"""Formatting and parsing durations such as ``"1h 02m 05s"``."""

import re

_PART = re.compile(r"(\d+)\s*([hms])")
_UNITS = {"h": 3600, "m": 60, "s": 1}


def format_duration(seconds):
    """Writes a whole number of seconds as ``"1h 02m 05s"``, ``"2m 05s"`` or ``"42s"``.

    Hours are written from one hour up and minutes from one minute up; the smaller units are
    then padded to two digits.
    """
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < 0:
        raise ValueError(f"expected a non-negative int, got {seconds!r}")
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if seconds > 3600:
        return f"{hours}h {minutes:02d}m {secs:02d}s"
    if seconds > 60:
        return f"{seconds // 60}m {secs:02d}s"
    return f"{seconds}s"


def parse_duration(text):
    """Reads a duration such as ``"1h 2m 5s"``, ``"90s"`` or ``"2m"`` into seconds."""
    cleaned = text.strip().lower()
    parts = _PART.findall(cleaned)
    if not parts or _PART.sub("", cleaned).strip():
        raise ValueError(f"not a duration: {text!r}")
    return sum(int(amount) * _UNITS[unit] for amount, unit in parts)
