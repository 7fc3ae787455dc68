"""Where an instance's repository tree comes from: a user's clone, or a PyPI sdist that reproduces.

1. ``repos_dir`` (or ``$ENVHARNESS_SWEBENCH_REPOS``): a folder of git clones named
   ``owner__name`` (``git clone https://github.com/owner/name repos_dir/owner__name``). The tree
   is ``git archive <base_commit>`` of the clone, so it is exactly ``base_commit``'s (checked: its
   git tree hash equals ``base_commit^{tree}``).
2. Otherwise the PyPI source distribution that ``sources.json`` names, only where its entry says
   ``"reproduces": true``: downloaded with ``pip download --no-deps --no-binary :all:``, its
   sha256 checked, unpacked with ``tar --no-same-owner``. Its tests behave as the instance's, but
   its tree differs from ``base_commit`` in some files (``tree_vs_base_commit`` says how many).

Either way the tree is prepared once in the cache, as a git repository with one commit, so the
agent can use ``git diff`` and the verifier can take the agent's changes as a patch.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envharness.bridgekit.cache import file_lock
from envharness.bridges.swebench.dataset import BRIDGE, Instance
from envharness.errors import BridgeError

__all__ = ["REPOS_ENV", "SourceTree", "git", "prepare_source", "read_from_clone"]

REPOS_ENV = "ENVHARNESS_SWEBENCH_REPOS"
"""The environment variable naming the default ``repos_dir`` (a folder of clones)."""

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "envharness",
    "GIT_AUTHOR_EMAIL": "envharness@localhost",
    "GIT_COMMITTER_NAME": "envharness",
    "GIT_COMMITTER_EMAIL": "envharness@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@dataclass(frozen=True)
class SourceTree:
    """A prepared tree of one instance.

    Attributes:
        kind: ``"clone"`` or ``"sdist"``.
        path: The tree (a git repository with one commit of every file).
        tree_hash: Its git tree hash.
        equals_base_commit: Whether the tree is exactly ``base_commit``'s.
        record: What was used (clone path and commit, or sdist name, version and sha256) and
            the tree's differences from ``base_commit`` where known.
    """

    kind: str
    path: Path
    tree_hash: str
    equals_base_commit: bool
    record: Mapping[str, Any] = field(default_factory=dict)


def git(*args: str, cwd: Path | str | None = None, input: bytes | None = None) -> str:
    """Runs ``git`` and returns its standard output.

    Raises:
        BridgeError: If git is missing or fails (with its error output).
    """
    env = {**os.environ, **_GIT_ENV}
    try:
        done = subprocess.run(
            ["git", "-c", "safe.directory=*", *args],
            cwd=cwd,
            input=input,
            capture_output=True,
            env=env,
            check=False,
        )
    except FileNotFoundError as e:
        raise BridgeError("git is not installed (apt-get install -y git)", bridge=BRIDGE) from e
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip()
        raise BridgeError(f"git {' '.join(args[:3])} failed: {reason}", bridge=BRIDGE)
    return done.stdout.decode("utf-8", "replace")


def _commit_tree(tree: Path) -> str:
    """Makes ``tree`` a git repository with one commit of all its files; returns the tree hash."""
    git("init", "-q", cwd=tree)
    git("add", "-A", "-f", ".", cwd=tree)
    git("commit", "-q", "--allow-empty", "--no-verify", "-m", "base", cwd=tree)
    return git("rev-parse", "HEAD^{tree}", cwd=tree).strip()


def clone_path(instance: Instance, repos_dir: str | os.PathLike[str]) -> Path:
    """The instance's clone in ``repos_dir``, checked to hold ``base_commit``.

    Raises:
        BridgeError: If the clone is missing or lacks ``base_commit``, saying how to fix it.
    """
    clone = Path(repos_dir).expanduser() / instance.clone_name
    if not clone.is_dir():
        raise BridgeError(
            f"repos_dir {str(repos_dir)!r} has no clone of {instance.repo} (expected the folder "
            f"{instance.clone_name}); make one with `git clone https://github.com/{instance.repo} "
            f"{clone}`",
            bridge=BRIDGE,
        )
    try:
        git("cat-file", "-e", f"{instance.base_commit}^{{commit}}", cwd=clone)
    except BridgeError as e:
        raise BridgeError(
            f"the clone {clone} does not have base_commit {instance.base_commit} of "
            f"{instance.instance_id}; update it with `git -C {clone} fetch origin`",
            bridge=BRIDGE,
        ) from e
    return clone


def read_from_clone(clone: Path, commit: str, path: str) -> str | None:
    """A file's text at ``commit`` in ``clone``, or ``None`` when it does not exist there."""
    try:
        return git("show", f"{commit}:{path}", cwd=clone)
    except BridgeError:
        return None


