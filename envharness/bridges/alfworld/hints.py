"""The alfworld bridge's notes for the designer's and diagnoser's prompts.

Read through :meth:`AlfWorldEnv.designer_hints`, the hook that third-party bridges implement too:
what the bridge's state means, its tools, the policy's usual weaknesses and the
perturbations that fit it. Markdown; keep it short, it goes into every designer prompt.
"""

__all__ = ["HINTS"]

HINTS = """\
# About this environment: ALFWorld (household tasks in text)

- One tool, `act(command)`: 'go to <receptacle>', 'open/close <receptacle>', 'take <object> from
  <receptacle>', 'move <object> to <receptacle>', 'heat/cool/clean <object> with <appliance>', 'use
  <lamp>', 'examine', 'inventory', 'look'. A command that does not apply gets "Nothing happens." (an
  invalid action). The game is deterministic: the seed changes nothing, so only a stochastic rule
  varies episodes. Budget: 50 steps by default.
- The state: `task_type`, `goal`, `location`, `inventory` (the agent holds at most one object),
  `opened`, `description` (the room as the first observation lists it), `admissible_commands` (what
  does something now), `moves` (commands typed this episode, inadmissible ones included), `won`,
  `last_command`.
- Receptacles take only some objects (an alarm clock fits no drawer): a 'move' into one that does
  not take it is "Nothing happens.", and a Setups action that does so fails the build. Check every
  Setups command with dry_run_setups.
- A room often holds several objects of the goal's class (box 1, box 2): hiding one leaves the
  others, so the policy (and the oracle) may simply fetch another one: look at the steps, not only
  the success rate.
- After Setups, see what the policy starts from with dry_run_setups or check_rules (with your
  in_env_actions): its first observation, and what `moves` and `location` read. A rule keyed on the
  start (say `state["moves"] == 0`) must match that.
- The oracle is ALFWorld's expert replayed from the current state: it searches receptacles in turn
  when the object is not where it expects, so a hidden object costs it (and the policy) many steps;
  within a tight budget it can run out of steps although the task is solvable.
- Scaffolds: a rule that, after repeated "Nothing happens.", lists a few `admissible_commands`; one
  that names where the goal object lies once the policy has looked in several wrong places.
  Hardening: get_stage_candidates hides the goal object in a closed receptacle that can hold it
  (checked solvable by the expert; there may be none); a stochastic rule that makes 'open' fail with
  probability `P` (a knob) and says so.
"""
