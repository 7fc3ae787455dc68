"""The SWE bridge: fix bugs in small Python repositories, judged by hidden tests.

Registered as ``swe``. Tasks are shaped like SWE-bench's: a repository snapshot, an issue, and
the ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` tests the fix must satisfy; ten small repositories
written for EnvHarness ship with the package (``SweEnv.list_tasks("all")``; 7 train, 3 test).
The agent works with ``bash``, ``read_file``, ``edit_file``, ``run_tests`` and ``submit``; the
verifier runs the hidden tests on the agent's changes in a fresh workspace.

Two runtimes behind one interface (:class:`Runtime`): :class:`DockerRuntime` (the default: one
container per episode from a locally built image, no network, memory and process limits; needs
the ``swe`` extra, a Docker engine and ``python -m envharness.bridges.swe.image build`` once) and
:class:`LocalRuntime` (a temporary folder and limited subprocesses; no isolation).

- :mod:`~envharness.bridges.swe.env`: :class:`SweEnv`, the bridge.
- :mod:`~envharness.bridges.swe.tasks`: the tasks and their gold patches.
- :mod:`~envharness.bridges.swe.tools`: the agent's tools.
- :mod:`~envharness.bridges.swe.verify`: the hidden-test verifier.
- :mod:`~envharness.bridges.swe.oracle`: the oracle and the stage candidates.
- :mod:`~envharness.bridges.swe.runtime`, :mod:`~envharness.bridges.swe.local_runtime`,
  :mod:`~envharness.bridges.swe.docker_runtime`: where the workspace lives.
- :mod:`~envharness.bridges.swe.image`: building the container image.

Example:
    >>> from envharness import load_bridge
    >>> from envharness.rollout import OraclePolicy, rollout
    >>> env = load_bridge("swe", task_id="lru-put-refresh", runtime="local")
    >>> trajectory = rollout(env, OraclePolicy(1.0, seed=0), seed=0)
    >>> trajectory.success, trajectory.n_steps
    (True, 2)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envharness.bridges.swe.docker_runtime import DockerRuntime, docker_unavailable
    from envharness.bridges.swe.env import DEFAULT_RUNTIME, RUNTIMES, SweEnv
    from envharness.bridges.swe.image import IMAGE, build_image
    from envharness.bridges.swe.local_runtime import LocalRuntime
    from envharness.bridges.swe.runtime import ExecResult, Runtime, WorkspaceFileError
    from envharness.bridges.swe.tasks import Task, load_task, task_ids

# Names load on first use (a module ``__getattr__``), so that running a submodule as a script,
# e.g. ``python -m envharness.bridges.swe.image build``, does not import it twice.
_LAZY = {
    "DEFAULT_RUNTIME": "env",
    "RUNTIMES": "env",
    "SweEnv": "env",
    "Task": "tasks",
    "load_task": "tasks",
    "task_ids": "tasks",
    "DockerRuntime": "docker_runtime",
    "ExecResult": "runtime",
    "LocalRuntime": "local_runtime",
    "Runtime": "runtime",
    "WorkspaceFileError": "runtime",
    "docker_unavailable": "docker_runtime",
    "IMAGE": "image",
    "build_image": "image",
}

__all__ = [
    # the bridge
    "DEFAULT_RUNTIME",
    "RUNTIMES",
    "SweEnv",
    # tasks
    "Task",
    "load_task",
    "task_ids",
    # runtimes
    "DockerRuntime",
    "ExecResult",
    "LocalRuntime",
    "Runtime",
    "WorkspaceFileError",
    "docker_unavailable",
    # the image
    "IMAGE",
    "build_image",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
