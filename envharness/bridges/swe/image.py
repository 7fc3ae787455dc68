"""Builds the container image of the SWE bridge locally, from a minimal Debian root filesystem.

Nothing is pulled from a registry: ``debootstrap --variant=minbase`` installs Debian bookworm with
``python3`` and ``python3-pytest`` into a temporary folder (from the Debian mirror apt uses on this
machine, or ``--mirror``), documentation, locales and apt caches are removed, and the folder is
imported into the local Docker engine as :data:`IMAGE`. Building needs root, ``debootstrap`` and
a running engine, and takes a minute or two; it is idempotent (nothing happens when the tag
exists, unless ``--force``).

Usage::

    python -m envharness.bridges.swe.image build     # once per machine
    python -m envharness.bridges.swe.image status    # is it there?

Example:
    >>> IMAGE
    'envharness-swe:1'
    >>> debian_mirror(sources=())
    'http://deb.debian.org/debian'
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from envharness.errors import BridgeError, DependencyNotInstalled

__all__ = [
    "IMAGE",
    "BuildReport",
    "build_image",
    "debian_mirror",
    "docker_client",
    "image_exists",
    "main",
]

IMAGE = "envharness-swe:1"
"""The image tag the Docker runtime uses by default (bump the version when the recipe changes)."""

SUITE = "bookworm"
PACKAGES = ("python3", "python3-pytest")
_DEFAULT_MIRROR = "http://deb.debian.org/debian"
_SOURCES = ("/etc/apt/sources.list", "/etc/apt/sources.list.d/*.list", "/etc/apt/sources.list.d/*")
_PRUNED = (
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "var/cache/apt",
    "var/lib/apt/lists",
    "var/log",
)
_CHANGES = (
    "WORKDIR /workspace",
    "ENV LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PYTHONHASHSEED=0",
    'CMD ["sleep", "infinity"]',
    f"LABEL org.envharness.recipe={SUITE}-minbase-{'+'.join(PACKAGES)}",
)
_DEB_LINE = re.compile(r"^\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)")


@dataclass(frozen=True)
class BuildReport:
    """What :func:`build_image` did.

    Attributes:
        tag: The image tag.
        built: ``False`` when the image already existed and nothing was done.
        seconds: Wall-clock time of the build (0 when nothing was built).
        size_bytes: The image's size as the engine reports it.
    """

    tag: str
    built: bool
    seconds: float
    size_bytes: int

    def __str__(self) -> str:
        size = f"{self.size_bytes / 2**20:.0f} MiB"
        if not self.built:
            return f"{self.tag} is already built ({size})"
        return f"built {self.tag} in {self.seconds:.0f} s ({size})"


def docker_client(timeout: int = 60) -> Any:
    """A Docker SDK client for the engine in the environment (``DOCKER_HOST`` or the socket).

    Raises:
        DependencyNotInstalled: If the ``docker`` package is missing (extra ``swe``).
        BridgeError: If no engine answers, naming how to start one.
    """
    try:
        import docker
    except ImportError as e:
        raise DependencyNotInstalled(
            "docker", "docker", purpose="the SWE bridge's Docker runtime"
        ) from e
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except Exception as e:  # DockerException, a refused or missing socket, ...
        raise BridgeError(
            f"no Docker engine is reachable ({type(e).__name__}: {e}); start one (e.g. "
            "`dockerd > /tmp/dockerd.log 2>&1 &`) or use runtime='local'",
            bridge="swe",
        ) from e
    return client


def image_exists(client: Any, tag: str = IMAGE) -> bool:
    """Whether the engine behind ``client`` has the image ``tag``."""
    from docker.errors import ImageNotFound

    try:
        client.images.get(tag)
    except ImageNotFound:
        return False
    return True


def debian_mirror(sources: Iterable[str] | None = None) -> str:
    """The Debian mirror apt uses here (a ``deb`` line or a ``URIs:`` field), else deb.debian.org.

    Args:
        sources: Files to read; apt's source lists when ``None``.
    """
    paths = sources if sources is not None else [p for g in _SOURCES for p in sorted(glob.glob(g))]
    for path in dict.fromkeys(paths):
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError:
            continue
        for line in text.splitlines():
            match = _DEB_LINE.match(line)
            if match and match.group(2) == SUITE and "security" not in match.group(1):
                return match.group(1).rstrip("/")
        for stanza in re.split(r"\n\s*\n", text):
            uris = re.search(r"^URIs:\s*(\S+)", stanza, re.MULTILINE)
            suites = re.search(r"^Suites:\s*(.+)$", stanza, re.MULTILINE)
            if uris and suites and SUITE in suites.group(1).split():
                if "security" not in uris.group(1):
                    return uris.group(1).rstrip("/")
    return _DEFAULT_MIRROR


def _run(command: Sequence[str], log: Callable[[str], None]) -> None:
    log("$ " + " ".join(command))
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    )
    assert process.stdout is not None
    tail: list[str] = []
    for line in process.stdout:
        tail = [*tail[-19:], line.rstrip()]
        log(line.rstrip())
    if process.wait() != 0:
        raise BridgeError(
            f"{command[0]} failed (exit {process.returncode}):\n" + "\n".join(tail), bridge="swe"
        )


def build_image(
    tag: str = IMAGE,
    *,
    mirror: str | None = None,
    force: bool = False,
    workdir: str | None = None,
    log: Callable[[str], None] = lambda line: None,
) -> BuildReport:
    """Builds the image ``tag`` unless the engine already has it.

    Args:
        tag: The image tag.
        mirror: The Debian mirror (default: :func:`debian_mirror`).
        force: Build even when the tag exists (the new image takes the tag).
        workdir: Where the temporary root filesystem goes (default: the system's temp folder).
        log: Receives progress lines.

    Returns:
        What was done, with the build time and the image size.

    Raises:
        DependencyNotInstalled: If the ``docker`` package is missing.
        BridgeError: If no engine answers, the build needs root or ``debootstrap``, or a step fails.
    """
    client = docker_client(timeout=600)
    if image_exists(client, tag) and not force:
        return BuildReport(tag, False, 0.0, int(client.images.get(tag).attrs.get("Size") or 0))
    if os.geteuid() != 0:
        raise BridgeError("building the image needs root (debootstrap and tar)", bridge="swe")
    if shutil.which("debootstrap") is None:
        raise BridgeError(
            "debootstrap is not installed; install it with `apt-get install -y debootstrap`",
            bridge="swe",
        )
    repository, _, version = tag.rpartition(":")
    if not repository or "/" in version:
        repository, version = tag, "latest"
    source = mirror or debian_mirror()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="envharness-swe-image-", dir=workdir) as scratch:
        rootfs = os.path.join(scratch, "rootfs")
        _run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(PACKAGES)}",
                SUITE,
                rootfs,
                source,
            ],
            log,
        )
        for pruned in _PRUNED:
            path = os.path.join(rootfs, pruned)
            shutil.rmtree(path, ignore_errors=True)
            os.makedirs(path, exist_ok=True)
        os.makedirs(os.path.join(rootfs, "var/lib/apt/lists/partial"), exist_ok=True)
        os.makedirs(os.path.join(rootfs, "workspace"), exist_ok=True)
        archive = os.path.join(scratch, "rootfs.tar")
        _run(["tar", "--numeric-owner", "-C", rootfs, "-cf", archive, "."], log)
        log(f"importing {archive} as {tag}")
        try:
            client.api.import_image_from_file(
                archive, repository=repository, tag=version, changes=list(_CHANGES)
            )
        except Exception as e:
            raise BridgeError(f"docker import failed: {type(e).__name__}: {e}", bridge="swe") from e
    seconds = time.monotonic() - started
    size = int(client.images.get(tag).attrs.get("Size") or 0)
    return BuildReport(tag, True, seconds, size)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: ``build|status [--tag T] [--mirror URL] [--force] [--quiet]``."""
    parser = argparse.ArgumentParser(
        prog="python -m envharness.bridges.swe.image", description=__doc__.split("\n")[0]
    )
    parser.add_argument("command", choices=("build", "status"))
    parser.add_argument("--tag", default=IMAGE, help=f"the image tag (default {IMAGE})")
    parser.add_argument("--mirror", default=None, help="the Debian mirror (default: apt's)")
    parser.add_argument("--force", action="store_true", help="rebuild even if the tag exists")
    parser.add_argument("--quiet", action="store_true", help="print only the result")
    args = parser.parse_args(argv)
    try:
        if args.command == "status":
            client = docker_client()
            if not image_exists(client, args.tag):
                print(f"{args.tag} is not built; run: python -m envharness.bridges.swe.image build")
                return 1
            size = int(client.images.get(args.tag).attrs.get("Size") or 0)
            print(f"{args.tag} is built ({size / 2**20:.0f} MiB)")
            return 0
        log = (lambda line: None) if args.quiet else (lambda line: print(line, flush=True))
        print(build_image(args.tag, mirror=args.mirror, force=args.force, log=log))
        return 0
    except (BridgeError, DependencyNotInstalled) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover - the command line
    sys.exit(main())
