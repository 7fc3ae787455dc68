"""``RandomPolicy``: random tool calls that fit the schemas, drawn from what the agent sees."""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from envharness.core import Action, ToolSpec
from envharness.errors import PolicyError
from envharness.rollout.policies._common import _check_seed, _check_tools

__all__ = ["RandomPolicy", "RandomPolicyFactory"]

_NUMBER_TOKEN = re.compile(r"(?<![\w/.])-?\d+(?:/\d+|\.\d+)?(?![\w/])")
_WORD_TOKEN = re.compile(r"[A-Za-z_][\w'-]*")
_MAX_DEPTH = 4


def _tokens(observation: str) -> tuple[list[str], list[str]]:
    """The distinct numbers and words of ``observation``, in order of appearance."""
    numbers = list(dict.fromkeys(_NUMBER_TOKEN.findall(observation)))
    words = list(dict.fromkeys(_WORD_TOKEN.findall(observation)))
    return numbers, words


def _bounds(schema: Mapping[str, Any], width: float) -> tuple[float, float]:
    """The ``[minimum, maximum]`` range of a numeric schema, ``width`` wide when open."""
    low, high = schema.get("minimum"), schema.get("maximum")
    has_low, has_high = isinstance(low, int | float), isinstance(high, int | float)
    if has_low and has_high:
        return float(low), max(float(low), float(high))
    if has_low:
        return float(low), float(low) + width
    if has_high:
        return float(high) - width, float(high)
    return 0.0, width


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
