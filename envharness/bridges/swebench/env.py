"""``SwebenchEnv``: one real SWE-bench instance, judged by SWE-bench's own evaluation."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from envharness.bridgekit.cache import bridge_cache_dir
from envharness.bridgekit.checks import (
    check_nothing_recorded,
    check_options,
    check_positive_int,
    check_saved_state,
    state_error,
)
from envharness.bridgekit.fingerprint import cached_fingerprint, task_fingerprint
from envharness.bridges.swe.oracle import write_file_action
from envharness.bridges.swe.runtime import Runtime
from envharness.bridges.swe.tools import ToolOutcome, edit_file, read_file, run_bash
from envharness.bridges.swebench.dataset import (
    BRIDGE,
    Instance,
    find_instance,
    load_instances,
    load_json_side_file,
)
from envharness.bridges.swebench.prepare import Prepared, prepare
from envharness.bridges.swebench.sources import REPOS_ENV, choose_source
from envharness.bridges.swebench.specs import EnvSpec, require_swebench, resolve_spec
from envharness.bridges.swebench.tools import run_tests, tool_specs
from envharness.bridges.swebench.verify import agent_patch, verify
from envharness.core import Action, ActionableEnv, Evaluation, StepResult, ToolSpec
from envharness.errors import BridgeError, EpisodeError

__all__ = ["DEFAULT_RUNTIME", "RUNTIMES", "SwebenchEnv"]

_NAME = "SwebenchEnv"
RUNTIMES = ("docker", "local")
DEFAULT_RUNTIME = "docker"
"""The runtime used when none is given (overridden by ``$ENVHARNESS_SWEBENCH_RUNTIME``)."""

_DEFAULT_MAX_STEPS = 50
_DEFAULT_TIMEOUT = 120.0
_VERIFY_TIMEOUT = 1200.0
_MAX_DIFF = 20_000
_OPTIONS = (
    "dataset",
    "specs",
    "sources",
    "repos_dir",
    "runtime",
    "max_steps",
    "timeout",
    "cache_dir",
)
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
    "patch",
)
_STATE_FIELDS: dict[str, Any] = {
    "changed_files": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Files added, changed or deleted since the start (sorted).",
    },
    "diff": {
        "type": "string",
        "description": "The changes since the start as a git diff (cut to 20000 characters).",
    },
    "steps": {"type": "integer", "description": "Tool calls made this episode (not setup steps)."},
    "test_runs": {"type": "integer", "description": "run_tests calls (not setup steps)."},
    "last_tool": {"type": "string", "description": "The last tool called ('' before any)."},
    "last_tests": {
        "type": "string",
        "description": "The last line of the last run_tests output, e.g. '1 failed, 9 passed'.",
    },
    "submitted": {"type": "boolean", "description": "submit() was called (the episode is over)."},
}
_STATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A real repository being fixed (a SWE-bench instance): changes and tool use.",
    "properties": _STATE_FIELDS,
    "required": list(_STATE_FIELDS),
}

_INSTRUCTION = """\
Fix the issue below in the repository {repo}, checked out in /workspace.

<issue>
{problem}
</issue>

