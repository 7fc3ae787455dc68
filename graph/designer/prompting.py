"""Filling EnvRigger's prompt templates for the designer agent and the diagnoser model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from envharness.graph.designer.acceptance import acceptance_rules, budget_facts
from envharness.graph.judge.decisions import JudgeSettings, Outcomes
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
    "identical_baseline",
    "session_max_steps",
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
    objective: Objective,
    hints: str = "",
    *,
    settings: JudgeSettings | None = None,
    direction: str = "none",
    baseline: RolloutStats | None = None,
    max_steps: int | None = None,
) -> str:
    """The designer's system prompt: the objective, the acceptance rules, the budgets, hints.

    The acceptance rules are generated from ``settings`` and the judge itself
    (:func:`~envharness.graph.designer.acceptance.acceptance_rules`), so they state what the
    validator really does.

    Args:
        objective: The rig's objective.
        hints: The bridge's hints.
        settings: The judge's settings (the defaults when ``None``).
        direction: The diagnosis's direction (the rule of an ``auto`` objective depends on it).
        baseline: The baseline's statistics (the knob's aim and the earliest acceptance).
        max_steps: The policy's step budget per episode.
    """
    settings = settings or JudgeSettings()
    outcomes = Outcomes(baseline.n, baseline.successes) if baseline is not None else None
    return load_prompt(
        "designer",
        objective=describe_objective(objective),
        allowed_imports=", ".join(sorted(ALLOWED_IMPORTS)),
        hints=hints.strip(),
        acceptance_rules=acceptance_rules(objective, direction, settings, baseline=outcomes),
        budget_facts=budget_facts(max_steps),
    ).strip()


def _instruction(session: DesignSession) -> str:
    for trajectory in session.trajectories:
        if trajectory.instruction:
            return trajectory.instruction
    with fresh_env(session.base_spec) as env:
        return env.instruction


def session_max_steps(session: DesignSession) -> int | None:
    """The policy's step budget, as the baseline recorded it (the environment's otherwise)."""
    for trajectory in session.trajectories:
        if trajectory.max_steps:
            return trajectory.max_steps
    try:
        with fresh_env(session.base_spec) as env:
            return int(env.max_steps)
    except Exception:  # a budget is a fact worth stating, not worth failing the run for
        return None


def identical_baseline(trajectories: Sequence[Trajectory]) -> bool:
    """Whether two or more episodes all took the same actions to the same outcome."""
    if len(trajectories) < 2:
        return False
    first = trajectories[0]
    return all(
        t.action_keys() == first.action_keys() and t.success == first.success
        for t in trajectories[1:]
    )


def _iterations_left(iteration: int, max_iterations: int) -> str:
    left = max_iterations - iteration
    if left <= 0:
        return "this is the last candidate the rig may try; if it is not accepted, the rig ends."
    more = "candidate" if left == 1 else "candidates"
    return f"if this candidate is not accepted, {left} more {more} may be tried."


def designer_task_prompt(
    session: DesignSession,
    diagnosis: Diagnosis | Mapping[str, Any] | None,
    objective: Objective,
    feedback: str | None,
    max_turns: int,
    *,
    iteration: int = 1,
    max_iterations: int = 1,
) -> str:
    """The designer's first message: task, iteration, objective, diagnosis, statistics, feedback."""
    if feedback:
        previous = (
            "Your earlier candidates for this task, oldest first, each with the validator's "
            "verdict and statistics; design the next one from these numbers.\n\n" + feedback.strip()
        )
    else:
        previous = "None: this is the first candidate for this task."
    stats = describe_stats(session.rollout_stats)
    if identical_baseline(session.trajectories):
        stats += (
            f"\nAll {len(session.trajectories)} baseline episodes are identical (the same "
            "actions, the same outcome): the policy is deterministic here, so a deterministic "
            "harness moves every episode the same way; to land between 0% and 100% success, use "
            "a stochastic rule with a declared knob."
        )
    return load_prompt(
        "designer_task",
        task_id=session.task_id,
        bridge=session.bridge,
        iteration=iteration,
        max_iterations=max_iterations,
        iterations_left=_iterations_left(iteration, max_iterations),
        instruction=_instruction(session),
        objective=describe_objective(objective),
        diagnosis=describe_diagnosis(diagnosis),
        stats=stats,
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
