"""Package-level checks: public names, optional dependencies, and what the wheel installs."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from envharness.errors import DependencyNotInstalled

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]


def _import_or_skip(name: str):
    try:
        return importlib.import_module(name)
    except DependencyNotInstalled as e:  # a package that needs an extra not installed here
        pytest.skip(f"{name}: {e}")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_of_every_package_imports(package):
    module = _import_or_skip(package)
    public = module.__all__
    assert public, package
    assert len(set(public)) == len(public), f"{package}.__all__ lists a name twice"
    missing_extra = []
    for name in public:
        try:
            value = getattr(module, name)
        except DependencyNotInstalled:  # a lazy name whose extra is not installed here
            missing_extra.append(name)
            continue
        assert value is not None, f"{package}.{name}"
    assert set(public) <= set(dir(module)), f"{package}: dir() misses some of __all__"
    if not missing_extra:
        star: dict[str, object] = {}
        exec(f"from {package} import *", star)
        assert set(public) <= set(star), f"{package}: import * misses some of __all__"


@pytest.mark.parametrize(
    ("package", "names"),
    [
        (
            "envharness.rollout",
            [
                "ChatModelPolicy",
                "ChatModelPolicyFactory",
                "ContextLimits",
                "OnExhausted",
                "Script",
                "WorkerLost",
            ],
        ),
        ("envharness.harness", ["LinkMode", "SPEC_VERSION", "component_types"]),
    ],
)
def test_names_are_exported_where_people_look_for_them(package, names):
    module = importlib.import_module(package)
    assert set(names) <= set(module.__all__)
    for name in names:
        assert getattr(module, name) is not None


def test_an_unknown_name_of_a_lazy_package_is_an_attribute_error():
    import envharness.rollout

    with pytest.raises(AttributeError, match="has no attribute 'NoSuchPolicy'"):
        envharness.rollout.NoSuchPolicy  # noqa: B018
    assert not hasattr(envharness.rollout, "NoSuchPolicy")


def test_env_side_imports_without_langchain_or_langgraph():
    code = (
        "import sys\n"
        "for name in ('langchain', 'langchain_core', 'langgraph'):\n"
        "    sys.modules[name] = None  # makes any import of them fail\n"
        "import envharness, envharness.harness, envharness.sandbox, envharness.testing\n"
        "import envharness.bridges.toy24, envharness.rollout\n"
        "lazy = ('ChatModelPolicy', 'ChatModelPolicyFactory', 'ContextLimits')\n"
        "assert set(lazy) <= set(dir(envharness.rollout)) - set(vars(envharness.rollout))\n"
        "from envharness.rollout import *  # the chat policy's names import without LangChain\n"
        "from envharness.rollout import ChatModelPolicy, ChatModelPolicyFactory, ContextLimits\n"
        "env = envharness.load_bridge('toy24', task_id='4-4-10-10')\n"
        "print(env.reset(seed=0)[0].splitlines()[0])\n"
        "try:\n"
        "    ChatModelPolicy('openai:some-model')\n"
        "except envharness.DependencyNotInstalled as e:\n"
        "    print('extra:', e.extra)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert "4" in out.stdout and "extra: rigger" in out.stdout


# bridge -> the extra its DependencyNotInstalled names when every optional package is missing
EXTRAS = {
    "alfworld": "alfworld",
    "docqa": "docqa",
    "gymnasium": "gym",
    "spreadsheet": "spreadsheet",
    "swe": "docker",
    "swebench": "swebench",
    "textworld": "textworld",
    "webshop": "web",
}
OPTIONAL = (
    "alfworld", "docker", "formulas", "gymnasium", "langchain", "langchain_core", "langgraph",
    "matplotlib", "numpy", "openpyxl", "playwright", "pypdf", "ray", "swebench", "textworld",
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
