"""The SWE bridge: tasks, tools, the hidden-test verifier, both runtimes, harnesses and a rig."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

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
from envharness.bridges.swe import SweEnv, docker_unavailable, load_task, task_ids
from envharness.bridges.swe import docker_runtime as docker_module
from envharness.bridges.swe.docker_runtime import LABEL
from envharness.bridges.swe.image import docker_client
from envharness.bridges.swe.oracle import stage_candidates
from envharness.harness import Rules, Setups
from envharness.rollout import OraclePolicy, RandomPolicy, rollout
from envharness.testing import check_bridge

TASK = "intervals-touching"  # merge() keeps touching intervals apart; a one-character fix
FIX = Action(
    "edit_file",
    {
        "path": "intervals/merge.py",
        "old": "start < merged[-1][1]",
        "new": "start <= merged[-1][1]",
    },
)
ALL_TASKS = task_ids("all")


def bash(command: str) -> Action:
    return Action("bash", {"command": command})


def edit(path: str, old: str, new: str) -> Action:
    return Action("edit_file", {"path": path, "old": old, "new": new})


@pytest.fixture(scope="module")
def docker_reason(docker_engine) -> str | None:
    return docker_engine  # conftest: starts an engine and builds the image where it can


@pytest.fixture(params=["local", "docker"])
def kind(request, docker_reason) -> str:
    if request.param == "docker" and docker_reason is not None:
        pytest.skip(f"the Docker runtime is unavailable here: {docker_reason}")
    return request.param


@pytest.fixture
def make(kind):
    made: list[SweEnv] = []

    def build(task_id: str = TASK, **options) -> SweEnv:
        env = load_bridge("swe", task_id=task_id, runtime=kind, **options)
        made.append(env)
        return env

    yield build
    for env in made:
        env.close()


@pytest.fixture
def local():
    made: list[SweEnv] = []

    def build(task_id: str = TASK, **options) -> SweEnv:
        env = load_bridge("swe", task_id=task_id, runtime="local", **options)
        made.append(env)
        return env

    yield build
    for env in made:
        env.close()


def our_containers() -> set[str]:
    client = docker_client()
    try:
        return {c.id for c in client.containers.list(all=True, filters={"label": f"{LABEL}=swe"})}
    finally:
        client.close()


# -- tasks, splits and options ------------------------------------------------------------------


def test_splits():
    train, test = SweEnv.list_tasks("train"), SweEnv.list_tasks("test")
    assert len(train) == 7 and len(test) == 3 and not set(train) & set(test)
    assert SweEnv.list_tasks("all") == sorted(train + test) == ALL_TASKS
    assert SweEnv.list_tasks("train", runtime="local") == train
    with pytest.raises(UnknownTaskError, match="valid splits: train, test, all"):
        SweEnv.list_tasks("dev")
    with pytest.raises(BridgeError, match="unknown option"):
        SweEnv.list_tasks("train", size=3)


def test_unknown_task_names_the_valid_ones():
    with pytest.raises(UnknownTaskError, match="no task 'nope'; valid tasks: csv-quote-newlines"):
        load_bridge("swe", task_id="nope", runtime="local")
    with pytest.raises(UnknownTaskError, match="valid tasks"):
        SweEnv(42, runtime="local")


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"runtime": "podman"}, "runtime: expected 'docker' or 'local'"),
        ({"max_steps": 0}, "max_steps: expected a positive int"),
        ({"timeout": 0}, r"timeout: expected seconds in \(0, 600\]"),
        ({"timeout": "60"}, "timeout: expected seconds"),
        ({"image": ""}, "image: expected an image tag"),
    ],
)
def test_bad_options(options, problem):
    with pytest.raises(BridgeError, match=problem):
        SweEnv(TASK, **{"runtime": "local", **options})


def test_default_runtime(monkeypatch):
    monkeypatch.setenv("ENVHARNESS_SWE_RUNTIME", "local")
    env = SweEnv(TASK)
    assert env.runtime_kind == "local" and env.bridge_options() == {"runtime": "local"}
    assert SweEnv(TASK, max_steps=9, timeout=5).bridge_options() == {
        "runtime": "local",
        "max_steps": 9,
        "timeout": 5.0,
    }


def test_missing_docker_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "docker", None)  # `import docker` now fails
    with pytest.raises(DependencyNotInstalled, match=r"envharness\[docker\]"):
        load_bridge("swe", task_id=TASK, runtime="docker")
    assert "envharness[docker]" in docker_unavailable()
    SweEnv(TASK, runtime="local")  # the local runtime does not need it


def test_public_names():
    import envharness.bridges.swe as swe

    for name in swe.__all__:
        assert getattr(swe, name) is not None, name
    assert swe.SweEnv is SweEnv and set(swe.__all__) <= set(dir(swe))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        swe.nope  # noqa: B018


def test_importing_the_bridge_does_not_import_docker():
    code = (
        "import sys\n"
        "from envharness.bridges import get_bridge\n"
        "cls = get_bridge('swe')\n"
        "cls.list_tasks('test')\n"
        "cls('lru-put-refresh', runtime='local')\n"
        "assert 'docker' not in sys.modules, 'docker was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_task_data():
    for task_id in ALL_TASKS:
        task = load_task(task_id)
        assert f"{task.package}/__init__.py" in task.files and "pyproject.toml" in task.files
        assert not set(task.hidden_files) & set(task.files)  # the agent never sees them
        hidden = {test.split("::")[0] for test in task.fail_to_pass}
        assert hidden <= set(task.hidden_files), task_id
        assert all(not task.protected(hunk.path) for hunk in task.gold)
        assert all(name not in task.problem_statement for name in task.hidden_files)


@pytest.mark.parametrize("task_id", ALL_TASKS)
def test_every_task_has_a_real_bug_and_its_gold_fix_passes(local, task_id):
    env = local(task_id)
    env.reset()
    before = env.evaluate()
    assert not before.success
    assert before.details["fail_to_pass"]["passed"] == 0  # every FAIL_TO_PASS test fails...
    assert before.details["pass_to_pass"]["failed"] == []  # ...and no PASS_TO_PASS test does
    plan = env.oracle_actions()
    assert [a.tool for a in plan[:-1]] == ["edit_file"] * (len(plan) - 1) and len(plan) >= 2
    for action in plan:
        result = env.step(action)
        assert "invalid_action" not in result.info, result.observation
    assert result.terminated and result.reward == 1.0
    after = env.evaluate()
    assert after.success and after.score == 1.0
    assert after.details["fail_to_pass"]["failed"] == after.details["pass_to_pass"]["failed"] == []


# -- the contract, in both runtimes ---------------------------------------------------------------


def test_check_bridge(make):
    report = check_bridge(make())
    assert report.bridge == "swe"
    assert [a.tool for a in report.actions] == ["edit_file", "submit"]


def test_reset_and_state(make):
    env = make()
    with pytest.raises(EpisodeError, match="call reset"):
        env.step(bash("ls"))
    with pytest.raises(EpisodeError, match="call reset"):
        env.observe()
    observation, info = env.reset(seed=7)
    assert "intervals/merge.py" in observation and "touch at an end point" in observation
    assert info["files"] == sorted(env.task.files) and info["runtime"] == env.runtime_kind
    state = env.get_env_state()
    assert set(state) == set(env.env_state_schema()["properties"])
    assert state["changed_files"] == [] and state["diff"] == "" and state["steps"] == 0
    assert (
        "tests/test_merge.py" in state["files"] and "tests/test_touching.py" not in state["files"]
    )
    assert [t.name for t in env.tools()] == [
        "bash",
        "read_file",
        "edit_file",
        "run_tests",
        "submit",
    ]
    assert ("no network" in env.tools()[0].description) == (env.runtime_kind == "docker")
    with pytest.raises(InvalidActionError, match="unknown tool"):
        env.step(Action("write_file", {"path": "x"}))
    with pytest.raises(InvalidActionError):
        env.step(Action("edit_file", {"path": "x"}))


def test_tools(make):
    env = make()
    env.reset()
    result = env.step(
        bash("python3 -c 'from intervals import merge; print(merge([(1, 3), (3, 5)]))'")
    )
    assert result.observation == "[(1, 3), (3, 5)]\n[exit code 0]" and result.info["exit_code"] == 0
    assert env.step(bash("ls nothing-here")).info["exit_code"] != 0
    assert "invalid_action" in env.step(bash("   ")).info
    source = env.step(Action("read_file", {"path": "intervals/merge.py"})).observation
    assert source == env.task.files["intervals/merge.py"].decode()
    for args, problem in [
        ({"path": "nope.py"}, "no file 'nope.py'"),
        ({"path": "intervals"}, "is a folder"),
        ({"path": "../etc/passwd"}, "not a file inside the repository"),
    ]:
        result = env.step(Action("read_file", args))
        assert problem in result.info["invalid_action"] and result.observation.startswith("Error")
    for old, problem in [
        ("no such text", "was not found"),
        ("merged", "occurs 12 times"),
        ("", "`old` is empty"),
    ]:
        result = env.step(edit("intervals/merge.py", old, "x"))
        assert problem in result.info["invalid_action"], result.observation
    assert env.get_env_state()["changed_files"] == []
    result = env.step(FIX)
    assert result.observation.startswith("Edited intervals/merge.py. Lines 23-23 now read:")
    assert "   23          if merged and start <= merged[-1][1]:" in result.observation
    state = env.get_env_state()
    assert state["changed_files"] == ["intervals/merge.py"]
    assert "-        if merged and start < merged[-1][1]:" in state["diff"]
    result = env.step(Action("run_tests", {"target": "tests/test_merge.py::test_gaps"}))
    assert result.info["tests"] == "1 passed" and result.observation.endswith("[exit code 0]")
    assert " in 0." not in result.observation  # run times are stripped
    assert "invalid_action" in env.step(Action("run_tests", {"target": "--co"})).info
    assert "invalid_action" in env.step(Action("run_tests", {"target": "/tmp/x.py"})).info
    result = env.step(Action("run_tests", {}))
    assert result.info["tests"] == "10 passed"
    state = env.get_env_state()
    assert state["test_runs"] == 2 and state["last_tests"] == "10 passed"
    assert state["steps"] == 15 and state["last_tool"] == "run_tests"


def test_command_timeout(make):
    env = make(timeout=1)
    env.reset()
    result = env.step(bash("echo begun; sleep 20"))
    assert result.info["timed_out"] is True
    assert result.observation == "begun\n[timed out after 1 s; the command was stopped]"
    assert env.step(bash("echo still fine")).observation == "still fine\n[exit code 0]"


def test_submit_ends_the_episode(make):
    env = make()
    env.reset()
    env.step(bash("echo '# more tests soon' >> tests/test_merge.py"))
    result = env.step(Action("submit", {}))
    assert result.terminated and result.reward == 0.0 and result.info == {"success": False}
    assert result.observation.startswith("Submitted. Some hidden tests fail. Tests for the issue:")
    assert env.get_env_state()["submitted"] and env.oracle_actions() == []
    with pytest.raises(EpisodeError, match="submitted"):
        env.step(bash("ls"))
    details = env.evaluate().details
    assert details["changed_files"] == [] and details["ignored_changes"] == ["tests/test_merge.py"]
    assert details["fail_to_pass"]["passed"] == 0
    assert (
        "tests/test_touching.py::test_touching_intervals_merge" in details["fail_to_pass"]["failed"]
    )
    env.reset()
    assert not env.get_env_state()["submitted"] and env.get_env_state()["changed_files"] == []


def test_save_and_restore(make):
    env = make()
    env.reset()
    env.step(FIX)
    env.step(bash("printf 'binary\\377' > tests/blob.bin && rm README.md"))
    saved = json.loads(json.dumps(env.save_state()))
    assert saved["changes"]["README.md"] is None and "base64" in saved["changes"]["tests/blob.bin"]
    clone = SweEnv.from_state(saved)
    try:
        assert clone.get_env_state() == env.get_env_state()
        assert clone.observe() == env.observe()
        for action in (Action("read_file", {"path": "tests/blob.bin"}), bash("ls")):
            assert clone.step(action) == env.step(action)
        assert clone.get_env_state() == env.get_env_state()
    finally:
        clone.close()
    fresh = SweEnv.from_state(make().save_state())
    with pytest.raises(EpisodeError):
        fresh.observe()
    with pytest.raises(BridgeError, match="missing key"):
        SweEnv.from_state({"bridge": "swe"})
    with pytest.raises(BridgeError, match="'bridge' is 'toy24'"):
        SweEnv.from_state({**saved, "bridge": "toy24"})
    with pytest.raises(BridgeError, match="'steps' must be a non-negative int"):
        SweEnv.from_state({**saved, "steps": -1})
    with pytest.raises(BridgeError, match="a file in 'changes' must be"):
        SweEnv.from_state({**saved, "changes": {"a.py": 3}})
    with pytest.raises(BridgeError, match="'options' must be a dict"):
        SweEnv.from_state({**saved, "options": {"colour": "red"}})


# -- the verifier ---------------------------------------------------------------------------------


def test_verifier_ignores_changes_to_tests(make):
    env = make()
    env.reset()
    hostile = [
        edit(
            "tests/test_merge.py",
            "def test_overlapping():\n",
            "def test_overlapping():\n    1 / 0\n",
        ),
        bash(
            "printf 'import pytest\\n\\n\\n@pytest.hookimpl(tryfirst=True)\\n"
            'def pytest_runtest_call(item):\\n    pytest.skip("all fine")\\n\' > conftest.py'
        ),
        bash("printf 'raise SystemExit(0)\\n' > tests/test_touching.py"),
        bash("printf '[pytest]\\naddopts = -p no:python\\n' > pytest.ini"),
    ]
    for action in hostile:
        assert "invalid_action" not in env.step(action).info
    evaluation = env.evaluate()
    assert not evaluation.success
    assert evaluation.details["ignored_changes"] == [
        "conftest.py",
        "pytest.ini",
        "tests/test_merge.py",
        "tests/test_touching.py",
    ]
    assert evaluation.details["pass_to_pass"]["failed"] == []  # test_merge.py was restored
    env.step(FIX)
    assert env.evaluate().success  # the fix counts; the broken tests do not


def test_verifier_runs_in_a_fresh_docker_container(docker_reason):
    if docker_reason is not None:
        pytest.skip(f"the Docker runtime is unavailable here: {docker_reason}")
    env = SweEnv(TASK, runtime="docker")
    try:
        env.reset()
        env.step(FIX)
        env.step(bash("echo '# fixed the touching case' >> intervals/__init__.py"))
        result = env.step(bash("rm -f /usr/bin/python3* && python3 -c 1"))
        assert result.info["exit_code"] != 0  # the agent's container can no longer run Python
        assert "exit code 0" not in env.step(Action("run_tests", {})).observation
        assert env.evaluate().success  # the hidden tests run in a new container
    finally:
        env.close()


def test_verifier_needs_a_complete_test_run(local):
    env = local()
    env.reset()
    env.step(FIX)
    forged = "".join(f"PASSED {test}\n" for test in env.task.hidden_tests).encode()
    hack = (  # print "PASSED" for every hidden test on any open file, then stop pytest
        "import os\n"
        "for fd in range(1, 30):\n"
        "    try:\n"
        f"        os.write(fd, {forged!r})\n"
        "    except OSError:\n"
        "        pass\n"
        "os._exit(0)\n"
    )
    exports = '__all__ = ["covers", "gaps", "merge", "total_length"]\n'
    env.step(edit("intervals/__init__.py", exports, exports + hack))
    evaluation = env.evaluate()
    assert not evaluation.success and evaluation.details["completed"] is False


# -- workspaces are removed -----------------------------------------------------------------------


def test_close_removes_the_workspace(make, kind):
    env = make()
    env.reset()
    env.step(FIX)
    runtime = env._runtime
    if kind == "docker":
        before = our_containers()
        assert runtime.container_id in before
    else:
        folder = runtime._root
        assert folder.is_dir()
    env.close()
    env.close()
    if kind == "docker":
        assert runtime.container_id not in our_containers()
    else:
        assert not folder.exists()
    assert env.get_env_state()["changed_files"] == ["intervals/merge.py"]  # still readable
    assert env.evaluate().success
    with pytest.raises(EpisodeError, match="closed"):
        env.step(bash("ls"))
    env.reset()  # a new workspace
    assert env.get_env_state()["changed_files"] == []


def test_no_container_leaks(docker_reason, monkeypatch):
    if docker_reason is not None:
        pytest.skip(f"the Docker runtime is unavailable here: {docker_reason}")
    before = our_containers()
    env = SweEnv(TASK, runtime="docker")
    env.reset()
    env.reset()  # the first episode's container goes
    assert len(our_containers() - before) == 1
    del env
    gc.collect()  # never closed: the finalizer removes the container
    assert our_containers() == before

    def broken(files):
        raise OSError("disk on fire")

    monkeypatch.setattr(docker_module, "_tar", broken)
    env = SweEnv(TASK, runtime="docker")
    with pytest.raises(BridgeError, match="disk on fire"):
        env.reset()
    assert our_containers() == before
    with pytest.raises(EpisodeError):
        env.step(bash("ls"))


# -- episodes -------------------------------------------------------------------------------------


def test_oracle_episode_succeeds(make):
    trajectory = rollout(make(), OraclePolicy(1.0, seed=0), seed=0)
    assert trajectory.success and trajectory.end_reason == "terminated"
    assert trajectory.n_steps == 2


def test_random_episode_runs(docker_reason):
    if docker_reason is not None:  # random shell commands belong in a container
        pytest.skip(f"the Docker runtime is unavailable here: {docker_reason}")
    env = SweEnv(TASK, runtime="docker")
    try:
        trajectory = rollout(env, RandomPolicy(seed=3), max_steps=8, seed=0)
    finally:
        env.close()
    assert trajectory.error is None
    assert trajectory.end_reason in ("budget", "terminated")
    assert 1 <= trajectory.n_steps <= 8


# -- harnesses ------------------------------------------------------------------------------------


def test_stage_candidates_apply_on_every_task(local):
    for task_id in ALL_TASKS:
        env = local(task_id)
        named = stage_candidates(env.task)
        assert [name for name, _ in named][:2] == ["stale CI log", "misleading notes"]
        assert env.stage_candidates() == [actions for _, actions in named]
        assert env.stage_candidates() == local(task_id).stage_candidates()  # deterministic
        for stage in env.stage_candidates():
            staged = Setups(env, stage)
            staged.reset()  # raises SetupError if an action is rejected
            assert staged.get_env_state()["changed_files"]


def test_stages_keep_the_task_solvable(local):
    stages = local().stage_candidates()
    assert len(stages) == 3  # the log, the notes, and a renamed helper
    for stage in stages:
        trajectory = rollout(Setups(local(), stage), OraclePolicy(1.0), seed=0)
        assert trajectory.success, trajectory.evaluation
    for task_id in ("inifile-equals-in-value", "wrap-line-width"):  # their renamed helpers
        (name, rename), *_ = [s for s in stage_candidates(load_task(task_id)) if s[0] != "x"][2:]
        assert name == "renamed helper"
        trajectory = rollout(Setups(local(task_id), rename), OraclePolicy(1.0), seed=0)
        assert trajectory.success, trajectory.evaluation


def test_setups_leave_a_distractor(make):
    stage = make().stage_candidates()[0]
    staged = Setups(make(), stage)
    observation, info = staged.reset()
    assert info["setup_steps"] == 2 and "ci-last-run.log" in observation
    log = staged.step(Action("read_file", {"path": "ci-last-run.log"})).observation
    assert log.startswith("$ python3 -m pytest\nFAILED tests/test_merge.py::")
    assert staged.get_env_state()["steps"] == 1  # the two setup steps are not counted


def test_renamed_helper_changes_the_oracle(local):
    env = local()
    rename = env.stage_candidates()[2]
    staged = Setups(env, rename)
    staged.reset()
    assert "_checked_pairs" in staged.step(Action("read_file", {"path": "intervals/merge.py"}))[0]
    plan = staged.oracle_actions()
    assert plan[0].args["old"] == "        if merged and start < merged[-1][1]:\n"  # no context
    assert rollout(staged, OraclePolicy(1.0), close=False).success


NO_TEST_EDITS = """
class _Rules:
    def filter_action(self, action, state):
        path = action["args"].get("path", "")
        if action["tool"] == "edit_file" and path.startswith("tests/"):
            return "Editing tests is not allowed in this variant; fix the library instead."
        return action
