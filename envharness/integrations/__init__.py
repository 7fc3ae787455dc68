"""Adapters that plug EnvHarness environments into RL trainers.

Each adapter lives in its own module and imports its trainer lazily, so
this package imports without any trainer installed:

- ``envharness.integrations.trl``: an ``environment_factory`` for TRL's
  ``GRPOTrainer`` and helpers that build its dataset from specs or tasks.
- ``envharness.integrations.verifiers``: an adapter for the ``verifiers``
  library's environments.
- ``envharness.integrations.skyrl``: an adapter for SkyRL's ``BaseTextEnv``.
"""
