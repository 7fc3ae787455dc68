"""The agent's tools: the SWE bridge's, with ``run_tests`` running the repository's test command.

``bash``, ``read_file``, ``edit_file`` and ``submit`` are the ``swe`` bridge's; ``run_tests``
runs the instance's own test command (``pytest -rA``, sympy's ``bin/test -C --verbose``).

Example:
    >>> [spec.name for spec in tool_specs(60, "pytest -rA", ["tests/test_x.py"])]
    ['bash', 'read_file', 'edit_file', 'run_tests', 'submit']
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from envharness.bridges.swe.runtime import Runtime, WorkspaceFileError, normalize_path, truncate
from envharness.bridges.swe.tools import ToolOutcome, strip_timings
from envharness.bridges.swe.tools import tool_specs as swe_tool_specs
from envharness.core import ToolSpec

__all__ = ["run_tests", "tool_specs"]

_OUTPUT_LIMIT = 10_000


def tool_specs(timeout: float, test_cmd: str, default_targets: Sequence[str]) -> list[ToolSpec]:
    """The five tools; ``run_tests`` names the repository's test command and default targets."""
    specs = swe_tool_specs(timeout, network=False)
    default = " ".join(default_targets) or "the whole test suite"
    run = ToolSpec(
        "run_tests",
        f"Run the repository's tests with its test command (`{test_cmd}`) and show the "
        f"results: one test file or test id, or by default {default}.",
        {
            "type": "object",
            "properties": {
                "target": {
                    "type": "string",
                    "description": (
                        "Optional: a test file or test id, e.g. 'tests/test_core.py' or "
                        f"'tests/test_core.py::test_name'. Default: {default}."
                    ),
                }
            },
        },
    )
    return [run if spec.name == "run_tests" else spec for spec in specs]


def run_tests(
    runtime: Runtime, test_cmd: str, target: str, default_targets: Sequence[str], timeout: float
) -> ToolOutcome:
    """``run_tests(target)``: the test command on ``target`` (or the default targets)."""
    target = target.strip()
    if target.startswith("-"):
        return ToolOutcome(
            "Error: `target` is a test file or test id, not an option",
            {"invalid_action": "`target` is a test file or test id, not an option"},
        )
    if target:
        file, sep, rest = target.partition("::")
        try:
            targets = [normalize_path(file) + sep + rest]
        except WorkspaceFileError as e:
            return ToolOutcome(f"Error: {e}", {"invalid_action": str(e)})
    else:
        targets = list(default_targets)
    command = " ".join([test_cmd, *(shlex.quote(t) for t in targets)])
    result = runtime.run(command, timeout=timeout)
    text = strip_timings(result.output)
    lines = [line.strip(" =") for line in text.splitlines() if line.strip()]
    summary = lines[-1] if lines else ""
    info = {"exit_code": result.exit_code, "tests": summary[:200]}
    body = truncate(text, _OUTPUT_LIMIT)
    if body and not body.endswith("\n"):
        body += "\n"
    if result.timed_out:
        info["timed_out"] = True
        return ToolOutcome(f"{body}[timed out after {timeout:g} s]", info, mutated=True)
    return ToolOutcome(f"{body}[exit code {result.exit_code}]", info, mutated=True)
