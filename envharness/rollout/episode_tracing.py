"""One trace run per episode, so a policy's model calls are grouped by episode.

When LangChain is loaded and a rollout runs inside a LangChain run (a LangGraph node such as the
rigger's observer and validator, a runnable, a LangSmith ``@traceable``) or with LangSmith
tracing switched on (``LANGSMITH_TRACING=true``), the worker plays each episode inside a chain
run named :data:`EPISODE_RUN_NAME`. Its inputs and metadata are the episode's ``task_id``,
``seed``, ``spec_id`` and ``policy``, its outputs ``success``, ``steps`` and ``end_reason``, and
its children are the model calls the policy made in that episode (a
:class:`~envharness.rollout.chat.ChatModelPolicy` calls its model with no config of its own, so
LangChain makes each call a child of the run around it). In LangSmith, filter on
``name = "episode"`` and the metadata to see one episode's calls.

The trace context reaches the episode on the inline executor (the calling thread) and the thread
executor (each job runs in a copy of the submitting thread's context); process and Ray workers
start without it, and their episodes are traced only when tracing is on in their environment.
Without LangChain loaded, or outside any run with tracing off, an episode costs nothing extra.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from envharness.rollout.trajectory import Trajectory

__all__ = ["EPISODE_RUN_NAME", "traced_episode"]

EPISODE_RUN_NAME = "episode"
"""The name of an episode's trace run."""


def _has_handlers(callbacks: Any) -> bool:
    handlers = getattr(callbacks, "handlers", callbacks)
    return bool(handlers)


def _tracing() -> bool:
    """Whether the episode should be a run: inside a traced LangChain run, or tracing is on."""
    if "langchain_core" not in sys.modules:  # no chat policy in this process
        return False
    from langchain_core.runnables.config import var_child_runnable_config

    parent = var_child_runnable_config.get()
    if parent is not None and _has_handlers(parent.get("callbacks")):
        return True
    from langsmith.utils import tracing_is_enabled

    return tracing_is_enabled() is True


def traced_episode(
    play: Callable[[], Trajectory], *, task_id: str, seed: int, spec_id: str, policy: str
) -> Trajectory:
    """``play()``, inside an episode run when a trace is being recorded (see the module).

    Args:
        play: Plays the episode and returns its trajectory.
        task_id: The episode's task.
        seed: Its seed.
        spec_id: Its harness spec's id.
        policy: The policy's description.

    Returns:
        The trajectory ``play`` returned (an exception it raises propagates, the run records it).
    """
    if not _tracing():
        return play()
    from langchain_core.runnables import RunnableLambda

    played: list[Trajectory] = []

    def episode(_: dict[str, Any]) -> dict[str, Any]:
        trajectory = play()
        played.append(trajectory)
        return {
            "success": trajectory.success,
            "steps": trajectory.n_steps,
            "end_reason": trajectory.end_reason,
        }

    about = {"task_id": task_id, "seed": seed, "spec_id": spec_id, "policy": policy}
    config = {"run_name": EPISODE_RUN_NAME, "tags": ["episode"], "metadata": about}
    RunnableLambda(episode, name=EPISODE_RUN_NAME).invoke(about, config=config)  # type: ignore[arg-type]
    return played[0]
