"""``DocQAEnv``: answer a question from a folder of documents with list, search, read and answer.

The agent has four tools: ``list_documents()``, ``search(query)`` (keyword search over every page,
best pages first, with a snippet each), ``read_page(doc, page)`` and ``answer(text)``, which ends
the episode. The verifier compares the answer with the task's reference answers: success is an
exact match after normalisation, the score (and the final step's reward) is the token F1 (see
:mod:`~envharness.bridges.docqa.scoring`). Everything is deterministic, so ``reset``'s seed is
ignored and ``save_state()`` records the actions since reset, which ``from_state`` replays.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from envharness.bridgekit.checks import (
    check_nothing_recorded,
    check_options,
    check_positive_int,
    check_saved_state,
    check_split,
    state_error,
)
from envharness.bridgekit.fingerprint import cached_fingerprint, task_fingerprint
from envharness.bridges.docqa.corpus import DEFAULT_LINES_PER_PAGE, Corpus, load_corpus
from envharness.bridges.docqa.hints import HINTS
from envharness.bridges.docqa.schemas import SEARCH_HITS, STATE_SCHEMA, TOOLS
from envharness.bridges.docqa.scoring import normalize_answer, score_answer
from envharness.bridges.docqa.search import query_terms
from envharness.bridges.docqa.tasks import PageRef, Task, TaskSet, load_tasks
from envharness.bridges.docqa.views import (
    document_list,
    document_names,
    page_text,
    plural,
    search_results,
)
from envharness.core import Action, ActionableEnv, Evaluation, StepResult, ToolSpec
from envharness.errors import (
    BridgeError,
    EpisodeError,
    InvalidActionError,
    UnknownTaskError,
)

__all__ = ["BUILTIN_CORPUS", "BUILTIN_TASKS", "DocQAEnv"]

_BRIDGE = "docqa"
_NAME = "DocQAEnv"
_DATA = Path(__file__).resolve().parent / "data"
BUILTIN_CORPUS = _DATA / "corpus"
"""The built-in corpus: a fictional company's reports, minutes, handbook and price list."""
BUILTIN_TASKS = _DATA / "tasks.json"
"""The built-in tasks over :data:`BUILTIN_CORPUS` (12 train, 9 test)."""
_DEFAULT_MAX_STEPS = 20
_OPTIONS = ("corpus_dir", "tasks_file", "lines_per_page", "max_steps")
_SPLITS = ("train", "test", "all")
_MAX_STAGES = 3
_SAVED_KEYS = ("bridge", "task_id", "options", "started", "actions", "observation")
_Outcome = tuple[str, float, bool, dict[str, Any]]


def _search(query: str) -> Action:
    return Action("search", {"query": query})


def _read(doc: str, page: int) -> Action:
    return Action("read_page", {"doc": doc, "page": page})


def _bad_state(problem: str) -> BridgeError:
    return state_error(problem, bridge=_BRIDGE, env_name=_NAME)


def _check_path(name: str, value: object) -> str | None:
    """``value`` as an absolute path (``None`` stays ``None``)."""
    if value is None:
        return None
    if not isinstance(value, str | os.PathLike) or not os.fspath(value):
        raise BridgeError(f"{name}: expected a path, got {value!r}", bridge=_BRIDGE)
    return str(Path(os.fspath(value)).expanduser().resolve())


def _load(
    corpus_dir: str | None, tasks_file: str | None, lines_per_page: int
) -> tuple[Corpus, TaskSet]:
    """The corpus and the tasks the options name (the built-in ones by default)."""
    if corpus_dir is not None and tasks_file is None:
        raise BridgeError(
            "corpus_dir needs tasks_file=<a .json or .jsonl file of questions about it>; the "
            "format is in envharness.bridges.docqa.tasks (id, question, answers, split, evidence)",
            bridge=_BRIDGE,
        )
    corpus = load_corpus(BUILTIN_CORPUS if corpus_dir is None else corpus_dir, lines_per_page)
    return corpus, load_tasks(BUILTIN_TASKS if tasks_file is None else tasks_file, corpus)


