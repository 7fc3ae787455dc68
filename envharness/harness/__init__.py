"""Harness components: stack them over any bridge to customize it without touching its code.

``Setups`` changes the start state, ``Rules`` runs sandboxed hooks around each step, ``Link``
chains two envs into one episode, and ``HarnessSpec`` serializes a stack.
"""

from __future__ import annotations

from envharness.harness.base import EnvHarness
from envharness.harness.link import HandoverCondition, Link, LinkMode
from envharness.harness.rules import Rules
from envharness.harness.setups import Setups
from envharness.harness.spec import (
    SPEC_VERSION,
    BridgeSpec,
    ComponentSpec,
    HarnessSpec,
    Lineage,
    component_types,
    register_component,
)

__all__ = [
    # components
    "EnvHarness",
    "HandoverCondition",
    "Link",
    "LinkMode",
    "Rules",
    "Setups",
    # specs
    "SPEC_VERSION",
    "BridgeSpec",
    "ComponentSpec",
    "HarnessSpec",
    "Lineage",
    "component_types",
    "register_component",
]
