"""``DesignContext``: what the heuristic designer knows about a task, read once from a fresh env."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from envharness.core import Action, ToolSpec
from envharness.errors import BridgeError, EnvHarnessError, RiggerError
from envharness.harness.spec import HarnessSpec
from envharness.rollout.trajectory import Trajectory

__all__ = ["DesignContext", "discover_siblings"]

_log = logging.getLogger("envharness.graph")

MAX_SIBLINGS = 8
"""How many sibling tasks :func:`discover_siblings` offers by default."""


def discover_siblings(spec: HarnessSpec, *, limit: int = MAX_SIBLINGS) -> list[str]:
    """Other tasks of the spec's bridge, for linking: the ones after it in the train list.

    The choice is deterministic: the bridge's ``train`` split in its own order, starting right
    after the spec's task and wrapping around, so different tasks get different partners.

    Args:
        spec: The task's spec (its bridge name and options are used).
        limit: At most this many task ids.

    Returns:
        Up to ``limit`` task ids, the spec's own excluded; empty when the bridge does not list
        its tasks.

    Example:
        >>> from envharness.harness.spec import BridgeSpec
        >>> discover_siblings(HarnessSpec(BridgeSpec("toy24", "1-1-4-6")), limit=2)
        ['1-1-4-7', '1-1-4-8']
    """
    from envharness.bridges.registry import list_tasks

    try:
        tasks = list_tasks(spec.bridge.name, "train", **spec.bridge.options)
    except (EnvHarnessError, TypeError) as e:
        _log.info("no sibling tasks for %s: %s", spec.bridge.name, e)
        return []
    own = spec.bridge.task_id
    start = tasks.index(own) + 1 if own in tasks else 0
    ordered = tasks[start:] + tasks[:start]
    return [t for t in ordered if t != own][: max(0, limit)]


def _action_dicts(actions: Sequence[Any]) -> list[dict[str, Any]]:
    return [Action.from_dict(a).to_dict() for a in actions]


@dataclass(frozen=True)
class DesignContext:
    """The task as the heuristic designer sees it.

    Attributes:
        base_spec: The spec being rigged (a bare bridge or an existing stack).
        tools: The tools the agent can call.
        state_schema: The JSON-Schema of ``get_env_state()``.
        baseline: The baseline trajectories.
        oracle_actions: The oracle's plan from the start state (after reset), as ``{"tool",
            "args"}`` dicts; ``None`` when the bridge has no oracle.
        stage_candidates: The bridge's start-state perturbations, as lists of action dicts.
        sibling_task_ids: Other tasks of the same bridge, for Link hardening.
        max_steps: The agent's step budget on the base spec.

    Example:
        >>> from envharness.harness.spec import BridgeSpec
        >>> context = DesignContext.from_spec(HarnessSpec(BridgeSpec("toy24", "4-4-10-10")), [])
        >>> [t.name for t in context.tools], len(context.oracle_actions), context.max_steps
        (['combine', 'undo'], 3, 12)
    """

    base_spec: HarnessSpec
    tools: list[ToolSpec] = field(default_factory=list)
    state_schema: dict[str, Any] = field(default_factory=dict)
    baseline: list[Trajectory] = field(default_factory=list)
    oracle_actions: list[dict[str, Any]] | None = None
    stage_candidates: list[list[dict[str, Any]]] = field(default_factory=list)
    sibling_task_ids: list[str] = field(default_factory=list)
    max_steps: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.base_spec, HarnessSpec):
            raise RiggerError(
                f"expected base_spec to be a HarnessSpec, got {type(self.base_spec).__name__}"
            )
        for item in self.baseline:
            if not isinstance(item, Trajectory):
                raise RiggerError(f"expected baseline Trajectory items, got {type(item).__name__}")

    @classmethod
    def from_spec(
        cls,
        base_spec: HarnessSpec,
        baseline: Sequence[Trajectory],
        *,
        siblings: Sequence[str] | None = None,
        seed: int = 0,
    ) -> DesignContext:
        """Reads tools, state schema, oracle plan and stage candidates from a fresh env.

        The env is built from ``base_spec``, reset with ``seed``, read, and closed.

        Args:
            base_spec: The spec being rigged.
            baseline: The baseline trajectories.
            siblings: Task ids to link for hardening; ``None`` discovers them with
                :func:`discover_siblings`; an empty list offers none. The task itself is dropped.
            seed: The reset seed.

        Raises:
            RiggerError: If the env cannot be built or reset (with the cause).
        """
        if not isinstance(base_spec, HarnessSpec):
            raise RiggerError(
                f"expected base_spec to be a HarnessSpec, got {type(base_spec).__name__}"
            )
        try:
            env = base_spec.build()
        except EnvHarnessError as e:
            raise RiggerError(f"cannot build the base spec {base_spec.spec_id}: {e}") from e
        try:
            env.reset(seed=seed)
            tools = list(env.tools())
            schema = dict(env.env_state_schema())
            max_steps = int(env.max_steps)
            try:
                oracle: list[dict[str, Any]] | None = _action_dicts(env.oracle_actions())
            except BridgeError:
                oracle = None
            stages = [_action_dicts(actions) for actions in env.stage_candidates()]
        except EnvHarnessError as e:
            raise RiggerError(f"cannot read the task from {base_spec.spec_id}: {e}") from e
        finally:
            env.close()
        if siblings is None:
            siblings = discover_siblings(base_spec)
        own = base_spec.bridge.task_id
        return cls(
            base_spec=base_spec,
            tools=tools,
            state_schema=schema,
            baseline=list(baseline),
            oracle_actions=oracle,
            stage_candidates=stages,
            sibling_task_ids=[t for t in dict.fromkeys(siblings) if t != own],
            max_steps=max_steps,
        )

    @property
    def successes(self) -> list[Trajectory]:
        """The successful baseline trajectories."""
        return [t for t in self.baseline if t.success]

    @property
    def tool_names(self) -> list[str]:
        """The tools' names, in order."""
        return [t.name for t in self.tools]
