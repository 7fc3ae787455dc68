"""The gymnasium bridge's notes for the designer's and diagnoser's prompts.

Read through :meth:`GymnasiumEnv.designer_hints`, the hook that third-party bridges implement too:
what the bridge's state means, its tools, the policy's usual weaknesses and the
perturbations that fit it. Markdown; keep it short, it goes into every designer prompt.
"""

__all__ = ["HINTS"]

HINTS = """\
# About this environment: Gymnasium (toy-text control tasks)

- One tool per action: FrozenLake `move_left/down/right/up`, CliffWalking `move_up/right/down/left`,
  Taxi `move_south/north/east/west`, `pickup`, `dropoff`, Blackjack `stick`/`hit`, CartPole
  `push_left/right`; other envs `act(action)` with the integer. Observations are a header (last
  action, reward, whether it ended), the text rendering and a description in words.
- The state: `env_id`, `observation` (the raw gymnasium observation), `steps` (env steps this
  episode), `last_action` (the last tool), `last_action_index`, `last_reward`, `total_reward`,
  `terminated`, `truncated`, `success`, plus the domain's decoded fields (FrozenLake: `row`, `col`,
  `goal_row`, `goal_col`, `tile`, `map`).
- The episode seed is gymnasium's seed: the same seed gives the same slips and card draws, different
  seeds differ, so slippery FrozenLake and Blackjack vary by themselves; CliffWalking, non-slippery
  FrozenLake and Taxi from a fixed start are deterministic.
- Success is the env's own: reaching the goal (FrozenLake, CliffWalking), the +20 dropoff (Taxi), a
  won hand (Blackjack), lasting to the time limit (CartPole). Oracles exist for FrozenLake,
  CliffWalking, Taxi and Blackjack only; Blackjack's best play still loses often.
- Setups moves replayed on a stochastic env can slip into a hole on some seeds, which fails the
  build: use get_stage_candidates (head starts and detours that are safe under every outcome).
- Scaffolds: a head start along the plan; a rule that names the direction of the goal from
  `row`/`col`, or blocks a move into a known hole with a warning. Hardening: a detour start; a rule
  that, with probability `P` (a knob), blocks a move with "You slipped; nothing happened."
  (`filter_action` may pass or block an action, never replace it) — blocked moves use steps.
"""
