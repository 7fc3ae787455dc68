"""The Document QA bridge: answer questions from a folder of text, Markdown and PDF documents.

Registered as ``docqa``. An agent lists the documents, searches their pages by keywords, reads
pages, and answers; the verifier scores the answer by exact match (success) and token F1 (score)
after SQuAD-style normalisation. The built-in tasks are 21 questions (12 train, 9 test) about an
original corpus of a fictional company, Corvane Instruments: two annual reports (PDF), board
minutes and a price list (Markdown), an employee handbook (text). Some need one page, some a
calculation, some pages from two or three documents. Point the bridge at your own folder with
``corpus_dir=`` and ``tasks_file=`` (format in :mod:`~envharness.bridges.docqa.tasks`).

PDFs are read with ``pypdf`` (``pip install 'envharness[docqa]'``), imported only when a PDF is
read.

- :mod:`~envharness.bridges.docqa.env`: :class:`DocQAEnv`, the bridge.
- :mod:`~envharness.bridges.docqa.corpus`: documents and pages (how text files are paged).
- :mod:`~envharness.bridges.docqa.pdf`: PDF text extraction.
- :mod:`~envharness.bridges.docqa.search`: the keyword search (BM25) and snippets.
- :mod:`~envharness.bridges.docqa.scoring`: exact match and token F1.
- :mod:`~envharness.bridges.docqa.tasks`: the tasks file format and its checks.
- :mod:`~envharness.bridges.docqa.build_corpus`: the script (and tiny PDF writer) that made the
  built-in PDFs.

Example:
    >>> from envharness import load_bridge
    >>> from envharness.rollout import OraclePolicy, rollout
    >>> env = load_bridge("docqa", task_id="cross-headcount-2024")
    >>> [str(a) for a in env.oracle_actions()][:2]
    ["search(query='total employees')", "read_page(doc='annual_report_2023.pdf', page=5)"]
    >>> trajectory = rollout(env, OraclePolicy(1.0, seed=0), seed=0)
    >>> trajectory.success, trajectory.n_steps, trajectory.evaluation.score
    (True, 5, 1.0)
"""

from __future__ import annotations

from envharness.bridges.docqa.corpus import Corpus, Document, load_corpus, split_pages
from envharness.bridges.docqa.env import BUILTIN_CORPUS, BUILTIN_TASKS, DocQAEnv
from envharness.bridges.docqa.scoring import (
    exact_match,
    normalize_answer,
    score_answer,
    token_f1,
)
from envharness.bridges.docqa.search import Hit, PageIndex
from envharness.bridges.docqa.tasks import PageRef, Task, TaskSet, load_tasks

__all__ = [
    # the bridge
    "BUILTIN_CORPUS",
    "BUILTIN_TASKS",
    "DocQAEnv",
    # documents and search
    "Corpus",
    "Document",
    "Hit",
    "PageIndex",
    "load_corpus",
    "split_pages",
    # tasks
    "PageRef",
    "Task",
    "TaskSet",
    "load_tasks",
    # the verifier
    "exact_match",
    "normalize_answer",
    "score_answer",
    "token_f1",
]
