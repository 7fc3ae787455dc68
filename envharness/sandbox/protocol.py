"""Framing of the messages between the host and a sandbox child, both ways.

A frame is an 8-byte header, ``struct.pack(">II", length, seq)``, then ``length`` bytes of UTF-8
JSON. The reader checks ``length`` against its cap from the header, before reading the body, and
the host checks that every reply echoes its request's ``seq``. JSON is written with
``allow_nan=False`` and read with NaN, Infinity and overflowing floats rejected, so a value that
crosses the boundary is plain JSON and nothing else (never pickle).

Hook calls use a compact body (see :func:`hook_request`): one op letter, the JSON of the hook's
arguments other than ``state``, a newline, then ``+`` and the JSON of ``state``, ``=`` alone when
``state`` is the same JSON text as in the previous hook call that sent one (the child then decodes
a fresh copy of the text it kept), or ``-`` alone when the hook does not read ``state`` (the child
said so when it loaded the code; it then gets ``None``). The host alone decides what was sent: it
keeps the text it last sent, never asks the child. A reply body of :data:`SAME` (``=``) says the
hook returned its input unchanged (the action, or the observation), so the host uses its own
copy; any other reply body is JSON.

The host side reads and writes with a deadline (``select.poll`` on non-blocking fds, after an
optional short spin that yields the CPU, :attr:`HostChannel.spin_seconds`); the child side blocks.
This module is shared with the sandbox worker, which loads it by file path under ``python -I -S``:
it must import nothing from envharness.
"""

from __future__ import annotations

import json
import math
import os
import select
import struct
import time
from typing import Any

__all__ = [
    "HEADER",
    "OP_AFTER_STEP",
    "OP_FILTER_ACTION",
    "OP_FILTER_OBSERVATION",
    "NO_STATE",
    "SAME",
    "BadFrame",
    "ChannelClosed",
    "FrameError",
    "FrameTimeout",
    "FrameTooLarge",
    "BlockingReader",
    "HostChannel",
    "decode",
    "decode_text",
    "encode",
    "encode_text",
    "hook_request",
    "split_hook_request",
    "write_all_blocking",
]

HEADER = struct.Struct(">II")
"""The frame header: body length and sequence number, big-endian unsigned 32-bit each."""

OP_FILTER_ACTION = "a"
"""Op letter of ``filter_action(action, state)``; its first part is the action's JSON."""
OP_AFTER_STEP = "s"
"""Op letter of ``modify_transition`` + ``filter_observation``; first part ``[action, obs]``."""
OP_FILTER_OBSERVATION = "o"
"""Op letter of ``filter_observation(observation, state)``; first part the observation's JSON."""
SAME = b"="
"""A reply body meaning: the hook returned its input (action or observation) unchanged."""
NO_STATE = "-"
"""``state`` argument of :func:`hook_request` (and its result): the hook does not read state."""

_CHUNK = 1 << 16
_unpack_header = HEADER.unpack_from
_monotonic = time.monotonic
_yield = getattr(os, "sched_yield", lambda: None)


class FrameError(Exception):
    """Raised when a frame cannot be exchanged or breaks the protocol."""


class ChannelClosed(FrameError):
    """Raised when the other side closed its end (EOF, broken pipe) mid-exchange."""


class FrameTimeout(FrameError):
    """Raised when the deadline passes before a whole frame was exchanged."""


class FrameTooLarge(FrameError):
    """Raised when a header announces a body over the cap (the body is never read)."""

    def __init__(self, length: int, cap: int) -> None:
        self.length = length
        self.cap = cap
        super().__init__(f"a frame of {length} bytes exceeds the cap of {cap} bytes")


