"""The host's handle on the sandbox template: one lean process that forks a child per episode.

The template is ``python -s -S -P _worker.py <fd>`` (``-I``'s isolation, spelled out, so that the
fully controlled environment can pin ``PYTHONHASHSEED=0`` and keep set iteration order, hence
episodes, reproducible). Its environment is only ``PATH`` and that seed: no API keys ever reach
it. It is started lazily, once per host process (keyed by ``os.getpid()``, so a forked host
starts its own), restarted if it died, and shut down at exit. Host and template talk over a
``SOCK_SEQPACKET`` socket pair; fds travel with ``SCM_RIGHTS``. Nothing is ever pickled.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import socket
import subprocess
import sys
import threading
from typing import Any

from envharness.errors import SandboxUnavailableError

__all__ = ["Template", "TemplateGone", "current_generation", "get_template", "shutdown", "spawn"]

_WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_worker.py")
_START_TIMEOUT = 30.0  # seconds for the template to import its modules and say hello
_REPLY_TIMEOUT = 10.0  # seconds for any control reply (a fork, a status)
_log = logging.getLogger("envharness.sandbox")


class TemplateGone(Exception):
    """Raised when the template process stopped answering (it died or closed its socket)."""


class Template:
    """One running template process (its hello is awaited on first use, not at start).

    Raises:
        SandboxUnavailableError: This platform cannot run the sandbox, or the template failed.
    """

    def __init__(self) -> None:
        if not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"):
            raise SandboxUnavailableError(
                "the rules sandbox needs Linux 5.3 or newer (pidfd_open, seccomp, Landlock)"
            )
        if not sys.executable:
            raise SandboxUnavailableError("sys.executable is empty: cannot start the sandbox")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {"PATH": os.environ.get("PATH", os.defpath), "PYTHONHASHSEED": "0"}
        args = [sys.executable, "-s", "-S", "-P", _WORKER, str(theirs.fileno())]
        try:
            self._process = subprocess.Popen(
                args,
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                cwd="/",
                start_new_session=True,
            )
        except OSError as e:
            ours.close()
            raise SandboxUnavailableError(f"cannot start the sandbox template: {e}") from e
        finally:
            theirs.close()
        self._sock = ours
        self._lock = threading.Lock()
        self.owner = os.getpid()
        self._hello: dict[str, Any] | None = None
        self._gone = False

    @property
    def pid(self) -> int:
        """The template's process id."""
        return self._process.pid

    @property
    def alive(self) -> bool:
        """Whether the template process is running and its socket is usable."""
        return not self._gone and self._process.poll() is None

    @property
    def hello(self) -> dict[str, Any]:
        """What the template reported at start: ``pid``, ``landlock_abi``, ``seccomp``, warnings."""
        with self._lock:
            return self._ensure_hello()

    def _ensure_hello(self) -> dict[str, Any]:
        if self._hello is not None:
            return self._hello
        self._sock.settimeout(_START_TIMEOUT)
        try:
            data = self._sock.recv(1 << 16)
        except OSError as e:
            data = b""
            reason = f"no hello ({e})"
        else:
            reason = "it exited during start-up"
        self._sock.settimeout(_REPLY_TIMEOUT)
        message = json.loads(data) if data else {}
        if "hello" not in message:
            self._gone = True
            self.close()
            detail = message.get("fatal", reason)
            raise SandboxUnavailableError(
                f"the sandbox template failed to start: {detail} "
                f"(exit code {self._process.returncode})"
            )
        self._hello = message["hello"]
        for warning in self._hello["warnings"]:
            _log.warning("rules sandbox: %s", warning)
        return self._hello

    def _request(self, message: dict[str, Any], fds: tuple[int, ...] = ()) -> tuple[dict, list]:
        with self._lock:
            self._ensure_hello()
            data = json.dumps(message).encode()
            try:
                if fds:
                    socket.send_fds(self._sock, [data], list(fds))
                else:
                    self._sock.send(data)
                reply, received, _, _ = socket.recv_fds(self._sock, 1 << 16, 1)
            except OSError as e:  # includes TimeoutError
                self._gone = True
                raise TemplateGone(str(e)) from e
            if not reply:
                self._gone = True
                raise TemplateGone("end of file")
            return json.loads(reply), received

    def spawn(self, request_fd: int, reply_fd: int) -> tuple[int, int]:
        """Forks a child that reads requests from ``request_fd`` and writes replies to ``reply_fd``.

        Returns:
            The child's pid and a pidfd for it (owned by the caller).

        Raises:
            TemplateGone: The template is not answering.
        """
        reply, fds = self._request({"op": "spawn"}, (request_fd, reply_fd))
        if "pid" not in reply or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            raise SandboxUnavailableError(f"the sandbox template could not fork: {reply}")
        return int(reply["pid"]), fds[0]

    def status(self, pid: int) -> str:
        """How the template's child ``pid`` ended (e.g. ``"killed by SIGSEGV"``)."""
        reply, _ = self._request({"op": "status", "pid": pid})
        return str(reply.get("status", "unknown"))

    def children(self) -> list[int]:
        """The pids of the template's children that have not exited yet."""
        reply, _ = self._request({"op": "children"})
        return list(reply["pids"])

    def close(self) -> None:
        """Closes the socket (the template then kills its children and exits) and waits for it."""
        self._gone = True
        self._sock.close()
        if self.owner != os.getpid():
            return
        try:
            self._process.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def _forget(self) -> None:
        """In a forked host: drop the inherited socket without talking to the parent's template."""
        self._gone = True
        self._sock.close()
        self._process.returncode = 0  # not our child: never wait for it


_state_lock = threading.Lock()
_template: Template | None = None
_generation = 0


def current_generation() -> int:
    """A number that changes in a forked child, so objects can tell they crossed a fork."""
    return _generation


def get_template() -> Template:
    """The running template of this process, started (or restarted) if needed."""
    global _template
    with _state_lock:
        template = _template
        if template is not None and template.owner != os.getpid():
            template._forget()  # a fork the at-fork hook did not see
            template = None
        if template is None or not template.alive:
            if template is not None:
                template.close()
            template = _template = Template()
        return template


def spawn(request_fd: int, reply_fd: int) -> tuple[Template, int, int]:
    """Forks a sandbox child through the template, restarting a dead template once.

    Returns:
        The template that forked the child, the child's pid and a pidfd for it.

    Raises:
        SandboxUnavailableError: The template cannot be (re)started or does not answer.
    """
    for attempt in range(2):
        template = get_template()
        try:
            pid, pidfd = template.spawn(request_fd, reply_fd)
        except TemplateGone as e:
            if attempt:
                raise SandboxUnavailableError(f"the sandbox template stopped answering: {e}") from e
            continue
        return template, pid, pidfd
    raise AssertionError("unreachable")


def shutdown() -> None:
    """Stops this process's template (it is restarted on next use)."""
    global _template
    with _state_lock:
        if _template is not None:
            _template.close()
            _template = None


def _after_fork_in_child() -> None:
    global _state_lock, _template, _generation
    _state_lock = threading.Lock()
    _generation += 1
    if _template is not None:
        _template._forget()
        _template = None


os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(shutdown)
