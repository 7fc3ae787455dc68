"""EnvHarness environments as a ``verifiers`` (v1) environment.

verifiers 0.4 splits an environment into a taskset (the rows), a harness (the program that
talks to the model) and an ``Env`` (how a task becomes an episode). This module provides all
three for any :class:`~envharness.harness.spec.HarnessSpec`:

- :class:`EnvHarnessTaskset` yields one task per dataset row: a spec (from a task list or a rig
  run's ``RUN/accepted/*.json``) and a seed.
- :class:`EnvHarnessHarness` runs the episode in-process, as verifiers allows a harness to: it
  builds a fresh env from the row's spec, offers the bridge's tools
  (:meth:`~envharness.core.ToolSpec.to_openai`) to the model through the rollout's
  interception endpoint, and steps the env with each tool call (a reply without one is read
  as a text action) through :class:`envharness.gym.TextActionSession`, so invalid actions
  are answered and budgets spent as in the rollout loop.
- :class:`EnvHarnessTask` has one reward, ``verifier``: the score of the bridge's own
  ``env.evaluate()`` on that rollout's env. Nothing the model or a Rules layer writes reaches it.

:func:`load_environment` assembles them into a ready ``verifiers.v1.Env``. verifiers resolves
tasksets and harnesses by plugin id (an importable module name); this module registers itself
under :data:`TASKSET_ID` when imported.

Example:
    >>> env = load_environment(bridge="toy24", tasks=["4-4-10-10"], seeds=[0, 1])
    >>> [(task.data.name, task.data.seed) for task in env.taskset]
    [('toy24/4-4-10-10', 0), ('toy24/4-4-10-10', 1)]

    Then, as verifiers evaluates: ``async with env.serving():`` and ``await
    env.run_episode(task, vf.ModelContext(model=..., client=vf.EvalClientConfig(...)))``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from envharness.core import ActionableEnv
from envharness.errors import (
    DependencyNotInstalled,
    EnvHarnessError,
    EpisodeError,
    SpecError,
)
from envharness.gym import TextActionSession, TextStep
from envharness.harness.spec import HarnessSpec
from envharness.integrations._specs import check_seeds, read_spec, specs_from

try:
    import openai
    import verifiers.v1 as vf
    from pydantic import Field
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise DependencyNotInstalled(
        "verifiers", "verifiers", purpose="envharness.integrations.verifiers"
    ) from e

__all__ = [
    "TASKSET_ID",
    "EnvHarnessData",
    "EnvHarnessHarness",
    "EnvHarnessHarnessConfig",
    "EnvHarnessTask",
    "EnvHarnessTaskset",
    "EnvHarnessTasksetConfig",
    "load_environment",
    "spec_rows",
]

TASKSET_ID = "envharness_verifiers"
"""The plugin id verifiers resolves this module under (``--env.taskset.id``)."""

sys.modules.setdefault(TASKSET_ID, sys.modules[__name__])

_PROTOCOL = (
    "Act by calling exactly one of your tools per reply. A reply without a tool call is read "
    'as a text action: tool_name(argument="value") or {"tool": "tool_name", "args": {...}}.'
)
_IGNORED = "Ignored: one action per turn."

# Envs of the rollouts in flight, by trace id: the harness builds one, the reward evaluates
# and closes it, the harness's cleanup closes what scoring did not reach.
_LIVE: dict[str, ActionableEnv] = {}


# -- the rows -----------------------------------------------------------------------------------


def spec_rows(
    *,
    bridge: str | None = None,
    tasks: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
    run: str | Path | None = None,
    specs: Sequence[Any] | None = None,
    seeds: Sequence[int] = (0,),
) -> list[dict[str, Any]]:
    """The dataset rows, ``{"spec": dict, "seed": int}``, one per spec and seed.

    Give exactly one source: ``bridge`` with ``tasks`` (bare bridge specs), ``run`` (a rig
    run's ``RUN/accepted/*.json``) or ``specs`` (``HarnessSpec`` objects, dicts, JSON texts or
    ``.json`` paths).

    Raises:
        SpecError: If no source or several are given, or a spec is malformed.

    Example:
        >>> rows = spec_rows(bridge="toy24", tasks=["4-4-10-10"], seeds=[0, 1])
        >>> [(row["spec"]["bridge"]["task_id"], row["seed"]) for row in rows]
        [('4-4-10-10', 0), ('4-4-10-10', 1)]
    """
    found = specs_from(bridge=bridge, tasks=tasks, options=options, run=run, specs=specs)
    seeds = check_seeds(seeds)
    return [{"spec": spec.to_dict(), "seed": seed} for spec in found for seed in seeds]


# -- verifiers plugin: data, task, taskset ------------------------------------------------------


class EnvHarnessData(vf.TaskData):
    """One row: the spec to build and the seed to reset it with."""

    spec: dict[str, Any]
    """A :meth:`HarnessSpec.to_dict` form."""
    seed: int = 0
    """The seed the rollout's env is reset with."""


