"""Reinforcement learning against rigged environments: a tabular learner and co-evolution.

- :mod:`~envharness.rl.discrete`: what makes an env tabular (a finite action set, observations
  that name a state) and the reader that finds the state in the text.
- :mod:`~envharness.rl.tabular`: ``QTable``, the black-box ``QTablePolicy`` (and its picklable
  factory) and ``QLearner``, tabular Q-learning that runs on a laptop.
- :mod:`~envharness.rl.trainer`: the ``Trainer`` protocol (plug in your own: TRL, verifiers ...)
  and ``TrainOutcome``.
- :mod:`~envharness.rl.coevolve`: ``coevolve(...)``, rounds of rig → train → evaluate on the
  original envs, resumable; :mod:`~envharness.rl.rounds` holds its records and seed plan.

EnvRigger (LangGraph) is imported only when a round rigs, so this package imports without it.

Example:
    >>> from envharness.rl import QLearner, observation_state
    >>> observation_state("The taxi is at row 2, col 2. The passenger waits at blue (B, row 4, "
    ...                   "col 3); the destination is red (R, row 0, col 0).")
    'taxi:2,2,blue,red'
"""

from __future__ import annotations

from envharness.rl.coevolve import DEFAULT_RIGGER, CoevolveResult, coevolve
from envharness.rl.discrete import StateReader, check_tabular, discrete_actions, observation_state
from envharness.rl.rounds import RoundResult, SeedPlan
from envharness.rl.tabular import QLearner, QTable, QTablePolicy, QTablePolicyFactory
from envharness.rl.trainer import Trainer, TrainOutcome

__all__ = [
    # co-evolution
    "DEFAULT_RIGGER",
    "CoevolveResult",
    "RoundResult",
    "SeedPlan",
    "coevolve",
    # trainers
    "QLearner",
    "TrainOutcome",
    "Trainer",
    # tabular policies
    "QTable",
    "QTablePolicy",
    "QTablePolicyFactory",
    "StateReader",
    "check_tabular",
    "discrete_actions",
    "observation_state",
]
