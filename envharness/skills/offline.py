"""``OfflineExtractor``: skills from episodes without a model, deterministic and testable.

From a **successful** episode (the bridge's verdict) it writes one strategy: the procedure, i.e.
the agent's valid, unblocked actions in order with task-specific values abstracted (see
:class:`Abstraction`) and consecutive repeats collapsed. From a **failed** episode it writes one
pitfall for its :func:`~envharness.rollout.stats.failure_category` with the evidence: the loop's
actions, the most common invalid-action feedback, the rule's message, the most repeated action of
a budget-out episode, or the last action of a wrong end. Time-outs, policy errors and env errors
teach nothing about the task and give no skill.

When the episode ran under a rigged harness, the skill's ``when`` says what the harness was
rigged to teach (its lineage), and its provenance records it
(:func:`~envharness.skills.extract.harness_target`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from envharness.rollout.stats import failure_category, find_loop
from envharness.rollout.trajectory import Step, Trajectory
from envharness.skills.provenance import provenance_of
from envharness.skills.records import Skill

__all__ = ["Abstraction", "OfflineExtractor"]

# Words never abstracted: function words, and the verbs of text-adventure and ALFWorld commands.
_STOP = frozenset(
    """
    a an the some two three any each every another one your my its it this that these those
    there here is are was were be been being am do does did done have has had will would can
    could should shall may might must not no yes and or but so if then than when while once
    after before until first off next last also just only very too again all both
    in on into onto to from under inside of with at by for about over near beside behind
    out up down around through across via above below between
    i you he she we they me him her us them what which who whom whose how why where
    go goes going take takes took taken put puts open opens close closes unlock unlocks lock
    locks examine look looks see find get got give drop eat insert move heat cool clean use
    slice toggle turn make makes made call combine undo inventory help act type write
    try trip hope ready interact task today objective done thing things
    """.split()
)
_DETERMINERS = frozenset("a an the some two three any each another your my its one".split())
_PREPOSITIONS = frozenset(
    "in on into onto to from under inside of with near beside behind below above".split()
)
_DIRECTIONS = frozenset("north south east west northeast northwest southeast southwest".split())
_TOKEN = re.compile(r"[a-z]+|\d+|[^\sa-z\d]")
_NUMBER = re.compile(r"(?<![\w<])-?\d+(?:/\d+|\.\d+)?(?![\w>])")
_NUMERIC = re.compile(r"^\s*-?\d+(?:/\d+|\.\d+)?\s*$")
_INSTANCE = re.compile(r"\b([a-z][a-z-]*) \d+\b", re.IGNORECASE)
_DIRECTION = re.compile(r"\b(?:" + "|".join(sorted(_DIRECTIONS)) + r")\b", re.IGNORECASE)
_PLACE_BEFORE = frozenset(
    "to from in on into onto with under inside at open close examine go".split()
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_MAX_STEPS = 40
_EVIDENCE_CHARS = 120


def _phrases(tokens: list[str]) -> list[tuple[int, int]]:
    """The (start, end) spans of maximal runs of content words (no stopword or punctuation)."""
    spans, start = [], None
    for i, token in enumerate([*tokens, "."]):
        content = token.isalpha() and token not in _STOP and token not in _DIRECTIONS
        if content and start is None:
            start = i
        elif not content and start is not None:
            spans.append((start, i))
            start = None
    return spans


def _first_paragraph(text: str) -> str:
    """The text before the first blank line: the task itself, not the bridge's tool notes."""
    return re.split(r"\n\s*\n", text.strip(), maxsplit=1)[0]


def _role(tokens: list[str], start: int) -> str:
    """``receptacle`` when the phrase follows a preposition (determiners skipped), else object."""
    i = start - 1
    while i >= 0 and tokens[i] in _DETERMINERS:
        i -= 1
    return "receptacle" if i >= 0 and tokens[i] in _PREPOSITIONS else "object"