class EnvHarnessTask(vf.Task[EnvHarnessData]):
    """A task whose only reward is the bridge's verifier on the rollout's own env."""

    @vf.reward
    async def verifier(self, trace: vf.Trace) -> float:
        """The score of ``env.evaluate()`` on the env this trace's rollout played."""
        env = _LIVE.pop(trace.id, None)
        if env is None:
            raise EpisodeError(
                f"no live episode for trace {trace.id}: the harness did not start one (see the "
                "trace's errors); run this task with the envharness harness"
            )
        try:
            evaluation = await asyncio.to_thread(env.evaluate)
        finally:
            await asyncio.to_thread(_close, env)
        trace.info["envharness_evaluation"] = evaluation.to_dict()
        return float(evaluation.score)


class EnvHarnessTasksetConfig(vf.TasksetConfig):
    """Which rows load: see :func:`spec_rows` (``rows`` wins when given)."""

    rows: list[dict[str, Any]] = Field(default_factory=list)
    bridge: str | None = None
    tasks: list[str] = Field(default_factory=list)
    options: dict[str, Any] = Field(default_factory=dict)
    run: str | None = None
    seeds: list[int] = Field(default_factory=lambda: [0])


def _instruction(spec: HarnessSpec) -> str:
    env = spec.build()
    try:
        return str(env.instruction)
    finally:
        _close(env)


class EnvHarnessTaskset(vf.Taskset[EnvHarnessTask, EnvHarnessTasksetConfig]):
    """One task per row; each spec is built once, on first load, for its instruction."""

    def __init__(self, config: EnvHarnessTasksetConfig) -> None:
        super().__init__(config)
        self._instructions: dict[str, str] = {}  # by spec id; views share it

    def load(self) -> Iterator[EnvHarnessTask]:
        """Yields the tasks; a spec that does not build raises :class:`SpecError` here."""
        config = self.config
        rows = config.rows or spec_rows(
            bridge=config.bridge,
            tasks=config.tasks or None,
            options=config.options,
            run=config.run,
            seeds=config.seeds,
        )
        instructions = self._instructions
        for k, row in enumerate(rows):
            if not isinstance(row, Mapping) or "spec" not in row:
                raise SpecError(f"row {k}: expected {{'spec': dict, 'seed': int}}, got {row!r}")
            spec = read_spec(row["spec"], f"row {k}")
            if spec.spec_id not in instructions:
                try:
                    instructions[spec.spec_id] = _instruction(spec)
                except EnvHarnessError as e:
                    raise SpecError(f"row {k}: the spec does not build: {e}") from e
            seed = row.get("seed", 0)
            yield EnvHarnessTask(
                EnvHarnessData(
                    id=f"{spec.spec_id}@{seed}",
                    name=f"{spec.bridge.name}/{spec.bridge.task_id}",
                    prompt=instructions[spec.spec_id],
                    spec=spec.to_dict(),
                    seed=seed,
                ),
                config.task,
            )


# -- verifiers plugin: the harness --------------------------------------------------------------


class EnvHarnessHarnessConfig(vf.HarnessConfig):
    """The in-process tool-calling loop's settings."""

    id: str = TASKSET_ID
    max_steps: int | None = Field(None, gt=0)
    """The agent's step budget (``None``: the env's ``max_steps``)."""


def _close(env: ActionableEnv) -> None:
    try:
        env.close()
    except Exception:  # noqa: BLE001 - closing is best effort; the episode is over
        pass


