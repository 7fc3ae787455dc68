"""Rules code the heuristic designer writes: small parts rendered into one ``class _Rules``.

A :class:`RulePart` is one behaviour (block repeats, answer invalid steps, ban a tool, ...) with
JSON-able parameters. :func:`render_rules` turns a list of parts into rules code that chains them
(``filter_action`` parts in order until one blocks; observation parts in order), and writes the
parts as a one-line JSON header so :func:`parts_of` can read them back and
:func:`~envharness.graph.heuristic.templates.combine` can merge candidates. The code uses only
``json``, ``random`` and ``re`` and reaches the env only through the hooks' ``(action, state)`` /
``(action, observation, state)`` / ``(observation, state)`` arguments, so it works on any bridge.

Example:
    >>> code = render_rules([RulePart("forbid_tool", {"tool": "undo", "feedback": "No undo."})])
    >>> from envharness.sandbox import check_rules_code
    >>> sorted(check_rules_code(code).hooks)
    ['filter_action']
    >>> parts_of(code)[0].params["tool"]
    'undo'
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DROP_KNOB", "PART_KINDS", "RulePart", "parts_of", "render_rules"]

_HEADER = "# envharness heuristic rule parts: "

_HELPERS = '''
def _strip(value, volatile):
    """The value without the keys named in ``volatile`` (step counters and clocks), at any depth."""
    if isinstance(value, dict):
        return {k: _strip(v, volatile) for k, v in value.items() if k not in volatile}
    if isinstance(value, list):
        return [_strip(v, volatile) for v in value]
    return value


def _fingerprint(state, volatile):
    """A text that is equal for states that differ only in their volatile keys."""
    return json.dumps(_strip(state, volatile), sort_keys=True, default=str)


def _action_key(action):
    """The canonical JSON text of a call: equal calls give equal keys."""
    return json.dumps(
        {"tool": action.get("tool"), "args": action.get("args") or {}}, sort_keys=True, default=str
    )


def _action_text(action):
    """A call as the agent would write it, e.g. ``combine(a='4', op='*', b='6')``."""
    args = action.get("args") or {}
    inner = ", ".join(str(k) + "=" + repr(v) for k, v in sorted(args.items()))
    return str(action.get("tool")) + "(" + inner + ")"


def _checksum(text):
    """A 32-bit FNV-1a checksum of ``text`` (stable across processes, unlike ``hash``)."""
    value = 2166136261
    for char in text:
        value = ((value ^ ord(char)) * 16777619) & 0xFFFFFFFF
    return value


def _find_list(value, key, depth):
    """The first list of strings stored under ``key`` in ``value`` (searching nested dicts)."""
    if not isinstance(value, dict) or depth < 0:
        return None
    found = value.get(key)
    if isinstance(found, list) and all(isinstance(item, str) for item in found):
        return found
    for inner in value.values():
        found = _find_list(inner, key, depth - 1)
        if found is not None:
            return found
    return None
'''

# Each part: its class source and the hooks it implements. Parameters become keyword arguments.
_PARTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "block_repeats": (
        '''
class _BlockRepeats:
    """Blocks an action the agent already took ``max_repeats`` times, within its last ``window``
    actions, from a state that looked the same (volatile keys such as step counters ignored),
    and the same action a ``max_repeats + 2``-th time in a row whatever the state."""

    def __init__(self, max_repeats, window, volatile):
        self.max_repeats = max_repeats
        self.window = window
        self.volatile = set(volatile)
        self.recent = []
        self.run = 0

    def filter_action(self, action, state):
        key = _action_key(action)
        here = _fingerprint(state, self.volatile)
        recent = self.recent[-self.window:]
        count = sum(1 for k, f in recent if k == key and f == here)
        run = self.run + 1 if recent and recent[-1][0] == key else 1
        if count >= self.max_repeats or run > self.max_repeats + 1:
            return (
                "You already tried " + _action_text(action) + " " + str(max(count, run - 1))
                + " times and it did not get you further; try something else."
            )
        self.recent.append((key, here))
        self.run = run
        return action
''',
        ("filter_action",),
    ),
    "answer_invalid": (
        '''
class _AnswerInvalid:
    """After a step that looks invalid (the state did not change, or the observation reads like
    a refusal), appends the valid options: the state's ``options_key`` list when it has one,
    else the tools' usage lines."""

    def __init__(self, markers, options_key, tool_lines, volatile, max_options):
        self.markers = re.compile(markers, re.IGNORECASE)
        self.options_key = options_key
        self.tool_lines = tool_lines
        self.volatile = set(volatile)
        self.max_options = max_options
        self.previous = None

    def modify_transition(self, action, observation, state):
        here = _fingerprint(state, self.volatile)
        unchanged = here == self.previous
        self.previous = here
        if not (unchanged or self.markers.search(observation)):
            return observation
        options = _find_list(state, self.options_key, 3)
        if options:
            shown = options[: self.max_options]
            more = len(options) - len(shown)
            lines = ["- " + item for item in shown]
            if more > 0:
                lines.append("- ... and " + str(more) + " more")
            header = "That did not work. Valid commands now:"
        else:
            lines = ["- " + line for line in self.tool_lines]
            header = "That did not work. The tools you can call:"
        block = header + "\\n" + "\\n".join(lines)
        if block in observation:
            return observation
        return observation + "\\n" + block

    def filter_observation(self, observation, state):
        self.previous = _fingerprint(state, self.volatile)
        return observation
