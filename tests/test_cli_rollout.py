from __future__ import annotations

import importlib.util
import json

import pytest
from typer.testing import CliRunner

from envharness.cli import app
from envharness.harness import HarnessSpec, Setups
from envharness.harness.spec import BridgeSpec
from envharness.rollout.store import RunStore

WIDE = {"COLUMNS": "250"}  # keeps rich tables from wrapping the text the tests look for
FIRST_TASKS = ["1-1-1-8", "1-1-1-11", "1-1-1-12"]  # the first three of Toy24's train split


@pytest.fixture
def runner():
    return CliRunner()


def invoke(runner, *args):
    return runner.invoke(app, ["rollout", *map(str, args)], env=WIDE)


def lines_of(run_dir):
    return (run_dir / "trajectories.jsonl").read_text().splitlines()


def table_rows(result):
    """The summary rows by their first cell (task id or ``overall``)."""
    rows = {}
    for line in result.stdout.splitlines():
        cells = line.split()
        if cells and (cells[0] in FIRST_TASKS or cells[0] == "overall" or "-" in cells[0]):
            rows[cells[0]] = cells
    return rows


def assert_clean_error(result, message):
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ")
    assert message in result.stderr
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.output


def test_a_small_run_stores_trajectories_and_prints_a_summary(runner, tmp_path):
    run_dir = tmp_path / "run"
    result = invoke(
        runner,
        "toy24",
        "--tasks",
        3,
        "--k",
        2,
        "--policy",
        "oracle:1.0",
        "--workers",
        1,
        "--out",
        run_dir,
    )
    assert result.exit_code == 0, result.output
    assert "3 task(s) × 2 episode(s) with oracle:1: 6 new rollout(s)" in result.stderr
    records = [json.loads(line) for line in lines_of(run_dir)]
    assert sorted((r["task_id"], r["seed"]) for r in records) == sorted(
        (task, seed) for task in FIRST_TASKS for seed in (0, 1)
    )
    assert {r["policy"] for r in records} == {"oracle:1"}
    rows = table_rows(result)
    assert list(rows) == [*FIRST_TASKS, "overall"]  # in the order of the split
    assert rows["1-1-1-8"][1:4] == ["2", "2/2", "100%"]
    assert rows["overall"][1:4] == ["6", "6/6", "100%"]
    assert "95% CI" in result.stdout and "Failures" in result.stdout


def test_a_rerun_resumes_and_says_so(runner, tmp_path):
    run_dir = tmp_path / "run"
    common = ["--policy", "oracle:0.5", "--workers", 1, "--out", run_dir]
    assert invoke(runner, "toy24", "--tasks", 2, "--k", 2, *common).exit_code == 0
    first = lines_of(run_dir)
    again = invoke(runner, "toy24", "--tasks", 2, "--k", 2, *common)
    assert again.exit_code == 0, again.output
    assert "4 already in" in again.stderr and "0 new" in again.stderr
    assert lines_of(run_dir) == first
    assert table_rows(again)["overall"][1] == "4"
    more = invoke(runner, "toy24", "--tasks", 3, "--k", 2, *common)
    assert "4 already in" in more.stderr and "2 new" in more.stderr
    assert len(lines_of(run_dir)) == 6 and lines_of(run_dir)[:4] == first


def test_threads_and_processes_store_the_same_episodes(runner, tmp_path):
    for executor, workers in (("thread", 2), ("local", 2)):
        run_dir = tmp_path / executor
        result = invoke(
            runner,
            "toy24",
            "--tasks",
            2,
            "--k",
            3,
            "--policy",
            "random",
            "--executor",
            executor,
            "--workers",
            workers,
            "--max-steps",
            4,
            "--out",
            run_dir,
        )
        assert result.exit_code == 0, result.output
    with (
        RunStore(tmp_path / "thread", readonly=True) as threads,
        RunStore(tmp_path / "local", readonly=True) as processes,
    ):
        assert sorted(threads.keys()) == sorted(processes.keys())
        for key in threads.keys():
            assert threads.get(key).action_keys() == processes.get(key).action_keys()
            assert threads.get(key).max_steps == 4


def test_harness_file_plays_its_own_task(runner, tmp_path):
    spec = HarnessSpec.from_env(
        Setups(
            HarnessSpec(BridgeSpec("toy24", "4-4-10-10")).build(),
            [{"tool": "combine", "args": {"a": "10", "op": "*", "b": "10"}}],
        )
    )
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(spec.to_json())
    run_dir = tmp_path / "run"
    result = invoke(
        runner,
        "--harness",
        spec_file,
        "--tasks",
        5,
        "--k",
        3,
        "--policy",
        "oracle:1",
        "--workers",
        1,
        "--out",
        run_dir,
    )
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in lines_of(run_dir)]
    assert len(records) == 3 and {r["spec_id"] for r in records} == {spec.spec_id}
    assert all(r["evaluation"]["success"] for r in records)
    assert list(table_rows(result)) == ["4-4-10-10"]  # one task: no overall row


