"""The webshop bridge's notes for the designer's and diagnoser's prompts.

Read through :meth:`WebShopEnv.designer_hints`, the hook that third-party bridges implement too:
what the bridge's state means, its tools, the policy's usual weaknesses and the
perturbations that fit it. Markdown; keep it short, it goes into every designer prompt.
"""

__all__ = ["HINTS"]

HINTS = """\
# About this environment: WebShop (a shop in a headless browser)

- Tools: `goto(url)`, `click(ref)`, `type(ref, text, submit)`, `select(ref, option)`, `back()`,
  `read_page()`. Pages list their links, buttons and text boxes with numbers like `[3]`; the numbers
  change from page to page, so rules must read `state`, never fixed refs. Buying ends the episode.
  Budget: 30 steps by default.
- The state: the browser's `url`, `title`, `text`, `elements` (the numbered ones), `steps`,
  `last_action`, and the shop's view of the URL: `page` (`home`, `results`, `item`, `done`,
  `not_found`), `query`, `results_page`, `product_id`, `selected_options`, `purchased` ({product_id,
  options}, null before buying).
- The reward is WebShop's attribute, option and price match; success needs the reward to be 1, so a
  near-miss product or one wrong option fails. The shop is deterministic: only a stochastic rule
  varies a deterministic policy.
- Typical weaknesses: buying the first result, forgetting to choose the options the instruction
  names, paging through results without refining the query.
- Scaffolds: a rule that, on an `item` page with options not yet chosen, lists the options the
  instruction asks for; Setups that `goto` a search with a good query. Hardening:
  get_stage_candidates starts from a look-alike product's search or page, the target with a wrong
  option chosen, or a broad search's second page (each checked solvable); a rule that blocks 'Buy
  Now' until an option is selected changes nothing for a policy that always selects them.
"""
