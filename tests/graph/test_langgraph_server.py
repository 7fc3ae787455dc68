"""The graphs under the real LangGraph API server (``langgraph dev``), driven by ``langgraph_sdk``.

The server runs offline on a free loopback port (no browser, no reload, no tunnel, no analytics,
no version check, no tracing), from a copy of the repository's ``langgraph.json`` whose paths are
made absolute, in a temporary directory (its ``.langgraph_api`` store lands there). It runs the
graphs in its own process with its own checkpointer; each rig writes to the test's ``run_dir``,
given through the context. The server is stopped (its process group killed) even on failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph_api", reason="needs langgraph-cli[inmem] (langgraph dev)")
pytest.importorskip("langgraph_runtime_inmem", reason="needs langgraph-cli[inmem] (langgraph dev)")
sdk = pytest.importorskip("langgraph_sdk", reason="needs langgraph-sdk")

from envharness.graph import build_rigger  # noqa: E402
from envharness.graph.outputs import accepted_path, rejected_path  # noqa: E402
from envharness.graph.rig_many import build_rig_many  # noqa: E402
from envharness.harness.spec import BridgeSpec, HarnessSpec  # noqa: E402

LANGGRAPH = shutil.which("langgraph")
pytestmark = pytest.mark.skipif(
    LANGGRAPH is None,
    reason="the langgraph CLI is not installed (pip install 'langgraph-cli[inmem]')",
)

ROOT = Path(__file__).resolve().parents[2]
TASK = "1-1-1-8"
STARTUP_S = 180.0
RUN_TIMEOUT_S = 120.0
OFFLINE = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "1",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGSMITH_API_KEY": "",
    "LANGCHAIN_API_KEY": "",
}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def absolute_config(directory: Path) -> Path:
    """The repository's ``langgraph.json``, its paths made absolute, written to ``directory``."""
    config = json.loads((ROOT / "langgraph.json").read_text(encoding="utf-8"))
    config["dependencies"] = [str((ROOT / d).resolve()) for d in config["dependencies"]]
    graphs = {}
    for name, target in config["graphs"].items():
        path, _, variable = target.rpartition(":")
        graphs[name] = f"{(ROOT / path).resolve()}:{variable}"
    config["graphs"] = graphs
    path = directory / "langgraph.json"
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    return path


def tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


def wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"langgraph dev exited with {process.returncode}:\n{tail(log)}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
                if response.status == 200:
                    return
        time.sleep(0.5)
    pytest.fail(f"langgraph dev was not healthy at {url}/ok within {STARTUP_S:.0f}s:\n{tail(log)}")


def stop(process: subprocess.Popen[bytes]) -> None:
    """Kills the server's process group: SIGTERM, then SIGKILL after 15 s."""
    for sig, grace in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


