"""SpreadsheetBench format in the spreadsheet bridge, on the real sample tasks in ../shared/data."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from envharness import Action, BridgeError, UnknownTaskError, list_tasks, load_bridge
from envharness.testing import check_bridge

pytest.importorskip(
    "openpyxl", reason="the spreadsheet bridge needs: pip install 'envharness[spreadsheet]'"
)
pytest.importorskip(
    "formulas", reason="the spreadsheet bridge needs: pip install 'envharness[spreadsheet]'"
)

from envharness.bridges.spreadsheet.bench.compare import (  # noqa: E402
    compare_cell_value,
    mismatch_reason,
    transform_value,
)
from envharness.bridges.spreadsheet.bench.dataset import (  # noqa: E402
    CASES,
    answer_parts,
    get_bench_task,
)
from envharness.bridges.spreadsheet.bench.env import SpreadsheetBenchEnv  # noqa: E402
from envharness.bridges.spreadsheet.bench.oracle import oracle_program  # noqa: E402
from envharness.bridges.spreadsheet.bench.program import run_program, run_programs  # noqa: E402
from envharness.bridges.spreadsheet.bench.recalc import read_values, soffice  # noqa: E402
from envharness.bridges.spreadsheet.bench.verifier import score_task  # noqa: E402

DATA = Path(__file__).resolve().parents[5] / "shared" / "data" / "spreadsheetbench"
needs_data = pytest.mark.skipif(
    not (DATA / "dataset.json").is_file(),
    reason=f"the SpreadsheetBench sample data is not at {DATA} (../shared/data is absent)",
)
needs_soffice = pytest.mark.skipif(
    soffice() is None,
    reason="LibreOffice is not installed (no soffice on PATH; apt-get install libreoffice-calc)",
)
IDS = (
    [json.dumps(r["id"]).strip('"') for r in json.loads((DATA / "dataset.json").read_text())]
    if (DATA / "dataset.json").is_file()
    else []
)


# -- the cell comparison (upstream's rules) -------------------------------------------------------


def test_numbers_are_rounded_to_two_decimals():
    assert compare_cell_value(3.14159, 3.14)
    assert compare_cell_value(2.675, 2.67)  # float rounding as Python's round() does it
    assert not compare_cell_value(3.14, 3.15)
    assert compare_cell_value(5, "5.001")  # a numeric string is a number
    assert compare_cell_value(True, 1)  # bool is an int
    assert transform_value(10) == 10.0 and isinstance(transform_value(10), float)


def test_dates_compare_as_whole_day_serials():
    assert transform_value(dt.datetime(2024, 3, 5)) == 45356.0
    assert compare_cell_value(dt.datetime(2024, 3, 5, 9, 0), dt.datetime(2024, 3, 5, 11, 0))
    assert compare_cell_value(dt.datetime(2024, 3, 5), 45356)
    assert not compare_cell_value(dt.datetime(2024, 3, 5), dt.datetime(2024, 3, 6))
    assert transform_value(dt.date(2024, 3, 5)) == dt.date(2024, 3, 5)  # a date stays as is


def test_times_compare_as_hours_and_minutes():
    assert transform_value(dt.time(12, 34, 56)) == "12:34"
    assert compare_cell_value(dt.time(12, 34, 56), dt.time(12, 34, 1))
    assert compare_cell_value(dt.time(8, 5), "08:05")
    assert not compare_cell_value(dt.time(8, 5), dt.time(8, 6))


def test_empty_string_equals_none():
    assert compare_cell_value(None, "") and compare_cell_value("", None)
    assert compare_cell_value(None, None) and compare_cell_value("", "")
    assert not compare_cell_value(None, 0)
    assert not compare_cell_value("abc", None)


def test_type_mismatch_fails_and_text_is_exact():
    assert not compare_cell_value(1.0, "1.0x")
    assert not compare_cell_value("#N/A", None)
    assert not compare_cell_value("Apple", "apple")
    assert not compare_cell_value("Apple", " Apple")
    assert mismatch_reason(5, None).startswith("type mismatch")
    assert mismatch_reason("a", "b").startswith("value mismatch")
    assert mismatch_reason(1, "1.00") is None


def test_answer_positions_split_as_upstream():
    parts = answer_parts("'Sheet1!'A2:B3,'Sheet2'!C1,D4")
    assert [(p.sheet, p.cell_range) for p in parts] == [
        ("Sheet1", "A2:B3"),
        ("Sheet2", "C1"),
        (None, "D4"),
    ]
    assert parts[0].cells == ("A2", "A3", "B2", "B3")
    with pytest.raises(ValueError, match="more than one"):
        answer_parts("a!b!C1")
    with pytest.raises(ValueError, match="cannot read the cell"):
        answer_parts("Sheet1!A1:ZZZZ9")


# -- bad input ------------------------------------------------------------------------------------


def _copy_task(tmp_path: Path, task_id: str, **changes) -> Path:
    records = json.loads((DATA / "dataset.json").read_text(encoding="utf-8"))
    record = next(r for r in records if str(r["id"]) == task_id)
    record = {k: v for k, v in {**record, **changes}.items() if v is not None}
    shutil.copytree(DATA / "spreadsheet" / task_id, tmp_path / "spreadsheet" / task_id)
    (tmp_path / "dataset.json").write_text(json.dumps([record]), encoding="utf-8")
    return tmp_path


@needs_data
def test_a_record_missing_a_field_is_refused(tmp_path):
    folder = _copy_task(tmp_path, "39490", answer_position=None)
    with pytest.raises(BridgeError, match="'answer_position'"):
        list_tasks("spreadsheet", dataset=folder)
    with pytest.raises(BridgeError, match="record #0 .id 39490. has no field 'answer_position'"):
        load_bridge("spreadsheet", task_id="39490", dataset=folder)


@needs_data
def test_an_unknown_id_is_refused():
    with pytest.raises(UnknownTaskError, match="no task 'nope'"):
        load_bridge("spreadsheet", task_id="nope", dataset=DATA)
    with pytest.raises(UnknownTaskError):
        load_bridge("spreadsheet", task_id=39490, dataset=DATA)  # ids are str(record id)


@needs_data
def test_an_answer_range_on_a_missing_sheet_is_refused(tmp_path):
    folder = _copy_task(tmp_path, "39490", answer_position="'Nowhere'!E1")
    with pytest.raises(BridgeError, match="names the sheet 'Nowhere'"):
        load_bridge("spreadsheet", task_id="39490", dataset=folder)


@needs_data
def test_missing_folder_workbook_and_bad_options_are_refused(tmp_path):
    with pytest.raises(BridgeError, match="has no dataset.json"):
        list_tasks("spreadsheet", dataset=tmp_path)
    folder = _copy_task(tmp_path, "39490")
    (folder / "spreadsheet" / "39490" / "2_39490_answer.xlsx").unlink()
    with pytest.raises(BridgeError, match="test case 2's answer workbook"):
        load_bridge("spreadsheet", task_id="39490", dataset=folder)
    with pytest.raises(BridgeError, match="recalc must be one of"):
        load_bridge("spreadsheet", task_id="79-7", dataset=DATA, recalc="excel")
    with pytest.raises(BridgeError, match="unknown option"):
        list_tasks("spreadsheet", dataset=DATA, colour=True)


# -- every shipped task -----------------------------------------------------------------------


@needs_data
def test_listing_keeps_the_dataset_order():
    assert list_tasks("spreadsheet", dataset=DATA) == IDS
    assert list_tasks("spreadsheet", split="all", dataset=str(DATA)) == IDS
    assert len(IDS) == 30


@needs_data
@pytest.mark.parametrize("task_id", IDS)
def test_oracle_scores_hard_one_input_zero_case_one_program_a_third(task_id):
    task = get_bench_task(DATA, task_id)
    inputs = [task.input_path(c) for c in CASES]
    untouched = score_task(task, inputs)
    assert untouched.details["test_case_results"] == [0, 0, 0]
    assert untouched.score == 0 and not untouched.success
    for program, expected in (
        (oracle_program(task), [1, 1, 1]),
        (oracle_program(task, (1,)), [1, 0, 0]),
    ):
        runs = run_programs(program, inputs)
        try:
            assert all(r.ok for r in runs), [r.error for r in runs]
            verdict = score_task(task, [r.output for r in runs])
        finally:
            for run in runs:
                run.cleanup()
        assert verdict.details["test_case_results"] == expected, verdict.details["cases"]
        assert verdict.score == pytest.approx(sum(expected) / 3)
        assert verdict.success == (expected == [1, 1, 1])


@needs_data
def test_the_env_plays_the_oracle_and_reports_per_case_and_cell():
    env = load_bridge("spreadsheet", task_id="39490", dataset=DATA)
    assert isinstance(env, SpreadsheetBenchEnv)
    observation, info = env.reset()
    assert "test case 1 of 3" in observation and info["test_cases"] == 3
    assert [t.name for t in env.tools()] == [
        "list_sheets", "read_range", "write_cells", "run_program", "submit"
    ]  # fmt: skip
    before = env.evaluate()
    assert before.details["solution"] == "workbook" and before.score == 0
    mismatch = before.details["cases"][0]["parts"][0]["mismatches"][0]
    assert mismatch["cell"] == "Sheet1!E1" and mismatch["expected"] == "Apple"
    assert "no solution program" in before.details["cases"][1]["error"]
    env.step(Action("write_cells", {"range": "E1", "values": [["Apple"]]}))
    edited = env.evaluate()
    assert edited.details["test_case_results"] == [1, 0, 0]
    assert edited.score == pytest.approx(1 / 3) and env.get_env_state()["answer_cells_correct"] == 1
    for action in env.oracle_actions():
        result = env.step(action)
    assert result.terminated and result.reward == 1.0
    verdict = result.info["evaluation"]
    assert verdict["details"]["test_case_results"] == [1, 1, 1]
    assert verdict["details"]["isolation"]["landlock_abi"] >= 0
    assert env.get_env_state()["program"] is True


@needs_data
def test_a_failing_program_changes_nothing():
    env = load_bridge("spreadsheet", task_id="79-7", dataset=DATA)
    env.reset()
    result = env.step(Action("run_program", {"code": "raise ValueError('boom')"}))
    assert "ValueError: boom" in result.observation and result.info["program_error"]
    assert env.get_env_state()["program"] is False
    refused = env.step(Action("run_program", {"code": "def ("}))
    assert "does not parse" in refused.info["invalid_action"]


@needs_data
@pytest.mark.parametrize("task_id", ["39490", "184-45"])
def test_check_bridge_passes(task_id):
    check_bridge(lambda: load_bridge("spreadsheet", task_id=task_id, dataset=DATA))


# -- the program's isolation ------------------------------------------------------------------


@needs_data
@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import os", "import of 'os' is not allowed"),
        ("import socket", "import of 'socket' is not allowed"),
        ("open('/etc/hostname').read()", "Permission denied"),
        ("open('/tmp/envharness-escape', 'w')", "Permission denied"),
        ("eval('1')", "NameError"),
        ("import json\njson.codecs.sys.modules['os'].fork()", "Operation not permitted"),
    ],
)
def test_programs_are_contained(code, expected):
    run = run_program(code, DATA / "spreadsheet" / "79-7" / "1_79-7_input.xlsx")
    try:
        assert not run.ok and expected in run.log + str(run.error)
        assert run.protections["no_new_privs"] and run.protections["capabilities_dropped"]
    finally:
        run.cleanup()
    assert not Path("/tmp/envharness-escape").exists()


@needs_data
def test_a_program_that_hangs_is_killed():
    from envharness.bridges.spreadsheet.bench.program import ProgramLimits

    limits = ProgramLimits(wall_seconds=2.0, cpu_seconds=5)
    run = run_program(
        "while True:\n    pass", DATA / "spreadsheet" / "79-7" / "1_79-7_input.xlsx", limits
    )
    assert not run.ok and "limit" in run.error
    run.cleanup()


# -- recalculation ----------------------------------------------------------------------------


def _formula_book(tmp_path: Path, formula: str) -> Path:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "S"
    sheet["A1"], sheet["A2"], sheet["B1"] = 2, 3, formula
    path = tmp_path / "book.xlsx"
    book.save(path)
    return path


def test_agent_formulas_use_the_engine_when_it_is_sure(tmp_path):
    values = read_values(_formula_book(tmp_path, "=SUM(A1:A2)*2"), [("S", "B1")])
    assert values.method == "engine" and values.values[("S", "B1")] == 10
    forced = read_values(_formula_book(tmp_path, "=SUM(A1:A2)*2"), [("S", "B1")], mode="engine")
    assert forced.method == "engine"


def test_constants_need_no_recalculation(tmp_path):
    values = read_values(_formula_book(tmp_path, "plain"), [("S", "B1"), ("S", "C9")])
    assert values.method == "none" and values.values == {("S", "B1"): "plain", ("S", "C9"): None}


@needs_soffice
def test_libreoffice_takes_formulas_the_engine_cannot(tmp_path):
    values = read_values(_formula_book(tmp_path, "=GCD(A1,4)+A2"), [("S", "B1")])
    assert values.method == "libreoffice" and values.values[("S", "B1")] == 5
    forced = read_values(_formula_book(tmp_path, "=A1*A2"), [("S", "B1")], mode="libreoffice")
    assert forced.method == "libreoffice" and forced.values[("S", "B1")] == 6


def test_without_libreoffice_the_engine_is_used_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVHARNESS_SOFFICE", "no-such-soffice-here")
    values = read_values(_formula_book(tmp_path, "=GCD(A1,4)+A2"), [("S", "B1")])
    assert values.method == "engine" and "LibreOffice is not installed" in values.note


def _formula_runs(task_id: str):
    from envharness.bridges.spreadsheet.bench.oracle import formula_program

    task = get_bench_task(DATA, task_id)
    return task, run_programs(formula_program(task), [task.input_path(c) for c in CASES])


@needs_data
@pytest.mark.parametrize("task_id", ["54057", "17251"])
def test_formulas_a_program_wrote_are_recalculated_by_the_engine(task_id):
    task, runs = _formula_runs(task_id)
    try:
        verdict = score_task(task, [r.output for r in runs], mode="auto")
    finally:
        for run in runs:
            run.cleanup()
    assert verdict.details["test_case_results"] == [1, 1, 1]
    assert {c["recalculation"] for c in verdict.details["cases"]} == {"engine"}


@needs_data
@needs_soffice
def test_formulas_a_program_wrote_are_recalculated_by_libreoffice():
    task, runs = _formula_runs("54057")
    try:
        verdict = score_task(task, [r.output for r in runs], mode="libreoffice")
    finally:
        for run in runs:
            run.cleanup()
    assert verdict.details["test_case_results"] == [1, 1, 1]
    assert {c["recalculation"] for c in verdict.details["cases"]} == {"libreoffice"}


@needs_data
def test_a_program_without_formulas_recalculated_fails_on_engine_errors(tmp_path):
    task = get_bench_task(DATA, "54057")
    code = (
        "import openpyxl\nwb = openpyxl.load_workbook(input_path)\n"
        "wb.active['D3'] = '=NOSUCHFUNCTION(C3)'\nwb.save(output_path)\n"
    )
    runs = run_programs(code, [task.input_path(1)])
    try:
        verdict = score_task(task, [runs[0].output, None, None], mode="engine")
    finally:
        runs[0].cleanup()
    case = verdict.details["cases"][0]
    assert case["recalculation"] == "engine" and not case["passed"]
    assert any(m["cell"].endswith("!D3") for m in case["parts"][0]["mismatches"])
