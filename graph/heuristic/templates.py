"""The heuristic designer's templates: each builds one :class:`Candidate` for a task.

Every template works on any bridge through the interface (tools, state schema, the oracle's plan
when the bridge has one, ``stage_candidates()``, the baseline trajectories, sibling tasks); none
knows a bridge's rules. Rules code comes from :mod:`~envharness.graph.heuristic.rules_code`.

- fix-behaviour: :func:`block_repeated_action`, :func:`answer_invalid_with_options`.
- scaffold: :func:`setups_oracle_prefix`, :func:`setups_success_prefix`, :func:`hint_rule`.
- harden: :func:`setups_stage_candidate`, :func:`forbid_tool`, :func:`truncate_observation`,
  :func:`link_siblings`, :func:`drop_actions`; :func:`combine` stacks candidates.

Rationales say ``heuristic template <name>: ...``: the designer is rule-based and says so.

Example:
    >>> from envharness.harness.spec import BridgeSpec, HarnessSpec
    >>> from envharness.graph.heuristic.design_context import DesignContext
    >>> context = DesignContext.from_spec(HarnessSpec(BridgeSpec("toy24", "4-4-10-10")), [])
    >>> candidate = setups_oracle_prefix(context, 1)
    >>> candidate.template, len(candidate.in_env_actions)
    ('setups_oracle_prefix(1)', 1)
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from envharness.core import Action
from envharness.errors import RiggerError
from envharness.graph.heuristic.design_context import DesignContext
from envharness.graph.heuristic.rules_code import DROP_KNOB, RulePart, parts_of, render_rules
from envharness.graph.judge.calibration import Knob
from envharness.graph.records import Candidate
from envharness.parsing import tool_lines

DROP_MAX = 0.9
"""The largest drop probability the calibrated ``DROP_P`` knob may reach."""

__all__ = [
    "INVALID_MARKERS",
    "answer_invalid_with_options",
    "block_repeated_action",
    "combine",
    "drop_actions",
    "forbid_tool",
    "forbiddable_tools",
    "hint_rule",
    "link_siblings",
    "observation_lengths",
    "setups_oracle_prefix",
    "setups_stage_candidate",
    "setups_success_prefix",
    "stage_is_scaffold",
    "success_actions",
    "truncate_observation",
    "volatile_keys",
]

INVALID_MARKERS = (
    r"\b(?:invalid|nothing happens|can't|cannot|can not|unable to|no effect|not carried out"
    r"|(?:don't|do not) understand|unknown (?:command|action|tool)"
    r"|not (?:a |an )?(?:valid|possible|allowed|recognized|understood|available))\b"
)
"""What an observation after an invalid step typically says (a case-insensitive regex)."""

_VOLATILE_NAMES = frozenset(
    {"step", "steps", "turn", "turns", "moves", "tick", "ticks", "time", "clock", "elapsed"}
)
_VOLATILE_PATTERN = re.compile(r"(?:^|_)(?:steps?|turns?|ticks?|elapsed)(?:$|_)")


def _rationale(name: str, text: str) -> str:
    return f"heuristic template {name}: {text}"


def _rules_candidate(name: str, parts: Sequence[RulePart], why: str) -> Candidate:
    return Candidate(rules_code=render_rules(parts), rationale=_rationale(name, why), template=name)


def _action_text(action: Mapping[str, Any]) -> str:
    return str(Action.from_dict(action))


# -- what templates read from the context ---------------------------------------------------------


def volatile_keys(schema: Mapping[str, Any]) -> list[str]:
    """Names of state keys that count steps or time, so "the same state" can ignore them.

    Integer or number properties (at any depth of the schema) named like a step counter
    (``steps``, ``turn``, ``n_steps``, ``elapsed`` ...), plus those names themselves, which covers
    states without a schema.

    Example:
        >>> schema = {"properties": {"n_turns": {"type": "integer"}, "score": {"type": "integer"}}}
        >>> "n_turns" in volatile_keys(schema), "score" in volatile_keys(schema)
        (True, False)
    """
    found = set(_VOLATILE_NAMES)

    def walk(node: Any) -> None:
        if not isinstance(node, Mapping):
            return
        for name, sub in (node.get("properties") or {}).items():
            if not isinstance(sub, Mapping):
                continue
            if sub.get("type") in ("integer", "number") and _VOLATILE_PATTERN.search(name):
                found.add(name)
            walk(sub)
        walk(node.get("items"))

    walk(schema)
    return sorted(found)


def success_actions(context: DesignContext) -> list[dict[str, Any]]:
    """The carried-out actions of the shortest successful baseline episode (``[]`` if none).

    Invalid, blocked and action-less steps are left out: replayed as Setups they would fail.
    """
    successes = context.successes
    if not successes:
        return []
    best = min(successes, key=lambda t: (t.n_steps, t.seed))
    return [
        dict(s.action)
        for s in best.steps
        if s.action is not None and not s.invalid and not s.blocked
    ]


def stage_is_scaffold(context: DesignContext, index: int) -> bool:
    """Whether stage candidate ``index`` is a head start along the oracle's plan (a scaffold).

    Any other stage candidate is a perturbation of the start (a hardening).
    """
    stage = context.stage_candidates[index]
    plan = context.oracle_actions or []
    return bool(stage) and len(stage) < len(plan) and plan[: len(stage)] == stage


def forbiddable_tools(context: DesignContext) -> list[str]:
    """Tools that can be forbidden without making the task unsolvable, most used first.

    A tool is kept available when the oracle's plan calls it, or (without an oracle) when every
    successful baseline episode called it; at least one tool always stays. Ranked by how often
    successful baseline episodes used it, then by name.
    """
    names = context.tool_names
    if len(names) < 2:
        return []
    needed: set[str] = set()
    if context.oracle_actions is not None:
        needed |= {a["tool"] for a in context.oracle_actions}
    used_by = [
        {s.action["tool"] for s in t.steps if s.action is not None} for t in context.successes
    ]
    if context.oracle_actions is None and used_by:
        needed |= set.intersection(*used_by)
    usage = Counter(
        s.action["tool"] for t in context.successes for s in t.steps if s.action is not None
    )
    allowed = [n for n in names if n not in needed]
    if len(allowed) == len(names):
        allowed = allowed[1:]  # keep one tool
    return sorted(allowed, key=lambda n: (-usage[n], n))


def observation_lengths(context: DesignContext) -> list[int]:
    """The lengths of every observation in the baseline (first observations included)."""
    lengths = []
    for trajectory in context.baseline:
        if trajectory.first_observation:
            lengths.append(len(trajectory.first_observation))
        lengths.extend(len(s.observation) for s in trajectory.steps if s.observation)
    return lengths


# -- fix-behaviour --------------------------------------------------------------------------------


def block_repeated_action(
    context: DesignContext, max_repeats: int = 2, window: int | None = None
) -> Candidate:
    """Blocks an action repeated from the same-looking state, with feedback.

    The rule blocks an action (canonical JSON of tool and args) the agent already took
    ``max_repeats`` times within its last ``window`` actions from a state equal to the current
    one (step counters ignored), and any action repeated more than ``max_repeats + 1`` times in a
    row. Loops and repeated no-ops are cut while an action that makes progress each time
    (``undo`` three times) passes. The feedback reads "You already tried X ... try something
    else."

    Args:
        context: The task.
        max_repeats: Repeats allowed before blocking (>= 1).
        window: How many recent actions to look at; ``3 * max_repeats + 1`` by default.

    Raises:
        RiggerError: If ``max_repeats`` or ``window`` is not a positive int.
    """
    if isinstance(max_repeats, bool) or not isinstance(max_repeats, int) or max_repeats < 1:
        raise RiggerError(f"expected max_repeats to be a positive int, got {max_repeats!r}")
    window = 3 * max_repeats + 1 if window is None else window
    if isinstance(window, bool) or not isinstance(window, int) or window < max_repeats:
        raise RiggerError(f"expected window to be an int >= max_repeats, got {window!r}")
    part = RulePart(
        "block_repeats",
        {
            "max_repeats": max_repeats,
            "window": window,
            "volatile": volatile_keys(context.state_schema),
        },
    )
    return _rules_candidate(
        f"block_repeated_action({max_repeats})",
        [part],
        f"the policy repeats actions without progress; block an action taken {max_repeats} "
        "times from the same state and tell it to try something else",
    )


def answer_invalid_with_options(context: DesignContext, max_options: int = 20) -> Candidate:
    """Answers an invalid-looking step with the valid options.

    A step looks invalid when the state (step counters ignored) did not change or the
    observation matches :data:`INVALID_MARKERS`; the options are the state's
    ``admissible_commands`` list when it has one, else the tools' usage lines (written into the
    code from the tool specs now).

    Raises:
        RiggerError: If ``max_options`` is not a positive int.
    """
    if isinstance(max_options, bool) or not isinstance(max_options, int) or max_options < 1:
        raise RiggerError(f"expected max_options to be a positive int, got {max_options!r}")
    part = RulePart(
        "answer_invalid",
        {
            "markers": INVALID_MARKERS,
            "options_key": "admissible_commands",
            "tool_lines": tool_lines(context.tools),
            "volatile": volatile_keys(context.state_schema),
            "max_options": max_options,
        },
    )
    return _rules_candidate(
        "answer_invalid_with_options",
        [part],
        "the policy takes invalid actions; answer each with the valid options",
    )


# -- scaffold -------------------------------------------------------------------------------------


def _check_prefix(n: object, available: int, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise RiggerError(f"expected a prefix length n >= 1, got {n!r}")
    if n >= available:
        raise RiggerError(
            f"a prefix of {n} of the {available} actions of {what} would replay the whole "
            f"solution; use n <= {available - 1}"
        )
    return n


def setups_oracle_prefix(context: DesignContext, n: int) -> Candidate:
    """Setups replaying the first ``n`` actions of the oracle's plan: a head start.

    Never the whole plan (the episode would end during setup).

    Raises:
        RiggerError: Without an oracle plan, or if ``n`` is not in ``[1, len(plan) - 1]``.
    """
    plan = context.oracle_actions
    if not plan:
        raise RiggerError("setups_oracle_prefix needs the oracle's plan; this bridge has none")
    _check_prefix(n, len(plan), "the oracle's plan")
    return Candidate(
        in_env_actions=[dict(a) for a in plan[:n]],
        rationale=_rationale(
            f"setups_oracle_prefix({n})",
            f"start the episode {n} of {len(plan)} oracle steps into the solution",
        ),
        template=f"setups_oracle_prefix({n})",
    )


def setups_success_prefix(context: DesignContext, n: int) -> Candidate:
    """Setups replaying the first ``n`` actions of the shortest successful baseline episode.

    Raises:
        RiggerError: Without a successful baseline episode, or if ``n`` is not in
            ``[1, len(actions) - 1]``.
    """
    actions = success_actions(context)
    if not actions:
        raise RiggerError("setups_success_prefix needs a successful baseline episode")
    _check_prefix(n, len(actions), "the shortest successful episode")
    return Candidate(
        in_env_actions=actions[:n],
        rationale=_rationale(
            f"setups_success_prefix({n})",
            f"start the episode {n} of {len(actions)} steps into a successful baseline episode",
        ),
        template=f"setups_success_prefix({n})",
    )


def hint_rule(context: DesignContext, after: int = 0) -> Candidate:
    """A Rules hint on the first observation: the next step of a known solution.

    The hint names action ``after`` of the oracle's plan (or, without an oracle, of the shortest
    successful baseline episode): the first step from the start state after a prefix of
    ``after`` actions. Rules code cannot reach the env, so the hint is written into the code now,
    and shown once.

    Raises:
        RiggerError: Without a plan or successful episode, or if it has no action ``after``.
    """
    plan = context.oracle_actions or success_actions(context)
    if not plan:
        raise RiggerError("hint_rule needs the oracle's plan or a successful baseline episode")
    if isinstance(after, bool) or not isinstance(after, int) or not 0 <= after < len(plan):
        raise RiggerError(f"expected after in [0, {len(plan) - 1}], got {after!r}")
    text = f"Hint: a good next step is {_action_text(plan[after])}."
    return _rules_candidate(
        "hint_rule" if after == 0 else f"hint_rule(after={after})",
        [RulePart("hint", {"text": text})],
        f"show a known solution's next step once, on the first observation ({text!r})",
    )


# -- harden ---------------------------------------------------------------------------------------


def setups_stage_candidate(context: DesignContext, index: int) -> Candidate:
    """Setups playing the bridge's ``stage_candidates()[index]``: a different start state.

    Raises:
        RiggerError: If the bridge offers no such stage candidate.
    """
    stages = context.stage_candidates
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(stages):
        raise RiggerError(
            f"expected a stage candidate index in [0, {len(stages) - 1}], got {index!r}"
            if stages
            else "the bridge offers no stage candidates"
        )
    actions = stages[index]
    kind = "head start" if stage_is_scaffold(context, index) else "perturbed start"
    shown = ", ".join(_action_text(a) for a in actions)
    return Candidate(
        in_env_actions=[dict(a) for a in actions],
        rationale=_rationale(
            f"setups_stage_candidate({index})",
            f"the bridge's stage candidate {index} ({kind}: {shown})",
        ),
        template=f"setups_stage_candidate({index})",
    )


def forbid_tool(context: DesignContext, name: str, feedback: str | None = None) -> Candidate:
    """A rule blocking every call of tool ``name``, with feedback.

    Raises:
        RiggerError: If the task has no such tool, or it is needed to solve the task (see
            :func:`forbiddable_tools`).
    """
    if name not in context.tool_names:
        raise RiggerError(f"no tool {name!r}; tools: {', '.join(context.tool_names)}")
    if name not in forbiddable_tools(context):
        raise RiggerError(
            f"forbidding {name!r} would make the task unsolvable (the solution needs it)"
        )
    feedback = feedback or (
        f"The tool {name} is disabled in this variant of the task; solve it with the other tools."
    )
    return _rules_candidate(
        f"forbid_tool({name})",
        [RulePart("forbid_tool", {"tool": name, "feedback": feedback})],
        f"forbid the shortcut tool {name!r}; the task stays solvable without it",
    )


def truncate_observation(context: DesignContext, max_chars: int | None = None) -> Candidate:
    """A rule keeping only the first ``max_chars`` characters of each observation.

    Args:
        context: The task.
        max_chars: Characters kept; by default half the median baseline observation length
            (at least 16).

    Raises:
        RiggerError: If ``max_chars`` is not a positive int.
    """
    if max_chars is None:
        lengths = observation_lengths(context)
        max_chars = max(16, int(statistics.median(lengths) // 2)) if lengths else 80
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise RiggerError(f"expected max_chars to be a positive int, got {max_chars!r}")
    return _rules_candidate(
        f"truncate_observation({max_chars})",
        [RulePart("truncate_observation", {"max_chars": max_chars})],
        f"show only the first {max_chars} characters of each observation",
    )


def link_siblings(context: DesignContext, n: int) -> Candidate:
    """A sequential Link to the first ``n`` sibling tasks: a longer horizon.

    Raises:
        RiggerError: If ``n`` is not in ``[1, number of siblings]``.
    """
    siblings = context.sibling_task_ids
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= len(siblings):
        raise RiggerError(
            f"expected n in [1, {len(siblings)}] sibling tasks, got {n!r}"
            if siblings
            else "no sibling tasks to link"
        )
    chosen = list(siblings[:n])
    return Candidate(
        link_task_ids=chosen,
        rationale=_rationale(
            f"link_siblings({n})",
            f"play {', '.join(chosen)} after this task in the same episode (a longer horizon)",
        ),
        template=f"link_siblings({n})",
    )


def drop_actions(context: DesignContext, probability: float) -> Candidate:
    """A rule that makes each action fail with ``probability`` (an unreliable actuator).

    A failed action is not carried out and the agent is told so; which actions fail is drawn
    from the episode's seeded ``random``, so an episode replays exactly. This is the tunable
    hardening: the higher the probability, the more steps and recoveries the task takes.

    Raises:
        RiggerError: If ``probability`` is not in ``(0, 1)``.
    """
    if (
        isinstance(probability, bool)
        or not isinstance(probability, int | float)
        or not 0 < probability < 1
    ):
        raise RiggerError(f"expected a probability in (0, 1), got {probability!r}")
    probability = round(float(probability), 4)
    del context  # the rule needs nothing from the task
    feedback = "That action failed this time and was not carried out; try again."
    candidate = _rules_candidate(
        f"drop_actions({probability:g})",
        [RulePart("drop_actions", {"probability": probability, "feedback": feedback})],
        f"each action fails with probability {probability:g} (the agent must notice and retry); "
        f"the validator calibrates {DROP_KNOB} in 0-{DROP_MAX:g}",
    )
    candidate.knobs = [
        Knob(DROP_KNOB, 0.0, DROP_MAX, "high", min(probability, DROP_MAX), neutral=0.0).to_dict()
    ]
    return candidate


def combine(*candidates: Candidate, rationale: str | None = None) -> Candidate:
    """Stacks candidates into one: Setups concatenated, rule parts chained, links appended.

    Args:
        *candidates: Template candidates (their rules code must come from the templates).
        rationale: Overrides the joined rationales.

    Raises:
        RiggerError: If fewer than two candidates are given, or one's rules code was not
            generated by the templates.
    """
    if len(candidates) < 2:
        raise RiggerError(f"combine needs at least two candidates, got {len(candidates)}")
    actions: list[dict[str, Any]] = []
    parts: list[RulePart] = []
    links: list[str] = []
    knobs: list[dict[str, Any]] = []
    for candidate in candidates:
        actions.extend(dict(a) for a in candidate.in_env_actions)
        try:
            parts.extend(parts_of(candidate.rules_code))
        except ValueError as e:
            raise RiggerError(f"cannot combine {candidate.template or 'a candidate'}: {e}") from e
        links.extend(t for t in candidate.link_task_ids if t not in links)
        # Stacked on other parts, a knob's neutral value no longer gives back the bare task.
        knobs.extend(
            {**k, "neutral": None}
            for k in candidate.knobs
            if k["name"] not in {j["name"] for j in knobs}
        )
    name = " + ".join(c.template or "custom" for c in candidates)
    reasons = "; ".join(c.rationale.removeprefix("heuristic template ") for c in candidates)
    return Candidate(
        in_env_actions=actions,
        rules_code=render_rules(parts) if parts else None,
        link_task_ids=links,
        rationale=rationale or _rationale(name, f"stacked: {reasons}"),
        template=name,
        knobs=knobs,
    )
