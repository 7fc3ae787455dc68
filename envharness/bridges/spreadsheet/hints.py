"""The spreadsheet bridge's notes for the designer's and diagnoser's prompts.

Read through :meth:`SpreadsheetEnv.designer_hints`, the hook that third-party bridges implement too:
what the bridge's state means, its tools, the policy's usual weaknesses and the
perturbations that fit it. Markdown; keep it short, it goes into every designer prompt.
"""

__all__ = ["HINTS"]

HINTS = """\
# About this environment: Spreadsheet (fill cells of a workbook, then submit)

- Tools: `list_sheets()`, `read_range(range, formulas)`, `write_cells(range, values)` (`values` rows
  of cell texts; a formula starts with `=`; one value for a larger range fills it, shifting relative
  references like fill-down), `submit()`. A bad range, a write of the wrong shape or a formula the
  engine cannot evaluate is refused with the reason (an invalid action) and changes nothing.
  `submit()` ends the episode with success when the answer cells match. Episodes are deterministic
  (the seed is ignored).
- The state: `sheets` (name and used range of each), `answer_position` (the cells the verifier
  checks), `answer_cells` (each with `shown` and `formula`), `answer_cells_correct`,
  `changed_cells`, `error_cells`, `steps`, `reads`, `writes`, `invalid_actions`, `last_action`,
  `submitted`.
- `answer_cells_correct` tells a rule how close the policy is; never show it to the policy as the
  answer.
- Typical weaknesses: submitting before writing every answer cell, off-by-one ranges, hard-coded
  values where a formula is expected, not reading the data first.
- Scaffolds: a rule that blocks `submit()` once while `answer_cells_correct` is below the number of
  answer cells, naming `answer_position`; one that, after a refused write, repeats the sheet's used
  range. Hardening: get_stage_candidates gives stale answers in the answer range, a misleading draft
  column, or shuffled data rows (each checked solvable); a rule that, with probability `P` (a knob),
  shows only part of a long `read_range`.
"""
