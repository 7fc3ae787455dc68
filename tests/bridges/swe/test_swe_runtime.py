"""The SWE bridge's runtimes (local and Docker, same behaviour) and its image builder."""

from __future__ import annotations

import gc
import os
import time

import pytest

from envharness.bridges.swe import docker_runtime as docker_module
from envharness.bridges.swe.docker_runtime import LABEL, DockerRuntime, docker_unavailable
from envharness.bridges.swe.image import IMAGE, build_image, debian_mirror, docker_client, main
from envharness.bridges.swe.local_runtime import LocalRuntime
from envharness.bridges.swe.runtime import WorkspaceFileError, normalize_path, skipped, truncate
from envharness.errors import BridgeError

FILES = {
    "pkg/__init__.py": b"",
    "pkg/mod.py": b"VALUE = 41\n",
    "tests/test_mod.py": b"from pkg.mod import VALUE\n\n\ndef test_value():\n    assert VALUE\n",
}


@pytest.fixture(scope="module")
def docker_reason(docker_engine) -> str | None:
    return docker_engine  # conftest: starts an engine and builds the image where it can


def needs_docker(reason: str | None) -> None:
    if reason is not None:
        pytest.skip(f"the Docker runtime is unavailable here: {reason}")


def our_containers() -> list:
    client = docker_client()
    try:
        return client.containers.list(all=True, filters={"label": f"{LABEL}=swe"})
    finally:
        client.close()


@pytest.fixture(params=["local", "docker"])
def runtime(request, docker_reason):
    if request.param == "docker":
        needs_docker(docker_reason)
        made = DockerRuntime()
    else:
        made = LocalRuntime()
    made.start(FILES)
    yield made
    made.close()


# -- paths and helpers (no runtime) -------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "normal"),
    [
        ("pkg/mod.py", "pkg/mod.py"),
        ("./pkg//mod.py", "pkg/mod.py"),
        ("/workspace/pkg/mod.py", "pkg/mod.py"),
        ("pkg/../README.md", "README.md"),
    ],
)
def test_normalize_path(given, normal):
    assert normalize_path(given) == normal


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ("", "expected a file path"),
        ("../etc/passwd", "not a file inside the repository"),
        ("pkg/../../x", "not a file inside the repository"),
        ("/etc/passwd", "outside the repository"),
        ("/workspace", "not a file inside"),
        ("a\x00b", "NUL"),
    ],
)
def test_normalize_path_refuses(given, problem):
    with pytest.raises(WorkspaceFileError, match=problem):
        normalize_path(given)


def test_skipped_and_truncate():
    assert skipped("pkg/__pycache__/mod.cpython-311.pyc") and skipped(".pytest_cache/v/x")
    assert not skipped("pkg/mod.py")
    assert truncate("abc", 10) == "abc"
    assert "[... 80 characters cut ...]" in truncate("x" * 100, 20)


def test_local_limits_are_checked():
    with pytest.raises(BridgeError, match="memory_mb: expected a positive int"):
        LocalRuntime(memory_mb=0)
    with pytest.raises(BridgeError, match="pids_limit"):
        DockerRuntime(pids_limit=1)
    with pytest.raises(BridgeError, match="cpus"):
        DockerRuntime(cpus=0)


# -- the same behaviour in both runtimes --------------------------------------------------------


def test_runs_commands_in_the_workspace(runtime):
    result = runtime.run("pwd; python3 -m pytest -q -p no:cacheprovider; echo err >&2", timeout=60)
    assert result.exit_code == 0 and not result.timed_out
    lines = result.output.splitlines()
    assert lines[0] == "/workspace"  # the local runtime shows its folder as /workspace too
    assert "1 passed" in result.output and lines[-1] == "err"
    assert runtime.run("exit 3", timeout=10).exit_code == 3


def test_stripped_environment(runtime, monkeypatch):
    monkeypatch.setenv("SECRET_API_KEY", "do-not-leak")
    output = runtime.run("env", timeout=10).output
    assert "do-not-leak" not in output and "PYTHONDONTWRITEBYTECODE=1" in output


def test_timeout_kills_the_command(runtime):
    started = time.monotonic()
    result = runtime.run("echo started; sleep 30 & sleep 30", timeout=1)
    assert result.timed_out and result.exit_code == 124
    assert result.output == "started\n"
    assert time.monotonic() - started < 10


def test_huge_output_is_cut(runtime):
    result = runtime.run("head -c 3000000 /dev/zero | tr '\\0' x; echo; echo the end", timeout=60)
    assert result.exit_code == 0 and len(result.output) < 1_100_000
    assert "[... output cut ...]" in result.output and result.output.endswith("the end\n")


def test_files(runtime):
    assert runtime.read("pkg/mod.py") == b"VALUE = 41\n"
    assert runtime.read("/workspace/pkg/mod.py") == b"VALUE = 41\n"
    runtime.write("new/deep/file.txt", b"hello")
    assert runtime.read("new/deep/file.txt") == b"hello"
    runtime.remove("new/deep/file.txt")
    runtime.remove("never/there.txt")  # quiet
    with pytest.raises(WorkspaceFileError, match="no file 'nope.py'"):
        runtime.read("nope.py")
    with pytest.raises(WorkspaceFileError, match="is a folder"):
        runtime.read("pkg")
    with pytest.raises(WorkspaceFileError, match="outside the repository"):
        runtime.read("/etc/hostname")
    with pytest.raises(WorkspaceFileError, match="not a file inside"):
        runtime.write("../escape.txt", b"x")