@dataclass(frozen=True)
class Server:
    """A running ``langgraph dev``: its URL and its log."""

    url: str
    log: Path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    directory = tmp_path_factory.mktemp("langgraph-dev")
    config = absolute_config(directory)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = directory / "server.log"
    command = [LANGGRAPH, "dev", "--config", str(config), "--host", "127.0.0.1"]
    command += ["--port", str(port), "--no-browser", "--no-reload"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=directory,
            env={**os.environ, **OFFLINE},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_healthy(url, process, log)
        yield Server(url, log)
    finally:
        stop(process)


@pytest.fixture
def client(server: Server) -> Any:
    return sdk.get_sync_client(url=server.url, api_key=None, timeout=RUN_TIMEOUT_S)


def context(run_dir: Path, **changes: Any) -> dict[str, Any]:
    return {
        "policy": "oracle:1.0",
        "objective": "sr:0.8-1.0",
        "k_observe": 3,
        "run_dir": str(run_dir),
        **changes,
    }


def assistant(client: Any, graph_id: str) -> str:
    (found,) = client.assistants.search(graph_id=graph_id, limit=10)
    return found["assistant_id"]


@pytest.mark.parametrize(
    ("graph_id", "build"), [("rigger", build_rigger), ("rig_many", build_rig_many)]
)
def test_the_server_shows_the_graphs_schemas(client, graph_id, build) -> None:
    schemas = client.assistants.get_schemas(assistant(client, graph_id))
    graph = build()
    for kind in ("input", "output", "context"):
        served = schemas[f"{kind}_schema"]
        assert served and served["properties"], f"{graph_id} serves no {kind} schema"
        assert served == getattr(graph, f"get_{kind}_jsonschema")()
    state = schemas["state_schema"]
    assert set(graph.builder.state_schema.__annotations__) <= set(state["properties"])


def test_a_rigger_run_over_the_sdk(client, tmp_path) -> None:
    thread = client.threads.create()
    start = {"task_id": TASK, "base_spec": HarnessSpec(BridgeSpec("toy24", TASK)).to_dict()}
    out = client.runs.wait(thread["thread_id"], "rigger", input=start, context=context(tmp_path))
    assert out["status"] == "accepted", out
    assert "settings" not in out  # the output schema, not the state
    state = client.threads.get_state(thread["thread_id"])
    assert state["next"] == []
    values = state["values"]
    assert values["status"] == "accepted" and values["task_id"] == TASK
    assert values["settings"]["k_observe"] == 3 and values["settings"]["run_dir"] == str(tmp_path)
    written = json.loads(accepted_path(tmp_path, TASK).read_text())
    assert written == values["accepted_spec"] == out["accepted_spec"]


def test_a_rig_many_run_over_the_sdk(client, tmp_path) -> None:
    thread = client.threads.create()
    start = {"bridge": "toy24", "task_ids": [TASK]}
    out = client.runs.wait(thread["thread_id"], "rig_many", input=start, context=context(tmp_path))
    assert set(out) == {"results", "counts"}, out
    (result,) = out["results"]
    assert result["task_id"] == TASK and result["status"] == "accepted"
    assert result["accepted_path"] == str(accepted_path(tmp_path, TASK))
    assert json.loads(Path(result["accepted_path"]).read_text()) == result["accepted_spec"]
    state = client.threads.get_state(thread["thread_id"])
    assert state["next"] == [] and state["values"]["counts"] == {"accepted": 1}
    assert state["values"]["plan"]["task_ids"] == [TASK]


def test_rig_many_approval_resumes_over_the_sdk_without_a_context(client, tmp_path) -> None:
    thread = client.threads.create()["thread_id"]
    start = {"bridge": "toy24", "task_ids": [TASK]}
    paused = client.runs.wait(
        thread,
        "rig_many",
        input=start,
        context=context(tmp_path, require_approval=True, max_iterations=1),
    )
    (pending,) = paused["__interrupt__"]
    assert pending["value"]["task_id"] == TASK
    state = client.threads.get_state(thread, subgraphs=True)
    assert state["next"] == ["rig_task"]
    assert not accepted_path(tmp_path, TASK).exists()
    out = client.runs.wait(thread, "rig_many", command={"resume": {"approved": False}})
    (result,) = out["results"]  # the recorded settings: no iteration left after a refusal
    assert result["status"] == "rejected" and "refused" in result["reason"]
    assert rejected_path(tmp_path, TASK).exists()
    assert not accepted_path(tmp_path, TASK).exists()


def test_a_bad_input_fails_the_run_with_the_rigger_error(client, server, tmp_path) -> None:
    thread = client.threads.create()["thread_id"]
    start = {"bridge": "toy24"}
    out = client.runs.wait(
        thread, "rig_many", input=start, context=context(tmp_path), raise_error=False
    )
    error = out["__error__"]
    assert error["error"] == "RiggerError"
    assert client.threads.get(thread)["status"] == "error"
    # langgraph-api passes on the message of builtin errors only (ValueError, TypeError ...) and
    # hides others' behind a fixed text; the full message is in the server's log either way.
    message = "rig_many's input needs the tasks: task_ids"
    assert message in error["message"] or error["message"] == "An internal error occurred"
    deadline = time.monotonic() + 10
    while message not in server.log.read_text(errors="replace") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert message in server.log.read_text(errors="replace")
