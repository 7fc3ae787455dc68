from __future__ import annotations

import dataclasses

import pytest

from envharness.errors import RulesError
from envharness.sandbox import RulesSandbox, SandboxLimits


def test_defaults():
    limits = SandboxLimits()
    assert (limits.call_timeout, limits.episode_cpu_seconds, limits.memory_headroom_mb) == (
        1.0,
        10,
        256,
    )
    assert (limits.max_message_bytes, limits.max_open_files) == (4 << 20, 16)
    assert limits.follow_host_cpu is True


def test_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        SandboxLimits().call_timeout = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"call_timeout": 0},
            r"expected call_timeout to be a positive finite number of seconds, got 0",
        ),
        ({"call_timeout": -1.5}, r"got -1\.5"),
        ({"call_timeout": float("inf")}, r"got inf"),
        ({"call_timeout": float("nan")}, r"got nan"),
        ({"call_timeout": "1"}, r"got '1'"),
        ({"call_timeout": True}, r"got True"),
        (
            {"episode_cpu_seconds": 0},
            r"expected episode_cpu_seconds to be an int in \[1, 86400\], got 0",
        ),
        ({"episode_cpu_seconds": 1.5}, r"episode_cpu_seconds .* got 1\.5"),
        (
            {"memory_headroom_mb": 1},
            r"expected memory_headroom_mb to be an int in \[16, .*\], got 1",
        ),
        (
            {"max_message_bytes": 10},
            r"expected max_message_bytes to be an int in \[1024, 4294967295\]",
        ),
        ({"max_message_bytes": 1 << 33}, r"max_message_bytes"),
        ({"max_open_files": 3}, r"expected max_open_files to be an int in \[8, .*\], got 3"),
        ({"max_open_files": None}, r"got None"),
    ],
)
def test_rejects_bad_values(kwargs, match):
    with pytest.raises(RulesError, match=match):
        SandboxLimits(**kwargs)


def test_accepts_an_int_timeout():
    assert SandboxLimits(call_timeout=2).call_timeout == 2


def test_sandbox_rejects_other_limit_types():
    with pytest.raises(RulesError, match="expected limits to be a SandboxLimits, got dict"):
        RulesSandbox("class _Rules:\n    pass\n", limits={"call_timeout": 1})  # type: ignore[arg-type]


def test_code_larger_than_the_message_cap_is_rejected():
    code = "class _Rules:\n    pass\n" + "# padding\n" * 200
    with pytest.raises(RulesError, match=r"the code is 2\d\d\d bytes, over max_message_bytes=1024"):
        RulesSandbox(code, limits=SandboxLimits(max_message_bytes=1024))
