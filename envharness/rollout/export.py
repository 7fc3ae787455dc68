"""Trajectories as training data: OpenAI-style chat records with tool calls, as JSONL or Parquet.

:func:`export_run` reads a run directory (a rollout run, or a rig run with ``trajectories/`` and
``accepted/``) and writes one record per trajectory. A record is::

    {"messages": [...], "tools": [...], "metadata": {...}}

- ``messages``: the system prompt a :class:`~envharness.rollout.chat.ChatModelPolicy` with native
  tool calling would get (:func:`system_prompt`), the instruction and first observation as the
  ``user`` message, then per step an ``assistant`` message whose ``tool_calls`` hold the action
  and the observation answering it: a ``tool`` message whose ``tool_call_id`` is the call's id.
  Observations carry the ``Step k/N`` heading the chat policy shows; the last one has none when
  the episode ended with that step (the policy never saw it). A blocked or rejected action keeps
  its feedback as the tool message. A step whose policy output held no usable action (no call, or
  a call that did not parse: the trajectory keeps no action then) is an assistant message without
  ``tool_calls`` and with empty content (the record does not keep the model's text), answered by a
  ``user`` message, as the chat policy answers a reply without a call.
- ``tools``: the OpenAI function schemas (:meth:`~envharness.core.ToolSpec.to_openai`) of the
  trajectory's env. Trajectories do not record their tools, so each spec's env is rebuilt once
  (``HarnessSpec.build()``) to read ``tools()``.
- ``metadata``: the verifier's ``reward`` (``evaluation.score``, the reward the RL integrations
  give), ``success`` and ``score``, the bridge, task, spec id, task fingerprint, components,
  policy, seed, step counts, end reason, usage, and, for a trajectory played under a rig's
  accepted spec, that spec's ``lineage`` (task, policy, parent spec, validation statistics).

Formats: ``chat-jsonl`` writes each record as one JSON line. ``parquet`` (needs ``pyarrow``:
``pip install 'envharness[export]'``) writes ``messages``, ``tools`` and ``metadata`` as **JSON
string columns**, next to flat columns for filtering (:data:`PARQUET_COLUMNS`): tool schemas
differ from tool to tool, so a nested Arrow type would pad them with nulls and not read back as
written. ``pandas.read_parquet(path)`` and ``datasets.load_dataset("parquet", data_files=path)``
read it as is; ``json.loads(row["messages"])`` gives the messages.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from envharness.core import ToolSpec
from envharness.errors import DependencyNotInstalled, EnvHarnessError, SpecError, TrajectoryError
from envharness.harness.spec import HarnessSpec
from envharness.rollout.chat import (
    _BUDGET,
    _NATIVE_PROTOCOL,
    _NO_BUDGET,
    DEFAULT_SYSTEM_PROMPT,
    SKILLS_TEMPLATE,
)
from envharness.rollout.store import TRAJECTORIES_FILE, RunStore
from envharness.rollout.trajectory import Step, Trajectory

__all__ = [
    "EXPORT_FORMATS",
    "PARQUET_COLUMNS",
    "ExportResult",
    "RunLayout",
    "ToolCache",
    "chat_messages",
    "chat_record",
    "default_output",
    "export_run",
    "find_run",
    "system_prompt",
]

EXPORT_FORMATS: tuple[str, ...] = ("chat-jsonl", "parquet")
"""The formats :func:`export_run` writes."""

PARQUET_COLUMNS: tuple[str, ...] = (
    "messages",
    "tools",
    "metadata",
    "bridge",
    "task_id",
    "spec_id",
    "policy",
    "seed",
    "steps",
    "reward",
    "success",
    "score",
)
"""The Parquet columns: three JSON strings, then flat copies of metadata fields for filtering."""

_SUFFIXES = {"chat-jsonl": ".chat.jsonl", "parquet": ".parquet"}
_ASKED_AGAIN = frozenset({"policy_error", "timeout"})  # ends where act() saw the observation
_ROW_GROUP = 512  # records per Parquet row group (a bounded amount held in memory)


# -- the run directory ------------------------------------------------------------------------


@dataclass(frozen=True)
class RunLayout:
    """Where a run directory keeps its trajectories and, for a rig run, its accepted specs.

    Attributes:
        root: The run directory (a rig run's top, even when its ``trajectories/`` was given).
        store: The directory holding ``trajectories.jsonl``.
        accepted: The rig's ``accepted/`` directory, or ``None`` for a rollout run.
    """

    root: Path
    store: Path
    accepted: Path | None


def find_run(run_dir: str | os.PathLike[str]) -> RunLayout:
    """Finds the trajectories (and accepted specs) of a rollout run or a rig run.

    Accepted: a rollout run (``RUN/trajectories.jsonl``), a rig run
    (``RUN/trajectories/trajectories.jsonl`` and ``RUN/accepted/``), or a rig run's
    ``trajectories/`` folder itself.

    Raises:
        TrajectoryError: If the path does not exist, is not a directory, or holds no
            ``trajectories.jsonl`` where a run keeps it.
    """
    path = Path(run_dir)
    if not path.exists():
        raise TrajectoryError(f"no run directory at {str(path)!r}")
    if not path.is_dir():
        raise TrajectoryError(f"{str(path)!r} is not a run directory (it is a file)")
    if (path / TRAJECTORIES_FILE).is_file():
        root = path
        if path.name == "trajectories" and (path.parent / "accepted").is_dir():
            root = path.parent
        accepted = root / "accepted"
        return RunLayout(root, path, accepted if accepted.is_dir() else None)
    if (path / "trajectories" / TRAJECTORIES_FILE).is_file():
        accepted = path / "accepted"
        return RunLayout(path, path / "trajectories", accepted if accepted.is_dir() else None)
    raise TrajectoryError(
        f"{str(path)!r} is not a run directory: it holds neither {TRAJECTORIES_FILE} (a rollout "
        f"run, from `envharness rollout`) nor trajectories/{TRAJECTORIES_FILE} (a rig run)"
    )


def default_output(run_dir: str | os.PathLike[str], format: str) -> Path:
    """The file an export writes when none is given: beside the run directory.

    Example:
        >>> str(default_output("runs/toy24", "parquet"))
        'runs/toy24.parquet'
    """
    path = Path(run_dir)
    if not path.name or path.name in (".", ".."):
        path = path.resolve()
    return path.with_name(path.name + _SUFFIXES[_check_format(format)])


def _accepted_lineage(accepted: Path | None) -> dict[str, dict[str, Any]]:
    """The lineage of each accepted spec of a rig run, by spec id."""
    if accepted is None:
        return {}
    lineage: dict[str, dict[str, Any]] = {}
    for path in sorted(accepted.glob("*.json")):
        try:
            spec = HarnessSpec.from_json(path.read_text("utf-8"))
        except (OSError, UnicodeDecodeError, SpecError) as e:
            raise SpecError(f"{path}: not a readable accepted spec: {e}") from e
        if spec.lineage is not None:
            lineage[spec.spec_id] = spec.lineage.to_dict()
    return lineage


# -- one record ---------------------------------------------------------------------------------


def system_prompt(
    max_steps: int | None = None,
    skills: Sequence[Mapping[str, Any]] | None = None,
    *,
    role: str | None = None,
) -> str:
    r"""The system prompt of a :class:`~envharness.rollout.chat.ChatModelPolicy` calling tools.

    Built from the chat policy's own texts, in its order: the role, how to act by tool calls,
    the step budget, and the skills shown (a trajectory's ``skills`` entries: ``{"text": ...}``
    or a ``Skill.to_dict()``).

    Args:
        max_steps: The step budget (``None`` or ``0``: the text without a number).
        skills: The skills the episode showed, as the trajectory records them.
        role: The role description; the chat policy's ``DEFAULT_SYSTEM_PROMPT`` when ``None``.

    Example:
        >>> system_prompt(10).split("\n\n")[-1][:18]
        'You have 10 steps.'
    """
    parts = [DEFAULT_SYSTEM_PROMPT if role is None else role, _NATIVE_PROTOCOL]
    parts.append(_BUDGET.format(max_steps=max_steps) if max_steps else _NO_BUDGET)
    items = [f"- {_skill_text(skill)}" for skill in skills or ()]
    if items:
        parts.append(SKILLS_TEMPLATE.format(skills="\n".join(items)))
    return "\n\n".join(parts)


def _skill_text(skill: Mapping[str, Any]) -> str:
    if set(skill) == {"text"}:
        return str(skill["text"])
    from envharness.skills.records import Skill, SkillError

    try:
        return Skill.from_dict(skill).render()
    except SkillError as e:
        raise TrajectoryError(f"a recorded skill is malformed: {e}") from e


def _headed(text: str, step: int, budget: int) -> str:
    return f"Step {step}{f'/{budget}' if budget else ''}\n{text}"


def _answer(step: Step) -> str:
    """What answers a step's action: its observation, or the error that ended the episode."""
    if step.observation or step.error is None:
        return step.observation
    return f"Error: {step.error}. The episode ended."


def chat_messages(trajectory: Trajectory, *, role: str | None = None) -> list[dict[str, Any]]:
    """A trajectory as OpenAI chat messages: system, user, then assistant/tool per step.

    Tool call ids are ``call_<step index>``; every ``tool`` message answers the call before it.
    See the module docstring for headings and steps without an action.

    Example:
        >>> from envharness import load_bridge
        >>> from envharness.rollout import OraclePolicy, rollout
        >>> played = rollout(load_bridge("toy24", task_id="4-4-10-10"), OraclePolicy(1.0, seed=0))
        >>> messages = chat_messages(played)
        >>> [m["role"] for m in messages[:4]], len(messages) == 2 + 2 * played.n_steps
        (['system', 'user', 'assistant', 'tool'], True)
        >>> messages[2]["tool_calls"][0]["id"] == messages[3]["tool_call_id"]
        True
    """
    budget = trajectory.max_steps
    opening = _headed(trajectory.first_observation, 1, budget)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt(budget, trajectory.skills, role=role)},
        {"role": "user", "content": f"{trajectory.instruction.strip()}\n\n{opening}"},
    ]
    steps = trajectory.steps
    # The last observation is headed only when the policy was asked to act on it (its next
    # act() raised or timed out); after a final step the chat policy never sees it.
    asked = trajectory.end_reason in _ASKED_AGAIN and (not budget or len(steps) < budget)
    last = len(steps) - 1 if not asked else len(steps)
    for position, step in enumerate(steps):
        text = _answer(step)
        if position < last:
            text = _headed(text, position + 2, budget)
        action = step.action
        if action is None:
            messages.append({"role": "assistant", "content": ""})
            messages.append({"role": "user", "content": text})
            continue
        call_id = f"call_{step.index}"
        name = str(action.get("tool", ""))
        arguments = json.dumps(action.get("args") or {}, ensure_ascii=False)
        function = {"name": name, "arguments": arguments}
        call = {"id": call_id, "type": "function", "function": function}
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": call_id, "name": name, "content": text})
    return messages