def test_harness_over_another_bridge_is_refused(runner, tmp_path):
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(HarnessSpec(BridgeSpec("toy24", "4-4-10-10")).to_json())
    result = invoke(runner, "other", "--harness", spec_file, "--out", tmp_path / "run")
    assert_clean_error(result, "is a harness over bridge 'toy24', not 'other'")


def test_failed_episodes_are_summarized_with_their_errors(runner, tmp_path):
    script = tmp_path / "moves.txt"
    script.write_text("undo\n")
    result = invoke(
        runner,
        "toy24",
        "--tasks",
        1,
        "--k",
        2,
        "--policy",
        f"scripted:{script}",
        "--workers",
        1,
        "--out",
        tmp_path / "run",
    )
    assert result.exit_code == 0, result.output
    assert "policy_error 2" in result.stdout
    assert "2× PolicyError: script exhausted after 1 actions" in result.stderr


def test_bad_policy_is_a_clean_error(runner, tmp_path):
    result = invoke(runner, "toy24", "--policy", "nope", "--out", tmp_path / "run")
    assert_clean_error(result, "unknown policy 'nope'")
    assert not (tmp_path / "run").exists()


def test_unknown_bridge_is_a_clean_error(runner, tmp_path):
    result = invoke(runner, "no_such_bridge", "--policy", "random", "--out", tmp_path / "run")
    assert_clean_error(result, "no bridge named 'no_such_bridge'")


@pytest.mark.skipif(
    importlib.util.find_spec("langchain_openai") is not None,
    reason="langchain-openai is installed, so the provider is not missing",
)
def test_missing_model_provider_is_a_clean_error(runner, tmp_path):
    result = invoke(runner, "toy24", "--policy", "openai:gpt-4o-mini", "--out", tmp_path / "run")
    assert_clean_error(result, "langchain-openai")


def test_no_bridge_and_no_harness_is_a_usage_error(runner, tmp_path):
    result = invoke(runner, "--policy", "random", "--out", tmp_path / "run")
    assert result.exit_code == 2 and "give a bridge NAME or --harness" in result.output


@pytest.mark.parametrize("out", ["/dev/null/x", "/proc/envharness-run"])
def test_an_out_directory_that_cannot_be_created_is_one_line(runner, out):
    result = invoke(runner, "toy24", "-n", 1, "-k", 1, "-w", 1, "--out", out)
    assert result.exit_code == 2, result.output
    assert "cannot create the run directory" in result.stderr and "--out" in result.stderr
    assert "Traceback" not in result.output


def test_task_id_as_a_bridge_option_points_to_the_task_options(runner, tmp_path):
    result = invoke(runner, "toy24", "-k", 1, "-O", "task_id=4-4-10-10", "--out", tmp_path)
    assert result.exit_code == 2
    assert "--tasks" in result.output and "not a bridge option" in result.output


def test_a_binary_harness_file_is_one_line(runner, tmp_path):
    path = tmp_path / "harness.json"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    result = invoke(runner, "--harness", path, "-k", 1, "--out", tmp_path / "run")
    assert result.exit_code == 2 and "is not a text file" in result.stderr


# -- --skills BANK [--top-k K] ---------------------------------------------------------------


def _toy_bank(path):
    from envharness.skills.records import Provenance, Skill

    origin = Provenance("toy24", "4-4-10-10", "spec0", False, True)
    skills = [
        Skill(
            "Multiply toward 24",
            "two numbers multiply to 24",
            "Look for a product of 24 first.",
            ("combine the two factors with *",),
            "strategy",
            origin,
            ("toy24", "numbers"),
        ),
        Skill(
            "Heat with the microwave",
            "the task asks to heat something",
            "Heating is done with the microwave.",
            ("go to microwave 1 and heat it",),
            "strategy",
            origin,
        ),
    ]
    path.write_text("".join(json.dumps(s.to_dict()) + "\n" for s in skills))
    return path


@pytest.fixture
def fake_chat(monkeypatch):
    """Chat models built by ``init_chat_model`` are scripted fakes that always call undo()."""
    chat_models = pytest.importorskip("langchain.chat_models")
    from envharness.testing import FakeToolCallingModel

    built = []

    def init_chat_model(model, **kwargs):
        fake = FakeToolCallingModel(responses=[{"tool": "undo", "args": {}}] * 20, model_name=model)
        built.append(fake)
        return fake

    monkeypatch.setattr(chat_models, "init_chat_model", init_chat_model)
    return built


