"""Helpers for writing bridges, built-in or third-party (no bridge lives here).

- :mod:`~envharness.bridgekit.checks`: the checks every bridge makes on its options, splits and
  saved states, with the errors they raise.
- :mod:`~envharness.bridgekit.fingerprint`: task fingerprints over what a verifier reads.
- :mod:`~envharness.bridgekit.cache`: the shared on-disk cache folder and a cross-process lock.
"""

from __future__ import annotations

from envharness.bridgekit.cache import bridge_cache_dir, file_lock
from envharness.bridgekit.checks import (
    check_nothing_recorded,
    check_options,
    check_path,
    check_positive_int,
    check_saved_state,
    check_split,
    state_error,
)
from envharness.bridgekit.fingerprint import (
    cached_fingerprint,
    canonical_json,
    read_bytes,
    task_fingerprint,
)

__all__ = [
    # checks
    "check_nothing_recorded",
    "check_options",
    "check_path",
    "check_positive_int",
    "check_saved_state",
    "check_split",
    "state_error",
    # fingerprints
    "cached_fingerprint",
    "canonical_json",
    "read_bytes",
    "task_fingerprint",
    # the cache
    "bridge_cache_dir",
    "file_lock",
]
