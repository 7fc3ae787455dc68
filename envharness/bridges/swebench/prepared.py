"""``Prepared``: an instance ready to run (what :func:`~.prepare.prepare` returns).

Its own module so the Docker and local preparations (``prepare``, ``local``) both build it
without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from envharness.bridges.swe.runtime import Runtime
from envharness.bridges.swebench.sources import SourceTree

__all__ = ["Prepared"]


@dataclass(frozen=True)
class Prepared:
    """An instance ready to run.

    Attributes:
        make_runtime: Builds a fresh runtime whose ``start({})`` gives the instance's workspace.
        base_sha: The starting commit in the workspace.
        runtime_key: Names the image or local environment (for the verifier's cache).
        tree: The source tree used.
        top_level: The tree's top-level entries (folders end with ``/``).
        seconds: What preparing cost now, by step (empty when everything was cached).
        record: What ``evaluate().details`` reports about the source and environment.
    """

    make_runtime: Callable[[], Runtime]
    base_sha: str
    runtime_key: str
    tree: SourceTree
    top_level: tuple[str, ...]
    seconds: Mapping[str, float] = field(default_factory=dict)
    record: Mapping[str, Any] = field(default_factory=dict)
