from __future__ import annotations

import json
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
    list_tasks,
    load_bridge,
)
from envharness.harness import Rules, Setups
from envharness.rollout import OraclePolicy, RandomPolicy, rollout
from envharness.testing import check_bridge

pytest.importorskip(
    "openpyxl", reason="the spreadsheet bridge needs: pip install 'envharness[spreadsheet]'"
)
pytest.importorskip(
    "formulas", reason="the spreadsheet bridge needs: pip install 'envharness[spreadsheet]'"
)

from envharness.bridges.spreadsheet import (  # noqa: E402
    SUPPORTED_FUNCTIONS,
    SpreadsheetEnv,
    load_tasks,
    recalc,  # noqa: E402
)
from envharness.bridges.spreadsheet.tasks import DATA_DIR  # noqa: E402

LINES = "sales-line-totals"  # Sales!F2:F41 = units x price, one fill-down formula
SUMMARY = "sales-region-summary"  # Summary!B2:C5 from the Sales sheet, rows may be shuffled
TOP_REP = "sales-top-rep"  # Report!B1:B2, the oracle writes a helper column on Reps


def write(range_: str, *rows: list[str]) -> Action:
    return Action("write_cells", {"range": range_, "values": [list(r) for r in rows]})


def read(range_: str, formulas: bool = False) -> Action:
    args = {"range": range_, "formulas": True} if formulas else {"range": range_}
    return Action("read_range", args)


@pytest.fixture
def make():
    made: list[SpreadsheetEnv] = []

    def build(task_id: str = LINES, **options) -> SpreadsheetEnv:
        env = load_bridge("spreadsheet", task_id=task_id, **options)
        made.append(env)
        return env

    yield build
    for env in made:
        env.close()


# -- tasks --------------------------------------------------------------------------------------


def test_tasks_and_splits():
    train, test = list_tasks("spreadsheet", "train"), list_tasks("spreadsheet", "test")
    every = list_tasks("spreadsheet", "all")
    assert len(every) >= 15 and len(test) >= 5 and not set(train) & set(test)
    assert every == train + test and train[0] == LINES
    tasks = load_tasks()
    categories = {tasks[t].category for t in every}
    assert categories == {
        "value",
        "formula",
        "text-cleaning",
        "conditional",
        "lookup",
        "cross-sheet",
    }
    assert any("!" in tasks[t].answer_position and tasks[t].shuffle_rows for t in every)
    for task in tasks.values():
        assert task.input_path.is_file() and task.answer_path.is_file()
    with pytest.raises(UnknownTaskError, match="valid splits: train, test, all"):
        list_tasks("spreadsheet", "dev")
    with pytest.raises(BridgeError, match=r"unknown option\(s\) \['seed'\]"):
        SpreadsheetEnv.list_tasks("train", seed=1)


def test_bad_task_ids_and_options():
    with pytest.raises(UnknownTaskError, match="valid task ids: sales-line-totals, ") as caught:
        SpreadsheetEnv("sales-totals")
    assert "list_tasks('spreadsheet', split='all')" in str(caught.value)
    with pytest.raises(UnknownTaskError):
        SpreadsheetEnv(3)
    with pytest.raises(BridgeError, match="max_steps: expected a positive int, got 0"):
        SpreadsheetEnv(LINES, max_steps=0)
    with pytest.raises(TypeError):
        SpreadsheetEnv(LINES, engine="libreoffice")


def test_missing_packages_name_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "openpyxl", None)
    with pytest.raises(DependencyNotInstalled, match=r"envharness\[spreadsheet\]"):
        load_bridge("spreadsheet", task_id=LINES)
    monkeypatch.undo()
    monkeypatch.setitem(sys.modules, "formulas", None)
    monkeypatch.setattr(recalc, "_ENGINE", None)
    with pytest.raises(DependencyNotInstalled, match="'formulas' is not installed .*spreadsheet"):
        load_bridge("spreadsheet", task_id=LINES)