def _metadata(trajectory: Trajectory, lineage: Mapping[str, Any] | None) -> dict[str, Any]:
    evaluation = trajectory.evaluation
    spec = trajectory.spec if isinstance(trajectory.spec, Mapping) else {}
    bridge = spec.get("bridge") if isinstance(spec.get("bridge"), Mapping) else {}
    components = spec.get("components") if isinstance(spec.get("components"), list) else []
    return {
        "bridge": trajectory.bridge,
        "task_id": trajectory.task_id,
        "spec_id": trajectory.spec_id,
        "task_fingerprint": bridge.get("fingerprint"),
        "components": [c.get("type") for c in components if isinstance(c, Mapping)],
        "accepted": lineage is not None,
        "lineage": dict(lineage) if lineage is not None else None,
        "policy": trajectory.policy,
        "seed": trajectory.seed,
        "trajectory_key": RunStore.key_of(trajectory),
        "reward": None if evaluation is None else float(evaluation.score),
        "success": trajectory.success,
        "score": None if evaluation is None else float(evaluation.score),
        "evaluation_details": None if evaluation is None else dict(evaluation.details),
        "steps": trajectory.n_steps,
        "max_steps": trajectory.max_steps,
        "invalid_steps": trajectory.n_invalid,
        "blocked_steps": trajectory.n_blocked,
        "rewritten_steps": trajectory.n_rewritten,
        "end_reason": trajectory.end_reason,
        "error": trajectory.error,
        "usage": dict(trajectory.usage),
    }


