"""Offline policies: scripted, random, and the calibrated oracle.

None of these needs a model, a key or a network, so rollouts, statistics and rigging can be
tested and benchmarked offline:

- :class:`ScriptedPolicy` plays a fixed list of actions (from code or a file, see
  :func:`load_script`);
- :class:`RandomPolicy` makes random calls that fit the tool schemas;
- :class:`OraclePolicy` plays the bridge's solution with probability ``skill`` and a random move
  otherwise: a black box whose weakness is known. It is the one policy here that looks inside the
  environment.

Each has a picklable factory (``factory(seed) -> policy``) for the executors.
"""

from __future__ import annotations

from envharness.rollout.policies.oracle import OraclePolicy, OraclePolicyFactory
from envharness.rollout.policies.sampling import RandomPolicy, RandomPolicyFactory
from envharness.rollout.policies.scripted import (
    OnExhausted,
    Script,
    ScriptedPolicy,
    ScriptedPolicyFactory,
    load_script,
)

__all__ = [
    "OnExhausted",
    "OraclePolicy",
    "OraclePolicyFactory",
    "RandomPolicy",
    "RandomPolicyFactory",
    "Script",
    "ScriptedPolicy",
    "ScriptedPolicyFactory",
    "load_script",
]
