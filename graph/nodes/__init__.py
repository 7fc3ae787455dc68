"""The rigger's nodes, one module each, and the router after ``validator``."""

from envharness.graph.nodes.diagnoser import diagnoser
from envharness.graph.nodes.observer import observer
from envharness.graph.nodes.router import route_after_validator
from envharness.graph.nodes.validator import validator
from envharness.graph.nodes.writer import writer

__all__ = ["diagnoser", "observer", "route_after_validator", "validator", "writer"]