@dataclass(frozen=True)
class Abstraction:
    """Replaces one task's specific values by placeholders, in its actions and texts.

    Built from the instruction and the episode's action texts (:meth:`for_episode`):

    - a **name** is a run of content words of the instruction's first paragraph (the task; the
      paragraphs after it are the bridge's notes on its tools) (not a stopword, a command verb
      or a direction) that also occurs in some action; it becomes ``<object>`` (``<object2>``
      ...) or, when it follows a preposition in the instruction ("in sidetable", "from the
      floor"), ``<receptacle>`` (``<receptacle2>`` ...), numbered by first occurrence in the
      instruction; an instance number after it ("sidetable 1") goes with it, and a part of it
      ("potato" of "red potato") gets the same placeholder;
    - other numbered instances in actions ("drawer 3") become ``<place>`` after a word such as
      ``to``/``from``/``open`` and ``<item>`` otherwise;
    - compass directions become ``<direction>``; numbers become ``<number>`` (in instruction
      text only those that also occur in an action, so "Make 24" keeps its 24).

    Attributes:
        names: Lowercase name → placeholder, longest names first.
        task_numbers: The instruction's numbers that occur in actions.
    """

    names: tuple[tuple[str, str], ...] = ()
    task_numbers: frozenset[str] = frozenset()

    @classmethod
    def for_episode(cls, instruction: str, action_texts: Sequence[str]) -> Abstraction:
        """The abstraction of one episode's instruction over its action texts."""
        tokens = _TOKEN.findall(_first_paragraph(instruction).lower())
        used = " " + " ".join(" ".join(_TOKEN.findall(t.lower())) for t in action_texts) + " "
        found: dict[str, tuple[int, str]] = {}  # name -> (first position, role)
        alias: dict[str, str] = {}  # a name or a part of one -> the name
        for start, end in _phrases(tokens):
            role = _role(tokens, start)
            i = start
            while i < end:  # the longest runs that occur in the actions, left to right
                j = next((j for j in range(end, i, -1) if f" {' '.join(tokens[i:j])} " in used), i)
                if j == i:
                    i += 1
                    continue
                name = " ".join(tokens[i:j])
                found.setdefault(name, (i, role))
                for a in range(i, j):  # "potato" alone means the "red potato"
                    for b in range(a + 1, j + 1):
                        part = " ".join(tokens[a:b])
                        if f" {part} " in used:
                            alias.setdefault(part, name)
                i = j
        counts: Counter[str] = Counter()
        placeholder: dict[str, str] = {}
        for name, (_, role) in sorted(found.items(), key=lambda item: (item[1][0], item[0])):
            counts[role] += 1
            placeholder[name] = f"<{role}>" if counts[role] == 1 else f"<{role}{counts[role]}>"
        names = tuple(
            sorted(
                ((part, placeholder[name]) for part, name in alias.items()),
                key=lambda item: (-len(item[0]), item[0]),
            )
        )
        every = _TOKEN.findall(instruction.lower())
        numbers = {t for t in every if t.isdigit()} & set(_TOKEN.findall(used))
        return cls(names, frozenset(numbers))

    def _names(self, text: str) -> str:
        for name, placeholder in self.names:
            pattern = r"\b" + r"\s+".join(map(re.escape, name.split())) + r"\b(?: \d+\b)?"
            text = re.sub(pattern, placeholder, text, flags=re.IGNORECASE)
        return _DIRECTION.sub("<direction>", text)

    def action_text(self, text: str) -> str:
        """An action's text (a command or an argument) with every task-specific value abstracted.

        Example:
            >>> rules = Abstraction.for_episode("put a keychain in sidetable.",
            ...                                 ["take keychain 1 from armchair 1"])
            >>> rules.action_text("take keychain 1 from armchair 1")
            'take <object> from <place>'
        """
        text = self._names(text)

        def instance(match: re.Match[str]) -> str:
            before = text[: match.start()].split()
            return "<place>" if before and before[-1].lower() in _PLACE_BEFORE else "<item>"

        text = _INSTANCE.sub(instance, text)
        return _NUMBER.sub("<number>", text)

    def text(self, text: str) -> str:
        """Free text (an instruction, feedback) with the task's names and numbers abstracted."""
        text = self._names(text)
        numbers = self.task_numbers

        def number(match: re.Match[str]) -> str:
            return "<number>" if match.group() in numbers else match.group()

        return _NUMBER.sub(number, text)


def _is_command(args: Mapping[str, Any]) -> bool:
    return len(args) == 1 and isinstance(next(iter(args.values())), str)


