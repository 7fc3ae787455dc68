r"""The verifier: SWE-bench's evaluation of the agent's final tree, in a fresh workspace.

As SWE-bench's harness does, with its own parts (``swebench`` package): the agent's changes are
taken as a patch (``git diff`` of the workspace against the starting commit, new files
included), applied in a *fresh* workspace of the instance (``git apply``, then ``git apply
--reject``, then ``patch --fuzz=5``, SWE-bench's order); then the eval script runs: reinstall the
repository, reset the test files the test patch touches, apply ``test_patch``, run the
instance's test command between SWE-bench's output markers. The log between the markers is read
with the repository's SWE-bench log parser, and ``swebench.harness.grading`` decides: resolved
only when every ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` test passes (``PASSED`` or ``XFAIL``).

Verdicts are cached per process by image (or local environment) and patch.

Example:
    >>> print(eval_script_lines(["pytest -rA t.py"][0], "abc", "", ())[-3])
    pytest -rA t.py
"""

from __future__ import annotations

import copy
import hashlib
import shlex
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from envharness.bridges.swe.runtime import Runtime
from envharness.bridges.swebench.dataset import Instance
from envharness.bridges.swebench.specs import EnvSpec
from envharness.core import Evaluation

__all__ = [
    "AGENT_PATCH_COMMAND",
    "agent_patch",
    "eval_script_lines",
    "grade",
    "verify",
]

START = ">>>>> Start Test Output"
END = ">>>>> End Test Output"
APPLY_FAIL = ">>>>> Patch Apply Failed"
APPLY_PASS = ">>>>> Applied Patch"
_HEREDOC = "EOF_114329324912"
_PATCH_FILE = ".git/envharness-agent.diff"
_SCRIPT_FILE = ".git/envharness-eval.sh"
_CACHE: OrderedDict[tuple[str, str], dict[str, Any]] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 128

AGENT_PATCH_COMMAND = (
    'set -e; index=$(mktemp); cp .git/index "$index" 2>/dev/null || true; '
    'export GIT_INDEX_FILE="$index"; git add -A . >/dev/null 2>&1; '
    "git -c core.quotepath=off diff --cached --binary --no-color --no-ext-diff --no-textconv "
    "{base} > " + _PATCH_FILE + '; rm -f "$index"'
)
"""Writes the workspace's changes against ``{base}`` (new files included) to a patch file."""


def agent_patch(runtime: Runtime, base_sha: str, timeout: float = 120.0) -> bytes:
    """The agent's changes in ``runtime`` as a git patch against ``base_sha`` (``b""``: none).

    The patch is made with a temporary index, so the workspace's own index is left alone; files
    that ``.gitignore`` ignores are not part of it (as in SWE-bench).
    """
    result = runtime.run(AGENT_PATCH_COMMAND.format(base=shlex.quote(base_sha)), timeout=timeout)
    if result.exit_code != 0:
        return b""
    try:
        data = runtime.read(_PATCH_FILE)
    finally:
        runtime.remove(_PATCH_FILE)
    return data


def eval_script_lines(
    test_command: str,
    base: str,
    test_patch: str,
    test_files: Sequence[str],
    *,
    install: str = "",
    eval_commands: Sequence[str] = (),
) -> list[str]:
    """SWE-bench's eval script (``make_eval_script_list_py``), for our venv and start commit."""
    files = " ".join(shlex.quote(f) for f in test_files)
    reset = f"git checkout {base} {files}" if test_files else 'echo "No test files to reset"'
    lines = ['WORKSPACE="$(pwd)"', *eval_commands]
    lines += [
        'git config --global --add safe.directory "$WORKSPACE"',
        'cd "$WORKSPACE"',
        "git status",
        "git show --stat",
        f"git -c core.fileMode=false diff {base}",
    ]
    if install:
        lines.append(install)
    lines += [
        reset,
        f"git apply -v - <<'{_HEREDOC}'\n{test_patch}\n{_HEREDOC}",
        f": '{START}'",
        test_command,
        f": '{END}'",
        reset,
    ]
    return lines


def _apply_command() -> str:
    patch = _PATCH_FILE
    return (
        f"if git apply --verbose {patch}; then echo '{APPLY_PASS}'; "
        f"elif git apply --verbose --reject {patch}; then echo '{APPLY_PASS}'; "
        f"elif patch --batch --fuzz=5 -p1 -i {patch}; then echo '{APPLY_PASS}'; "
        f"else echo '{APPLY_FAIL}'; fi"
    )


