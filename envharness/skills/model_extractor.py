"""``ModelExtractor``: skills written by any LangChain chat model, one episode at a time.

The model gets the system prompt ``skill_extractor`` (the episode's outcome, from the bridge's
verifier, and the kind of skill to write: strategies from a success, pitfalls from a failure)
and the message ``skill_extractor_task`` (the bridge and task, the harness the episode ran
under with what its lineage says it was rigged to teach, the instruction, and the episode as
:func:`envharness.tools.digest.trajectory_lines`). It answers with a ``record_skills`` tool call,
or, for a model without tool calling, that call's arguments as JSON text.

A malformed reply is sent back once with the error (as the tool call's result, or as a user
message); a second malformed reply raises :class:`~envharness.skills.records.SkillError` naming
the episode and the problem. Needs ``langchain-core`` (the ``rigger`` extra), imported on use.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from envharness.rollout.trajectory import Trajectory
from envharness.skills.provenance import provenance_of
from envharness.skills.records import Skill, SkillError

__all__ = ["SKILL_TOOL", "SKILL_TOOL_NAME", "ModelExtractor"]

SKILL_TOOL_NAME = "record_skills"
"""The tool the model calls with its skills."""

SKILL_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": SKILL_TOOL_NAME,
        "description": "Record the skills distilled from the episode (an empty list if none).",
        "parameters": {
            "type": "object",
            "properties": {
                "skills": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "title": {"type": "string", "description": "A short name."},
                            "when": {"type": "string", "description": "When to use it."},
                            "principle": {"type": "string", "description": "The idea."},
                            "steps": {
                                "type": "array",
                                "items": {"type": "string"},
                                "description": "Executable steps, with placeholders.",
                            },
                        },
                        "required": ["title", "when", "principle", "steps"],
                    },
                }
            },
            "required": ["skills"],
        },
    },
}
"""The ``record_skills`` tool in OpenAI function form."""

_KIND_RULES = {
    "strategy": (
        "- The episode succeeded: write strategies, what the agent did that made it work, as "
        "steps another episode can follow."
    ),
    "pitfall": (
        "- The episode failed: write pitfalls, what went wrong (a loop, invalid or blocked "
        "actions, running out of steps, ending too early) and what to do instead."
    ),
}
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
_EPISODE_CHARS = 6000


def _model_name(model: Any) -> str:
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def _harness(trajectory: Trajectory, target: str) -> str:
    components = trajectory.spec.get("components") if isinstance(trajectory.spec, Mapping) else []
    if not components:
        return "none: the original environment."
    kinds = [str(c.get("type", "?")) if isinstance(c, Mapping) else "?" for c in components]
    text = f"harnessed with {', '.join(kinds)} (spec {trajectory.spec_id})"
    return f"{text}; it was rigged to: {target}" if target else f"{text}; no lineage recorded."


def _items(reply: Any) -> tuple[list[Any], str | None]:
    """The reply's list of skill dicts and the id of its tool call (``None`` for text)."""
    calls = [c for c in getattr(reply, "tool_calls", None) or [] if c.get("name")]
    if calls:
        wanted = [c for c in calls if c["name"] == SKILL_TOOL_NAME]
        if not wanted:
            names = ", ".join(repr(c["name"]) for c in calls)
            raise _Malformed(f"called {names}; call {SKILL_TOOL_NAME!r}", calls[0].get("id"))
        call = wanted[0]
        skills = (call.get("args") or {}).get("skills")
        if not isinstance(skills, list):
            raise _Malformed(
                f"{SKILL_TOOL_NAME}: expected 'skills' to be a list, got {skills!r}"[:300],
                call.get("id"),
            )
        return skills, call.get("id")
    content = getattr(reply, "content", reply)
    if isinstance(content, list):
        content = "".join(p.get("text", "") if isinstance(p, Mapping) else str(p) for p in content)
    text = _FENCE.sub("", str(content).strip())
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise _Malformed(
            f"no {SKILL_TOOL_NAME} call and the text is not JSON ({e}): {text[:200]!r}", None
        ) from e
    skills = data.get("skills") if isinstance(data, Mapping) else data
    if not isinstance(skills, list):
        raise _Malformed('expected {"skills": [...]} with a list of skills', None)
    return skills, None


class _Malformed(SkillError):
    def __init__(self, message: str, call_id: str | None) -> None:
        super().__init__(message)
        self.call_id = call_id