def _from_clone(instance: Instance, clone: Path, target: Path) -> SourceTree:
    archive = subprocess.run(
        ["git", "-c", "safe.directory=*", "-C", str(clone), "archive", instance.base_commit],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        reason = archive.stderr.decode("utf-8", "replace").strip()
        raise BridgeError(f"git archive of {clone} failed: {reason}", bridge=BRIDGE)
    subprocess.run(
        ["tar", "--no-same-owner", "-x", "-C", str(target)], input=archive.stdout, check=True
    )
    tree_hash = _commit_tree(target)
    base_tree = git("rev-parse", f"{instance.base_commit}^{{tree}}", cwd=clone).strip()
    record = {"source": "clone", "clone": str(clone), "commit": instance.base_commit}
    return SourceTree("clone", target, tree_hash, tree_hash == base_tree, record)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _from_sdist(
    instance: Instance, entry: Mapping[str, Any], target: Path, cache: Path
) -> SourceTree:
    pypi = entry.get("pypi") or {}
    name, version = pypi.get("name"), pypi.get("version")
    filename, sha256 = pypi.get("sdist_filename"), pypi.get("sha256")
    if not all(isinstance(v, str) and v for v in (name, version, filename, sha256)):
        raise BridgeError(
            f"sources.json: {instance.instance_id} needs pypi.name, version, sdist_filename and "
            "sha256",
            bridge=BRIDGE,
        )
    downloads = cache / "sdists"
    downloads.mkdir(parents=True, exist_ok=True)
    sdist = downloads / filename
    if not sdist.is_file() or _sha256(sdist) != sha256:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
        command += ["-q", f"{name}=={version}", "-d", str(downloads)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not sdist.is_file():
            raise BridgeError(
                f"cannot download the sdist {name}=={version} for {instance.instance_id} "
                f"(pip download needs PyPI): {done.stderr.strip()[-500:]}",
                bridge=BRIDGE,
            )
    found = _sha256(sdist)
    if found != sha256:
        raise BridgeError(
            f"{filename}: sha256 {found} does not match sources.json's {sha256}", bridge=BRIDGE
        )
    with tempfile.TemporaryDirectory(dir=cache) as scratch:
        subprocess.run(["tar", "--no-same-owner", "-xzf", str(sdist), "-C", scratch], check=True)
        folders = [p for p in Path(scratch).iterdir() if p.is_dir()]
        if len(folders) != 1:
            raise BridgeError(f"{filename}: expected one top-level folder", bridge=BRIDGE)
        for item in folders[0].iterdir():
            shutil.move(str(item), target / item.name)
    tree_hash = _commit_tree(target)
    record = {
        "source": "sdist",
        "sdist": filename,
        "name": name,
        "version": version,
        "sha256": sha256,
        "tree_vs_base_commit": entry.get("tree_vs_base_commit"),
    }
    return SourceTree("sdist", target, tree_hash, False, record)


def _sources_entry(instance: Instance, sources: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for entry in sources.get("instances", ()):
        if isinstance(entry, Mapping) and entry.get("instance_id") == instance.instance_id:
            return entry
    return None


def no_source_error(instance: Instance) -> BridgeError:
    """The error for an instance without a clone or a reproducing sdist, saying how to fix it."""
    return BridgeError(
        f"{instance.instance_id} needs a clone of {instance.repo}: its sdist does not reproduce "
        f"the instance (see sources.json); clone it with `git clone "
        f"https://github.com/{instance.repo} REPOS/{instance.clone_name}` and pass "
        f"repos_dir='REPOS' (or set ${REPOS_ENV})",
        bridge=BRIDGE,
    )


def choose_source(
    instance: Instance, sources: Mapping[str, Any], repos_dir: str | None
) -> tuple[str, Path | Mapping[str, Any]]:
    """``("clone", path)`` or ``("sdist", sources.json entry)``, checked; no files are made.

    Raises:
        BridgeError: If ``repos_dir`` lacks the clone, or there is no clone and no sdist that
            reproduces the instance.
    """
    if repos_dir is not None:
        return "clone", clone_path(instance, repos_dir)
    entry = _sources_entry(instance, sources)
    if entry is not None and entry.get("reproduces") is True:
        return "sdist", entry
    raise no_source_error(instance)


def prepare_source(
    instance: Instance, chosen: tuple[str, Path | Mapping[str, Any]], cache: Path
) -> SourceTree:
    """The instance's tree in the cache, prepared once (under a lock).

    Raises:
        BridgeError: If downloading, unpacking or git fails.
    """
    kind, where = chosen
    if kind == "clone":
        assert isinstance(where, Path)
        key = f"clone-{hashlib.sha256(str(where.resolve()).encode()).hexdigest()[:10]}"
    else:
        assert isinstance(where, Mapping)
        key = f"sdist-{where['pypi']['sha256'][:10]}"
    trees = cache / "trees"
    trees.mkdir(parents=True, exist_ok=True)
    target = trees / f"{instance.instance_id}-{key}"
    marker = target / ".git" / "envharness-source.json"
    with file_lock(trees / f"{target.name}.lock"):
        if marker.is_file():
            import json

            saved = json.loads(marker.read_text())
            return SourceTree(
                saved["kind"], target, saved["tree_hash"], saved["equals"], saved["record"]
            )
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir()
        try:
            if kind == "clone":
                assert isinstance(where, Path)
                tree = _from_clone(instance, where, target)
            else:
                assert isinstance(where, Mapping)
                tree = _from_sdist(instance, where, target, cache)
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        import json

        saved = {
            "kind": tree.kind,
            "tree_hash": tree.tree_hash,
            "equals": tree.equals_base_commit,
            "record": dict(tree.record),
        }
        marker.write_text(json.dumps(saved))
        return tree