def grade(instance: Instance, spec: EnvSpec, log: str) -> dict[str, Any]:
    """SWE-bench's grading of an eval log: per-test outcomes and the resolution status."""
    from swebench.harness.constants import EvalType, ResolvedStatus
    from swebench.harness.grading import get_eval_tests_report, get_resolution_status

    found = START in log and END in log and APPLY_FAIL not in log
    status: dict[str, str] = {}
    if found:
        parser = spec.parser()
        status = parser(log.split(START, 1)[1].split(END, 1)[0], None)
        if not status:  # SWE-bench reads the whole log when nothing was between the markers
            status = parser(log, None)
    gold = {
        "FAIL_TO_PASS": list(instance.fail_to_pass),
        "PASS_TO_PASS": list(instance.pass_to_pass),
    }
    report = get_eval_tests_report(status, gold, eval_type=EvalType.PASS_AND_FAIL)
    resolved = found and get_resolution_status(report) == ResolvedStatus.FULL.value

    def outcomes(ids: Sequence[str], key: str) -> dict[str, Any]:
        return {
            "passed": len(report[key]["success"]),
            "total": len(ids),
            "failed": [t for t in ids if t not in report[key]["success"]],
            "outcomes": {t: status.get(t, "MISSING") for t in ids},
        }

    return {
        "resolved": resolved,
        "patch_successfully_applied": APPLY_FAIL not in log,
        "tests_ran": found,
        "fail_to_pass": outcomes(instance.fail_to_pass, "FAIL_TO_PASS"),
        "pass_to_pass": outcomes(instance.pass_to_pass, "PASS_TO_PASS"),
    }


def _run_eval(
    instance: Instance,
    spec: EnvSpec,
    patch: bytes,
    base_sha: str,
    make_runtime: Callable[[], Runtime],
    timeout: float,
) -> dict[str, Any]:
    script = ["#!/bin/bash", "set -uxo pipefail"]
    if patch:
        script.append(_apply_command())
    script += eval_script_lines(
        spec.test_command,
        base_sha,
        instance.test_patch,
        spec.test_files,
        install=spec.install,
        eval_commands=spec.eval_commands,
    )
    started = time.monotonic()
    runtime = make_runtime()
    try:
        runtime.start({})
        if patch:
            runtime.write(_PATCH_FILE, patch)
        runtime.write(_SCRIPT_FILE, ("\n".join(script) + "\n").encode())
        result = runtime.run(f"bash {_SCRIPT_FILE} 2>&1", timeout=timeout)
    finally:
        runtime.close()
    graded = grade(instance, spec, result.output)
    graded["timed_out"] = result.timed_out
    graded["seconds"] = round(time.monotonic() - started, 2)
    graded["log_tail"] = result.output[-4000:]
    return graded


def verify(
    instance: Instance,
    spec: EnvSpec,
    patch: bytes,
    *,
    base_sha: str,
    make_runtime: Callable[[], Runtime],
    runtime_key: str,
    timeout: float,
    record: dict[str, Any],
) -> Evaluation:
    """SWE-bench's verdict on ``patch`` (the agent's changes), from a fresh runtime.

    Args:
        instance: The instance.
        spec: Its resolved spec.
        patch: The agent's changes (a git patch; ``b""`` for none).
        base_sha: The commit the patch is against.
        make_runtime: Builds a fresh runtime of the instance (closed before returning).
        runtime_key: Names the image or local environment, for the cache.
        timeout: Seconds the eval script may take.
        record: Fields added to ``details`` (the source used, the spec's adaptations ...).

    Returns:
        ``success`` when resolved; ``details`` holds ``resolved``, ``fail_to_pass`` and
        ``pass_to_pass`` (``passed``, ``total``, ``failed``, ``outcomes`` per test),
        ``patch_successfully_applied``, ``tests_ran``, ``timed_out``, ``seconds``,
        ``log_tail``, ``patch`` and ``record``'s fields.
    """
    key = (runtime_key, hashlib.sha256(patch).hexdigest())
    with _CACHE_LOCK:
        graded = _CACHE.get(key)
        if graded is not None:
            _CACHE.move_to_end(key)
    if graded is None:
        graded = _run_eval(instance, spec, patch, base_sha, make_runtime, timeout)
        with _CACHE_LOCK:
            _CACHE[key] = graded
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
    details = copy.deepcopy(graded)
    details["patch"] = patch.decode("utf-8", "replace")[:20_000]
    details.update(copy.deepcopy(record))
    success = bool(details["resolved"]) and not details["timed_out"]
    return Evaluation(success, 1.0 if success else 0.0, details)
