"""The host side of the sandbox: ``RulesSandbox`` holds checked code, ``RulesSession`` runs it.

Each episode gets one child process, forked by the template (:mod:`.template`), holding one
``_Rules()`` instance. A hook call is one request frame and one reply frame (:mod:`.protocol`)
under a wall-clock deadline; any failure (the hook raised, hung, returned the wrong type, the
child died, broke the protocol or sent too much) kills the child and raises
:class:`~envharness.errors.RulesError` naming the hook, and the session stays dead.
"""

from __future__ import annotations

import json
import os
import select
import signal
import threading
import time
from types import TracebackType
from typing import Any

from envharness.errors import RulesError, SandboxUnavailableError
from envharness.sandbox import affinity, protocol, template
from envharness.sandbox.check import RulesCodeInfo, check_rules_code, describe_rules_code
from envharness.sandbox.limits import SandboxLimits
from envharness.sandbox.policy import HOOKS

__all__ = ["RulesSandbox", "RulesSession", "kernel_protections"]

_START_ALLOWANCE = 2.0  # seconds on top of call_timeout for a child to lock down and load
_EXIT_GRACE = 0.25  # seconds a child that closed its channel gets to finish exiting
_SPIN_SECONDS = 200e-6  # how long the host yields its CPU to a child beside it before sleeping
_TEXT_LIMIT = 2000
_ACTION_EXPECTED = "an action dict {'tool': str, 'args': dict} or a str"

_encode = protocol.encode
_encode_text = protocol.encode_text
_hook_request = protocol.hook_request
_pack_header = protocol.HEADER.pack
_decode = protocol.decode
_monotonic = time.monotonic
_SAME = protocol.SAME
_OP_FILTER_ACTION = protocol.OP_FILTER_ACTION
_OP_AFTER_STEP = protocol.OP_AFTER_STEP
_OP_FILTER_OBSERVATION = protocol.OP_FILTER_OBSERVATION
_NO_STATE = protocol.NO_STATE
_CALLS = {
    "filter_action": _OP_FILTER_ACTION,
    "after_step": _OP_AFTER_STEP,
    "filter_observation": _OP_FILTER_OBSERVATION,
}


class RulesSandbox:
    """Holds statically checked rules code and starts one isolated child process per episode.

    Args:
        code: Python source defining ``class _Rules`` (see :func:`check_rules_code`).
        limits: Time, CPU, memory and message limits; the defaults are safe.
        _unchecked: Test-only seam: skip the static check, to prove the kernel walls hold even
            when the lint is fooled. Never use it for real rules code.
        _trusted_builtins: Test-only seam: give the code the real builtins (real ``__import__``,
            ``open``, ``eval``), to prove the kernel walls hold without the restricted builtins.

    Raises:
        RulesError: The code fails the static check, or is larger than ``max_message_bytes``.
        SandboxUnavailableError: This machine cannot run the sandbox.

    Example:
        >>> sandbox = RulesSandbox('''
        ... class _Rules:
        ...     def filter_observation(self, observation, state):
        ...         return observation.upper()
        ... ''')
        >>> with sandbox.start_episode(seed=0) as session:
        ...     session.filter_observation("hello", {})
        'HELLO'
    """

    def __init__(
        self,
        code: str,
        *,
        limits: SandboxLimits | None = None,
        _unchecked: bool = False,
        _trusted_builtins: bool = False,
    ) -> None:
        if limits is None:
            limits = SandboxLimits()
        elif not isinstance(limits, SandboxLimits):
            raise RulesError(f"expected limits to be a SandboxLimits, got {type(limits).__name__}")
        if _unchecked:
            if not isinstance(code, str):
                raise RulesError(f"expected the rules code as a str, got {type(code).__name__}")
            self.info: RulesCodeInfo = describe_rules_code(code)
        else:
            self.info = check_rules_code(code)
        size = len(code.encode("utf-8", "surrogatepass"))
        if size > limits.max_message_bytes:
            raise RulesError(
                f"the code is {size} bytes, over max_message_bytes={limits.max_message_bytes}; "
                "shorten it or raise SandboxLimits.max_message_bytes"
            )
        self.code = code
        self.limits = limits
        self._trusted = bool(_trusted_builtins)
        template.get_template()  # starts the template early; its hello is awaited on first use

    def __repr__(self) -> str:
        hooks = ", ".join(h for h in HOOKS if h in self.info.hooks)
        return f"<RulesSandbox sha256={self.info.sha256[:12]} hooks=[{hooks}]>"

    def start_episode(self, seed: int | None = None) -> RulesSession:
        """Forks a fresh child, locks it down, loads the code and creates ``_Rules()``.

        Args:
            seed: Seeds ``random`` in the child (``None`` means 0), so episodes are reproducible.

        Returns:
            The episode's session (a context manager; close it when the episode ends).

        Raises:
            RulesError: Loading the code or creating ``_Rules()`` raised, hung or crashed.
            SandboxUnavailableError: The sandbox cannot be started or locked down.
        """
        if seed is None:
            seed = 0
        elif isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"expected seed to be an int or None, got {type(seed).__name__}")
        limits = self.limits
        init = {
            "code": self.code,
            "seed": seed,
            "trusted": self._trusted,
            "limits": {
                "episode_cpu_seconds": limits.episode_cpu_seconds,
                "memory_headroom_mb": limits.memory_headroom_mb,
                "max_message_bytes": limits.max_message_bytes,
                "max_open_files": limits.max_open_files,
            },
        }
        return RulesSession._start(init, limits)


