"""The docqa bridge's parts: scoring, search, paging, the PDF writer and reader, tasks files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from envharness import BridgeError, UnknownTaskError, load_bridge
from envharness.bridges.docqa import (
    BUILTIN_CORPUS,
    DocQAEnv,
    PageIndex,
    exact_match,
    load_corpus,
    normalize_answer,
    score_answer,
    split_pages,
    token_f1,
)
from envharness.bridges.docqa import build_corpus as build
from envharness.bridges.docqa.pdf import read_pdf
from envharness.bridges.docqa.search import query_terms, snippet, tokenize
from envharness.rollout import OraclePolicy, rollout

pypdf = pytest.importorskip("pypdf", reason="pip install 'envharness[docqa]'")


# -- scoring --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("The Water Quality segment.", "water quality segment"),
        ("£4,100,000", "4100000"),
        ("4.1 million", "4.1 million"),
        ("6.5p", "6.5p"),
        ("Pembury & Lusk LLP", "pembury lusk llp"),
        ("  A  dissolved-oxygen   cartridge ", "dissolvedoxygen cartridge"),
        ("12%", "12"),
        ("1,2345", "12345"),  # not a thousands separator: still punctuation
        ("2023-09-18", "20230918"),
        ("", ""),
    ],
)
def test_normalize_answer(text, normal):
    assert normalize_answer(text) == normal


def test_exact_match_and_f1():
    assert exact_match("Priya Raman.", "priya raman")
    assert not exact_match("Raman", "Priya Raman")
    assert token_f1("Raman", "Priya Raman") == pytest.approx(2 / 3)
    assert token_f1("the", "") == 1.0  # both empty after normalisation
    assert token_f1("x", "") == 0.0 and token_f1("a b", "c d") == 0.0
    assert token_f1("412 412", "412") == pytest.approx(2 / 3)  # tokens count as a multiset
    assert score_answer("about 412", ["412", "412 employees"]) == (False, pytest.approx(2 / 3))
    assert score_answer("412 employees", ["412", "412 employees"]) == (True, 1.0)
    assert score_answer("anything", []) == (False, 0.0)


# -- search ---------------------------------------------------------------------------------------


def test_tokens_and_query_terms():
    assert tokenize("Sales: 1,250 units (WS-400); glass") == [
        "sale",
        "1250",
        "unit",
        "ws",
        "400",
        "glass",
    ]
    assert query_terms("How many employees were there in 2023? employees") == ["employee", "2023"]
    assert query_terms("the of") == ["the", "of"] and query_terms("?!") == []


def test_bm25_ranking_and_ties():
    index = PageIndex(
        [
            ("a.txt", 1, "profit profit profit and more words here"),
            ("a.txt", 2, "net profit"),
            ("b.txt", 1, "nothing relevant"),
            ("c.txt", 1, "net profit"),
        ]
    )
    hits = index.search("net profit")
    assert [(h.doc, h.page) for h in hits] == [("a.txt", 2), ("c.txt", 1), ("a.txt", 1)]
    assert hits[0].score == hits[1].score > hits[2].score > 0
    assert index.search("net profit", limit=1) == hits[:1]
    assert index.search("absent") == [] and len(index) == 4
    assert index.idf("net") > index.idf("profit") > 0 and index.idf("absent") == 0.0
    assert PageIndex([("empty.txt", 1, "")]).search("anything") == []


def test_snippet_picks_the_best_line_and_shortens_it():
    text = "Revenue grew.\nNet profit rose; revenue too.\n" + "x " * 150 + "net profit end"
    assert snippet(text, ["net", "profit", "revenue"]) == "Net profit rose; revenue too."
    long_line = "word " * 60 + "needle " + "word " * 60
    cut = snippet(long_line, ["needle"])
    assert cut.startswith("...") and cut.endswith("...") and "needle" in cut
    assert len(cut) <= 206


# -- paging and corpora ---------------------------------------------------------------------------


def test_split_pages():
    assert split_pages("a\nb\nc\nd\ne", 2) == ("a\nb", "c\nd", "e")
    assert split_pages("a\r\nb\r\n", 1) == ("a", "b")
    assert split_pages("one\f\ntwo  \n\n\fthree\f\n\n") == ("one", "two", "three")
    assert split_pages("\f\nsecond") == ("", "second")  # an empty first page keeps its number
    assert split_pages("") == ("",)


def test_builtin_corpus():
    corpus = load_corpus(BUILTIN_CORPUS)
    assert load_corpus(BUILTIN_CORPUS) is corpus  # cached
    assert [(d.name, d.kind, d.n_pages) for d in corpus] == [
        ("annual_report_2022.pdf", "pdf", 4),
        ("annual_report_2023.pdf", "pdf", 6),
        ("board_minutes_2023.md", "markdown", 3),
        ("employee_handbook.txt", "text", 5),
        ("price_list_2024.md", "markdown", 2),
    ]
    assert corpus.get("board_minutes_2023.md").title == (
        "Corvane Instruments Ltd — Minutes of the Board of Directors"
    )
    assert corpus.get("employee_handbook.txt").pages[2].startswith("3. TRAVEL AND EXPENSES")
    assert corpus.get("price_list_2024.md").pages[1].startswith("## Volume discounts")
    assert len(corpus.index) == 20


def test_user_folder(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "sub" / "Notes.TXT").write_text("\n\nfirst line\n" + "x\n" * 5)
    (tmp_path / "readme.markdown").write_text("intro\n# The Heading\ntext\n")
    (tmp_path / "data.csv").write_text("a,b\n")
    (tmp_path / ".secret.txt").write_text("hidden\n")
    (tmp_path / ".hidden" / "x.md").write_text("hidden\n")
    corpus = load_corpus(tmp_path, lines_per_page=3)
    assert corpus.names == ["readme.markdown", "sub/Notes.TXT"]
    notes = corpus.get("sub/Notes.TXT")
    assert notes.kind == "text" and notes.title == "first line" and notes.n_pages == 3
    assert corpus.get("readme.markdown").title == "The Heading"
    assert corpus.resolve("notes") is notes and corpus.resolve("SUB/notes.txt") is notes
    assert corpus.resolve("Notes.txt") is notes and corpus.resolve("other") is None
    (tmp_path / "sub" / "Notes.TXT").write_text("changed\n")
    again = load_corpus(tmp_path, lines_per_page=3)
    assert again is not corpus and again.get("sub/Notes.TXT").pages == ("changed",)


def test_corpus_errors(tmp_path):
    with pytest.raises(BridgeError, match="is not a folder"):
        load_corpus(tmp_path / "missing")
    (tmp_path / "data.csv").write_text("a,b\n")
    with pytest.raises(BridgeError, match=r"holds no documents \(files ending in .pdf, .md"):
        load_corpus(tmp_path)
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\nnot really a pdf")
    with pytest.raises(BridgeError, match="cannot read the PDF .*broken.pdf"):
        load_corpus(tmp_path)


# -- the PDF writer and reader --------------------------------------------------------------------


def test_pdf_writer_round_trip(tmp_path):
    pages = [
        ["# A (bold) title", "Price: £2,650 \\ 6% (2024)", "", "  indented line"],
        ["second page", "x" * 150],
    ]
    data = build.write_pdf(pages, title="Test — ünïcode")
    assert data == build.write_pdf(pages, title="Test — ünïcode")  # deterministic
    path = tmp_path / "t.pdf"
    path.write_bytes(data)
    text = read_pdf(path)
    assert text.title == "Test — ünïcode"
    assert text.pages == (
        "A (bold) title\nPrice: £2,650 \\ 6% (2024)\n  indented line",
        "second page\n" + "x" * 92 + "\n" + "x" * 58,  # long lines are wrapped
    )
    assert [build.expected_text(p) for p in pages] == list(text.pages)
    reader = pypdf.PdfReader(str(path))
    assert len(reader.pages) == 2 and reader.pages[0].mediabox.width == 612


def test_pdf_writer_errors():
    with pytest.raises(ValueError, match="at least one page"):
        build.write_pdf([])
    with pytest.raises(ValueError, match="page 1 has 60 lines"):
        build.write_pdf([["line"] * 60])
    with pytest.raises(ValueError, match="WinAnsi"):
        build.write_pdf([["snowman ☃"]])


def test_committed_pdfs_are_what_the_script_builds():
    sources = sorted(build.SOURCES.glob("*.txt"))
    assert [s.stem for s in sources] == ["annual_report_2022", "annual_report_2023"]
    for source in sources:
        assert build.check(source, build.CORPUS / f"{source.stem}.pdf") == []
    assert build.main(["--check"]) == 0


# -- tasks files ----------------------------------------------------------------------------------


def _folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "plan.txt").write_text(
        "Project Heron plan\n\fBudget\nThe budget for Heron is 12,500 euros.\n\fRisks\nNone.\n"
    )
    (docs / "team.md").write_text("# Team\n\nLead: Ada Byron\nTester: Alan Turing\n")
    shutil.copy(BUILTIN_CORPUS / "annual_report_2022.pdf", docs / "old_report.pdf")
    return docs


TASKS = [
    {
        "id": "heron-budget",
        "question": "What is the budget for Project Heron, in euros?",
        "answers": ["12500"],
        "evidence": [{"doc": "plan.txt", "page": 2, "quote": "12,500 euros"}],
    },
    {
        "id": "heron-lead",
        "split": "test",
        "question": "Who leads the team?",
        "answer": "Ada Byron",
        "evidence": [{"doc": "team.md", "page": 1, "query": "lead"}],
        "max_steps": 6,
    },
    {"id": "no-evidence", "split": "test", "question": "Staff in 2022?", "answers": ["371"]},
]


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_user_corpus_and_tasks_file(tmp_path, suffix):
    docs = _folder(tmp_path)
    tasks = tmp_path / f"tasks{suffix}"
    if suffix == ".json":
        tasks.write_text(json.dumps({"description": "Project Heron files", "tasks": TASKS}))
    else:
        tasks.write_text("\n".join(json.dumps(t) for t in TASKS) + "\n\n")
    options = {"corpus_dir": str(docs), "tasks_file": str(tasks)}
    assert DocQAEnv.list_tasks("train", **options) == ["heron-budget"]
    assert DocQAEnv.list_tasks("all", **options) == ["heron-budget", "heron-lead", "no-evidence"]
    env = load_bridge("docqa", task_id="heron-budget", **options)
    assert env.bridge_options() == options
    assert ("Project Heron files" in env.instruction) is (suffix == ".json")
    # the query is made from the question's rarest words on the evidence page
    assert [str(a) for a in env.oracle_actions()] == [
        "search(query='budget heron euros')",
        "read_page(doc='plan.txt', page=2)",
        "answer(text='12500')",
    ]
    trajectory = rollout(env, OraclePolicy(1.0), seed=0)
    assert trajectory.success and trajectory.evaluation.details["answer"] == "12500"
    lead = load_bridge("docqa", task_id="heron-lead", **options)
    assert lead.max_steps == 6 and lead.task.answers == ("Ada Byron",)
    assert rollout(lead, OraclePolicy(1.0), seed=0).success
    bare = load_bridge("docqa", task_id="no-evidence", **options)
    assert [str(a) for a in bare.oracle_actions()] == ["answer(text='371')"]
    assert bare.stage_candidates() == []
    clone = DocQAEnv.from_state(json.loads(json.dumps(lead.save_state())))
    assert clone.bridge_options() == options and clone.get_env_state() == lead.get_env_state()
    with pytest.raises(UnknownTaskError, match="no task 'ar23-revenue'.*heron-budget"):
        load_bridge("docqa", task_id="ar23-revenue", **options)


def test_relative_paths_are_made_absolute(tmp_path, monkeypatch):
    docs = _folder(tmp_path)
    (tmp_path / "tasks.json").write_text(json.dumps(TASKS))
    monkeypatch.chdir(tmp_path)
    env = DocQAEnv("heron-lead", corpus_dir="docs", tasks_file=Path("tasks.json"))
    assert env.bridge_options() == {
        "corpus_dir": str(docs),
        "tasks_file": str(tmp_path / "tasks.json"),
    }


def test_tasks_file_over_the_builtin_corpus(tmp_path):
    tasks = tmp_path / "mine.json"
    tasks.write_text(
        json.dumps(
            [
                {
                    "id": "mine",
                    "question": "Who chairs the board?",
                    "answers": ["Geoffrey Adeyemi"],
                    "evidence": [{"doc": "annual_report_2023.pdf", "page": 6}],
                }
            ]
        )
    )
    env = DocQAEnv("mine", tasks_file=tasks)
    assert env.oracle_actions()[0].args == {"query": "chairs board"}
    assert rollout(env, OraclePolicy(1.0), seed=0).success


def test_lines_per_page_moves_pages_and_quotes_catch_it(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "log.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)) + "target 42\n")
    tasks = tmp_path / "tasks.json"
    evidence = [{"doc": "log.txt", "page": 3, "quote": "target 42"}]
    tasks.write_text(
        json.dumps([{"id": "t", "question": "Target?", "answers": ["42"], "evidence": evidence}])
    )
    env = DocQAEnv("t", corpus_dir=docs, tasks_file=tasks, lines_per_page=5)
    assert env.corpus.get("log.txt").n_pages == 3
    assert env.bridge_options()["lines_per_page"] == 5
    with pytest.raises(BridgeError, match="has pages 1-2, not page 3"):
        DocQAEnv("t", corpus_dir=docs, tasks_file=tasks, lines_per_page=6)
    with pytest.raises(BridgeError, match="does not contain the quote 'target 42'.*lines_per_page"):
        DocQAEnv("t", corpus_dir=docs, tasks_file=tasks, lines_per_page=3)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "not valid JSON"),
        ('{"items": []}', "expected a list of tasks or an object with a 'tasks' list"),
        ('{"tasks": [], "extra": 1}', r"unknown top-level key\(s\) \['extra'\]"),
        ('{"tasks": []}', "holds no tasks"),
        ("[3]", "task #0: expected an object, got int"),
        ('[{"id": "a b"}]', r"task #0: 'id': expected"),
        ('[{"id": "a", "question": "Q?"}]', "'answers' is missing"),
        ('[{"id": "a", "question": "Q?", "answers": []}]', "'answers': expected a non-empty list"),
        ('[{"id": "a", "question": "Q?", "answers": [""]}]', "'answers': expected a non-empty"),
        ('[{"id": "a", "question": " ", "answers": ["x"]}]', "'question': expected a non-empty"),
        (
            '[{"id": "a", "question": "Q?", "answer": "x", "answers": ["x"]}]',
            "either 'answers'",
        ),
        ('[{"id": "a", "question": "Q?", "answer": "x", "level": 1}]', r"unknown key\(s\)"),
        ('[{"id": "a", "question": "Q?", "answer": "x", "split": "dev"}]', "'split': expected"),
        ('[{"id": "a", "question": "Q?", "answer": "x", "max_steps": 0}]', "'max_steps'"),
        (
            '[{"id": "a", "question": "Q?", "answer": "x"}, '
            '{"id": "a", "question": "Q?", "answer": "y"}]',
            "task id 'a' appears twice",
        ),
        (
            '[{"id": "a", "question": "Q?", "answer": "x", "evidence": {"doc": "plan.txt"}}]',
            "expected a list of page references",
        ),
        (
            '[{"id": "a", "question": "Q?", "answer": "x", "evidence": [{"doc": "plan.txt"}]}]',
            r"evidence\[0\]: 'page': expected an int >= 1",
        ),
        (
            '[{"id": "a", "question": "Q?", "answer": "x", '
            '"evidence": [{"doc": "plan.txt", "page": 1, "line": 2}]}]',
            r"unknown key\(s\) \['line'\]",
        ),
        (
            '[{"id": "a", "question": "Q?", "answer": "x", '
            '"evidence": [{"doc": "plan.pdf", "page": 1}]}]',
            "no document 'plan.pdf' in .*; documents: old_report.pdf, plan.txt, team.md",
        ),
        (
            '[{"id": "a", "question": "Q?", "answer": "x", '
            '"distractors": [{"doc": "plan.txt", "page": 4}]}]',
            r"distractors\[0\]: plan.txt has pages 1-3, not page 4",
        ),
    ],
)
def test_bad_tasks_files(tmp_path, content, problem):
    docs = _folder(tmp_path)
    tasks = tmp_path / "tasks.json"
    tasks.write_text(content)
    with pytest.raises(BridgeError, match=problem):
        DocQAEnv("a", corpus_dir=docs, tasks_file=tasks)


def test_bad_jsonl_line(tmp_path):
    docs = _folder(tmp_path)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "question": "Q?", "answer": "x"}\n{oops\n')
    with pytest.raises(BridgeError, match="tasks.jsonl line 2: not valid JSON"):
        DocQAEnv.list_tasks("all", corpus_dir=docs, tasks_file=tasks)
