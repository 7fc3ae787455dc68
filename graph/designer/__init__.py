"""The model-driven designer: a diagnoser model and a tool-calling designer agent.

- :func:`resolve_model`: a chat model from a model string (``init_chat_model`` form, e.g.
  ``"google_genai:gemini-2.5-flash"``) or an object.
- :func:`model_diagnosis`: the model reads the K baseline rollouts and reports a structured
  :class:`~envharness.graph.records.Diagnosis` through a ``report_diagnosis`` tool.
- :func:`run_designer`: a LangChain ``create_agent`` loop over the designer tools
  (:mod:`envharness.tools`) that ends with an accepted
  :class:`~envharness.graph.records.Candidate` or ``None``.
- :func:`acceptance_rules`, :func:`budget_facts`: what the system prompt says about the
  validator and the budgets, generated from the live judge settings.

These functions know nothing of the rigger's LangGraph state; the ``diagnoser`` and ``writer``
nodes call them. The offline alternative is :mod:`envharness.graph.heuristic`.
"""

from __future__ import annotations

from envharness.graph.designer.acceptance import acceptance_rules, budget_facts
from envharness.graph.designer.agent import WRITER_RUN_NAME, run_designer
from envharness.graph.designer.diagnosis import DIAGNOSIS_TOOL, model_diagnosis, read_report
from envharness.graph.designer.models import model_label, resolve_model, run_config
from envharness.graph.designer.prompting import (
    describe_diagnosis,
    describe_objective,
    designer_system_prompt,
    designer_task_prompt,
    diagnoser_system_prompt,
    diagnoser_task_prompt,
)

__all__ = [
    # models
    "model_label",
    "resolve_model",
    "run_config",
    # the diagnoser
    "DIAGNOSIS_TOOL",
    "model_diagnosis",
    "read_report",
    # the designer agent
    "WRITER_RUN_NAME",
    "run_designer",
    # prompts
    "acceptance_rules",
    "budget_facts",
    "describe_diagnosis",
    "describe_objective",
    "designer_system_prompt",
    "designer_task_prompt",
    "diagnoser_system_prompt",
    "diagnoser_task_prompt",
]
