"""The Docker images of the SWE-bench bridge, built locally in three cached layers.

Nothing is pulled and builds run with the network off (``network_mode="none"``):

1. **tools** (:data:`TOOLS_IMAGE`): the SWE bridge's base image
   (:data:`~envharness.bridges.swe.image.IMAGE`) plus ``git`` and ``patch``, installed from
   Debian packages that ``apt-get --download-only`` fetches on the host against the image's own
   package list;
2. **environment**, one per (repository, version): a venv (``/opt/envharness/venv``, first on
   ``PATH``) with the requirements and pins installed from the wheelhouse
   (:mod:`~envharness.bridges.swebench.wheelhouse`);
3. **instance**, one per instance and source: the tree at ``/workspace`` (a git repository),
   ``pre_install`` and ``install`` run in it, and the result committed and tagged
   ``envharness-base``, as SWE-bench's instance images do.

An image is built once per machine: its tag hashes everything that goes into it.
"""

from __future__ import annotations

import hashlib
import io
import json
import shlex
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envharness.bridgekit.cache import file_lock
from envharness.bridges.swebench.dataset import BRIDGE, Instance
from envharness.bridges.swebench.sources import SourceTree
from envharness.bridges.swebench.specs import EnvSpec, safe_tag
from envharness.bridges.swebench.wheelhouse import env_wheels, instance_wheels, wheel_folders
from envharness.errors import BridgeError

__all__ = [
    "BASE_TAG",
    "TOOLS_IMAGE",
    "VENV",
    "ImageInfo",
    "instance_image",
]

RECIPE = "1"
TOOLS_IMAGE = f"envharness-swebench-tools:{RECIPE}"
"""The tools layer (the SWE base image plus git and patch)."""
BASE_TAG = "envharness-base"
"""The git tag of the instance's starting commit in ``/workspace``."""
VENV = "/opt/envharness/venv"
_WHEELS = "/opt/envharness/wheels"
_DEBIAN_PACKAGES = ("git", "patch")
_PATH = f"{VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class ImageInfo:
    """An instance image and what building it cost.

    Attributes:
        tag: The instance image's tag.
        env_tag: The environment image's tag.
        base_sha: The commit the agent starts from (tagged ``envharness-base``).
        built: Whether anything was built now (``False``: all cached).
        seconds: Wall-clock seconds spent building now, by step (``wheels``, ``tools``,
            ``environment``, ``instance``).
        first_build: The seconds the first build of this image took, by step (recorded).
    """

    tag: str
    env_tag: str
    base_sha: str
    built: bool
    seconds: Mapping[str, float]
    first_build: Mapping[str, float]


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]


def _exists(client: Any, tag: str) -> bool:
    from docker.errors import ImageNotFound

    try:
        client.images.get(tag)
    except ImageNotFound:
        return False
    return True


def _add_folder(archive: tarfile.TarFile, folder: Path, name: str) -> None:
    archive.add(str(folder), arcname=name, recursive=True)


def _build(client: Any, tag: str, dockerfile: str, folders: Mapping[str, Path]) -> None:
    """Builds ``dockerfile`` with ``folders`` in its context, with no network."""
    with tempfile.TemporaryFile() as context:
        with tarfile.open(fileobj=context, mode="w") as archive:
            data = dockerfile.encode()
            info = tarfile.TarInfo("Dockerfile")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
            for name, folder in folders.items():
                _add_folder(archive, folder, name)
        context.seek(0)
        log: list[str] = []
        try:
            for chunk in client.api.build(
                fileobj=context,
                custom_context=True,
                tag=tag,
                rm=True,
                forcerm=True,
                network_mode="none",
                decode=True,
                labels={"org.envharness.bridge": BRIDGE},
            ):
                if "stream" in chunk:
                    log.extend(chunk["stream"].splitlines())
                if "error" in chunk:
                    log.append(chunk["error"])
                    raise BridgeError(
                        f"building {tag} failed:\n" + "\n".join(log[-30:]), bridge=BRIDGE
                    )
        except BridgeError:
            raise
        except Exception as e:
            raise BridgeError(
                f"building {tag} failed: {type(e).__name__}: {e}", bridge=BRIDGE
            ) from e


def _debs(client: Any, base: str, folder: Path) -> None:
    """Downloads git and patch with their dependencies missing from ``base`` (host apt)."""
    if shutil.which("apt-get") is None:
        raise BridgeError(
            "building the tools image needs apt-get on the host (to download git and patch)",
            bridge=BRIDGE,
        )
    state = folder / "state"
    archives = folder / "archives"
    (archives / "partial").mkdir(parents=True, exist_ok=True)
    state.mkdir(exist_ok=True)
    status = client.containers.run(
        base, ["cat", "/var/lib/dpkg/status"], remove=True, network_mode="none"
    )
    (state / "status").write_bytes(status)
    command = [
        "apt-get",
        "-q",
        "-y",
        "--no-install-recommends",
        "--download-only",
        "-o",
        f"Dir::State::status={state / 'status'}",
        "-o",
        f"Dir::Cache::archives={archives}",
        "install",
        *_DEBIAN_PACKAGES,
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BridgeError(
            f"apt-get could not download {' '.join(_DEBIAN_PACKAGES)}: {done.stderr[-800:]}",
            bridge=BRIDGE,
        )
    for leftover in ("lock", "partial"):
        path = archives / leftover
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)


