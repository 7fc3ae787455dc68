"""``check_bridge``: the conformance suite every bridge and every harness stack must pass."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from envharness.core import Action, ActionableEnv, Evaluation, StepResult, ToolSpec
from envharness.errors import (
    BridgeError,
    ConformanceError,
    InvalidActionError,
)
from envharness.schema import gemini_schema_problems

__all__ = ["CHECKS", "ConformanceReport", "check_bridge"]


CHECKS: tuple[str, ...] = (
    "attributes",
    "tools",
    "reset",
    "observe",
    "step",
    "unknown_tool",
    "evaluate",
    "env_state",
    "env_state_copy",
    "env_state_schema",
    "determinism",
    "save_state",
    "close",
)
"""The names of the conformance checks; failures are listed in this order."""

_MAX_ORACLE_ACTIONS = 64
_SYNTHETIC_ACTIONS = 4
_PROBE = "__conformance_probe__"
_JSON_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


@dataclass(frozen=True)
class ConformanceReport:
    """What :func:`check_bridge` found when every check passed.

    Attributes:
        bridge: The bridge's name (or the env's class name when it has none).
        passed: The names of the checks that ran, all passed (see :data:`CHECKS`).
        actions: The action sequence that was played.
        seed: The seed every episode was reset with.
    """

    bridge: str
    passed: tuple[str, ...]
    actions: tuple[Action, ...]
    seed: int | None = 0

    def __str__(self) -> str:
        played = ", ".join(str(a) for a in self.actions) or "no actions"
        return (
            f"bridge {self.bridge!r} passed {len(self.passed)} conformance checks "
            f"({', '.join(self.passed)}) playing: {played}"
        )


def _is_finite_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _sample_value(schema: Mapping[str, Any]) -> Any:
    """A deterministic value that fits ``schema`` (first enum value, ``"1"``, 1, True, ...)."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: _sample_value(properties[name]) for name in schema.get("required", [])}
    return {"string": "1", "integer": 1, "number": 1, "boolean": True, "array": []}.get(kind, "1")


def _synthesize_actions(tools: Sequence[ToolSpec]) -> list[Action]:
    """A few actions, one per tool in turn, with arguments sampled from the schemas."""
    if not tools:
        return []
    per_tool = [Action(tool.name, _sample_value(tool.parameters)) for tool in tools]
    count = max(_SYNTHETIC_ACTIONS, min(len(per_tool), 2 * _SYNTHETIC_ACTIONS))
    return [per_tool[i % len(per_tool)] for i in range(count)]


def _deep_mutate(value: Any) -> None:
    """Adds a probe to every dict and list inside ``value``, in place."""
    if isinstance(value, dict):
        for item in list(value.values()):
            _deep_mutate(item)
        value[_PROBE] = _PROBE
    elif isinstance(value, list):
        for item in value:
            _deep_mutate(item)
        value.append(_PROBE)


def _outcome(result: Any) -> tuple[Any, ...]:
    """The comparable part of a step result (everything except ``info``)."""
    return tuple(result[:4]) if isinstance(result, tuple) and len(result) == 5 else (result,)


