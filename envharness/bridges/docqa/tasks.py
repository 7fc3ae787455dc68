"""Tasks: questions about a corpus, their reference answers, and the pages that hold the evidence.

A tasks file is JSON: an object ``{"description": ..., "tasks": [...]}`` (``description`` is
optional: a phrase naming what the folder holds, shown in every instruction) or a bare list of
tasks; a file ending in ``.jsonl`` holds one task object per line instead (blank lines skipped).
A task object has these keys:

==============  ========  =====================================================================
key             required  meaning
==============  ========  =====================================================================
``id``          yes       letters, digits, ``_``, ``-``, ``.``; unique; at most 80 characters
``question``    yes       the question, as the agent reads it
``answers``     yes       reference answers (a list of strings, or ``answer``: one string); the
                          first is the canonical one the oracle gives
``split``       no        ``"train"`` (default) or ``"test"``
``evidence``    no        pages that hold the answer: ``[{"doc", "page", "query", "quote"}]``
``distractors`` no        misleading pages, same form (used for start-state perturbations)
``max_steps``   no        the agent's step budget (default 20; the bridge option overrides it)
==============  ========  =====================================================================

In a page reference, ``doc`` is the document's name in the corpus (its path relative to the folder)
and ``page`` counts from 1. ``query`` is the keyword search that finds the page; when it is
missing, it is made from the question's rarest words that the page contains. ``quote`` is
optional text the page must contain (compared ignoring case and whitespace), which catches page
numbers that shifted, e.g. after a change of ``lines_per_page``.

Example:
    >>> task = parse_task({"id": "t1", "question": "Who?", "answer": "Ada"}, 0)
    >>> task.answers, task.split, task.evidence
    (('Ada',), 'train', ())
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from envharness.bridges.docqa.corpus import Corpus
from envharness.bridges.docqa.search import STOPWORDS, tokenize
from envharness.errors import BridgeError

__all__ = ["SPLITS", "PageRef", "Task", "TaskSet", "load_tasks", "parse_task"]

_BRIDGE = "docqa"
SPLITS = ("train", "test")
"""The splits a task may belong to (``list_tasks`` also accepts ``"all"``)."""
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,79}")
_TASK_KEYS = {
    "id",
    "question",
    "answers",
    "answer",
    "split",
    "evidence",
    "distractors",
    "max_steps",
}
_REF_KEYS = {"doc", "page", "query", "quote"}
_QUERY_WORDS = 4
_cache: dict[tuple[object, ...], tuple[Corpus, TaskSet]] = {}
_cache_lock = threading.Lock()


@dataclass(frozen=True)
class PageRef:
    """A page of a document, and the search that finds it.

    Attributes:
        doc: The document's name.
        page: The page number, from 1.
        query: Keywords that find the page (``""`` until :func:`load_tasks` fills it in).
        quote: Text the page must contain (``""`` for no check).
    """

    doc: str
    page: int
    query: str = ""
    quote: str = ""


@dataclass(frozen=True)
class Task:
    """One question.

    Attributes:
        id: The task id.
        question: The question.
        answers: The reference answers; the first is canonical.
        split: ``"train"`` or ``"test"``.
        evidence: The pages holding the answer, in the order the oracle reads them.
        distractors: Misleading pages (for start-state perturbations).
        max_steps: The task's own step budget, or ``None`` for the bridge's default.
    """

    id: str
    question: str
    answers: tuple[str, ...]
    split: str = "train"
    evidence: tuple[PageRef, ...] = ()
    distractors: tuple[PageRef, ...] = ()
    max_steps: int | None = None


@dataclass(frozen=True)
class TaskSet:
    """The tasks of one tasks file, checked against a corpus.

    Attributes:
        path: The tasks file.
        description: What the folder holds (``""`` when the file does not say).
        tasks: The tasks by id, in file order.
    """

    path: str
    description: str
    tasks: Mapping[str, Task]

    def ids(self, split: str) -> list[str]:
        """Task ids of ``split`` (``"train"``, ``"test"`` or ``"all"``), in file order."""
        return [t.id for t in self.tasks.values() if split == "all" or t.split == split]


def _bad(where: str, problem: str) -> BridgeError:
    return BridgeError(f"{where}: {problem}", bridge=_BRIDGE)


def _text(value: Any, where: str, name: str, *, required: bool = True) -> str:
    if not isinstance(value, str) or (required and not value.strip()):
        raise _bad(where, f"{name!r}: expected a non-empty string, got {value!r}")
    return value.strip()


def _page_ref(raw: Any, where: str) -> PageRef:
    if not isinstance(raw, Mapping):
        raise _bad(where, f"expected {{'doc': str, 'page': int}}, got {raw!r}")
    extra = sorted(set(raw) - _REF_KEYS)
    if extra:
        raise _bad(where, f"unknown key(s) {extra}; a page reference has {sorted(_REF_KEYS)}")
    page = raw.get("page")
    if isinstance(page, bool) or not isinstance(page, int) or page < 1:
        raise _bad(where, f"'page': expected an int >= 1 (pages count from 1), got {page!r}")
    query = raw.get("query", "")
    quote = raw.get("quote", "")
    return PageRef(
        _text(raw.get("doc"), where, "doc"),
        page,
        _text(query, where, "query") if query != "" else "",
        _text(quote, where, "quote") if quote != "" else "",
    )


def _page_refs(raw: Any, where: str) -> tuple[PageRef, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _bad(where, f"expected a list of page references, got {type(raw).__name__}")
    return tuple(_page_ref(item, f"{where}[{i}]") for i, item in enumerate(raw))


def parse_task(raw: Any, position: int, source: str = "tasks") -> Task:
    """Reads one task object (not yet checked against a corpus).

    Args:
        raw: The task object.
        position: Its index in the file, for error messages.
        source: The file name, for error messages.

    Raises:
        BridgeError: Naming the task and the key that is wrong.
    """
    where = f"{source}: task #{position}"
    if not isinstance(raw, Mapping):
        raise _bad(where, f"expected an object, got {type(raw).__name__}")
    task_id = raw.get("id")
    if not isinstance(task_id, str) or not _ID.fullmatch(task_id):
        raise _bad(
            where,
            f"'id': expected 1-80 letters, digits, '_', '-' or '.' (starting with a letter or "
            f"digit), got {task_id!r}",
        )
    where = f"{source}: task {task_id!r}"
    extra = sorted(set(raw) - _TASK_KEYS)
    if extra:
        raise _bad(where, f"unknown key(s) {extra}; a task has {sorted(_TASK_KEYS)}")
    if "answers" in raw and "answer" in raw:
        raise _bad(where, "give either 'answers' (a list) or 'answer' (a string), not both")
    if "answers" not in raw and "answer" not in raw:
        raise _bad(where, "'answers' is missing: give a list of reference answers")
    answers = raw["answers"] if "answers" in raw else [raw["answer"]]
    if not isinstance(answers, list) or not answers:
        raise _bad(where, f"'answers': expected a non-empty list of strings, got {answers!r}")
    split = raw.get("split", "train")
    if split not in SPLITS:
        raise _bad(where, f"'split': expected one of {', '.join(SPLITS)}, got {split!r}")
    max_steps = raw.get("max_steps")
    if max_steps is not None and (
        isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1
    ):
        raise _bad(where, f"'max_steps': expected a positive int, got {max_steps!r}")
    return Task(
        id=task_id,
        question=_text(raw.get("question"), where, "question"),
        answers=tuple(_text(a, where, "answers") for a in answers),
        split=split,
        evidence=_page_refs(raw.get("evidence"), f"{where} evidence"),
        distractors=_page_refs(raw.get("distractors"), f"{where} distractors"),
        max_steps=max_steps,
    )


def _squash(text: str) -> str:
    return " ".join(text.casefold().split())


def _derive_query(question: str, page_text: str, corpus: Corpus) -> str:
    """The question's rarest words (at most four) that the page contains, in question order."""
    on_page = set(tokenize(page_text))
    words: dict[str, str] = {}
    for match in re.finditer(r"\d+(?:[.,]\d+)*|[^\W\d_]+", question):
        token = tokenize(match.group())[0]
        if token not in STOPWORDS and token not in words:
            words[token] = match.group().casefold()
    present = [t for t in words if t in on_page] or list(words)
    chosen = set(sorted(present, key=lambda t: -corpus.index.idf(t))[:_QUERY_WORDS])
    return " ".join(words[t] for t in words if t in chosen) or question


