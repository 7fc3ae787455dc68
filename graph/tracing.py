"""Tracing a rig: metadata on the rigger's node runs, and a bounded flush of LangSmith's queue.

**Node runs.** LangGraph traces each node as a chain run named after the node (``observer``,
``diagnoser``, ``writer``, ``validator``, ``approval``, ``recorder``). The rigger adds to every
one the metadata of :data:`NODE_METADATA` — ``task_id``, ``bridge``, ``iteration`` (the writer's
is the iteration it writes), ``objective``, ``policy``, ``designer`` — and to the validator's its
``verdict`` (the decision) and ``success_rate``. They are written into the node's run in every
tracer of the run (any :class:`~langchain_core.tracers.base.BaseTracer`, LangSmith's
``LangChainTracer`` included) before the run ends, so they are in the run a tracer persists or
LangSmith receives. A plain callback handler sees, at ``on_chain_start``, the metadata of the
run's config: :func:`~envharness.graph.run.rig` puts ``task_id``, ``bridge``, ``policy``,
``designer`` and ``objective`` there.

**Model calls.** The designer's and diagnoser's calls are children of their node's run (named
``envrigger.writer`` / ``envrigger.diagnoser``). The policy's are too, on the inline executor
(the node's thread) and the thread executor (its workers run in a copy of the node's context);
each episode is one chain run named ``episode`` (metadata ``task_id``, ``seed``, ``spec_id``,
``policy``) whose children are that episode's model calls (see
:mod:`envharness.rollout.episode_tracing`). Process and Ray workers do not carry the trace context.

**LangSmith without a network.** LangSmith sends runs from a background thread, which Python
waits for at exit; with no network each batch retries for seconds (about 12 s more at the exit of
a small rig, measured). ``rig()`` waits at most ``trace_flush_timeout`` (0.5 s) for the queue
(:func:`flush_traces`), and ``envharness rig`` makes LangSmith's thread a daemon
(``LANGSMITH_USE_DAEMON=true`` unless set), so the process exits without waiting for runs that
could not be sent. In your own scripts, set ``LANGSMITH_USE_DAEMON=true`` for the same, or
``LANGSMITH_TRACING=false`` when offline.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import Any

from envharness.graph.context import RiggerContext

__all__ = ["NODE_METADATA", "annotate_node_run", "flush_traces", "node_metadata"]

_log = logging.getLogger("envharness.rig")

NODE_METADATA = ("task_id", "bridge", "iteration", "objective", "policy", "designer")
"""The metadata keys every rigger node run carries (the validator's adds ``verdict``)."""


def node_metadata(
    node: str,
    state: Mapping[str, Any],
    context: RiggerContext,
    update: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The trace metadata of a run of ``node`` on ``state`` (and its ``update``, once known).

    Example:
        >>> from envharness.graph.context import RiggerContext
        >>> spec = {"bridge": {"name": "toy24"}}
        >>> state = {"task_id": "1-1-1-8", "iteration": 1, "base_spec": spec}
        >>> meta = node_metadata("writer", state, RiggerContext(), {"iteration": 2})
        >>> meta["task_id"], meta["bridge"], meta["iteration"], meta["designer"]
        ('1-1-1-8', 'toy24', 2, 'heuristic')
    """
    update = update or {}
    spec = state.get("base_spec")
    bridge = spec.get("bridge") if isinstance(spec, Mapping) else None  # checked by observer
    iteration = update.get("iteration", state.get("iteration", 0))
    if node == "writer" and not update:
        iteration = state.get("iteration", 0) + 1  # the iteration it is writing
    metadata: dict[str, Any] = {
        "task_id": state.get("task_id"),
        "bridge": bridge.get("name") if isinstance(bridge, Mapping) else None,
        "iteration": iteration,
        "objective": str(context.objective),
        "policy": context.policy_name,
        "designer": context.model_name("writer"),
    }
    attempts = update.get("attempts") or []
    if node == "validator" and attempts:
        verdict = attempts[-1].get("verdict") or {}
        metadata["verdict"] = verdict.get("decision")
        metadata["success_rate"] = (verdict.get("stats") or {}).get("success_rate")
    return metadata


def annotate_node_run(
    node: str,
    state: Mapping[str, Any],
    context: RiggerContext,
    update: Mapping[str, Any] | None = None,
) -> None:
    """Adds :func:`node_metadata` to the running node's run in every tracer of its callbacks.

    Called from inside a node (at its start, and with its update at its end). Does nothing
    outside a LangGraph run or when no tracer records the run.
    """
    try:
        from langgraph.config import get_config

        config = get_config()
    except (ImportError, RuntimeError):
        return
    callbacks = config.get("callbacks")
    run_id = getattr(callbacks, "parent_run_id", None)
    if run_id is None:
        return
    runs = []
    for handler in getattr(callbacks, "handlers", ()):
        run_map = getattr(handler, "run_map", None)  # a BaseTracer's runs in progress
        run = run_map.get(str(run_id)) if isinstance(run_map, dict) else None
        if run is not None:
            runs.append(run)
    if runs:
        metadata = node_metadata(node, state, context, update)
        for run in runs:
            run.metadata.update(metadata)


def flush_traces(timeout: float = 0.5) -> bool:
    """Waits at most ``timeout`` seconds for LangSmith to send the runs it has queued.

    Returns:
        Whether nothing is left to send (``True`` too when LangSmith never traced).
    """
    run_trees = sys.modules.get("langsmith.run_trees")
    client = getattr(run_trees, "_CLIENT", None)
    queue = getattr(client, "tracing_queue", None)
    if client is None or queue is None:
        return True
    try:
        client.flush(timeout=timeout)
    except Exception as e:  # tracing must never fail a rig
        _log.warning("could not flush LangSmith traces: %s: %s", type(e).__name__, e)
        return False
    left = queue.unfinished_tasks
    if left:
        _log.warning(
            "LangSmith has %d trace batch(es) still unsent after %.1f s (is its endpoint "
            "reachable?); with LANGSMITH_USE_DAEMON=true the process exits without them",
            left,
            timeout,
        )
    return not left