class _Suite:
    """Runs the checks against one env and collects the failures per check."""

    def __init__(self, env: ActionableEnv, seed: int | None) -> None:
        self.env = env
        self.seed = seed
        self.failures: dict[str, list[str]] = {name: [] for name in CHECKS}
        self.tools: list[ToolSpec] = []
        self.mark_at = 0  # the step before which play() calls mark_episode_start (0: never)

    def fail(self, check: str, message: str) -> None:
        self.failures[check].append(message)

    @contextmanager
    def guard(self, check: str, where: str = "") -> Iterator[None]:
        """Records an exception raised inside the block as a failure of ``check``."""
        try:
            yield
        except Exception as e:  # a broken bridge may raise anything; report it and go on
            self.fail(check, f"{where}raised {type(e).__name__}: {e}")

    def messages(self) -> list[str]:
        return [f"{check}: {msg}" for check in CHECKS for msg in self.failures[check]]

    # -- static checks ---------------------------------------------------------------------

    def check_attributes(self) -> None:
        env = self.env
        with self.guard("attributes"):
            for name in ("task_id", "instruction"):
                value = getattr(env, name)
                if not isinstance(value, str):
                    self.fail("attributes", f"expected {name} to be a str, got {_short(value)}")
            if not env.task_id:
                self.fail("attributes", "expected a non-empty task_id, got ''")
            steps = env.max_steps
            if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
                self.fail(
                    "attributes", f"expected max_steps to be a positive int, got {_short(steps)}"
                )
            if not isinstance(env.bridge_name, str):
                self.fail(
                    "attributes", f"expected bridge_name to be a str, got {_short(env.bridge_name)}"
                )

    def check_tools(self) -> None:
        with self.guard("tools", "tools() "):
            tools = self.env.tools()
            if not isinstance(tools, list | tuple):
                self.fail("tools", f"expected tools() to return a list, got {type(tools).__name__}")
                return
            if not tools:
                self.fail("tools", "expected at least one tool, got an empty list")
            good: list[ToolSpec] = []
            for tool in tools:
                if not isinstance(tool, ToolSpec):
                    self.fail("tools", f"expected ToolSpec items, got {type(tool).__name__}")
                    continue
                good.append(tool)
                for problem in gemini_schema_problems(tool.parameters, f"{tool.name}.parameters"):
                    self.fail("tools", f"schema outside the Gemini subset: {problem}")
                try:
                    json.dumps(tool.to_openai(), allow_nan=False)
                except (TypeError, ValueError) as e:
                    self.fail("tools", f"expected {tool.name}.to_openai() to be JSON-able, got {e}")
            names = [tool.name for tool in good]
            duplicates = sorted({n for n in names if names.count(n) > 1})
            if duplicates:
                self.fail("tools", f"expected unique tool names, got duplicates {duplicates}")
            self.tools = good

    # -- episode checks ----------------------------------------------------------------------

    def check_reset(self) -> None:
        with self.guard("reset", f"reset(seed={self.seed}) "):
            out = self.env.reset(seed=self.seed)
            if not (isinstance(out, tuple) and len(out) == 2):
                self.fail("reset", f"expected reset() to return (str, dict), got {_short(out)}")
                return
            observation, info = out
            if not isinstance(observation, str):
                self.fail("reset", f"expected a str observation, got {type(observation).__name__}")
            if not isinstance(info, dict):
                self.fail("reset", f"expected a dict info, got {type(info).__name__}")
            self.check_observe(observation, "after reset")

    def check_observe(self, expected: Any, where: str) -> None:
        """Right after reset, ``observe()`` is the reset observation."""
        with self.guard("observe", f"observe() {where} "):
            got = self.env.observe()
            if got != expected:
                self.fail(
                    "observe",
                    f"expected observe() {where} to equal the reset observation "
                    f"{_short(expected)}, got {_short(got)}",
                )

    def check_observe_changes_nothing(self, where: str) -> None:
        """Later, ``observe()`` describes the state: a str, the same twice, the state unchanged."""
        with self.guard("observe", f"observe() {where} "):
            before = self.safe_state()
            got = self.env.observe()
            again = self.env.observe()
            if not isinstance(got, str):
                self.fail(
                    "observe", f"expected observe() {where} to return a str, got {_short(got)}"
                )
            elif got != again:
                self.fail(
                    "observe",
                    f"expected observe() {where} to describe the state the same way twice, got "
                    f"{_short(got)} then {_short(again)}",
                )
            after = self.safe_state()
            if after != before:
                self.fail(
                    "observe",
                    f"expected observe() {where} to change nothing; get_env_state() went from "
                    f"{_short(before)} to {_short(after)}",
                )

    def check_step_result(self, result: Any, where: str) -> bool:
        """Checks a step's return value; returns whether it can be read as a 5-tuple."""
        if not isinstance(result, StepResult):
            self.fail("step", f"{where}: expected a StepResult, got {_short(result)}")
            return isinstance(result, tuple) and len(result) == 5
        observation, reward, terminated, truncated, info = result
        if not isinstance(observation, str):
            self.fail(
                "step", f"{where}: expected a str observation, got {type(observation).__name__}"
            )
        if not _is_finite_number(reward):
            self.fail("step", f"{where}: expected a finite float reward, got {_short(reward)}")
        for name, flag in (("terminated", terminated), ("truncated", truncated)):
            if not isinstance(flag, bool):
                self.fail("step", f"{where}: expected {name} to be a bool, got {_short(flag)}")
        if not isinstance(info, dict):
            self.fail("step", f"{where}: expected a dict info, got {type(info).__name__}")
        return True

    def check_unknown_tool(self) -> None:
        names = {tool.name for tool in self.tools}
        name = "no_such_tool"
        while name in names:
            name += "_"
        with self.guard("unknown_tool"):
            before = self.env.get_env_state()
            try:
                self.env.step(Action(name, {}))
            except InvalidActionError:
                pass
            except Exception as e:
                self.fail(
                    "unknown_tool",
                    f"expected step({name}()) to raise InvalidActionError, "
                    f"got {type(e).__name__}: {e}",
                )
                return
            else:
                self.fail("unknown_tool", f"expected step({name}()) to raise InvalidActionError")
            after = self.env.get_env_state()
            if after != before:
                self.fail(
                    "unknown_tool",
                    f"expected a rejected action to leave the state unchanged, "
                    f"got {_short(before)} -> {_short(after)}",
                )

    def check_evaluate(self, where: str) -> None:
        with self.guard("evaluate", f"{where}: "):
            before = self.env.get_env_state()
            first = self.env.evaluate()
            second = self.env.evaluate()
            after = self.env.get_env_state()
            if not isinstance(first, Evaluation):
                self.fail("evaluate", f"{where}: expected an Evaluation, got {_short(first)}")
                return
            if not isinstance(first.success, bool):
                self.fail(
                    "evaluate", f"{where}: expected a bool success, got {_short(first.success)}"
                )
            score = first.score
            if not _is_finite_number(score):
                self.fail(
                    "evaluate", f"{where}: expected a finite float score, got {_short(score)}"
                )
            try:
                json.dumps(first.details, allow_nan=False)
            except (TypeError, ValueError) as e:
                self.fail("evaluate", f"{where}: expected JSON-able details, got {e}")
            if first != second:
                self.fail(
                    "evaluate",
                    f"{where}: expected two calls to agree, "
                    f"got {_short(first)} then {_short(second)}",
                )
            if before != after:
                self.fail(
                    "evaluate",
                    f"{where}: expected evaluate() to leave the state unchanged, "
                    f"got {_short(before)} -> {_short(after)}",
                )

    def check_env_state(self, where: str) -> None:
        with self.guard("env_state", f"{where}: "):
            state = self.env.get_env_state()
            if not isinstance(state, dict):
                self.fail("env_state", f"{where}: expected a dict, got {type(state).__name__}")
                return
            try:
                json.dumps(state, allow_nan=False)
            except (TypeError, ValueError) as e:
                self.fail(
                    "env_state", f"{where}: expected get_env_state() to be JSON-able, got {e}"
                )
        with self.guard("env_state_schema", f"{where}: "):
            self.check_schema(self.env.env_state_schema(), self.env.get_env_state(), where)
        with self.guard("env_state_copy", f"{where}: "):
            first = self.env.get_env_state()
            snapshot = copy.deepcopy(first)
            _deep_mutate(first)
            again = self.env.get_env_state()
            if again != snapshot:
                self.fail(
                    "env_state_copy",
                    f"{where}: expected get_env_state() to return a fresh copy, but mutating it "
                    f"changed the next call: {_short(snapshot)} -> {_short(again)}",
                )

    def check_schema(self, schema: Any, state: Any, where: str) -> None:
        if not isinstance(schema, dict) or schema.get("type") != "object":
            self.fail("env_state_schema", f"expected a JSON-Schema object, got {_short(schema)}")
            return
        try:
            json.dumps(schema, allow_nan=False)
        except (TypeError, ValueError) as e:
            self.fail("env_state_schema", f"expected a JSON-able schema, got {e}")
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            self.fail(
                "env_state_schema", f"expected 'properties' to be a dict, got {_short(properties)}"
            )
            return
        if not isinstance(state, dict):
            return
        undeclared = sorted(set(state) - set(properties))
        if undeclared:
            self.fail(
                "env_state_schema",
                f"{where}: expected every state key in the schema's properties, "
                f"got undeclared {undeclared}",
            )
        for key, value in state.items():
            declared = properties.get(key, {})
            kinds = declared.get("type") if isinstance(declared, dict) else None
            kinds = [kinds] if isinstance(kinds, str) else kinds
            if not isinstance(kinds, list) or not all(k in _JSON_TYPE_CHECKS for k in kinds):
                continue
            if declared.get("nullable") is True:  # the OpenAPI/Gemini spelling of "or null"
                kinds = [*kinds, "null"]
            if not any(_JSON_TYPE_CHECKS[k](value) for k in kinds):
                self.fail(
                    "env_state_schema",
                    f"{where}: expected state[{key!r}] of type {'|'.join(kinds)}, "
                    f"got {type(value).__name__}",
                )

    def restore_clones(self, where: str) -> list[tuple[str, ActionableEnv]]:
        """Builds envs from ``save_state()`` (as is and JSON round-tripped) and compares them."""
        clones: list[tuple[str, ActionableEnv]] = []
        try:
            saved = self.env.save_state()
        except Exception as e:  # a broken bridge may raise anything
            self.fail("save_state", f"{where}: save_state() raised {type(e).__name__}: {e}")
            return clones
        try:
            round_trip = json.loads(json.dumps(saved, allow_nan=False))
        except (TypeError, ValueError) as e:
            self.fail("save_state", f"{where}: expected save_state() to be JSON-able, got {e}")
            round_trip = None
        variants = [("from_state(save_state())", saved)]
        if round_trip is not None:
            variants.append(("from_state(json round trip)", round_trip))
        for label, state in variants:
            with self.guard("save_state", f"{where}: {label} "):
                clone = type(self.env).from_state(state)
                clones.append((label, clone))
                if not isinstance(clone, ActionableEnv):
                    self.fail(
                        "save_state",
                        f"{where}: {label}: expected an ActionableEnv, got {_short(clone)}",
                    )
                    continue
                expected, got = self.env.get_env_state(), clone.get_env_state()
                if got != expected:
                    self.fail(
                        "save_state",
                        f"{where}: {label}: expected get_env_state() {_short(expected)}, "
                        f"got {_short(got)}",
                    )
                expected, got = self.env.observe(), clone.observe()
                if got != expected:
                    self.fail(
                        "save_state",
                        f"{where}: {label}: expected observe() {_short(expected)}, "
                        f"got {_short(got)}",
                    )
        return clones

    def compare_clone_steps(
        self, clones: list[tuple[str, ActionableEnv]], action: Action, result: Any, where: str
    ) -> None:
        for label, clone in clones:
            if not isinstance(clone, ActionableEnv):
                continue
            with self.guard("save_state", f"{where}: {label} then step({action}) "):
                got = clone.step(action)
                if _outcome(got) != _outcome(result):
                    self.fail(
                        "save_state",
                        f"{where}: {label} then step({action}): "
                        f"expected {_short(_outcome(result))}, got {_short(_outcome(got))}",
                    )
                expected_state, got_state = self.env.get_env_state(), clone.get_env_state()
                if got_state != expected_state:
                    self.fail(
                        "save_state",
                        f"{where}: {label} then step({action}): expected state "
                        f"{_short(expected_state)}, got {_short(got_state)}",
                    )

    def close_all(self, clones: list[tuple[str, ActionableEnv]]) -> None:
        for label, clone in clones:
            with self.guard("close", f"closing the env built by {label} "):
                clone.close()

    def safe_state(self) -> Any:
        """A snapshot of the state for a trace (a deep copy, in case the env hands out its own)."""
        try:
            return copy.deepcopy(self.env.get_env_state())
        except Exception as e:  # reported by the env_state check; here it is part of the trace
            return ("raised", type(e).__name__, str(e))

    def step_once(
        self, action: Action, where: str, clones: list[tuple[str, ActionableEnv]], checked: bool
    ) -> tuple[Any, ...]:
        """Steps the env once; returns the trace entry (``("step", ...)`` when it went well)."""
        try:
            result = self.env.step(action)
        except Exception as e:  # a broken bridge may raise anything
            if checked:
                self.fail("step", f"{where}: raised {type(e).__name__}: {e}")
            return ("raised", type(e).__name__, str(e))
        readable = self.check_step_result(result, where) if checked else True
        if not readable or not (isinstance(result, tuple) and len(result) == 5):
            return ("result", _short(result))
        if checked:
            self.check_observe_changes_nothing(f"after {where}")
            self.compare_clone_steps(clones, action, result, f"before {where}")
        return ("step", *_outcome(result), self.safe_state())

    def mark_start(self, where: str, checked: bool) -> None:
        """Calls ``mark_episode_start()`` mid-episode, as ``Setups`` does after its replay.

        The save_state checks that follow then check that the mark survives a restore.
        """
        try:
            self.env.mark_episode_start()
        except Exception as e:  # a broken bridge may raise anything
            if checked:
                self.fail("step", f"mark_episode_start() before {where} raised {e!r}")
            return
        if checked:
            self.check_observe_changes_nothing(f"after mark_episode_start() before {where}")

    def play(self, actions: Sequence[Action], *, checked: bool) -> tuple[list[Any], list[Action]]:
        """Resets and plays ``actions`` until the episode ends.

        Halfway, ``mark_episode_start()`` is called (both plays, so traces stay comparable).
        Returns the trace and the actions tried (including one that raised). With ``checked``,
        also runs the step, observe and save_state checks along the way.
        """
        trace: list[Any] = []
        played: list[Action] = []
        try:
            observation, _ = self.env.reset(seed=self.seed)
        except Exception as e:  # reported by the reset check
            return [("raised", type(e).__name__, str(e))], played
        trace.append(("reset", observation, self.safe_state()))
        if checked:  # the replay marks where the checked play did, whatever its length
            self.mark_at = len(actions) // 2
        middle = self.mark_at
        checkpoints = {0, middle}
        for i, action in enumerate(actions):
            where = f"step {i + 1} {action}"
            if i == middle and i:
                self.mark_start(where, checked)
            clones = self.restore_clones(f"before {where}") if checked and i in checkpoints else []
            played.append(action)
            try:
                entry = self.step_once(action, where, clones, checked)
            finally:
                self.close_all(clones)
            trace.append(entry)
            if entry[0] != "step" or entry[3] or entry[4]:
                break
        if checked:
            self.close_all(self.restore_clones("at the end"))
        return trace, played

    def check_determinism(self, first: list[Any], actions: Sequence[Action]) -> None:
        with self.guard("determinism"):
            second, _ = self.play(actions, checked=False)
            for i, (a, b) in enumerate(zip(first, second, strict=False)):
                if a != b:
                    where = "after reset" if i == 0 else f"at step {i} {actions[i - 1]}"
                    self.fail(
                        "determinism",
                        f"reset(seed={self.seed}) and replay differ {where}: expected {_short(a)}, "
                        f"got {_short(b)}",
                    )
                    return
            if len(first) != len(second):
                self.fail(
                    "determinism",
                    f"expected the replay to last {len(first)} entries, got {len(second)}",
                )

    def choose_actions(self, actions: Sequence[Action | Mapping[str, Any]] | None) -> list[Action]:
        if actions is not None:
            return [Action.from_dict(a) for a in actions]
        try:
            oracle = self.env.oracle_actions()
        except BridgeError:
            oracle = []
        except Exception as e:
            self.fail("step", f"oracle_actions() raised {type(e).__name__}: {e}")
            oracle = []
        if oracle:
            return [Action.from_dict(a) for a in oracle[:_MAX_ORACLE_ACTIONS]]
        return _synthesize_actions(self.tools)

    def run(self, actions: Sequence[Action | Mapping[str, Any]] | None) -> list[Action]:
        """Runs every check but ``close`` on the suite's env; returns the actions played."""
        self.check_attributes()
        self.check_tools()
        self.check_reset()
        sequence = self.choose_actions(actions)
        self.check_env_state("after reset")
        self.check_evaluate("after reset")
        self.check_unknown_tool()
        trace, played = self.play(sequence, checked=True)
        self.check_env_state("at the end")
        self.check_evaluate("at the end")
        self.check_determinism(trace, played)
        return played

    def check_close_on_copy(self) -> None:
        """Checks ``close()`` twice on a ``from_state`` copy (the caller's env stays open).

        When the env cannot be rebuilt, the save_state check has already reported why.
        """
        try:
            clone = type(self.env).from_state(self.env.save_state())
        except Exception:  # reported by the save_state check
            return
        with self.guard("close", "close() twice on a from_state copy "):
            clone.close()
            clone.close()


