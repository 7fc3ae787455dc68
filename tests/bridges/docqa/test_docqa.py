from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from envharness import (
    Action,
    BridgeError,
    DependencyNotInstalled,
    EpisodeError,
    InvalidActionError,
    UnknownTaskError,
    load_bridge,
)
from envharness.bridges.docqa import BUILTIN_CORPUS, DocQAEnv
from envharness.harness import Rules, Setups
from envharness.rollout import OraclePolicy, RandomPolicy, rollout
from envharness.testing import check_bridge

pytest.importorskip("pypdf", reason="the docqa bridge reads PDFs: pip install 'envharness[docqa]'")

SINGLE = "ar23-employees"  # search > read one page > answer "412"
CROSS = "cross-ws400-revenue-2023"  # three pages from three documents, then a calculation


def search(query: str) -> Action:
    return Action("search", {"query": query})


def read(doc: str, page: int) -> Action:
    return Action("read_page", {"doc": doc, "page": page})


def answer(text: str) -> Action:
    return Action("answer", {"text": text})


@pytest.fixture
def make():
    made: list[DocQAEnv] = []

    def build(task_id: str = SINGLE, **options) -> DocQAEnv:
        env = load_bridge("docqa", task_id=task_id, **options)
        made.append(env)
        return env

    yield build
    for env in made:
        env.close()


# -- tasks and options ----------------------------------------------------------------------------


def test_task_lists():
    train = DocQAEnv.list_tasks("train")
    test = DocQAEnv.list_tasks("test")
    assert len(train) == 12 and len(test) == 9 and not set(train) & set(test)
    assert DocQAEnv.list_tasks("all") == train + test
    assert train[0] == "ar23-revenue" and SINGLE in train and CROSS in test
    with pytest.raises(UnknownTaskError, match="valid splits: train, test, all"):
        DocQAEnv.list_tasks("dev")
    with pytest.raises(BridgeError, match="unknown option"):
        DocQAEnv.list_tasks("train", corpus="x")


def test_unknown_task_names_the_tasks():
    with pytest.raises(UnknownTaskError, match="no task 'nope'.*ar23-revenue.*list_tasks"):
        load_bridge("docqa", task_id="nope")
    with pytest.raises(UnknownTaskError, match="no task 42"):
        DocQAEnv(42)


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"max_steps": 0}, "max_steps: expected a positive int"),
        ({"lines_per_page": True}, "lines_per_page: expected a positive int"),
        ({"corpus_dir": 3, "tasks_file": "t.json"}, "corpus_dir: expected a path"),
        ({"tasks_file": ""}, "tasks_file: expected a path"),
        ({"corpus_dir": "/nowhere"}, "corpus_dir needs tasks_file"),
        ({"corpus_dir": "/nowhere", "tasks_file": "t.json"}, "/nowhere is not a folder"),
        ({"tasks_file": "/nowhere/tasks.json"}, "tasks_file: cannot read /nowhere/tasks.json"),
    ],
)
def test_bad_options(options, problem):
    with pytest.raises(BridgeError, match=problem):
        DocQAEnv(SINGLE, **options)


def test_missing_pypdf_names_the_extra(monkeypatch, tmp_path):
    shutil.copy(BUILTIN_CORPUS / "annual_report_2023.pdf", tmp_path / "report.pdf")
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps([{"id": "t", "question": "Staff?", "answers": ["412"]}]))
    monkeypatch.setitem(sys.modules, "pypdf", None)  # `import pypdf` now fails
    with pytest.raises(DependencyNotInstalled, match=r"envharness\[docqa\]"):
        load_bridge("docqa", task_id="t", corpus_dir=tmp_path, tasks_file=tasks)


