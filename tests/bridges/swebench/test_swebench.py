"""Tests of the ``swebench`` bridge on real SWE-bench instances (``../shared/data/swebench``).

The instances whose PyPI sdist reproduces them (``sources.json``) run from the sdist; with
``$ENVHARNESS_SWEBENCH_REPOS`` naming a folder of clones (``owner__name``), every shipped
instance runs from its clone. A small git repository made here covers the ``repos_dir`` path.
Images are built once per machine (the first run takes a few minutes per environment) and
cached; Docker tests skip when the engine or the base image is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

# A submodule, not the bare name: pytest puts tests/bridges on sys.path, where this test folder
# of the same name would import as an empty namespace package if swebench were not installed.
pytest.importorskip("swebench.harness", reason="the swebench extra is not installed")

from envharness import Action, list_tasks, load_bridge  # noqa: E402
from envharness.bridges.swebench import REPOS_ENV, SwebenchEnv  # noqa: E402
from envharness.errors import BridgeError, UnknownTaskError  # noqa: E402
from envharness.testing import check_bridge  # noqa: E402

DATA = Path(__file__).resolve().parents[4] / "shared" / "data" / "swebench"
DATASET = DATA / "instances.jsonl"
needs_data = pytest.mark.skipif(not DATASET.is_file(), reason=f"no SWE-bench data at {DATA}")


def _reproducing() -> list[str]:
    if not DATASET.is_file():
        return []
    sources = json.loads((DATA / "sources.json").read_text())
    return [e["instance_id"] for e in sources["instances"] if e.get("reproduces") is True]


def _all_ids() -> list[str]:
    if not DATASET.is_file():
        return []
    return [json.loads(line)["instance_id"] for line in DATASET.read_text().splitlines()]


REPOS = os.environ.get(REPOS_ENV) or None
INSTANCES = _all_ids() if REPOS else _reproducing()

# A change after the gold patch that keeps FAIL_TO_PASS passing and breaks one PASS_TO_PASS test.
BREAKERS = {
    "pallets__flask-4992": (
        "src/flask/config.py",
        "def _broken(self, *args, **kwargs):\n    raise RuntimeError('broken on purpose')\n\n"
        "Config.from_pyfile = _broken\n",
        "tests/test_config.py::test_config_from_pyfile",
    ),
    "marshmallow-code__marshmallow-1359": (
        "src/marshmallow/fields.py",
        "Field.__repr__ = lambda self: 'broken on purpose'\n",
        "tests/test_fields.py::TestField::test_repr",
    ),
}


@pytest.fixture(scope="module")
def docker_ready(docker_engine: str | None) -> None:
    if docker_engine is not None:
        pytest.skip(f"Docker is not usable here: {docker_engine}")


def _env(instance_id: str, **options: object) -> SwebenchEnv:
    if REPOS:
        options.setdefault("repos_dir", REPOS)
    env = load_bridge("swebench", task_id=instance_id, dataset=str(DATASET), **options)
    assert isinstance(env, SwebenchEnv)
    return env


# -- bad input (no Docker) --------------------------------------------------------------------


@needs_data
def test_list_tasks_lists_the_dataset_file() -> None:
    assert list_tasks("swebench", dataset=str(DATASET)) == _all_ids()
    with pytest.raises(BridgeError, match="dataset=PATH"):
        list_tasks("swebench")


@needs_data
def test_unknown_instance_is_named() -> None:
    with pytest.raises(UnknownTaskError, match="no instance 'nope__nope-1'"):
        load_bridge("swebench", task_id="nope__nope-1", dataset=str(DATASET))


def test_missing_field_is_named(tmp_path: Path) -> None:
    row = {"repo": "a/b", "instance_id": "a__b-1", "base_commit": "0" * 40, "patch": "x"}
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(BridgeError, match=r"line 1: missing field\(s\) \['test_patch', "):
        SwebenchEnv("a__b-1", dataset=path)
    with pytest.raises(BridgeError, match="dataset: give the path"):
        SwebenchEnv("a__b-1")


@needs_data
def test_repos_dir_without_the_clone_is_named(tmp_path: Path) -> None:
    with pytest.raises(BridgeError, match="no clone of pallets/flask.*pallets__flask"):
        SwebenchEnv("pallets__flask-5014", dataset=DATASET, repos_dir=tmp_path)


@needs_data
def test_an_instance_without_a_source_says_how_to_clone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REPOS_ENV, raising=False)
    with pytest.raises(BridgeError, match="git clone https://github.com/pytest-dev/pytest"):
        SwebenchEnv("pytest-dev__pytest-11143", dataset=DATASET)


@needs_data
def test_spec_is_swebench_s_with_our_adaptations() -> None:
    from swebench.harness.constants import MAP_REPO_VERSION_TO_SPECS

    from envharness.bridges.swebench import find_instance, resolve_spec

    specs = json.loads((DATA / "specs.json").read_text())
    spec = resolve_spec(find_instance(DATASET, "sympy__sympy-24213"), specs)
    official = MAP_REPO_VERSION_TO_SPECS["sympy/sympy"]["1.12"]
    assert spec.install == official["install"] and spec.parser_name == "parse_log_sympy"
    assert spec.test_command == (
        "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose "
        "sympy/physics/units/tests/test_quantities.py"
    )
    assert spec.extra_packages == ("mpmath", "flake8")
    assert any("Python" in note for note in spec.adaptations)


# -- the shipped instances, from their sdist (or clones) --------------------------------------


@pytest.fixture(scope="module", params=INSTANCES)
def instance_id(request: pytest.FixtureRequest, docker_ready: None) -> str:
    return request.param


@needs_data
def test_gold_patch_resolves(instance_id: str) -> None:
    env = _env(instance_id)
    try:
        observation, info = env.reset()
        assert env.instance.repo in observation and info["source"] in ("sdist", "clone")
        result = None
        for action in env.oracle_actions():
            result = env.step(action)
        assert result is not None and result.terminated and result.reward == 1.0
        details = env.evaluate().details
        assert details["resolved"] and details["fail_to_pass"]["failed"] == []
        assert details["pass_to_pass"]["failed"] == []
        assert set(details["fail_to_pass"]["outcomes"].values()) <= {"PASSED", "XFAIL"}
        assert details["source"] == ("clone" if REPOS else "sdist")
        assert details["tree_equals_base_commit"] is bool(REPOS)
    finally:
        env.close()


@needs_data
def test_empty_submission_does_not_resolve(instance_id: str) -> None:
    env = _env(instance_id)
    try:
        env.reset()
        result = env.step(Action("submit", {}))
        assert result.terminated and result.reward == 0.0
        details = env.evaluate().details
        assert not details["resolved"] and details["patch"] == ""
        assert details["fail_to_pass"]["passed"] == 0
        assert details["pass_to_pass"]["failed"] == []  # P2P passes before the fix too
    finally:
        env.close()


@needs_data
def test_fixing_f2p_but_breaking_a_p2p_test_does_not_resolve(instance_id: str) -> None:
    if instance_id not in BREAKERS:
        pytest.skip(f"no breaking change written for {instance_id}")
    path, code, broken = BREAKERS[instance_id]
    env = _env(instance_id)
    try:
        env.reset()
        gold, submit = env.oracle_actions()
        env.step(gold)
        env.step(Action("bash", {"command": f"cat >> {path} <<'EOF'\n\n{code}EOF"}))
        evaluation = env.evaluate()
        details = evaluation.details
        assert not evaluation.success and evaluation.score == 0.0
        assert details["fail_to_pass"]["failed"] == []
        assert broken in details["pass_to_pass"]["failed"]
        assert details["pass_to_pass"]["outcomes"][broken] == "FAILED"
        assert path in env.get_env_state()["changed_files"]
        assert env.step(submit).reward == 0.0
    finally:
        env.close()


@needs_data
def test_check_bridge_passes(instance_id: str) -> None:
    report = check_bridge(lambda: _env(instance_id))
    assert report.bridge == "swebench" and "save_state" in report.passed


# -- a repository made here, through repos_dir ------------------------------------------------

_BUGGY = "def add(a, b):\n    return a - b\n\n\ndef double(a):\n    return a * 2\n"
_TESTS = "from minicalc import double\n\n\ndef test_double():\n    assert double(2) == 4\n"
_PYPROJECT = (
    '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
    '[project]\nname = "minicalc"\nversion = "0.1.0"\n'
)


def _git(*args: str, cwd: Path) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "GIT_AUTHOR_DATE": "2001-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2001-01-01T00:00:00Z",
    }
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _diff(repo: Path, edit: dict[str, str]) -> str:
    for path, text in edit.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    _git("add", "-A", cwd=repo)
    diff = _git("diff", "--cached", cwd=repo)
    _git("reset", "-q", "--hard", cwd=repo)
    _git("clean", "-qfd", cwd=repo)
    return diff


@pytest.fixture(scope="module")
def mini(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A clone ``envharness__minicalc`` with a bug, its dataset, specs.json and sources.json."""
    root = tmp_path_factory.mktemp("swebench-mini")
    repo = root / "repos" / "envharness__minicalc"
    (repo / "src" / "minicalc").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pyproject.toml").write_text(_PYPROJECT)
    (repo / "src" / "minicalc" / "__init__.py").write_text(_BUGGY)
    (repo / "tests" / "test_calc.py").write_text(_TESTS)
    _git("init", "-q", cwd=repo)
    _git("add", "-A", cwd=repo)
    _git("commit", "-q", "-m", "minicalc", cwd=repo)
    base = _git("rev-parse", "HEAD", cwd=repo).strip()
    patch = _diff(repo, {"src/minicalc/__init__.py": _BUGGY.replace("a - b", "a + b")})
    test_patch = _diff(
        repo,
        {
            "tests/test_calc.py": _TESTS + "\n\ndef test_add():\n    from minicalc import add\n\n"
            "    assert add(2, 3) == 5\n"
        },
    )
    row = {
        "repo": "envharness/minicalc",
        "instance_id": "envharness__minicalc-1",
        "base_commit": base,
        "patch": patch,
        "test_patch": test_patch,
        "problem_statement": "add(2, 3) returns -1; it should return 5.",
        "hints_text": "",
        "created_at": "2001-01-01T00:00:00Z",
        "version": "0.1",
        "FAIL_TO_PASS": json.dumps(["tests/test_calc.py::test_add"]),
        "PASS_TO_PASS": json.dumps(["tests/test_calc.py::test_double"]),
        "environment_setup_commit": base,
    }
    (root / "dev.jsonl").write_text(json.dumps(row) + "\n")
    spec = {
        "swebench_spec": {
            "python": "3.11",
            "install": "python -m pip install -e .",
            "pip_packages": ["pytest==9.0.3"],
            "test_cmd": "pytest -rA",
        },
        "log_parser": "parse_log_pytest",
    }
    (root / "specs.json").write_text(json.dumps({"envharness/minicalc": {"0.1": spec}}))
    return {"dataset": root / "dev.jsonl", "repos": root / "repos"}


