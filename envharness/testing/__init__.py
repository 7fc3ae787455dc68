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

from envharness._lazy import lazy_exports
from envharness.testing.conformance import CHECKS, ConformanceReport, check_bridge
from envharness.testing.fake import FakeEnv

__all__ = ["CHECKS", "ConformanceReport", "FakeEnv", "FakeToolCallingModel", "check_bridge"]

_LAZY = {"FakeToolCallingModel": "envharness.testing.chat_model"}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals(), __all__)
