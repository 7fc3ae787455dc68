r"""``DockerRuntime``: the workspace in a container, one per episode.

The container runs the locally built image (:data:`~envharness.bridges.swe.image.IMAGE`), with no
network, a memory limit (swap included), a process limit, one CPU, every capability dropped and
``no-new-privileges``. ``start`` creates it and copies the repository to ``/workspace``;
``close`` removes it (``docker rm -f``). A finalizer removes it too when the runtime is garbage
collected or the interpreter exits, so an env that is never closed does not leak containers.
Containers carry the label ``org.envharness.bridge=swe``.

Each command runs as ``timeout -k 2 <seconds> bash -c <command>`` through ``docker exec``; if a
detached process keeps the output open past the timeout, every process in the container but its
init is killed.

Example:
    >>> with DockerRuntime() as runtime:  # doctest: +SKIP
    ...     runtime.start({"hello.py": b"print('hi')\n"})
    ...     runtime.run("python3 hello.py", timeout=30).output
    'hi\n'
"""

from __future__ import annotations

import io
import tarfile
import threading
import time
import weakref
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from envharness.bridges.swe.image import IMAGE, docker_client, image_exists
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

__all__ = ["LABEL", "DockerRuntime", "docker_unavailable"]

LABEL = "org.envharness.bridge"
"""The label every container of the bridge carries (value ``"swe"``)."""

_MAX_OUTPUT = 1_000_000  # bytes of a command's output kept (head and tail)
_MAX_READ = 5_000_000  # the largest file read() returns
_GRACE = 15.0  # seconds past the timeout before detached processes are killed
_ENVIRONMENT = {
    "HOME": "/root",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONHASHSEED": "0",
    "PYTHONUNBUFFERED": "1",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    "TERM": "dumb",
    "NO_COLOR": "1",
}
_READ = 'if [ -d "$1" ]; then exit 3; fi; if [ ! -f "$1" ]; then exit 2; fi; '
_READ += f'if [ "$(stat -c %s -- "$1")" -gt {_MAX_READ} ]; then exit 4; fi; exec cat -- "$1"'


def docker_unavailable(image: str = IMAGE) -> str | None:
    """Why the Docker runtime cannot run here (no package, no engine, no image), or ``None``.

    Example:
        >>> reason = docker_unavailable()
        >>> reason is None or isinstance(reason, str)
        True
    """
    try:
        client = docker_client(timeout=10)
    except Exception as e:  # DependencyNotInstalled, BridgeError
        return str(e)
    try:
        if not image_exists(client, image):
            return (
                f"the image {image} is not built; build it once with "
                "`python -m envharness.bridges.swe.image build` (needs root and debootstrap)"
            )
    finally:
        client.close()
    return None


def _remove(client: Any, container_id: str) -> None:
    """Removes a container (and closes the client); quiet when it is already gone."""
    try:
        client.api.remove_container(container_id, force=True, v=True)
    except Exception:  # NotFound, or the engine went away: nothing left to do here
        pass
    finally:
        client.close()


