"""EnvRigger: the LangGraph state machine that rigs a harness to one black-box policy.

``observer`` plays K baseline rollouts, ``diagnoser`` finds the policy's weakness, ``writer``
proposes Setups/Rules/Link components (a tool-calling designer model, or the offline heuristic),
``validator`` judges them on fresh rollouts (:mod:`envharness.graph.judge`); a router loops
write↔validate until the candidate is accepted or the iterations run out. :func:`rig` runs it
over many tasks with a SQLite checkpointer, so an interrupted rig resumes;
:func:`build_rig_many` (``envharness.graph.rig_many.rig_many`` in ``langgraph.json``) is the
same as one graph, each task a ``Send`` to the rigger subgraph.

Installed as ``envharness.graph``; needs the ``rigger`` extra (langgraph, langchain).
"""

from typing import Any

from envharness.graph.context import RiggerContext
from envharness.graph.objective import Objective
from envharness.graph.records import Candidate, Diagnosis, Verdict, Weakness

__all__ = [
    "Candidate",
    "Diagnosis",
    "Objective",
    "RiggerContext",
    "Verdict",
    "Weakness",
    "build_rig_many",
    "build_rigger",
    "graph",
]


def __getattr__(name: str) -> Any:
    """Imports the graph (LangGraph) on first use, so ``envharness.graph.judge`` needs none."""
    if name in ("build_rigger", "graph"):
        from envharness.graph import rigger

        return getattr(rigger, name)
    if name == "build_rig_many":
        from envharness.graph.rig_many import build_rig_many

        return build_rig_many
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names, the lazily imported graphs and builders included."""
    return sorted(set(globals()) | set(__all__))