class EnvHarnessHarness(vf.Harness[EnvHarnessHarnessConfig]):
    """Plays one episode of the row's spec in-process, every model call through ``endpoint``."""

    APPENDS_SYSTEM_PROMPT = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: Any,
        trace: Any,
        runtime: Any,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: Any,
        tool_interception_url: str | None = None,
    ) -> Any:
        """Builds the env, plays until it ends or the budget is spent; the env stays live.

        The steps are played by :class:`envharness.gym.TextActionSession` (the rollout loop's
        semantics). An env that raises mid-episode fails the rollout (verifiers records the
        error on the trace) rather than scoring it.
        """
        spec = read_spec(data.spec, f"task {data.id}")
        env = await asyncio.to_thread(spec.build)
        _LIVE[trace.id] = env
        session = TextActionSession(env, max_steps=self.config.max_steps, close_env=False)
        observation, _ = await asyncio.to_thread(session.reset, seed=int(data.seed))
        system, _ = self.resolve_prompt(data)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "\n\n".join(filter(None, [system, _PROTOCOL]))},
            {"role": "user", "content": f"{session.instruction}\n\n{observation}"},
        ]
        client = openai.AsyncOpenAI(base_url=endpoint, api_key=secret, max_retries=0)
        last: TextStep | None = None
        try:
            last = await self._play(client, ctx.model, session, messages)
        except openai.APIStatusError:
            if trace.stop_condition is None:
                raise
            # verifiers stopped the rollout (a turn or token limit, a @stop): the episode
            # ends here and is scored as it stands.
        finally:
            await client.close()
        if last is not None and session.end_reason == "env_error":
            raise EnvHarnessError(
                f"the env failed at step {session.steps_taken} of task {data.id}: "
                f"{last.info.get('error', 'no error text')}"
            )
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")

    async def _play(
        self, client: Any, model: str, session: TextActionSession, messages: list[dict[str, Any]]
    ) -> TextStep | None:
        """Plays until the session's episode ends; returns its last step."""
        schemas = session.tool_schemas()
        step: TextStep | None = None
        while not session.done:
            response = await client.chat.completions.create(
                model=model, messages=messages, tools=schemas
            )
            message = response.choices[0].message
            calls = list(message.tool_calls or ())
            messages.append(message.model_dump(exclude_none=True, exclude={"refusal"}))
            if calls:
                call = {"name": calls[0].function.name, "arguments": calls[0].function.arguments}
                step = await asyncio.to_thread(session.step, call)
                messages.append(
                    {"role": "tool", "tool_call_id": calls[0].id, "content": step.observation}
                )
                messages.extend(
                    {"role": "tool", "tool_call_id": call.id, "content": _IGNORED}
                    for call in calls[1:]
                )
            else:
                step = await asyncio.to_thread(session.step, message.content or "")
                messages.append({"role": "user", "content": step.observation})
        return step

    async def cleanup(self, trace: Any, runtime: Any) -> None:
        """Closes the rollout's env when scoring did not (the rollout failed first)."""
        env = _LIVE.pop(trace.id, None)
        if env is not None:
            await asyncio.to_thread(_close, env)


# -- assembly -----------------------------------------------------------------------------------


def load_environment(
    *,
    bridge: str | None = None,
    tasks: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
    run: str | Path | None = None,
    specs: Sequence[Any] | None = None,
    seeds: Sequence[int] = (0,),
    max_steps: int | None = None,
    agent: Mapping[str, Any] | None = None,
) -> vf.Env:
    """A verifiers ``Env`` over EnvHarness specs (dataset sources as in :func:`spec_rows`).

    The agent runs :class:`EnvHarnessHarness` in the local (subprocess) runtime; its reward is
    the bridge's verifier. Evaluate it as verifiers does: ``async with env.serving():`` then
    ``await env.run_episode(task, vf.ModelContext(model=..., client=vf.EvalClientConfig(
    base_url=..., api_key_var=...)))`` for each ``task in env.taskset``.

    ``agent`` adds settings of verifiers' ``AgentConfig`` (``max_turns``, ``sampling``,
    ``timeout`` ...); a verifiers limit that stops the rollout ends the episode, scored as it
    stands. Every spec is built once here (for the task's instruction), so one that does not build
    fails now rather than in the middle of a training run.

    Raises:
        SpecError: If the sources are wrong or a spec does not build.
    """
    rows = spec_rows(bridge=bridge, tasks=tasks, options=options, run=run, specs=specs, seeds=seeds)
    harness: dict[str, Any] = {"id": TASKSET_ID}
    if max_steps is not None:
        harness["max_steps"] = max_steps
    config = vf.resolve_env_config(
        {
            "taskset": {"id": TASKSET_ID, "rows": rows},
            "agent": {"runtime": {"type": "subprocess"}, **dict(agent or {}), "harness": harness},
        }
    )
    env = vf.load_environment(config)
    for _ in env.taskset:  # builds each spec once: a bad one fails here, not in training
        pass
    return env
