"""The oracle check's limits, shared by the validator and the designer's acceptance rules.

The validator (:mod:`envharness.graph.nodes.validator`) applies them; the designer's prompt
(:mod:`envharness.graph.designer.acceptance`) quotes them, so both read them here.
"""

from __future__ import annotations

__all__ = ["ORACLE_BUDGET_FACTOR", "ORACLE_TRIES"]

ORACLE_TRIES = 3
"""Seeds the oracle check tries before it calls a candidate unsolvable."""

ORACLE_BUDGET_FACTOR = 4
"""Times the step budget an out-of-steps oracle is given, to tell slow from stuck."""