Tools: bash(command) runs a shell command in /workspace (no network); read_file(path) shows a
file; edit_file(path, old, new) replaces one exact occurrence of `old` in a file; run_tests()
runs the repository's tests ({test_cmd}; or run_tests(target) one file or test); submit() ends
the episode. After you submit, your changes are applied to a fresh checkout, the tests for the
issue are added, and the repository's tests decide (SWE-bench's evaluation)."""


def _default_runtime() -> str:
    return os.environ.get("ENVHARNESS_SWEBENCH_RUNTIME") or DEFAULT_RUNTIME


def _path_option(name: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str | os.PathLike) or not str(value):
        raise BridgeError(f"{name}: expected a path, got {value!r}", bridge=BRIDGE)
    return str(Path(value).expanduser().resolve())


def _bad_state(problem: str) -> BridgeError:
    return state_error(problem, bridge=BRIDGE, env_name=_NAME)


def _changed_files(patch: str) -> list[str]:
    files = set()
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            parts = line.split(" b/", 1)
            if len(parts) == 2:
                files.add(parts[1])
    return sorted(files)


class SwebenchEnv(ActionableEnv):
    """One SWE-bench instance: fix a real repository's issue, judged by SWE-bench's evaluation.

    The instance comes from a dataset file in SWE-bench's format (``dataset=``; JSONL or
    parquet; a split is a file). The repository's tree comes from a clone in ``repos_dir``
    (folders named ``owner__name``; default ``$ENVHARNESS_SWEBENCH_REPOS``) or, where
    ``sources.json`` says it reproduces the instance, from its PyPI sdist. The environment (a
    Docker image per repository and version, then per instance; or a local venv) is built once
    and cached. Tools as in the ``swe`` bridge: ``bash``, ``read_file``, ``edit_file``,
    ``run_tests`` and ``submit``. ``submit()`` ends the episode with reward 1.0 when the
    instance is resolved, else 0.0. ``evaluate()`` applies the agent's changes to a fresh
    workspace and runs SWE-bench's evaluation there (see
    :mod:`~envharness.bridges.swebench.verify`); ``details`` report every FAIL_TO_PASS and
    PASS_TO_PASS test, the source used and whether the tree is exactly ``base_commit``'s.
    ``save_state()`` records the changes as a patch; ``from_state`` applies it to a fresh
    workspace.

    Args:
        task_id: The instance id.
        dataset: The dataset file.
        specs: ``specs.json`` (default: beside the dataset, when there).
        sources: ``sources.json`` (default: beside the dataset, when there).
        repos_dir: The folder of clones (default ``$ENVHARNESS_SWEBENCH_REPOS``).
        runtime: ``"docker"`` (default; ``$ENVHARNESS_SWEBENCH_RUNTIME``) or ``"local"`` (a
            temporary folder and a venv on this machine: trusted policies only).
        max_steps: The agent's step budget.
        timeout: Seconds each command or test run may take.
        cache_dir: Where trees, wheels and venvs are kept (default: the bridge cache folder).

    Raises:
        UnknownTaskError: If the dataset has no such instance.
        BridgeError: If an option or the dataset is bad, or the instance has no source.
        DependencyNotInstalled: If ``swebench`` (or, for Docker, ``docker``) is missing.

    Example:
        >>> env = SwebenchEnv(  # doctest: +SKIP
        ...     "marshmallow-code__marshmallow-1359",
        ...     dataset="../shared/data/swebench/instances.jsonl",
        ... )
        >>> observation, info = env.reset()  # doctest: +SKIP
        >>> for action in env.oracle_actions():  # doctest: +SKIP
        ...     result = env.step(action)
        >>> result.reward, env.evaluate().details["source"]  # doctest: +SKIP
        (1.0, 'sdist')
    """

    bridge_name: ClassVar[str] = BRIDGE

    def __init__(
        self,
        task_id: str,
        *,
        dataset: str | os.PathLike[str] | None = None,
        specs: str | os.PathLike[str] | None = None,
        sources: str | os.PathLike[str] | None = None,
        repos_dir: str | os.PathLike[str] | None = None,
        runtime: str | None = None,
        max_steps: int = _DEFAULT_MAX_STEPS,
        timeout: float = _DEFAULT_TIMEOUT,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        require_swebench()  # the extra first: without it nothing here can work
        if dataset is None:
            raise BridgeError(
                "dataset: give the path of a SWE-bench JSONL or parquet file (one split)",
                bridge=BRIDGE,
            )
        kind = _default_runtime() if runtime is None else runtime
        if kind not in RUNTIMES:
            raise BridgeError(f"runtime: expected 'docker' or 'local', got {kind!r}", bridge=BRIDGE)
        check_positive_int("max_steps", max_steps, bridge=BRIDGE)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise BridgeError(f"timeout: expected seconds > 0, got {timeout!r}", bridge=BRIDGE)
        self._options = {
            "dataset": _path_option("dataset", dataset),
            "specs": _path_option("specs", specs),
            "sources": _path_option("sources", sources),
            "repos_dir": _path_option("repos_dir", repos_dir),
            "cache_dir": _path_option("cache_dir", cache_dir),
        }
        dataset_path = self._options["dataset"]
        assert dataset_path is not None
        self._instance: Instance = find_instance(dataset_path, task_id)
        specs_json = load_json_side_file(self._options["specs"], dataset_path, "specs.json")
        sources_json = load_json_side_file(self._options["sources"], dataset_path, "sources.json")
        self._spec: EnvSpec = resolve_spec(self._instance, specs_json)
        effective_repos = self._options["repos_dir"] or os.environ.get(REPOS_ENV) or None
        self._chosen = choose_source(self._instance, sources_json, effective_repos)
        self._cache = Path(self._options["cache_dir"] or bridge_cache_dir(BRIDGE))
        self.task_id = task_id
        self.max_steps = max_steps
        self.runtime_kind = kind
        self.timeout = float(timeout)
        self.instruction = _INSTRUCTION.format(
            repo=self._instance.repo,
            problem=self._instance.problem_statement.strip(),
            test_cmd=self._spec.test_cmd,
        )
        self._prepared: Prepared | None = None
        self._runtime: Runtime | None = None
        self._started = False
        self._submitted = False
        self._steps = 0
        self._test_runs = 0
        self._last_tool = ""
        self._last_tests = ""
        self._observation: str | None = None
        self._patch: bytes | None = b""  # the changes so far; None when stale

    # -- tasks ------------------------------------------------------------------------------

    @classmethod
    def list_tasks(cls, split: str = "train", **options: Any) -> list[str]:
        """The instance ids of the dataset file, in file order.

        A split is a file (``dataset=``), so ``split`` is accepted for symmetry and ignored.

        Raises:
            BridgeError: If ``dataset`` is missing or malformed, or an option is unknown.
        """
        check_options(options, _OPTIONS, bridge=BRIDGE, where="list_tasks")
        if options.get("dataset") is None:
            raise BridgeError("list_tasks needs dataset=PATH (a SWE-bench file)", bridge=BRIDGE)
        return [instance.instance_id for instance in load_instances(options["dataset"])]

    def bridge_options(self) -> dict[str, Any]:
        """``dataset`` and ``runtime`` always; the other options when given or not default."""
        options: dict[str, Any] = {k: v for k, v in self._options.items() if v is not None}
        options["runtime"] = self.runtime_kind
        if self.max_steps != _DEFAULT_MAX_STEPS:
            options["max_steps"] = self.max_steps
        if self.timeout != _DEFAULT_TIMEOUT:
            options["timeout"] = self.timeout
        return options

    @property
    def instance(self) -> Instance:
        """The SWE-bench instance."""
        return self._instance

    @property
    def env_spec(self) -> EnvSpec:
        """The resolved install and test spec."""
        return self._spec

    def task_fingerprint(self) -> str:
        """The hash of what the verifier reads: the instance's tests, patches and test command.

        The record holds the instance id, repository, version, base commit, both test lists,
        the test patch, the test command, the parser and the source's tree hash when known.
        """
        return cached_fingerprint(self, self._fingerprint)

    def _fingerprint(self) -> str:
        instance = self._instance
        record = {
            "bridge": BRIDGE,
            "instance_id": instance.instance_id,
            "repo": instance.repo,
            "version": instance.version,
            "base_commit": instance.base_commit,
            "fail_to_pass": list(instance.fail_to_pass),
            "pass_to_pass": list(instance.pass_to_pass),
            "test_command": self._spec.test_command,
            "log_parser": self._spec.parser_name,
            "source": self._chosen[0],
        }
        return task_fingerprint(record, {"test_patch": instance.test_patch.encode()})

    # -- preparation ------------------------------------------------------------------------

    def prepare(self) -> Prepared:
        """Builds (or finds cached) the tree and environment; the first call may take minutes.

        Raises:
            BridgeError: If the source, wheelhouse or environment cannot be made.
        """
        if self._prepared is None:
            self._prepared = prepare(
                self._instance,
                self._spec,
                self._chosen,
                runtime=self.runtime_kind,
                cache=self._cache,
            )
        return self._prepared

    # -- the episode ------------------------------------------------------------------------

    def tools(self) -> list[ToolSpec]:
        """``bash``, ``read_file``, ``edit_file``, ``run_tests`` and ``submit``."""
        return tool_specs(self.timeout, self._spec.test_cmd, self._default_targets())

    def _default_targets(self) -> list[str]:
        directives = self._spec.test_command[len(self._spec.test_cmd) :].split()
        return [d for d in directives if d in self._spec.test_files]

    def reset(self, *, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Starts a fresh workspace at the instance's start; the seed is ignored.

        Raises:
            BridgeError: If the environment cannot be built or the runtime cannot start.
        """
        prepared = self.prepare()
        if self._runtime is not None:
            self._runtime.close()
        self._runtime = None
        self._started = False
        self._observation = None
        runtime = prepared.make_runtime()
        try:
            runtime.start({})
        except BaseException:
            runtime.close()
            raise
        self._runtime = runtime
        self._started = True
        self._submitted = False
        self._steps = self._test_runs = 0
        self._last_tool = self._last_tests = ""
        self._patch = b""
        self._observation = self._intro()
        info = {"runtime": self.runtime_kind, "source": prepared.tree.kind}
        return self._observation, info

    def _intro(self) -> str:
        prepared = self.prepare()
        listing = "  ".join(prepared.top_level)
        changed = _changed_files(self._current_patch().decode("utf-8", "replace"))
        note = f"\n\nChanged since the start: {', '.join(changed)}" if changed else ""
        return (
            f"The repository {self._instance.repo} is in /workspace. Top level:\n  {listing}"
            f"{note}\n\nThe issue to fix:\n{self._instance.problem_statement.strip()}"
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
            self._patch = None
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
        return run_tests(
            runtime,
            self._spec.test_cmd,
            args.get("target", ""),
            self._default_targets(),
            self.timeout,
        )

    def _submit(self) -> StepResult:
        evaluation = self.evaluate()
        self._submitted = True
        f2p, p2p = evaluation.details["fail_to_pass"], evaluation.details["pass_to_pass"]
        verdict = "Resolved." if evaluation.success else "Not resolved."
        self._observation = (
            f"Submitted. {verdict} FAIL_TO_PASS: {f2p['passed']}/{f2p['total']} pass; "
            f"PASS_TO_PASS: {p2p['passed']}/{p2p['total']} pass. The episode is over."
        )
        reward = 1.0 if evaluation.success else 0.0
        return StepResult(self._observation, reward, True, False, {"success": evaluation.success})

    def observe(self) -> str:
        """The start view (top-level files, what changed, the issue); the verdict once submitted.

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

    # -- changes and the verdict ------------------------------------------------------------

    def _current_patch(self) -> bytes:
        if self._patch is None:
            if self._runtime is None:
                return b""
            self._patch = agent_patch(self._runtime, self.prepare().base_sha)
        return self._patch

    def evaluate(self) -> Evaluation:
        """SWE-bench's evaluation of the changes so far, in a fresh workspace (cached per patch).

        ``details``: ``resolved``, ``fail_to_pass`` / ``pass_to_pass`` (``passed``, ``total``,
        ``failed``, ``outcomes`` per test id), ``patch_successfully_applied``, ``tests_ran``,
        ``timed_out``, ``seconds``, ``log_tail``, ``patch``, ``source`` (``clone``/``sdist``),
        ``tree_equals_base_commit``, ``source_detail``, ``spec_source``, ``adaptations``,
        ``test_command``, ``log_parser``, ``runtime`` and (Docker) ``image``.
        """
        prepared = self.prepare()
        patch = self._current_patch() if self._started else b""
        return verify(
            self._instance,
            self._spec,
            patch,
            base_sha=prepared.base_sha,
            make_runtime=prepared.make_runtime,
            runtime_key=prepared.runtime_key,
            timeout=_VERIFY_TIMEOUT,
            record=dict(prepared.record),
        )

    # -- state ------------------------------------------------------------------------------

    def get_env_state(self) -> dict[str, Any]:
        """A fresh JSON-able view: changed files, the diff, step and test counters."""
        patch = self._current_patch().decode("utf-8", "replace") if self._started else ""
        diff = patch if len(patch) <= _MAX_DIFF else patch[:_MAX_DIFF] + "\n[... cut ...]\n"
        return {
            "changed_files": _changed_files(patch),
            "diff": diff,
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
        """The instance, options, counters, last observation and the changes as a patch."""
        patch = self._current_patch() if self._started else b""
        return {
            "bridge": BRIDGE,
            "task_id": self.task_id,
            "options": self.bridge_options(),
            "started": self._started,
            "submitted": self._submitted,
            "steps": self._steps,
            "test_runs": self._test_runs,
            "last_tool": self._last_tool,
            "last_tests": self._last_tests,
            "observation": self._observation,
            "patch": patch.decode("utf-8", "surrogateescape"),
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> SwebenchEnv:
        """Rebuilds the env :meth:`save_state` recorded: a fresh workspace with the patch applied.

        Raises:
            BridgeError: If ``state`` is malformed or its patch does not apply.
            UnknownTaskError: If its instance does not exist.
        """
        state = check_saved_state(
            state, bridge=BRIDGE, keys=_SAVED_KEYS, options=_OPTIONS, env_name=_NAME
        )
        if not isinstance(state["patch"], str):
            raise _bad_state("'patch' must be a string")
        for key in ("steps", "test_runs"):
            if isinstance(state[key], bool) or not isinstance(state[key], int) or state[key] < 0:
                raise _bad_state(f"'{key}' must be a non-negative int")
        env = cls(state["task_id"], **state["options"])
        if not state["started"]:
            check_nothing_recorded(state, ("patch", "steps"), bridge=BRIDGE, env_name=_NAME)
            return env
        env.reset()
        assert env._runtime is not None
        patch = state["patch"].encode("utf-8", "surrogateescape")
        if patch:
            env._runtime.write(".git/envharness-restore.diff", patch)
            result = env._runtime.run(
                "git apply --binary .git/envharness-restore.diff && "
                "rm -f .git/envharness-restore.diff",
                timeout=120,
            )
            if result.exit_code != 0:
                env.close()
                raise _bad_state(f"the saved patch does not apply: {result.output[-500:]}")
        env._patch = None
        env._submitted = bool(state["submitted"])
        env._steps, env._test_runs = state["steps"], state["test_runs"]
        env._last_tool, env._last_tests = str(state["last_tool"]), str(state["last_tests"])
        if state["observation"] is not None:
            env._observation = str(state["observation"])
        return env

    # -- solving ----------------------------------------------------------------------------

    def oracle_actions(self) -> list[Action]:
        """The gold patch applied with ``git apply`` (a ``bash`` call), then ``submit()``.

        ``[]`` once submitted. Where the gold patch is already applied, the ``bash`` call still
        succeeds (it checks that the patch reverse-applies) and ``submit()`` follows.
        """
        if self._submitted:
            return []
        delimiter = "EOF_ENVHARNESS_GOLD"
        command = (
            f"git apply --verbose - <<'{delimiter}' || git apply --check -R - <<'{delimiter}'\n"
            f"{self._instance.patch}\n{delimiter}\n{self._instance.patch}\n{delimiter}"
        )
        return [Action("bash", {"command": command}), Action("submit", {})]

    def stage_candidates(self) -> list[list[Action]]:
        """Start states with misleading notes or a stale test log; each keeps it solvable."""
        targets = self._default_targets() or ["the tests"]
        notes = (
            "# Notes\n\n- I could not reproduce the issue; my guess is that the expectations in "
            f"`{targets[0]}` are off and the code is fine.\n"
        )
        log = f"$ {self._spec.test_command}\nFAILED (kept from an older CI run)\n"
        return [
            [write_file_action("NOTES.md", notes), Action("bash", {"command": "ls"})],
            [write_file_action("ci-last-run.log", log), Action("bash", {"command": "ls"})],
        ]

    def close(self) -> None:
        """Removes the workspace (the container or temporary folder). Idempotent.

        The changes stay readable: they are taken once more before the workspace goes.
        """
        runtime, self._runtime = self._runtime, None
        if runtime is None:
            return
        try:
            if self._patch is None and runtime.running:
                try:
                    self._patch = agent_patch(runtime, self.prepare().base_sha)
                except BridgeError:
                    self._patch = b""
        finally:
            runtime.close()

    def __repr__(self) -> str:
        return f"<SwebenchEnv task={self.task_id!r} runtime={self.runtime_kind!r}>"
