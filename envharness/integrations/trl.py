"""TRL: EnvHarness specs as an ``environment_factory`` for ``trl.GRPOTrainer``.

TRL (1.x) plays multi-turn episodes through environment objects: for every rollout it takes an
instance from ``environment_factory()``, calls ``reset(**row)`` with the dataset row (the string it
returns is appended to the prompt's last message), offers the instance's public methods to the
model as tools (their schemas read from the signatures and docstrings), runs each tool call the
model makes and shows what the method returns, and scores the rollout with ``get_reward()``.

This module provides both halves:

- :func:`dataset_from_tasks`, :func:`dataset_from_specs` and :func:`dataset_from_run` (a rig's
  ``RUN/accepted/*.json``) make the ``datasets.Dataset``: a conversational ``prompt`` (the task's
  instruction) and a ``spec`` column (the :class:`~envharness.harness.HarnessSpec` as JSON), with
  ``seed``, ``bridge``, ``task_id``, ``spec_id``, ``environment`` and ``tools`` beside them.
- :func:`environment_factory` returns an :class:`EnvironmentFactory`; what it makes is a
  :class:`HarnessEnvironment`: ``reset`` builds the row's spec and resets it with the row's
  seed (returning the first observation), one method per bridge tool is generated from the
  tool's :class:`~envharness.core.ToolSpec` (so ``transformers.utils.get_json_schema`` reads back
  the tool's parameters), and ``get_reward`` is the score of the sealed verifier,
  ``env.evaluate().score``, and nothing else.

A tool method returns the observation text. Calls are played by
:class:`~envharness._gym_session.TextActionSession` (the step logic ``envharness.gym`` shares),
so they mean what they mean in :func:`~envharness.rollout.rollout`: a call whose arguments do not
fit the schema is answered with :func:`~envharness.rollout.loop.invalid_action_feedback`, a move
the env rejects with its reason, and every call, invalid ones included, uses one step of the
task's budget; calls after the episode ended (solved, truncated, or the budget used up) change
nothing and say so. A call TRL cannot route (an unknown tool, arguments that are not a JSON
object) never reaches the environment: TRL answers it itself, by its convention for a tool that
raises (``{'error': '...'}``). An env that raises while stepping (e.g. failing rules code) ends the
episode, and the method raises :class:`~envharness.errors.EpisodeError` so TRL shows (and counts)
a tool error.

Keep ``GRPOConfig.max_completion_length`` well above the observations' length: TRL runs a tool
call, then drops its answer from the completion when the answer would overflow that length, so
the environment (and so the reward) has seen a call that the trained sequence does not show.

Example:
    >>> from envharness.integrations.trl import dataset_from_tasks, environment_factory
    >>> dataset = dataset_from_tasks("toy24", ["4-4-10-10"])  # doctest: +SKIP
    >>> factory = environment_factory(dataset)  # doctest: +SKIP
    >>> env = factory()  # doctest: +SKIP
    >>> print(env.reset(**dataset[0]).strip())  # doctest: +SKIP
    Numbers left: 4 4 10 10
    Start: make 24 from 4 4 10 10.
    >>> print(env.combine(a="10", op="*", b="10"))  # doctest: +SKIP
    Numbers left: 4 4 100
    Last: 10 * 10 = 100
    >>> env.get_reward()  # doctest: +SKIP
    0.0
    >>> # GRPOTrainer(model, train_dataset=dataset, environment_factory=factory, ...)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from envharness._gym_session import TextActionSession
from envharness.core import Action, ActionableEnv, ToolSpec
from envharness.errors import (
    BridgeError,
    DependencyNotInstalled,
    EpisodeError,
    RiggerError,
    SpecError,
)
from envharness.harness.spec import HarnessSpec
from envharness.integrations._tool_methods import expressed_parameters, tool_method
from envharness.rollout.loop import MAX_OBSERVATION_CHARS

if TYPE_CHECKING:
    from datasets import Dataset

__all__ = [
    "EnvironmentFactory",
    "HarnessEnvironment",
    "dataset_from_run",
    "dataset_from_specs",
    "dataset_from_tasks",
    "environment_factory",
]

_EXTRA = "trl"
_RESERVED = frozenset({"reset", "get_reward"})


def _datasets() -> Any:
    try:
        import datasets
    except ImportError as e:
        raise DependencyNotInstalled("datasets", _EXTRA, purpose="TRL training datasets") from e
    return datasets


# -- the environment -----------------------------------------------------------------------------


class HarnessEnvironment:
    """One TRL environment instance: plays the spec of whatever row it is reset with.

    Subclasses made by :class:`EnvironmentFactory` add one public method per bridge tool; every
    other name here is private or a property, because TRL offers every public method of the class
    (other than ``reset`` and ``get_reward``) to the model as a tool.

    Example:
        >>> from envharness import load_bridge
        >>> bridge = load_bridge("toy24", task_id="4-4-10-10")
        >>> env = EnvironmentFactory(tuple(bridge.tools()))()
        >>> print(env.reset(spec=HarnessSpec.from_env(bridge).to_json(), seed=0).strip())
        Numbers left: 4 4 10 10
        Start: make 24 from 4 4 10 10.
        >>> print(env.combine(a="10", op="*", b="10"))
        Numbers left: 4 4 100
        Last: 10 * 10 = 100
        >>> env.get_reward()
        0.0

    Attributes:
        tool_specs: The bridge tools this class exposes (set by the factory).
        max_observation_chars: Observations longer than this are cut, as the rollout loop cuts
            them.
    """

    tool_specs: ClassVar[tuple[ToolSpec, ...]] = ()
    max_observation_chars: ClassVar[int] = MAX_OBSERVATION_CHARS

    def __init__(self) -> None:
        self._session: TextActionSession | None = None
        self._spec: HarnessSpec | None = None

    # -- what TRL calls --------------------------------------------------------------------------

    def reset(self, **row: Any) -> str:
        """Builds the row's spec, resets it with the row's seed, and returns the observation.

        Args:
            **row: The dataset row: ``spec`` (a HarnessSpec as JSON text or a dict) and
                optionally ``seed`` (an int); other columns are ignored.

        Returns:
            The first observation, after a blank line (TRL appends it to the prompt).

        Raises:
            SpecError: If the row has no usable ``spec``, the spec does not build, or its tools
                are not the ones this class exposes.
            BridgeError: If the bridge or task cannot be loaded.
        """
        spec = _row_spec(row)
        seed = _row_seed(row)
        self._close()
        try:
            env = spec.build()
        except Exception as e:
            e.add_note(
                f"while resetting {type(self).__name__} for the row's spec {spec.spec_id} "
                f"(bridge {spec.bridge.name!r}, task {spec.bridge.task_id!r})"
            )
            raise
        try:
            self._check_tools(env, spec)
            session = TextActionSession(env, max_observation_chars=self.max_observation_chars)
        except BaseException:
            env.close()
            raise
        try:
            observation, _ = session.reset(seed=seed)
        except BaseException:
            session.close()
            raise
        self._session, self._spec = session, spec
        return "\n\n" + observation

    def get_reward(self) -> float:
        """The score of the bridge's own verifier for this episode (``env.evaluate().score``).

        Raises:
            EpisodeError: Before :meth:`reset`.
        """
        return float(self._running().env.evaluate().score)

    # -- read-only views (properties, so TRL does not offer them as tools) ------------------------

    @property
    def env(self) -> ActionableEnv | None:
        """The env the current row's spec built, or ``None`` before :meth:`reset`."""
        return None if self._session is None else self._session.env

    @property
    def spec(self) -> HarnessSpec | None:
        """The current row's spec, or ``None`` before :meth:`reset`."""
        return self._spec

    @property
    def steps(self) -> int:
        """Tool calls counted against the step budget this episode (invalid ones included)."""
        return 0 if self._session is None else self._session.steps_taken

    @property
    def ended(self) -> str | None:
        """Why the episode is over (``terminated``, ``truncated``, ``budget``, ``env_error``)."""
        return None if self._session is None else self._session.end_reason

    # -- machinery --------------------------------------------------------------------------------

    def _running(self) -> TextActionSession:
        if self._session is None:
            raise EpisodeError(
                f"{type(self).__name__}: no episode is running; call reset(**row) with a row "
                "that has a 'spec' column first (GRPOTrainer does this before each rollout)"
            )
        return self._session

    def _check_tools(self, env: ActionableEnv, spec: HarnessSpec) -> None:
        have = {t.name: t.to_dict() for t in env.tools()}
        want = {t.name: t.to_dict() for t in self.tool_specs}
        if have != want:
            raise SpecError(
                f"the row's spec {spec.spec_id} (bridge {spec.bridge.name!r}) offers the tools "
                f"{sorted(have)}, but {type(self).__name__} was made for {sorted(want)} (or the "
                "same names with other schemas); TRL fixes an environment's tools when the "
                "trainer is built. Make the factory from this dataset (environment_factory("
                "dataset) returns one factory per tool set, keyed by the 'environment' column)"
            )

    def _call(self, tool: str, arguments: dict[str, Any]) -> str:
        """Plays one tool call (rollout-loop semantics) and returns what the model sees.

        Raises:
            EpisodeError: If the env failed on this call (TRL shows the error as the answer).
        """
        session = self._running()
        if session.done:
            return self._over_message(session)
        step = session.step(Action(tool, dict(arguments)))
        if session.end_reason == "env_error":
            raise EpisodeError(
                f"the environment failed on {tool}: {step.info.get('error')}; the episode is over"
            )
        return step.observation

    @staticmethod
    def _over_message(session: TextActionSession) -> str:
        why = {
            "terminated": "the task ended",
            "truncated": "the environment cut it short",
            "budget": f"the step budget of {session.budget} calls is used up",
            "env_error": "the environment failed",
        }.get(session.end_reason or "", str(session.end_reason))
        return f"Error: the episode is over ({why}). Nothing changed."

    def _close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            session.close()

    def __del__(self) -> None:
        try:
            self._close()
        except Exception:  # an interpreter shutting down may have torn the env's parts down
            pass

    def __repr__(self) -> str:
        return f"<{type(self).__name__} env={self.env!r}>"


