"""The Gymnasium bridge: any registered Gymnasium env with a Discrete action space.

Registered as ``gymnasium``; the task id is the Gymnasium env id (``"FrozenLake-v1"``,
``"CliffWalking-v1"``, ``"Taxi-v4"``, ``"Blackjack-v1"``, ``"CartPole-v1"`` ...). Needs the
``gym`` extra (``pip install 'envharness[gym]'``); gymnasium is imported only when the bridge is
used, and its absence raises :class:`~envharness.errors.DependencyNotInstalled`.

- :mod:`~envharness.bridges.gymnasium.env`: :class:`GymnasiumEnv`, the bridge.
- :mod:`~envharness.bridges.gymnasium.domains`: how a family of envs is read (tool names,
  text, state fields, success, oracle); :func:`register_domain` adds one for your own env.
- :mod:`~envharness.bridges.gymnasium.tabular`: planning over gymnasium's transition tables.
- :mod:`~envharness.bridges.gymnasium.grids`, :mod:`~envharness.bridges.gymnasium.taxi`,
  :mod:`~envharness.bridges.gymnasium.blackjack`: the toy-text domains.

Example:
    >>> from envharness import load_bridge
    >>> from envharness.rollout import OraclePolicy, rollout
    >>> env = load_bridge("gymnasium", task_id="FrozenLake-v1", env_kwargs={"is_slippery": False})
    >>> trajectory = rollout(env, OraclePolicy(1.0, seed=0), seed=3)
    >>> trajectory.success, trajectory.n_steps, trajectory.evaluation.score
    (True, 6, 1.0)
"""

from __future__ import annotations

# Importing the domain modules registers them.
from envharness.bridges.gymnasium.blackjack import BlackjackDomain
from envharness.bridges.gymnasium.domains import Domain, GenericDomain, Moment, register_domain
from envharness.bridges.gymnasium.env import GymnasiumEnv
from envharness.bridges.gymnasium.grids import CliffWalkingDomain, FrozenLakeDomain
from envharness.bridges.gymnasium.tabular import GridDomain, TabularDomain
from envharness.bridges.gymnasium.taxi import TaxiDomain

__all__ = [
    # the bridge
    "GymnasiumEnv",
    # reading a family of envs
    "Domain",
    "GenericDomain",
    "GridDomain",
    "Moment",
    "TabularDomain",
    "register_domain",
    # the built-in domains
    "BlackjackDomain",
    "CliffWalkingDomain",
    "FrozenLakeDomain",
    "TaxiDomain",
]
