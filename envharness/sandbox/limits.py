"""``SandboxLimits``: the time, CPU, memory, message and file limits of one sandboxed episode."""

from __future__ import annotations

import math
from dataclasses import dataclass

from envharness.errors import RulesError

__all__ = ["SandboxLimits"]

_MAX_FRAME = 0xFFFFFFFF  # the frame header stores the length in 32 bits
_MIN_OPEN_FILES = 8  # stdin/stdout/stderr, the two pipes, the Landlock ruleset, a few imports


@dataclass(frozen=True)
class SandboxLimits:
    """Limits applied to every sandboxed episode; the defaults are safe for rules code.

    Attributes:
        call_timeout: Wall-clock seconds one hook call may take; on expiry the child is killed.
            Loading the code gets this plus a fixed allowance for starting the process.
        episode_wall_seconds: Wall-clock seconds all hook calls of one episode may take
            together (hooks that sleep use no CPU but hold the episode up); past it the child
            is killed and the episode ends with a ``RulesError``.
        episode_cpu_seconds: ``RLIMIT_CPU`` of one episode's child, across all its calls
            (SIGXCPU at this limit, SIGKILL one second later).
        memory_headroom_mb: ``RLIMIT_AS`` is the child's virtual size at start plus this.
        max_message_bytes: The largest message either way (request, reply, and the code itself),
            checked from the frame header before the body is read.
        max_open_files: ``RLIMIT_NOFILE`` of the child.
        follow_host_cpu: Pin the child to the CPU of the host thread calling it, re-pinned when
            that thread moves (see :mod:`envharness.sandbox.affinity`): host and child take
            turns, so sharing one CPU spares a cross-CPU wake-up per call (on a VM ~50 µs).
            Turn it off to leave placement to the scheduler.

    Example:
        >>> SandboxLimits(call_timeout=0.5).episode_cpu_seconds
        10
    """

    call_timeout: float = 1.0
    episode_wall_seconds: float = 10.0
    episode_cpu_seconds: int = 10
    memory_headroom_mb: int = 256
    max_message_bytes: int = 4 << 20
    max_open_files: int = 16
    follow_host_cpu: bool = True

    def __post_init__(self) -> None:
        for name in ("call_timeout", "episode_wall_seconds"):
            seconds = getattr(self, name)
            if (
                isinstance(seconds, bool)
                or not isinstance(seconds, int | float)
                or not math.isfinite(seconds)
                or seconds <= 0
            ):
                raise RulesError(
                    f"invalid SandboxLimits: expected {name} to be a positive finite number of "
                    f"seconds, got {seconds!r}"
                )
        _check_int("episode_cpu_seconds", self.episode_cpu_seconds, 1, 86_400)
        _check_int("memory_headroom_mb", self.memory_headroom_mb, 16, 1 << 20)
        _check_int("max_message_bytes", self.max_message_bytes, 1024, _MAX_FRAME)
        _check_int("max_open_files", self.max_open_files, _MIN_OPEN_FILES, 1 << 20)
        if not isinstance(self.follow_host_cpu, bool):
            raise RulesError(
                "invalid SandboxLimits: expected follow_host_cpu to be true or false, got "
                f"{self.follow_host_cpu!r}"
            )


def _check_int(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise RulesError(
            f"invalid SandboxLimits: expected {name} to be an int in [{low}, {high}], got {value!r}"
        )
