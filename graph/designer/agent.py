"""``run_designer``: the tool-calling designer agent that writes one candidate harness.

The agent is LangChain's ``create_agent`` over the designer tools (:mod:`envharness.tools`), with
one middleware that counts model calls and tokens on the session and ends the run as soon as a
submission is accepted or the turn budget is spent. A model that stops calling tools without an
accepted submission is reminded once; if it stops again, the run ends without a candidate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, hook_config
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableLambda
from langgraph.errors import GraphRecursionError

from envharness.errors import DesignerError
from envharness.graph.designer.models import model_label, resolve_model, run_config
from envharness.graph.designer.prompting import (
    designer_system_prompt,
    designer_task_prompt,
    session_max_steps,
)
from envharness.graph.events import DesignerTurn, EventWriter, ignore
from envharness.graph.judge.decisions import JudgeSettings
from envharness.graph.objective import Objective
from envharness.graph.records import Candidate, Diagnosis
from envharness.prompts import load_hints, load_prompt
from envharness.tools import DesignSession, build_designer_tools

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["WRITER_RUN_NAME", "run_designer"]

WRITER_RUN_NAME = "envrigger.writer"
"""The trace name of a designer run (LangSmith)."""

_STEPS_PER_TURN = 4  # graph steps per model turn: before_model, model, after_model, tools


class _TurnGuard(AgentMiddleware):
    """Counts model calls on the session; ends the run on a submission or when turns run out.

    Each call is also reported as a ``designer_turn`` event (:mod:`envharness.graph.events`).
    """

    def __init__(
        self,
        session: DesignSession,
        max_turns: int,
        *,
        events: EventWriter = ignore,
        iteration: int = 1,
        label: str = "",
    ) -> None:
        super().__init__()
        self.session = session
        self.max_turns = max_turns
        self.calls = 0
        self.exhausted = False
        self.events = events
        self.iteration = iteration
        self.label = label

    @property
    def name(self) -> str:
        """The middleware's name in the agent graph."""
        return "envrigger_turn_guard"

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Ends the run before the next model call when it has nothing left to do."""
        if self.session.submitted is not None:
            return {"jump_to": "end"}
        if self.calls >= self.max_turns:
            self.exhausted = True
            return {"jump_to": "end"}
        return None

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Counts the call and its token usage, and reports the turn."""
        self.calls += 1
        messages = state.get("messages") or []
        last = messages[-1] if messages else None
        self.session.usage.add(getattr(last, "usage_metadata", None))
        calls = getattr(last, "tool_calls", None) or []
        turn = DesignerTurn(
            event="designer_turn",
            task_id=self.session.task_id,
            iteration=self.iteration,
            turn=self.calls,
            max_turns=self.max_turns,
            designer=self.label,
            tool_calls=[str(call.get("name", "")) for call in calls],
        )
        self.events(turn)
        return None


def _check_turns(max_turns: object) -> int:
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
        raise DesignerError(f"expected max_turns to be a positive int, got {max_turns!r}")
    return max_turns


def _invoke(agent: Any, messages: list[BaseMessage], config: Any, label: str) -> Any:
    try:
        return agent.invoke({"messages": messages}, config=config)
    except GraphRecursionError:
        return None
    except NotImplementedError as e:
        raise DesignerError(
            f"the designer model {label} cannot call tools ({e}); the designer agent needs a "
            "tool-calling chat model"
        ) from e
    except DesignerError:
        raise
    except Exception as e:
        raise DesignerError(f"the designer model {label} failed: {type(e).__name__}: {e}") from e


