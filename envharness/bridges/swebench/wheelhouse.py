"""Offline installs: the wheels an environment needs, downloaded and built on the host.

Containers have no network, so everything ``pip`` installs in them comes from a *wheelhouse*
prepared here, where PyPI (or the configured index) is reachable. The steps mirror the
environment's install steps, each resolved on its own as ``pip`` would resolve it online:

1. the seed: the ``pip`` and ``setuptools`` wheels a fresh ``python -m venv`` gets here
   (``ensurepip``'s bundle), and ``wheel``;
2. the requirements text (``pip wheel -r``), the conda-package names and the pins;
3. per instance: the tree's build requirements (``[build-system] requires``) and its
   dependencies (``pip download`` of the tree with the extras its install names), with every
   sdist among them built into a wheel here, so nothing compiles in the container.

In the container ``PIP_NO_INDEX=1`` and ``PIP_FIND_LINKS`` point ``pip`` at the wheelhouse, so the
specs' own commands (``python -m pip install -e .``) run unchanged.
"""

from __future__ import annotations

import ensurepip
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

from envharness.bridges.swebench.dataset import BRIDGE
from envharness.bridges.swebench.specs import EnvSpec
from envharness.errors import BridgeError

__all__ = [
    "build_requirements",
    "env_wheels",
    "install_target",
    "instance_wheels",
    "wheel_folders",
]

_DONE = ".complete"


def _pip(
    args: Iterable[str], *, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> None:
    command = [sys.executable, "-m", "pip", *args]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {}), "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        cwd=cwd,
        check=False,
    )
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if not line.startswith("WARNING:")]
        raise BridgeError(
            f"preparing the wheelhouse failed: pip {' '.join(list(args)[:6])} ...:\n"
            + "\n".join(errors[-15:]),
            bridge=BRIDGE,
        )


def wheel_folders(
    spec: EnvSpec, requirements: str | None, tree_hash: str, cache: Path
) -> tuple[Path, Path]:
    """The wheelhouse folders of an environment and of one tree in it (named by content)."""
    record = {**spec.environment_record(), "requirements": requirements}
    env_key = hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:12]
    tree_record = {"env": env_key, "tree": tree_hash, "install": spec.install, "env_vars": spec.env}
    tree_key = hashlib.sha256(json.dumps(tree_record, sort_keys=True).encode()).hexdigest()[:12]
    root = cache / "wheels"
    return root / f"env-{env_key}", root / f"tree-{tree_key}"


def _seed(folder: Path) -> None:
    bundled = Path(ensurepip.__file__).parent / "_bundled"
    for wheel in bundled.glob("*.whl"):
        shutil.copy2(wheel, folder / wheel.name)
    _pip(["wheel", "-q", "-w", str(folder), "wheel"])


def _build_sdists(folder: Path) -> None:
    """Builds every sdist in ``folder`` into a wheel there (and removes the sdist)."""
    for sdist in sorted(folder.iterdir()):
        if sdist.name.endswith((".tar.gz", ".zip", ".tar.bz2")):
            _pip(["wheel", "-q", "--no-deps", "-w", str(folder), str(sdist)])
            sdist.unlink()


def env_wheels(spec: EnvSpec, requirements: str | None, folder: Path) -> float:
    """Fills ``folder`` with the environment's wheels once; returns the seconds it took.

    Returns 0 when the folder was already complete.

    Raises:
        BridgeError: If a package does not resolve or build here (pip's error is included).
    """
    if (folder / _DONE).is_file():
        return 0.0
    started = time.monotonic()
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    _seed(folder)
    if requirements:
        (folder / "requirements.txt").write_text(requirements)
        _pip(["wheel", "-q", "-w", str(folder), "-r", str(folder / "requirements.txt")])
    for group in (spec.extra_packages, spec.pip_packages):
        if group:
            _pip(["wheel", "-q", "-w", str(folder), *group])
    _build_sdists(folder)
    (folder / _DONE).write_text("")
    return time.monotonic() - started


def install_target(install: str) -> str | None:
    """What an install command installs from the tree (``.`` or ``.[dev]``), if it names one.

    Example:
        >>> install_target("python -m pip install -e '.[dev]'")
        '.[dev]'
        >>> install_target("python setup.py develop") is None
        True
    """
    try:
        words = shlex.split(install)
    except ValueError:
        return None
    if "install" not in words:
        return None
    for word in words[words.index("install") + 1 :]:
        if word.startswith(".") or word.startswith("./"):
            return word
    return None


def build_requirements(tree: Path) -> list[str]:
    """The tree's ``[build-system] requires`` (setuptools' defaults without a pyproject)."""
    pyproject = tree / "pyproject.toml"
    default = ["setuptools>=40.8.0", "wheel"]
    if not pyproject.is_file():
        return default
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return default
    requires = data.get("build-system", {}).get("requires")
    if not isinstance(requires, list):
        return default
    return [str(r) for r in requires] + ["wheel"]


def instance_wheels(spec: EnvSpec, tree: Path, folder: Path, env_folder: Path) -> float:
    """Fills ``folder`` with what installing the tree adds to the environment; returns seconds.

    Raises:
        BridgeError: If a package does not resolve or build here.
    """
    if (folder / _DONE).is_file():
        return 0.0
    started = time.monotonic()
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    env = dict(spec.env)
    links = ["--find-links", str(env_folder)]
    _pip(["download", "-q", "-d", str(folder), *links, *build_requirements(tree)], env=env)
    target = install_target(spec.install)
    if target is not None:  # on a copy: preparing metadata may write into the tree
        with tempfile.TemporaryDirectory(dir=folder.parent) as scratch:
            copy = Path(scratch) / "tree"
            shutil.copytree(tree, copy, ignore=shutil.ignore_patterns(".git"), symlinks=True)
            _pip(["download", "-q", "-d", str(folder), *links, target], env=env, cwd=copy)
    _build_sdists(folder)
    (folder / _DONE).write_text("")
    return time.monotonic() - started
