"""``SweEnv``: fix a bug in a small Python repository, judged by hidden tests."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from envharness.bridgekit.checks import (
    check_nothing_recorded,
    check_options,
    check_positive_int,
    check_saved_state,
    state_error,
)
from envharness.bridgekit.fingerprint import cached_fingerprint, task_fingerprint
from envharness.bridges.swe.hints import HINTS
from envharness.bridges.swe.oracle import oracle_plan, stage_candidates
from envharness.bridges.swe.runtime import Runtime
from envharness.bridges.swe.tasks import Task, load_task, task_ids
from envharness.bridges.swe.tools import (
    ToolOutcome,
    edit_file,
    read_file,
    run_bash,
    run_tests,
    tool_specs,
)
from envharness.bridges.swe.verify import Changes, compute_changes, unified_diff, verify
from envharness.core import Action, ActionableEnv, Evaluation, StepResult, ToolSpec
from envharness.errors import BridgeError, EpisodeError

__all__ = ["DEFAULT_RUNTIME", "RUNTIMES", "SweEnv"]

_BRIDGE = "swe"
_NAME = "SweEnv"
RUNTIMES = ("docker", "local")
DEFAULT_RUNTIME = "docker"
"""The runtime used when none is given (overridden by ``$ENVHARNESS_SWE_RUNTIME``)."""

_DEFAULT_MAX_STEPS = 30
_DEFAULT_TIMEOUT = 60.0
_VERIFY_TIMEOUT = 300.0
_OPTIONS = ("runtime", "max_steps", "image", "timeout")
_SAVED_KEYS = (
    "bridge",
    "task_id",
    "options",
    "started",
    "submitted",
    "steps",
    "test_runs",
    "last_tool",
    "last_tests",
    "observation",
    "changes",
)
_MAX_STATE_DIFF = 20_000

_STATE_FIELDS: dict[str, Any] = {
    "files": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Every file of the repository now (relative paths, sorted; no caches).",
    },
    "changed_files": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Files added, changed or deleted since the start (sorted).",
    },
    "diff": {
        "type": "string",
        "description": "The changes since the start as a unified diff (cut to 20000 characters).",
    },
    "steps": {"type": "integer", "description": "Tool calls made this episode (not setup steps)."},
    "test_runs": {"type": "integer", "description": "run_tests calls (not setup steps)."},
    "last_tool": {"type": "string", "description": "The last tool called ('' before any)."},
    "last_tests": {
        "type": "string",
        "description": "pytest's summary of the last run_tests, e.g. '1 failed, 9 passed'.",
    },
    "submitted": {"type": "boolean", "description": "submit() was called (the episode is over)."},
}
_STATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A Python repository being fixed: its files, the changes so far, tool use.",
    "properties": _STATE_FIELDS,
    "required": list(_STATE_FIELDS),
}

_INSTRUCTION = """\
Fix the issue below in the Python repository `{package}`.

<issue>
{problem}
</issue>

