"""``build_rigger``: EnvRigger's LangGraph state machine, and the compiled ``graph``.

    observer → diagnoser → writer → validator ─┬─ accept → END
                              ▲                ├─ refine → writer
                              └────────────────┘─ reject → END

Run settings come through the context schema (:class:`RiggerContext`), the task through the
state (:class:`RiggerInput`), the thread id through ``configurable``. The module-level ``graph``
is what ``langgraph.json`` exposes; it has no checkpointer (the platform supplies one).

Example:
    >>> from envharness.graph import build_rigger
    >>> sorted(build_rigger().get_graph().nodes)
    ['__end__', '__start__', 'diagnoser', 'observer', 'validator', 'writer']
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from envharness.graph.context import RiggerContext
from envharness.graph.nodes import diagnoser, observer, route_after_validator, validator, writer
from envharness.graph.state import RiggerInput, RiggerState

__all__ = ["build_rigger", "graph"]


def build_rigger(*, checkpointer: Any = None, name: str = "envrigger") -> Any:
    """Assembles and compiles the rigger graph.

    Args:
        checkpointer: A LangGraph checkpointer (e.g. ``SqliteSaver``) so a rig can resume;
            ``None`` for none (or to let a parent graph or the platform supply it).
        name: The compiled graph's name (shown in traces and as a subgraph).

    Returns:
        The compiled graph: invoke it with ``{"task_id", "base_spec"}``, a
        ``configurable.thread_id`` and ``context=RiggerContext(...)``.
    """
    builder = StateGraph(RiggerState, context_schema=RiggerContext, input_schema=RiggerInput)
    builder.add_node("observer", observer)
    builder.add_node("diagnoser", diagnoser)
    builder.add_node("writer", writer)
    builder.add_node("validator", validator)
    builder.add_edge(START, "observer")
    builder.add_edge("observer", "diagnoser")
    builder.add_edge("diagnoser", "writer")
    builder.add_edge("writer", "validator")
    builder.add_conditional_edges("validator", route_after_validator, ["writer", END])
    return builder.compile(checkpointer=checkpointer, name=name)


graph = build_rigger()