"""

TESTS_SUMMARY_ONLY = """
class _Rules:
    def filter_observation(self, observation, state):
        if state["last_tool"] == "run_tests" and state["last_tests"]:
            return "Test summary: " + state["last_tests"]
        return observation
"""


def test_rules_block_test_edits(local):
    env = Rules(local(), NO_TEST_EDITS)
    try:
        env.reset()
        result = env.step(edit("tests/test_merge.py", "def test_gaps", "def test_gaps_x"))
        assert result.info.get("blocked") is True and "not allowed" in result.observation
        assert env.get_env_state()["steps"] == 0  # the env was not stepped
        assert env.step(FIX).info.get("blocked") is None
        assert env.get_env_state()["changed_files"] == ["intervals/merge.py"]
    finally:
        env.close()


def test_rules_shorten_test_output(local):
    env = Rules(local(), TESTS_SUMMARY_ONLY)
    try:
        env.reset()
        assert env.step(Action("run_tests", {})).observation == "Test summary: 10 passed"
        assert env.step(bash("echo hi")).observation == "hi\n[exit code 0]"
        assert rollout(env, OraclePolicy(1.0), close=False).success
    finally:
        env.close()


# -- the rigger -----------------------------------------------------------------------------------


def test_rig_two_tasks(tmp_path, docker_reason):
    pytest.importorskip("langgraph", reason="the rigger needs the 'rigger' extra")
    if docker_reason is not None:  # the policy's random moves are shell commands: keep them boxed
        pytest.skip(f"the Docker runtime is unavailable here: {docker_reason}")
    from envharness.graph.context import RiggerContext
    from envharness.graph.run import rig

    tasks = ["lru-put-refresh", "intervals-touching"]
    context = RiggerContext(
        run_dir=str(tmp_path),
        policy="oracle:0.5",
        objective="auto",
        k_observe=3,
        k_validate=3,
        max_iterations=2,
        siblings=["csv-quote-newlines"],
    )
    results = rig("swe", tasks, context, bridge_options={"runtime": "docker"})
    assert [r.task_id for r in results] == tasks
    assert all(r.status in ("accepted", "rejected", "undecided") for r in results), results
    assert all(r.rollouts >= 3 for r in results)
    assert (tmp_path / "rig.json").exists()
    assert (tmp_path / "trajectories" / "trajectories.jsonl").exists()
    for result in results:
        if result.status == "accepted":
            assert Path(result.accepted).exists()


# -- task fingerprint ---------------------------------------------------------------------------


def test_task_fingerprint_covers_the_snapshot_hidden_tests_and_test_ids(local, monkeypatch):
    import dataclasses

    from envharness.bridges.swe import env as env_module

    env = local()
    fingerprint = env.task_fingerprint()
    assert len(fingerprint) == 64 and int(fingerprint, 16) >= 0
    env.reset()
    env.step(FIX)
    assert env.task_fingerprint() == fingerprint
    assert local(max_steps=3, timeout=5).task_fingerprint() == fingerprint
    assert local(ALL_TASKS[0] if ALL_TASKS[0] != TASK else ALL_TASKS[1]).task_fingerprint() != (
        fingerprint
    )
    task = load_task(TASK)
    hidden = dict(task.hidden_files)
    first = sorted(hidden)[0]
    variants = [
        dataclasses.replace(task, hidden_files={**hidden, first: hidden[first] + b"\n# x\n"}),
        dataclasses.replace(task, pass_to_pass=()),
        dataclasses.replace(task, files={**task.files, "extra.py": b""}),
    ]
    prints = set()
    for variant in variants:
        monkeypatch.setattr(env_module, "load_task", lambda task_id, v=variant: v)
        prints.add(local().task_fingerprint())
    assert fingerprint not in prints and len(prints) == len(variants)
    # what the verifier does not read: the issue text and the stages
    monkeypatch.setattr(
        env_module,
        "load_task",
        lambda task_id: dataclasses.replace(task, problem_statement="Other words.", stages=()),
    )
    assert local().task_fingerprint() == fingerprint


def test_task_fingerprint_does_not_depend_on_the_runtime(local, docker_reason):
    if docker_reason is not None:
        pytest.skip(f"the Docker runtime is unavailable here: {docker_reason}")
    docker = load_bridge("swe", task_id=TASK, runtime="docker")
    try:
        assert docker.task_fingerprint() == local().task_fingerprint()
    finally:
        docker.close()