def _checked(ref: PageRef, corpus: Corpus, question: str, where: str) -> PageRef:
    document = corpus.get(ref.doc)
    if document is None:
        shown = ", ".join(corpus.names[:20]) + (" ..." if len(corpus) > 20 else "")
        raise _bad(where, f"no document {ref.doc!r} in {corpus.root}; documents: {shown}")
    if ref.page > document.n_pages:
        raise _bad(where, f"{ref.doc} has pages 1-{document.n_pages}, not page {ref.page}")
    text = document.pages[ref.page - 1]
    if ref.quote and _squash(ref.quote) not in _squash(text):
        raise _bad(
            where,
            f"page {ref.page} of {ref.doc} does not contain the quote {ref.quote!r} (did the "
            "pages shift? text and Markdown pages depend on form feeds and lines_per_page)",
        )
    if ref.query:
        return ref
    return replace(ref, query=_derive_query(question, text, corpus))


def _read_raw(path: Path) -> tuple[str, list[Any]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as e:
        raise BridgeError(f"tasks_file: cannot read {path}: {e.strerror}", bridge=_BRIDGE) from e
    if path.suffix.lower() == ".jsonl":
        items = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append(json.loads(line))
            except ValueError as e:
                raise _bad(f"{path.name} line {number}", f"not valid JSON: {e}") from e
        return "", items
    try:
        data = json.loads(text)
    except ValueError as e:
        raise _bad(path.name, f"not valid JSON: {e}") from e
    if isinstance(data, list):
        return "", data
    if not isinstance(data, Mapping) or not isinstance(data.get("tasks"), list):
        raise _bad(path.name, "expected a list of tasks or an object with a 'tasks' list")
    extra = sorted(set(data) - {"description", "tasks"})
    if extra:
        raise _bad(path.name, f"unknown top-level key(s) {extra}; expected description, tasks")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise _bad(path.name, f"'description': expected a string, got {description!r}")
    return description.strip(), data["tasks"]


def load_tasks(path: str | os.PathLike[str], corpus: Corpus) -> TaskSet:
    """Reads a tasks file and checks every page reference against ``corpus``.

    Results are cached while the file is unchanged.

    Args:
        path: The tasks file (``.json`` or ``.jsonl``).
        corpus: The corpus the tasks are about.

    Raises:
        BridgeError: If the file cannot be read or parsed, is empty, or a task is malformed,
            has a duplicate id, or names a document or page the corpus does not have.
    """
    file = Path(path).expanduser().resolve()
    try:
        stat = file.stat()
    except OSError as e:
        raise BridgeError(f"tasks_file: cannot read {file}: {e.strerror}", bridge=_BRIDGE) from e
    key = (str(file), stat.st_size, stat.st_mtime_ns, id(corpus))
    with _cache_lock:
        cached = _cache.get(key)
    if cached is not None and cached[0] is corpus:
        return cached[1]
    description, items = _read_raw(file)
    if not items:
        raise _bad(file.name, "holds no tasks")
    tasks: dict[str, Task] = {}
    for position, raw in enumerate(items):
        task = parse_task(raw, position, file.name)
        if task.id in tasks:
            raise _bad(file.name, f"task id {task.id!r} appears twice")
        where = f"{file.name}: task {task.id!r}"
        tasks[task.id] = replace(
            task,
            evidence=_refs(task.evidence, corpus, task.question, f"{where} evidence"),
            distractors=_refs(task.distractors, corpus, task.question, f"{where} distractors"),
        )
    loaded = TaskSet(str(file), description, tasks)
    with _cache_lock:
        if len(_cache) >= 16:
            _cache.pop(next(iter(_cache)))
        _cache[key] = (corpus, loaded)
    return loaded


def _refs(
    refs: Sequence[PageRef], corpus: Corpus, question: str, where: str
) -> tuple[PageRef, ...]:
    return tuple(_checked(r, corpus, question, f"{where}[{i}]") for i, r in enumerate(refs))