def tools_image(client: Any, cache: Path) -> float:
    """Builds :data:`TOOLS_IMAGE` unless it exists; returns the seconds spent."""
    from envharness.bridges.swe.image import IMAGE

    if _exists(client, TOOLS_IMAGE):
        return 0.0
    if not _exists(client, IMAGE):
        raise BridgeError(
            f"the base image {IMAGE} is not built; build it once with `python -m "
            "envharness.bridges.swe.image build`",
            bridge=BRIDGE,
        )
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=cache) as scratch:
        _debs(client, IMAGE, Path(scratch))
        dockerfile = "\n".join(
            [
                f"FROM {IMAGE}",
                "COPY debs/ /tmp/debs/",
                "RUN dpkg -i /tmp/debs/*.deb && rm -rf /tmp/debs && git --version",
                "RUN git config --system --add safe.directory '*'",
                "",
            ]
        )
        _build(client, TOOLS_IMAGE, dockerfile, {"debs": Path(scratch) / "archives"})
    return time.monotonic() - started


def _env_dockerfile(spec: EnvSpec, has_requirements: bool) -> str:
    python = f"{VENV}/bin/python"
    lines = [
        f"FROM {TOOLS_IMAGE}",
        f"COPY wheels/ {_WHEELS}/env/",
        f"ENV PIP_NO_INDEX=1 PIP_FIND_LINKS='{_WHEELS}/env {_WHEELS}/instance' "
        f"PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore VIRTUAL_ENV={VENV} "
        f"PATH={_PATH}",
        f"RUN mkdir -p {_WHEELS}/instance && python3 -m venv --without-pip {VENV} && "
        f"{python} {_WHEELS}/env/$(cd {_WHEELS}/env && ls pip-*.whl | head -1)/pip install -q "
        "pip setuptools",
    ]
    if has_requirements:
        lines.append(f"RUN python -m pip install -r {_WHEELS}/env/requirements.txt")
    for group in (spec.extra_packages, spec.pip_packages):
        if group:
            lines.append("RUN python -m pip install " + " ".join(shlex.quote(p) for p in group))
    lines.append("")
    return "\n".join(lines)


def _instance_dockerfile(env_tag: str, spec: EnvSpec) -> str:
    setup = [
        "printf '__pycache__/\\n*.pyc\\n*.egg-info/\\n.pytest_cache/\\n' >> .git/info/exclude",
        "git config --global user.email setup@envharness",
        "git config --global user.name envharness",
        *spec.pre_install,
        spec.install,
        "git commit -q --allow-empty -am envharness-setup",
        f"git tag -f {BASE_TAG}",
    ]
    lines = [f"FROM {env_tag}", f"COPY wheels/ {_WHEELS}/instance/", "COPY tree/ /workspace/"]
    if spec.env:
        lines.append("ENV " + " ".join(f"{k}={shlex.quote(v)}" for k, v in spec.env.items()))
    lines += ["WORKDIR /workspace", "RUN " + " && ".join(setup), ""]
    return "\n".join(lines)


def _base_sha(client: Any, tag: str) -> str:
    output = client.containers.run(
        tag, ["git", "rev-parse", BASE_TAG], remove=True, network_mode="none"
    )
    return output.decode().strip()


def instance_image(
    client: Any,
    instance: Instance,
    spec: EnvSpec,
    tree: SourceTree,
    requirements: str | None,
    cache: Path,
) -> ImageInfo:
    """The instance's image, building whatever layer is missing (under a lock per tag).

    Raises:
        BridgeError: If the base image is missing, or a download or build step fails.
    """
    env_dockerfile = _env_dockerfile(spec, bool(requirements))
    env_key = _digest(
        {**spec.environment_record(), "requirements": requirements, "file": env_dockerfile}
    )
    env_tag = f"envharness-swebench-env:{safe_tag(spec.repo)}-{safe_tag(spec.version)}-{env_key}"
    inst_dockerfile = _instance_dockerfile(env_tag, spec)
    inst_key = _digest({"tree": tree.tree_hash, "file": inst_dockerfile})
    tag = f"envharness-swebench:{safe_tag(instance.instance_id)}-{inst_key}"
    meta_dir = cache / "images"
    meta_dir.mkdir(parents=True, exist_ok=True)
    meta = meta_dir / f"{tag.replace(':', '_')}.json"
    seconds: dict[str, float] = {}
    with file_lock(meta_dir / "build.lock"):
        if _exists(client, tag) and meta.is_file():
            saved = json.loads(meta.read_text())
            first = saved.get("seconds", {})
            return ImageInfo(tag, env_tag, saved["base_sha"], False, {}, first)
        seconds["tools"] = tools_image(client, cache)
        env_folder, inst_folder = wheel_folders(spec, requirements, tree.tree_hash, cache)
        seconds["wheels"] = env_wheels(spec, requirements, env_folder)
        started = time.monotonic()
        if not _exists(client, env_tag):
            _build(client, env_tag, env_dockerfile, {"wheels": env_folder})
        seconds["environment"] = time.monotonic() - started
        seconds["wheels"] += instance_wheels(spec, tree.path, inst_folder, env_folder)
        started = time.monotonic()
        if not _exists(client, tag):
            _build(client, tag, inst_dockerfile, {"wheels": inst_folder, "tree": tree.path})
        seconds["instance"] = time.monotonic() - started
        base_sha = _base_sha(client, tag)
        meta.write_text(json.dumps({"base_sha": base_sha, "seconds": seconds}))
    return ImageInfo(tag, env_tag, base_sha, True, seconds, seconds)


def remove_images(client: Any, tags: list[str]) -> None:
    """Removes images by tag (quietly skipping missing ones); for cleaning up tests."""
    for tag in tags:
        try:
            client.images.remove(tag, force=True)
        except Exception:
            pass


def docker_ready() -> str | None:
    """Why the Docker path cannot run here (no package, no engine, no base image), or None."""
    from envharness.bridges.swe.docker_runtime import docker_unavailable

    return docker_unavailable()
