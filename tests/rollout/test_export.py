"""``export_run``: a run's trajectories as OpenAI chat records, in JSONL and Parquet."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from envharness import DependencyNotInstalled, Evaluation, TrajectoryError, load_bridge
from envharness.errors import SpecError
from envharness.harness import Rules
from envharness.harness.spec import BridgeSpec, HarnessSpec, Lineage
from envharness.rollout import (
    LocalExecutor,
    OraclePolicyFactory,
    RunStore,
    Step,
    Trajectory,
    rollout,
    run_rollouts,
)
from envharness.rollout.export import (
    PARQUET_COLUMNS,
    chat_messages,
    chat_record,
    default_output,
    export_run,
    find_run,
    system_prompt,
)

SOLVABLE, HARD = "4-4-10-10", "1-1-1-8"
NO_UNDO = """
class _Rules:
    def filter_action(self, action, state):
        if action["tool"] == "undo":
            return "Undo is disabled in this room."
        return action
"""
LINEAGE = Lineage(
    task=HARD,
    policy="oracle:0.5",
    parent="parentspec000000",
    validation={"objective": "sr:0.4-0.6", "candidate": {"n": 4, "successes": 2}},
)


def bare(task: str) -> HarnessSpec:
    return HarnessSpec(BridgeSpec("toy24", task))


def ruled(task: str) -> HarnessSpec:
    return HarnessSpec.from_env(Rules(load_bridge("toy24", task_id=task), NO_UNDO))


@pytest.fixture(scope="module")
def rig_run(tmp_path_factory) -> Path:
    """A rig-like run: trajectories of two bare specs and one accepted (ruled) spec."""
    run = tmp_path_factory.mktemp("export") / "rig"
    with RunStore(run / "trajectories") as store:
        for spec in (bare(SOLVABLE), bare(HARD), ruled(HARD)):
            run_rollouts(spec, OraclePolicyFactory(0.5), 4, executor=LocalExecutor(1), store=store)
    accepted = ruled(HARD).with_lineage(LINEAGE)
    (run / "accepted").mkdir()
    (run / "accepted" / f"{HARD}.json").write_text(accepted.to_json())
    (run / "rig.json").write_text(json.dumps({"bridge": "toy24", "policy": "oracle:0.5"}))
    return run


@pytest.fixture(scope="module")
def trajectories(rig_run) -> list[Trajectory]:
    with RunStore(rig_run / "trajectories", readonly=True) as store:
        found = store.trajectories()
    assert {t.success for t in found} == {True, False}  # the filters below need both
    assert any(s.blocked for t in found for s in t.steps)  # and a blocked action
    return found


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def check_record(record: dict, trajectory: Trajectory) -> None:
    messages = record["messages"]
    assert [m["role"] for m in messages[:2]] == ["system", "user"]
    assistants = [m for m in messages if m["role"] == "assistant"]
    assert len(assistants) == trajectory.n_steps
    assert len(messages) == 2 + 2 * trajectory.n_steps
    for position, step in enumerate(trajectory.steps):
        call, answer = messages[2 + 2 * position], messages[3 + 2 * position]
        (tool_call,) = call["tool_calls"]
        assert tool_call["type"] == "function"
        assert tool_call["function"]["name"] == step.action["tool"]
        assert json.loads(tool_call["function"]["arguments"]) == step.action["args"]
        assert answer["role"] == "tool" and answer["tool_call_id"] == tool_call["id"]
        assert answer["content"].endswith(step.observation)
    ids = [c["id"] for m in assistants for c in m["tool_calls"]]
    assert len(set(ids)) == len(ids)
    meta = record["metadata"]
    assert meta["reward"] == trajectory.evaluation.score
    assert meta["score"] == trajectory.evaluation.score
    assert meta["success"] is trajectory.evaluation.success
    assert meta["steps"] == trajectory.n_steps
    assert (meta["task_id"], meta["spec_id"], meta["seed"], meta["policy"]) == (
        trajectory.task_id,
        trajectory.spec_id,
        trajectory.seed,
        trajectory.policy,
    )
    assert meta["bridge"] == "toy24"
    assert meta["task_fingerprint"] == trajectory.spec["bridge"].get("fingerprint")
    tools = load_bridge("toy24", task_id=trajectory.task_id).tools()
    assert record["tools"] == [tool.to_openai() for tool in tools]


def test_chat_jsonl_round_trip(rig_run, trajectories, tmp_path):
    result = export_run(rig_run, tmp_path / "out.jsonl")
    assert (result.format, result.records, result.total) == ("chat-jsonl", 12, 12)
    assert result.successes == sum(t.success for t in trajectories)
    records = read_jsonl(result.path)
    assert len(records) == len(trajectories)
    for record, trajectory in zip(records, trajectories, strict=True):
        check_record(record, trajectory)


def test_parquet_round_trip_with_pandas(rig_run, trajectories, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    jsonl = read_jsonl(export_run(rig_run, tmp_path / "out.jsonl").path)
    result = export_run(rig_run, tmp_path / "out.parquet", format="parquet")
    frame = pd.read_parquet(result.path)
    assert tuple(frame.columns) == PARQUET_COLUMNS
    assert len(frame) == len(trajectories) == result.records
    for row, record, trajectory in zip(frame.to_dict("records"), jsonl, trajectories, strict=True):
        back = {column: json.loads(row[column]) for column in ("messages", "tools", "metadata")}
        assert back == record
        check_record(back, trajectory)
        assert row["reward"] == trajectory.evaluation.score
        assert bool(row["success"]) is trajectory.success
        assert (row["task_id"], row["spec_id"], int(row["seed"]), int(row["steps"])) == (
            trajectory.task_id,
            trajectory.spec_id,
            trajectory.seed,
            trajectory.n_steps,
        )


def test_parquet_loads_with_datasets(rig_run, trajectories, tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = export_run(rig_run, tmp_path / "out.parquet", format="parquet").path
    data = datasets.load_dataset(
        "parquet", data_files=str(path), split="train", cache_dir=str(tmp_path / "cache")
    )
    assert data.num_rows == len(trajectories)
    assert data.features["messages"].dtype == "string"
    assert data.features["reward"].dtype == "float64"
    for row, trajectory in zip(data, trajectories, strict=True):
        record = {column: json.loads(row[column]) for column in ("messages", "tools", "metadata")}
        check_record(record, trajectory)


def test_lineage_only_for_accepted_specs(rig_run, trajectories, tmp_path):
    records = read_jsonl(export_run(rig_run, tmp_path / "out.jsonl").path)
    accepted_id = ruled(HARD).spec_id
    for record in records:
        meta = record["metadata"]
        if meta["spec_id"] == accepted_id:
            assert meta["accepted"] is True
            assert meta["lineage"] == LINEAGE.to_dict()
            assert meta["components"] == ["rules"]
        else:
            assert meta["accepted"] is False and meta["lineage"] is None
            assert meta["components"] == []
    assert sum(r["metadata"]["accepted"] for r in records) == 4


def test_blocked_actions_keep_their_feedback(rig_run, trajectories, tmp_path):
    records = read_jsonl(export_run(rig_run, tmp_path / "out.jsonl").path)
    blocked = 0
    for record, trajectory in zip(records, trajectories, strict=True):
        for position, step in enumerate(trajectory.steps):
            if step.blocked:
                answer = record["messages"][3 + 2 * position]
                assert answer["role"] == "tool"
                assert "Undo is disabled in this room." in answer["content"]
                blocked += 1
        assert record["metadata"]["blocked_steps"] == trajectory.n_blocked
    assert blocked > 0


def test_filters(rig_run, trajectories, tmp_path):
    out = tmp_path / "out.jsonl"

    def exported(**filters) -> list[tuple[str, str, int]]:
        records = read_jsonl(export_run(rig_run, out, **filters).path)
        return [
            (r["metadata"]["task_id"], r["metadata"]["spec_id"], r["metadata"]["seed"])
            for r in records
        ]

    def expected(keep) -> list[tuple[str, str, int]]:
        return [(t.task_id, t.spec_id, t.seed) for t in trajectories if keep(t)]

    assert exported(success_only=True) == expected(lambda t: t.success)
    assert exported(tasks=[SOLVABLE]) == expected(lambda t: t.task_id == SOLVABLE)
    assert exported(tasks=[SOLVABLE, HARD]) == expected(lambda t: True)
    spec_id = ruled(HARD).spec_id
    assert exported(specs=[spec_id]) == expected(lambda t: t.spec_id == spec_id)
    both = exported(specs=[spec_id, bare(SOLVABLE).spec_id], success_only=True)
    assert both == expected(lambda t: t.success and t.spec_id != bare(HARD).spec_id)


def test_unknown_filter_values_and_empty_selection(rig_run, trajectories, tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text("kept\n")
    with pytest.raises(TrajectoryError, match=r"--task: no trajectory .* task '9-9-9-9'"):
        export_run(rig_run, out, tasks=[SOLVABLE, "9-9-9-9"])
    with pytest.raises(TrajectoryError, match=r"--spec: .* 'nosuchspec'; the run has: "):
        export_run(rig_run, out, specs=["nosuchspec"])
    failing = [t for t in trajectories if t.task_id == HARD and not t.success]
    assert failing
    if all(not t.success for t in trajectories if t.spec_id == bare(HARD).spec_id):
        with pytest.raises(TrajectoryError, match="passes the filters .* none succeeded"):
            export_run(rig_run, out, specs=[bare(HARD).spec_id], success_only=True)
    assert out.read_text() == "kept\n"  # a failed export leaves an existing file alone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]  # no temporary left


def test_default_output_is_beside_the_run(rig_run, tmp_path):
    assert default_output(rig_run, "chat-jsonl") == rig_run.with_name("rig.chat.jsonl")
    assert default_output(rig_run / "trajectories", "parquet").name == "trajectories.parquet"
    result = export_run(rig_run / "trajectories")  # a rig run's trajectories/ finds the rig
    assert result.path == rig_run.with_name("rig.chat.jsonl")
    assert find_run(rig_run / "trajectories").accepted == rig_run / "accepted"
    assert sum(r["metadata"]["accepted"] for r in read_jsonl(result.path)) == 4
    result.path.unlink()


def test_a_rollout_run_directory(tmp_path):
    run = tmp_path / "runs" / "toy24"
    with RunStore(run) as store:
        batch = run_rollouts(
            bare(SOLVABLE), OraclePolicyFactory(1.0), 2, executor=LocalExecutor(1), store=store
        )
    layout = find_run(run)
    assert (layout.root, layout.store, layout.accepted) == (run, run, None)
    result = export_run(run)
    assert result.path == tmp_path / "runs" / "toy24.chat.jsonl"
    for record, trajectory in zip(read_jsonl(result.path), batch, strict=True):
        check_record(record, trajectory)
        assert record["metadata"]["success"] is True


def test_bad_inputs(tmp_path, rig_run):
    with pytest.raises(TrajectoryError, match="no run directory at"):
        export_run(tmp_path / "missing")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(TrajectoryError, match="is not a run directory .*a file"):
        export_run(tmp_path / "file.txt")
    (tmp_path / "plain").mkdir()
    with pytest.raises(TrajectoryError, match="holds neither trajectories.jsonl"):
        export_run(tmp_path / "plain")
    RunStore(tmp_path / "empty").close()
    with pytest.raises(TrajectoryError, match="holds no trajectories"):
        export_run(tmp_path / "empty")
    with pytest.raises(TrajectoryError, match="unknown export format 'csv'; choose one of"):
        export_run(rig_run, format="csv")
    with pytest.raises(TrajectoryError, match="cannot write the export .*--out"):
        export_run(rig_run, tmp_path / "file.txt" / "out.jsonl")
    with pytest.raises(TrajectoryError, match="it is a directory"):
        export_run(rig_run, tmp_path / "plain")


def test_a_malformed_accepted_spec_is_named(tmp_path):
    run = tmp_path / "rig"
    with RunStore(run / "trajectories") as store:
        run_rollouts(
            bare(SOLVABLE), OraclePolicyFactory(1.0), 1, executor=LocalExecutor(1), store=store
        )
    (run / "accepted").mkdir()
    (run / "accepted" / "bad.json").write_text("{not json")
    with pytest.raises(SpecError, match=r"bad\.json: not a readable accepted spec"):
        export_run(run, tmp_path / "out.jsonl")


def test_missing_pyarrow_names_the_extra(rig_run, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # what `import pyarrow` sees uninstalled
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(DependencyNotInstalled, match=r"'pyarrow'.*envharness\[export\]"):
        export_run(rig_run, tmp_path / "out.parquet", format="parquet")
    assert not (tmp_path / "out.parquet").exists()


def test_an_unbuildable_spec_is_named(tmp_path):
    run = tmp_path / "run"
    spec = {"envharness_spec": 1, "bridge": {"name": "toy24", "task_id": "0-0-0-0"}}
    with RunStore(run) as store:
        store.add(
            Trajectory(
                "0-0-0-0", "toy24", "gone", spec, 0, "oracle", evaluation=Evaluation(False, 0.0)
            )
        )
    with pytest.raises(TrajectoryError, match="cannot rebuild the env of spec 'gone'.*tools"):
        export_run(run, tmp_path / "out.jsonl")


def test_steps_without_an_action_and_errors():
    trajectory = Trajectory(
        SOLVABLE,
        "toy24",
        "s",
        {},
        0,
        "p",
        instruction="Make 24.",
        first_observation="Numbers left: 4 4 10 10",
        steps=[
            Step(0, None, "Error: your reply called no tool. Nothing changed.", invalid="no call"),
            Step(1, {"tool": "undo", "args": {}}, "", error="RulesError: hook failed"),
        ],
        evaluation=Evaluation(False, 0.0),
        end_reason="env_error",
        max_steps=5,
    )
    messages = chat_messages(trajectory)
    assert messages[1]["content"] == "Make 24.\n\nStep 1/5\nNumbers left: 4 4 10 10"
    assert messages[2] == {"role": "assistant", "content": ""}
    assert messages[3] == {
        "role": "user",
        "content": "Step 2/5\nError: your reply called no tool. Nothing changed.",
    }
    assert messages[4]["tool_calls"][0]["id"] == messages[5]["tool_call_id"] == "call_1"
    assert messages[5]["content"] == "Error: RulesError: hook failed. The episode ended."
    record = chat_record(trajectory, [], lineage=None)
    assert record["tools"] == [] and record["metadata"]["invalid_steps"] == 1


def test_no_evaluation_gives_no_reward():
    trajectory = Trajectory(SOLVABLE, "toy24", "s", {}, 0, "p", end_reason="env_error")
    meta = chat_record(trajectory, [])["metadata"]
    assert (meta["reward"], meta["score"], meta["success"]) == (None, None, False)


def test_system_prompt_skills_and_role():
    text = system_prompt(7, [{"text": "Multiply the two tens first."}], role="You play 24.")
    assert text.startswith("You play 24.\n\nAct by calling exactly one of your tools")
    assert "You have 7 steps." in text
    assert text.endswith("Useful skills:\n- Multiply the two tens first.")
    assert 'Each observation starts with "Step k":' in system_prompt(None)
    with pytest.raises(TrajectoryError, match="recorded skill is malformed"):
        system_prompt(3, [{"title": "half a skill"}])


def test_messages_match_what_the_chat_policy_sent():
    """The export is the conversation a ChatModelPolicy holds (its model's texts aside)."""
    pytest.importorskip("langchain_core")
    from envharness.rollout.chat import ChatModelPolicy
    from envharness.testing import FakeToolCallingModel

    replies = [
        {"tool": "combine", "args": {"a": "10", "op": "*", "b": "10"}},
        "I will think about it.",  # no tool call: an invalid step without an action
        {"tool": "undo", "args": {}},
        {"tool": "combine", "args": {"a": "10", "op": "*", "b": "10"}},
        {"tool": "combine", "args": {"a": "100", "op": "-", "b": "4"}},
        {"tool": "combine", "args": {"a": "96", "op": "/", "b": "4"}},
    ]
    model = FakeToolCallingModel(responses=replies)
    policy = ChatModelPolicy(model, skills=["Try the big numbers first."], history_turns=None)
    env = Rules(load_bridge("toy24", task_id=SOLVABLE), NO_UNDO)
    trajectory = rollout(env, policy, max_steps=10)
    exported = chat_messages(trajectory)
    sent = policy.messages  # every message of the episode, the final observation aside
    assert len(exported) == len(sent) + 1
    assert exported[0]["content"] == sent[0].content
    for mine, theirs in zip(exported[1:], sent[1:], strict=False):
        if theirs.type == "ai":
            assert mine["role"] == "assistant"
            calls = [(c["name"], c["args"]) for c in theirs.tool_calls]
            ours = [
                (c["function"]["name"], json.loads(c["function"]["arguments"]))
                for c in mine.get("tool_calls", [])
            ]
            assert ours == calls
        else:
            assert mine["role"] == {"human": "user", "tool": "tool"}[theirs.type]
            assert mine["content"] == theirs.content
    assert exported[-1]["content"] == trajectory.steps[-1].observation  # no Step heading
    assert trajectory.success and trajectory.n_blocked == 1 and trajectory.n_invalid == 2


def test_the_last_observation_is_headed_when_the_policy_saw_it():
    """A policy that fails on its next act() saw the last observation, heading and all."""
    pytest.importorskip("langchain_core")
    from envharness.rollout.chat import ChatModelPolicy
    from envharness.testing import FakeToolCallingModel

    model = FakeToolCallingModel(responses=[{"tool": "undo", "args": {}}])  # then runs out
    policy = ChatModelPolicy(model, history_turns=None)
    trajectory = rollout(load_bridge("toy24", task_id=SOLVABLE), policy, max_steps=4)
    assert trajectory.end_reason == "policy_error"
    exported = chat_messages(trajectory)
    assert [m["content"] for m in exported[1::2]] == [m.content for m in policy.messages[1::2]]
    assert exported[-1]["content"].startswith("Step 2/4\n")
