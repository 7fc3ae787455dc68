"""The sandbox worker: a lean template process that forks one contained child per episode.

The host starts this file as a script (see :mod:`envharness.sandbox.template`) with one argument,
the fd of its end of a ``SOCK_SEQPACKET`` control socket. It imports nothing from envharness: it
loads its siblings ``policy.py``, ``protocol.py`` and ``kernel.py`` by file path.

Template (runs once per host process):
    Imports the modules rules code may use, builds the Landlock ruleset and the seccomp filter,
    freezes the GC (cheaper forks), says hello, then serves JSON requests on the control socket::

        {"op": "spawn"} + fds [request read end, reply write end] -> {"pid": N} + fds [pidfd]
        {"op": "status", "pid": N}   -> {"status": "exited with code 0" | "killed by SIGSEGV"}
        {"op": "children"}           -> {"pids": [...]}

    It polls a pidfd per child and reaps each child as soon as it exits (no zombies), and when
    the host closes the socket it kills its children and exits.

Child (one per episode), in this order:
    fds: requests on 3, replies on 4, the Landlock ruleset on 5, ``/dev/null`` on 0-2, all others
    closed; new session; parent-death signal; read the init frame (code, seed, limits);
    environment reduced to ``PATH``; rlimits; capabilities dropped; ``no_new_privs``; Landlock;
    seccomp; then the rules code runs with restricted builtins, ``random`` seeded, one ``_Rules()``
    instance, and the child answers hook requests until end of file on fd 3.
"""

from __future__ import annotations

import _socket
import array
import builtins
import dis
import gc
import json
import os
import select
import signal
import sys
import types
from importlib.machinery import SourceFileLoader
from typing import Any

REQUEST_FD = 3
REPLY_FD = 4
RULESET_FD = 5
_INIT_CAP = 1 << 30
_MESSAGE_LIMIT = 2000
_HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name: str) -> types.ModuleType:
    """Loads a sibling module by path (``importlib.util`` would cost the template ~10 ms)."""
    path = os.path.join(_HERE, f"{name}.py")
    fullname = f"_envharness_sandbox_{name}"
    loader = SourceFileLoader(fullname, path)
    module = types.ModuleType(fullname)
    module.__file__ = path
    module.__loader__ = loader
    loader.exec_module(module)
    return module


def _send(sock: Any, data: bytes, fds: list[int] | None = None) -> None:
    """``socket.send_fds`` on a raw ``_socket`` (the ``socket`` module costs ~7 ms to import)."""
    rights = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    sock.sendmsg([data], rights)


