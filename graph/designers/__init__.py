"""Designers and diagnosers: one protocol each, the built-ins, and a registry of designers.

Example:
    >>> from envharness.graph.designers import resolve_designer
    >>> resolve_designer("heuristic").name
    'heuristic'
"""

from envharness.graph.designers.builtin import (
    HeuristicDesign,
    HeuristicDiagnosis,
    ModelDesign,
    ModelDiagnosis,
    attempts_feedback,
)
from envharness.graph.designers.protocol import (
    Design,
    DesignBrief,
    Designer,
    Diagnosed,
    Diagnoser,
    DiagnosisBrief,
)
from envharness.graph.designers.registry import (
    register_designer,
    registered_designers,
    resolve_designer,
    resolve_diagnoser,
)

__all__ = [
    "Design",
    "DesignBrief",
    "Designer",
    "Diagnosed",
    "DiagnosisBrief",
    "Diagnoser",
    "HeuristicDesign",
    "HeuristicDiagnosis",
    "ModelDesign",
    "ModelDiagnosis",
    "attempts_feedback",
    "register_designer",
    "registered_designers",
    "resolve_designer",
    "resolve_diagnoser",
]