class DocQAEnv(ActionableEnv):
    """One question about a folder of documents (text, Markdown, PDF).

    The observation after reset is the question and the number of documents. ``list_documents``
    lists them, ``search(query)`` shows the best-matching pages with a snippet each,
    ``read_page(doc, page)`` shows a page (a document may be named without its suffix or in
    another case when that is unambiguous), and ``answer(text)`` ends the episode with reward =
    token F1. An unknown document, a page out of range, or an empty query or answer is answered
    with feedback naming the valid choices and ``info["invalid_action"]``.

    ``evaluate()``: success when the answer matches a reference exactly (after normalisation),
    score = the best token F1; details give the answer, both measures and the references.

    Args:
        task_id: The task, e.g. ``"ar23-revenue"``; see :meth:`list_tasks`.
        corpus_dir: A folder of documents to use instead of the built-in corpus; needs
            ``tasks_file``.
        tasks_file: A tasks file (format in :mod:`~envharness.bridges.docqa.tasks`); alone, its
            questions are about the built-in corpus.
        lines_per_page: Lines per page of text and Markdown files without form feeds (40).
        max_steps: The agent's step budget (default: the task's, else 20).

    Raises:
        UnknownTaskError: If the tasks file has no task ``task_id``.
        BridgeError: If an option is malformed, or the corpus or tasks file cannot be read or
            do not fit together.
        DependencyNotInstalled: If the corpus holds a PDF and ``pypdf`` is missing (extra
            ``docqa``).

    Example:
        >>> env = DocQAEnv("ar23-employees")
        >>> observation, info = env.reset()
        >>> for action in env.oracle_actions():
        ...     result = env.step(action)
        >>> result.reward, env.evaluate().success
        (1.0, True)
    """

    bridge_name: ClassVar[str] = _BRIDGE

    def __init__(
        self,
        task_id: str,
        *,
        corpus_dir: str | os.PathLike[str] | None = None,
        tasks_file: str | os.PathLike[str] | None = None,
        lines_per_page: int = DEFAULT_LINES_PER_PAGE,
        max_steps: int | None = None,
    ) -> None:
        self._corpus_dir = _check_path("corpus_dir", corpus_dir)
        self._tasks_file = _check_path("tasks_file", tasks_file)
        self._lines_per_page = check_positive_int("lines_per_page", lines_per_page, bridge=_BRIDGE)
        self._max_steps_option: int | None = None
        if max_steps is not None:
            self._max_steps_option = check_positive_int("max_steps", max_steps, bridge=_BRIDGE)
        self._corpus, self._taskset = _load(
            self._corpus_dir, self._tasks_file, self._lines_per_page
        )
        task = self._taskset.tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None:
            ids = list(self._taskset.tasks)
            shown = ", ".join(ids[:8]) + (f" ... ({len(ids)} in all)" if len(ids) > 8 else "")
            raise UnknownTaskError(
                f"no task {task_id!r} in {self._taskset.path}; tasks: {shown}. List them with "
                "DocQAEnv.list_tasks('all') or `envharness tasks docqa --split all`",
                bridge=_BRIDGE,
                task_id=task_id if isinstance(task_id, str) else None,
            )
        self._task: Task = task
        self.task_id = task.id
        self.max_steps = self._max_steps_option or task.max_steps or _DEFAULT_MAX_STEPS
        self.instruction = self._instruction()
        self._started = False
        self._observation: str | None = None
        self._clear()

    # -- tasks ------------------------------------------------------------------------------

    @classmethod
    def designer_hints(cls) -> str:
        """This bridge's notes for the designer's and diagnoser's prompts (its ``hints`` module)."""
        return HINTS

    @classmethod
    def list_tasks(cls, split: str = "train", **options: Any) -> list[str]:
        """Task ids in ``split`` (``"train"``, ``"test"`` or ``"all"``), in file order.

        Args:
            split: The split.
            **options: Bridge options; ``corpus_dir`` and ``tasks_file`` choose the tasks,
                ``lines_per_page`` is needed to check their pages, ``max_steps`` is ignored.

        Raises:
            UnknownTaskError: If ``split`` is not a split.
            BridgeError: If an option is unknown or malformed.

        Example:
            >>> DocQAEnv.list_tasks("test")[:2]
            ['ar23-net-profit-growth', 'handbook-leave-max']
        """
        check_options(options, _OPTIONS, bridge=_BRIDGE, where="list_tasks")
        check_split(split, _SPLITS, bridge=_BRIDGE)
        lines = check_positive_int(
            "lines_per_page", options.get("lines_per_page", DEFAULT_LINES_PER_PAGE), bridge=_BRIDGE
        )
        _, taskset = _load(
            _check_path("corpus_dir", options.get("corpus_dir")),
            _check_path("tasks_file", options.get("tasks_file")),
            lines,
        )
        return taskset.ids(split)

    def bridge_options(self) -> dict[str, Any]:
        """The options given that differ from the defaults (paths made absolute)."""
        options: dict[str, Any] = {}
        if self._corpus_dir is not None:
            options["corpus_dir"] = self._corpus_dir
        if self._tasks_file is not None:
            options["tasks_file"] = self._tasks_file
        if self._lines_per_page != DEFAULT_LINES_PER_PAGE:
            options["lines_per_page"] = self._lines_per_page
        if self._max_steps_option is not None:
            options["max_steps"] = self._max_steps_option
        return options

    @property
    def task(self) -> Task:
        """The task: question, reference answers, evidence and distractor pages."""
        return self._task

    def task_fingerprint(self) -> str:
        """The hash of the task record the verifier reads: its id, question and answers.

        ``evaluate()`` scores the answer against the reference answers only (the question says
        what they answer), so those are the record; the corpus, the evidence pages and the
        distractors are not read by the verifier and are left out. A ``tasks_file`` that reuses
        this task id with other answers changes it; one holding the same task (a copy of the
        built-in file) does not, nor do ``corpus_dir``, ``lines_per_page`` and ``max_steps``.
        """
        return cached_fingerprint(
            self,
            lambda: task_fingerprint(
                {
                    "bridge": _BRIDGE,
                    "task_id": self._task.id,
                    "question": self._task.question,
                    "answers": list(self._task.answers),
                }
            ),
        )

    @property
    def corpus(self) -> Corpus:
        """The corpus the question is about."""
        return self._corpus

    def _instruction(self) -> str:
        about = self._taskset.description
        folder = f"a folder of documents ({about})" if about else "a folder of documents"
        return (
            f"Answer a question using {folder}.\n\nQuestion: {self._task.question}\n\n"
            "Tools: list_documents() lists the documents; search(query) finds pages by keywords "
            "and shows the best-matching line of each; read_page(doc, page) shows a page (pages "
            "count from 1); answer(text) gives your final answer and ends the episode. Answer "
            "with the value only (a number, date, name or short phrase), without units unless "
            "the question asks for them. The answer is scored by exact match and token F1 "
            "against the reference answer, ignoring case, punctuation and articles."
        )

    # -- the episode ------------------------------------------------------------------------

    def tools(self) -> list[ToolSpec]:
        """``list_documents()``, ``search(query)``, ``read_page(doc, page)``, ``answer(text)``."""
        return list(TOOLS)

    def _clear(self) -> None:
        self._actions: list[Action] = []
        self._setup_actions = 0  # actions before mark_episode_start (a Setups replay)
        self._searches: list[str] = []
        self._pages_read: list[tuple[str, int]] = []
        self._current: tuple[str, int] | None = None
        self._last_tool = ""
        self._invalid = 0
        self._answer: str | None = None

    def reset(self, *, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Starts the episode over; everything is deterministic, so ``seed`` is ignored."""
        self._clear()
        self._started = True
        self._observation = self._intro()
        return self._observation, {"documents": len(self._corpus)}

    def _intro(self) -> str:
        return (
            f"Question: {self._task.question}\n\n"
            f"The folder holds {plural(len(self._corpus), 'document')}. Call "
            "list_documents() to see them, search(query) to find pages, read_page(doc, page) to "
            "read one, and answer(text) to give your final answer."
        )

    def step(self, action: Action) -> StepResult:
        """Carries out one tool call.

        Raises:
            InvalidActionError: If the action does not match the tool schemas.
            EpisodeError: Before :meth:`reset`, or after the answer was given.
        """
        action = self.check_action(action)
        if not self._started:
            raise EpisodeError("no episode is running; call reset() first")
        if self._answer is not None:
            raise EpisodeError("the episode is over (an answer was given); call reset()")
        return self._apply(action)

    def _apply(self, action: Action) -> StepResult:
        self._actions.append(action)
        self._last_tool = action.tool
        handler = {
            "list_documents": self._list_documents,
            "search": self._run_search,
            "read_page": self._read_page,
            "answer": self._give_answer,
        }[action.tool]
        observation, reward, done, info = handler(action.args)
        if "invalid_action" in info:
            self._invalid += 1
        self._observation = observation
        return StepResult(observation, reward, done, False, info)

    def _invalid_result(self, reason: str) -> _Outcome:
        return reason, 0.0, False, {"invalid_action": reason}

    def _list_documents(self, args: Mapping[str, Any]) -> _Outcome:
        return document_list(self._corpus), 0.0, False, {}

    def _run_search(self, args: Mapping[str, Any]) -> _Outcome:
        query = " ".join(str(args["query"]).split())
        if not query_terms(query):
            return self._invalid_result(
                f"The query {query!r} has no words or numbers to look for; try e.g. "
                "search('net profit 2023')"
            )
        self._searches.append(query)
        hits = self._corpus.index.search(query)
        return search_results(query, hits), 0.0, False, {"hits": len(hits)}

    def _read_page(self, args: Mapping[str, Any]) -> _Outcome:
        name, page = str(args["doc"]), int(args["page"])
        document = self._corpus.resolve(name)
        if document is None:
            return self._invalid_result(
                f"There is no document {name!r}; documents: {document_names(self._corpus)}"
            )
        if not 1 <= page <= document.n_pages:
            return self._invalid_result(
                f"{document.name} has {plural(document.n_pages, 'page')} (1-{document.n_pages}); "
                f"there is no page {page}"
            )
        key = (document.name, page)
        if key not in self._pages_read:
            self._pages_read.append(key)
        self._current = key
        return page_text(document, page), 0.0, False, {}

    def _give_answer(self, args: Mapping[str, Any]) -> _Outcome:
        text = " ".join(str(args["text"]).split())
        if not text:
            return self._invalid_result("The answer is empty; give the answer as text")
        self._answer = text
        exact, f1 = score_answer(text, self._task.answers)
        info = {"exact_match": exact, "f1": f1}
        return f"Answer submitted: {text!r}. The episode is over.", f1, True, info

    def observe(self) -> str:
        """The state as a start shows it: the question, the folder, and the page open now.

        Once an answer was given, the answer's confirmation (the episode is over).

        Raises:
            EpisodeError: Before :meth:`reset`.
        """
        if self._observation is None:
            raise EpisodeError("no episode is running; call reset() first")
        if self._answer is not None:
            return self._observation
        if self._current is None:
            return self._intro()
        name, page = self._current
        document = self._corpus.resolve(name)
        assert document is not None
        return f"{self._intro()}\n\nThe page open now:\n{page_text(document, page)}"

    def mark_episode_start(self) -> None:
        """Stops counting the actions so far as the agent's (they were a ``Setups`` replay).

        What they did stays: the searches made, the pages read and the page open.
        """
        self._setup_actions = len(self._actions)
        self._invalid = 0
        self._last_tool = ""

    def evaluate(self) -> Evaluation:
        """Success = exact match with a reference; score = the best token F1 (0.0 unanswered)."""
        references = list(self._task.answers)
        if self._answer is None:
            details = {"answered": False, "answer": "", "exact_match": False, "f1": 0.0}
            return Evaluation(False, 0.0, {**details, "references": references})
        exact, f1 = score_answer(self._answer, references)
        return Evaluation(
            exact,
            f1,
            {
                "answered": True,
                "answer": self._answer,
                "normalized_answer": normalize_answer(self._answer),
                "exact_match": exact,
                "f1": f1,
                "references": references,
            },
        )

    # -- state ------------------------------------------------------------------------------

    def get_env_state(self) -> dict[str, Any]:
        """A fresh JSON-able view: searches, pages read, the current page, the answer, ..."""
        doc, page = self._current or ("", 0)
        return {
            "question": self._task.question,
            "steps": len(self._actions) - self._setup_actions,
            "searches": list(self._searches),
            "pages_read": [{"doc": d, "page": p} for d, p in self._pages_read],
            "current_doc": doc,
            "current_page": page,
            "last_tool": self._last_tool,
            "invalid_actions": self._invalid,
            "answered": self._answer is not None,
            "answer": self._answer or "",
        }

    def env_state_schema(self) -> dict[str, Any]:
        """The JSON-Schema of :meth:`get_env_state`, with a description per field."""
        return json.loads(json.dumps(STATE_SCHEMA))

    def save_state(self) -> dict[str, Any]:
        """The task, its options and the actions since reset (replayed on restore)."""
        return {
            "bridge": _BRIDGE,
            "task_id": self.task_id,
            "options": self.bridge_options(),
            "started": self._started,
            "actions": [a.to_dict() for a in self._actions],
            "setup_actions": self._setup_actions,
            "observation": self._observation,
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> DocQAEnv:
        """Rebuilds the environment :meth:`save_state` recorded, by reset and replay.

        Raises:
            BridgeError: If ``state`` is malformed, or the replay does not reproduce the recorded
                observation (e.g. the documents changed).
            UnknownTaskError: If its task is not in the tasks file.
        """
        state = check_saved_state(
            state, bridge=_BRIDGE, keys=_SAVED_KEYS, options=_OPTIONS, env_name=_NAME
        )
        actions = state["actions"]
        if not isinstance(actions, list):
            raise _bad_state("'actions' must be a list of {'tool', 'args'} dicts")
        setup = state.get("setup_actions", 0)
        if isinstance(setup, bool) or not isinstance(setup, int) or not 0 <= setup <= len(actions):
            raise _bad_state(f"'setup_actions' must be an int from 0 to {len(actions)}")
        env = cls(state["task_id"], **state["options"])
        if not state["started"]:
            check_nothing_recorded(state, ("actions",), bridge=_BRIDGE, env_name=_NAME)
            return env
        env.reset()
        for index, raw in enumerate(actions):
            if index == setup and setup:
                env.mark_episode_start()
            if env._answer is not None:
                raise _bad_state(f"the episode ended before actions[{index}]")
            try:
                action = env.check_action(raw)
            except InvalidActionError as e:
                raise _bad_state(f"actions[{index}] is not a valid action: {e}") from e
            env._apply(action)
        if setup and setup == len(actions):
            env.mark_episode_start()
        if state["observation"] is not None and env._observation != state["observation"]:
            raise _bad_state(
                "replaying the actions does not reproduce the recorded observation; did the "
                f"documents in {env._corpus.root} change?"
            )
        return env

    # -- solving ----------------------------------------------------------------------------

    def oracle_actions(self) -> list[Action]:
        """From the current state: search for and read each evidence page not read yet, answer.

        A search is left out when its query was already searched; the answer is the task's first
        reference answer. ``[]`` once an answer was given.
        """
        if self._answer is not None:
            return []
        searched = set(self._searches)
        read = set(self._pages_read)
        plan: list[Action] = []
        for ref in self._task.evidence:
            if (ref.doc, ref.page) in read:
                continue
            if ref.query not in searched:
                plan.append(_search(ref.query))
                searched.add(ref.query)
            plan.append(_read(ref.doc, ref.page))
            read.add((ref.doc, ref.page))
        plan.append(Action("answer", {"text": self._task.answers[0]}))
        return plan

    def stage_candidates(self) -> list[list[Action]]:
        """Start states where the agent has already been misled: a search, then a wrong page.

        First the task's own distractors (search their query, read the page), then for each
        evidence query the best-ranked search hit that is not an evidence page (the agent searched
        well but opened the wrong result). Neither answers nor hides anything, so the task stays
        solvable. At most three, deterministic, one per misleading page.
        """
        evidence = {(r.doc, r.page) for r in self._task.evidence}
        refs: list[PageRef] = [r for r in self._task.distractors if (r.doc, r.page) not in evidence]
        for ref in self._task.evidence:
            for hit in self._corpus.index.search(ref.query, limit=SEARCH_HITS):
                if (hit.doc, hit.page) not in evidence:
                    refs.append(PageRef(hit.doc, hit.page, ref.query))
                    break
        stages: list[list[Action]] = []
        seen: set[tuple[str, int]] = set()
        for ref in refs:
            if (ref.doc, ref.page) not in seen:
                seen.add((ref.doc, ref.page))
                stages.append([_search(ref.query), _read(ref.doc, ref.page)])
        return stages[:_MAX_STAGES]

    def __repr__(self) -> str:
        return f"<DocQAEnv task={self.task_id!r}>"