def _row_spec(row: Mapping[str, Any]) -> HarnessSpec:
    if "spec" not in row:
        columns = ", ".join(sorted(map(str, row))) or "none"
        raise SpecError(
            f"the dataset row has no 'spec' column (columns: {columns}); build the dataset with "
            "dataset_from_tasks, dataset_from_specs or dataset_from_run"
        )
    value = row["spec"]
    if isinstance(value, HarnessSpec):
        return value
    if isinstance(value, str):
        return HarnessSpec.from_json(value)
    if isinstance(value, Mapping):
        return HarnessSpec.from_dict(value)
    raise SpecError(
        f"expected the row's 'spec' to be a HarnessSpec as JSON text or a dict, got "
        f"{type(value).__name__}"
    )


def _row_seed(row: Mapping[str, Any]) -> int | None:
    seed = row.get("seed")
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise SpecError(f"expected the row's 'seed' to be an int or None, got {seed!r}")
    return seed


# -- the factory ----------------------------------------------------------------------------------


def _check_tool_names(tools: Sequence[ToolSpec]) -> None:
    seen: set[str] = set()
    for tool in tools:
        if not isinstance(tool, ToolSpec):
            raise TypeError(f"expected ToolSpec objects, got {type(tool).__name__}")
        if tool.name in seen:
            raise BridgeError(f"two tools are named {tool.name!r}; TRL needs distinct names")
        seen.add(tool.name)
        taken = hasattr(HarnessEnvironment, tool.name)
        if tool.name in _RESERVED or tool.name.startswith("_") or taken:
            raise BridgeError(
                f"the tool name {tool.name!r} cannot be a TRL environment method: TRL reserves "
                "'reset' and 'get_reward' and skips names starting with '_', and "
                f"{HarnessEnvironment.__name__} uses the others itself; rename the tool"
            )


