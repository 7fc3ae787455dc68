"""The local runtime: the instance in a temporary folder, with a venv on this machine.

Not a security boundary (see :class:`~envharness.bridges.swe.local_runtime.LocalRuntime`): use it
for trusted policies and machines without Docker. Per environment (repository and version) one
venv is built once in the cache, from the same wheelhouse as the images (``python -m venv`` of
the Python running EnvHarness, then the requirements and pins, offline). Each workspace gets the
tree (a copy, ``.git`` included) and a small venv of its own layered on the shared one (a
``.pth`` file adds the shared site-packages; the shared ``bin`` scripts get shims), into which
``install`` puts the workspace's editable install, so workspaces never see each other's trees.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from envharness.bridgekit.cache import file_lock
from envharness.bridges.swe.local_runtime import LocalRuntime
from envharness.bridges.swebench.dataset import BRIDGE, Instance
from envharness.bridges.swebench.images import BASE_TAG
from envharness.bridges.swebench.prepared import Prepared
from envharness.bridges.swebench.sources import SourceTree
from envharness.bridges.swebench.specs import EnvSpec
from envharness.bridges.swebench.wheelhouse import (
    env_wheels,
    install_target,
    instance_wheels,
    wheel_folders,
)
from envharness.errors import BridgeError

__all__ = ["LocalInstanceRuntime", "prepare_local"]

_SETUP_TIMEOUT = 900.0
_EXCLUDES = "__pycache__/\n*.pyc\n*.egg-info/\n.pytest_cache/\n"


def _run(command: list[str], env: Mapping[str, str], what: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True, env=dict(env), check=False)
    if done.returncode != 0:
        raise BridgeError(f"{what} failed:\n{(done.stdout + done.stderr)[-2000:]}", bridge=BRIDGE)


def _pip_env(links: list[Path]) -> dict[str, str]:
    return {
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": " ".join(str(p) for p in links),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }


def _project_names(report: Path, tree: Path) -> list[str]:
    """The names ``pip install --report`` installed from the tree itself (not its dependencies)."""
    data = json.loads(report.read_text())
    names = []
    for item in data.get("install", []):
        url = str(item.get("download_info", {}).get("url", ""))
        if url.startswith("file://") and Path(url[7:]).resolve() == tree.resolve():
            names.append(str(item.get("metadata", {}).get("name", "")))
    return [n for n in names if n]


def _shared_venv(
    spec: EnvSpec, requirements: str | None, links: list[Path], tree: Path, root: Path
) -> float:
    """Builds the shared venv once (under a lock); returns the seconds spent.

    It holds the requirements, the pins and the tree's own dependencies (the tree is installed
    from a copy, then uninstalled), so a workspace's ``install`` only adds the editable tree.
    """
    venv = root / "venv"
    done = root / ".complete"
    root.mkdir(parents=True, exist_ok=True)
    with file_lock(root.parent / f"{root.name}.lock"):
        if done.is_file():
            return 0.0
        started = time.monotonic()
        shutil.rmtree(venv, ignore_errors=True)
        env = {**os.environ, **_pip_env(links), **spec.env}
        _run([sys.executable, "-m", "venv", str(venv)], env, "python -m venv")
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
        if requirements:
            _run([*pip, "-r", str(links[0] / "requirements.txt")], env, "installing requirements")
        for group in (spec.extra_packages, spec.pip_packages):
            if group:
                _run([*pip, *group], env, "installing the pins")
        target = install_target(spec.install)
        if target is not None:
            with tempfile.TemporaryDirectory(dir=root) as scratch:
                copy = Path(scratch) / "tree"
                shutil.copytree(tree, copy, ignore=shutil.ignore_patterns(".git"), symlinks=True)
                report = Path(scratch) / "report.json"
                command = [*pip, "--report", str(report), copy.as_posix() + target[1:]]
                _run(command, env, "installing the tree's dependencies")
                names = _project_names(report, copy)
                if names:
                    _run(
                        [
                            str(venv / "bin" / "python"),
                            "-m",
                            "pip",
                            "uninstall",
                            "-q",
                            "-y",
                            *names,
                        ],
                        env,
                        "uninstalling the tree",
                    )
        done.write_text("")
        return time.monotonic() - started


class LocalInstanceRuntime(LocalRuntime):
    """A :class:`LocalRuntime` whose workspace is the instance's tree, installed in a layered venv.

    Args:
        tree: The prepared tree (copied into each workspace).
        shared_venv: The environment's venv.
        spec: The instance's spec (``pre_install``, ``install``, environment variables).
        links: The wheelhouse folders ``pip`` installs from.
    """

    def __init__(self, tree: Path, shared_venv: Path, spec: EnvSpec, links: list[Path]) -> None:
        super().__init__(memory_mb=8192, max_file_mb=512, max_open_files=4096)
        self._tree = tree
        self._shared = shared_venv
        self._spec = spec
        self._links = links

    def start(self, files: Mapping[str, bytes]) -> None:
        """A fresh workspace with the tree, its own venv, and ``install`` run in it."""
        super().start({})
        root, workspace = self._root, self._workspace
        assert root is not None and workspace is not None
        shutil.copytree(self._tree, workspace, symlinks=True, dirs_exist_ok=True)
        venv = root / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        shared_site = self._shared / "lib" / version / "site-packages"
        own_site = venv / "lib" / version / "site-packages"
        (own_site / "_envharness_shared.pth").write_text(
            f"import site; site.addsitedir({str(shared_site)!r})\n"
        )
        for script in sorted((self._shared / "bin").iterdir()):
            target = venv / "bin" / script.name
            if target.exists() or script.name.startswith(("python", "activate", "Activate")):
                continue
            target.write_text(
                f'#!/bin/sh\nexec "{venv}/bin/python" {shlex.quote(str(script))} "$@"\n'
            )
            target.chmod(0o755)
        self._env.update(
            {
                "PATH": f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin",
                "VIRTUAL_ENV": str(venv),
                **_pip_env(self._links),
                **self._spec.env,
            }
        )
        self._env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
        for name, data in files.items():
            self.write(name, data)
        setup = [
            f"printf {shlex.quote(_EXCLUDES)} >> .git/info/exclude",
            "git config user.email setup@envharness",
            "git config user.name envharness",
            *self._spec.pre_install,
            self._spec.install,
            "git commit -q --allow-empty -am envharness-setup",
            f"git tag -f {BASE_TAG} >/dev/null",
        ]
        result = self.run(" && ".join(setup), timeout=_SETUP_TIMEOUT)
        if result.exit_code != 0:
            self.close()
            raise BridgeError(
                f"installing the instance failed:\n{result.output[-2000:]}", bridge=BRIDGE
            )


def prepare_local(
    instance: Instance,
    spec: EnvSpec,
    tree: SourceTree,
    requirements: str | None,
    cache: Path,
    record: dict[str, Any],
) -> Any:
    """The instance prepared for ``runtime="local"`` (a :class:`~.prepare.Prepared`).

    Raises:
        BridgeError: If the wheelhouse or the venv cannot be made.
    """
    if shutil.which("git") is None:
        raise BridgeError("runtime='local' needs git (apt-get install -y git)", bridge=BRIDGE)
    env_folder, tree_folder = wheel_folders(spec, requirements, tree.tree_hash, cache)
    seconds = {"wheels": env_wheels(spec, requirements, env_folder)}
    seconds["wheels"] += instance_wheels(spec, tree.path, tree_folder, env_folder)
    root = cache / "venvs" / tree_folder.name
    links = [env_folder, tree_folder]
    seconds["environment"] = _shared_venv(spec, requirements, links, tree.path, root)

    def make_runtime() -> LocalInstanceRuntime:
        return LocalInstanceRuntime(tree.path, root / "venv", spec, links)

    record["venv"] = str(root / "venv")
    seconds = {k: v for k, v in seconds.items() if v > 0}
    key = f"local:{root}:{tree.tree_hash}"
    return Prepared(make_runtime, BASE_TAG, key, tree, (), seconds, record)
