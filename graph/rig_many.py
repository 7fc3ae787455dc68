"""``rig_many``: EnvRigger over many tasks as one LangGraph graph (a whole rig in Studio).

    plan ──Send, one per task──▶ rig_task (the rigger, as a subgraph) ──▶ summary → END

``plan`` checks the input and the context, lists the tasks and sends each to ``rig_task``, which
runs the rigger (:func:`~envharness.graph.rigger.build_rigger`) on it and returns one
:class:`TaskOutcome`; the outcomes are gathered by the :func:`merge_outcomes` reducer, so tasks
rigging at once never write the same key (the rigger's own ``status`` stays in its subgraph).
``summary`` counts the outcomes.

Every task's rig is one invocation of the subgraph inside the parent's thread: LangGraph gives
each ``Send`` its own checkpoint namespace (``rig_task:<its LangGraph task id>``), so the
tasks' checkpoints never mix and an interrupt (``require_approval``) pauses only its task;
resume the parent thread with ``Command(resume=...)`` (several tasks waiting at once:
``Command(resume={interrupt id: answer, ...})``). The rigger is compiled without a
checkpointer, so it uses the parent's (the platform's under ``langgraph dev``). A task whose
rig raises an :class:`~envharness.errors.EnvHarnessError` (an unknown task, a broken spec) is
reported ``failed`` with the error as its reason, and the others go on. A new input on the same
thread starts a new rig: its results replace the earlier ones. ``config={"max_concurrency":
N}`` bounds the tasks rigged at once.

Settings come through the context, as for the rigger (a
:class:`~envharness.graph.settings.RiggerSettings` dict or a
:class:`~envharness.graph.context.RiggerContext`); ``plan`` records them, a resume is checked
against them, and a resume without any takes them. Each task's accepted spec is written to
``RUN/accepted/<task>.json`` by its rig. The module-level ``rig_many`` is what ``langgraph.json``
exposes (import it from this module: ``envharness.graph.rig_many`` names the module).

Example:
    >>> from envharness.graph.rig_many import build_rig_many
    >>> sorted(build_rig_many().get_graph().nodes)
    ['__end__', '__start__', 'plan', 'rig_task', 'summary']
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import merge_configs
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite, Send
from pydantic import Field
from typing_extensions import TypedDict

from envharness.bridges.registry import list_tasks
from envharness.errors import EnvHarnessError, RiggerError, SpecError
from envharness.graph.context import RiggerContext, resolve_context
from envharness.graph.outputs import accepted_path
from envharness.graph.rigger import build_rigger
from envharness.graph.settings import RiggerResources, RiggerSettings
from envharness.graph.state import replace_or_append
from envharness.harness.spec import BridgeSpec, HarnessSpec

__all__ = [
    "RigManyInput",
    "RigManyOutput",
    "RigManyState",
    "RigTask",
    "TaskOutcome",
    "build_rig_many",
    "merge_outcomes",
    "rig_many",
]

OutcomeStatus = Literal["accepted", "rejected", "undecided", "failed"]


class RigManyInput(TypedDict, total=False):
    """What a multi-task rig starts from.

    Keys:
        bridge: The bridge's registered name (optional with ``base_spec``: its bridge).
        task_ids: The tasks to rig, in order.
        tasks: Instead of ``task_ids``: rig the first N tasks of ``split``.
        split: The split ``tasks`` counts from (default ``train``).
        bridge_options: ``load_bridge`` options for every task.
        base_spec: A ``HarnessSpec`` dict to rig instead of the bare bridge; it rigs its own
            task (``task_ids`` may be left out, or name that task alone).
    """

    bridge: Annotated[str, Field(description="The bridge's registered name, e.g. 'toy24'.")]
    task_ids: Annotated[list[str], Field(description="The tasks to rig, in order.")]
    tasks: Annotated[
        int, Field(ge=1, description="Instead of task_ids: rig the first N tasks of split.")
    ]
    split: Annotated[str, Field(description="The split 'tasks' counts from (default train).")]
    bridge_options: Annotated[
        dict[str, Any], Field(description="load_bridge options for every task.")
    ]
    base_spec: Annotated[
        dict[str, Any] | None,
        Field(description="A HarnessSpec dict to rig instead of the bare bridge (its own task)."),
    ]


class TaskOutcome(TypedDict):
    """How one task's rig ended (one entry of ``results``).

    Keys:
        task_id: The task.
        status: ``accepted``, ``rejected``, ``undecided`` or ``failed`` (the rig raised).
        reason: The last verdict's reason, or the error of a failed rig.
        accepted_path: Where the accepted spec was written (``None`` unless accepted).
        accepted_spec: The accepted harness spec with lineage (``None`` unless accepted).
        iterations: Write→validate iterations run.
        rollouts: Policy rollouts spent.
        model_calls: Model calls spent.
        baseline_success: The baseline success rate (``None`` before any rollout).
        final_success: The last candidate's success rate (``None`` without one).
    """

    task_id: Annotated[str, Field(description="The task.")]
    status: Annotated[
        OutcomeStatus, Field(description="accepted, rejected, undecided or failed (it raised).")
    ]
    reason: Annotated[str, Field(description="The last verdict's reason, or the error.")]
    accepted_path: Annotated[
        str | None, Field(description="Where the accepted spec was written (null unless so).")
    ]
    accepted_spec: Annotated[
        dict[str, Any] | None,
        Field(description="The accepted harness spec with lineage (null unless accepted)."),
    ]
    iterations: Annotated[int, Field(description="Write/validate iterations run.")]
    rollouts: Annotated[int, Field(description="Policy rollouts spent.")]
    model_calls: Annotated[int, Field(description="Model calls spent.")]
    baseline_success: Annotated[float | None, Field(description="The baseline success rate.")]
    final_success: Annotated[
        float | None, Field(description="The last candidate's success rate (null without one).")
    ]


def merge_outcomes(left: list[TaskOutcome], right: list[TaskOutcome]) -> list[TaskOutcome]:
    """The results reducer: a new task's outcome is appended, a known task's is replaced."""
    return replace_or_append(left, right, "task_id")


class RigManyOutput(TypedDict, total=False):
    """What a finished multi-task rig returns.

    Keys:
        results: One :class:`TaskOutcome` per task, in the order planned.
        counts: How many tasks ended in each status.
    """

    results: Annotated[
        list[TaskOutcome], Field(description="One outcome per task, in the order planned.")
    ]
    counts: Annotated[dict[str, int], Field(description="Tasks per status, e.g. accepted: 3.")]


class Plan(TypedDict):
    """The tasks ``plan`` sends out.

    Keys:
        bridge: The bridge.
        task_ids: The tasks, in order.
        base_spec: The input's base spec (``None``: each task's bare bridge).
        bridge_options: ``load_bridge`` options for every task.
    """

    bridge: str
    task_ids: list[str]
    base_spec: dict[str, Any] | None
    bridge_options: dict[str, Any]


class RigManyState(RigManyInput, total=False):
    """The state of a multi-task rig: its input, the plan, the gathered outcomes.

    ``plan`` consumes the input (sets its keys back to ``None``), so the next input on the same
    thread starts a new rig from its own keys alone.

    Keys (beyond :class:`RigManyInput`'s):
        plan: The planned tasks (:class:`Plan`).
        results: The outcomes gathered so far (:func:`merge_outcomes`).
        counts: Tasks per status (set by ``summary``).
        settings: The run's settings, recorded by ``plan`` (a resume is checked against them).
    """

    plan: Plan
    results: Annotated[list[TaskOutcome], merge_outcomes]
    counts: dict[str, int]
    settings: dict[str, Any]


class RigTask(TypedDict):
    """What ``plan`` sends to ``rig_task`` for one task.

    Keys:
        bridge: The bridge.
        task_id: The task.
        base_spec: The spec to rig, as a dict (pinned to its task data by ``rig_task``).
        settings: The rig's recorded settings (used when a resume gives none).
    """

    bridge: str
    task_id: str
    base_spec: dict[str, Any]
    settings: dict[str, Any]


def _checked_base(state: RigManyState) -> HarnessSpec | None:
    raw = state.get("base_spec")
    if raw is None:
        return None
    try:
        return HarnessSpec.from_dict(raw)
    except SpecError as e:
        raise RiggerError(f"rig_many's base_spec is not a harness spec: {e}") from None


def _task_ids(state: RigManyState, bridge: str, options: dict[str, Any]) -> list[str]:
    """The planned tasks: ``task_ids``, or the first ``tasks`` of ``split``."""
    given, count = state.get("task_ids"), state.get("tasks")
    if given is not None and count is not None:
        raise RiggerError("give rig_many either task_ids or tasks (a count), not both")
    if given is not None:
        if isinstance(given, str) or not isinstance(given, list):
            raise RiggerError(f"expected task_ids to be a list of task ids, got {given!r}")
        if not all(isinstance(t, str) and t for t in given):
            raise RiggerError(f"expected task_ids to be non-empty strings, got {given!r}")
        twice = sorted(t for t, n in Counter(given).items() if n > 1)
        if twice:
            raise RiggerError(f"task_ids names {', '.join(twice)} more than once; list each once")
        ids = list(given)
    elif count is not None:
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise RiggerError(f"expected tasks to be a positive int (a count), got {count!r}")
        ids = list_tasks(bridge, split=state.get("split") or "train", **options)[:count]
    else:
        raise RiggerError(
            "rig_many's input needs the tasks: task_ids (a list of ids) or tasks (a count of "
            "the split's first tasks), e.g. {'bridge': 'toy24', 'task_ids': ['4-4-10-10']}"
        )
    if not ids:
        raise RiggerError(f"no tasks to rig: the split of {bridge!r} is empty")
    return ids


def _planned(state: RigManyState) -> Plan:
    """The plan of the input, checked.

    Raises:
        RiggerError: If the bridge or tasks are missing or malformed, or a ``base_spec``
            disagrees with them.
    """
    base = _checked_base(state)
    options = state.get("bridge_options") or {}
    if not isinstance(options, Mapping):
        raise RiggerError(f"expected bridge_options to be a dict, got {options!r}")
    bridge = state.get("bridge") or (base.bridge.name if base is not None else None)
    if not bridge or not isinstance(bridge, str):
        raise RiggerError(
            "rig_many's input needs bridge (the bridge's name, e.g. 'toy24') or a base_spec"
        )
    if base is None:
        ids = _task_ids(state, bridge, dict(options))
        return Plan(bridge=bridge, task_ids=ids, base_spec=None, bridge_options=dict(options))
    own = base.bridge.task_id
    if base.bridge.name != bridge:
        raise RiggerError(
            f"bridge {bridge!r} is not the bridge of base_spec ({base.bridge.name!r}); leave "
            "bridge out with a base_spec"
        )
    if options and dict(options) != base.bridge.options:
        raise RiggerError(
            "bridge_options differ from base_spec's bridge options; leave bridge_options out "
            "with a base_spec (its own options are used)"
        )
    if state.get("tasks") is not None or state.get("task_ids") not in (None, [own]):
        raise RiggerError(
            f"a base_spec rigs its own task ({own!r}); leave task_ids and tasks out, or rig "
            "the other tasks in another run without base_spec"
        )
    return Plan(
        bridge=bridge, task_ids=[own], base_spec=base.to_dict(), bridge_options=base.bridge.options
    )


def _task_spec(plan: Plan, task_id: str) -> dict[str, Any]:
    """The spec ``task_id`` is rigged from: the plan's base, or the bare bridge."""
    if plan["base_spec"] is not None:
        return plan["base_spec"]
    return HarnessSpec(BridgeSpec(plan["bridge"], task_id, plan["bridge_options"])).to_dict()


def _outcome(task_id: str, run_dir: str, out: Mapping[str, Any]) -> TaskOutcome:
    attempts = out.get("attempts") or []
    last = attempts[-1]["verdict"] if attempts else {}
    status = out.get("status")
    if status not in ("accepted", "rejected", "undecided"):
        raise RiggerError(f"the rig of {task_id!r} ended with status {status!r} (not finished)")
    return TaskOutcome(
        task_id=task_id,
        status=status,
        reason=out.get("reason") or last.get("reason", ""),
        accepted_path=str(accepted_path(run_dir, task_id)) if status == "accepted" else None,
        accepted_spec=out.get("accepted_spec") if status == "accepted" else None,
        iterations=out.get("iteration", 0),
        rollouts=out.get("rollouts", 0),
        model_calls=out.get("model_calls", 0),
        baseline_success=(out.get("baseline_stats") or {}).get("success_rate"),
        final_success=(last.get("stats") or {}).get("success_rate"),
    )


def _failed(task_id: str, error: EnvHarnessError) -> TaskOutcome:
    return TaskOutcome(
        task_id=task_id,
        status="failed",
        reason=f"{type(error).__name__}: {error}",
        accepted_path=None,
        accepted_spec=None,
        iterations=0,
        rollouts=0,
        model_calls=0,
        baseline_success=None,
        final_success=None,
    )


def summary(state: RigManyState) -> dict[str, Any]:
    """Puts the outcomes in the planned order and counts them per status."""
    order = {t: i for i, t in enumerate(state["plan"]["task_ids"])}
    results = sorted(state.get("results") or [], key=lambda o: order.get(o["task_id"], len(order)))
    return {"results": Overwrite(results), "counts": dict(Counter(o["status"] for o in results))}


def build_rig_many(
    *,
    checkpointer: Any = None,
    name: str = "envrigger-many",
    resources: RiggerResources | None = None,
) -> Any:
    """Assembles and compiles the multi-task rig graph.

    Args:
        checkpointer: A LangGraph checkpointer so a rig can pause (approval) and resume;
            ``None`` for none (or to let a parent graph or the platform supply it).
        name: The compiled graph's name (shown in traces).
        resources: Live objects (executor, policy factory, designer objects) every task's rig
            uses with a settings-dict context (see :class:`RiggerResources`).

    Returns:
        The compiled graph: invoke it with ``{"bridge", "task_ids"}`` (or ``"tasks": N``), a
        ``configurable.thread_id`` and ``context=`` a settings dict or ``RiggerContext``; it
        returns :class:`RigManyOutput`.
    """
    rigger = build_rigger(name="envrigger", resources=resources)

    def plan(state: RigManyState, runtime: Runtime[Any]) -> dict[str, Any]:
        """Checks the input and the context, records the settings, and plans the tasks."""
        settings = resolve_context(runtime.context, None, resources).settings()
        consumed = dict.fromkeys(RigManyInput.__annotations__)
        return {
            **consumed,
            "plan": _planned(state),
            "settings": settings,
            "results": Overwrite([]),
            "counts": {},
        }

    def send_tasks(state: RigManyState) -> list[Send]:
        """One ``Send`` to ``rig_task`` per planned task."""
        plan = state["plan"]
        return [
            Send(
                "rig_task",
                RigTask(
                    bridge=plan["bridge"],
                    task_id=t,
                    base_spec=_task_spec(plan, t),
                    settings=state["settings"],
                ),
            )
            for t in plan["task_ids"]
        ]

    def rig_task(task: RigTask, config: RunnableConfig, runtime: Runtime[Any]) -> dict[str, Any]:
        """Rigs one task (the rigger subgraph, in this task's checkpoint namespace)."""
        given = runtime.context if runtime.context else task["settings"]
        context: RiggerContext = resolve_context(given, task["settings"], resources)
        bridge, task_id = task["bridge"], task["task_id"]
        traced = merge_configs(
            config,
            {
                "run_name": f"envrigger:{bridge}:{task_id}",
                "tags": ["envrigger", f"bridge:{bridge}"],
                "metadata": {"bridge": bridge, "task_id": task_id},
            },
        )
        try:
            # The base pins its task data, so every candidate and accepted spec does.
            base = HarnessSpec.from_dict(task["base_spec"]).pinned().to_dict()
            out = rigger.invoke({"task_id": task_id, "base_spec": base}, traced, context=context)
        except EnvHarnessError as e:
            outcome = _failed(task_id, e)
        else:
            outcome = _outcome(task_id, context.run_dir, out)
        return {"results": [outcome]}

    builder = StateGraph(
        RigManyState,
        context_schema=RiggerSettings,
        input_schema=RigManyInput,
        output_schema=RigManyOutput,
    )
    builder.add_node("plan", plan)
    builder.add_node("rig_task", rig_task, input_schema=RigTask)
    builder.add_node("summary", summary)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", send_tasks, ["rig_task"])
    builder.add_edge("rig_task", "summary")
    builder.add_edge("summary", END)
    return builder.compile(checkpointer=checkpointer, name=name)


rig_many = build_rig_many()
