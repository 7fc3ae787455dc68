"""Test-only bridges and policy factories that worker processes can import by module path.

Pytest puts this directory on ``sys.path``; worker processes started by ``forkserver`` or
``spawn`` inherit it, and the Ray tests pass it to the Ray workers through ``PYTHONPATH``. The
executors replay runtime registrations in their workers, so registering
``"worker_fakes:CrashingToy24"`` in the test process is enough for the workers to build it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envharness.bridges.toy24 import Toy24Env
from envharness.core import Action
from envharness.rollout.policies import OraclePolicy

CRASH_EXIT_CODE = 13


class CrashingToy24(Toy24Env):
    """Toy24 whose ``reset`` kills its process (``os._exit``) for the seeds in ``crash_seeds``.

    It never kills the process that created the test (``host_pid``), so an inline executor and
    the parent's spec check are safe; in any other process it dies like a segfaulting env.
    """

    bridge_name = "crashing_toy24"

    def __init__(
        self,
        task_id: str,
        *,
        crash_seeds: list[int] | None = None,
        host_pid: int = 0,
        max_steps: int = 12,
    ) -> None:
        super().__init__(task_id, max_steps=max_steps)
        self.crash_seeds = list(crash_seeds or [])
        self.host_pid = host_pid

    def bridge_options(self) -> dict[str, Any]:
        return {
            **super().bridge_options(),
            "crash_seeds": self.crash_seeds,
            "host_pid": self.host_pid,
        }

    def reset(self, *, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        if seed in self.crash_seeds and os.getpid() != self.host_pid:
            os._exit(CRASH_EXIT_CODE)
        return super().reset(seed=seed)


class _RaisingPolicy:
    def start(self, instruction: str, tools: Any) -> None:
        pass

    def act(self, observation: str) -> Action:
        raise RuntimeError("the policy broke")


@dataclass(frozen=True)
class RaisingPolicyFactory:
    """A picklable factory of policies that raise on every ``act``."""

    def __call__(self, seed: int) -> _RaisingPolicy:
        return _RaisingPolicy()

    def describe(self) -> str:
        return "raising"


@dataclass(frozen=True)
class NotAPolicyFactory:
    """A picklable factory that returns something that is not a policy."""

    def __call__(self, seed: int) -> object:
        return object()

    def describe(self) -> str:
        return "not-a-policy"


@dataclass(frozen=True)
class RecordingOracleFactory:
    """``OraclePolicy(skill, seed)``, appending ``"<pid> <seed>"`` to ``path`` for each episode.

    The file shows which episodes were really played, and in which processes.
    """

    path: str
    skill: float = 0.5

    def __call__(self, seed: int) -> OraclePolicy:
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()} {seed}\n")
        return OraclePolicy(self.skill, seed)

    def describe(self) -> str:
        return f"oracle:{self.skill:g}"

    def played(self) -> list[tuple[int, int]]:
        """``(pid, seed)`` of every episode played so far."""
        file = Path(self.path)
        if not file.exists():
            return []
        rows = [line.split() for line in file.read_text(encoding="utf-8").splitlines()]
        return [(int(pid), int(seed)) for pid, seed in rows]


def _refuse_to_load() -> None:
    raise RuntimeError("this factory cannot be loaded in a worker")


@dataclass(frozen=True)
class UnloadableFactory:
    """Pickles fine, but unpickling it raises: a job its worker cannot even start."""

    def __call__(self, seed: int) -> OraclePolicy:
        return OraclePolicy(1.0, seed)

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return (_refuse_to_load, ())
