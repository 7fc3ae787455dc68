"""Designers: the one protocol every designer implements, the built-ins, and a registry.

Example:
    >>> from envharness.graph.designers import resolve_designer
    >>> resolve_designer("heuristic").name
    'heuristic'
"""

from envharness.graph.designers.builtin import HeuristicDesign, ModelDesign, attempts_feedback
from envharness.graph.designers.protocol import Design, DesignBrief, Designer
from envharness.graph.designers.registry import (
    register_designer,
    registered_designers,
    resolve_designer,
)

__all__ = [
    "Design",
    "DesignBrief",
    "Designer",
    "HeuristicDesign",
    "ModelDesign",
    "attempts_feedback",
    "register_designer",
    "registered_designers",
    "resolve_designer",
]