def _check_round_trip(tool: ToolSpec, method: Any) -> None:
    """Checks that ``get_json_schema`` reads the intended schema back, when transformers is here."""
    try:
        from transformers.utils import get_json_schema
    except ImportError:
        return
    expected = {
        "name": tool.name,
        "description": tool.description.strip(),
        "parameters": expressed_parameters(tool),
    }
    problem = (
        f"tool {tool.name!r}: its schema does not survive as a method docstring (a description "
        "line that looks like 'Args:' or ends in '(choices: ...)' does this)"
    )
    try:
        got = get_json_schema(method)["function"]
    except Exception as e:
        raise BridgeError(f"{problem}: {e}") from e
    got.pop("return", None)
    if got != expected:
        raise BridgeError(
            f"{problem}; expected {json.dumps(expected, sort_keys=True)}, read back "
            f"{json.dumps(got, sort_keys=True)}"
        )


@lru_cache(maxsize=64)
def _environment_class(tools_json: str, name: str, max_chars: int) -> type:
    tools = tuple(ToolSpec.from_dict(d) for d in json.loads(tools_json))
    _check_tool_names(tools)
    namespace: dict[str, Any] = {
        "__module__": __name__,
        "__qualname__": name,
        "__doc__": f"A TRL environment with the tools {', '.join(t.name for t in tools)}.",
        "tool_specs": tools,
        "max_observation_chars": max_chars,
    }
    for tool in tools:
        method = tool_method(tool, HarnessEnvironment._call)
        _check_round_trip(tool, method)
        namespace[tool.name] = method
    return type(name, (HarnessEnvironment,), namespace)


