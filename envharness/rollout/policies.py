"""Offline policies: scripted, random, and the calibrated oracle.

None of these needs a model, a key or a network, so rollouts, statistics and rigging can be
tested and benchmarked offline:

- :class:`ScriptedPolicy` plays a fixed list of actions (from code or a file, see
  :func:`load_script`);
- :class:`RandomPolicy` makes random calls that fit the tool schemas;
- :class:`OraclePolicy` plays the bridge's solution with probability ``skill`` and a random move
  otherwise: a black box whose weakness is known. It is the one policy here that looks inside the
  environment.

Each has a picklable factory (``factory(seed) -> policy``) for the executors.
"""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from envharness.core import Action, ActionableEnv, ToolSpec
from envharness.errors import BridgeError, InvalidActionError, PolicyError
from envharness.parsing import parse_action

__all__ = [
    "OnExhausted",
    "OraclePolicy",
    "OraclePolicyFactory",
    "RandomPolicy",
    "RandomPolicyFactory",
    "Script",
    "ScriptedPolicy",
    "ScriptedPolicyFactory",
    "load_script",
]

OnExhausted = Literal["error", "repeat_last"]
"""What a :class:`ScriptedPolicy` does when asked to act past the end of its script."""

_ON_EXHAUSTED = ("error", "repeat_last")
_NUMBER_TOKEN = re.compile(r"(?<![\w/.])-?\d+(?:/\d+|\.\d+)?(?![\w/])")
_WORD_TOKEN = re.compile(r"[A-Za-z_][\w'-]*")
_MAX_DEPTH = 4
_RANDOM_RETRIES = 10


def _check_seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise PolicyError(f"seed: expected an int, got {type(seed).__name__} {seed!r}")
    return seed


def _check_tools(tools: Sequence[ToolSpec], policy: str) -> list[ToolSpec]:
    tools = list(tools)
    if not tools:
        raise PolicyError(f"{policy}: the environment offers no tools to call")
    for tool in tools:
        if not isinstance(tool, ToolSpec):
            raise PolicyError(f"{policy}: expected ToolSpec objects, got {type(tool).__name__}")
    return tools


# -- scripted --------------------------------------------------------------------------------------


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
        steps = self.script.steps
        self._actions: list[Action] | None = (
            list(steps) if all(isinstance(s, Action) for s in steps) else None  # type: ignore[misc]
        )
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


# -- random ----------------------------------------------------------------------------------------


def _tokens(observation: str) -> tuple[list[str], list[str]]:
    """The distinct numbers and words of ``observation``, in order of appearance."""
    numbers = list(dict.fromkeys(_NUMBER_TOKEN.findall(observation)))
    words = list(dict.fromkeys(_WORD_TOKEN.findall(observation)))
    return numbers, words


def _bounds(schema: Mapping[str, Any], width: float) -> tuple[float, float]:
    low, high = schema.get("minimum"), schema.get("maximum")
    low = float(low) if isinstance(low, int | float) else None
    high = float(high) if isinstance(high, int | float) else None
    if low is None and high is None:
        return 0.0, width
    if low is None:
        return high - width, high  # type: ignore[operator]
    if high is None:
        return low, low + width
    return low, max(low, high)


