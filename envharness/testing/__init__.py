"""Test helpers for bridge authors: a generic fake bridge and the conformance suite.

:class:`FakeEnv` is a tiny deterministic bridge whose behaviour can be customised with injected
callables, for testing code that drives an :class:`~envharness.core.ActionableEnv`.
:func:`check_bridge` runs the checks every bridge (and every harness stack) must pass, and reports
all failures at once.

Example:
    >>> from envharness.testing import FakeEnv, check_bridge
    >>> report = check_bridge(lambda: FakeEnv(target="hello"))
    >>> report.bridge, report.actions
    ('fake', (Action(tool='say', args={'text': 'hello'}),))

:class:`FakeToolCallingModel` is a scripted LangChain chat model with ``bind_tools``, for testing
code that drives a tool-calling model (such as ``ChatModelPolicy``) offline.

This module imports nothing beyond the standard library and ``envharness`` itself;
``FakeToolCallingModel`` needs ``langchain-core`` and is imported on first use.
"""

from __future__ import annotations

from typing import Any

from envharness.errors import DependencyNotInstalled
from envharness.testing.conformance import CHECKS, ConformanceReport, check_bridge
from envharness.testing.fake import FakeEnv

__all__ = ["CHECKS", "ConformanceReport", "FakeEnv", "FakeToolCallingModel", "check_bridge"]

_LAZY = {"FakeToolCallingModel": "envharness.testing.chat_model"}


def __getattr__(name: str) -> Any:
    """Imports the helpers that need optional packages on first use."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    try:
        module = importlib.import_module(_LAZY[name])
    except ImportError as e:
        if e.name is not None and e.name.split(".")[0] in ("langchain_core", "pydantic"):
            raise DependencyNotInstalled(
                "langchain-core", "rigger", purpose=f"envharness.testing.{name}"
            ) from e
        raise
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