@dataclass(frozen=True)
class EnvironmentFactory:
    """A zero-argument callable making :class:`HarnessEnvironment` instances with given tools.

    Pass it as ``GRPOTrainer(environment_factory=...)``. It pickles (by its tools), so it also
    suits trainers that ship the factory to worker processes.

    Attributes:
        tools: The bridge tools the environments expose, one method each.
        name: The environment class's name; TRL logs the reward under it
            (``rewards/<name>/mean``).
        max_observation_chars: Observations longer than this are cut (the cut said in the text).

    Example:
        >>> from envharness import load_bridge
        >>> factory = EnvironmentFactory(tuple(load_bridge("toy24", task_id="1-1-4-6").tools()))
        >>> env = factory()
        >>> type(env).__name__, callable(env.combine), callable(env.undo)
        ('HarnessEnv', True, True)
    """

    tools: tuple[ToolSpec, ...]
    name: str = "HarnessEnv"
    max_observation_chars: int = MAX_OBSERVATION_CHARS

    def __post_init__(self) -> None:
        object.__setattr__(self, "tools", tuple(self.tools))
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise TypeError(f"expected the class name to be a Python identifier, got {self.name!r}")
        limit = self.max_observation_chars
        bad = isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        if bad:
            raise ValueError(f"expected max_observation_chars to be a positive int, got {limit!r}")
        _check_tool_names(self.tools)
        _ = self.environment_class  # builds (and checks) the class now, not in the trainer

    @property
    def environment_class(self) -> type[HarnessEnvironment]:
        """The generated :class:`HarnessEnvironment` subclass."""
        tools_json = json.dumps([t.to_dict() for t in self.tools])
        return _environment_class(tools_json, self.name, self.max_observation_chars)

    def __call__(self) -> HarnessEnvironment:
        """A fresh environment instance (TRL pools and resets them)."""
        return self.environment_class()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        dicts = [t.to_dict() for t in self.tools]
        return (_rebuild_factory, (dicts, self.name, self.max_observation_chars))


def _rebuild_factory(tools: list[dict], name: str, limit: int) -> EnvironmentFactory:
    return EnvironmentFactory(tuple(ToolSpec.from_dict(t) for t in tools), name, limit)


def _class_name(key: str) -> str:
    words = "".join(c if c.isalnum() else " " for c in key).split()
    name = "".join(w[:1].upper() + w[1:] for w in words) + "Env"
    return name if name.isidentifier() else f"Harness{name}"