Tools: bash(command) runs a shell command in the repository's root folder; read_file(path) shows
a file; edit_file(path, old, new) replaces one exact occurrence of `old` in a file; run_tests()
runs the repository's tests (or run_tests(target) one file or test); submit() ends the episode.
Change the source code, not the tests: after you submit, hidden tests (including new ones for
this issue) run on your changes in a fresh copy of the repository, and changes to test files are
ignored."""


def _default_runtime() -> str:
    return os.environ.get("ENVHARNESS_SWE_RUNTIME") or DEFAULT_RUNTIME


def _check_options(runtime: object, max_steps: object, image: object, timeout: object) -> None:
    if runtime not in RUNTIMES:
        raise BridgeError(
            f"runtime: expected 'docker' or 'local', got {runtime!r}; 'docker' isolates each "
            "episode in a container, 'local' runs commands on this machine",
            bridge=_BRIDGE,
        )
    check_positive_int("max_steps", max_steps, bridge=_BRIDGE)
    if not isinstance(image, str) or not image:
        raise BridgeError(f"image: expected an image tag, got {image!r}", bridge=_BRIDGE)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 600:
        raise BridgeError(f"timeout: expected seconds in (0, 600], got {timeout!r}", bridge=_BRIDGE)


def _runtime_factory(kind: str, image: str) -> Callable[[], Runtime]:
    """A constructor of fresh runtimes of ``kind``; checks that Docker is usable first."""
    if kind == "local":
        from envharness.bridges.swe.local_runtime import LocalRuntime

        return LocalRuntime
    from envharness.bridges.swe.docker_runtime import DockerRuntime
    from envharness.bridges.swe.image import docker_client, image_exists

    client = docker_client(timeout=10)  # DependencyNotInstalled / BridgeError name the fix
    try:
        if not image_exists(client, image):
            raise BridgeError(
                f"the Docker image {image} is not built; build it once with `python -m "
                "envharness.bridges.swe.image build` (needs root and debootstrap), or use "
                "runtime='local'",
                bridge=_BRIDGE,
            )
    finally:
        client.close()
    return lambda: DockerRuntime(image=image)


def _encode(data: bytes | None) -> dict[str, str] | None:
    if data is None:
        return None
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def _decode(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, Mapping) and isinstance(value.get("text"), str):
        return value["text"].encode("utf-8")
    if isinstance(value, Mapping) and isinstance(value.get("base64"), str):
        return base64.b64decode(value["base64"])
    raise _bad_state("a file in 'changes' must be {'text': ...}, {'base64': ...} or null")


def _bad_state(problem: str) -> BridgeError:
    return state_error(problem, bridge=_BRIDGE, env_name=_NAME)


class SweEnv(ActionableEnv):
    """One SWE task: fix a bug in a small Python repository, verified by hidden tests.

    The agent gets the issue and five tools (see :mod:`~envharness.bridges.swe.tools`). Each
    episode has its own workspace, made at ``reset`` and removed at ``close`` (a container with
    ``runtime="docker"``, a temporary folder with ``runtime="local"``). ``submit()`` ends the
    episode with reward 1.0 when the hidden tests pass, else 0.0; every other step gives 0.0.
    ``evaluate()`` runs the hidden tests (``fail_to_pass`` + ``pass_to_pass``) on the changes so
    far in a fresh workspace (see :mod:`~envharness.bridges.swe.verify`): success when all pass.
    Episodes are deterministic, so ``reset``'s seed is ignored. ``save_state()`` records the
    changed files and counters; ``from_state`` starts a fresh workspace and writes them back
    (processes and files outside the repository are not carried over).

    The default runtime is ``"docker"``, because the agent's commands are arbitrary code; set
    ``runtime="local"`` (or ``$ENVHARNESS_SWE_RUNTIME=local``) to run them on this machine, e.g.
    for tests or trusted policies. ``bridge_options()`` always records the runtime.

    Args:
        task_id: The task (see :meth:`list_tasks`).
        runtime: ``"docker"`` or ``"local"``.
        max_steps: The agent's step budget.
        image: The Docker image (``runtime="docker"`` only).
        timeout: Seconds each command or test run may take.

    Raises:
        UnknownTaskError: If there is no such task.
        BridgeError: If an option is bad, or the Docker engine or image is missing.
        DependencyNotInstalled: If ``runtime="docker"`` and the ``docker`` package is missing
            (extra ``swe``).

    Example:
        >>> env = SweEnv("intervals-touching", runtime="local")
        >>> observation, info = env.reset()
        >>> for action in env.oracle_actions():
        ...     result = env.step(action)
        >>> result.terminated, result.reward, env.evaluate().success
        (True, 1.0, True)
        >>> env.close()
    """

    bridge_name: ClassVar[str] = _BRIDGE

    def __init__(
        self,
        task_id: str,
        *,
        runtime: str | None = None,
        max_steps: int = _DEFAULT_MAX_STEPS,
        image: str | None = None,
        timeout: float = _DEFAULT_TIMEOUT,
    ) -> None:
        from envharness.bridges.swe.image import IMAGE

        self._task: Task = load_task(task_id)
        kind = _default_runtime() if runtime is None else runtime
        image = IMAGE if image is None else image
        _check_options(kind, max_steps, image, timeout)
        self._make_runtime = _runtime_factory(kind, image)
        self.task_id = task_id
        self.max_steps = max_steps
        self.runtime_kind = kind
        self.image = image
        self.timeout = float(timeout)
        self.instruction = _INSTRUCTION.format(
            package=self._task.package, problem=self._task.problem_statement
        )
        self._runtime: Runtime | None = None
        self._started = False
        self._submitted = False
        self._steps = 0
        self._test_runs = 0
        self._last_tool = ""
        self._last_tests = ""
        self._observation: str | None = None
        self._files: dict[str, bytes] | None = None  # the workspace, None when stale

    # -- tasks ------------------------------------------------------------------------------

    @classmethod
    def designer_hints(cls) -> str:
        """This bridge's notes for the designer's and diagnoser's prompts (its ``hints`` module)."""
        return HINTS

    @classmethod
    def list_tasks(cls, split: str = "train", **options: Any) -> list[str]:
        """Task ids in ``split``: ``"train"`` (7 tasks), ``"test"`` (3) or ``"all"``.

        Args:
            split: The split.
            **options: Bridge options, accepted for symmetry with ``load_bridge``; they do not
                change the list.

        Raises:
            UnknownTaskError: If ``split`` is not one of the splits.
            BridgeError: If an option is unknown.
        """
        check_options(options, _OPTIONS, bridge=_BRIDGE, where="list_tasks")
        return task_ids(split)

    def bridge_options(self) -> dict[str, Any]:
        """``runtime`` always; ``max_steps``, ``image`` and ``timeout`` when not the default."""
        from envharness.bridges.swe.image import IMAGE

        options: dict[str, Any] = {"runtime": self.runtime_kind}
        if self.max_steps != _DEFAULT_MAX_STEPS:
            options["max_steps"] = self.max_steps
        if self.image != IMAGE:
            options["image"] = self.image
        if self.timeout != _DEFAULT_TIMEOUT:
            options["timeout"] = self.timeout
        return options

    @property
    def task(self) -> Task:
        """The task (snapshot, issue, tests, gold patch)."""
        return self._task

    def task_fingerprint(self) -> str:
        """The hash of what the verifier runs: the snapshot, the hidden tests and the test ids.

        The verifier writes the agent's changes over the repository snapshot, then the hidden
        test files, and runs ``fail_to_pass`` and ``pass_to_pass``: the record is the task id
        and both lists, the files are every file of ``repo/`` and ``hidden/`` (by relative
        path). The issue text, the gold patch and the stages are not read by the verifier.
        ``runtime``, ``image``, ``timeout`` and ``max_steps`` do not change it.
        """
        return cached_fingerprint(self, self._fingerprint)

    def _fingerprint(self) -> str:
        task = self._task
        files = {f"repo/{path}": data for path, data in task.files.items()}
        files.update({f"hidden/{path}": data for path, data in task.hidden_files.items()})
        record = {
            "bridge": _BRIDGE,
            "task_id": task.task_id,
            "fail_to_pass": list(task.fail_to_pass),
            "pass_to_pass": list(task.pass_to_pass),
        }
        return task_fingerprint(record, files)

    # -- the episode ------------------------------------------------------------------------

    def tools(self) -> list[ToolSpec]:
        """``bash``, ``read_file``, ``edit_file``, ``run_tests`` and ``submit``."""
        return tool_specs(self.timeout, network=self.runtime_kind == "local")

    def reset(self, *, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Starts a fresh workspace with the repository; the seed is ignored.

        Raises:
            BridgeError: If the runtime cannot start (e.g. the Docker engine went away).
        """
        if self._runtime is not None:
            self._runtime.close()
        self._runtime = None
        self._started = False  # until the new workspace is up
        self._observation = None
        runtime = self._make_runtime()
        try:
            runtime.start(self._task.files)
        except BaseException:
            runtime.close()
            raise
        self._runtime = runtime
        self._started = True
        self._submitted = False
        self._steps = self._test_runs = 0
        self._last_tool = self._last_tests = ""
        self._files = dict(self._task.files)
        self._observation = self._intro()
        return self._observation, {"files": sorted(self._task.files), "runtime": self.runtime_kind}

    def _intro(self) -> str:
        """The files of the workspace now, what differs from the checkout, and the issue."""
        files = self._current_files()
        listing = "\n".join(f"  {path}" for path in sorted(files))
        changed = sorted(self._changes())
        note = f"\n\nChanged from the original checkout: {', '.join(changed)}" if changed else ""
        return (
            f"The repository `{self._task.package}` has these files:\n{listing}{note}\n\n"
            f"The issue to fix:\n{self._task.problem_statement}"
        )

    def step(self, action: Action) -> StepResult:
        """Runs one tool call.

        Raises:
            InvalidActionError: If the action does not match the tool schemas.
            EpisodeError: Before :meth:`reset`, after :meth:`close`, or after ``submit()``.
        """
        action = self.check_action(action)
        if not self._started:
            raise EpisodeError("no episode is running; call reset() first")
        if self._runtime is None:
            raise EpisodeError("the env was closed; call reset() to start again")
        if self._submitted:
            raise EpisodeError("the episode is over (the changes were submitted); call reset()")
        self._steps += 1
        self._last_tool = action.tool
        if action.tool == "submit":
            return self._submit()
        outcome = self._run_tool(self._runtime, action)
        if outcome.mutated:
            self._files = None
        if action.tool == "run_tests" and "invalid_action" not in outcome.info:
            self._test_runs += 1
            self._last_tests = outcome.info.get("tests", "")
        self._observation = outcome.observation
        return StepResult(outcome.observation, 0.0, False, False, dict(outcome.info))

    def _run_tool(self, runtime: Runtime, action: Action) -> ToolOutcome:
        args = action.args
        if action.tool == "bash":
            return run_bash(runtime, args["command"], self.timeout)
        if action.tool == "read_file":
            return read_file(runtime, args["path"])
        if action.tool == "edit_file":
            return edit_file(runtime, args["path"], args["old"], args["new"])
        return run_tests(runtime, args.get("target", ""), self.timeout)

    def _submit(self) -> StepResult:
        evaluation = self.evaluate()
        self._submitted = True
        f2p, p2p = evaluation.details["fail_to_pass"], evaluation.details["pass_to_pass"]
        verdict = "All hidden tests pass." if evaluation.success else "Some hidden tests fail."
        self._observation = (
            f"Submitted. {verdict} Tests for the issue: {f2p['passed']}/{f2p['total']} pass; "
            f"other tests: {p2p['passed']}/{p2p['total']} pass. The episode is over."
        )
        reward = 1.0 if evaluation.success else 0.0
        return StepResult(self._observation, reward, True, False, {"success": evaluation.success})

    def observe(self) -> str:
        """The workspace as a start shows it: its files, what changed, and the issue.

        Once the changes were submitted, the verdict (the episode is over).

        Raises:
            EpisodeError: Before :meth:`reset`.
        """
        if self._observation is None:
            raise EpisodeError("no episode is running; call reset() first")
        if self._submitted or self._runtime is None:
            return self._observation
        return self._intro()

    def mark_episode_start(self) -> None:
        """Restarts the step and test counters (the steps so far were a ``Setups`` replay)."""
        self._steps = self._test_runs = 0
        self._last_tool = self._last_tests = ""

    # -- the workspace ----------------------------------------------------------------------

    def _current_files(self) -> dict[str, bytes]:
        """The workspace's files (read again after any step that may have changed them)."""
        if self._files is None:
            if self._runtime is None:  # closed while stale: cannot happen (close reads first)
                return dict(self._task.files)
            self._files = self._runtime.snapshot()
        return self._files

    def _changes(self) -> Changes:
        if not self._started:
            return {}
        return compute_changes(self._task.files, self._current_files())

    def evaluate(self) -> Evaluation:
        """The hidden tests on the changes so far, in a fresh workspace (cached per change set).

        ``details``: ``fail_to_pass`` and ``pass_to_pass`` (``passed``, ``total``, ``failed``
        ids), ``changed_files``, ``ignored_changes`` (protected paths), ``timed_out``, ``patch``.
        """
        return verify(
            self._task,
            self._changes(),
            self._make_runtime,
            runtime_key=self._runtime_key(),
            timeout=_VERIFY_TIMEOUT,
        )

    def _runtime_key(self) -> str:
        return f"docker:{self.image}" if self.runtime_kind == "docker" else "local"

    # -- state ------------------------------------------------------------------------------

    def get_env_state(self) -> dict[str, Any]:
        """A fresh JSON-able view: files, changed files, diff, step and test counters."""
        files = self._current_files() if self._started else self._task.files
        changes = self._changes()
        return {
            "files": sorted(files),
            "changed_files": list(changes),
            "diff": unified_diff(self._task.files, changes, _MAX_STATE_DIFF),
            "steps": self._steps,
            "test_runs": self._test_runs,
            "last_tool": self._last_tool,
            "last_tests": self._last_tests,
            "submitted": self._submitted,
        }

    def env_state_schema(self) -> dict[str, Any]:
        """The JSON-Schema of :meth:`get_env_state`, with a description per field."""
        return json.loads(json.dumps(_STATE_SCHEMA))

    def save_state(self) -> dict[str, Any]:
        """The task, options, counters, last observation and the changed files' contents."""
        return {
            "bridge": _BRIDGE,
            "task_id": self.task_id,
            "options": self.bridge_options(),
            "started": self._started,
            "submitted": self._submitted,
            "steps": self._steps,
            "test_runs": self._test_runs,
            "last_tool": self._last_tool,
            "last_tests": self._last_tests,
            "observation": self._observation,
            "changes": {path: _encode(data) for path, data in self._changes().items()},
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> SweEnv:
        """Rebuilds the env :meth:`save_state` recorded: a fresh workspace with the changes.

        Raises:
            BridgeError: If ``state`` is malformed.
            UnknownTaskError: If its task does not exist.
        """
        state = check_saved_state(
            state, bridge=_BRIDGE, keys=_SAVED_KEYS, options=_OPTIONS, env_name=_NAME
        )
        changes = state["changes"]
        if not isinstance(changes, Mapping) or not all(isinstance(p, str) for p in changes):
            raise _bad_state("'changes' must be a dict of path -> file")
        for key in ("steps", "test_runs"):
            if isinstance(state[key], bool) or not isinstance(state[key], int) or state[key] < 0:
                raise _bad_state(f"'{key}' must be a non-negative int")
        decoded = {path: _decode(value) for path, value in changes.items()}
        env = cls(state["task_id"], **state["options"])
        if not state["started"]:
            check_nothing_recorded(state, ("changes", "steps"), bridge=_BRIDGE, env_name=_NAME)
            return env
        env.reset()
        assert env._runtime is not None
        try:
            for path, data in decoded.items():
                if data is None:
                    env._runtime.remove(path)
                else:
                    env._runtime.write(path, data)
        except Exception as e:
            env.close()
            raise _bad_state(f"cannot write the changes back: {e}") from e
        env._files = None
        env._submitted = bool(state["submitted"])
        env._steps, env._test_runs = state["steps"], state["test_runs"]
        env._last_tool, env._last_tests = str(state["last_tool"]), str(state["last_tests"])
        if state["observation"] is not None:
            env._observation = str(state["observation"])
        return env

    # -- solving ----------------------------------------------------------------------------

    def oracle_actions(self) -> list[Action]:
        """The gold patch as ``edit_file`` calls from the current workspace, then ``submit()``.

        ``[]`` once submitted. Before :meth:`reset`, the plan from the task's snapshot. See
        :func:`~envharness.bridges.swe.oracle.oracle_plan`.
        """
        if self._submitted:
            return []
        files = self._current_files() if self._started else self._task.files
        return oracle_plan(self._task, files)

    def stage_candidates(self) -> list[list[Action]]:
        """Start states with a stale CI log, misleading notes, or a renamed helper.

        Each keeps the task solvable (see :mod:`~envharness.bridges.swe.oracle`).
        """
        return [actions for _, actions in stage_candidates(self._task)]

    def close(self) -> None:
        """Removes the workspace (the container or temporary folder). Idempotent.

        The state stays readable: the files are read once more before the workspace goes.
        """
        runtime, self._runtime = self._runtime, None
        if runtime is None:
            return
        try:
            if self._files is None and runtime.running:
                try:
                    self._files = runtime.snapshot()
                except BridgeError:  # the workspace is already gone: keep the last view
                    self._files = dict(self._task.files)
        finally:
            runtime.close()

    def __repr__(self) -> str:
        return f"<SweEnv task={self.task_id!r} runtime={self.runtime_kind!r}>"
