"""Filling EnvRigger's prompt templates for the designer agent and the diagnoser model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from envharness.graph.judge.decisions import JudgeSettings
from envharness.graph.objective import Objective
from envharness.graph.records import Diagnosis
from envharness.prompts import load_prompt
from envharness.rollout.stats import RolloutStats
from envharness.rollout.trajectory import Trajectory
from envharness.sandbox import ALLOWED_IMPORTS
from envharness.tools import DesignSession, baseline_digest, describe_stats
from envharness.tools.envs import fresh_env

__all__ = [
    "describe_diagnosis",
    "describe_objective",
    "designer_system_prompt",
    "designer_task_prompt",
    "diagnoser_system_prompt",
    "diagnoser_task_prompt",
]


def describe_objective(objective: Objective) -> str:
    """The objective in words, with its short form (``sr:0.4-0.6``)."""
    if objective.kind in ("auto", "deficiency"):
        return objective.describe()
    return f"{objective.describe()} ({objective})"


def describe_diagnosis(diagnosis: Diagnosis | Mapping[str, Any] | None) -> str:
    """The diagnosis as text for the designer: direction, summary, weaknesses with evidence."""
    if diagnosis is None:
        return "No diagnosis was made; read the baseline and decide yourself."
    if not isinstance(diagnosis, Diagnosis):
        diagnosis = Diagnosis.from_dict(dict(diagnosis))
    lines = [f"direction: {diagnosis.direction} (by {diagnosis.source})"]
    if diagnosis.summary:
        lines.append(diagnosis.summary)
    for weakness in diagnosis.weaknesses:
        seen = f", in {weakness.episodes} episode(s)" if weakness.episodes else ""
        lines.append(f"- {weakness.kind}{seen}: {weakness.description}")
        lines.extend(f"    evidence: {item}" for item in weakness.evidence)
    return "\n".join(lines)


def designer_system_prompt(
    objective: Objective, hints: str = "", *, settings: JudgeSettings | None = None
) -> str:
    """The designer's system prompt for ``objective``, with bridge hints and the judge's rules."""
    settings = settings or JudgeSettings()
    return load_prompt(
        "designer",
        objective=describe_objective(objective),
        allowed_imports=", ".join(sorted(ALLOWED_IMPORTS)),
        hints=hints.strip(),
        confidence=f"{settings.confidence:g}",
        min_effect=f"{settings.min_effect:g}",
    ).strip()


def _instruction(session: DesignSession) -> str:
    for trajectory in session.trajectories:
        if trajectory.instruction:
            return trajectory.instruction
    with fresh_env(session.base_spec) as env:
        return env.instruction


def designer_task_prompt(
    session: DesignSession,
    diagnosis: Diagnosis | Mapping[str, Any] | None,
    objective: Objective,
    feedback: str | None,
    max_turns: int,
) -> str:
    """The designer's first message: the task, objective, diagnosis, statistics and feedback."""
    if feedback:
        previous = (
            f"The validator refused your previous candidate: {feedback.strip()}\n"
            "Design the next candidate with this feedback in mind."
        )
    else:
        previous = "None: this is the first candidate for this task."
    return load_prompt(
        "designer_task",
        task_id=session.task_id,
        bridge=session.bridge,
        instruction=_instruction(session),
        objective=describe_objective(objective),
        diagnosis=describe_diagnosis(diagnosis),
        stats=describe_stats(session.rollout_stats),
        feedback=previous,
        max_turns=max_turns,
    ).strip()


def diagnoser_system_prompt(objective: Objective, hints: str = "") -> str:
    """The diagnoser's system prompt for ``objective``, with optional bridge hints."""
    return load_prompt(
        "diagnoser", objective=describe_objective(objective), hints=hints.strip()
    ).strip()


def diagnoser_task_prompt(
    trajectories: Sequence[Trajectory],
    stats: RolloutStats,
    reply_format: str,
    *,
    limit: int = 8000,
) -> str:
    """The diagnoser's message: the task, the baseline statistics and episodes, the reply form."""
    first = trajectories[0]
    return load_prompt(
        "diagnoser_task",
        task_id=first.task_id,
        bridge=first.bridge,
        instruction=first.instruction or "(not recorded)",
        baseline=baseline_digest(trajectories, stats, limit=limit),
        reply_format=reply_format,
    ).strip()