def _label_of(env_or_factory: Any) -> str:
    name = getattr(env_or_factory, "bridge_name", None)
    if isinstance(name, str) and name:
        return name
    return getattr(env_or_factory, "__name__", None) or type(env_or_factory).__name__


def check_bridge(
    env_or_factory: ActionableEnv | Callable[[], ActionableEnv],
    *,
    actions: Sequence[Action | Mapping[str, Any]] | None = None,
    seed: int | None = 0,
) -> ConformanceReport:
    """Runs the conformance suite on a bridge (or a harness stack) and reports every failure.

    The checks (:data:`CHECKS`): attribute types; the tools (unique names, Gemini-subset schemas,
    JSON-able OpenAI form); ``reset`` returns ``(str, dict)``; ``observe()`` equals the reset
    observation right after reset, and later describes the state (the same twice, changing
    nothing); every step returns a well-typed :class:`~envharness.core.StepResult`; an unknown
    tool raises :class:`~envharness.errors.InvalidActionError` and changes nothing; ``evaluate()``
    is well-typed and stable; ``get_env_state()`` is JSON-able, a deep copy, and declared by
    ``env_state_schema()``; ``reset(seed)`` and a replay give identical observations, rewards,
    flags and states; ``from_state(save_state())`` (also after a JSON round trip) at the start,
    mid-episode and at the end gives an equal env that steps the same; ``close()`` is idempotent.

    The actions played are ``actions`` if given; else the env's ``oracle_actions()`` (up to 64);
    else a few actions synthesised from the tool schemas. Play stops when the episode ends.

    Args:
        env_or_factory: An env, or a zero-argument callable returning a fresh one. An env is
            played (reset and stepped) but not closed; envs the suite builds are closed.
        actions: The actions to play (``Action`` objects or ``{"tool", "args"}`` dicts).
        seed: The seed for every ``reset``.

    Returns:
        The report: the bridge's name, the checks passed, the actions played.

    Raises:
        ConformanceError: Listing every failure, each naming its check and what was expected.

    Example:
        >>> from envharness.testing import FakeEnv
        >>> check_bridge(FakeEnv(), actions=[{"tool": "noop", "args": {}}]).passed[:3]
        ('attributes', 'tools', 'reset')
    """
    if isinstance(env_or_factory, ActionableEnv):
        env, owned = env_or_factory, False
    elif callable(env_or_factory):
        try:
            env = env_or_factory()
        except Exception as e:
            raise ConformanceError(
                _label_of(env_or_factory),
                [f"construct: the factory raised {type(e).__name__}: {e}"],
            ) from e
        if not isinstance(env, ActionableEnv):
            raise ConformanceError(
                _label_of(env_or_factory),
                [f"construct: expected the factory to return an ActionableEnv, got {_short(env)}"],
            )
        owned = True
    else:
        raise ConformanceError(
            _label_of(env_or_factory),
            [
                "construct: expected an ActionableEnv or a zero-argument callable returning one, "
                f"got {type(env_or_factory).__name__}"
            ],
        )
    label = _label_of(env)
    suite = _Suite(env, seed)
    try:
        played = suite.run(actions)
        if not owned:
            suite.check_close_on_copy()
    finally:
        if owned:
            with suite.guard("close", "close() twice "):
                env.close()
                env.close()
    failures = suite.messages()
    if failures:
        raise ConformanceError(label, list(dict.fromkeys(failures)))
    return ConformanceReport(label, CHECKS, tuple(played), seed)
