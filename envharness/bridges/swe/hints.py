"""The swe bridge's notes for the designer's and diagnoser's prompts.

Read through :meth:`SweEnv.designer_hints`, the hook that third-party bridges implement too:
what the bridge's state means, its tools, the policy's usual weaknesses and the
perturbations that fit it. Markdown; keep it short, it goes into every designer prompt.
"""

__all__ = ["HINTS"]

HINTS = """\
# About this environment: SWE (fix a bug in a small Python repository)

- Tools: `bash(command)`, `read_file(path)`, `edit_file(path, old, new)` (`old` must occur exactly
  once), `run_tests(target)`, `submit()`. `submit()` ends the episode; hidden tests (`fail_to_pass`
  and `pass_to_pass`) decide success. Episodes are deterministic (the seed is ignored); budget 30
  steps by default. Each episode gets a fresh workspace, so rollouts are slow: keep Setups short.
- The state: `files`, `changed_files`, `diff` (changes since the start), `steps` (tool calls),
  `test_runs`, `last_tool`, `last_tests` (pytest's summary of the last run, e.g. '1 failed, 9
  passed'), `submitted`.
- Typical weaknesses: submitting without running the tests, editing the tests instead of the code,
  failing `edit_file` calls with an `old` that is not unique, running out of steps while exploring
  with bash.
- Scaffolds: a rule that blocks `submit()` once while `last_tests` shows failures (say so in the
  message); Setups that show the failing test's output. Hardening: get_stage_candidates adds a stale
  CI log, a NOTES.md with a wrong guess about the bug, or a renamed helper (each checked solvable);
  a rule that, with probability `P` (a knob), truncates a long `bash` output.
- Do not block `edit_file` or `submit()` outright, and do not hide the issue text: every solution
  needs them.
"""