def environment_factory(
    source: Dataset | HarnessSpec | Sequence[ToolSpec],
    *,
    name: str | None = None,
    max_observation_chars: int = MAX_OBSERVATION_CHARS,
) -> EnvironmentFactory | dict[str, EnvironmentFactory]:
    """The ``environment_factory`` for ``GRPOTrainer`` from a dataset, a spec or tool specs.

    Args:
        source: A dataset made by this module's ``dataset_from_*`` helpers (its ``tools`` and
            ``environment`` columns say which tools each row needs), a spec (built once to read
            its tools), or the tools themselves.
        name: The environment class's name (TRL logs the reward as ``rewards/<name>/mean``);
            by default from the ``environment`` column or the bridge, e.g. ``Toy24Env``.
        max_observation_chars: Observations longer than this are cut (the cut said in the text).

    Returns:
        One :class:`EnvironmentFactory`; for a dataset whose rows need different tool sets, a
        dict of them keyed by the ``environment`` column (TRL's multi-environment form).

    Raises:
        SpecError: If a dataset lacks the ``tools``/``environment`` columns, or a spec does not
            build.
        BridgeError: If a tool cannot be a method (a reserved name, a parameter name that is
            not a Python identifier, a schema a docstring cannot carry).
    """
    if isinstance(source, HarnessSpec):
        env = source.build()
        try:
            tools = tuple(env.tools())
        finally:
            env.close()
        default = _class_name(source.bridge.name)
        return EnvironmentFactory(tools, name or default, max_observation_chars)
    if isinstance(source, Sequence) and not isinstance(source, str):
        return EnvironmentFactory(tuple(source), name or "HarnessEnv", max_observation_chars)
    columns = getattr(source, "column_names", None)
    if columns is None:
        raise TypeError(
            f"expected a datasets.Dataset, a HarnessSpec or a list of ToolSpec, got "
            f"{type(source).__name__}"
        )
    if "tools" not in columns or "environment" not in columns:
        raise SpecError(
            f"the dataset has no 'tools'/'environment' columns (columns: {', '.join(columns)}); "
            "build it with dataset_from_tasks, dataset_from_specs or dataset_from_run"
        )
    groups: dict[str, str] = {}
    for key, tools_json in zip(source["environment"], source["tools"], strict=True):
        if groups.setdefault(key, tools_json) != tools_json:
            raise SpecError(
                f"the dataset's rows for environment {key!r} need different tools; rebuild it "
                "with one of this module's dataset_from_* helpers"
            )
    factories = {
        key: EnvironmentFactory(
            tuple(ToolSpec.from_dict(d) for d in json.loads(tools_json)),
            name if name and len(groups) == 1 else _class_name(key),
            max_observation_chars,
        )
        for key, tools_json in groups.items()
    }
    if not factories:
        raise SpecError("the dataset has no rows")
    return next(iter(factories.values())) if len(factories) == 1 else factories


# -- datasets -------------------------------------------------------------------------------------


def _prompt(instruction: str, system_prompt: str | None) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return [*messages, {"role": "user", "content": instruction}]


def _check_seeds(seeds: Sequence[int]) -> list[int]:
    seeds = list(seeds)
    if not seeds or any(isinstance(s, bool) or not isinstance(s, int) for s in seeds):
        raise ValueError(f"expected seeds to be a non-empty list of ints, got {seeds!r}")
    return seeds


def _rows(
    pairs: Iterable[tuple[HarnessSpec, ActionableEnv]],
    seeds: Sequence[int],
    system_prompt: str | None,
) -> Dataset:
    """One row per (spec, seed): the columns TRL and :class:`HarnessEnvironment` read."""
    seeds = _check_seeds(seeds)
    records: list[dict[str, Any]] = []
    keys: dict[str, str] = {}  # tools JSON -> environment key
    for spec, env in pairs:
        try:
            instruction = str(env.instruction)
            tools_json = json.dumps([t.to_dict() for t in env.tools()])
        finally:
            env.close()
        key = keys.get(tools_json)
        if key is None:
            key = spec.bridge.name
            if key in keys.values():
                key = f"{key}-{hashlib.sha256(tools_json.encode()).hexdigest()[:8]}"
            keys[tools_json] = key
        text = spec.to_json(indent=None)
        for seed in seeds:
            records.append(
                {
                    "prompt": _prompt(instruction, system_prompt),
                    "spec": text,
                    "seed": seed,
                    "bridge": spec.bridge.name,
                    "task_id": spec.bridge.task_id,
                    "spec_id": spec.spec_id,
                    "environment": key,
                    "tools": tools_json,
                }
            )
    if not records:
        raise SpecError("no specs to make a dataset from")
    return _datasets().Dataset.from_list(records)


def _built(specs: Iterable[HarnessSpec]) -> Iterable[tuple[HarnessSpec, ActionableEnv]]:
    for spec in specs:
        try:
            env = spec.build()
        except Exception as e:
            e.add_note(f"while building spec {spec.spec_id} for a TRL dataset")
            raise
        yield spec, env