def chat_record(
    trajectory: Trajectory,
    tools: Sequence[ToolSpec],
    *,
    lineage: Mapping[str, Any] | None = None,
    role: str | None = None,
) -> dict[str, Any]:
    """One trajectory's record: ``{"messages", "tools", "metadata"}`` (see the module docstring).

    Args:
        trajectory: The trajectory.
        tools: Its env's tools (a :class:`ToolCache` rebuilds them from the spec).
        lineage: The accepted spec's lineage when the trajectory ran under one.
        role: The system prompt's role description (the chat policy's default when ``None``).
    """
    return {
        "messages": chat_messages(trajectory, role=role),
        "tools": [tool.to_openai() for tool in tools],
        "metadata": _metadata(trajectory, lineage),
    }


class ToolCache:
    """The tools of each spec's env, built once per spec id (``HarnessSpec.build().tools()``).

    Raises (from :meth:`tools_for`):
        DependencyNotInstalled: If the spec's bridge needs an extra that is missing.
        TrajectoryError: If the trajectory's spec cannot be rebuilt (naming the spec and why).
    """

    def __init__(self) -> None:
        self._tools: dict[str, list[ToolSpec]] = {}

    def tools_for(self, trajectory: Trajectory) -> list[ToolSpec]:
        """The tools of the env the trajectory was played on."""
        cached = self._tools.get(trajectory.spec_id)
        if cached is not None:
            return cached
        try:
            env = HarnessSpec.from_dict(trajectory.spec).build()
            try:
                tools = list(env.tools())
            finally:
                env.close()
        except DependencyNotInstalled:
            raise
        except EnvHarnessError as e:
            raise TrajectoryError(
                f"cannot rebuild the env of spec {trajectory.spec_id!r} (task "
                f"{trajectory.task_id!r}) to read its tools: {e}. Export on a machine where "
                "that bridge and its task data load, or leave the spec out (--spec)"
            ) from e
        self._tools[trajectory.spec_id] = tools
        return tools


