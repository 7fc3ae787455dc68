"""``HarnessGymEnv``: the ``gymnasium.Env`` over a :class:`~envharness.gym.TextActionSession`.

Private: import it from :mod:`envharness.gym`, which documents the interface.
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata
from collections.abc import Sequence
from typing import Any

import gymnasium
from gymnasium import spaces

from envharness._gym_session import RewardMode, TextActionSession, _as_spec
from envharness.core import ActionableEnv
from envharness.errors import EpisodeError, InvalidActionError, SpecError
from envharness.harness.spec import HarnessSpec
from envharness.rollout.loop import MAX_OBSERVATION_CHARS, clip_observation

__all__ = [
    "ACTION_CHARSET",
    "MAX_ACTION_CHARS",
    "OBSERVATION_CHARSET",
    "HarnessGymEnv",
    "async_vector_env",
    "to_charset",
]

OBSERVATION_CHARSET = string.printable
"""The characters of an observation: printable ASCII, tab, newlines, form feeds."""

ACTION_CHARSET = string.printable
"""The characters of the action space (what ``action_space.sample()`` draws from)."""

MAX_ACTION_CHARS = 4096
"""The action space's longest text (longer actions are read too; it bounds what is sampled)."""

# envharness.gym.ENV_ID behind the module that registers it, so a fresh worker imports it.
_MAKE_ID = "envharness.gym:envharness/Harness-v0"
_CLIP_MARGIN = 128  # room for clip_observation's "[... N more characters cut ...]" line
_SEED_RANGE = 2**31 - 1
_OUTSIDE = re.compile(f"[^{re.escape(OBSERVATION_CHARSET)}]")
_SPELLED = {
    "\u2026": "...",
    "\u2014": "-",
    "\u2013": "-",
    "\u2212": "-",
    "\u2018": "'",
    "\u2019": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u2022": "*",
    "\u2192": "->",
    "\u2190": "<-",
    "\u00d7": "x",
    "\u00f7": "/",
    "\u2264": "<=",
    "\u2265": ">=",
    "\u2260": "!=",
    "\u00a0": " ",
}


def _spell(match: re.Match[str]) -> str:
    char = match.group(0)
    if char in _SPELLED:
        return _SPELLED[char]
    ascii_form = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode()
    kept = "".join(c for c in ascii_form if c in OBSERVATION_CHARSET)
    return kept or "?"


def to_charset(text: str) -> str:
    """``text`` in :data:`OBSERVATION_CHARSET`: typographic marks spelled out, accents dropped.

    A character with no ASCII form (an ANSI escape, a CJK character) becomes ``?``.

    Example:
        >>> to_charset("Café — 3 × 4 ≥ 12…")
        'Cafe - 3 x 4 >= 12...'
    """
    return _OUTSIDE.sub(_spell, text)