def _receive(sock: Any, max_fds: int) -> tuple[bytes, list[int]]:
    fds = array.array("i")
    data, ancillary, _, _ = sock.recvmsg(1 << 16, _socket.CMSG_LEN(max_fds * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    return data, list(fds)


policy = _load("policy")
protocol = _load("protocol")
kernel = _load("kernel")


def _describe(exc: BaseException) -> str:
    """``"<ExcType>: <message>"``, truncated, robust to a hostile ``__str__``."""
    try:
        name = str(type(exc).__name__)
    except BaseException:
        name = "Exception"
    try:
        text = str(exc)
    except BaseException:
        text = "<unprintable>"
    message = f"{name}: {text}" if text else name
    return message if len(message) <= _MESSAGE_LIMIT else message[:_MESSAGE_LIMIT] + "..."


def _rules_line(exc: BaseException) -> int | None:
    """The line of the rules code that raised ``exc`` (its innermost ``<rules>`` frame), if any.

    Only a plain int leaves the child; anything odd about the traceback gives ``None``.
    """
    try:
        line = None
        tb = exc.__traceback__
        for _ in range(100_000):
            if tb is None:
                break
            if tb.tb_frame.f_code.co_filename == "<rules>":
                line = tb.tb_lineno
            tb = tb.tb_next
        return line if type(line) is int and line > 0 else None
    except BaseException:
        return None


def _failure(key: str, exc: BaseException, **extra: Any) -> dict[str, Any]:
    """An error reply: ``{key: description, "line": N, **extra}`` (``line`` when known)."""
    reply: dict[str, Any] = {key: _describe(exc), **extra}
    line = _rules_line(exc)
    if line is not None:
        reply["line"] = line
    return reply


def _type_name(value: Any) -> str:
    try:
        return str(type(value).__name__)[:100]
    except BaseException:
        return "object"


# -- the child -------------------------------------------------------------------------------------


class _Layers:
    """What the template prepared for its children."""

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.ruleset = -1
        self.landlock_abi = kernel.landlock_abi()
        if self.landlock_abi:
            try:
                self.ruleset = kernel.landlock_ruleset(_read_paths(), self.landlock_abi)
            except OSError as e:
                self.warnings.append(f"Landlock is offered but could not be set up ({e})")
                self.landlock_abi = 0
        else:
            self.warnings.append(
                "Landlock is not available on this kernel: rules code can read any file this "
                "user can read (RLIMIT_FSIZE=0 still stops it from writing data to files)"
            )
        self.seccomp: Any = None
        try:
            self.seccomp = kernel.SeccompFilter()
        except OSError as e:
            self.warnings.append(
                f"seccomp is not available ({e}): rules code is contained only by rlimits, "
                "Landlock and restricted builtins"
            )
        if self.seccomp is not None and self.seccomp.unknown:
            names = ", ".join(self.seccomp.unknown)
            self.warnings.append(f"seccomp cannot filter syscalls unknown to libseccomp: {names}")


def _read_paths() -> list[str]:
    paths = [sys.base_prefix, sys.prefix, sys.base_exec_prefix, sys.exec_prefix]
    paths.append(os.path.dirname(os.__file__))
    paths.extend(p for p in sys.path if p)
    return [os.path.realpath(p) for p in paths]


def _move_fds(request: int, reply: int, ruleset: int) -> None:
    import fcntl

    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (request, reply)]
    if ruleset >= 0:
        moved.append(fcntl.fcntl(ruleset, fcntl.F_DUPFD_CLOEXEC, 10))
    for target, fd in zip((REQUEST_FD, REPLY_FD, RULESET_FD), moved, strict=False):
        os.dup2(fd, target, inheritable=False)
    os.closerange(REQUEST_FD + len(moved), 1 << 20)
    null = os.open("/dev/null", os.O_RDWR)
    for target in (0, 1, 2):
        os.dup2(null, target)
    os.close(null)


def _lock_down(init: dict[str, Any], layers: _Layers) -> dict[str, Any]:
    """Applies every layer in order; returns what is measurably in force."""
    path = os.environ.get("PATH", os.defpath)
    os.environ.clear()
    os.environ["PATH"] = path
    limits = init["limits"]
    kernel.apply_rlimits(
        limits["episode_cpu_seconds"], limits["memory_headroom_mb"], limits["max_open_files"]
    )
    warnings: list[str] = []
    try:
        kernel.drop_capabilities()
    except OSError as e:
        warnings.append(f"could not drop capabilities ({e})")
    kernel.set_parent_death_signal(signal.SIGKILL)  # credential changes may clear it
    kernel.set_no_new_privs()
    no_new_privs = kernel.no_new_privs()  # measured before seccomp denies prctl
    if layers.ruleset >= 0:
        kernel.landlock_restrict(RULESET_FD)
        os.close(RULESET_FD)
    if layers.seccomp is not None:
        layers.seccomp.load()
    return {
        "seccomp": layers.seccomp is not None and layers.seccomp.active(),
        "landlock_abi": layers.landlock_abi if kernel.landlock_blocks_root() else 0,
        "no_new_privs": no_new_privs,
        "capabilities_dropped": kernel.capabilities_empty(),
        "warnings": warnings,
    }


def _safe_import(allowed: frozenset[str]) -> Any:
    real_import = builtins.__import__
    listing = ", ".join(sorted(allowed))

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level:
            raise ImportError("relative imports are not allowed in rules code")
        if name.partition(".")[0] not in allowed:
            raise ImportError(
                f"import of {name!r} is not allowed in rules code; allowed: {listing}"
            )
        return real_import(name, globals, locals, fromlist, level)

    return guarded_import


def _restricted_builtins() -> dict[str, Any]:
    table = {k: v for k, v in vars(builtins).items() if k not in policy.REMOVED_BUILTINS}
    table["__import__"] = _safe_import(policy.ALLOWED_IMPORTS)
    return table


def _load_rules(init: dict[str, Any]) -> tuple[Any, types.CodeType]:
    """Runs the rules code; returns the ``_Rules()`` instance and the compiled module code."""
    import random

    random.seed(init["seed"])
    module = types.ModuleType("_rules")
    module.__dict__["__builtins__"] = vars(builtins) if init["trusted"] else _restricted_builtins()
    sys.modules["_rules"] = module
    code = compile(init["code"], "<rules>", "exec", dont_inherit=True)
    exec(code, module.__dict__)
    cls = module.__dict__.get("_Rules")
    if not isinstance(cls, type):
        raise TypeError("the code defines no class _Rules")
    return cls(), code


# Names through which code could reach a frame's locals (and so a ``state`` it never names).
_FRAME_NAMES = frozenset(
    {
        "locals",
        "vars",
        "f_locals",
        "f_back",
        "tb_frame",
        "gi_frame",
        "cr_frame",
        "ag_frame",
        "_getframe",
        "currentframe",
        "stack",
        "trace",
    }
)
_STAR_ARGS = 0x04 | 0x08  # CO_VARARGS | CO_VARKEYWORDS


def _code_objects(code: types.CodeType) -> list[types.CodeType]:
    found, todo = [], [code]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return found


def _introspects(code: types.CodeType) -> bool:
    """Whether any code of the module names a way into frames (then every hook reads state)."""
    return any(_FRAME_NAMES.intersection(c.co_names) for c in _code_objects(code))


def _reads_state(method: Any, position: int) -> bool:
    """Whether a hook method may read its parameter ``position`` (``state``); ``True`` if unsure.

    Only a plain function bound as a method, without ``*args``/``**kwargs``, whose bytecode never
    names the parameter and whose inner functions do not capture it, counts as not reading it.
    """
    try:
        function = method.__func__
        if type(method) is not types.MethodType or type(function) is not types.FunctionType:
            return True
        code = function.__code__
        if code.co_flags & _STAR_ARGS or code.co_argcount <= position:
            return True
        name = code.co_varnames[position]
        if name in code.co_cellvars:
            return True
        for instruction in dis.get_instructions(code):
            value = instruction.argval
            if type(value) is str and value == name:
                return True
            if type(value) is tuple and name in value:
                return True
        return False
    except BaseException:
        return True


class _HookFailed(Exception):
    """Carries the error reply of a hook that raised or returned the wrong type."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply


def _raised(hook: str, exc: BaseException) -> _HookFailed:
    return _HookFailed(_failure("raised", exc, hook=hook))


def _after_step(rules: Any, hooks: frozenset[str]) -> Any:
    modify = "modify_transition" in hooks
    filtered = "filter_observation" in hooks

    def after_step(action: Any, observation: Any, state: Any) -> Any:
        if modify:
            try:
                observation = rules.modify_transition(action, observation, state)
            except BaseException as e:
                raise _raised("modify_transition", e) from None
            if filtered and type(observation) is not str:
                detail = {"returned": _type_name(observation), "detail": "a str"}
                raise _HookFailed({**detail, "hook": "modify_transition"})
        if filtered:
            try:
                observation = rules.filter_observation(observation, state)
            except BaseException as e:
                raise _raised("filter_observation", e) from None
        return observation

    return after_step


class _Server:
    """Answers the host's hook calls (:func:`protocol.hook_request` bodies) for one ``_Rules()``.

    It keeps the JSON text of the last ``state`` the host sent and decodes a fresh copy of it for
    every call, so a hook that mutates its ``state`` never changes what the next hook sees.
    """

    def __init__(self, rules: Any, hooks: frozenset[str], cap: int, introspects: bool) -> None:
        self.cap = cap
        self.state_text: str | None = None
        reads = {
            h: introspects or _reads_state(getattr(rules, h), len(policy.HOOK_PARAMS[h]))
            for h in hooks
        }
        after = [h for h in ("modify_transition", "filter_observation") if h in hooks]
        needs = {h for h in ("filter_action", "filter_observation") if reads.get(h)}
        if any(reads[h] for h in after):
            needs.add("after_step")
        self.needs_state = sorted(needs)
        """The calls (``filter_action``, ``after_step``, ``filter_observation``) that read state."""
        self.table: dict[str, tuple[Any, str]] = {}
        if "filter_action" in hooks:
            self.table[protocol.OP_FILTER_ACTION] = (rules.filter_action, "filter_action")
        if "filter_observation" in hooks:
            self.table[protocol.OP_FILTER_OBSERVATION] = (
                rules.filter_observation,
                "filter_observation",
            )
        if hooks & {"modify_transition", "filter_observation"}:
            last = "filter_observation" if "filter_observation" in hooks else "modify_transition"
            self.table[protocol.OP_AFTER_STEP] = (_after_step(rules, hooks), last)

    def answer(self, body: Any, seq: int) -> bytes:
        """The reply frame to one hook call.

        Raises:
            protocol.BadFrame: The body is not a hook call this instance can answer.
        """
        op, first, state_text = protocol.split_hook_request(body)
        if state_text is None:
            state_text = self.state_text
            if state_text is None:
                raise protocol.BadFrame("no state was sent before")
        elif state_text is not protocol.NO_STATE:
            self.state_text = state_text
        entry = self.table.get(op)
        if entry is None:
            raise protocol.BadFrame(f"no handler for op {op!r}")
        function, hook = entry
        decode = protocol.decode_text
        head = decode(first)
        state = None if state_text is protocol.NO_STATE else decode(state_text)
        if op == protocol.OP_AFTER_STEP:
            if type(head) is not list or len(head) != 2:
                raise protocol.BadFrame("after_step takes [action, observation]")
            unchanged = head[1]
            args: tuple[Any, ...] = (head[0], unchanged, state)
        elif op == protocol.OP_FILTER_ACTION:
            unchanged = None
            args = (head, state)
        else:
            unchanged = head
            args = (head, state)
        value = None
        try:
            value = function(*args)
        except _HookFailed as e:
            return protocol.encode(e.reply, seq)
        except BaseException as e:
            return protocol.encode(_failure("raised", e, hook=hook), seq)
        cap = self.cap
        if type(value) is str:
            if value == unchanged:
                return protocol.HEADER.pack(1, seq) + protocol.SAME
            if len(value) > cap:  # its JSON is longer still: skip encoding it
                reply = {"too_big": len(value), "hook": hook, "returned": "str"}
                return protocol.encode(reply, seq)
            text = protocol.encode_text(value)
        else:
            try:
                text = protocol.encode_text(value)
            except BaseException as e:
                detail = f"not JSON-serializable ({_describe(e)})"
                reply = {"returned": _type_name(value), "hook": hook, "detail": detail}
                return protocol.encode(reply, seq)
            if text == first and op == protocol.OP_FILTER_ACTION:
                return protocol.HEADER.pack(1, seq) + protocol.SAME
        data = ('{"ok":' + text + "}").encode()
        if len(data) > cap:
            reply = {"too_big": len(data), "hook": hook, "returned": "value"}
            return protocol.encode(reply, seq)
        return protocol.HEADER.pack(len(data), seq) + data


def _child_main(request: int, reply: int, template_pid: int, layers: _Layers) -> None:
    _move_fds(request, reply, layers.ruleset)
    os.setsid()
    kernel.set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != template_pid:
        return
    requests = protocol.BlockingReader(REQUEST_FD, _INIT_CAP)
    frame = requests.read()
    if frame is None:
        return
    _, init = frame
    cap = requests.cap = init["limits"]["max_message_bytes"]
    write = protocol.write_all_blocking
    try:
        protections = _lock_down(init, layers)
    except BaseException as e:
        write(REPLY_FD, protocol.encode({"setup_failed": _describe(e)}, 0))
        return
    try:
        rules, code = _load_rules(init)
        hooks = frozenset(h for h in policy.HOOKS if callable(getattr(rules, h, None)))
        server = _Server(rules, hooks, cap, _introspects(code))
    except BaseException as e:
        write(REPLY_FD, protocol.encode(_failure("load_failed", e), 0))
        return
    ready = {
        "ready": {
            "hooks": sorted(hooks),
            "needs_state": server.needs_state,
            "protections": protections,
        }
    }
    write(REPLY_FD, protocol.encode(ready, 0))
    read = requests.read_raw
    answer = server.answer
    while True:
        frame = read()
        if frame is None:
            return
        write(REPLY_FD, answer(frame[1], frame[0]))


def _run_child(request: int, reply: int, template_pid: int, layers: _Layers) -> None:
    """Never returns: whatever happens, the forked child ends here."""
    code = 0
    try:
        _child_main(request, reply, template_pid, layers)
    except BaseException:
        code = 70
    finally:
        os._exit(code)


# -- the template ----------------------------------------------------------------------------------


def _status_text(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        return f"exited with code {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"


class _Template:
    """Serves spawn requests and reaps children."""

    _KEEP_EXITED = 512

    def __init__(self, ctrl: Any, layers: _Layers) -> None:
        self.ctrl = ctrl
        self.layers = layers
        self.pid = os.getpid()
        self.children: dict[int, int] = {}  # pidfd -> pid
        self.exited: dict[int, str] = {}  # pid -> status text, until the host asks
        self.poller = select.poll()
        self.poller.register(ctrl.fileno(), select.POLLIN)

    def serve(self) -> None:
        ctrl_fd = self.ctrl.fileno()
        while True:
            for fd, _ in self.poller.poll():
                if fd != ctrl_fd:
                    self._reap(fd)
                elif not self._handle():
                    return

    def _send(self, reply: dict[str, Any], fds: list[int] | None = None) -> None:
        _send(self.ctrl, json.dumps(reply).encode(), fds)

    def _handle(self) -> bool:
        try:
            data, fds = _receive(self.ctrl, 4)
        except OSError:
            return False
        if not data:
            return False
        request = json.loads(data)
        op = request.get("op")
        try:
            if op == "spawn" and len(fds) == 2:
                self._spawn(*fds)
            elif op == "status":
                self._send({"status": self._status(int(request["pid"]))})
            elif op == "children":
                self._send({"pids": sorted(self.children.values())})
            else:
                self._send({"error": f"bad request {request!r}"})
        except OSError as e:  # e.g. fork failed: report it, keep serving
            self._send({"error": f"{op} failed: {e}"})
        finally:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
        return True

    def _spawn(self, request: int, reply: int) -> None:
        pid = os.fork()
        if pid == 0:
            _run_child(request, reply, self.pid, self.layers)
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise
        self.children[pidfd] = pid
        self.poller.register(pidfd, select.POLLIN)
        try:
            self._send({"pid": pid}, [pidfd])
        except OSError:
            os.kill(pid, signal.SIGKILL)

    def _reap(self, pidfd: int) -> bool:
        """Reaps the child behind ``pidfd`` if it has exited; returns whether it did.

        Poll events can be stale: a status request may have reaped the child already, and its fd
        number may belong to a newer child by now.
        """
        pid = self.children.get(pidfd)
        if pid is None:
            return False
        done, status = os.waitpid(pid, os.WNOHANG)
        if not done:
            return False
        del self.children[pidfd]
        self.poller.unregister(pidfd)
        os.close(pidfd)
        self.exited[pid] = _status_text(status)
        while len(self.exited) > self._KEEP_EXITED:
            del self.exited[next(iter(self.exited))]
        return True

    def _status(self, pid: int) -> str:
        for pidfd, child in list(self.children.items()):
            if child == pid:
                waiter = select.poll()
                waiter.register(pidfd, select.POLLIN)
                if not waiter.poll(2000) or not self._reap(pidfd):
                    return "still running"
        return self.exited.pop(pid, "unknown")

    def shutdown(self) -> None:
        for pidfd, pid in list(self.children.items()):
            try:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except OSError:
                pass
            os.waitpid(pid, 0)


def main(argv: list[str]) -> int:
    """Runs the template until the host closes the control socket."""
    ctrl = _socket.socket(fileno=int(argv[1]))
    try:
        for name in sorted(policy.ALLOWED_IMPORTS):
            __import__(name)
        __import__("collections.abc")
        layers = _Layers()
        gc.collect()
        gc.freeze()
        hello = {
            "pid": os.getpid(),
            "landlock_abi": layers.landlock_abi,
            "seccomp": layers.seccomp is not None,
            "warnings": layers.warnings,
        }
        ctrl.send(json.dumps({"hello": hello}).encode())
    except BaseException as e:
        ctrl.send(json.dumps({"fatal": _describe(e)}).encode())
        return 1
    template = _Template(ctrl, layers)
    try:
        template.serve()
    finally:
        template.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