# -- writing ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportResult:
    """What :func:`export_run` wrote.

    Attributes:
        path: The output file.
        format: One of :data:`EXPORT_FORMATS`.
        records: The trajectories written.
        total: The trajectories in the run (before the filters).
        successes: How many of those written the verifier counts as successes.
    """

    path: Path
    format: str
    records: int
    total: int
    successes: int


def _check_format(format: object) -> str:
    if format not in EXPORT_FORMATS:
        raise TrajectoryError(
            f"unknown export format {format!r}; choose one of: {', '.join(EXPORT_FORMATS)}"
        )
    return str(format)


def _require_pyarrow() -> None:
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise DependencyNotInstalled("pyarrow", "export", purpose="Parquet export") from None


def _check_filter(name: str, wanted: set[str], present: set[str], flag: str) -> None:
    unknown = sorted(wanted - present)
    if unknown:
        listing = ", ".join(sorted(present)[:20]) + (" ..." if len(present) > 20 else "")
        raise TrajectoryError(
            f"{flag}: no trajectory of this run has {name} {', '.join(map(repr, unknown))}; "
            f"the run has: {listing}"
        )


def _selected(
    store: RunStore, success_only: bool, tasks: set[str], specs: set[str], seen: _Seen
) -> Iterator[Trajectory]:
    for trajectory in store:
        seen.tasks.add(trajectory.task_id)
        seen.specs.add(trajectory.spec_id)
        if success_only and not trajectory.success:
            continue
        if tasks and trajectory.task_id not in tasks:
            continue
        if specs and trajectory.spec_id not in specs:
            continue
        yield trajectory


@dataclass
class _Seen:
    """What one pass over a run saw: its task and spec ids, and what it exported."""

    tasks: set[str]
    specs: set[str]
    records: int = 0
    successes: int = 0


def _write_jsonl(records: Iterable[dict[str, Any]], handle: IO[bytes]) -> None:
    for record in records:
        line = json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        handle.write(line.encode("utf-8") + b"\n")


def _parquet_row(record: dict[str, Any]) -> dict[str, Any]:
    meta = record["metadata"]
    row = {
        column: json.dumps(record[column], ensure_ascii=False, allow_nan=False)
        for column in ("messages", "tools", "metadata")
    }
    row.update({column: meta[column] for column in PARQUET_COLUMNS[3:]})
    return row


def _write_parquet(records: Iterable[dict[str, Any]], handle: IO[bytes]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    text = pa.string()
    schema = pa.schema(
        [(column, text) for column in PARQUET_COLUMNS[:7]]
        + [
            ("seed", pa.int64()),
            ("steps", pa.int64()),
            ("reward", pa.float64()),
            ("success", pa.bool_()),
            ("score", pa.float64()),
        ],
        metadata={"envharness_export": "1", "json_columns": "messages,tools,metadata"},
    )
    with pq.ParquetWriter(handle, schema) as writer:
        batch: list[dict[str, Any]] = []
        for record in records:
            batch.append(_parquet_row(record))
            if len(batch) >= _ROW_GROUP:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch = []
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))