class _Sampler:
    """Draws JSON values that fit a schema, preferring tokens seen in the observation."""

    def __init__(self, rng: random.Random, observation: str) -> None:
        self.rng = rng
        self.numbers, self.words = _tokens(observation)

    def value(self, schema: Mapping[str, Any], depth: int = 0) -> Any:
        rng = self.rng
        if "enum" in schema:
            return json.loads(json.dumps(rng.choice(schema["enum"])))
        kind = schema.get("type")
        if kind == "string":
            return self.text()
        if kind == "boolean":
            return rng.random() < 0.5
        if kind in ("integer", "number"):
            return self.number(schema, kind == "integer")
        if kind == "array":
            items = schema.get("items")
            if items is None or depth >= _MAX_DEPTH:
                return []
            return [self.value(items, depth + 1) for _ in range(rng.randint(0, 3))]
        if kind == "object":
            return self.object(schema, depth)
        return None

    def object(self, schema: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
        required = set(schema.get("required", ()))
        out: dict[str, Any] = {}
        for name, sub in schema.get("properties", {}).items():
            if name in required or (depth < _MAX_DEPTH and self.rng.random() < 0.5):
                out[name] = self.value(sub, depth + 1)
        return out

    def text(self) -> str:
        rng = self.rng
        if self.numbers and (not self.words or rng.random() < 0.75):
            return rng.choice(self.numbers)
        if self.words:
            return rng.choice(self.words)
        return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(1, 6)))

    def number(self, schema: Mapping[str, Any], integer: bool) -> int | float:
        rng = self.rng
        low, high = _bounds(schema, 10.0)
        seen: list[float] = []
        for token in self.numbers:
            if "/" in token:
                continue
            value = float(token)
            if low <= value <= high and (not integer or value.is_integer()):
                seen.append(value)
        if seen and rng.random() < 0.5:
            value = rng.choice(seen)
            return int(value) if integer else value
        if integer:
            lo, hi = int(-(-low // 1)), int(high // 1)
            return rng.randint(lo, hi) if lo <= hi else lo
        return round(rng.uniform(low, high), 3)


class RandomPolicy:
    """Random tool calls that fit the tool schemas; deterministic given the seed.

    Each turn it picks a tool uniformly and fills its arguments from the schema: enum values,
    booleans, numbers within ``minimum``/``maximum`` (or small ones), short arrays, and for free
    strings the numbers and words of the latest observation (so Toy24's ``combine`` draws from
    ``"Numbers left: 4 4 10 10"``). Required arguments are always given, optional ones half the
    time. The same seed and observations give the same actions.

    Args:
        seed: Seeds the policy's own ``random.Random``.

    Raises:
        PolicyError: If ``seed`` is not an int.

    Example:
        >>> from envharness.testing import FakeEnv
        >>> env = FakeEnv()
        >>> policy = RandomPolicy(seed=3)
        >>> policy.start(env.instruction, env.tools())
        >>> action = policy.act(env.reset()[0])
        >>> env.check_action(action) == action
        True
    """

    def __init__(self, seed: int = 0) -> None:
        self.seed = _check_seed(seed)
        self._rng = random.Random(seed)
        self._tools: list[ToolSpec] | None = None

    def start(self, instruction: str, tools: Sequence[ToolSpec]) -> None:
        """Remembers the tools.

        Raises:
            PolicyError: If there are no tools.
        """
        self._tools = _check_tools(tools, "RandomPolicy")

    def act(self, observation: str) -> Action:
        """A random call to a random tool, with arguments drawn for ``observation``.

        Raises:
            PolicyError: Before :meth:`start`.
        """
        if self._tools is None:
            raise PolicyError("call start() before act(): the policy needs the tools")
        tool = self._rng.choice(self._tools)
        return Action(tool.name, _Sampler(self._rng, str(observation)).object(tool.parameters))

    def describe(self) -> str:
        """``"random"``."""
        return "random"


@dataclass(frozen=True)
class RandomPolicyFactory:
    """Makes ``RandomPolicy(seed)`` per episode; picklable.

    Example:
        >>> RandomPolicyFactory()(5).seed
        5
    """

    def __call__(self, seed: int) -> RandomPolicy:
        """``RandomPolicy(seed)``."""
        return RandomPolicy(seed)

    def describe(self) -> str:
        """``"random"``."""
        return "random"


# -- oracle ----------------------------------------------------------------------------------------


def _check_skill(skill: object) -> float:
    if (
        isinstance(skill, bool)
        or not isinstance(skill, int | float)
        or not 0.0 <= float(skill) <= 1.0
    ):
        raise PolicyError(f"skill: expected a number in [0, 1], got {skill!r}")
    return float(skill)


def _state_key(env: ActionableEnv) -> str:
    return json.dumps(env.get_env_state(), sort_keys=True, default=str)


class OraclePolicy:
    """A calibrated offline policy: the oracle's move with probability ``skill``, else random.

    **This is the one policy allowed privileged access.** Every other policy is a black box that
    sees only observations; this one is attached to the environment (the loop calls
    :meth:`attach` after reset, with the whole harness stack) and reads ``env.oracle_actions()``
    at the current state, so its weakness is known and rigging can be tested without an LLM.

    Each turn, with probability ``skill`` it plays the first action of the oracle's plan from the
    current state; otherwise, a :class:`RandomPolicy` move. When the oracle has no plan (the state
    can no longer be solved), it recovers: with an ``undo`` tool that takes no arguments it undoes,
    else it plays a random move.

    A blocking rule cannot trap it in a loop: when one of its oracle moves left the environment's
    state unchanged (a rule blocked it), that move is set aside and random moves are played
    instead, for 1 turn after the first block, 2 after the second, 4 after the third, and so on.
    So a move blocked only for a while (e.g. until the agent has looked around) is retried, and
    one blocked for good costs few steps.

    Args:
        skill: The probability of playing the oracle's move, in ``[0, 1]``.
        seed: Seeds every random choice, so an episode replays exactly.

    Attributes:
        oracle_moves: Oracle (or recovery) moves played this episode.
        random_moves: Random moves played this episode.

    Raises:
        PolicyError: If ``skill`` is outside ``[0, 1]`` or ``seed`` is not an int.

    Example:
        >>> from envharness import load_bridge
        >>> env = load_bridge("toy24", task_id="4-4-10-10")
        >>> policy = OraclePolicy(skill=1.0, seed=0)
        >>> observation, _ = env.reset(seed=0)
        >>> policy.start(env.instruction, env.tools())
        >>> policy.attach(env)
        >>> for _ in range(3):
        ...     result = env.step(policy.act(observation))
        ...     observation = result.observation
        >>> result.terminated
        True
    """

    def __init__(self, skill: float = 1.0, seed: int = 0) -> None:
        self.skill = _check_skill(skill)
        self.seed = _check_seed(seed)
        self._rng = random.Random(seed)
        self._random = RandomPolicy(self._rng.getrandbits(32))
        self._env: ActionableEnv | None = None
        self._tools: list[ToolSpec] | None = None
        self._forget()

    def _forget(self) -> None:
        """Clears the episode's memory: turn count, blocked moves and move counts."""
        self._turn = 0
        self._pending: tuple[str, str] | None = None
        self._blocks: dict[str, int] = {}
        self._set_aside_until: dict[str, int] = {}
        self.oracle_moves = 0
        self.random_moves = 0

    def attach(self, env: ActionableEnv) -> None:
        """Gives the policy the episode's environment (the full harness stack), after reset.

        Raises:
            PolicyError: If ``env`` is not an :class:`~envharness.core.ActionableEnv`.
        """
        if not isinstance(env, ActionableEnv):
            raise PolicyError(f"attach: expected an ActionableEnv, got {type(env).__name__}")
        self._env = env
        self._pending = None

    def start(self, instruction: str, tools: Sequence[ToolSpec]) -> None:
        """Remembers the tools and clears the memory of the previous episode."""
        self._tools = _check_tools(tools, "OraclePolicy")
        self._random.start(instruction, self._tools)
        self._forget()

    def act(self, observation: str) -> Action:
        """The oracle's next move with probability ``skill``, else a random one.

        Raises:
            PolicyError: Before :meth:`attach` or :meth:`start`, or if the env has no oracle.
        """
        env = self._env
        if env is None:
            raise PolicyError(
                "OraclePolicy is not attached to an environment: the rollout loop must call "
                "policy.attach(env) right after env.reset() (it does for any policy with attach)"
            )
        if self._tools is None:
            raise PolicyError("call start() before act(): the policy needs the tools")
        self._turn += 1
        state = _state_key(env)
        if self._pending is not None:
            before, move = self._pending
            if before == state:  # the move changed nothing: a rule blocked it
                blocks = self._blocks[move] = self._blocks.get(move, 0) + 1
                self._set_aside_until[move] = self._turn + 2 ** (blocks - 1) - 1
            self._pending = None
        action = self._oracle_move(env) if self._rng.random() < self.skill else None
        if action is not None and not self._set_aside(action):
            self._pending = (state, action.key())
            self.oracle_moves += 1
            return action
        self.random_moves += 1
        return self._random_move(observation)

    def _set_aside(self, action: Action) -> bool:
        return self._set_aside_until.get(action.key(), 0) >= self._turn

    def _oracle_move(self, env: ActionableEnv) -> Action | None:
        try:
            plan = env.oracle_actions()
        except BridgeError as e:
            raise PolicyError(f"OraclePolicy needs an environment with an oracle: {e}") from e
        if plan:
            return Action.from_dict(plan[0])
        for tool in self._tools or ():
            if tool.name == "undo" and not tool.check({}):
                return Action("undo", {})
        return None

    def _random_move(self, observation: str) -> Action:
        action = self._random.act(observation)
        for _ in range(_RANDOM_RETRIES):
            if not self._set_aside(action):
                break
            action = self._random.act(observation)
        return action

    def describe(self) -> str:
        """``"oracle:<skill>"``, e.g. ``"oracle:0.5"``."""
        return f"oracle:{self.skill:g}"


@dataclass(frozen=True)
class OraclePolicyFactory:
    """Makes ``OraclePolicy(skill, seed)`` per episode; picklable.

    Attributes:
        skill: The probability of playing the oracle's move, in ``[0, 1]``.

    Example:
        >>> OraclePolicyFactory(0.5)(seed=1).describe()
        'oracle:0.5'
    """

    skill: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "skill", _check_skill(self.skill))

    def __call__(self, seed: int) -> OraclePolicy:
        """``OraclePolicy(skill, seed)``."""
        return OraclePolicy(self.skill, seed)

    def describe(self) -> str:
        """``"oracle:<skill>"``."""
        return f"oracle:{self.skill:g}"
