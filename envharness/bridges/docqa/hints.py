"""The docqa bridge's notes for the designer's and diagnoser's prompts.

Read through :meth:`DocQAEnv.designer_hints`, the hook that third-party bridges implement too:
what the bridge's state means, its tools, the policy's usual weaknesses and the
perturbations that fit it. Markdown; keep it short, it goes into every designer prompt.
"""

__all__ = ["HINTS"]

HINTS = """\
# About this environment: DocQA (answer a question from a folder of documents)

- Tools: `list_documents()`, `search(query)` (the best-matching pages with a snippet each),
  `read_page(doc, page)`, `answer(text)`. `answer` ends the episode; the reward is the token F1
  against the references and success needs an exact match after normalisation, so an answer with
  extra words fails. An unknown document, a page out of range or an empty query is an invalid
  action. Episodes are deterministic (the seed is ignored); budget 20 steps by default.
- The state: `question`, `steps`, `searches` (queries so far), `pages_read` (each {doc, page}),
  `current_doc`, `current_page`, `last_tool`, `invalid_actions`, `answered`, `answer`.
- Typical weaknesses: answering from a snippet without reading the page, answering with a sentence
  instead of the value, searching the same words again, reading a distractor page and trusting it.
- Scaffolds: a rule that blocks the first `answer` given before any `read_page`, asking to read the
  evidence; one that reminds the policy to answer with the value only. Hardening:
  get_stage_candidates starts after a misleading search and a wrong page (the task's distractors); a
  rule that, with probability `P` (a knob), drops the snippets from search results.
"""
