"""The toy24 bridge's notes for the designer's and diagnoser's prompts.

Read through :meth:`Toy24Env.designer_hints`, the hook that third-party bridges implement too:
what the bridge's state means, its tools, the policy's usual weaknesses and the
perturbations that fit it. Markdown; keep it short, it goes into every designer prompt.
"""

__all__ = ["HINTS"]

HINTS = """\
# About this environment: Toy24 (the game of 24)

- The task is four numbers from 1 to 13; the policy combines two of the numbers left at a time with
  `combine(a, op, b)` (`op` one of `+ - * /`, exact fractions such as `8/3`) and wins when the only
  number left is 24. `undo()` takes back the last combine. Every solution is exactly three combines;
  the step budget is 12 by default.
- The state: `start` (the four start numbers), `numbers` (the numbers left, as exact text; each
  combine removes its two operands and appends the result at the end), `history` (the combines in
  effect, oldest first, each with `a`, `op`, `b`, `result`), `steps` (the policy's steps this
  episode, undos and invalid actions included), `solved`.
- Numbers in actions are strings written as the observation shows them (`"8/3"`, `"-2"`); a number
  not left, or division by zero, is answered with invalid-action feedback.
- Setups' combines are real combines: they are in `history`, and the policy can `undo()` them.
- Typical weaknesses: combining toward a dead end and never undoing; repeating the same invalid
  combine; undo/redo cycles; writing numbers differently from the observation.
- Scaffolds: get_stage_candidates gives a one- and a two-combine head start along a solution
  (declare `SETUP_STEPS`); a rule that, when one number other than 24 is left, adds "undo() takes
  back your last combine" to the observation; a rule that answers a repeated invalid combine with
  the numbers left.
- Hardening through the start: the other stage candidates start from a different first combine that
  leaves fewer solutions; a Link to sibling puzzles lengthens the episode.
- Forbidding `undo`, hiding the `Last:` line or blocking one operation changes nothing for a policy
  that never undoes, never reads `Last:`, or needs every operation (check the task's solutions), and
  a policy that plays the same three combines every time is untouched by them. Against such a policy
  use a stochastic rule with a knob: for example block a combine with probability `DROP_P`
  (`random.random() < DROP_P`, knob `harder: high`) and answer "That combine did not go through; try
  again." Each blocked try costs one of the 12 steps, so the budget decides how many failures the
  policy can absorb; keep `high` well below 1 (at 1 no combine gets through).
"""
