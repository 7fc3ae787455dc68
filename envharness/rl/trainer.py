"""The ``Trainer`` protocol: the pluggable "train" step of :func:`~envharness.rl.coevolve`.

A trainer turns a policy factory and some harness specs into a better policy factory, within a
budget of environment steps. EnvHarness ships :class:`~envharness.rl.QLearner` (tabular
Q-learning, runs on a laptop); a TRL, verifiers or SkyRL run fits the same three calls.

The policy is a :data:`~envharness.rollout.PolicyFactory` (``factory(seed) -> Policy``) because
EnvRigger rigs factories: it plays fresh episodes of the current policy in worker processes, so
the factory must pickle (with ``cloudpickle``) and carry what the policy needs (a Q-table, a
checkpoint path, a model endpoint).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from envharness.harness.spec import HarnessSpec
from envharness.rollout.policy import PolicyFactory

__all__ = ["TrainOutcome", "Trainer"]


@dataclass
class TrainOutcome:
    """What one ``train`` call did.

    Attributes:
        policy: The trained policy factory.
        env_steps: Environment steps the learner took (its own actions; what the budget caps).
        episodes: Episodes started.
        setup_steps: Steps a ``Setups`` component replayed at reset in those episodes (not the
            learner's actions; reported apart).
        details: Anything else worth recording (successes, errors, per-spec counts); JSON.
    """

    policy: PolicyFactory
    env_steps: int
    episodes: int = 0
    setup_steps: int = 0
    details: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Trainer(Protocol):
    """Trains a policy factory on harness specs within a budget of environment steps.

    ``train`` may return a bare policy factory instead of a :class:`TrainOutcome`; the loop then
    counts the whole budget as spent (it cannot know less) and records that it was not told.

    Optional extras the loop uses when present: ``save_policy(policy, path)`` and
    ``load_policy(path) -> policy`` (a finished round's policy is saved in its folder so a rerun
    resumes after it; without them the factory is pickled with ``cloudpickle``), and
    ``describe() -> str`` (a name for the records).
    """

    def initial_policy(self, specs: Sequence[HarnessSpec], seed: int) -> PolicyFactory:
        """The untrained policy for the tasks of ``specs`` (the original envs).

        Raises:
            EnvHarnessError: If the trainer cannot learn these envs (say why).
        """
        ...

    def train(
        self,
        policy: PolicyFactory,
        specs: Sequence[HarnessSpec],
        steps_budget: int,
        seed: int,
    ) -> TrainOutcome | PolicyFactory:
        """Trains ``policy`` on ``specs`` for at most ``steps_budget`` env steps.

        Episode seeds run from ``seed`` upward (the caller keeps them apart from evaluation).
        """
        ...