''',
        ("modify_transition", "filter_observation"),
    ),
    "hint": (
        '''
class _Hint:
    """Appends ``text`` to the first observation of the episode only."""

    def __init__(self, text):
        self.text = text
        self.shown = False

    def filter_observation(self, observation, state):
        if self.shown:
            return observation
        self.shown = True
        return observation + "\\n" + self.text
''',
        ("filter_observation",),
    ),
    "forbid_tool": (
        '''
class _ForbidTool:
    """Blocks every call of ``tool`` with ``feedback``."""

    def __init__(self, tool, feedback):
        self.tool = tool
        self.feedback = feedback

    def filter_action(self, action, state):
        if action.get("tool") == self.tool:
            return self.feedback
        return action
''',
        ("filter_action",),
    ),
    "truncate_observation": (
        '''
class _TruncateObservation:
    """Keeps the first ``max_chars`` characters of every observation."""

    def __init__(self, max_chars):
        self.max_chars = max_chars

    def filter_observation(self, observation, state):
        return observation[: self.max_chars]
''',
        ("filter_observation",),
    ),
    "drop_actions": (
        '''
class _DropActions:
    """Each action fails with probability ``probability``: it is not carried out and the agent
    is told so, like an unreliable actuator. The draws come from the episode's seeded ``random``
    mixed with the first state seen, so episodes replay exactly and tasks differ."""

    def __init__(self, probability, feedback):
        self.probability = probability
        self.feedback = feedback
        self.rng = None

    def filter_action(self, action, state):
        if self.rng is None:
            first = json.dumps(state, sort_keys=True, default=str)
            self.rng = random.Random(random.getrandbits(32) ^ _checksum(first))
        if self.rng.random() < self.probability:
            return self.feedback
        return action
