"""``ScriptedPolicy``: plays a fixed list of actions, from code or from a file."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from envharness.core import Action, ToolSpec
from envharness.errors import InvalidActionError, PolicyError
from envharness.parsing import parse_action

__all__ = ["OnExhausted", "Script", "ScriptedPolicy", "ScriptedPolicyFactory", "load_script"]

OnExhausted = Literal["error", "repeat_last"]
"""What a :class:`ScriptedPolicy` does when asked to act past the end of its script."""

_ON_EXHAUSTED = ("error", "repeat_last")


@dataclass(frozen=True)
class Script:
    """A fixed list of steps: actions, or text lines still to be parsed against the tools.

    Text steps use the CLI's action syntax (``combine 4 * 6``, ``combine(a="4", op="*", b="6")``
    or JSON, see :func:`envharness.parsing.parse_action`); they are parsed when the episode starts
    and the tools are known.

    Attributes:
        steps: The actions and text lines, in order.
        source: Where the script came from (a file path), for messages.
        lines: The line of ``source`` each step was read from (empty when not from a text file).

    Example:
        >>> Script.of([{"tool": "undo", "args": {}}, "combine 4 * 6"]).steps[0]
        Action(tool='undo', args={})
    """

    steps: tuple[Action | str, ...]
    source: str = "<script>"
    lines: tuple[int, ...] = ()

    @classmethod
    def of(cls, actions: Script | Sequence[Action | Mapping[str, Any] | str]) -> Script:
        """Builds a script from actions, ``{"tool", "args"}`` dicts and text lines.

        Raises:
            PolicyError: If ``actions`` is not a list, or an entry is not an action.
        """
        if isinstance(actions, Script):
            return actions
        if isinstance(actions, str | bytes | Mapping) or not isinstance(actions, Sequence):
            raise PolicyError(
                f"expected a list of actions for the script, got {type(actions).__name__}"
            )
        steps: list[Action | str] = []
        for index, entry in enumerate(actions):
            steps.append(_script_step(entry, f"step {index + 1}"))
        return cls(tuple(steps))

    def where(self, index: int) -> str:
        """Names step ``index`` for messages: the file and line, or the step number."""
        if self.lines:
            return f"{self.source}, line {self.lines[index]}"
        return f"{self.source}, step {index + 1}"

    def __len__(self) -> int:
        return len(self.steps)


def _script_step(entry: object, where: str) -> Action | str:
    if isinstance(entry, Action):
        return entry
    if isinstance(entry, str):
        if not entry.strip():
            raise PolicyError(f"{where}: expected an action, got an empty line")
        return entry.strip()
    if isinstance(entry, Mapping):
        try:
            return Action.from_dict(entry)
        except InvalidActionError as e:
            raise PolicyError(f"{where}: {e.reason}") from e
    raise PolicyError(
        f"{where}: expected an Action, a {{'tool', 'args'}} dict or a text line, "
        f"got {type(entry).__name__} {entry!r}"
    )


def load_script(path: str | Path) -> Script:
    r"""Reads a script file: a JSON list of actions, JSON lines, or text lines.

    Formats, by content: a file whose text starts with ``[`` is a JSON list of
    ``{"tool", "args"}`` objects; a ``.jsonl`` file, or one whose every line starts with ``{``,
    has one such object per line; anything else is read as one action per line in the CLI's
    syntax (``combine 4 * 6``), parsed against the tools when the episode starts. Blank lines and
    lines starting with ``#`` are skipped in line formats.

    Args:
        path: The script file.

    Returns:
        The script, remembering the file and line of each step.

    Raises:
        PolicyError: If the file cannot be read, is empty, or a line is malformed (naming it).

    Example:
        >>> import tempfile, pathlib
        >>> file = pathlib.Path(tempfile.mkdtemp()) / "moves.txt"
        >>> _ = file.write_text("# solve 4 4 10 10\ncombine 10 * 10\n")
        >>> load_script(file).steps
        ('combine 10 * 10',)
    """
    file = Path(path)
    source = str(file)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise PolicyError(f"cannot read the script file {source!r}: {e}") from e
    if text.lstrip().startswith("[") or file.suffix == ".json":
        return _json_script(text, source)
    rows = [
        (number, line.strip())
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not line.strip().startswith("#")
    ]
    if not rows:
        raise PolicyError(f"the script file {source!r} has no actions")
    as_json = file.suffix == ".jsonl" or all(line.startswith("{") for _, line in rows)
    steps: list[Action | str] = []
    for number, line in rows:
        where = f"{source}, line {number}"
        if as_json:
            try:
                data = json.loads(line)
            except json.JSONDecodeError as e:
                raise PolicyError(f"{where}: not valid JSON ({e.msg}): {line!r}") from None
            if not isinstance(data, Mapping):
                raise PolicyError(f"{where}: expected a {{'tool', 'args'}} object, got {line!r}")
            steps.append(_script_step(data, where))
        else:
            steps.append(line)
    return Script(tuple(steps), source, tuple(number for number, _ in rows))


def _json_script(text: str, source: str) -> Script:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise PolicyError(f"{source}, line {e.lineno}: not valid JSON ({e.msg})") from None
    if not isinstance(data, list):
        raise PolicyError(f"{source}: expected a JSON list of actions, got {type(data).__name__}")
    if not data:
        raise PolicyError(f"the script file {source!r} has no actions")
    steps = [_script_step(entry, f"{source}, item {i + 1}") for i, entry in enumerate(data)]
    return Script(tuple(steps), source)


class ScriptedPolicy:
    """Plays a fixed list of actions, whatever it observes.

    Text steps are parsed against the tools in :meth:`start`; action steps are played as given,
    unchecked, so a script can also feed a loop deliberately bad actions.

    Args:
        actions: Actions, ``{"tool", "args"}`` dicts, text lines, or a :class:`Script`.
        on_exhausted: Past the end of the script, ``"error"`` raises
            :class:`~envharness.errors.PolicyError` and ``"repeat_last"`` repeats the last action.

    Raises:
        PolicyError: If an entry is not an action, ``on_exhausted`` is unknown, or the script is
            empty with ``"repeat_last"``.

    Example:
        >>> policy = ScriptedPolicy([{"tool": "undo", "args": {}}])
        >>> policy.act("Numbers left: 4 4 10 10")
        Action(tool='undo', args={})
        >>> policy.act("...")
        Traceback (most recent call last):
        ...
        envharness.errors.PolicyError: script exhausted after 1 actions
    """

    def __init__(
        self,
        actions: Script | Sequence[Action | Mapping[str, Any] | str],
        *,
        on_exhausted: OnExhausted = "error",
    ) -> None:
        self.script = Script.of(actions)
        if on_exhausted not in _ON_EXHAUSTED:
            raise PolicyError(
                f"on_exhausted: expected one of {', '.join(_ON_EXHAUSTED)}, got {on_exhausted!r}"
            )
        if on_exhausted == "repeat_last" and not self.script.steps:
            raise PolicyError("an empty script has no last action to repeat")
        self.on_exhausted: OnExhausted = on_exhausted
        ready = [step for step in self.script.steps if isinstance(step, Action)]
        # Without text steps the script is playable before start(); text needs the tools.
        self._actions: list[Action] | None = ready if len(ready) == len(self.script.steps) else None
        self._position = 0

    @property
    def played(self) -> int:
        """How many scripted actions were played this episode."""
        return self._position

    def start(self, instruction: str, tools: Sequence[ToolSpec]) -> None:
        """Parses the text steps against ``tools`` and rewinds the script.

        Raises:
            PolicyError: If a text step is not an action on ``tools`` (naming its line).
        """
        tools = list(tools)
        actions: list[Action] = []
        for index, step in enumerate(self.script.steps):
            if isinstance(step, Action):
                actions.append(step)
                continue
            try:
                actions.append(parse_action(step, tools))
            except InvalidActionError as e:
                raise PolicyError(
                    f"{self.script.where(index)}: cannot read {step!r} as an action: {e.reason}"
                ) from e
        self._actions = actions
        self._position = 0

    def act(self, observation: str) -> Action:
        """The next scripted action.

        Raises:
            PolicyError: When the script is exhausted (with ``on_exhausted="error"``), or when
                the script has text steps and :meth:`start` was not called.
        """
        if self._actions is None:
            raise PolicyError("call start() before act(): the script's text steps need the tools")
        if self._position < len(self._actions):
            action = self._actions[self._position]
            self._position += 1
            return action
        if self.on_exhausted == "repeat_last":
            return self._actions[-1]
        raise PolicyError(f"script exhausted after {len(self._actions)} actions")

    def describe(self) -> str:
        """``"scripted"``, with the file name for a script read from a file."""
        return "scripted" if self.script.source == "<script>" else f"scripted:{self.script.source}"


class ScriptedPolicyFactory:
    """Makes a :class:`ScriptedPolicy` per episode (the seed is not used); picklable.

    Args:
        actions: As for :class:`ScriptedPolicy`.
        on_exhausted: As for :class:`ScriptedPolicy`.

    Example:
        >>> factory = ScriptedPolicyFactory(["noop"], on_exhausted="repeat_last")
        >>> policy = factory(7)
        >>> policy.start("Wait.", [ToolSpec("noop", "Do nothing.")])
        >>> policy.act(""), policy.act("")
        (Action(tool='noop', args={}), Action(tool='noop', args={}))
    """

    def __init__(
        self,
        actions: Script | Sequence[Action | Mapping[str, Any] | str],
        *,
        on_exhausted: OnExhausted = "error",
    ) -> None:
        checked = ScriptedPolicy(actions, on_exhausted=on_exhausted)
        self.script = checked.script
        self.on_exhausted: OnExhausted = on_exhausted

    @classmethod
    def from_file(
        cls, path: str | Path, *, on_exhausted: OnExhausted = "error"
    ) -> ScriptedPolicyFactory:
        """A factory for the script in ``path`` (see :func:`load_script`)."""
        return cls(load_script(path), on_exhausted=on_exhausted)

    def __call__(self, seed: int) -> ScriptedPolicy:
        """A fresh policy playing the script from its start."""
        return ScriptedPolicy(self.script, on_exhausted=self.on_exhausted)

    def describe(self) -> str:
        """Same as :meth:`ScriptedPolicy.describe`."""
        return ScriptedPolicy(self.script, on_exhausted=self.on_exhausted).describe()

    def __repr__(self) -> str:
        return (
            f"ScriptedPolicyFactory(<{len(self.script)} steps from {self.script.source}>, "
            f"on_exhausted={self.on_exhausted!r})"
        )