needs_skill_model = pytest.mark.skipif(
    importlib.util.find_spec("langchain_openai") is None
    or importlib.util.find_spec("bm25s") is None,
    reason="needs langchain-openai (for the 'openai:' policy string) and bm25s",
)


@needs_skill_model
def test_skills_are_shown_to_a_chat_model_and_recorded(runner, tmp_path, fake_chat):
    bank = _toy_bank(tmp_path / "skills.jsonl")
    run_dir = tmp_path / "run"
    args = ["toy24", "-n", 2, "-k", 1, "-p", "openai:fake", "-w", 1, "--max-steps", 1]
    result = invoke(runner, *args, "--skills", bank, "--top-k", 1, "--out", run_dir)
    assert result.exit_code == 0, result.output
    assert f"skills: the top 1 of 2 skill(s) in {bank} per episode" in result.stderr
    (model,) = fake_chat
    assert len(model.calls) == 2
    system = model.calls[0][0].content
    assert "Useful skills:\n- Multiply toward 24 (strategy)" in system
    assert "microwave" not in system
    records = [json.loads(line) for line in lines_of(run_dir)]
    assert [[s["title"] for s in r["skills"]] for r in records] == [["Multiply toward 24"]] * 2
    (label,) = {r["policy"] for r in records}
    assert label.startswith("openai:fake+skills:bm25@") and label.endswith(":k1")
    assert f"with {label}" in result.stderr
    # the same bank resumes; the run without skills is another policy, stored apart
    again = invoke(runner, *args, "--skills", bank, "--top-k", 1, "--out", run_dir)
    assert "2 already in" in again.stderr and "0 new" in again.stderr
    plain = invoke(runner, *args, "--out", run_dir)
    assert plain.exit_code == 0, plain.output
    assert "2 new rollout(s)" in plain.stderr
    assert [json.loads(line).get("skills") for line in lines_of(run_dir)][2:] == [[], []]


def test_offline_policies_ignore_skills_and_say_so(runner, tmp_path):
    bank = _toy_bank(tmp_path / "skills.jsonl")
    run_dir = tmp_path / "run"
    args = ["toy24", "-n", 1, "-k", 1, "-p", "oracle", "-w", 1, "--out", run_dir]
    result = invoke(runner, *args, "--skills", bank)
    assert result.exit_code == 0, result.output
    assert "oracle:1 ignores skills" in result.stderr
    assert "offline policies (oracle, random, scripted) do not read prompts" in result.stderr
    assert "the 2 skill(s) in" in result.stderr
    (record,) = [json.loads(line) for line in lines_of(run_dir)]
    assert record["policy"] == "oracle:1" and "skills" not in record


def test_a_bank_that_is_not_a_bank_is_a_clean_error(runner, tmp_path):
    trajectories = tmp_path / "t.jsonl"
    trajectories.write_text('{"task_id": "t", "steps": []}\n')
    for policy in ("oracle", "random"):
        result = invoke(runner, "toy24", "-p", policy, "--skills", trajectories, "--out", tmp_path)
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("error: ") and "not a skill bank" in result.stderr
        assert "Traceback" not in result.output
    result = invoke(runner, "toy24", "--skills", tmp_path / "none.jsonl", "--out", tmp_path)
    assert result.exit_code == 2 and "no skill bank at" in result.stderr


@needs_skill_model
def test_a_bad_bank_fails_before_a_chat_model_plays(runner, tmp_path, fake_chat):
    text = tmp_path / "notes.txt"
    text.write_text("heat the egg first\n")
    result = invoke(runner, "toy24", "-p", "openai:fake", "--skills", text, "--out", tmp_path)
    assert result.exit_code == 2 and "not a skill bank" in result.stderr
    assert fake_chat == [] and not (tmp_path / "trajectories.jsonl").exists()


def test_bad_top_k_is_a_usage_error(runner, tmp_path):
    bank = _toy_bank(tmp_path / "skills.jsonl")
    result = invoke(runner, "toy24", "--skills", bank, "--top-k", 0, "--out", tmp_path / "run")
    assert result.exit_code == 2 and "--top-k" in result.output
    result = invoke(runner, "toy24", "--top-k", 2, "--out", tmp_path / "run")
    assert result.exit_code == 2 and "--top-k needs --skills BANK" in result.output
    assert not (tmp_path / "run").exists()
