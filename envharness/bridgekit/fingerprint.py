"""Task fingerprints: one SHA-256 over everything a task's verifier reads.

A bridge's :meth:`~envharness.core.ActionableEnv.task_fingerprint` is
:func:`task_fingerprint` of two parts: the task *record* (a JSON value: the fields of the task the
verifier compares against, such as reference answers or test ids) and the *files* the verifier
depends on (an expected workbook, hidden tests, a game file), each named by a stable name, never
an absolute path, so that where the data lies (a cache folder, a copy of the data) does not
change it. The digest is::

    sha256(canonical_json({"files": {name: sha256(data).hexdigest(), ...}, "task": record}))

with :func:`canonical_json` (sorted keys, no spaces). A spec records the fingerprint and
:meth:`~envharness.harness.spec.HarnessSpec.build` refuses a bridge whose task data differ.

Example:
    >>> task_fingerprint({"id": "t1", "answers": ["Ada"]}) == task_fingerprint(
    ...     {"answers": ["Ada"], "id": "t1"})
    True
    >>> len(task_fingerprint({"id": "t1"}, {"expected.xlsx": b"..."}))
    64
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from envharness.errors import BridgeError

__all__ = ["cached_fingerprint", "canonical_json", "read_bytes", "task_fingerprint"]

_ATTRIBUTE = "_envharness_task_fingerprint"


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON: sorted keys, ``(",", ":")`` separators."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def task_fingerprint(record: Any, files: Mapping[str, bytes] | None = None) -> str:
    """The hex SHA-256 of a task record and the files its verifier reads.

    Args:
        record: The task record (JSON-able).
        files: Stable file name -> the file's bytes.

    Returns:
        64 lowercase hex digits.
    """
    digests = {name: hashlib.sha256(data).hexdigest() for name, data in (files or {}).items()}
    body = canonical_json({"files": digests, "task": record})
    return hashlib.sha256(body.encode()).hexdigest()


def read_bytes(path: Path, what: str, *, bridge: str) -> bytes:
    """The bytes of ``path``, a file a verifier reads.

    Raises:
        BridgeError: If it cannot be read, naming ``what`` it is.
    """
    try:
        return path.read_bytes()
    except OSError as e:
        raise BridgeError(
            f"cannot read {what} {path} to fingerprint the task: {e}", bridge=bridge
        ) from e


def cached_fingerprint(env: object, compute: Callable[[], str]) -> str:
    """``compute()``, computed once per env instance and remembered on it."""
    value = env.__dict__.get(_ATTRIBUTE)
    if value is None:
        value = compute()
        env.__dict__[_ATTRIBUTE] = value
    return value