def _action_texts(action: Mapping[str, Any] | None) -> list[str]:
    if not action:
        return []
    args = action.get("args") or {}
    return [value for value in args.values() if isinstance(value, str)]


def _describe(action: Mapping[str, Any], rules: Abstraction) -> str:
    """``act: go to <receptacle>`` for a one-text tool, ``tool(a=<number>, op='*')`` otherwise."""
    tool = str(action.get("tool") or "?")
    args = action.get("args") or {}
    if not isinstance(args, Mapping):
        return f"{tool}(...)"
    if _is_command(args):
        return f"{tool}: {rules.action_text(next(iter(args.values())))}"
    parts = []
    for name, value in args.items():
        if isinstance(value, str) and _NUMERIC.match(value):
            shown = "<number>"
        elif isinstance(value, str):
            shown = repr(rules.action_text(value))
        elif isinstance(value, bool) or value is None:
            shown = repr(value)
        elif isinstance(value, int | float):
            shown = "<number>"
        else:
            shown = "..."
        parts.append(f"{name}={shown}")
    return f"{tool}({', '.join(parts)})"


def _collapse(steps: list[str]) -> list[str]:
    """Consecutive equal steps as one ``step (N times in a row)``."""
    out: list[tuple[str, int]] = []
    for step in steps:
        if out and out[-1][0] == step:
            out[-1] = (step, out[-1][1] + 1)
        else:
            out.append((step, 1))
    return [step if n == 1 else f"{step} ({n} times in a row)" for step, n in out]