class ModelExtractor:
    """Skills from any LangChain chat model (tool call, or JSON text without tool calling).

    Args:
        model: A LangChain chat model (``BaseChatModel``).
        max_skills: The most skills kept per episode (the prompt asks for at most this many).
        retries: How often a malformed reply is sent back with its error before giving up.
        episode_chars: About the most characters of the episode listing shown.

    Attributes:
        name: The model's name (the provenance's extractor).
        calls: Model calls made so far.

    Raises:
        SkillError: If ``max_skills`` or ``retries`` is not a positive / non-negative int.
    """

    def __init__(
        self,
        model: Any,
        *,
        max_skills: int = 3,
        retries: int = 1,
        episode_chars: int = _EPISODE_CHARS,
    ) -> None:
        for label, value, low in (
            ("max_skills", max_skills, 1),
            ("retries", retries, 0),
            ("episode_chars", episode_chars, 200),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise SkillError(f"{label}: expected an int >= {low}, got {value!r}")
        if not callable(getattr(model, "invoke", None)):
            raise SkillError(f"expected a LangChain chat model, got {type(model).__name__}")
        self.model = model
        self.name = _model_name(model)
        self.max_skills = max_skills
        self.retries = retries
        self.episode_chars = episode_chars
        self.calls = 0
        self._bound: Any = None

    def messages(self, trajectory: Trajectory) -> list[Any]:
        """The system prompt and task message the model is sent for ``trajectory``."""
        from langchain_core.messages import HumanMessage, SystemMessage

        from envharness.prompts import load_prompt
        from envharness.tools.digest import clip, trajectory_lines

        kind = "strategy" if trajectory.success else "pitfall"
        target = provenance_of(trajectory, self.name).target
        system = load_prompt(
            "skill_extractor",
            outcome="success" if trajectory.success else "failure",
            kind_rule=_KIND_RULES[kind],
            max_skills=self.max_skills,
        )
        episode = clip("\n".join(trajectory_lines(0, trajectory)), self.episode_chars)
        task = load_prompt(
            "skill_extractor_task",
            bridge=trajectory.bridge,
            task_id=trajectory.task_id,
            harness=_harness(trajectory, target),
            instruction=trajectory.instruction.strip() or "(none recorded)",
            episode=episode,
        )
        return [SystemMessage(system), HumanMessage(task)]

    def _runnable(self) -> Any:
        if self._bound is None:
            try:
                self._bound = self.model.bind_tools([SKILL_TOOL], tool_choice=SKILL_TOOL_NAME)
            except NotImplementedError:
                self._bound = self.model  # no tool calling: the prompt asks for JSON text
            except TypeError:
                self._bound = self.model.bind_tools([SKILL_TOOL])
        return self._bound

    def extract(self, trajectory: Trajectory) -> list[Skill]:
        """The skills the model distils from one episode (strategies or pitfalls by outcome).

        Raises:
            SkillError: The model failed, or replied malformed skills ``retries + 1`` times.
        """
        from langchain_core.messages import HumanMessage, ToolMessage

        messages = self.messages(trajectory)
        runnable = self._runnable()
        where = (
            f"episode {trajectory.task_id!r} (seed {trajectory.seed}, spec {trajectory.spec_id})"
        )
        problem = ""
        for _attempt in range(self.retries + 1):
            self.calls += 1
            try:
                reply = runnable.invoke(messages)
            except Exception as e:
                raise SkillError(
                    f"the skill extractor model {self.name} failed on {where}: "
                    f"{type(e).__name__}: {e}"
                ) from e
            try:
                return self._skills(reply, trajectory)
            except _Malformed as e:
                problem = str(e)
                feedback = (
                    f"ERROR: {problem}. Call {SKILL_TOOL_NAME} again with a list of skills, each "
                    "with a non-empty title, when, principle and a list of step strings."
                )
                messages.append(reply)
                calls = getattr(reply, "tool_calls", None) or []
                if calls:
                    messages.extend(
                        ToolMessage(feedback, tool_call_id=str(c.get("id") or "")) for c in calls
                    )
                else:
                    messages.append(HumanMessage(feedback))
        raise SkillError(
            f"the skill extractor model {self.name} replied malformed skills for {where} "
            f"{self.retries + 1} time(s); last problem: {problem}"
        )

    def _skills(self, reply: Any, trajectory: Trajectory) -> list[Skill]:
        items, call_id = _items(reply)
        kind = "strategy" if trajectory.success else "pitfall"
        provenance = provenance_of(trajectory, self.name)
        tags = ("model", "harnessed" if provenance.harnessed else "original")
        skills = []
        for number, item in enumerate(items[: self.max_skills], 1):
            if not isinstance(item, Mapping):
                raise _Malformed(f"skill {number}: expected an object, got {item!r}"[:300], call_id)
            steps = item.get("steps")
            if isinstance(steps, str) or not isinstance(steps, list):
                raise _Malformed(f"skill {number}: expected 'steps' to be a list of str", call_id)
            try:
                skills.append(
                    Skill(
                        title=str(item.get("title") or "").strip(),
                        when=str(item.get("when") or "").strip(),
                        principle=str(item.get("principle") or "").strip(),
                        steps=tuple(s.strip() if isinstance(s, str) else s for s in steps),
                        kind=kind,
                        provenance=provenance,
                        tags=tags,
                    )
                )
            except SkillError as e:
                raise _Malformed(f"skill {number}: {e}", call_id) from e
        return skills
