"""Package-level checks: public names, optional dependencies, and what the wheel installs."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import envharness
import envharness.harness
import envharness.sandbox

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("module", [envharness, envharness.harness, envharness.sandbox])
def test_every_public_name_imports(module):
    assert module.__all__, module.__name__
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{module.__name__}.{name}"


def test_env_side_imports_without_langchain_or_langgraph():
    code = (
        "import sys\n"
        "for name in ('langchain', 'langchain_core', 'langgraph'):\n"
        "    sys.modules[name] = None  # makes any import of them fail\n"
        "import envharness, envharness.harness, envharness.sandbox, envharness.testing\n"
        "import envharness.bridges.toy24\n"
        "env = envharness.load_bridge('toy24', task_id='4-4-10-10')\n"
        "print(env.reset(seed=0)[0].splitlines()[0])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert "4" in out.stdout


def test_namespaced_folders_import_under_envharness():
    import envharness.graph
    import envharness.prompts
    import envharness.tools

    assert Path(envharness.graph.__file__).parent == ROOT / "graph"
    assert Path(envharness.tools.__file__).parent == ROOT / "tools"
    assert Path(envharness.prompts.__file__).parent == ROOT / "prompts"


def test_wheel_installs_only_under_envharness(tmp_path):
    pytest.importorskip("setuptools")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    (wheel,) = tmp_path.glob("envharness-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {n.split("/")[0] for n in names}
    assert top_level == {
        "envharness",
        wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info",
    }
    for init in ROOT.glob("**/__init__.py"):
        relative = init.relative_to(ROOT)
        if relative.parts[0] in ("envharness", "graph", "tools", "prompts"):
            inside = relative if relative.parts[0] == "envharness" else Path("envharness", relative)
            assert inside.as_posix() in names, f"{relative} is not in the wheel"
    assert "envharness/py.typed" in names
    assert any(n.startswith("envharness/sandbox/") and n.endswith("worker.py") for n in names)