''',
        ("filter_action",),
    ),
}

PART_KINDS: tuple[str, ...] = tuple(_PARTS)
"""The rule parts :func:`render_rules` knows, by ``RulePart.kind``."""

_CLASS_NAMES = {
    "block_repeats": "_BlockRepeats",
    "answer_invalid": "_AnswerInvalid",
    "hint": "_Hint",
    "forbid_tool": "_ForbidTool",
    "truncate_observation": "_TruncateObservation",
    "drop_actions": "_DropActions",
}
_HOOK_ORDER = ("filter_action", "modify_transition", "filter_observation")


@dataclass(frozen=True)
class RulePart:
    """One behaviour of generated rules code.

    Attributes:
        kind: One of :data:`PART_KINDS`.
        params: The part's keyword arguments (JSON-able: str, int, float, bool, lists of them).

    Raises:
        ValueError: If ``kind`` is unknown or ``params`` is not a JSON-able dict.
    """

    kind: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in _PARTS:
            raise ValueError(f"expected a rule part kind in {PART_KINDS}, got {self.kind!r}")
        if not isinstance(self.params, Mapping):
            raise ValueError(f"expected params to be a dict, got {type(self.params).__name__}")
        try:
            json.dumps(dict(self.params), allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ValueError(f"rule part {self.kind!r}: params must be JSON-able ({e})") from e
        object.__setattr__(self, "params", dict(self.params))

    @property
    def hooks(self) -> tuple[str, ...]:
        """The hooks this part implements."""
        return _PARTS[self.kind][1]

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": ..., "params": {...}}``."""
        return {"kind": self.kind, "params": dict(self.params)}


DROP_KNOB = "DROP_P"
"""The module-level constant rendered rules code reads a single ``drop_actions`` part's
probability from: a knob the validator calibrates (:mod:`envharness.harness.knobs`)."""


def _constructor(part: RulePart, knob: bool) -> str:
    args = ", ".join(
        f"{name}={DROP_KNOB if knob and name == 'probability' else repr(value)}"
        for name, value in part.params.items()
    )
    return f"{_CLASS_NAMES[part.kind]}({args})"


def render_rules(parts: Sequence[RulePart]) -> str:
    """Rules code whose ``_Rules`` chains ``parts`` in order.

    ``filter_action`` runs the parts' filters in order and stops at the first that blocks (returns
    a str); ``modify_transition`` and ``filter_observation`` pass the observation through each
    part in order. Only the hooks some part needs are defined.

    Args:
        parts: The parts, at least one; duplicates of the same kind are allowed.

    Returns:
        The code, starting with a comment line that lists the parts as JSON.

    Raises:
        ValueError: If ``parts`` is empty or holds something other than :class:`RulePart`.
    """
    parts = list(parts)
    if not parts:
        raise ValueError("expected at least one rule part")
    for part in parts:
        if not isinstance(part, RulePart):
            raise ValueError(f"expected RulePart items, got {type(part).__name__}")
    header = _HEADER + json.dumps([p.to_dict() for p in parts], sort_keys=True)
    kinds = list(dict.fromkeys(p.kind for p in parts))
    classes = "\n".join(_PARTS[kind][0].strip("\n") + "\n\n" for kind in kinds)
    used = [hook for hook in _HOOK_ORDER if any(hook in p.hooks for p in parts)]
    drops = [p for p in parts if p.kind == "drop_actions"]
    constants = f"{DROP_KNOB} = {drops[0].params['probability']!r}\n\n" if len(drops) == 1 else ""
    lines = [
        "class _Rules:",
        '    """Generated by the EnvRigger heuristic designer from rule templates."""',
        "",
        "    def __init__(self):",
        "        self.parts = [",
        *(f"            {_constructor(p, len(drops) == 1)}," for p in parts),
        "        ]",
    ]
    for hook in used:
        members = ", ".join(f"self.parts[{i}]" for i, p in enumerate(parts) if hook in p.hooks)
        lines.append(f"        self.{hook}_parts = [{members}]")
    lines.extend(_hook_methods(used))
    body = "\n".join(lines)
    return (
        f"{header}\nimport json\nimport random\nimport re\n\n{constants}"
        f"{textwrap.dedent(_HELPERS).strip()}\n\n\n{classes}\n{body}\n"
    )


def _hook_methods(hooks: Sequence[str]) -> list[str]:
    lines: list[str] = []
    if "filter_action" in hooks:
        lines += [
            "",
            "    def filter_action(self, action, state):",
            "        for part in self.filter_action_parts:",
            "            action = part.filter_action(action, state)",
            "            if isinstance(action, str):",
            "                return action",
            "        return action",
        ]
    if "modify_transition" in hooks:
        lines += [
            "",
            "    def modify_transition(self, action, observation, state):",
            "        for part in self.modify_transition_parts:",
            "            observation = part.modify_transition(action, observation, state)",
            "        return observation",
        ]
    if "filter_observation" in hooks:
        lines += [
            "",
            "    def filter_observation(self, observation, state):",
            "        for part in self.filter_observation_parts:",
            "            observation = part.filter_observation(observation, state)",
            "        return observation",
        ]
    return lines


def parts_of(rules_code: str | None) -> list[RulePart]:
    """The parts :func:`render_rules` wrote into ``rules_code``.

    Args:
        rules_code: Code from :func:`render_rules`, or ``None`` (no rules: no parts).

    Raises:
        ValueError: If the code was not generated by :func:`render_rules` (hand-written or model
            code cannot be merged part by part).
    """
    if rules_code is None:
        return []
    first = rules_code.split("\n", 1)[0]
    if not first.startswith(_HEADER):
        raise ValueError(
            "the rules code was not generated by the heuristic templates (no parts header), so "
            "its parts cannot be read back"
        )
    try:
        raw = json.loads(first[len(_HEADER) :])
        return [RulePart(item["kind"], item["params"]) for item in raw]
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"malformed rule parts header: {e}") from e