def _tar(files: Mapping[str, bytes]) -> bytes:
    """A tar archive of ``files`` (relative paths), folders included, owned by root."""
    buffer = io.BytesIO()
    folders: set[str] = set()
    now = int(time.time())
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path, data in files.items():
            parts = path.split("/")[:-1]
            for depth in range(1, len(parts) + 1):
                folder = "/".join(parts[:depth])
                if folder not in folders:
                    folders.add(folder)
                    info = tarfile.TarInfo(folder)
                    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, now
                    archive.addfile(info)
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o644, now
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class _ChunkReader(io.RawIOBase):
    """A readable stream over an iterator of byte chunks (for ``tarfile``'s stream mode)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._left = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._left:
            try:
                self._left = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._left))
        buffer[:size] = self._left[:size]
        self._left = self._left[size:]
        return size


class DockerRuntime(Runtime):
    """A workspace in a fresh, locked-down container.

    Args:
        image: The image to run (build it with ``python -m envharness.bridges.swe.image build``).
        memory_mb: The container's memory limit, swap included, in MiB.
        pids_limit: The most processes the container may hold.
        cpus: CPUs the container may use.
        environment: Variables set in the container, replacing the default ones (``HOME``,
            ``LANG``, ``PYTHONDONTWRITEBYTECODE``, ``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` ...); the
            image's own variables stay unless named here.

    Raises:
        BridgeError: If a limit is out of range.
    """

    kind: ClassVar[str] = "docker"

    def __init__(
        self,
        *,
        image: str = IMAGE,
        memory_mb: int = 1024,
        pids_limit: int = 256,
        cpus: float = 1.0,
        environment: Mapping[str, str] | None = None,
    ) -> None:
        if not isinstance(image, str) or not image:
            raise BridgeError(f"image: expected an image tag, got {image!r}", bridge="swe")
        for name, value in (("memory_mb", memory_mb), ("pids_limit", pids_limit)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 16:
                raise BridgeError(f"{name}: expected an int >= 16, got {value!r}", bridge="swe")
        if isinstance(cpus, bool) or not isinstance(cpus, int | float) or not 0 < cpus <= 64:
            raise BridgeError(f"cpus: expected a number in (0, 64], got {cpus!r}", bridge="swe")
        self.image = image
        self.memory_mb = memory_mb
        self.pids_limit = pids_limit
        self.cpus = float(cpus)
        self.environment = dict(_ENVIRONMENT if environment is None else environment)
        self._client: Any = None
        self._container_id: str | None = None
        self._finalizer: weakref.finalize | None = None

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the container exists."""
        return self._container_id is not None

    @property
    def container_id(self) -> str | None:
        """The episode's container id (``None`` when not started)."""
        return self._container_id

    def start(self, files: Mapping[str, bytes]) -> None:
        """Creates and starts a fresh container and copies ``files`` to ``/workspace``.

        Raises:
            BridgeError: If the engine is unreachable, the image is missing or a call fails.
        """
        self.close()
        client = docker_client()
        try:
            if not image_exists(client, self.image):
                raise BridgeError(
                    f"the image {self.image} is not built; build it once with "
                    "`python -m envharness.bridges.swe.image build`, or use runtime='local'",
                    bridge="swe",
                )
            container = client.containers.create(
                self.image,
                command=["sleep", "infinity"],
                working_dir=WORKDIR,
                environment=dict(self.environment),
                network_mode="none",
                network_disabled=True,
                mem_limit=f"{self.memory_mb}m",
                memswap_limit=f"{self.memory_mb}m",
                pids_limit=self.pids_limit,
                nano_cpus=int(self.cpus * 1e9),
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                init=True,
                labels={LABEL: "swe"},
            )
        except BridgeError:
            client.close()
            raise
        except Exception as e:
            client.close()
            reason = f"cannot create a container: {type(e).__name__}: {e}"
            raise BridgeError(reason, bridge="swe") from e
        self._client, self._container_id = client, container.id
        self._finalizer = weakref.finalize(self, _remove, client, container.id)
        try:
            container.start()
            if files:
                client.api.put_archive(container.id, WORKDIR, _tar(files))
        except Exception as e:
            self.close()
            reason = f"cannot start the container: {type(e).__name__}: {e}"
            raise BridgeError(reason, bridge="swe") from e

    def close(self) -> None:
        """Removes the container (``docker rm -f``). Idempotent."""
        finalizer, self._finalizer = self._finalizer, None
        self._client = self._container_id = None
        if finalizer is not None:
            finalizer()

    def _ready(self) -> tuple[Any, str]:
        if self._client is None or self._container_id is None:
            raise BridgeError("the container is not started (call start() first)", bridge="swe")
        return self._client, self._container_id

    def _exec(self, argv: list[str], *, demux: bool = False) -> tuple[int, Any]:
        """Runs ``argv`` in the workspace and waits for it (for short helper commands)."""
        client, container_id = self._ready()
        try:
            exec_id = client.api.exec_create(container_id, argv, workdir=WORKDIR)["Id"]
            output = client.api.exec_start(exec_id, demux=demux)
            code = client.api.exec_inspect(exec_id)["ExitCode"]
        except Exception as e:
            raise BridgeError(
                f"docker exec failed (is the container gone?): {type(e).__name__}: {e}", "swe"
            ) from e
        return int(code if code is not None else -1), output

    # -- commands ---------------------------------------------------------------------------

    def run(self, command: str, *, timeout: float) -> ExecResult:
        """Runs ``bash -c command`` under ``timeout`` in the container."""
        client, container_id = self._ready()
        argv = ["timeout", "-k", "2", f"{timeout:g}", "bash", "-c", command]
        try:
            exec_id = client.api.exec_create(container_id, argv, workdir=WORKDIR)["Id"]
        except Exception as e:
            raise BridgeError(f"docker exec failed: {type(e).__name__}: {e}", bridge="swe") from e
        head, tail, failure = bytearray(), bytearray(), []

        def collect() -> None:
            try:
                for chunk in client.api.exec_start(exec_id, stream=True):
                    if len(head) < _MAX_OUTPUT // 2:
                        head.extend(chunk)
                    else:
                        tail.extend(chunk)
                        del tail[: max(0, len(tail) - _MAX_OUTPUT // 2)]
            except Exception as e:  # the engine or the container went away
                failure.append(e)

        started = time.monotonic()
        reader = threading.Thread(target=collect, name="swe-docker-exec", daemon=True)
        reader.start()
        reader.join(timeout + _GRACE)
        if reader.is_alive():  # a detached process keeps the output open: kill them all
            self._exec(["bash", "-c", "kill -9 -1"])
            reader.join(10)
            if reader.is_alive():
                raise BridgeError("a command in the container cannot be stopped", bridge="swe")
        if failure:
            raise BridgeError(
                f"docker exec failed (is the container gone?): {failure[0]}", bridge="swe"
            ) from failure[0]
        try:
            code = client.api.exec_inspect(exec_id)["ExitCode"]
        except Exception as e:
            raise BridgeError(f"docker exec failed: {type(e).__name__}: {e}", bridge="swe") from e
        elapsed = time.monotonic() - started
        code = int(code) if code is not None else 137
        timed_out = code in (124, 137) and elapsed >= timeout * 0.95
        data = bytes(head) + (b"\n[... output cut ...]\n" if len(tail) == _MAX_OUTPUT // 2 else b"")
        data += bytes(tail)
        return ExecResult(124 if timed_out else code, data.decode("utf-8", "replace"), timed_out)

    # -- files ------------------------------------------------------------------------------

    def read(self, path: str) -> bytes:
        """The content of a workspace file (at most 5 MB)."""
        relative = normalize_path(path)
        code, (out, err) = self._exec(["sh", "-c", _READ, "sh", relative], demux=True)
        if code == 3:
            raise WorkspaceFileError(f"{relative!r} is a folder, not a file")
        if code == 2:
            raise WorkspaceFileError(f"no file {relative!r} in the repository")
        if code == 4:
            raise WorkspaceFileError(f"{relative!r} is larger than {_MAX_READ} bytes")
        if code != 0:
            reason = (err or b"").decode("utf-8", "replace").strip()
            raise WorkspaceFileError(f"cannot read {relative!r}: {reason}")
        return out or b""

    def write(self, path: str, data: bytes) -> None:
        """Writes a workspace file, creating its folders."""
        relative = normalize_path(path)
        client, container_id = self._ready()
        try:
            client.api.put_archive(container_id, WORKDIR, _tar({relative: data}))
        except Exception as e:
            raise WorkspaceFileError(f"cannot write {relative!r}: {e}") from e

    def remove(self, path: str) -> None:
        """Deletes a workspace file (not a folder); a missing file is fine."""
        relative = normalize_path(path)
        code, output = self._exec(["rm", "-f", "--", relative])
        if code != 0:
            reason = (output or b"").decode("utf-8", "replace").strip()
            raise WorkspaceFileError(f"cannot delete {relative!r}: {reason}")

    def snapshot(self) -> dict[str, bytes]:
        """Every regular file of ``/workspace`` (through ``docker cp``'s archive)."""
        client, container_id = self._ready()
        files: dict[str, bytes] = {}
        try:
            chunks, _ = client.api.get_archive(container_id, WORKDIR)
            with tarfile.open(fileobj=_ChunkReader(iter(chunks)), mode="r|") as archive:
                for member in archive:
                    name = member.name.split("/", 1)[1] if "/" in member.name else ""
                    if not name or not member.isreg() or skipped(name):
                        continue
                    if member.size > MAX_SNAPSHOT_FILE:
                        continue
                    handle = archive.extractfile(member)
                    if handle is not None:
                        files[name] = handle.read()
        except Exception as e:
            raise BridgeError(
                f"cannot read the workspace from the container: {type(e).__name__}: {e}", "swe"
            ) from e
        return files

    def __repr__(self) -> str:
        where = f" {self._container_id[:12]}" if self._container_id else " stopped"
        return f"<DockerRuntime {self.image}{where}>"
