"""The one exception hierarchy of EnvHarness.

Every error the library raises on purpose derives from :class:`EnvHarnessError`, so a caller can
catch the whole family with one ``except`` clause. Errors carry structured fields (``bridge``,
``hook``, ``action`` ...) and build their own message from them::

    EnvHarnessError
    ├── BridgeError                 a bridge failed, or was asked for something it does not have
    │   ├── UnknownBridgeError      no bridge is registered under that name
    │   └── UnknownTaskError        the bridge has no task with that id (or no such split)
    ├── EpisodeError                the episode is not in a state that allows the call
    ├── InvalidActionError          an action does not match the tool schemas
    ├── SetupError                  a Setups action failed while building the start state
    ├── RulesError                  rules code failed (static check, a hook, or the sandbox)
    │   └── SandboxUnavailableError the sandbox cannot be started on this machine
    ├── SpecError                   a HarnessSpec is malformed or cannot be rebuilt
    ├── PolicyError                 a policy cannot be built (unknown policy string, bad model)
    ├── TrajectoryError             a trajectory record or run directory is malformed
    ├── ExecutorError               an executor cannot run (e.g. a worker pool failed to start)
    ├── RiggerError                 a rig cannot run (bad objective or settings)
    │   └── DesignerError           a designer or diagnoser model failed or misbehaved
    ├── ExperimentError             bad experiment settings, or a run directory holding others
    ├── ConformanceError            a bridge failed ``envharness.testing.check_bridge``
    └── DependencyNotInstalled      an optional dependency is missing (names the extra)
"""

from __future__ import annotations

from typing import Any

__all__ = [
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


class EnvHarnessError(Exception):
    """Raised for every error EnvHarness reports on purpose (the root of the hierarchy)."""


class BridgeError(EnvHarnessError):
    """Raised when a bridge fails or is asked for something it does not offer."""

    def __init__(self, message: str, *, bridge: str | None = None) -> None:
        self.bridge = bridge
        super().__init__(f"[{bridge}] {message}" if bridge else message)


class UnknownBridgeError(BridgeError):
    """Raised when no bridge is registered under the requested name."""

    def __init__(self, name: str, available: list[str]) -> None:
        self.name = name
        self.available = sorted(available)
        listing = ", ".join(self.available) or "none"
        super().__init__(
            f"no bridge named {name!r}; registered bridges: {listing}. Third-party bridges "
            "register through the 'envharness.bridges' entry-point group."
        )


class UnknownTaskError(BridgeError):
    """Raised when a bridge has no task with the requested id, or no such split."""

    def __init__(self, message: str, *, bridge: str | None = None, task_id: str | None = None):
        self.task_id = task_id
        super().__init__(message, bridge=bridge)


class EpisodeError(EnvHarnessError):
    """Raised when a call does not fit the episode's state (e.g. ``step`` before ``reset``)."""


class InvalidActionError(EnvHarnessError):
    """Raised when an action does not match the environment's tool schemas."""

    def __init__(self, reason: str, *, tool: str | None = None) -> None:
        self.tool = tool
        self.reason = reason
        where = f"tool {tool!r}: " if tool else ""
        super().__init__(f"invalid action: {where}{reason}")


class SetupError(EnvHarnessError):
    """Raised when a Setups action errors or ends the episode while building the start state."""

    def __init__(self, action: Any, index: int, reason: str) -> None:
        self.action = action
        self.index = index
        self.reason = reason
        super().__init__(
            f"setup action #{index} {action} failed: {reason}. The start state was not built; "
            "fix or remove this action (dry-run it on a fresh env to see its effect)."
        )


class RulesError(EnvHarnessError):
    """Raised when rules code fails: the static check, a hook, or the sandbox running it.

    Attributes:
        hook: The hook that failed (``filter_action``, ``modify_transition``,
            ``filter_observation``), or ``None`` when the failure is not in a hook (static check,
            loading the code, starting the sandbox).
        reason: What went wrong, in a sentence.
    """

    def __init__(self, reason: str, *, hook: str | None = None) -> None:
        self.hook = hook
        self.reason = reason
        where = f"hook {hook!r}" if hook else "rules code"
        super().__init__(f"{where} failed: {reason}")


class SandboxUnavailableError(RulesError):
    """Raised when the rules sandbox cannot be started on this machine."""


class SpecError(EnvHarnessError):
    """Raised when a HarnessSpec is malformed, or names something that cannot be rebuilt."""


class PolicyError(EnvHarnessError):
    """Raised when a policy cannot be built: an unknown policy string, a bad model, a bad script."""


class TrajectoryError(EnvHarnessError):
    """Raised when a trajectory record or a run directory is malformed."""


class ExecutorError(EnvHarnessError):
    """Raised when an executor cannot run the rollouts (e.g. its workers cannot start)."""


class RiggerError(EnvHarnessError, ValueError):
    """Raised when a rig cannot run: a bad objective, bad settings, an unusable run directory.

    Also a ``ValueError``, so the LangGraph API server passes its message to the SDK and Studio
    (it hides the messages of other exception types behind "An internal error occurred").
    """


class DesignerError(RiggerError):
    """Raised when a designer or diagnoser model fails or keeps misbehaving."""


class ExperimentError(EnvHarnessError):
    """Raised when an experiment cannot run: bad arms, counts or tasks, or a used run directory."""


class ConformanceError(EnvHarnessError):
    """Raised when a bridge fails the conformance suite (``envharness.testing.check_bridge``)."""

    def __init__(self, bridge: str, failures: list[str]) -> None:
        self.bridge = bridge
        self.failures = list(failures)
        body = "\n".join(f"  - {f}" for f in self.failures)
        super().__init__(
            f"bridge {bridge!r} failed {len(self.failures)} conformance check(s):\n{body}"
        )


class DependencyNotInstalled(EnvHarnessError, ImportError):
    """Raised when an optional dependency is missing; the message names the extra to install."""

    def __init__(self, package: str, extra: str, *, purpose: str | None = None) -> None:
        self.package = package
        self.extra = extra
        what = f" (needed for {purpose})" if purpose else ""
        super().__init__(
            f"the optional package {package!r} is not installed{what}; "
            f"install it with: pip install 'envharness[{extra}]'"
        )