def _mini(mini: dict[str, Path], **options: object) -> SwebenchEnv:
    return SwebenchEnv(
        "envharness__minicalc-1", dataset=mini["dataset"], repos_dir=mini["repos"], **options
    )


def _play_gold(env: SwebenchEnv) -> float:
    env.reset()
    reward = 0.0
    for action in env.oracle_actions():
        reward = env.step(action).reward
    return reward


def test_repos_dir_clone_gold_resolves_empty_does_not(
    mini: dict[str, Path], docker_ready: None
) -> None:
    env = _mini(mini)
    try:
        assert _play_gold(env) == 1.0
        details = env.evaluate().details
        assert details["source"] == "clone" and details["tree_equals_base_commit"] is True
        assert details["fail_to_pass"]["outcomes"] == {"tests/test_calc.py::test_add": "PASSED"}
        assert details["spec_source"].startswith("specs.json")
        env.reset()
        empty = env.evaluate()
        assert not empty.success
        assert empty.details["fail_to_pass"]["outcomes"]["tests/test_calc.py::test_add"] in (
            "FAILED",
            "MISSING",
        )
        assert empty.details["pass_to_pass"]["failed"] == []
        saved = env.save_state()
        env.step(
            Action(
                "edit_file", {"path": "src/minicalc/__init__.py", "old": "a - b", "new": "a + b"}
            )
        )
        moved = SwebenchEnv.from_state(json.loads(json.dumps(env.save_state())))
        try:
            assert moved.get_env_state()["changed_files"] == ["src/minicalc/__init__.py"]
            assert moved.evaluate().success
        finally:
            moved.close()
        assert saved["patch"] == ""
    finally:
        env.close()


def test_repos_dir_check_bridge(mini: dict[str, Path], docker_ready: None) -> None:
    check_bridge(lambda: _mini(mini))


def test_local_runtime_gold_resolves(mini: dict[str, Path]) -> None:
    env = _mini(mini, runtime="local")
    try:
        assert _play_gold(env) == 1.0
        assert env.evaluate().details["runtime"] == "local"
        env.reset()
        assert not env.evaluate().success
    finally:
        env.close()
