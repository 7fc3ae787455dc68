"""Test setup shared by the bridge tests: a Docker engine and the SWE image, when they can exist.

The SWE bridge's Docker runtime needs a running engine and a locally built image. When the
machine has ``dockerd`` but no engine answers, and the tests run as root, the session starts one
(and stops it at the end); when the engine lacks the image and ``debootstrap`` is present, the
session builds it once (about two minutes). Anything still missing makes the Docker tests skip,
saying why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

_ENGINE_WAIT = 60.0  # seconds for a fresh dockerd to answer


def _engine_answers() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0


def _start_engine(log: Path) -> subprocess.Popen[bytes] | None:
    """Starts ``dockerd`` when none answers and this machine can run one; None otherwise."""
    if shutil.which("docker") is None or _engine_answers():
        return None
    if shutil.which("dockerd") is None or os.geteuid() != 0:
        return None
    with log.open("wb") as out:
        engine = subprocess.Popen(
            ["dockerd"], stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + _ENGINE_WAIT
    while time.monotonic() < deadline and engine.poll() is None:
        if _engine_answers():
            return engine
        time.sleep(0.5)
    engine.terminate()
    engine.wait(timeout=30)
    return None


@pytest.fixture(scope="session")
def docker_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str | None]:
    """Why the Docker runtime cannot run here after this setup did what it could, or None."""
    from envharness.bridges.swe import docker_unavailable
    from envharness.bridges.swe.image import build_image
    from envharness.errors import EnvHarnessError

    engine = _start_engine(tmp_path_factory.mktemp("dockerd") / "dockerd.log")
    reason = docker_unavailable()  # also says when the 'docker' package is missing
    if reason is not None and "not built" in reason and shutil.which("debootstrap"):
        try:
            build_image()
        except EnvHarnessError as e:
            reason = f"{reason}; building it here failed: {e}"
        else:
            reason = docker_unavailable()
    try:
        yield reason
    finally:
        if engine is not None:  # only an engine this session started
            engine.terminate()
            engine.wait(timeout=60)
