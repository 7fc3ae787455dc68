r"""The ``Runtime`` interface: where one episode's repository lives and its commands run.

A runtime holds a *workspace*, a folder with a copy of the task's repository, and runs shell
commands in it. :class:`~envharness.bridges.swe.docker_runtime.DockerRuntime` keeps it in a
container (one per episode, no network, memory and process limits);
:class:`~envharness.bridges.swe.local_runtime.LocalRuntime` in a temporary folder on this machine,
with limited subprocesses. Both show the agent the same paths: the workspace is ``/workspace``,
and commands start there.

Paths given to the file operations are relative to the workspace (``"pkg/mod.py"``) or absolute
under ``/workspace``; :func:`normalize_path` turns them into the relative form and refuses any
that leave the workspace.

Example:
    >>> normalize_path("/workspace/pkg/../pkg/mod.py")
    'pkg/mod.py'
    >>> truncate("x" * 30, limit=20)
    'xxxxxxxxxx\n[... 10 characters cut ...]\nxxxxxxxxxx'
"""

from __future__ import annotations

import posixpath
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

__all__ = [
    "MAX_SNAPSHOT_FILE",
    "WORKDIR",
    "ExecResult",
    "Runtime",
    "WorkspaceFileError",
    "normalize_path",
    "skipped",
    "truncate",
]

WORKDIR = "/workspace"
"""The workspace's path as the agent sees it, in every runtime."""

MAX_SNAPSHOT_FILE = 1_000_000
"""Files larger than this (bytes) are left out of snapshots, so out of the agent's diff."""

_SKIPPED_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".git"})
_SKIPPED_SUFFIXES = (".pyc", ".pyo")


class WorkspaceFileError(Exception):
    """Raised by a runtime's file operations: no such file, a folder, a path outside, ...

    The environment turns it into feedback for the agent (an invalid action), not a crash.
    """


@dataclass(frozen=True)
class ExecResult:
    """What one shell command did.

    Attributes:
        exit_code: The command's exit status (124 when it timed out).
        output: Its standard output and error, interleaved, decoded as UTF-8 (bad bytes replaced).
        timed_out: Whether it was stopped for running too long.
    """

    exit_code: int
    output: str
    timed_out: bool = False


def normalize_path(path: str) -> str:
    """``path`` relative to the workspace, in normal form.

    Raises:
        WorkspaceFileError: If ``path`` is empty, names the workspace itself, or leaves it.
    """
    if not isinstance(path, str) or not path.strip():
        raise WorkspaceFileError("expected a file path relative to the repository, got ''")
    if "\x00" in path:
        raise WorkspaceFileError(f"the path {path!r} contains a NUL character")
    text = path.strip()
    if text.startswith("/"):
        if text != WORKDIR and not text.startswith(WORKDIR + "/"):
            raise WorkspaceFileError(
                f"{path!r} is outside the repository; give a path relative to it "
                f"(the repository is {WORKDIR})"
            )
        text = text[len(WORKDIR) :].lstrip("/")
    normal = posixpath.normpath(text) if text else "."
    if normal == "." or normal == ".." or normal.startswith("../"):
        raise WorkspaceFileError(
            f"{path!r} is not a file inside the repository; give a path such as 'pkg/module.py'"
        )
    return normal


def skipped(relative: str) -> bool:
    """Whether a workspace path is a cache, left out of snapshots (``__pycache__``, ``*.pyc``)."""
    parts = relative.split("/")
    return any(part in _SKIPPED_DIRS for part in parts) or relative.endswith(_SKIPPED_SUFFIXES)


def truncate(text: str, limit: int = 10_000) -> str:
    """``text`` cut to about ``limit`` characters, keeping its head and tail."""
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} characters cut ...]\n{text[-half:]}"


class Runtime(ABC):
    """Holds one episode's workspace and runs commands in it.

    ``start`` (re)creates the workspace; every other call needs a started runtime and raises
    :class:`~envharness.errors.BridgeError` when the runtime itself fails (e.g. the container
    engine went away). ``close`` removes everything the runtime made and is idempotent; a closed
    runtime can be started again.

    Attributes:
        kind: The runtime's option value (``"docker"`` or ``"local"``).
    """

    kind: ClassVar[str] = ""

    # -- override these ---------------------------------------------------------------------

    @abstractmethod
    def start(self, files: Mapping[str, bytes]) -> None:
        """Creates a fresh workspace holding ``files`` (relative path -> content).

        Anything a previous ``start`` made is removed first.
        """

    @abstractmethod
    def run(self, command: str, *, timeout: float) -> ExecResult:
        """Runs ``command`` with ``bash -c`` in the workspace, for at most ``timeout`` seconds."""

    @abstractmethod
    def read(self, path: str) -> bytes:
        """The content of the workspace file ``path``.

        Raises:
            WorkspaceFileError: If it is not a regular file in the workspace.
        """

    @abstractmethod
    def write(self, path: str, data: bytes) -> None:
        """Writes the workspace file ``path`` (creating its folders).

        Raises:
            WorkspaceFileError: If the path is outside the workspace or cannot be written.
        """

    @abstractmethod
    def remove(self, path: str) -> None:
        """Deletes the workspace file ``path``; a missing file is not an error."""

    @abstractmethod
    def snapshot(self) -> dict[str, bytes]:
        """Every regular file of the workspace (relative path -> content).

        Caches (see :func:`skipped`), symbolic links and files over :data:`MAX_SNAPSHOT_FILE`
        bytes are left out.
        """

    @abstractmethod
    def close(self) -> None:
        """Removes the workspace and stops everything the runtime started. Idempotent."""

    @property
    @abstractmethod
    def running(self) -> bool:
        """Whether a workspace exists (between ``start`` and ``close``)."""

    # -- machinery --------------------------------------------------------------------------

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {'running' if self.running else 'stopped'}>"
