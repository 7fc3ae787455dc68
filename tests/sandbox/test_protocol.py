from __future__ import annotations

import os
import struct
import threading
import time

import pytest

from envharness.sandbox import protocol
from envharness.sandbox.protocol import (
    BadFrame,
    BlockingReader,
    ChannelClosed,
    FrameTimeout,
    FrameTooLarge,
    HostChannel,
    decode,
    encode,
)


def frame(body: bytes, seq: int) -> bytes:
    return struct.pack(">II", len(body), seq) + body


def test_encode_writes_header_then_compact_json():
    data = encode({"op": "x", "args": [1, 2.5, "é", None, True]}, 7)
    assert data[:8] == struct.pack(">II", len(data) - 8, 7)
    assert data[8:] == b'{"op":"x","args":[1,2.5,"\\u00e9",null,true]}'
    assert decode(data[8:]) == {"op": "x", "args": [1, 2.5, "é", None, True]}


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (float("nan"), ValueError),
        (float("inf"), ValueError),
        ({"args": {"x": -float("inf")}}, ValueError),
        (object(), TypeError),
        (b"bytes", TypeError),
        ({1, 2}, TypeError),
    ],
    ids=["nan", "inf", "nested-inf", "object", "bytes", "set"],
)
def test_encode_rejects_what_is_not_plain_json(value, error):
    with pytest.raises(error):
        encode(value, 1)


def test_encode_rejects_cycles():
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(RecursionError):
        encode(cycle, 1)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"NaN", "NaN is not allowed"),
        (b'{"ok": Infinity}', "Infinity is not allowed"),
        (b"[-Infinity]", "-Infinity is not allowed"),
        (b"[1e999]", "overflows"),
        (b'{"ok": 1} {"ok": 2}', "extra data"),
        (b"", "no value"),
        (b"\xff\xfe", "utf-8"),
        (b"[" * 200_000 + b"]" * 200_000, "recursion"),
        (b"{'ok': 1}", "strict JSON"),
    ],
    ids=[
        "nan",
        "infinity",
        "minus-infinity",
        "overflow",
        "trailing",
        "empty",
        "not-utf8",
        "deep",
        "single-quotes",
    ],
)
def test_decode_rejects(body, match):
    with pytest.raises(BadFrame, match=match):
        decode(body)


@pytest.fixture(params=[0.0, 0.05], ids=["sleeps", "spins"])
def pipes(request):
    """(host channel, child's request read end, child's reply write end).

    Every exchange test runs twice: with a host that sleeps in ``poll`` at once, and with one
    that first yields its CPU for up to 50 ms (longer than most replies here take to come).
    """
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    channel = HostChannel(req_w, rep_r, cap=1024)
    channel.spin_seconds = request.param
    yield channel, req_r, rep_w
    for fd in (req_r, req_w, rep_r, rep_w):
        try:
            os.close(fd)
        except OSError:
            pass


def soon(seconds: float = 1.0) -> float:
    return time.monotonic() + seconds


def test_exchange_returns_the_reply_body(pipes):
    channel, req_r, rep_w = pipes
    os.write(rep_w, frame(b'{"ok":1}', 5))
    body = channel.exchange(frame(b"[1]", 5), 5, soon())
    assert bytes(body) == b'{"ok":1}'
    assert os.read(req_r, 100) == frame(b"[1]", 5)


def test_exchange_reassembles_a_reply_sent_in_pieces(pipes):
    channel, _, rep_w = pipes
    payload = frame(b'"' + b"x" * 1000 + b'"', 3)

    def trickle():
        for i in range(0, len(payload), 97):
            os.write(rep_w, payload[i : i + 97])
            time.sleep(0.001)

    writer = threading.Thread(target=trickle)
    writer.start()
    body = channel.exchange(frame(b"0", 3), 3, soon())
    writer.join()
    assert decode(body) == "x" * 1000


def test_wrong_sequence_number_is_a_bad_frame(pipes):
    channel, _, rep_w = pipes
    os.write(rep_w, frame(b"{}", 999))
    with pytest.raises(BadFrame, match="seq 999, expected 4"):
        channel.exchange(frame(b"0", 4), 4, soon())


