"""The textworld bridge's notes for the designer's and diagnoser's prompts.

Read through :meth:`TextWorldEnv.designer_hints`, the hook that third-party bridges implement too:
what the bridge's state means, its tools, the policy's usual weaknesses and the
perturbations that fit it. Markdown; keep it short, it goes into every designer prompt.
"""

__all__ = ["HINTS"]

HINTS = """\
# About this environment: TextWorld (generated text adventures)

- One tool, `act(command)`: 'look', 'inventory', 'go north', 'open chest', 'take key from chest',
  'unlock door with key', 'put apple on table', ... The game answers in its own words; a command not
  among `admissible_commands` is an invalid action, and interpreter commands (undo, restart, save)
  are refused. The game is deterministic (the seed changes nothing). Budget: 50 steps by default.
- The state: `location`, `inventory`, `description` (the room as 'look' prints it), `score` and
  `max_score` (the quest's progress), `moves` (agent steps this episode, refused commands included),
  `admissible_commands`, `won`, `lost`, `last_command`.
- The instruction carries the objective. After Setups, see what the policy starts from (its first
  observation, `moves`, `location`) with dry_run_setups or check_rules with your in_env_actions
  before writing a rule keyed on the start.
- The quest is a fixed chain (get the key, unlock, open, take, put): a policy that wanders fails on
  budget, one that follows the walkthrough wins in about quest-length steps.
- Scaffolds: get_stage_candidates' first candidates move a quest object; a rule that, when `score`
  has not risen for several steps, reminds the policy of the objective or lists a few admissible
  commands.
- Hardening: stage candidates move or hide a quest object in a neighbouring room (checked still
  winnable); a Link to sibling games lengthens the episode; a stochastic rule that fails 'go' or
  'take' with probability `P` (a knob) and says so varies a deterministic policy.
"""
