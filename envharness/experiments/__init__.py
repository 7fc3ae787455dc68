"""Experiments over EnvHarness: the paper's skill-learning study as a library and a command.

- :mod:`~envharness.experiments.settings`: ``SkillLearningSettings`` (checked once), the arms,
  and the run directory's layout.
- :mod:`~envharness.experiments.arms`: each arm's train environments per round.
- :mod:`~envharness.experiments.metrics`: scores per arm and paired bootstrap differences.
- :mod:`~envharness.experiments.runner`: ``run_skill_learning`` (resumable).
- :mod:`~envharness.experiments.report`: the Markdown report and plots.

The harness arm imports EnvRigger (``envharness[rigger]``) when it runs.
"""

from __future__ import annotations

from envharness.experiments.metrics import ArmScore, PairedDifference
from envharness.experiments.runner import ExperimentResult, run_skill_learning
from envharness.experiments.settings import ARMS, DEFAULT_ARMS, SkillLearningSettings, parse_arms

__all__ = [
    "ARMS",
    "DEFAULT_ARMS",
    "ArmScore",
    "ExperimentResult",
    "PairedDifference",
    "SkillLearningSettings",
    "parse_arms",
    "run_skill_learning",
]
