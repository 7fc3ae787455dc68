r"""``LocalRuntime``: the workspace in a temporary folder, commands in limited subprocesses.

No container engine is needed, but this is **not a security boundary**: the agent's commands run
on this machine as the current user. Each command runs with ``bash -c`` in its own process group,
with a wall-clock timeout (the whole group is killed), resource limits (address space, file size,
open files, CPU time, no core dumps) and a stripped environment (no API keys, no user settings):
``PATH`` starts with a folder whose ``python3`` is the interpreter running EnvHarness, so
``python3 -m pytest`` finds pytest where EnvHarness does. Use it for trusted policies, tests and
machines without Docker; use :class:`~envharness.bridges.swe.docker_runtime.DockerRuntime` for
anything else.

Command output shows the workspace as ``/workspace``, as in the container, so observations do not
depend on the temporary folder's name; commands themselves should use relative paths.

Example:
    >>> with LocalRuntime() as runtime:
    ...     runtime.start({"pkg/mod.py": b"X = 1\n"})
    ...     result = runtime.run("python3 -c 'import pkg.mod; print(pkg.mod.X)'; pwd", timeout=30)
    >>> result.exit_code, result.output.split()
    (0, ['1', '/workspace'])
"""

from __future__ import annotations

import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO, ClassVar

from envharness.bridgekit.checks import check_positive_int
from envharness.bridges.swe.runtime import (
    MAX_SNAPSHOT_FILE,
    WORKDIR,
    ExecResult,
    Runtime,
    WorkspaceFileError,
    normalize_path,
    skipped,
)
from envharness.errors import BridgeError

__all__ = ["LocalRuntime"]

_MAX_OUTPUT = 1_000_000  # bytes of a command's output that are read back
_TIMED_OUT = 124  # the exit status `timeout` gives, used for parity with the container
_ULIMIT_FLAGS = {  # resource -> (bash `ulimit` flag, the flag's unit in bytes or seconds)
    resource.RLIMIT_AS: ("v", 1024),
    resource.RLIMIT_FSIZE: ("f", 1024),
    resource.RLIMIT_NOFILE: ("n", 1),
    resource.RLIMIT_CORE: ("c", 1024),
    resource.RLIMIT_CPU: ("t", 1),
}


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_output(handle: BinaryIO, size: int) -> bytes:
    """The head and tail of a command's output file (at most ``_MAX_OUTPUT`` bytes in all)."""
    handle.seek(0)
    if size <= _MAX_OUTPUT:
        return handle.read()
    half = _MAX_OUTPUT // 2
    head = handle.read(half)
    handle.seek(size - half)
    return head + b"\n[... output cut ...]\n" + handle.read()


