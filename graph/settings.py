"""The rigger's context schema: its run settings as plain, serializable values.

``RiggerSettings`` is what LangGraph Studio and the SDK see (``graph.get_context_jsonschema()``)
and what a run records in its state, so a resume can check them. Python callers may pass a
:class:`~envharness.graph.context.RiggerContext` instead (the same settings, validated, plus
live objects); live resources for runs driven by settings alone (an executor, a policy factory,
designer objects) go to ``build_rigger(resources=RiggerResources(...))``.

Every field is optional; a missing one takes :class:`~envharness.graph.context.RiggerContext`'s
default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field
from typing_extensions import TypedDict

__all__ = ["SETTING_NAMES", "RiggerResources", "RiggerSettings"]


class RiggerSettings(TypedDict, total=False):
    """EnvRigger's run settings (the graph's context schema)."""

    run_dir: Annotated[
        str, Field(description="Run directory: trajectories, accepted/rejected specs.")
    ]
    policy: Annotated[
        str,
        Field(
            description="The black-box policy: 'oracle:SKILL', 'random', 'scripted:FILE' or a "
            "chat model 'PROVIDER:MODEL' (e.g. 'google_genai:gemini-2.5-flash')."
        ),
    ]
    designer: Annotated[
        str,
        Field(
            description="Who writes candidates: 'heuristic' (offline), a registered designer "
            "name, or a chat model 'PROVIDER:MODEL'."
        ),
    ]
    diagnoser: Annotated[
        str | None,
        Field(description="'heuristic' or a chat model; empty: the designer's model."),
    ]
    objective: Annotated[
        str,
        Field(description="'auto', 'sr:LOW-HIGH', 'steps:LOW-HIGH' or a weakness in words."),
    ]
    k_observe: Annotated[int, Field(ge=1, description="Baseline rollouts per task.")]
    k_validate: Annotated[
        int, Field(ge=1, description="Validation rollouts between two looks of the judge.")
    ]
    max_iterations: Annotated[
        int, Field(ge=1, description="Write/validate iterations before giving up.")
    ]
    confidence: Annotated[
        float,
        Field(gt=0, lt=1, description="Posterior probability a decision needs (default 0.8)."),
    ]
    max_rollouts: Annotated[
        int, Field(ge=1, description="Validation rollouts one candidate may spend.")
    ]
    min_effect: Annotated[
        float, Field(gt=0, le=1, description="Smallest success change 'auto' counts.")
    ]
    require_approval: Annotated[
        bool, Field(description="Pause for a human's approval before accepting a harness.")
    ]
    siblings: Annotated[
        list[str], Field(description="Tasks of the same bridge a Link may chain to.")
    ]
    max_designer_turns: Annotated[
        int, Field(ge=1, description="Model calls the designer may spend per candidate.")
    ]
    feedback_budget: Annotated[
        int, Field(ge=1, description="Tokens the designer's feedback on attempts may fill.")
    ]
    seed: Annotated[int, Field(ge=0, description="The run's first rollout seed.")]
    metadata: Annotated[dict[str, Any], Field(description="Extra metadata for traces (LangSmith).")]


SETTING_NAMES = tuple(RiggerSettings.__annotations__)
"""The names of every setting, in schema order."""


@dataclass
class RiggerResources:
    """Live objects for runs whose context is plain settings (Studio, the SDK, a parent graph).

    Given to ``build_rigger(resources=...)``; a setting names the resource it uses, and a
    resource set here wins over the setting's string.

    Attributes:
        executor: Where rollouts run (``None``: in the calling thread).
        policy: A policy factory ``factory(seed) -> Policy`` used instead of ``policy``.
        designer: A ``Designer`` or chat model object used instead of ``designer``.
        diagnoser: A ``Diagnoser`` or chat model object used instead of ``diagnoser``.
    """

    executor: Any = None
    policy: Any = None
    designer: Any = None
    diagnoser: Any = None