def _clip(text: str, limit: int = _EVIDENCE_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _goal(instruction: str, rules: Abstraction) -> tuple[str, str]:
    """The task's short and long statement: its sentences with a placeholder, abstracted.

    Returns:
        The first such sentence (else the first sentence) and all of them, clipped.
    """
    task = rules.text(_first_paragraph(instruction))
    sentences = [s.strip() for s in _SENTENCE.split(task) if s.strip()]
    if not sentences:
        return "a task of this environment", "a task of this environment"
    marked = [s for s in sentences if "<" in s] or sentences[:1]
    first = marked[0]
    head, colon, tail = first.rpartition(":")
    if colon and tail.strip():
        first = tail.strip()
        marked[0] = first
    return _clip(first.rstrip("."), 100), _clip(" ".join(marked).rstrip("."), 240)


class OfflineExtractor:
    """Procedures from successes, pitfalls from failures; no model, deterministic.

    Attributes:
        name: ``"offline"`` (the provenance's extractor).

    Example:
        >>> from envharness import load_bridge
        >>> from envharness.rollout import OraclePolicy, rollout
        >>> env = load_bridge("toy24", task_id="4-4-10-10")
        >>> [skill] = OfflineExtractor().extract(rollout(env, OraclePolicy(1.0, seed=0)))
        >>> print(skill.render())  # doctest: +NORMALIZE_WHITESPACE
        Worked procedure: Make 24 from the numbers <number> <number> <number> <number> (strategy)
        — when the task reads like "Make 24 from the numbers <number> <number> <number>
        <number>": These 3 actions solved it; repeat their shape with this task's values.
          1. combine(a=<number>, op='*', b=<number>)
          2. combine(a=<number>, op='-', b=<number>)
          3. combine(a=<number>, op='/', b=<number>)
    """

    name = "offline"

    def extract(self, trajectory: Trajectory) -> list[Skill]:
        """The episode's procedure (a success) or its pitfall (a failure), as a list of 0 or 1."""
        texts = [text for step in trajectory.steps for text in _action_texts(step.action)]
        rules = Abstraction.for_episode(trajectory.instruction, texts)
        if trajectory.success:
            made = self._procedure(trajectory, rules, *_goal(trajectory.instruction, rules))
        else:
            made = self._pitfall(trajectory, rules)
        if made is None:
            return []
        title, when, principle, steps, tag = made
        provenance = provenance_of(trajectory, self.name)
        if provenance.target:
            target = _clip(rules.text(provenance.target), 160)
            when = f"{when} (learned where the env was rigged to: {target})"
        tags = (self.name, tag, "harnessed" if provenance.harnessed else "original")
        kind = "strategy" if trajectory.success else "pitfall"
        return [Skill(title, when, principle, tuple(steps), kind, provenance, tags)]

    @staticmethod
    def _procedure(
        trajectory: Trajectory, rules: Abstraction, goal: str, statement: str
    ) -> tuple[str, str, str, list[str], str] | None:
        done = [
            _describe(step.action, rules)
            for step in trajectory.steps
            if step.action is not None and step.invalid is None and not step.blocked
        ]
        if not done:
            return None
        steps = _collapse(done)
        if len(steps) > _MAX_STEPS:
            keep = _MAX_STEPS // 2
            steps = [*steps[:keep], f"... ({len(steps) - 2 * keep} more steps) ...", *steps[-keep:]]
        principle = (
            f"These {len(done)} actions solved it; repeat their shape with this task's values."
        )
        when = f'the task reads like "{statement}"'
        return f"Worked procedure: {goal}", when, principle, steps, "procedure"

    @staticmethod
    def _pitfall(
        trajectory: Trajectory, rules: Abstraction
    ) -> tuple[str, str, str, list[str], str] | None:
        category = failure_category(trajectory)
        steps = trajectory.steps

        def shown(step: Step) -> str:
            return _describe(step.action, rules) if step.action is not None else "(no action)"

        if category == "loop":
            loop = find_loop(trajectory.action_keys())
            assert loop is not None  # failure_category found it
            start, period, repeats = loop
            block = " then ".join(shown(step) for step in steps[start : start + period])
            return (
                "Break out of a repeated-action loop",
                "the same action, or cycle of actions, comes back without progress",
                f"Repeating {block} {repeats} times in a row ended in failure; an action that "
                "did not help the first time rarely helps later.",
                [
                    "compare the new observation with the last one before repeating an action",
                    f"if {shown(steps[start])} changed nothing, choose an action not tried here",
                    "re-read the instruction for a place or object not visited yet",
                ],
                "loop",
            )
        if category == "invalid_actions":
            reasons = Counter(
                _clip(rules.action_text(step.invalid.split(";")[0]))
                for step in steps
                if step.invalid is not None
            )
            reason = reasons.most_common(1)[0][0]
            first = next(step for step in steps if step.invalid is not None)
            return (
                "Use only valid actions",
                "an action is rejected as invalid",
                f'Most steps were rejected, e.g. "{reason}"; invalid steps use the budget '
                "without progress.",
                [
                    "use only the tools and argument forms the instruction describes",
                    "read the feedback of a rejected action and fix it before acting again",
                    f"do not send actions like {shown(first)}",
                ],
                "invalid_actions",
            )
        if category == "blocked":
            first = next(step for step in steps if step.blocked)
            message = _clip(rules.action_text(first.observation.strip().split("\n")[0]))
            return (
                "Respect the environment's rules",
                "a rule blocks an action",
                f'A rule blocked most actions ("{message}"); retrying a blocked action never '
                "gets through.",
                [
                    "read the rule's message when an action is blocked",
                    "do what the rule asks first, or choose another action; never resend it",
                    f"the first blocked action was {shown(first)}",
                ],
                "blocked",
            )
        if category == "budget":
            counted = Counter(shown(step) for step in steps if step.action is not None)
            hint = []
            if counted and counted.most_common(1)[0][1] > 1:
                hint = [f"the most repeated action was {counted.most_common(1)[0][0]}"]
            return (
                "Finish within the step budget",
                "many steps have passed and the task is not done",
                "The episode ran out of steps before the task was done; exploring and "
                "re-checking used them up.",
                [
                    "plan the whole sequence from the instruction before acting",
                    "make every action move toward the goal; do not re-check what is known",
                    *hint,
                ],
                "budget",
            )
        if category == "wrong_end":
            last = shown(steps[-1]) if steps else "(no action)"
            return (
                "Check the goal before ending the episode",
                "you are about to take the action that ends the episode",
                f"The episode ended after {last} without success: it ended, but the task was "
                "not accomplished.",
                [
                    "before the final action, check every part of the instruction is done",
                    "prefer an action that completes the goal over one that only ends the episode",
                ],
                "wrong_end",
            )
        return None  # timeout, policy_error, env_error: nothing learned about the task
