"""``build_rigger``: EnvRigger's LangGraph state machine, and the compiled ``graph``.

    observer → diagnoser → writer → validator ─┬─ accept / reject / undecided → recorder → END
                              ▲                ├─ accept, require_approval → approval ─┐
                              │                └─ refine ──────────────────────────────┤
                              └──────────────────── refused ────────────────────────────┘
    (approval: approved, or refused with no iterations left → recorder)

Run settings come through the context (a :class:`RiggerContext`, or a plain
:class:`RiggerSettings` dict, the context schema Studio and the SDK see; the first step records
them in the state, and a resume is checked against them), the task through the input
(:class:`RiggerInput`), the thread id through ``configurable``; a finished rig returns
:class:`RiggerOutput`. The module-level ``graph``
is what ``langgraph.json`` exposes; it has no checkpointer (the platform supplies one).

Example:
    >>> from envharness.graph import build_rigger
    >>> sorted(build_rigger().get_graph().nodes)
    ['__end__', '__start__', 'approval', 'diagnoser', 'observer', 'recorder', 'validator', 'writer']
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from envharness.graph.context import resolve_context
from envharness.graph.nodes import (
    approval,
    diagnoser,
    observer,
    recorder,
    route_after_approval,
    route_after_validator,
    validator,
    writer,
)
from envharness.graph.settings import RiggerResources, RiggerSettings
from envharness.graph.state import RiggerInput, RiggerOutput, RiggerState
from envharness.graph.tracing import annotate_node_run

__all__ = ["build_rigger", "graph"]

Node = Callable[[RiggerState, Runtime[Any]], dict[str, Any]]


def _with_context(node: Node, resources: RiggerResources | None) -> Node:
    """``node`` run with the resolved :class:`RiggerContext`, its trace run annotated.

    See ``resolve_context`` and :func:`~envharness.graph.tracing.annotate_node_run`.
    """

    @functools.wraps(node)
    def run(state: RiggerState, runtime: Runtime[Any]) -> dict[str, Any]:
        context = resolve_context(runtime.context, state.get("settings"), resources)
        annotate_node_run(node.__name__, state, context)
        update = node(state, runtime.override(context=context))
        annotate_node_run(node.__name__, state, context, update)
        return update

    return run


def build_rigger(
    *,
    checkpointer: Any = None,
    name: str = "envrigger",
    resources: RiggerResources | None = None,
) -> Any:
    """Assembles and compiles the rigger graph.

    Args:
        checkpointer: A LangGraph checkpointer (e.g. ``SqliteSaver``) so a rig can resume;
            ``None`` for none (or to let a parent graph or the platform supply it).
        name: The compiled graph's name (shown in traces and as a subgraph).
        resources: Live objects (executor, policy factory, designer objects) for runs whose
            context is a settings dict; a ``RiggerContext`` context carries its own.

    Returns:
        The compiled graph: invoke it with ``{"task_id", "base_spec"}``, a
        ``configurable.thread_id`` and ``context=RiggerContext(...)`` (or a
        :class:`~envharness.graph.settings.RiggerSettings` dict).
    """
    builder = StateGraph(
        RiggerState,
        context_schema=RiggerSettings,
        input_schema=RiggerInput,
        output_schema=RiggerOutput,
    )
    for node in (observer, diagnoser, writer, validator, approval, recorder):
        builder.add_node(node.__name__, _with_context(node, resources))
    builder.add_edge(START, "observer")
    builder.add_edge("observer", "diagnoser")
    builder.add_edge("diagnoser", "writer")
    builder.add_edge("writer", "validator")
    builder.add_conditional_edges(
        "validator", route_after_validator, ["writer", "approval", "recorder"]
    )
    builder.add_conditional_edges("approval", route_after_approval, ["writer", "recorder"])
    builder.add_edge("recorder", END)
    return builder.compile(checkpointer=checkpointer, name=name)


graph = build_rigger()