def test_importing_the_bridge_does_not_import_pypdf(tmp_path):
    (tmp_path / "notes.txt").write_text("The launch is on 3 May.\n")
    (tmp_path / "tasks.json").write_text(
        json.dumps([{"id": "launch", "question": "When is the launch?", "answer": "3 May"}])
    )
    code = (
        "import sys, envharness\n"
        "from envharness.bridges.docqa import DocQAEnv\n"
        f"env = DocQAEnv('launch', corpus_dir={str(tmp_path)!r}, "
        f"tasks_file={str(tmp_path / 'tasks.json')!r})\n"
        "env.reset()\n"
        "assert 'pypdf' not in sys.modules, 'pypdf was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# -- the contract ---------------------------------------------------------------------------------


@pytest.mark.parametrize("task_id", [SINGLE, CROSS])
def test_check_bridge(make, task_id):
    report = check_bridge(make(task_id))
    assert report.bridge == "docqa"
    assert [a.tool for a in report.actions][-1] == "answer"
    assert len(report.actions) == len(make(task_id).oracle_actions())


def test_reset_and_state(make):
    env = make(max_steps=9)
    assert env.max_steps == 9 and make().max_steps == 20
    assert env.bridge_options() == {"max_steps": 9} and make().bridge_options() == {}
    with pytest.raises(EpisodeError, match="call reset"):
        env.step(search("employees"))
    with pytest.raises(EpisodeError, match="call reset"):
        env.observe()
    assert "Question: How many employees did Corvane have at the end of 2023?" in env.instruction
    assert "Corvane Instruments Ltd, a fictional maker" in env.instruction
    observation, info = env.reset(seed=123)
    assert observation.startswith("Question: How many employees")
    assert "5 documents" in observation and info == {"documents": 5}
    state = env.get_env_state()
    assert set(state) == set(env.env_state_schema()["properties"])
    assert state["steps"] == 0 and state["searches"] == [] and state["answered"] is False
    assert (state["current_doc"], state["current_page"], state["answer"]) == ("", 0, "")
    assert [t.name for t in env.tools()] == ["list_documents", "search", "read_page", "answer"]


def test_tools_show_documents_hits_and_pages(make):
    env = make()
    env.reset()
    listing = env.step(Action("list_documents", {})).observation
    assert listing.splitlines()[0] == "5 documents:"
    assert (
        "- annual_report_2023.pdf (pdf, 6 pages): Corvane Instruments Ltd - Annual Report 2023"
        in listing
    )
    assert "- employee_handbook.txt (text, 5 pages)" in listing
    assert "- board_minutes_2023.md (markdown, 3 pages)" in listing
    hits = env.step(search("employees year end")).observation
    lines = hits.splitlines()
    assert lines[0].startswith("Search results for 'employees year end' (")
    assert "annual_report_2023.pdf, page 5: Employees at year end 2023 2022" in hits
    assert "annual_report_2022.pdf, page 3: Employees at year end 2022 2021" in hits
    assert len(lines) <= 7 and lines[-1] == "Read a page with read_page(doc, page)."
    page = env.step(read("annual_report_2023.pdf", 5)).observation
    assert page.startswith("[annual_report_2023.pdf, page 5 of 6]\nPeople and facilities")
    assert "Total employees                            412         371" in page
    # documents may be named loosely when that picks one
    for name in ("ANNUAL_REPORT_2023.PDF", "annual_report_2023", " annual_report_2023.pdf "):
        assert env.step(read(name, 5)).observation == page
    assert "No page matches 'zebra'" in env.step(search("zebra")).observation
    state = env.get_env_state()
    assert state["searches"] == ["employees year end", "zebra"]
    assert state["pages_read"] == [{"doc": "annual_report_2023.pdf", "page": 5}]
    assert (state["current_doc"], state["current_page"], state["steps"]) == (
        "annual_report_2023.pdf",
        5,
        7,
    )
    assert state["last_tool"] == "search" and state["invalid_actions"] == 0


def test_invalid_actions_get_feedback(make):
    env = make()
    env.reset()
    result = env.step(read("annual_report_2024.pdf", 1))
    assert result.observation.startswith("There is no document 'annual_report_2024.pdf'")
    assert (
        "annual_report_2022.pdf, annual_report_2023.pdf, board_minutes_2023.md"
        in (result.info["invalid_action"])
    )
    assert (result.reward, result.terminated, result.truncated) == (0.0, False, False)
    result = env.step(read("annual_report", 1))  # two documents fit: ambiguous
    assert "There is no document 'annual_report'" in result.observation
    result = env.step(read("price_list_2024.md", 3))
    assert result.observation == "price_list_2024.md has 2 pages (1-2); there is no page 3"
    assert result.info["invalid_action"] == result.observation
    result = env.step(read("price_list_2024.md", 0))
    assert result.observation == "price_list_2024.md has 2 pages (1-2); there is no page 0"
    for query in ("   ", "?!"):
        assert "no words or numbers" in env.step(search(query)).info["invalid_action"]
    result = env.step(answer("  "))
    assert "answer is empty" in result.info["invalid_action"] and not result.terminated
    state = env.get_env_state()
    assert state["invalid_actions"] == 7 and state["steps"] == 7 and state["searches"] == []
    assert state["pages_read"] == [] and not state["answered"]
    # schema mismatches raise and change nothing
    for bad in (Action("read_page", {"doc": "x"}), Action("search", {"q": "x"}), Action("x")):
        with pytest.raises(InvalidActionError):
            env.step(bad)
    with pytest.raises(InvalidActionError, match="page"):
        env.step(Action("read_page", {"doc": "price_list_2024.md", "page": "2"}))
    assert env.get_env_state() == state


@pytest.mark.parametrize(
    ("text", "success", "score"),
    [
        ("412", True, 1.0),
        ("412 employees.", True, 1.0),  # a listed alternative
        ("The answer is 412", False, 0.5),
        ("371", False, 0.0),
    ],
)
def test_answer_ends_the_episode_and_is_scored(make, text, success, score):
    env = make()
    env.reset()
    result = env.step(answer(text))
    assert result.terminated and not result.truncated
    assert result.reward == pytest.approx(score)
    assert (
        result.observation == f"Answer submitted: {' '.join(text.split())!r}. The episode is over."
    )
    evaluation = env.evaluate()
    assert evaluation.success is success and evaluation.score == pytest.approx(score)
    assert evaluation.details["references"] == ["412", "412 employees"]
    assert evaluation.details["answer"] == text and evaluation.details["exact_match"] is success
    assert env.oracle_actions() == []
    with pytest.raises(EpisodeError, match="episode is over"):
        env.step(search("employees"))
    env.reset()
    assert env.evaluate().to_dict() == {
        "success": False,
        "score": 0.0,
        "details": {
            "answered": False,
            "answer": "",
            "exact_match": False,
            "f1": 0.0,
            "references": ["412", "412 employees"],
        },
    }


def test_oracle_follows_the_state(make):
    env = make(CROSS)
    env.reset()
    plan = [str(a) for a in env.oracle_actions()]
    assert plan == [
        "search(query='SkyMast 400 stations sold')",
        "read_page(doc='annual_report_2023.pdf', page=4)",
        "search(query='SkyMast 400 price')",
        "read_page(doc='price_list_2024.md', page=1)",
        "search(query='price increase Weather Systems')",
        "read_page(doc='board_minutes_2023.md', page=2)",
        "answer(text='7.8')",
    ]
    env.step(search("SkyMast 400 price"))
    env.step(read("board_minutes_2023", 2))
    assert [str(a) for a in env.oracle_actions()] == [
        "search(query='SkyMast 400 stations sold')",
        "read_page(doc='annual_report_2023.pdf', page=4)",
        "read_page(doc='price_list_2024.md', page=1)",
        "answer(text='7.8')",
    ]
    for action in env.oracle_actions():
        result = env.step(action)
    assert result.terminated and env.evaluate().success


def test_save_and_restore(make):
    env = make(CROSS, max_steps=30)
    env.reset()
    for action in (search("SkyMast"), read("nope", 1), read("annual_report_2023.pdf", 4)):
        env.step(action)
    saved = json.loads(json.dumps(env.save_state()))
    assert saved["options"] == {"max_steps": 30} and len(saved["actions"]) == 3
    clone = DocQAEnv.from_state(saved)
    assert clone.get_env_state() == env.get_env_state() and clone.observe() == env.observe()
    assert clone.max_steps == 30 and clone.oracle_actions() == env.oracle_actions()
    assert clone.step(answer("7.8")).reward == 1.0
    fresh = DocQAEnv.from_state(make().save_state())
    with pytest.raises(EpisodeError):
        fresh.observe()
    with pytest.raises(BridgeError, match="missing key"):
        DocQAEnv.from_state({"bridge": "docqa"})
    with pytest.raises(BridgeError, match="'bridge' is 'toy24'"):
        DocQAEnv.from_state({**saved, "bridge": "toy24"})
    with pytest.raises(BridgeError, match="does not reproduce"):
        DocQAEnv.from_state({**saved, "observation": "something else"})
    with pytest.raises(BridgeError, match=r"actions\[0\] is not a valid action"):
        DocQAEnv.from_state({**saved, "actions": [{"tool": "fly", "args": {}}]})
    with pytest.raises(BridgeError, match="episode ended before actions"):
        DocQAEnv.from_state({**saved, "actions": [answer("1").to_dict(), answer("2").to_dict()]})
    with pytest.raises(BridgeError, match="'options' must be a dict"):
        DocQAEnv.from_state({**saved, "options": {"cache_dir": "/tmp"}})


# -- episodes -------------------------------------------------------------------------------------


@pytest.mark.parametrize("task_id", DocQAEnv.list_tasks("all"))
def test_every_task_is_solved_by_its_oracle_also_after_each_stage(make, task_id):
    trajectory = rollout(make(task_id), OraclePolicy(1.0, seed=0), seed=0)
    assert trajectory.success and trajectory.evaluation.score == 1.0
    assert trajectory.end_reason == "terminated"
    stages = make(task_id).stage_candidates()
    assert 1 <= len(stages) <= 3
    for stage in stages:
        staged = Setups(make(task_id), stage)
        trajectory = rollout(staged, OraclePolicy(1.0, seed=0), seed=0)
        assert trajectory.success, (task_id, stage)


def test_random_episode_runs(make):
    trajectory = rollout(make(CROSS), RandomPolicy(seed=3), max_steps=25, seed=0)
    assert trajectory.error is None
    assert trajectory.end_reason in ("budget", "terminated")
    assert 1 <= trajectory.n_steps <= 25


# -- harnesses ------------------------------------------------------------------------------------


def test_stage_candidates_start_on_a_misleading_page(make):
    env = make()
    stages = env.stage_candidates()
    assert stages == make().stage_candidates()  # deterministic
    assert [str(a) for a in stages[0]] == [
        "search(query='employees year end')",
        "read_page(doc='annual_report_2022.pdf', page=3)",
    ]
    plan = env.oracle_actions()
    assert all(stage[: len(plan)] != plan[: len(stage)] for stage in stages)  # not head starts
    staged = Setups(make(), stages[0])
    observation, info = staged.reset()
    assert info["setup_steps"] == 2
    # a start in the staged state: the question, the folder, and the misleading page open
    assert observation.startswith("Question: How many employees did Corvane have")
    assert "The page open now:\n[annual_report_2022.pdf, page 3 of 4]" in observation
    assert "Total employees                            371" in observation
    assert observation == staged.observe()
    state = staged.get_env_state()
    assert state["current_doc"] == "annual_report_2022.pdf" and state["steps"] == 0
    assert state["searches"] == ["employees year end"] and state["last_tool"] == ""
    bridge = staged.unwrapped
    clone = type(bridge).from_state(json.loads(json.dumps(bridge.save_state())))
    assert clone.get_env_state() == bridge.get_env_state() and clone.observe() == observation
    assert [str(a) for a in staged.oracle_actions()] == [
        "read_page(doc='annual_report_2023.pdf', page=5)",
        "answer(text='412')",
    ]
    assert "Question: How many employees" in staged.instruction  # the question stays in view


FORBID_SEARCH = """
class _Rules:
    def filter_action(self, action, state):
        if action["tool"] == "search":
            return "Search is disabled in this variant; read the pages instead."
        return action
"""

LABEL_OLD_PAGES = """
class _Rules:
    def modify_transition(self, action, observation, state):
        if action["tool"] == "read_page" and state["current_doc"].endswith("2022.pdf"):
            return "NOTE: this page is from the 2022 report.\\n" + observation
        return observation
"""


def test_rules_forbid_search(make):
    env = Rules(make(), FORBID_SEARCH)
    try:
        env.reset()
        before = env.get_env_state()
        result = env.step(search("employees"))
        assert result.info.get("blocked") is True
        assert result.observation == "Search is disabled in this variant; read the pages instead."
        assert env.get_env_state() == before  # the env was not stepped
        assert env.step(read("annual_report_2023.pdf", 5)).info.get("blocked") is None
        assert env.step(answer("412")).terminated and env.evaluate().success
    finally:
        env.close()


def test_rules_label_pages_of_the_old_report(make):
    env = Rules(make(), LABEL_OLD_PAGES)
    try:
        env.reset()
        old = env.step(read("annual_report_2022.pdf", 3)).observation
        assert old.startswith("NOTE: this page is from the 2022 report.\n[annual_report_2022.pdf")
        new = env.step(read("annual_report_2023.pdf", 5)).observation
        assert new.startswith("[annual_report_2023.pdf, page 5 of 6]")
        assert rollout(env, OraclePolicy(1.0), close=False).success
    finally:
        env.close()


# -- the rigger -----------------------------------------------------------------------------------


def test_rig_cli_two_tasks(tmp_path):
    pytest.importorskip("langgraph", reason="the rigger needs the 'rigger' extra")
    from typer.testing import CliRunner

    from envharness.cli import app

    out = tmp_path / "rig"
    result = CliRunner().invoke(
        app,
        [
            "rig",
            "docqa",
            "--tasks",
            "2",
            "--policy",
            "oracle:0.5",
            "--k-observe",
            "3",
            "--k-validate",
            "3",
            "--max-iterations",
            "2",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert (out / "rig.json").exists()
    assert (out / "trajectories" / "trajectories.jsonl").exists()
    for task in DocQAEnv.list_tasks("train")[:2]:
        assert any(
            (out / s / f"{task}.json").exists() for s in ("accepted", "rejected", "undecided")
        )


# -- task fingerprints: a spec cannot swap the answer key ----------------------------------------


def _forged_tasks(tmp_path, answers):
    """The built-in tasks file, with task SINGLE's answers replaced by ``answers``."""
    from envharness.bridges.docqa import BUILTIN_TASKS

    data = json.loads(BUILTIN_TASKS.read_text())
    for task in data["tasks"]:
        if task["id"] == SINGLE:
            task["answers"] = answers
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(data))
    return path


def test_fingerprint_is_stable_across_instances_resets_and_neutral_options(make, tmp_path):
    from envharness.bridges.docqa import BUILTIN_TASKS

    env = make()
    fingerprint = env.task_fingerprint()
    assert len(fingerprint) == 64 and int(fingerprint, 16) >= 0
    env.reset()
    env.step(search("employees"))
    assert env.task_fingerprint() == fingerprint
    assert make().task_fingerprint() == fingerprint
    copy = tmp_path / "copy.json"
    shutil.copy(BUILTIN_TASKS, copy)  # the same tasks, elsewhere
    assert make(tasks_file=copy, max_steps=3).task_fingerprint() == fingerprint
    assert make(CROSS).task_fingerprint() != fingerprint


def test_other_answers_under_the_same_task_id_change_the_fingerprint(make, tmp_path):
    real = make()
    forged = make(tasks_file=_forged_tasks(tmp_path, ["anything"]))
    assert forged.task_id == real.task_id and forged.task.question == real.task.question
    assert forged.task_fingerprint() != real.task_fingerprint()


def test_a_spec_pointed_at_a_forged_answer_key_is_refused(make, tmp_path):
    from envharness import SpecError
    from envharness.harness import HarnessSpec

    forged_file = _forged_tasks(tmp_path, ["anything"])
    forged = make(tasks_file=forged_file)
    forged.reset()
    forged.step(answer("anything"))
    assert forged.evaluate().success  # the forgery works on an unpinned env
    real = make()
    data = json.loads(HarnessSpec.from_env(Setups(real, [search("employees year end")])).to_json())
    assert data["bridge"]["fingerprint"] == real.task_fingerprint()
    data.pop("spec_id")  # the forger re-derives the id after the edit
    data["bridge"]["options"]["tasks_file"] = str(forged_file)
    spec = HarnessSpec.from_dict(data)
    with pytest.raises(SpecError) as raised:
        spec.build()
    message = str(raised.value)
    assert f"bridge 'docqa' task '{SINGLE}'" in message
    assert real.task_fingerprint() in message and forged.task_fingerprint() in message
    assert "tasks_file" in message and "re-rig" in message
    # the real task file, named explicitly, is verdict-neutral and still builds
    from envharness.bridges.docqa import BUILTIN_TASKS

    data["bridge"]["options"]["tasks_file"] = str(BUILTIN_TASKS)
    HarnessSpec.from_dict(data).build().close()