class LocalRuntime(Runtime):
    """A workspace in a temporary folder; commands run as limited local subprocesses.

    Args:
        memory_mb: The address-space limit of each command, in MiB.
        max_file_mb: The largest file a command may write, in MiB.
        max_open_files: Open files per process.

    Raises:
        BridgeError: If a limit is not a positive int.
    """

    kind: ClassVar[str] = "local"

    def __init__(
        self, *, memory_mb: int = 2048, max_file_mb: int = 64, max_open_files: int = 512
    ) -> None:
        for name, value in (
            ("memory_mb", memory_mb),
            ("max_file_mb", max_file_mb),
            ("max_open_files", max_open_files),
        ):
            check_positive_int(name, value, bridge="swe")
        self._limits = {
            resource.RLIMIT_AS: memory_mb * 2**20,
            resource.RLIMIT_FSIZE: max_file_mb * 2**20,
            resource.RLIMIT_NOFILE: max_open_files,
            resource.RLIMIT_CORE: 0,
        }
        self._root: Path | None = None
        self._workspace: Path | None = None
        self._env: dict[str, str] = {}
        self._finalizer: weakref.finalize | None = None

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the temporary folder exists."""
        return self._root is not None

    def start(self, files: Mapping[str, bytes]) -> None:
        """Makes a fresh temporary workspace holding ``files``."""
        self.close()
        root = Path(tempfile.mkdtemp(prefix="envharness-swe-"))
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(root), True)
        self._root = root
        self._workspace = root / "workspace"
        for folder in ("workspace", "home", "tmp", "bin"):
            (root / folder).mkdir()
        for name in ("python3", "python"):  # `python3` is the interpreter running EnvHarness
            shim = root / "bin" / name
            shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
            shim.chmod(0o755)
        self._env = {
            "PATH": f"{root / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(root / "home"),
            "TMPDIR": str(root / "tmp"),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
            "PYTHONUNBUFFERED": "1",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            "TERM": "dumb",
            "NO_COLOR": "1",
        }
        for path, data in files.items():
            self.write(path, data)

    def close(self) -> None:
        """Deletes the temporary folder. Idempotent."""
        finalizer, self._finalizer = self._finalizer, None
        self._root = self._workspace = None
        if finalizer is not None:
            finalizer()

    def _ready(self) -> Path:
        if self._workspace is None:
            raise BridgeError("the workspace is not started (call start() first)", bridge="swe")
        return self._workspace

    # -- commands ---------------------------------------------------------------------------

    def _ulimits(self, timeout: float) -> str:
        """``ulimit`` options for the limits, capped by this process's own hard limits."""
        wanted = {**self._limits, resource.RLIMIT_CPU: int(timeout) + 5}
        parts = []
        for which, value in wanted.items():
            flag, unit = _ULIMIT_FLAGS[which]
            hard = resource.getrlimit(which)[1]
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            parts.append(f"-{flag} {value // unit}")
        return " ".join(parts)

    def run(self, command: str, *, timeout: float) -> ExecResult:
        """Runs ``bash -c command`` in the workspace; kills its process group at the timeout."""
        workspace = self._ready()
        assert self._root is not None
        with tempfile.TemporaryFile(dir=self._root) as out:
            # bash sets the limits (soft and hard) on itself, then runs the command: no Python
            # code between fork and exec, so this is safe with threads
            limited = f'ulimit -S -H {self._ulimits(timeout)} && exec bash -c "$1"'
            try:
                process = subprocess.Popen(
                    ["bash", "-c", limited, "bash", command],
                    cwd=workspace,
                    env=self._env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except OSError as e:
                raise BridgeError(f"cannot start bash: {e}", bridge="swe") from e
            timed_out = False
            try:
                code = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(process.pid)
                process.wait()
                code = _TIMED_OUT
            finally:
                _kill_group(process.pid)  # background jobs left in the group
            data = _read_output(out, out.seek(0, os.SEEK_END))
        text = data.decode("utf-8", "replace")
        for shown in {str(workspace), os.path.realpath(workspace)}:
            text = text.replace(shown, WORKDIR)
        return ExecResult(code if code >= 0 else 128 - code, text, timed_out)

    # -- files ------------------------------------------------------------------------------

    def _resolve(self, path: str) -> tuple[str, Path]:
        """The normal relative path and its real location, checked to be in the workspace."""
        workspace = self._ready()
        relative = normalize_path(path)
        real = Path(os.path.realpath(workspace / relative))
        if not real.is_relative_to(os.path.realpath(workspace)):
            raise WorkspaceFileError(f"{path!r} leads outside the repository (a symbolic link)")
        return relative, real

    def read(self, path: str) -> bytes:
        """The content of a workspace file."""
        relative, real = self._resolve(path)
        if real.is_dir():
            raise WorkspaceFileError(f"{relative!r} is a folder, not a file")
        try:
            return real.read_bytes()
        except FileNotFoundError:
            raise WorkspaceFileError(f"no file {relative!r} in the repository") from None
        except OSError as e:
            raise WorkspaceFileError(f"cannot read {relative!r}: {e.strerror}") from e

    def write(self, path: str, data: bytes) -> None:
        """Writes a workspace file, creating its folders."""
        relative, real = self._resolve(path)
        try:
            real.parent.mkdir(parents=True, exist_ok=True)
            real.write_bytes(data)
        except OSError as e:
            raise WorkspaceFileError(f"cannot write {relative!r}: {e.strerror}") from e

    def remove(self, path: str) -> None:
        """Deletes a workspace file (not a folder); a missing file is fine."""
        relative = normalize_path(path)
        target = self._ready() / relative
        if target.is_dir() and not target.is_symlink():
            raise WorkspaceFileError(f"{relative!r} is a folder, not a file")
        target.unlink(missing_ok=True)

    def snapshot(self) -> dict[str, bytes]:
        """Every regular file of the workspace, caches and links left out."""
        workspace = self._ready()
        files: dict[str, bytes] = {}
        for folder, dirs, names in os.walk(workspace):
            base = Path(folder).relative_to(workspace).as_posix()
            dirs[:] = sorted(d for d in dirs if not skipped(d))
            for name in sorted(names):
                relative = name if base == "." else f"{base}/{name}"
                full = Path(folder) / name
                if skipped(relative) or full.is_symlink() or not full.is_file():
                    continue
                try:
                    if full.stat().st_size <= MAX_SNAPSHOT_FILE:
                        files[relative] = full.read_bytes()
                except OSError:  # vanished or unreadable: not part of the snapshot
                    continue
        return files

    def __repr__(self) -> str:
        where = f" {self._root}" if self._root is not None else " stopped"
        return f"<LocalRuntime{where}>"