class HarnessGymEnv(gymnasium.Env[str, str]):
    r"""A Gymnasium env over an EnvHarness env: text observations, text tool calls, verifier reward.

    Each step reads the action text as a tool call and plays it through a
    :class:`~envharness.gym.TextActionSession` (the rollout loop's semantics: invalid actions are
    answered with feedback and count as steps, ``info["invalid_action"]`` says why; the step that
    uses the last of ``max_steps`` truncates). Observations are cut to ``max_observation_chars``
    and written in :data:`OBSERVATION_CHARSET` (:func:`to_charset`), so they always lie in
    :attr:`observation_space`.

    The reward comes from the bridges' verifiers only: with ``reward="terminal"`` (default) it is
    0.0 until the step that ends the episode, which gets ``evaluate().score`` (1.0/0.0 for
    pass/fail bridges); ``"success"`` gives 1.0/0.0 from ``evaluate().success`` there;
    ``"step"`` passes the bridge's per-step reward. Harness components (rules code included)
    cannot change it.

    ``info`` after :meth:`reset` holds ``instruction``, ``tools`` (OpenAI function tools from
    :meth:`~envharness.core.ToolSpec.to_openai`), ``task_id``, ``bridge``, ``max_steps``,
    ``seed`` and ``env_info``; after a step, ``step``, ``action``, ``env_info``,
    ``invalid_action`` or ``blocked`` when so, and on the last step ``end_reason``
    (``terminated``, ``truncated``, ``budget`` or ``env_error``), ``evaluation`` (``success``,
    ``score``, ``details``) and ``error`` when the env failed.

    Seeding follows Gymnasium: ``reset(seed=s)`` seeds :attr:`np_random` and plays the env with
    seed ``s`` (the rollout loop's seed ``s``); ``reset()`` draws the env's seed from
    :attr:`np_random`, so a seeded sequence of resets repeats.

    Args:
        env: The env: an ``ActionableEnv``, a ``HarnessSpec``, spec JSON, a spec dict or a path
            to a spec file. Give it here or as ``spec``.
        spec: The same, by keyword (``gymnasium.make(ENV_ID, spec=...)``).
        reward: ``"terminal"``, ``"success"`` or ``"step"``.
        max_steps: The agent's step budget per episode; the env's ``max_steps`` by default.
        max_observation_chars: Observations are cut to this many characters (plus a line
            saying so); the observation space's ``max_length`` leaves room for that line.
        max_action_chars: The action space's ``max_length``.
        render_mode: ``"ansi"`` (:meth:`render` returns the last observation) or ``None``.

    Raises:
        SpecError: If an argument is wrong or the spec does not build.
        BridgeError: If the spec's bridge or task cannot be loaded.

    Example:
        >>> spec = {"envharness_spec": 1, "bridge": {"name": "toy24", "task_id": "4-4-10-10"}}
        >>> env = HarnessGymEnv(spec=spec)
        >>> observation, info = env.reset(seed=0)
        >>> info["tools"][0]["function"]["name"]
        'combine'
        >>> observation, reward, terminated, truncated, info = env.step("combine 10 * 10")
        >>> reward, terminated, info["step"]
        (0.0, False, 1)
        >>> print(env.step("multiply 100 by 4")[0])  # invalid: feedback, and the step counts
        Error: unknown tool 'multiply'; tools: combine <a> <op> <b> | undo. Nothing changed.
        Now: Numbers left: 4 4 100 Last: 10 * 10 = 100
        >>> env.close()
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        env: Any = None,
        *,
        spec: Any = None,
        reward: RewardMode = "terminal",
        max_steps: int | None = None,
        max_observation_chars: int = MAX_OBSERVATION_CHARS,
        max_action_chars: int = MAX_ACTION_CHARS,
        render_mode: str | None = None,
    ) -> None:
        if (env is None) == (spec is None):
            got = "both" if env is not None else "neither"
            raise SpecError(
                "expected exactly one of env= or spec= (an ActionableEnv, a HarnessSpec, spec "
                f"JSON, a spec dict or a spec file path), got {got}"
            )
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise SpecError(f"expected render_mode 'ansi' or None, got {render_mode!r}")
        if isinstance(max_action_chars, bool) or not isinstance(max_action_chars, int):
            raise SpecError(f"expected max_action_chars to be an int, got {max_action_chars!r}")
        if max_action_chars < 1:
            raise SpecError(f"expected max_action_chars ≥ 1, got {max_action_chars}")
        self.session = TextActionSession(
            env if env is not None else spec,
            reward=reward,
            max_steps=max_steps,
            max_observation_chars=max_observation_chars,
        )
        self.render_mode = render_mode
        self._limit = self.session.max_observation_chars
        self.observation_space = spaces.Text(
            self._limit + _CLIP_MARGIN, min_length=0, charset=OBSERVATION_CHARSET
        )
        self.action_space = spaces.Text(max_action_chars, min_length=0, charset=ACTION_CHARSET)
        self._last_observation: str | None = None
        self._closed = False

    @property
    def harness_env(self) -> Any:
        """The :class:`~envharness.core.ActionableEnv` this env plays (a bridge or a stack)."""
        return self.session.env

    def _shown(self, observation: str) -> str:
        text = to_charset(observation)
        if len(text) > self._limit:
            text = clip_observation(text, self._limit)
        self._last_observation = text
        return text

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Starts an episode; ``options`` takes no keys (an empty dict or ``None``).

        Raises:
            EpisodeError: If ``options`` holds keys, or the env is closed.
        """
        if options:
            raise EpisodeError(
                f"reset() takes no options, got {sorted(map(str, options))}; the task and its "
                "harness come from the spec (make one env per spec)"
            )
        if self._closed:
            raise EpisodeError("this HarnessGymEnv is closed; make a new one")
        super().reset(seed=seed)
        env_seed = seed if seed is not None else int(self.np_random.integers(0, _SEED_RANGE))
        observation, info = self.session.reset(seed=env_seed)
        return self._shown(observation), info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Plays one text action (see the class docstring for what ``info`` holds).

        Raises:
            InvalidActionError: If ``action`` is not a str (outside the action space: nothing is
                stepped).
            EpisodeError: Before :meth:`reset`, or after the episode ended.
        """
        if not isinstance(action, str):
            raise InvalidActionError(
                "expected the action as a str from the Text action space (a tool call written "
                f"as text, e.g. 'tool arg=value' or a JSON call), got {type(action).__name__}"
            )
        result = self.session.step(str(action))
        observation, reward, terminated, truncated, info = result.as_tuple()
        return self._shown(observation), float(reward), bool(terminated), bool(truncated), info

    def render(self) -> str | None:
        """The last observation in ``"ansi"`` mode (``""`` before the first reset), else None."""
        if self.render_mode != "ansi":
            return None
        return "" if self._last_observation is None else self._last_observation

    def close(self) -> None:
        """Closes the env below (idempotent)."""
        if not self._closed:
            self._closed = True
            self.session.close()
        super().close()

    def __repr__(self) -> str:
        return f"<HarnessGymEnv {self.session.env!r}>"


def _spec_json(source: Any) -> str:
    if isinstance(source, ActionableEnv):
        return HarnessSpec.from_env(source).to_json(indent=None)
    return _as_spec(source).to_json(indent=None)


def async_vector_env(
    specs: Sequence[Any],
    *,
    context: str | None = "spawn",
    daemon: bool = True,
    **env_kwargs: Any,
) -> gymnasium.vector.AsyncVectorEnv:
    """A ``gymnasium.vector.AsyncVectorEnv`` with one :class:`HarnessGymEnv` per spec.

    Each worker builds its env from the spec's JSON (``gymnasium.make`` of
    ``"envharness.gym:envharness/Harness-v0"``, which imports and registers this module in the
    worker), so nothing live crosses the process boundary. Shared memory is off: Gymnasium reads
    ``Text`` observations from shared memory once, when the vector env is made, so with it on
    every observation would read as that first, empty buffer.

    Args:
        specs: One entry per sub-env: an ``ActionableEnv`` (its spec is used; the env itself
            stays here, and its caller closes it), a ``HarnessSpec``, spec JSON, a spec dict or
            a spec file path.
        context: The ``multiprocessing`` start method: ``"spawn"`` (default) or
            ``"forkserver"`` are safe with the rules sandbox's processes; ``"fork"`` is not
            recommended in a process that runs threads.
        daemon: Whether the workers are daemon processes.
        **env_kwargs: Passed to every :class:`HarnessGymEnv` (``reward``, ``max_steps`` ...).

    Returns:
        The vector env; its observations are a tuple of str, its actions a tuple of str.

    Raises:
        SpecError: If ``specs`` is empty or an entry is not a valid spec.
    """
    if isinstance(specs, str | bytes) or not isinstance(specs, Sequence) or not specs:
        raise SpecError(f"expected a non-empty list of specs, got {specs!r:.80}")
    texts = [_spec_json(source) for source in specs]
    env_fns = [
        functools.partial(gymnasium.make, _MAKE_ID, spec=text, **env_kwargs) for text in texts
    ]
    return gymnasium.vector.AsyncVectorEnv(
        env_fns, shared_memory=False, context=context, daemon=daemon
    )
