"""Fresh environments for the designer's tools: built from the session's spec, always closed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from envharness.core import ActionableEnv, ToolSpec
from envharness.harness.spec import HarnessSpec

__all__ = ["fresh_env", "spec_tools"]


@contextmanager
def fresh_env(spec: HarnessSpec) -> Iterator[ActionableEnv]:
    """Builds ``spec`` into a new env and closes it when the block ends."""
    env = spec.build()
    try:
        yield env
    finally:
        env.close()


def spec_tools(spec: HarnessSpec) -> list[ToolSpec]:
    """The tools the env built from ``spec`` offers the agent."""
    with fresh_env(spec) as env:
        return list(env.tools())