def dataset_from_specs(
    specs: Iterable[HarnessSpec | str | Mapping[str, Any]],
    *,
    seeds: Sequence[int] = (0,),
    system_prompt: str | None = None,
) -> Dataset:
    """A TRL dataset with one row per spec and seed.

    Each spec is built once, to read its instruction and tools, and closed.

    Args:
        specs: Specs, or their JSON texts or dicts.
        seeds: The reset seeds; each spec gets one row per seed (GRPO's generations of one row
            share its seed, so they start from the same state).
        system_prompt: A system message to put before the instruction.

    Returns:
        A ``datasets.Dataset`` with the columns ``prompt`` (conversational), ``spec`` (JSON),
        ``seed``, ``bridge``, ``task_id``, ``spec_id``, ``environment`` (the tool-set key
        :func:`environment_factory` reads) and ``tools`` (the tools as JSON).

    Raises:
        SpecError: If a spec is malformed or does not build, or there is none.
        BridgeError: If a bridge or task cannot be loaded.
        DependencyNotInstalled: If ``datasets`` is missing (``envharness[trl]``).
    """
    _datasets()
    parsed = [s if isinstance(s, HarnessSpec) else _row_spec({"spec": s}) for s in specs]
    return _rows(_built(parsed), seeds, system_prompt)


def dataset_from_tasks(
    bridge: str,
    task_ids: Sequence[str] | None = None,
    *,
    split: str = "train",
    limit: int | None = None,
    options: Mapping[str, Any] | None = None,
    seeds: Sequence[int] = (0,),
    system_prompt: str | None = None,
) -> Dataset:
    """A TRL dataset of a bridge's plain tasks (no harness components).

    Args:
        bridge: The registered bridge name, e.g. ``"toy24"``.
        task_ids: The tasks; by default the bridge's ``split`` list.
        split: The split to list when ``task_ids`` is not given.
        limit: At most this many tasks (the first ones).
        options: ``load_bridge`` options.
        seeds: The reset seeds (one row per task and seed).
        system_prompt: A system message to put before the instruction.

    Returns:
        A dataset as :func:`dataset_from_specs` makes; each spec pins the task's fingerprint.

    Raises:
        BridgeError: If the bridge, a task or an option is unknown.
        DependencyNotInstalled: If ``datasets`` is missing (``envharness[trl]``).
    """
    from envharness.bridges.registry import list_tasks, load_bridge

    _datasets()
    if isinstance(task_ids, str):
        raise TypeError(f"expected a list of task ids, got the str {task_ids!r}")
    options = dict(options or {})
    ids = list(list_tasks(bridge, split=split, **options) if task_ids is None else task_ids)
    if limit is not None:
        ids = ids[:limit]

    def pairs() -> Iterable[tuple[HarnessSpec, ActionableEnv]]:
        for task_id in ids:
            env = load_bridge(bridge, task_id=task_id, **options)
            try:
                spec = HarnessSpec.from_env(env)
            except BaseException:
                env.close()
                raise
            yield spec, env

    return _rows(pairs(), seeds, system_prompt)


def dataset_from_run(
    run_dir: str | Path,
    *,
    seeds: Sequence[int] = (0,),
    system_prompt: str | None = None,
) -> Dataset:
    """A TRL dataset of a rig's accepted specs (``RUN/accepted/*.json``), one row per spec and seed.

    Args:
        run_dir: The rig's run directory.
        seeds: The reset seeds (one row per spec and seed).
        system_prompt: A system message to put before the instruction.

    Returns:
        A dataset as :func:`dataset_from_specs` makes, in file-name order.

    Raises:
        RiggerError: If the run has no accepted spec.
        SpecError: If an accepted file is not a spec (the message names it).
        DependencyNotInstalled: If ``datasets`` is missing (``envharness[trl]``).
    """
    run = Path(run_dir)
    paths = sorted((run / "accepted").glob("*.json"))
    if not paths:
        raise RiggerError(
            f"{run / 'accepted'} holds no accepted spec; is {run} a rig's run directory "
            "(envharness rig ... --out RUN)?"
        )
    specs = []
    for path in paths:
        try:
            specs.append(HarnessSpec.from_json(path.read_text()))
        except OSError as e:
            raise SpecError(f"cannot read {path}: {e.strerror}") from None
        except SpecError as e:
            raise SpecError(f"{path} is not a harness spec: {e}") from e
    return dataset_from_specs(specs, seeds=seeds, system_prompt=system_prompt)
