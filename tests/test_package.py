"""Package-level checks: public names, optional dependencies, and what the wheel installs."""

from __future__ import annotations

import json
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


# bridge -> the extra its DependencyNotInstalled names when every optional package is missing
EXTRAS = {
    "alfworld": "alfworld",
    "docqa": "docqa",
    "gymnasium": "gym",
    "spreadsheet": "spreadsheet",
    "swe": "docker",
    "textworld": "textworld",
    "webshop": "web",
}
OPTIONAL = (
    "alfworld", "docker", "formulas", "gymnasium", "langchain", "langchain_core", "langgraph",
    "matplotlib", "numpy", "openpyxl", "playwright", "pypdf", "ray", "textworld",
)  # fmt: skip


def test_every_bridge_without_its_optional_packages_names_its_extra(tmp_path):
    code = (
        "import json, sys\n"
        f"for name in {OPTIONAL!r}:\n"
        "    sys.modules[name] = None  # makes any import of them fail\n"
        "import envharness\n"
        "from envharness import DependencyNotInstalled, list_bridges, list_tasks, load_bridge\n"
        "found = {}\n"
        "for bridge in list_bridges():\n"
        "    try:\n"
        "        task = list_tasks(bridge, split='train')[0]\n"
        "    except DependencyNotInstalled as e:\n"
        "        found[bridge] = e.extra\n"
        "        continue\n"
        "    except envharness.BridgeError:  # no data (ALFWorld): any task id will do\n"
        "        task = 'x/y'\n"
        "    try:\n"
        "        load_bridge(bridge, task_id=task).reset()\n"
        "        found[bridge] = None\n"
        "    except DependencyNotInstalled as e:\n"
        "        found[bridge] = e.extra\n"
        "print(json.dumps(found))\n"
    )
    env = {"ALFWORLD_DATA": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env
    )
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert found == {**EXTRAS, "toy24": None}


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