def test_importing_the_bridge_loads_no_optional_package():
    code = (
        "import sys, envharness\n"
        "from envharness.bridges.spreadsheet import SpreadsheetEnv\n"
        "assert len(envharness.list_tasks('spreadsheet', 'all')) >= 15\n"
        "loaded = {'openpyxl', 'formulas', 'numpy'} & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_task_data_is_reproducible(tmp_path):
    from envharness.bridges.spreadsheet.build_tasks import build

    build(tmp_path)
    assert (tmp_path / "tasks.json").read_bytes() == (DATA_DIR / "tasks.json").read_bytes()
    made = sorted(p.name for p in (tmp_path / "workbooks").iterdir())
    assert made == sorted(p.name for p in (DATA_DIR / "workbooks").iterdir())
    for name in made:
        assert (tmp_path / "workbooks" / name).read_bytes() == (
            DATA_DIR / "workbooks" / name
        ).read_bytes(), name


# -- the formula engine -------------------------------------------------------------------------

ERRORS = {"#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A"}


def test_engine_agrees_with_the_reference_values():
    from envharness.bridges.spreadsheet.build_tasks import evaluate_engine_cases
    from envharness.bridges.spreadsheet.values import CellError, compare

    cases = evaluate_engine_cases(DATA_DIR / "engine_cases.json")
    assert len(cases) >= 150
    wrong = []
    for formula, expected, got in cases:
        assert recalc.formula_problem(formula) is None, formula
        if expected in ERRORS:
            ok = isinstance(got, CellError) and str(got) == expected
        else:
            ok = compare(expected, got) is None
        if not ok:
            wrong.append((formula, expected, got))
    assert not wrong
    used = " ".join(formula.upper() for formula, _, _ in cases)
    assert all(f"{name}(" in used for name in SUPPORTED_FUNCTIONS)
    sources = json.loads((DATA_DIR / "engine_cases.json").read_text())["cases"]
    assert sum(c["source"] == "libreoffice-7.4" for c in sources) >= 140


@pytest.mark.parametrize(
    ("formula", "problem"),
    [
        ("=SUM(A1:A3", "cannot be read"),
        ("=TODAY()", "the function TODAY is not supported here; supported functions: ABS, "),
        ("=OFFSET(A1,1,0)", "the function OFFSET is not supported"),
        ('=INDIRECT("A"&B1)', "the function INDIRECT is not supported"),
        ("=FOO(1)", "the function FOO is not supported"),
        ("=SUM(1:1)", "whole-row references"),
        ('=COUNTIF(A:A,"x")', "whole-column reference A:A is only supported as a direct arg"),
        ("=SUM(A:A*2)", "whole-column reference A:A"),
        ("=A:A", "whole-column reference A:A"),
        ("=Nope!A1+1", "refers to a sheet 'NOPE' that does not exist; sheets: Sales"),
    ],
)
def test_formulas_the_engine_cannot_evaluate_are_refused(make, formula, problem):
    env = make()
    env.reset()
    before = env.get_env_state()
    result = env.step(write("Sales!H2", [formula]))
    assert problem in result.info["invalid_action"]
    assert result.observation.startswith("write_cells refused: H2: ")
    after = env.get_env_state()
    assert after["invalid_actions"] == 1 and after["changed_cells"] == before["changed_cells"]


def test_engine_corrections_and_whole_columns(make):
    env = make()
    env.reset()
    formulas = [
        '=TRIM("  a   b  ")',
        "=ROUND(1.005,2)",
        '=COUNTIF(B2:B41,"*TH")',
        "=SUM(D:D)",
        "=SUM(D2:D41)",
        '=VLOOKUP("SO-1003",A:F,4,FALSE)',
        "=D4",
    ]
    env.step(write("Sales!H1", *[[f] for f in formulas]))
    book = env._now()
    values = [book.value("Sales", row, 8) for row in range(1, 8)]
    assert values[:2] == ["a b", 1.01]
    regions = [book.value("Sales", r, 2) for r in range(2, 42)]
    assert values[2] == regions.count("North") + regions.count("South")  # "*TH": ends with th
    assert values[3] == values[4] > 0 and values[5] == values[6]


# -- tools --------------------------------------------------------------------------------------


def test_reset_lists_the_sheets(make):
    env = make(SUMMARY)
    with pytest.raises(EpisodeError, match="call reset"):
        env.step(Action("list_sheets"))
    observation, info = env.reset(seed=5)
    assert observation.startswith(env.instruction)
    assert "Put the answer in Summary!B2:C5" in env.instruction
    assert (
        "- Sales: A1:F49 (49 rows x 6 columns); row 1: Order ID | Region | Product" in observation
    )
    assert "- Summary: A1:C5 (5 rows x 3 columns)" in observation
    assert info == {"answer_position": "Summary!B2:C5", "sheets": ["Sales", "Summary"]}
    listing = env.step(Action("list_sheets")).observation
    assert listing.startswith("The workbook has 2 sheet(s):") and observation.endswith(listing)
    state = env.get_env_state()
    assert set(state) == set(env.env_state_schema()["properties"])
    assert state["sheets"] == [
        {"name": "Sales", "used_range": "A1:F49"},
        {"name": "Summary", "used_range": "A1:C5"},
    ]
    assert state["answer_cells"][0] == {"cell": "Summary!B2", "shown": "", "formula": ""}
    assert (state["steps"], state["reads"], state["answer_cells_correct"]) == (1, 1, 0)


def test_read_range(make):
    env = make()
    env.reset()
    observation = env.step(read("sales!a1:c2")).observation
    assert observation.splitlines() == [
        "Sales!A1:C2 (values):",
        "    | A | B | C",
        "  1 | Order ID | Region | Product",
        observation.splitlines()[3],
    ]
    assert observation.splitlines()[3].startswith("  2 | SO-1001 | ")
    whole = env.step(read("D:E")).observation  # no sheet: the first sheet; rows in use only
    assert whole.startswith("Sales!D1:E41 (values):") and whole.count("\n") == 42
    big = env.step(read("Sales!A1:F500")).observation
    assert "(showing rows 1-66 of 1-500: at most 400 cells per read" in big
    env.step(write("Sales!F2", ["=D2*E2"]))
    shown = env.step(read("Sales!F2", formulas=True)).observation
    assert shown == "Sales!F2 (formulas and values):\n    | F\n  2 | =D2*E2"
    for bad, reason in [
        ("Nope!A1", "there is no sheet named 'Nope'; sheets: Sales"),
        ("A0", "cannot read the cell 'A0'"),
        ("hello world", "cannot read the cell"),
        ("A1:B2:C3", "cannot read 'A1:B2:C3'"),
    ]:
        result = env.step(read(bad))
        assert reason in result.info["invalid_action"], bad
    with pytest.raises(InvalidActionError, match="missing required argument 'range'"):
        env.step(Action("read_range", {}))
    with pytest.raises(InvalidActionError, match=r"values\[0\]: expected array"):
        env.step(Action("write_cells", {"range": "A1", "values": ["x"]}))


def test_write_cells(make):
    env = make()
    env.reset()
    result = env.step(write("Sales!F2:F41", ["=D2*E2"]))  # one formula fills the range
    assert result.observation.startswith("Wrote 40 cell(s) in Sales!F2:F41 (40 formula(s)).")
    assert "(first 20 rows shown)" in result.observation
    book = env._now()
    assert book.content("Sales", 41, 6) == "=D41*E41"
    assert book.value("Sales", 3, 6) == book.value("Sales", 3, 4) * book.value("Sales", 3, 5)
    typed = env.step(write("Sales!H1", ["12.5", "7", "TRUE", "'007", "2024-03-05", "1,250", "5%"]))
    assert '| 12.5 | 7 | TRUE | "007" | 2024-03-05 | 1250 | 0.05' in typed.observation
    assert book.content("Sales", 1, 11) == "007"
    cleared = env.step(write("Sales!H1:I1", ["", ""]))
    assert book.content("Sales", 1, 8) is None and "invalid_action" not in cleared.info
    errors = env.step(write("Sales!H2", ["=1/0"], ["=B2+1"], ["=H5+1"], ["=H4+1"]))
    assert (
        "4 cell(s) evaluate to an error: H2 #DIV/0!, H3 #VALUE!, H4 #CIRCULAR!, H5 #CIRCULAR!"
        in (errors.observation)
    )
    for args, reason in [
        (("Sales!H2:H3", ["1", "2"]), "is 2 row(s) x 1 column(s) but the values are 1 x 2"),
        (("Sales!H2", ["1", "2"], ["3"]), "rows of equal length"),
        (("Sales!H:H", ["1"]), "is a whole column; write to a bounded range"),
        (("Sales!H2", ["'=A1"]), "text starting with '=' cannot be stored"),
        (("Sales!A1:XFD2", ["x"]), "at most 5000 cells can be written at a time"),
        (("Sales!H10001", ["1"]), "sheets end at row 10000 and column ZZ"),
        (("Sales!H2", ["x" * 40_000]), "H2: too long (40000 characters"),
    ]:
        assert reason in env.step(write(*args)).info["invalid_action"]
    assert env.get_env_state()["invalid_actions"] == 7
    assert env.step(Action("write_cells", {"range": "H2", "values": []})).info["invalid_action"]


def test_verifier_compares_values_with_tolerance(make):
    env = make(TOP_REP)
    env.reset()
    evaluation = env.evaluate()
    assert (evaluation.success, evaluation.score) == (False, 0.0)
    assert evaluation.details["mismatches"][0]["reason"].startswith("expected the text ")
    env.step(write("Report!B1:B2", ["Elsa Brightwater "], ["10175.0000001"]))  # typed values
    assert env.evaluate().to_dict() == {
        "success": True,
        "score": 1.0,
        "details": {"answer_position": "Report!B1:B2", "cells": 2, "matched": 2, "mismatches": []},
    }
    env.step(write("Report!B2", ["'10175"]))  # text, not the number
    evaluation = env.evaluate()
    assert evaluation.score == 0.5 and evaluation.details["mismatches"] == [
        {
            "cell": "Report!B2",
            "expected": 10175,
            "got": "10175",
            "reason": "expected the number 10175, got the text '10175'",
        }
    ]


def test_submit_ends_the_episode(make):
    env = make()
    env.reset()
    result = env.step(Action("submit"))
    assert (result.reward, result.terminated) == (0.0, True)
    assert result.observation == "Submitted. 0 of 40 answer cells in Sales!F2:F41 match."
    assert result.info["evaluation"]["success"] is False
    assert env.oracle_actions() == [] and env.get_env_state()["submitted"]
    with pytest.raises(EpisodeError, match="episode is over"):
        env.step(Action("list_sheets"))
    env.reset()
    env.step(write("Sales!F2:F41", ["=D2*E2"]))
    assert env.step(Action("submit")).reward == 1.0
    env.close()
    env.close()
    assert env.evaluate().success  # the last state stays readable
    with pytest.raises(EpisodeError, match="closed"):
        env.step(Action("list_sheets"))
    env.reset()
    assert env.evaluate().success is False


# -- the contract and episodes ------------------------------------------------------------------


@pytest.mark.parametrize("task_id", [SUMMARY, "contacts-email-domain"])
def test_check_bridge(make, task_id):
    report = check_bridge(make(task_id))
    assert report.bridge == "spreadsheet" and report.actions[-1] == Action("submit")


def test_save_and_restore(make):
    env = make(TOP_REP)
    env.reset()
    for action in (read("Reps!A1:D3"), write("Reps!F2", ["=SUM(B2:D2)"]), read("Nope!A1")):
        env.step(action)
    saved = json.loads(json.dumps(env.save_state()))
    clone = SpreadsheetEnv.from_state(saved)
    try:
        assert clone.get_env_state() == env.get_env_state()
        assert clone.observe() == env.observe()
        for action in env.oracle_actions():
            last = clone.step(action)
        assert last.reward == 1.0
    finally:
        clone.close()
    with pytest.raises(EpisodeError):
        SpreadsheetEnv.from_state(make().save_state()).observe()
    with pytest.raises(BridgeError, match="missing key"):
        SpreadsheetEnv.from_state({"bridge": "spreadsheet"})
    with pytest.raises(BridgeError, match="does not reproduce"):
        SpreadsheetEnv.from_state({**saved, "observation": "something else"})
    with pytest.raises(BridgeError, match=r"actions\[0\] is not a valid action"):
        SpreadsheetEnv.from_state({**saved, "actions": [{"tool": "undo", "args": {}}]})
    with pytest.raises(BridgeError, match="'options' must be a dict"):
        SpreadsheetEnv.from_state({**saved, "options": {"engine": "x"}})


def test_oracle_restores_disturbed_data(make):
    env = make(TOP_REP)
    env.reset()
    env.step(write("Reps!B2", ["1"]))  # the data the answer depends on
    env.step(write("Report!B1", ["nobody"]))
    plan = env.oracle_actions()
    assert plan[0] == write("Reps!B2", ["3900"])
    assert plan[-1] == Action("submit")
    for action in plan:
        result = env.step(action)
    assert result.reward == 1.0
    changed = env.get_env_state()["changed_cells"]
    assert changed == ["Report!B1", "Report!B2", *[f"Reps!F{row}" for row in range(1, 8)]]


def test_oracle_episode_succeeds(make):
    trajectory = rollout(make(SUMMARY), OraclePolicy(1.0, seed=0), seed=0)
    assert trajectory.success and trajectory.end_reason == "terminated"
    assert trajectory.n_steps == 3


def test_random_episode_runs(make):
    trajectory = rollout(make(TOP_REP), RandomPolicy(seed=4), max_steps=12, seed=0)
    assert trajectory.error is None and trajectory.end_reason in ("budget", "terminated")
    assert 1 <= trajectory.n_steps <= 12


# -- harnesses ----------------------------------------------------------------------------------


def test_every_task_is_solvable_from_every_start_state(make):
    for task_id in list_tasks("spreadsheet", "all"):
        env = make(task_id)
        stages = env.stage_candidates()
        assert stages == env.stage_candidates()
        assert len(stages) == (3 if env.task.shuffle_rows else 2), task_id
        env.reset()
        for stage in stages:  # all perturbations at once: stale answers, draft column, shuffle
            for action in stage:
                assert "invalid_action" not in env.step(action).info, (task_id, action)
        assert env.evaluate().score < 1.0, task_id
        for action in env.oracle_actions():
            result = env.step(action)
        assert result.reward == 1.0, (task_id, env.evaluate().details)


def test_stage_candidates_change_the_start_state(make):
    env = make(SUMMARY)
    stale, draft, shuffled = env.stage_candidates()
    assert stale == [write("Summary!B2:C5", *stale[0].args["values"])]
    assert draft[0].args["range"] == "Summary!E1:E9"
    assert draft[0].args["values"][0] == ["Draft (unchecked)"]
    assert shuffled[0].args["range"] == "Sales!A2:F49"
    staged = Setups(make(SUMMARY), shuffled)
    observation, info = staged.reset()
    assert info["setup_steps"] == 1
    assert observation == staged.observe() and not observation.startswith("Wrote")  # a start
    state = staged.get_env_state()
    assert (state["steps"], state["writes"], state["last_action"]) == (0, 0, "")
    bridge = staged.unwrapped
    clone = type(bridge).from_state(json.loads(json.dumps(bridge.save_state())))
    assert clone.get_env_state() == state and clone.observe() == observation
    plain = make(SUMMARY)
    plain.reset()
    first = plain.step(read("Sales!A2:F2")).observation
    assert staged.step(read("Sales!A2:F2")).observation != first
    assert len(staged.get_env_state()["changed_cells"]) > 40
    assert rollout(Setups(make(SUMMARY), stale + draft), OraclePolicy(1.0), seed=0).success


READ_ONLY_DATA = """
class _Rules:
    def filter_action(self, action, state):
        if action["tool"] == "write_cells" and not action["args"]["range"].startswith("Summary!"):
            return "Only the Summary sheet may be edited in this variant."
        return action
"""

PROGRESS_HINT = """
class _Rules:
    def filter_observation(self, observation, state):
        right = state["answer_cells_correct"]
        total = len(state["answer_cells"])
        return observation + "\\n[progress: " + str(right) + "/" + str(total) + " answer cells]"
"""


def test_rules_protect_the_data(make):
    env = Rules(make(SUMMARY), READ_ONLY_DATA)
    try:
        env.reset()
        result = env.step(write("Sales!D2", ["999"]))
        assert result.info.get("blocked") is True
        assert result.observation == "Only the Summary sheet may be edited in this variant."
        assert env.get_env_state()["steps"] == 0  # the workbook was not touched
        assert rollout(env, OraclePolicy(1.0), close=False).success
    finally:
        env.close()


def test_rules_add_a_progress_hint(make):
    env = Rules(make(SUMMARY), PROGRESS_HINT)
    try:
        observation, _ = env.reset()
        assert observation.endswith("[progress: 0/8 answer cells]")
        result = env.step(Action("write_cells", dict(env.unwrapped.task.oracle[0])))
        assert result.observation.endswith("[progress: 4/8 answer cells]")
        assert result.observation.startswith("Wrote 4 cell(s) in Summary!B2:B5")
        assert env.unwrapped.observe().endswith(env.unwrapped._sheet_list())  # the state
    finally:
        env.close()


# -- the rigger ---------------------------------------------------------------------------------


def test_rig_cli_two_tasks(tmp_path):
    pytest.importorskip("langgraph", reason="the rigger needs the 'rigger' extra")
    from typer.testing import CliRunner

    from envharness.cli import app

    args = ["rig", "spreadsheet", "--tasks", "2", "--policy", "oracle:0.5", "--k-observe", "2"]
    args += ["--k-validate", "2", "--max-iterations", "1", "--out", str(tmp_path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    for task_id in (LINES, SUMMARY):
        assert task_id in result.output
        outcomes = [
            tmp_path / folder / f"{task_id}.json"
            for folder in ("accepted", "rejected", "undecided")
        ]
        assert any(path.exists() for path in outcomes), result.output
    assert (tmp_path / "trajectories" / "trajectories.jsonl").read_text().count("\n") >= 8


# -- task fingerprint ---------------------------------------------------------------------------


def test_task_fingerprint_covers_the_record_and_both_workbooks(make, monkeypatch, tmp_path):
    import shutil

    from envharness.bridges.spreadsheet import tasks as tasks_module

    env = make()
    fingerprint = env.task_fingerprint()
    assert len(fingerprint) == 64 and int(fingerprint, 16) >= 0
    env.reset()
    env.step(write("Sales!F2", ["=D2*E2"]))
    assert env.task_fingerprint() == fingerprint
    assert make(max_steps=3).task_fingerprint() == fingerprint
    assert make(SUMMARY).task_fingerprint() != fingerprint
    copy = tmp_path / "workbooks"
    shutil.copytree(tasks_module.WORKBOOK_DIR, copy)
    monkeypatch.setattr(tasks_module, "WORKBOOK_DIR", copy)
    assert make().task_fingerprint() == fingerprint  # the same bytes elsewhere
    task = env.task
    other = make(SUMMARY).task
    shutil.copy(copy / other.answer_file, copy / task.answer_file)  # another answer key
    assert make().task_fingerprint() != fingerprint


def test_task_fingerprint_is_computed_once_per_env(make, monkeypatch):
    from envharness.bridges.spreadsheet import env as env_module

    env = make()
    fingerprint = env.task_fingerprint()

    def unreadable(*args, **kwargs):
        raise AssertionError("the fingerprint was computed again")

    monkeypatch.setattr(env_module, "read_bytes", unreadable)
    assert env.task_fingerprint() == fingerprint