def test_snapshot_leaves_out_caches_and_links(runtime):
    runtime.run(
        "python3 -B -m pytest -q >/dev/null; mkdir -p pkg/__pycache__"
        " && touch pkg/__pycache__/m.pyc && ln -s pkg/mod.py link.py && printf 'x' > extra.txt",
        timeout=60,
    )
    snapshot = runtime.snapshot()
    assert snapshot == {**FILES, "extra.txt": b"x"}


def test_close_and_restart(runtime):
    runtime.close()
    runtime.close()  # idempotent
    assert not runtime.running
    with pytest.raises(BridgeError, match="not started"):
        runtime.run("true", timeout=5)
    runtime.start({"a.txt": b"a"})
    assert runtime.running and runtime.snapshot() == {"a.txt": b"a"}


def test_local_workspace_is_removed():
    local = LocalRuntime()
    local.start(FILES)
    root = local._root
    assert root is not None and root.is_dir()
    local.close()
    assert not root.exists()
    local.start(FILES)
    root = local._root
    del local
    gc.collect()
    assert not root.exists()  # the finalizer removed it


def test_local_symlinks_cannot_leave_the_workspace():
    with LocalRuntime() as local:
        local.start(FILES)
        local.run("ln -s /etc outside", timeout=5)
        with pytest.raises(WorkspaceFileError, match="leads outside"):
            local.read("outside/hostname")
        with pytest.raises(WorkspaceFileError, match="leads outside"):
            local.write("outside/evil", b"x")


def test_local_memory_limit():
    with LocalRuntime(memory_mb=256) as local:
        local.start({})
        result = local.run("python3 -c 'bytearray(512 * 2**20)'", timeout=30)
    assert result.exit_code != 0 and "MemoryError" in result.output


# -- Docker only --------------------------------------------------------------------------------


def test_docker_container_is_locked_down(docker_reason):
    needs_docker(docker_reason)
    with DockerRuntime(memory_mb=256, pids_limit=64) as box:
        box.start(FILES)
        client = docker_client()
        try:
            attrs = client.containers.get(box.container_id).attrs
        finally:
            client.close()
        host = attrs["HostConfig"]
        assert host["NetworkMode"] == "none" and host["Memory"] == 256 * 2**20
        assert host["PidsLimit"] == 64 and host["CapDrop"] == ["ALL"]
        assert attrs["Config"]["Labels"][LABEL] == "swe"
        network = box.run(
            "python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 80), timeout=3)'",
            timeout=20,
        )
        assert network.exit_code != 0 and "unreachable" in network.output.lower()
        memory = box.run("python3 -c 'bytearray(512 * 2**20)'", timeout=30)
        assert memory.exit_code != 0


def test_docker_containers_are_removed(docker_reason):
    needs_docker(docker_reason)
    before = {c.id for c in our_containers()}
    box = DockerRuntime()
    box.start(FILES)
    assert box.container_id in {c.id for c in our_containers()}
    box.close()
    assert {c.id for c in our_containers()} == before
    box.start(FILES)
    del box
    gc.collect()  # the finalizer removes a container nobody closed
    assert {c.id for c in our_containers()} == before


def test_docker_failed_start_leaves_no_container(docker_reason, monkeypatch):
    needs_docker(docker_reason)
    before = {c.id for c in our_containers()}

    def broken(files):
        raise OSError("disk on fire")

    monkeypatch.setattr(docker_module, "_tar", broken)
    box = DockerRuntime()
    with pytest.raises(BridgeError, match="cannot start the container: OSError: disk on fire"):
        box.start(FILES)
    assert not box.running
    assert {c.id for c in our_containers()} == before


def test_docker_missing_image(docker_reason):
    needs_docker(docker_reason)
    with pytest.raises(BridgeError, match="not built; build it once"):
        DockerRuntime(image="envharness-swe:no-such-version").start(FILES)
    assert "is not built" in docker_unavailable("envharness-swe:no-such-version")


# -- the image ----------------------------------------------------------------------------------


def test_debian_mirror(tmp_path):
    one_line = tmp_path / "sources.list"
    one_line.write_text(
        "deb http://security.debian.org/debian-security bookworm-security main\n"
        "deb [arch=amd64] http://mirror.example/debian/ bookworm main\n"
    )
    deb822 = tmp_path / "debian.sources"
    deb822.write_text(
        "Types: deb\nURIs: http://security.example/debian-security\nSuites: bookworm-security\n\n"
        "Types: deb\nURIs: http://deb822.example/debian\nSuites: bookworm bookworm-updates\n"
    )
    assert debian_mirror([str(one_line)]) == "http://mirror.example/debian"
    assert debian_mirror([str(deb822)]) == "http://deb822.example/debian"
    assert debian_mirror([str(tmp_path / "missing")]) == "http://deb.debian.org/debian"


def test_build_is_idempotent(docker_reason, capsys):
    needs_docker(docker_reason)
    started = time.monotonic()
    report = build_image(IMAGE)
    assert not report.built and report.size_bytes > 50 * 2**20
    assert time.monotonic() - started < 10
    assert "already built" in str(report)
    assert main(["status"]) == 0 and f"{IMAGE} is built" in capsys.readouterr().out


def test_build_needs_an_engine(monkeypatch, capsys):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(BridgeError, match="no Docker engine is reachable"):
        build_image("envharness-swe:test")
    assert main(["build", "--quiet"]) == 2
    assert "start one" in capsys.readouterr().err
    assert os.environ["DOCKER_HOST"].startswith("unix:///nonexistent")
