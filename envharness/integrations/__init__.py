"""Adapters that plug EnvHarness environments into RL trainers.

Each adapter lives in its own module and imports its trainer lazily, so
this package imports without any trainer installed:

- ``envharness.integrations.trl``: an ``environment_factory`` for TRL's
  ``GRPOTrainer`` and helpers that build its dataset from specs or tasks.
- ``envharness.integrations.verifiers``: an adapter for the ``verifiers``
  library's environments.
- ``envharness.integrations.skyrl``: an adapter for SkyRL's ``BaseTextEnv``.

Each sits behind its extra (``envharness[trl]``, ``[verifiers]``, ``[skyrl]``); the adapter
modules are importable as attributes (``envharness.integrations.trl``), loaded on first use.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["skyrl", "trl", "verifiers"]


def __getattr__(name: str) -> ModuleType:
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