def test_oversize_header_is_refused_before_any_body_arrives(pipes):
    channel, _, rep_w = pipes
    os.write(rep_w, struct.pack(">II", 1 << 30, 1))  # the 1 GiB body is never sent
    started = time.monotonic()
    with pytest.raises(FrameTooLarge, match=r"1073741824 bytes exceeds the cap of 1024"):
        channel.exchange(frame(b"0", 1), 1, soon(5))
    assert time.monotonic() - started < 1


def test_stray_bytes_after_the_reply_are_a_bad_frame(pipes):
    channel, _, rep_w = pipes
    os.write(rep_w, frame(b"{}", 1) + b"junk")
    with pytest.raises(BadFrame, match="4 unexpected bytes"):
        channel.exchange(frame(b"0", 1), 1, soon())


def test_end_of_file_is_channel_closed(pipes):
    channel, _, rep_w = pipes
    os.write(rep_w, frame(b'"abc"', 1)[:6])
    os.close(rep_w)
    with pytest.raises(ChannelClosed):
        channel.exchange(frame(b"0", 1), 1, soon())


def test_no_reply_times_out_at_the_deadline(pipes):
    channel, _, _ = pipes
    started = time.monotonic()
    with pytest.raises(FrameTimeout):
        channel.exchange(frame(b"0", 1), 1, soon(0.2))
    assert 0.19 < time.monotonic() - started < 0.5


def test_spinning_ends_at_the_deadline(pipes):
    channel, _, _ = pipes
    channel.spin_seconds = 5.0
    started = time.monotonic()
    with pytest.raises(FrameTimeout):
        channel.exchange(frame(b"0", 1), 1, soon(0.1))
    assert 0.09 < time.monotonic() - started < 0.4


def test_a_reply_after_the_spin_is_read_by_polling(pipes):
    channel, _, rep_w = pipes
    channel.spin_seconds = 0.001
    timer = threading.Timer(0.05, os.write, (rep_w, frame(b'{"ok":2}', 7)))
    timer.start()
    body = channel.exchange(frame(b"0", 7), 7, soon())
    timer.join()
    assert bytes(body) == b'{"ok":2}'


def test_a_child_that_never_reads_cannot_block_the_host(pipes):
    channel, _, _ = pipes
    big = frame(b"x" * (1 << 20), 1)  # far more than a pipe holds
    started = time.monotonic()
    with pytest.raises(FrameTimeout):
        channel.exchange(big, 1, soon(0.2))
    assert time.monotonic() - started < 0.5


def test_a_gone_reader_is_channel_closed(pipes):
    channel, req_r, _ = pipes
    os.close(req_r)
    with pytest.raises(ChannelClosed, match="cannot write"):
        channel.exchange(frame(b"0", 1), 1, soon())


def test_blocking_reader_splits_frames_and_stops_at_end_of_file():
    r, w = os.pipe()
    os.write(w, encode({"a": 1}, 1) + encode([2], 2) + encode("three", 3))
    os.close(w)
    reader = BlockingReader(r, cap=100)
    assert [reader.read(), reader.read(), reader.read(), reader.read()] == [
        (1, {"a": 1}),
        (2, [2]),
        (3, "three"),
        None,
    ]
    os.close(r)


def test_blocking_reader_errors():
    r, w = os.pipe()
    os.write(w, struct.pack(">II", 500, 1))
    with pytest.raises(FrameTooLarge):
        BlockingReader(r, cap=100).read()
    os.write(w, encode("abcdef", 1)[:-2])
    os.close(w)
    with pytest.raises(ChannelClosed, match="end of file after"):
        BlockingReader(r, cap=100).read()
    os.close(r)


def test_module_imports_nothing_from_envharness():
    # The sandbox worker loads this module by path under `python -I -S`.
    with open(protocol.__file__) as f:
        source = f.read()
    assert "envharness" not in "".join(
        line for line in source.splitlines() if line.startswith(("import", "from"))
    )
