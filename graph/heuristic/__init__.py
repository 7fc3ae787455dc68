"""Temporary during development."""

from __future__ import annotations

import importlib

_LAZY = {
    "heuristic_diagnosis": "diagnose",
    "DesignContext": "design_context",
    "HeuristicDesigner": "designer",
    "heuristic_search": "search",
}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(name)
    return getattr(importlib.import_module(f"envharness.graph.heuristic.{_LAZY[name]}"), name)