def run_designer(
    model: BaseChatModel | str,
    session: DesignSession,
    *,
    diagnosis: Diagnosis | Mapping[str, Any] | None = None,
    objective: Objective | str | None = None,
    feedback: str | None = None,
    max_turns: int = 12,
    system_prompt: str | None = None,
    bridge_hints: str | None = None,
    config: Mapping[str, Any] | None = None,
    judge_settings: JudgeSettings | None = None,
    iteration: int = 1,
    max_iterations: int = 1,
    max_steps: int | None = None,
    events: EventWriter = ignore,
) -> Candidate | None:
    """Runs the designer agent on ``session`` until it submits a candidate or gives up.

    The run ends when ``submit_candidate`` accepts a submission (it is returned), when
    ``max_turns`` model calls are spent, or when the model stops calling tools twice (once more
    after a reminder). Without a candidate, :attr:`DesignSession.end_reason` says why
    (``max_turns`` or ``no_submission``). Model calls and tokens are added to
    :attr:`DesignSession.usage`; the conversation is kept in :attr:`DesignSession.transcript`.

    Args:
        model: A tool-calling LangChain chat model, or a model string for
            :func:`resolve_model`.
        session: The task's design session; its previous submission is cleared first.
        diagnosis: The diagnosis to design against (the session's when ``None``).
        objective: The objective (the session's when ``None``).
        feedback: The earlier attempts of this rig and the validator's verdict on each, when
            refining (see :func:`~envharness.graph.designers.render_feedback`).
        max_turns: The most model calls this run may make.
        system_prompt: Replaces the designer system prompt (``prompts/designer.md``).
        bridge_hints: Notes on the bridge; the bridge's hint file when ``None``.
        config: A runnable config for tracing; ``run_name`` defaults to ``envrigger.writer``,
            the tags ``envrigger`` and ``writer`` and the task's metadata are added.
        judge_settings: The validator's settings; the system prompt states the acceptance
            rules with their numbers (the defaults when ``None``).
        iteration: This candidate's iteration (1-based), stated in the task message.
        max_iterations: The iterations the rig may use.
        max_steps: The policy's step budget, stated in the system prompt (the baseline's, or
            the environment's, when ``None``).
        events: Where each model call is reported as a ``designer_turn`` event (the writer
            node's stream writer; see :mod:`envharness.graph.events`).

    Returns:
        The accepted candidate, or ``None``.

    Raises:
        DesignerError: ``max_turns`` is not a positive int, the model cannot be resolved or
            cannot call tools, or a model call failed.
        RiggerError: The session's base spec does not build.
    """
    max_turns = _check_turns(max_turns)
    if isinstance(model, str):
        model = resolve_model(model)
    objective = Objective.parse(objective if objective is not None else session.objective)
    if diagnosis is None:
        diagnosis = session.diagnosis  # type: ignore[assignment]
    hints = load_hints(session.bridge) if bridge_hints is None else bridge_hints
    if isinstance(diagnosis, Diagnosis):
        direction = diagnosis.direction
    else:
        direction = str(dict(diagnosis or {}).get("direction", "none"))
    if max_steps is None:
        max_steps = session_max_steps(session)
    session.begin_run()
    label = model_label(model)
    guard = _TurnGuard(session, max_turns, events=events, iteration=iteration, label=label)
    try:
        agent = create_agent(
            model,
            build_designer_tools(session),
            system_prompt=system_prompt
            or designer_system_prompt(
                objective,
                hints,
                settings=judge_settings,
                direction=direction,
                baseline=session.rollout_stats,
                max_steps=max_steps,
            ),
            middleware=[guard],
            checkpointer=False,
            name="envrigger_writer",
        )
    except NotImplementedError as e:
        raise DesignerError(
            f"the designer model {label} cannot call tools ({e}); the designer agent needs a "
            "tool-calling chat model"
        ) from e
    settings = run_config(
        config,
        run_name=WRITER_RUN_NAME,
        tags=["envrigger", "writer"],
        metadata={"task_id": session.task_id, "designer_model": label, "max_turns": max_turns},
        recursion_limit=_STEPS_PER_TURN * (max_turns + 1) + 10,
    )
    task = designer_task_prompt(
        session,
        diagnosis,
        objective,
        feedback,
        max_turns,
        iteration=iteration,
        max_iterations=max(max_iterations, iteration),
    )

    def drive(_: Any, config: Any) -> list[BaseMessage]:
        return _drive(agent, guard, session, HumanMessage(content=task), config, label)

    session.transcript = RunnableLambda(drive, name=WRITER_RUN_NAME).invoke(None, config=settings)
    return session.submitted


def _drive(
    agent: Any,
    guard: _TurnGuard,
    session: DesignSession,
    task: HumanMessage,
    config: Any,
    label: str,
) -> list[BaseMessage]:
    """Runs the agent (and once more after a reminder); records how it ended; the messages."""
    messages: list[BaseMessage] = [task]
    nudged = False
    while True:
        result = _invoke(agent, messages, config, label)
        if result is not None:
            messages = list(result["messages"])
        if session.submitted is not None:
            session.end("submitted", "submit_candidate accepted a candidate for validation")
            return messages
        if guard.exhausted or result is None:
            session.end(
                "max_turns",
                f"{guard.calls} model turns were spent (max_turns={guard.max_turns}) without an "
                "accepted submission",
            )
            return messages
        if nudged:
            session.end(
                "no_submission",
                "the model stopped calling tools twice without an accepted submission",
            )
            return messages
        nudged = True
        messages.append(HumanMessage(content=load_prompt("designer_nudge").strip()))
