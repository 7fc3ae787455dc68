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
from envharness.graph.designers.feedback import render_attempt, render_feedback
from envharness.graph.designers.protocol import (
    DEFAULT_FEEDBACK_BUDGET,
    Design,
    DesignBrief,
    Designer,
    Diagnosed,
    Diagnoser,
    DiagnosisBrief,
    PastAttempt,
)
from envharness.graph.designers.registry import (
    register_designer,
    registered_designers,
    resolve_designer,
    resolve_diagnoser,
)

__all__ = [
    "DEFAULT_FEEDBACK_BUDGET",
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
    "PastAttempt",
    "attempts_feedback",
    "register_designer",
    "registered_designers",
    "render_attempt",
    "render_feedback",
    "resolve_designer",
    "resolve_diagnoser",
]