_WRITERS: dict[str, Callable[[Iterable[dict[str, Any]], IO[bytes]], None]] = {
    "chat-jsonl": _write_jsonl,
    "parquet": _write_parquet,
}


def _open_output(path: Path) -> tuple[int, str]:
    if path.is_dir():
        raise TrajectoryError(f"cannot write the export to {str(path)!r}: it is a directory")
    try:
        return tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise TrajectoryError(
            f"cannot write the export to {str(path)!r}: {e.strerror or e}; choose a file in a "
            "directory you can write (--out)"
        ) from None


def export_run(
    run_dir: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    format: str = "chat-jsonl",
    success_only: bool = False,
    tasks: Iterable[str] = (),
    specs: Iterable[str] = (),
    role: str | None = None,
) -> ExportResult:
    """Writes a run's trajectories as chat records (JSONL or Parquet), one per trajectory.

    The file is written whole or not at all (a temporary file renamed into place); an existing
    file at ``out`` is replaced.

    Args:
        run_dir: A rollout run, a rig run, or a rig run's ``trajectories/``.
        out: The output file; :func:`default_output` (beside the run directory) when ``None``.
        format: ``"chat-jsonl"`` or ``"parquet"``.
        success_only: Only trajectories the verifier counts as successes.
        tasks: Only these task ids (none: every task).
        specs: Only these spec ids (none: every spec).
        role: The system prompt's role description (the chat policy's default when ``None``).

    Raises:
        TrajectoryError: If the format is unknown, ``run_dir`` is not a run directory or holds
            no trajectories, a task or spec filter names none of the run's, nothing passes the
            filters, or the output cannot be written.
        DependencyNotInstalled: For Parquet without ``pyarrow`` (``envharness[export]``), or a
            bridge whose extra is missing (its env is rebuilt for the tools).
        SpecError: If an accepted spec of a rig run is malformed.

    Example:
        >>> import json, tempfile
        >>> from pathlib import Path
        >>> from envharness.harness.spec import BridgeSpec, HarnessSpec
        >>> from envharness.rollout import LocalExecutor, OraclePolicyFactory, run_rollouts
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     run = Path(folder) / "run"
        ...     with RunStore(run) as store:
        ...         _ = run_rollouts(HarnessSpec(BridgeSpec("toy24", "4-4-10-10")),
        ...                          OraclePolicyFactory(1.0), 2, executor=LocalExecutor(1),
        ...                          store=store)
        ...     result = export_run(run)
        ...     first = json.loads(result.path.read_text().splitlines()[0])
        >>> result.path.name, result.records, first["metadata"]["success"]
        ('run.chat.jsonl', 2, True)
    """
    format = _check_format(format)
    if format == "parquet":
        _require_pyarrow()
    layout = find_run(run_dir)
    target = Path(out) if out is not None else default_output(layout.root, format)
    wanted_tasks, wanted_specs = set(tasks), set(specs)
    lineage = _accepted_lineage(layout.accepted)
    with RunStore(layout.store, readonly=True) as store:
        total = len(store)
        if not total:
            raise TrajectoryError(f"the run {str(layout.root)!r} holds no trajectories yet")
        seen = _Seen(set(), set())
        cache = ToolCache()

        def records() -> Iterator[dict[str, Any]]:
            for trajectory in _selected(store, success_only, wanted_tasks, wanted_specs, seen):
                seen.records += 1
                seen.successes += int(trajectory.success)
                yield chat_record(
                    trajectory,
                    cache.tools_for(trajectory),
                    lineage=lineage.get(trajectory.spec_id),
                    role=role,
                )

        fd, temporary = _open_output(target)
        try:
            with os.fdopen(fd, "wb") as handle:
                _WRITERS[format](records(), handle)
            _check_filter("task", wanted_tasks, seen.tasks, "--task")
            _check_filter("spec", wanted_specs, seen.specs, "--spec")
            if not seen.records:
                why = "; none succeeded (--success-only)" if success_only else ""
                raise TrajectoryError(
                    f"no trajectory of the run {str(layout.root)!r} passes the filters "
                    f"({total} in the run{why})"
                )
            os.replace(temporary, target)
        except OSError as e:
            raise TrajectoryError(
                f"cannot write the export to {str(target)!r}: {e.strerror or e}; choose a file "
                "in a directory you can write (--out)"
            ) from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    return ExportResult(target, format, seen.records, total, seen.successes)
