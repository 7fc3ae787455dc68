"""The offline heuristic designer: diagnosis from statistics, candidates from templates.

Used by EnvRigger when no model is configured, and honest about it: diagnoses have
``source="heuristic"`` and every rationale starts with ``heuristic template <name>:``.

- :func:`heuristic_diagnosis` — direction and weaknesses (with episode/step evidence) from the
  baseline's K-rollout statistics.
- :class:`DesignContext` — what the designer reads from a fresh env (tools, state schema, oracle
  plan, stage candidates, sibling tasks) plus the baseline.
- :class:`HeuristicDesigner` — ``propose(context, diagnosis, objective, attempts)``: a
  deterministic bracketing search over the templates, steered by the verdicts.
- :mod:`~envharness.graph.heuristic.templates` — the templates (Setups, Rules code, Links).

Search that tunes numbers is not here: a template with a dial (``drop_actions``) declares it as
a knob, and the validator calibrates it by statistics (:mod:`envharness.graph.judge`).
"""

from __future__ import annotations

from envharness.graph.heuristic.design_context import DesignContext, discover_siblings
from envharness.graph.heuristic.designer import HeuristicDesigner
from envharness.graph.heuristic.diagnose import diagnosis_direction, heuristic_diagnosis
from envharness.graph.heuristic.ladder import Target, candidate_key
from envharness.graph.heuristic.rules_code import PART_KINDS, RulePart, parts_of, render_rules
from envharness.graph.heuristic.templates import (
    answer_invalid_with_options,
    block_repeated_action,
    combine,
    drop_actions,
    forbid_tool,
    hint_rule,
    link_siblings,
    setups_oracle_prefix,
    setups_stage_candidate,
    setups_success_prefix,
    truncate_observation,
)

__all__ = [
    # diagnosis
    "diagnosis_direction",
    "heuristic_diagnosis",
    # the designer
    "DesignContext",
    "HeuristicDesigner",
    "Target",
    "candidate_key",
    "discover_siblings",
    # templates
    "answer_invalid_with_options",
    "block_repeated_action",
    "combine",
    "drop_actions",
    "forbid_tool",
    "hint_rule",
    "link_siblings",
    "setups_oracle_prefix",
    "setups_stage_candidate",
    "setups_success_prefix",
    "truncate_observation",
    # rules code
    "PART_KINDS",
    "RulePart",
    "parts_of",
    "render_rules",
]
