"""The rigger's nodes, one module each, and the routers between them."""

from envharness.graph.nodes.approval import approval
from envharness.graph.nodes.diagnoser import diagnoser
from envharness.graph.nodes.observer import observer
from envharness.graph.nodes.recorder import recorder
from envharness.graph.nodes.router import route_after_approval, route_after_validator
from envharness.graph.nodes.validator import validator
from envharness.graph.nodes.writer import writer

__all__ = [
    "approval",
    "diagnoser",
    "observer",
    "recorder",
    "route_after_approval",
    "route_after_validator",
    "validator",
    "writer",
]
