"""Rollouts: black-box policies play harnessed envs; trajectories, statistics and run stores.

- :mod:`~envharness.rollout.policy`: the ``Policy`` protocol (``start`` then ``act``).
- :mod:`~envharness.rollout.policies`: offline policies (scripted, random, calibrated oracle).
- :mod:`~envharness.rollout.chat`: ``ChatModelPolicy`` over any LangChain chat model, its
  ``ChatModelPolicyFactory`` and ``ContextLimits`` (exported here, imported on first use: this
  package does not need LangChain).
- :mod:`~envharness.rollout.loop`: ``rollout(env, policy)`` → :class:`Trajectory`.
- :mod:`~envharness.rollout.stats`: ``RolloutStats`` over K trajectories (what EnvRigger decides
  from).
- :mod:`~envharness.rollout.store`: ``RunStore``, trajectories as JSONL in a run directory.
- :mod:`~envharness.rollout.batch`: ``run_rollouts``/``run_batch`` with resume from a
  ``RunStore``, on any executor (:mod:`~envharness.rollout.executors`: a ``LocalExecutor`` on
  processes, threads or inline, or a ``RayExecutor``); :mod:`~envharness.rollout.jobs` is what a
  worker does with each request.

Example:
    >>> from envharness import load_bridge
    >>> from envharness.rollout import OraclePolicy, rollout
    >>> trajectory = rollout(load_bridge("toy24", task_id="4-4-10-10"), OraclePolicy(1.0, seed=0))
    >>> trajectory.success, trajectory.end_reason
    (True, 'terminated')
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envharness._lazy import lazy_exports
from envharness.rollout.batch import RolloutRequest, run_batch, run_rollouts
from envharness.rollout.executors import Executor, LocalExecutor, WorkerLost, default_workers
from envharness.rollout.factory import POLICY_FORMS, policy_factory
from envharness.rollout.loop import invalid_action_feedback, rollout
from envharness.rollout.policies import (
    OnExhausted,
    OraclePolicy,
    OraclePolicyFactory,
    RandomPolicy,
    RandomPolicyFactory,
    Script,
    ScriptedPolicy,
    ScriptedPolicyFactory,
    load_script,
)
from envharness.rollout.policy import (
    Policy,
    PolicyFactory,
    PrivilegedPolicy,
    TokenUsage,
    describe_policy,
    policy_usage,
)
from envharness.rollout.ray_executor import RayExecutor
from envharness.rollout.stats import (
    FAILURE_CATEGORIES,
    RolloutStats,
    failure_category,
    find_loop,
    stats_by_task,
    wilson_interval,
)
from envharness.rollout.store import RunStore
from envharness.rollout.trajectory import END_REASONS, EndReason, Step, Trajectory

if TYPE_CHECKING:
    from envharness.rollout.chat import ChatModelPolicy, ChatModelPolicyFactory
    from envharness.rollout.chat_context import ContextLimits
    from envharness.rollout.export import ExportResult, export_run

__all__ = [
    # policies
    "ChatModelPolicy",
    "ChatModelPolicyFactory",
    "ContextLimits",
    "OnExhausted",
    "OraclePolicy",
    "OraclePolicyFactory",
    "POLICY_FORMS",
    "Policy",
    "PolicyFactory",
    "PrivilegedPolicy",
    "RandomPolicy",
    "RandomPolicyFactory",
    "ScriptedPolicy",
    "Script",
    "ScriptedPolicyFactory",
    "TokenUsage",
    "describe_policy",
    "load_script",
    "policy_factory",
    "policy_usage",
    # the loop and its record
    "END_REASONS",
    "EndReason",
    "Step",
    "Trajectory",
    "invalid_action_feedback",
    "rollout",
    # statistics
    "FAILURE_CATEGORIES",
    "RolloutStats",
    "failure_category",
    "find_loop",
    "stats_by_task",
    "wilson_interval",
    # executors
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "RolloutRequest",
    "WorkerLost",
    "default_workers",
    "run_batch",
    "run_rollouts",
    # storage
    "RunStore",
    "ExportResult",
    "export_run",
]

_LAZY = {
    "ChatModelPolicy": "envharness.rollout.chat",
    "ChatModelPolicyFactory": "envharness.rollout.chat",
    "ContextLimits": "envharness.rollout.chat_context",
    "ExportResult": "envharness.rollout.export",
    "export_run": "envharness.rollout.export",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals(), __all__)
