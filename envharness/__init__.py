"""EnvHarness: turn a static agent benchmark into a customizable environment.

A bridge adapts a benchmark to :class:`ActionableEnv`; harness components (``Setups``, ``Rules``,
``Link``) stack over it without touching its code or its verifier.

Example:
    >>> import envharness
    >>> env = envharness.load_bridge("toy24", task_id="1-1-4-6")
    >>> observation, info = env.reset(seed=0)
"""

from __future__ import annotations

from envharness.bridges.registry import get_bridge, list_bridges, list_tasks, load_bridge, register
from envharness.core import Action, ActionableEnv, Evaluation, StepResult, ToolSpec
from envharness.errors import (
    BridgeError,
    ConformanceError,
    DependencyNotInstalled,
    DesignerError,
    EnvHarnessError,
    EpisodeError,
    ExecutorError,
    ExperimentError,
    InvalidActionError,
    PolicyError,
    RiggerError,
    RulesError,
    SandboxUnavailableError,
    SetupError,
    SpecError,
    TrajectoryError,
    UnknownBridgeError,
    UnknownTaskError,
)
from envharness.harness import EnvHarness, HarnessSpec, Link, Rules, Setups

__version__ = "0.1.0"

__all__ = [
    # core contracts
    "Action",
    "ActionableEnv",
    "Evaluation",
    "StepResult",
    "ToolSpec",
    # harness components
    "EnvHarness",
    "HarnessSpec",
    "Link",
    "Rules",
    "Setups",
    # bridges
    "get_bridge",
    "list_bridges",
    "list_tasks",
    "load_bridge",
    "register",
    # errors
    "BridgeError",
    "ConformanceError",
    "DependencyNotInstalled",
    "DesignerError",
    "EnvHarnessError",
    "EpisodeError",
    "ExecutorError",
    "ExperimentError",
    "InvalidActionError",
    "PolicyError",
    "RiggerError",
    "RulesError",
    "SandboxUnavailableError",
    "SetupError",
    "SpecError",
    "TrajectoryError",
    "UnknownBridgeError",
    "UnknownTaskError",
]