class RulesSession:
    """One episode: one child process holding one ``_Rules()`` instance.

    Created by :meth:`RulesSandbox.start_episode`. Calls for hooks the code does not define return
    their input unchanged without a round trip. After any :class:`RulesError` the child is killed
    and every later call raises too. Thread-safe (calls are serialized); close it, or use it as a
    context manager, when the episode ends.

    Attributes:
        hooks: The hooks the loaded ``_Rules`` instance defines.
        needs_state: The calls (``filter_action``, ``after_step``, ``filter_observation``) whose
            hooks read ``state``. The child works this out from the hooks' bytecode when it loads
            the code; the others get ``state=None`` and the caller may pass ``None`` for it.
            (Trusting the child here only ever withholds data from it.)
        protections: What the child measured in force after locking down (``seccomp``,
            ``landlock_abi``, ``no_new_privs``, ``capabilities_dropped``, ``warnings``).
    """

    hooks: frozenset[str]
    needs_state: frozenset[str]
    protections: dict[str, Any]

    def __init__(
        self,
        template_: template.Template,
        pid: int,
        pidfd: int,
        request_fd: int,
        reply_fd: int,
        limits: SandboxLimits,
    ) -> None:
        """Use :meth:`RulesSandbox.start_episode`; this wraps an already forked child."""
        self._template = template_
        self._generation = template.current_generation()
        self._pid = pid
        self._pidfd = pidfd
        self._fds = (request_fd, reply_fd, pidfd)
        self._channel = protocol.HostChannel(request_fd, reply_fd, limits.max_message_bytes)
        self._exchange = self._channel.exchange
        self._timeout = limits.call_timeout
        self._wall_budget = limits.episode_wall_seconds
        self._wall_used = 0.0
        self._cap = limits.max_message_bytes
        self._cpu_seconds = limits.episode_cpu_seconds
        self._lock = threading.Lock()
        self._seq = 0
        self._failure: str | None = None
        self._closed = False
        self._released = False
        self.hooks = frozenset()
        self.needs_state = frozenset(_CALLS)
        self._state_ops = frozenset(_CALLS.values())
        self.protections = {}
        self._after_hook: str | None = None
        self._state_text: str | None = None  # the state's JSON as last sent, the host's own record
        self._getcpu = affinity.cpu_reader() if limits.follow_host_cpu else None
        self._cpu = -1  # the CPU the child is pinned to (-1: not pinned yet)
        if self._getcpu is not None:
            self._channel.spin_seconds = _SPIN_SECONDS

    # -- start -----------------------------------------------------------------------------------

    @classmethod
    def _start(cls, init: dict[str, Any], limits: SandboxLimits) -> RulesSession:
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        try:
            owner, pid, pidfd = template.spawn(req_r, rep_w)
        except BaseException:
            os.close(req_w)
            os.close(rep_r)
            raise
        finally:
            os.close(req_r)
            os.close(rep_w)
        try:
            session = cls(owner, pid, pidfd, req_w, rep_r, limits)
        except BaseException:
            for fd in (req_w, rep_r, pidfd):
                os.close(fd)
            raise
        try:
            session._handshake(init, limits.call_timeout + _START_ALLOWANCE)
        except BaseException:
            session._release()
            raise
        return session

    def _handshake(self, init: dict[str, Any], timeout: float) -> None:
        deadline = _monotonic() + timeout
        try:
            reply = _decode(self._exchange(_encode(init, 0), 0, deadline))
        except protocol.FrameTimeout:
            raise self._fail(None, f"loading the code timed out after {timeout:g}s") from None
        except protocol.ChannelClosed:
            raise self._fail(None, f"{self._death_reason()} while loading the code") from None
        except protocol.FrameError as e:
            reason = f"broke the protocol while loading the code ({e})"
            raise self._fail(None, reason) from None
        if type(reply) is dict and "ready" in reply and type(reply["ready"]) is dict:
            ready = reply["ready"]
            hooks = ready.get("hooks")
            protections = ready.get("protections", {})
            needs = ready.get("needs_state", list(_CALLS))
            if (
                type(hooks) is list
                and all(type(hook) is str and hook in HOOKS for hook in hooks)
                and type(protections) is dict
                and type(needs) is list
                and all(type(call) is str and call in _CALLS for call in needs)
            ):
                self.hooks = frozenset(hooks)
                self.needs_state = frozenset(needs)
                self._state_ops = frozenset(_CALLS[call] for call in needs)
                self.protections = dict(protections)
                if self.hooks & {"modify_transition", "filter_observation"}:
                    last = "filter_observation" in self.hooks
                    self._after_hook = "filter_observation" if last else "modify_transition"
                return
        if type(reply) is dict and type(reply.get("load_failed")) is str:
            where = _at_line(reply.get("line"))
            raise self._fail(None, f"loading the code raised {_clip(reply['load_failed'])}{where}")
        if type(reply) is dict and type(reply.get("setup_failed")) is str:
            self._release()
            raise SandboxUnavailableError(
                f"the sandbox child could not lock itself down: {_clip(reply['setup_failed'])}"
            )
        raise self._fail(None, "broke the protocol while loading the code (unexpected reply)")

    # -- hooks -----------------------------------------------------------------------------------

    def filter_action(self, action: dict[str, Any], state: dict[str, Any]) -> dict[str, Any] | str:
        """Runs ``filter_action``: returns the (possibly changed) action, or a str that blocks it.

        An action the hook passed through unchanged is returned as the very ``action`` object
        given (so ``result is action`` tells a pass-through); a changed one is a new dict.

        Raises:
            RulesError: The hook failed (the session is then dead).
            TypeError: ``action`` or ``state`` cannot be sent as JSON.
        """
        if "filter_action" not in self.hooks:
            self._check_usable("filter_action")
            return action
        value = self._call("filter_action", _OP_FILTER_ACTION, action, state, action)
        if value is action or type(value) is str:
            return value
        if (
            type(value) is dict
            and len(value) == 2
            and type(value.get("tool")) is str
            and type(value.get("args")) is dict
        ):
            return value
        raise self._fail(
            "filter_action", f"returned {_describe(value)}, expected {_ACTION_EXPECTED}"
        )

    def after_step(self, action: dict[str, Any], observation: str, state: dict[str, Any]) -> str:
        """Runs ``modify_transition`` then ``filter_observation`` in one round trip.

        The two hooks share the ``state`` dict of this call. Returns ``observation`` unchanged,
        without a round trip, when neither hook exists.

        Raises:
            RulesError: A hook failed (the session is then dead).
            TypeError: An argument cannot be sent as JSON.
        """
        hook = self._after_hook
        if hook is None:
            self._check_usable("modify_transition")
            return observation
        value = self._call(hook, _OP_AFTER_STEP, [action, observation], state, observation)
        if type(value) is str:
            return value
        raise self._fail(hook, f"returned {_describe(value)}, expected a str")

    def filter_observation(self, observation: str, state: dict[str, Any]) -> str:
        """Runs ``filter_observation`` on an observation (after a reset, for instance).

        Raises:
            RulesError: The hook failed (the session is then dead).
            TypeError: An argument cannot be sent as JSON.
        """
        if "filter_observation" not in self.hooks:
            self._check_usable("filter_observation")
            return observation
        value = self._call(
            "filter_observation", _OP_FILTER_OBSERVATION, observation, state, observation
        )
        if type(value) is str:
            return value
        raise self._fail("filter_observation", f"returned {_describe(value)}, expected a str")

    def _check_usable(self, hook: str) -> None:
        if self._failure is not None:
            raise RulesError(
                f"the session ended after an earlier failure ({self._failure})", hook=hook
            )
        if self._closed:
            raise RulesError("the session is closed", hook=hook)

    def _call(self, hook: str, op: str, head: Any, state: Any, same: Any) -> Any:
        """One hook call: ``op`` with ``head`` (the arguments before ``state``) and ``state``.

        ``state`` travels only when the hook reads it (:attr:`needs_state`) and its JSON differs
        from what this session last sent; the host compares against its own record and never
        asks the child. A :data:`protocol.SAME` reply
        returns ``same`` (the host's own copy of the hook's input).
        """
        with self._lock:
            if self._failure is not None or self._closed:
                self._check_usable(hook)
            if self._generation != template._generation:  # the hot path skips a call
                raise RulesError(
                    "the session belongs to the process this one was forked from", hook=hook
                )
            try:
                first = _encode_text(head)
                state_text = _encode_text(state) if op in self._state_ops else None
            except (TypeError, ValueError, RecursionError) as e:
                raise TypeError(f"the input to {hook} cannot be sent as JSON: {e}") from None
            if state_text is None:
                body = _hook_request(op, first, _NO_STATE)
                state_text = self._state_text
            elif state_text == self._state_text:
                body = _hook_request(op, first, None)
            else:
                body = _hook_request(op, first, state_text)
            if len(body) > self._cap:
                raise ValueError(
                    f"the input to {hook} is {len(body)} bytes as JSON, over "
                    f"max_message_bytes={self._cap}"
                )
            seq = self._seq = (self._seq + 1) & 0xFFFFFFFF
            self._state_text = state_text
            left = self._wall_budget - self._wall_used
            timeout = self._timeout if self._timeout <= left else left
            getcpu = self._getcpu
            if getcpu is not None and getcpu() != self._cpu:
                self._follow(getcpu())
            started = _monotonic()
            try:
                reply = self._exchange(_pack_header(len(body), seq) + body, seq, started + timeout)
                if reply == _SAME:
                    return same
                reply = _decode(reply)
            except protocol.FrameTimeout:
                if timeout < self._timeout:
                    reason = (
                        f"used up the episode's wall-clock budget for hooks "
                        f"({self._wall_budget:g}s, SandboxLimits.episode_wall_seconds); the "
                        "sandbox process was killed"
                    )
                else:
                    reason = f"timed out after {timeout:g}s; the sandbox process was killed"
                raise self._fail(hook, reason) from None
            except protocol.ChannelClosed:
                raise self._fail(hook, self._death_reason()) from None
            except protocol.FrameTooLarge as e:
                reason = (
                    f"sent a reply of {e.length} bytes, over max_message_bytes={e.cap}; "
                    "the sandbox process was killed"
                )
                raise self._fail(hook, reason) from None
            except protocol.FrameError as e:
                reason = f"broke the protocol ({e}); the sandbox process was killed"
                raise self._fail(hook, reason) from None
            except BaseException:  # e.g. KeyboardInterrupt mid-exchange: the stream is unknown
                self._failure = "interrupted during a call"
                self._release()
                raise
            finally:
                self._wall_used += _monotonic() - started
            if type(reply) is dict and len(reply) == 1 and "ok" in reply:
                return reply["ok"]
            args = [*head, state] if op == _OP_AFTER_STEP else [head, state]
            raise self._fail_from_reply(hook, reply, args)

    def _follow(self, cpu: int) -> None:
        """Pins the child to ``cpu``, the host thread's CPU (see :mod:`.affinity`).

        Only a child that is still running is pinned (its pid cannot have been reused then); if
        the kernel refuses (a CPU outside the child's cpuset, for instance), following stops.
        """
        if cpu < 0 or self._released or self._exited():
            return
        try:
            os.sched_setaffinity(self._pid, (cpu,))
        except OSError:
            self._getcpu = None
            self._channel.spin_seconds = 0.0  # the child may run elsewhere: sleep, don't spin
            return
        self._cpu = cpu

    def _fail_from_reply(self, hook: str, reply: Any, args: list[Any] | None = None) -> RulesError:
        """Turns an error reply from the child into the session's failure.

        A raised error gets the line of the rules code the child names (a plain int, checked);
        a ``KeyError`` also gets the keys of the ``state`` (and action) the host sent, which the
        host knows without trusting the child.
        """
        if type(reply) is not dict:
            return self._fail(hook, "broke the protocol (the reply is not an object)")
        named = reply.get("hook")
        if type(named) is str and named in self.hooks:
            hook = named
        raised, returned, too_big = reply.get("raised"), reply.get("returned"), reply.get("too_big")
        if type(raised) is str:
            keys = _valid_keys(args) if raised.startswith("KeyError") else ""
            return self._fail(hook, f"raised {_clip(raised)}{_at_line(reply.get('line'))}{keys}")
        if type(too_big) is int:
            return self._fail(
                hook,
                f"returned a value whose JSON is at least {too_big} bytes, over the cap "
                f"max_message_bytes={self._cap}",
            )
        if type(returned) is str:
            expected = _ACTION_EXPECTED if hook == "filter_action" else "a str"
            detail = reply.get("detail")
            why = f"; {_clip(detail)}" if type(detail) is str and detail != expected else ""
            return self._fail(hook, f"returned {_clip(returned, 100)}, expected {expected}{why}")
        return self._fail(hook, "broke the protocol (unexpected reply)")

    # -- failure and clean-up ----------------------------------------------------------------------

    def _fail(self, hook: str | None, reason: str) -> RulesError:
        """Ends the session (kills the child, closes fds) and returns the error to raise."""
        self._failure = reason
        self._release()
        return RulesError(reason, hook=hook)

    def _exited(self, timeout: float = 0.0) -> bool:
        waiter = select.poll()
        waiter.register(self._pidfd, select.POLLIN)
        return bool(waiter.poll(int(timeout * 1000)))

    def _death_reason(self) -> str:
        if self._closed:
            return "the session was closed during the call"
        if not self._exited(_EXIT_GRACE):
            self._kill()
            return "sandbox process died (it closed its channel and was killed)"
        try:
            status = self._template.status(self._pid)
        except (template.TemplateGone, OSError):
            status = "status unknown"
        if "SIGXCPU" in status:
            status += f": the episode CPU limit of {self._cpu_seconds}s was reached"
        elif "SIGKILL" in status:
            status += f": the episode CPU hard limit ({self._cpu_seconds + 1}s) or out of memory"
        elif "SIGSEGV" in status:
            status += ": a crash, e.g. C-level recursion"
        return f"sandbox process died ({status})"

    def _kill(self) -> None:
        if self._released or self._generation != template.current_generation():
            return
        if not self._exited():
            # Alive, so its pid (and process group, as it is a session leader) cannot be reused.
            try:
                os.killpg(self._pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
        except OSError:
            pass

    def _release(self) -> None:
        if self._released:
            return
        self._kill()
        self._released = True
        for fd in self._fds:
            try:
                os.close(fd)
            except OSError:
                pass

    def close(self) -> None:
        """Kills the child and closes the session's fds (idempotent; the template reaps it)."""
        if self._closed:
            return
        self._closed = True
        self._kill()  # ends a call in progress in another thread quickly
        with self._lock:
            self._release()

    @property
    def alive(self) -> bool:
        """Whether the session can still run hooks (open, no failure, child running)."""
        return not (self._closed or self._failure is not None or self._released or self._exited())

    def __enter__(self) -> RulesSession:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if not self._released:
                self._closed = True
                self._release()
        except Exception:
            pass

    def __repr__(self) -> str:
        state = "alive" if self.alive else "failed" if self._failure else "closed"
        return f"<RulesSession pid={self._pid} {state} hooks={sorted(self.hooks)}>"


def _describe(value: Any) -> str:
    if type(value) is dict:
        return f"a dict with keys {sorted(map(str, value))[:10]}"
    return type(value).__name__


def _at_line(line: Any) -> str:
    """`` (at line N of the rules code)`` for a line number the child sent, else ``""``."""
    if type(line) is int and 0 < line < 1_000_000:
        return f" (at line {line} of the rules code)"
    return ""


def _key_list(value: Any, limit: int = 40) -> str:
    names = [json.dumps(str(k), ensure_ascii=False) for k in list(value)[:limit]]
    more = f", ... ({len(value) - limit} more)" if len(value) > limit else ""
    return ", ".join(names) + more if names else "none"


def _valid_keys(args: list[Any] | None) -> str:
    """The keys a hook's ``state`` (and action) had, from the host's own copy of the call."""
    if not args or type(args[-1]) is not dict:
        return ""
    text = f"; the keys of `state` are: {_key_list(args[-1])}"
    action = args[0]
    if len(args) >= 2 and type(action) is dict and type(action.get("args")) is dict:
        text += (
            '; `action` has the keys "tool" and "args", and action["args"] the keys: '
            + _key_list(action["args"])
        )
    return text


def _clip(text: str, limit: int = _TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


_PROBE = "class _Rules:\n    pass\n"


def kernel_protections() -> dict[str, Any]:
    """What the kernel layers do on this machine, measured inside a real sandbox child.

    Returns:
        ``{"seccomp": bool, "landlock_abi": int, "no_new_privs": bool,
        "capabilities_dropped": bool, "warnings": [str, ...]}``; ``landlock_abi`` is 0 when
        Landlock is not enforced, and ``warnings`` explains every missing layer.

    Raises:
        SandboxUnavailableError: The sandbox cannot be started on this machine.

    Example:
        >>> kernel_protections()["seccomp"]
        True
    """
    with RulesSandbox(_PROBE).start_episode() as session:
        measured = dict(session.protections)
    warnings = list(template.get_template().hello.get("warnings", []))
    warnings.extend(measured.get("warnings", []))
    return {
        "seccomp": bool(measured.get("seccomp")),
        "landlock_abi": int(measured.get("landlock_abi") or 0),
        "no_new_privs": bool(measured.get("no_new_privs")),
        "capabilities_dropped": bool(measured.get("capabilities_dropped")),
        "warnings": warnings,
    }