class BadFrame(FrameError):
    """Raised for a wrong sequence number, a body that is not strict JSON, or stray bytes."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"float {text} overflows")
    return value


def _reject_object(obj: Any) -> Any:
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
_scan = _DECODER.scan_once
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
if _c_make_encoder is not None:  # the C encoder, built once: no per-call set-up
    _iterencode = _c_make_encoder(
        None,  # no circular-reference markers: a cycle ends in RecursionError instead
        _reject_object,
        json.encoder.encode_basestring_ascii,
        None,
        ":",
        ",",
        False,
        False,
        False,  # allow_nan
    )
else:  # pragma: no cover - CPython always has the C encoder
    _iterencode = json.JSONEncoder(allow_nan=False, separators=(",", ":")).iterencode


def encode_text(obj: Any) -> str:
    """The compact JSON text of ``obj`` (ASCII only: no raw newline can appear in it).

    Raises:
        TypeError: ``obj`` holds a value JSON cannot represent.
        ValueError: ``obj`` holds NaN or infinity.
        RecursionError: ``obj`` is nested too deeply or contains itself.
    """
    return "".join(_iterencode(obj, 0))


def hook_request(op: str, first: str, state: str | None) -> bytes:
    """The body of a hook call: ``op``, ``first`` (JSON), a newline, then the state part.

    Args:
        op: One of :data:`OP_FILTER_ACTION`, :data:`OP_AFTER_STEP`, :data:`OP_FILTER_OBSERVATION`.
        first: The JSON text of the arguments other than ``state`` (see :func:`encode_text`).
        state: The JSON text of ``state``, ``None`` for "the same text as the previous call", or
            :data:`NO_STATE` for "no state".
    """
    if state is None:
        return (op + first + "\n=").encode()
    if state is NO_STATE:
        return (op + first + "\n-").encode()
    return (op + first + "\n+" + state).encode()


def split_hook_request(body: bytes | bytearray | memoryview) -> tuple[str, str, str | None]:
    """Splits a hook call body into ``(op, first, state)``.

    ``state`` is the JSON text, ``None`` for "the same as before", or :data:`NO_STATE`.

    Raises:
        BadFrame: The body is not a hook call.
    """
    try:
        text = str(body, "utf-8")
    except ValueError:
        raise BadFrame("the hook call is not UTF-8") from None
    newline = text.find("\n")
    if newline < 1 or newline + 2 > len(text):
        raise BadFrame("the body is not a hook call")
    mark = text[newline + 1]
    if mark == "=" and newline + 2 == len(text):
        return text[0], text[1:newline], None
    if mark == "-" and newline + 2 == len(text):
        return text[0], text[1:newline], NO_STATE
    if mark != "+":
        raise BadFrame("the body is not a hook call")
    return text[0], text[1:newline], text[newline + 2 :]


def decode_text(text: str) -> Any:
    """Decodes one strict JSON text (see :func:`decode`).

    Raises:
        BadFrame: ``text`` is not strict JSON, or nested too deeply.
    """
    try:
        value, end = _scan(text, 0)
    except StopIteration as e:
        raise BadFrame(f"the body is not strict JSON (no value at offset {e.value})") from None
    except (ValueError, RecursionError) as e:
        raise BadFrame(f"the body is not strict JSON ({str(e)[:200]})") from None
    if end != len(text):
        raise BadFrame("the body is not strict JSON (extra data after the value)")
    return value


def encode(obj: Any, seq: int) -> bytes:
    """Encodes one frame.

    Args:
        obj: A JSON-serializable value (no NaN or infinity).
        seq: The sequence number, ``0 <= seq < 2**32``.

    Returns:
        The header followed by the body.

    Raises:
        TypeError: ``obj`` holds a value JSON cannot represent.
        ValueError: ``obj`` holds NaN or infinity.
        RecursionError: ``obj`` is nested too deeply or contains itself.
    """
    body = "".join(_iterencode(obj, 0)).encode()
    return HEADER.pack(len(body), seq) + body


def decode(body: bytes | bytearray | memoryview) -> Any:
    """Decodes a frame body.

    Raises:
        BadFrame: The body is not UTF-8, not strict JSON, or nested too deeply.
    """
    try:
        text = str(body, "utf-8")
    except ValueError as e:
        raise BadFrame(f"the body is not strict JSON ({str(e)[:200]})") from None
    return decode_text(text)


# -- host side: non-blocking fds, one deadline per exchange ---------------------------------------


class HostChannel:
    """The host's end of one child's pipes: a request goes out, exactly one reply comes back.

    Both fds are switched to non-blocking mode and every wait goes through ``select.poll`` with
    the exchange's deadline, so a child that stops reading or writing cannot block the host.

    Args:
        request_fd: The write end of the request pipe.
        reply_fd: The read end of the reply pipe.
        cap: The largest reply body accepted, checked from the header before the body is read.
    """

    def __init__(self, request_fd: int, reply_fd: int, cap: int) -> None:
        self.request_fd = request_fd
        self.reply_fd = reply_fd
        self.cap = cap
        os.set_blocking(request_fd, False)
        os.set_blocking(reply_fd, False)
        self._can_read = select.poll()
        self._can_read.register(reply_fd, select.POLLIN)
        self._poll_read = self._can_read.poll
        self._can_write = select.poll()
        self._can_write.register(request_fd, select.POLLOUT)
        self.spin_seconds = 0.0
        """How long :meth:`exchange` waits for a reply by yielding the CPU before it sleeps in
        ``poll``; 0 to sleep at once (worth it only when the child shares the host's CPU)."""

    def exchange(self, frame: bytes, seq: int, deadline: float) -> memoryview:
        """Writes ``frame`` and returns the body of the reply, which must carry ``seq``.

        Args:
            frame: An encoded request (see :func:`encode`).
            seq: The request's sequence number, which the reply must echo.
            deadline: The ``time.monotonic()`` value by which the whole exchange must be done.

        Raises:
            ChannelClosed: The child closed its end (end of file, broken pipe).
            FrameTimeout: The deadline passed.
            FrameTooLarge: The reply's header announces more than ``cap`` bytes.
            BadFrame: Wrong sequence number, or bytes beyond the reply.
        """
        try:
            done = os.write(self.request_fd, frame)
        except BlockingIOError:
            done = 0
        except OSError as e:
            raise ChannelClosed(f"cannot write ({e.strerror})") from None
        if done != len(frame):
            self._write_rest(frame, done, deadline)
        data = self._spin(deadline) if self.spin_seconds > 0 else b""
        poll = self._poll_read
        while not data:  # the first read, inlined: one poll and one read on the hot path
            remaining = deadline - _monotonic()
            if remaining <= 0:
                raise FrameTimeout("the deadline passed")
            if not poll(math.ceil(remaining * 1000)):
                continue
            try:
                data = os.read(self.reply_fd, _CHUNK)
            except BlockingIOError:
                continue
            except OSError as e:
                raise ChannelClosed(f"cannot read ({e.strerror})") from None
            if not data:
                raise ChannelClosed("end of file")
        while len(data) < HEADER.size:
            data += self._read_some(deadline)
        length, got = _unpack_header(data)
        if length > self.cap:
            raise FrameTooLarge(length, self.cap)
        if got != seq:
            raise BadFrame(f"the reply carries seq {got}, expected {seq}")
        total = HEADER.size + length
        if len(data) == total:
            return memoryview(data)[HEADER.size :]
        if len(data) > total:
            raise BadFrame(f"{len(data) - total} unexpected bytes after the reply")
        return self._read_rest(data, total, deadline)

    def _spin(self, deadline: float) -> bytes:
        """The first bytes of the reply if they come within the spin (or ``b""``).

        The spin lasts :attr:`spin_seconds`, never past ``deadline``. Between tries the host
        yields its CPU, so a child pinned beside it runs at once, and the host never sleeps: a
        sleeping host would be woken by the reply, often onto an idle CPU, and waking one costs
        more than the call (see :mod:`envharness.sandbox.affinity`).
        """
        fd = self.reply_fd
        read = os.read
        give_way = _yield
        end = min(_monotonic() + self.spin_seconds, deadline)
        while True:
            try:
                data = read(fd, _CHUNK)
            except BlockingIOError:
                if _monotonic() >= end:
                    return b""
                give_way()
                continue
            except OSError as e:
                raise ChannelClosed(f"cannot read ({e.strerror})") from None
            if not data:
                raise ChannelClosed("end of file")
            return data

    def _wait(self, poller: Any, deadline: float) -> None:
        remaining = deadline - _monotonic()
        if remaining <= 0 or not poller.poll(math.ceil(remaining * 1000)):
            if _monotonic() >= deadline:
                raise FrameTimeout("the deadline passed")

    def _write_rest(self, frame: bytes, done: int, deadline: float) -> None:
        view = memoryview(frame)
        while done < len(frame):
            self._wait(self._can_write, deadline)
            try:
                done += os.write(self.request_fd, view[done:])
            except BlockingIOError:
                continue
            except OSError as e:
                raise ChannelClosed(f"cannot write ({e.strerror})") from None

    def _read_some(self, deadline: float) -> bytes:
        while True:
            self._wait(self._can_read, deadline)
            try:
                chunk = os.read(self.reply_fd, _CHUNK)
            except BlockingIOError:
                continue
            except OSError as e:
                raise ChannelClosed(f"cannot read ({e.strerror})") from None
            if not chunk:
                raise ChannelClosed("end of file")
            return chunk

    def _read_rest(self, data: bytes, total: int, deadline: float) -> memoryview:
        buf = bytearray(total)
        buf[: len(data)] = data
        view = memoryview(buf)
        have = len(data)
        while have < total:
            self._wait(self._can_read, deadline)
            try:
                n = os.readv(self.reply_fd, [view[have:]])
            except BlockingIOError:
                continue
            except OSError as e:
                raise ChannelClosed(f"cannot read ({e.strerror})") from None
            if n == 0:
                raise ChannelClosed(f"end of file after {have} of {total} bytes")
            have += n
        return view[HEADER.size :]


# -- child side: blocking fds ----------------------------------------------------------------------


class BlockingReader:
    """Reads frames from a blocking fd (the child's request pipe), usually one ``read`` each.

    Args:
        fd: The fd to read from.
        cap: The largest body accepted.
    """

    def __init__(self, fd: int, cap: int) -> None:
        self.fd = fd
        self.cap = cap
        self._pending = b""

    def _more(self, data: bytes, need: int) -> bytes:
        chunks = [data]
        have = len(data)
        while have < need:
            chunk = os.read(self.fd, max(_CHUNK, need - have))
            if not chunk:
                if have:
                    raise ChannelClosed(f"end of file after {have} of {need} bytes")
                return b""
            chunks.append(chunk)
            have += len(chunk)
        return b"".join(chunks)

    def read(self) -> tuple[int, Any] | None:
        """Reads one frame.

        Returns:
            ``(seq, value)``, or ``None`` at a clean end of file between frames.

        Raises:
            ChannelClosed: End of file inside a frame.
            FrameTooLarge: The header announces more than ``cap`` bytes.
            BadFrame: The body is not strict JSON.
        """
        frame = self.read_raw()
        if frame is None:
            return None
        return frame[0], decode(frame[1])

    def read_raw(self) -> tuple[int, bytes | memoryview] | None:
        """Reads one frame without decoding its body.

        Returns:
            ``(seq, body)``, or ``None`` at a clean end of file between frames.

        Raises:
            ChannelClosed: End of file inside a frame.
            FrameTooLarge: The header announces more than ``cap`` bytes.
        """
        data = self._pending or os.read(self.fd, _CHUNK)
        if len(data) < HEADER.size:
            data = self._more(data, HEADER.size)
            if not data:
                return None
        length, seq = _unpack_header(data)
        if length > self.cap:
            raise FrameTooLarge(length, self.cap)
        end = HEADER.size + length
        if len(data) < end:
            data = self._more(data, end)
        if len(data) == end:
            self._pending = b""
            return seq, data[HEADER.size :]
        self._pending = data[end:]
        return seq, memoryview(data)[HEADER.size : end]


def write_all_blocking(fd: int, data: bytes) -> None:
    """Writes all of ``data`` to a blocking fd (the child's reply pipe)."""
    done = os.write(fd, data)
    if done < len(data):
        view = memoryview(data)
        while done < len(data):
            done += os.write(fd, view[done:])
