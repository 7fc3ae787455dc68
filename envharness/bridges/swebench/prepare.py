"""Everything an instance needs before its first episode, made once and cached per process.

:func:`prepare` resolves the tree (clone or sdist), the requirements, and the environment of the
chosen runtime (the Docker images, or a local venv), and returns a :class:`Prepared` that makes
fresh runtimes of the instance: one for each episode and one for each verification.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from envharness.bridges.swe.runtime import Runtime
from envharness.bridges.swebench.dataset import BRIDGE, Instance
from envharness.bridges.swebench.prepared import Prepared
from envharness.bridges.swebench.sources import SourceTree, prepare_source, read_from_clone
from envharness.bridges.swebench.specs import EnvSpec, requirements_from_clone
from envharness.errors import BridgeError

__all__ = ["CONTAINER_ENV", "Prepared", "prepare"]

CONTAINER_ENV = {
    "HOME": "/root",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONHASHSEED": "0",
    "PYTHONUNBUFFERED": "1",
    "TERM": "dumb",
    "NO_COLOR": "1",
}
"""Variables of every container (no ``PYTEST_DISABLE_PLUGIN_AUTOLOAD``: the repositories'
pytest plugins load as in SWE-bench's images)."""

_MEMORY_MB = 3072
_PIDS = 512
_CACHE: dict[tuple[Any, ...], Prepared] = {}
_LOCK = threading.Lock()


def _requirements(instance: Instance, spec: EnvSpec, tree: SourceTree) -> str | None:
    if spec.packages != "requirements.txt":
        return spec.requirements_txt
    if spec.requirements_txt is not None:
        return spec.requirements_txt
    if tree.kind != "clone":
        raise BridgeError(
            f"{instance.instance_id}: the spec installs requirements.txt, which is read from the "
            "clone at environment_setup_commit; give repos_dir, or 'requirements_txt' in "
            "specs.json",
            bridge=BRIDGE,
        )
    clone = Path(tree.record["clone"])
    commit = instance.environment_setup_commit or instance.base_commit
    return requirements_from_clone(
        lambda path: read_from_clone(clone, commit, path), spec.requirements_paths
    )


def _top_level(tree: Path) -> tuple[str, ...]:
    names = []
    for entry in sorted(tree.iterdir(), key=lambda p: p.name):
        if entry.name == ".git":
            continue
        names.append(entry.name + ("/" if entry.is_dir() else ""))
    return tuple(names)


def prepare(
    instance: Instance,
    spec: EnvSpec,
    chosen: tuple[str, Any],
    *,
    runtime: str,
    cache: Path,
) -> Prepared:
    """The prepared instance (built on first use; cached per process).

    Raises:
        BridgeError: If the source, the wheelhouse or an image cannot be made.
        DependencyNotInstalled: If the ``docker`` package is missing (``runtime="docker"``).
    """
    kind, where = chosen
    where_key = str(where) if kind == "clone" else where["pypi"]["sha256"]
    key = (instance.instance_id, kind, where_key, runtime, str(cache), repr(spec))
    with _LOCK:
        found = _CACHE.get(key)
    if found is not None:
        return found
    started = time.monotonic()
    tree = prepare_source(instance, chosen, cache)
    source_seconds = time.monotonic() - started
    requirements = _requirements(instance, spec, tree)
    record: dict[str, Any] = {
        "source": tree.kind,
        "tree_equals_base_commit": tree.equals_base_commit,
        "source_detail": dict(tree.record),
        "spec_source": spec.spec_source,
        "adaptations": list(spec.adaptations),
        "test_command": spec.test_command,
        "log_parser": spec.parser_name,
        "runtime": runtime,
    }
    if runtime == "docker":
        prepared = _docker(instance, spec, tree, requirements, cache, record)
    else:
        from envharness.bridges.swebench.local import prepare_local

        prepared = prepare_local(instance, spec, tree, requirements, cache, record)
    seconds = dict(prepared.seconds)
    if source_seconds > 0.5:
        seconds["source"] = source_seconds
    prepared = Prepared(
        prepared.make_runtime,
        prepared.base_sha,
        prepared.runtime_key,
        tree,
        _top_level(tree.path),
        seconds,
        record,
    )
    with _LOCK:
        _CACHE[key] = prepared
    return prepared


def _docker(
    instance: Instance,
    spec: EnvSpec,
    tree: SourceTree,
    requirements: str | None,
    cache: Path,
    record: dict[str, Any],
) -> Prepared:
    from envharness.bridges.swe.docker_runtime import DockerRuntime
    from envharness.bridges.swe.image import docker_client
    from envharness.bridges.swebench.images import instance_image

    client = docker_client(timeout=1200)
    try:
        info = instance_image(client, instance, spec, tree, requirements, cache)
    finally:
        client.close()
    record["image"] = info.tag
    record["first_build_seconds"] = {k: round(v, 1) for k, v in info.first_build.items()}
    env = dict(CONTAINER_ENV)

    def make_runtime() -> Runtime:
        return DockerRuntime(
            image=info.tag, memory_mb=_MEMORY_MB, pids_limit=_PIDS, environment=env
        )

    seconds = {k: v for k, v in info.seconds.items() if v > 0}
    return Prepared(make_runtime, info.base_sha, f"docker:{info.tag}", tree, (), seconds, record)
