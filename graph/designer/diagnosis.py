"""``model_diagnosis``: a chat model reads the baseline and reports a structured diagnosis.

The model is given a ``report_diagnosis`` tool (its schema in the Gemini-safe subset) and asked to
call it; a model without tool calling replies with the same object as JSON text. The report is
checked (a known direction, weaknesses with evidence and plausible episode counts); a malformed
reply is answered with what is wrong and retried once, then
:class:`~envharness.errors.DesignerError` names the problems.

``with_structured_output`` is not used on purpose: on most providers it is this same tool call
underneath, and reading the call ourselves keeps the retry conversation and the validation
messages the same on every provider (and on models that only answer in text).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from envharness.core import ToolSpec
from envharness.errors import DesignerError
from envharness.graph.designer.models import model_label, resolve_model, run_config
from envharness.graph.designer.prompting import diagnoser_system_prompt, diagnoser_task_prompt
from envharness.graph.objective import Objective
from envharness.graph.records import DIRECTIONS, Diagnosis, Weakness
from envharness.parsing import find_json_object
from envharness.rollout.stats import RolloutStats
from envharness.rollout.trajectory import Trajectory
from envharness.schema import check_arguments
from envharness.tools import ModelUsage

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage

__all__ = ["DIAGNOSIS_TOOL", "model_diagnosis", "read_report"]

_WEAKNESS_KEYS = ("kind", "description", "evidence", "episodes")
_REPORT_KEYS = ("direction", "summary", "weaknesses")

DIAGNOSIS_TOOL = ToolSpec(
    "report_diagnosis",
    "Report the diagnosis of the policy on this task: the direction a harness should take and "
    "the weaknesses found, each with concrete evidence from the baseline episodes.",
    {
        "type": "object",
        "properties": {
            "direction": {
                "type": "string",
                "enum": list(DIRECTIONS),
                "description": (
                    "scaffold (make it easier), harden (make it harder), fix-behaviour (target "
                    "a bad habit) or none (nothing should change)."
                ),
            },
            "summary": {
                "type": "string",
                "description": "A short paragraph for the designer: what goes wrong and where.",
            },
            "weaknesses": {
                "type": "array",
                "description": "The weaknesses found; empty only with direction none.",
                "items": {
                    "type": "object",
                    "properties": {
                        "kind": {
                            "type": "string",
                            "description": "A short category, e.g. loop or invalid_actions.",
                        },
                        "description": {
                            "type": "string",
                            "description": "The weakness in one sentence.",
                        },
                        "evidence": {
                            "type": "array",
                            "items": {"type": "string"},
                            "description": (
                                "Concrete pointers: episode and step numbers, the repeated "
                                "action, quoted error or invalid-action messages."
                            ),
                        },
                        "episodes": {
                            "type": "integer",
                            "description": "In how many of the K baseline episodes it shows.",
                        },
                    },
                    "required": list(_WEAKNESS_KEYS),
                },
            },
        },
        "required": list(_REPORT_KEYS),
    },
)
"""The tool the diagnoser model reports through."""

_TOOL_FORMAT = "Report your diagnosis by calling report_diagnosis exactly once."
_JSON_FORMAT = (
    "Reply with one JSON object and nothing else, of the form "
    '{"direction": "scaffold" | "harden" | "fix-behaviour" | "none", "summary": "...", '
    '"weaknesses": [{"kind": "...", "description": "...", "evidence": ["..."], '
    '"episodes": 0}]}'
)
_ATTEMPTS = 2


def _normalize_direction(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    text = value.strip().lower().replace("_", "-").replace(" ", "-")
    return text.replace("behavior", "behaviour")


def _known(data: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    return {key: data[key] for key in keys if key in data}


def read_report(data: Any, episodes: int) -> tuple[dict[str, Any] | None, list[str]]:
    """Checks a reported diagnosis; returns its cleaned fields, or the problems found.

    Unknown keys are ignored, the direction is read leniently (``Fix_Behavior`` counts as
    ``fix-behaviour``) and a single evidence string counts as a list of one.

    Args:
        data: The ``report_diagnosis`` arguments (or the JSON object of a text reply).
        episodes: K, the number of baseline episodes (bounds ``episodes`` counts).

    Example:
        >>> fields, problems = read_report({"direction": "Harden", "summary": "s",
        ...                                 "weaknesses": []}, 5)
        >>> problems
        ['direction harden needs at least one weakness with evidence']
    """
    if not isinstance(data, Mapping):
        return None, [f"expected a JSON object, got {type(data).__name__}"]
    report = _known(data, _REPORT_KEYS)
    report["direction"] = _normalize_direction(report.get("direction"))
    weaknesses = report.get("weaknesses")
    if isinstance(weaknesses, list):
        cleaned = []
        for item in weaknesses:
            if isinstance(item, Mapping):
                item = _known(item, _WEAKNESS_KEYS)
                if isinstance(item.get("evidence"), str):
                    item["evidence"] = [item["evidence"]]
            cleaned.append(item)
        report["weaknesses"] = cleaned
    problems = check_arguments(report, DIAGNOSIS_TOOL.parameters, "report")
    if problems:
        return None, problems
    if report["direction"] != "none" and not report["weaknesses"]:
        problems.append(
            f"direction {report['direction']} needs at least one weakness with evidence"
        )
    for i, weakness in enumerate(report["weaknesses"]):
        count = int(weakness["episodes"])
        weakness["episodes"] = count
        if not 0 <= count <= episodes:
            problems.append(
                f"report.weaknesses[{i}].episodes: expected 0-{episodes} (K={episodes}), got "
                f"{count}"
            )
        if not weakness["evidence"] or not all(e.strip() for e in weakness["evidence"]):
            problems.append(f"report.weaknesses[{i}].evidence: give at least one concrete item")
        if not weakness["kind"].strip():
            problems.append(f"report.weaknesses[{i}].kind: expected a short category")
    return (None, problems) if problems else (report, [])


def _extract(reply: AIMessage) -> tuple[Any, str | None]:
    """The reported object from a reply, or why there is none."""
    name = DIAGNOSIS_TOOL.name
    for call in reply.tool_calls:
        if call.get("name") == name:
            return call.get("args"), None
    for call in reply.invalid_tool_calls:
        if call.get("name") in (name, None):
            return None, f"the arguments of your {name} call are not valid JSON: {call.get('args')}"
    data = find_json_object(reply.text, prefer=("direction",))
    if data is not None:
        return data, None
    others = [str(call.get("name")) for call in reply.tool_calls]
    if others:
        return None, f"you called {', '.join(others)}; the only tool here is {name}"
    return None, f"your reply contained no {name} call and no JSON object"


def _answer(reply: AIMessage, problems: list[str], tool_mode: bool) -> list[BaseMessage]:
    """The messages that tell the model what to fix (every tool call answered)."""
    from langchain_core.messages import HumanMessage, ToolMessage

    how = f"call {DIAGNOSIS_TOOL.name} again" if tool_mode else "reply again with one JSON object"
    text = (
        "ERROR: the diagnosis is malformed:\n"
        + "\n".join(f"- {problem}" for problem in problems)
        + f"\nFix these and {how}."
    )
    calls = list(reply.tool_calls) + list(reply.invalid_tool_calls)
    if not calls:
        return [HumanMessage(content=text)]
    answers = [ToolMessage(content=text, tool_call_id=str(calls[0].get("id") or ""))]
    answers += [
        ToolMessage(content="Ignored.", tool_call_id=str(call.get("id") or ""))
        for call in calls[1:]
    ]
    return answers


def _bind(model: BaseChatModel, label: str) -> tuple[Any, bool]:
    """The model with ``report_diagnosis`` bound (forced where the provider allows), and whether.

    ``bind_tools`` raising ``NotImplementedError`` means no tool calling: the JSON-text protocol
    is used instead. A provider that refuses the forced ``tool_choice`` gets the tool unforced.
    """
    tool = DIAGNOSIS_TOOL.to_langchain()
    try:
        return model.bind_tools([tool], tool_choice=DIAGNOSIS_TOOL.name), True
    except NotImplementedError:
        return model, False
    except Exception:
        pass
    try:
        return model.bind_tools([tool]), True
    except NotImplementedError:
        return model, False
    except Exception as e:
        raise DesignerError(
            f"cannot give the diagnoser model {label} the {DIAGNOSIS_TOOL.name} tool: "
            f"{type(e).__name__}: {e}"
        ) from e


def model_diagnosis(
    model: BaseChatModel | str,
    trajectories: Sequence[Trajectory],
    stats: RolloutStats | Mapping[str, Any] | None = None,
    objective: Objective | str = "auto",
    *,
    bridge_hints: str = "",
    config: Mapping[str, Any] | None = None,
    usage: ModelUsage | None = None,
    max_chars: int = 8000,
) -> Diagnosis:
    """Asks ``model`` for a structured diagnosis of the baseline rollouts.

    Args:
        model: A LangChain chat model, or a model string for :func:`resolve_model`.
        trajectories: The K baseline rollouts of one task.
        stats: Their statistics (computed when ``None``).
        objective: The rig's objective.
        bridge_hints: Notes on the bridge for the system prompt (see
            :func:`envharness.prompts.load_hints`).
        config: A runnable config for tracing; ``run_name`` defaults to
            ``envrigger.diagnoser`` and the tags ``envrigger``, ``diagnoser`` are added.
        usage: Where to count the model calls and tokens spent.
        max_chars: About the most characters of baseline listing the model is sent.

    Returns:
        The diagnosis, with ``stats`` set and ``source`` naming the model.

    Raises:
        DesignerError: No trajectories; the model cannot be resolved; a model call failed; or
            the reply was malformed twice (the message lists what was wrong).

    Example:
        >>> from envharness import load_bridge
        >>> from envharness.rollout import OraclePolicy, rollout
        >>> from envharness.testing import FakeToolCallingModel
        >>> baseline = [rollout(load_bridge("toy24", task_id="4-4-10-10"), OraclePolicy(1.0))]
        >>> model = FakeToolCallingModel(responses=[{"tool": "report_diagnosis", "args": {
        ...     "direction": "harden", "summary": "It always solves the task.",
        ...     "weaknesses": [{"kind": "always_solves", "description": "1/1 solved",
        ...                     "evidence": ["episode 0 solved in 3 steps"], "episodes": 1}]}}])
        >>> model_diagnosis(model, baseline).direction
        'harden'
    """
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.runnables import RunnableLambda

    batch = list(trajectories)
    if not batch:
        raise DesignerError("model_diagnosis needs at least one baseline trajectory")
    if stats is None:
        stats = RolloutStats.from_trajectories(batch)
    elif not isinstance(stats, RolloutStats):
        stats = RolloutStats.from_dict(stats)
    objective = Objective.parse(objective)
    if isinstance(model, str):
        model = resolve_model(model)
    label = model_label(model)
    bound, tool_mode = _bind(model, label)
    messages: list[BaseMessage] = [
        SystemMessage(content=diagnoser_system_prompt(objective, bridge_hints)),
        HumanMessage(
            content=diagnoser_task_prompt(
                batch, stats, _TOOL_FORMAT if tool_mode else _JSON_FORMAT, limit=max_chars
            )
        ),
    ]
    settings = run_config(
        config,
        run_name="envrigger.diagnoser",
        tags=["envrigger", "diagnoser"],
        metadata={"task_id": batch[0].task_id, "diagnoser_model": label},
    )

    def converse(_: Any, config: Any) -> dict[str, Any]:
        return _converse(bound, messages, config, label, tool_mode, stats.n, usage)

    report = RunnableLambda(converse, name="envrigger.diagnoser").invoke(None, config=settings)
    return Diagnosis(
        direction=report["direction"],
        weaknesses=[Weakness(**w) for w in report["weaknesses"]],
        stats=stats.to_dict(),
        summary=report["summary"].strip(),
        source=label,
    )


def _converse(
    bound: Any,
    messages: list[BaseMessage],
    config: Any,
    label: str,
    tool_mode: bool,
    episodes: int,
    usage: ModelUsage | None,
) -> dict[str, Any]:
    """Asks, checks, and asks once more with the problems; the checked report or DesignerError."""
    attempts: list[str] = []
    for _ in range(_ATTEMPTS):
        reply = _invoke(bound, messages, config, label)
        if usage is not None:
            usage.add(reply.usage_metadata)
        data, problem = _extract(reply)
        problems = [problem] if problem is not None else []
        if problem is None:
            report, problems = read_report(data, episodes)
            if report is not None:
                return report
        attempts.append("; ".join(problems))
        messages = [*messages, reply, *_answer(reply, problems, tool_mode)]
    listing = " | ".join(f"reply {i}: {text}" for i, text in enumerate(attempts, 1))
    raise DesignerError(
        f"the diagnoser model {label} returned a malformed diagnosis {_ATTEMPTS} times ({listing})"
    )


def _invoke(bound: Any, messages: list[BaseMessage], config: Any, label: str) -> Any:
    from langchain_core.messages import AIMessage

    try:
        reply = bound.invoke(messages, config=config)
    except Exception as e:
        raise DesignerError(f"the diagnoser model {label} failed: {type(e).__name__}: {e}") from e
    if isinstance(reply, str):
        reply = AIMessage(content=reply)
    if not isinstance(reply, AIMessage):
        raise DesignerError(
            f"the diagnoser model {label} returned {type(reply).__name__}, expected an AIMessage"
        )
    return reply
