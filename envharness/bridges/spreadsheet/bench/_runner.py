"""The child process that runs one SpreadsheetBench solution program, locked down first.

Started by :mod:`~envharness.bridges.spreadsheet.bench.program` as
``python -I _runner.py <config JSON>`` with the program's source on stdin, stdout and stderr on
a log file the host opened, and a status pipe. It imports nothing from envharness: the sandbox's
kernel layers (``envharness/sandbox/kernel.py``) are loaded by file path. In order: parent-death
signal; read the program; import openpyxl and the standard modules programs use; environment
reduced to ``PATH``; rlimits (address space, CPU, output file size, open files, no core, no new
processes); capabilities dropped; ``no_new_privs``; Landlock (read beneath the Python
installation and the input folder, write only in the output folder); seccomp (the sandbox's
deny-list: no processes, threads, sockets, signals to others, mounts ...); report what is in force
on the status pipe and close it; run the program with ``input_path`` and ``output_path`` defined,
restricted builtins and an import allow-list.
"""

from __future__ import annotations

import builtins
import ctypes
import json
import os
import resource
import signal
import sys
import traceback
import types
from importlib.machinery import SourceFileLoader

_HERE = os.path.dirname(os.path.abspath(__file__))
_SANDBOX = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(_HERE))), "sandbox")

ALLOWED_IMPORTS = frozenset(
    {
        "__future__", "bisect", "calendar", "collections", "copy", "dataclasses", "datetime",
        "decimal", "difflib", "enum", "fractions", "functools", "hashlib", "heapq", "itertools",
        "json", "math", "numbers", "openpyxl", "operator", "random", "re", "statistics",
        "string", "textwrap", "typing", "unicodedata",
    }
)  # fmt: skip
"""Top-level modules a solution program may import (imported before the lock-down)."""

REMOVED_BUILTINS = frozenset(
    {"breakpoint", "compile", "copyright", "credits", "eval", "exec", "exit", "globals", "help",
     "input", "license", "quit", "vars", "__loader__", "__spec__"}
)  # fmt: skip
"""Builtins a program does not get (``open`` stays: Landlock decides what it may open)."""

# Landlock filesystem rights (the kernel's uapi numbering)
_WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 1, 1 << 2, 1 << 3
_REMOVE_DIR, _REMOVE_FILE, _MAKE_DIR, _MAKE_REG = 1 << 4, 1 << 5, 1 << 7, 1 << 8
_TRUNCATE = 1 << 14
_SYS_LANDLOCK_ADD_RULE = 445


def _load(name: str) -> types.ModuleType:
    path = os.path.join(_SANDBOX, f"{name}.py")
    fullname = f"_envharness_sandbox_{name}"
    module = types.ModuleType(fullname)
    module.__file__ = path
    SourceFileLoader(fullname, path).exec_module(module)
    return module


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _allow_writes(ruleset: int, folder: str, abi: int) -> None:
    """Adds a Landlock rule: create, write, truncate and remove files beneath ``folder``."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    rights = _WRITE_FILE | _READ_FILE | _READ_DIR | _REMOVE_DIR | _REMOVE_FILE | _MAKE_DIR
    rights |= _MAKE_REG | (_TRUNCATE if abi >= 3 else 0)
    parent = os.open(folder, os.O_PATH | os.O_CLOEXEC | os.O_DIRECTORY)
    try:
        rule = _PathBeneath(rights, parent)
        result = libc.syscall(
            ctypes.c_long(_SYS_LANDLOCK_ADD_RULE),
            ctypes.c_int(ruleset),
            ctypes.c_int(1),  # LANDLOCK_RULE_PATH_BENEATH
            ctypes.byref(rule),
            ctypes.c_uint32(0),
        )
        if result < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"landlock_add_rule({folder}): {os.strerror(err)}")
    finally:
        os.close(parent)


def _vm_size() -> int:
    with open("/proc/self/status", "rb") as f:
        for line in f:
            if line.startswith(b"VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _limit(which: int, value: int) -> None:
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def _rlimits(config: dict) -> None:
    _limit(resource.RLIMIT_AS, _vm_size() + (config["memory_mb"] << 20))
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    cpu = config["cpu_seconds"]
    resource.setrlimit(
        resource.RLIMIT_CPU, (cpu, cpu + 1 if hard == resource.RLIM_INFINITY else hard)
    )
    _limit(resource.RLIMIT_FSIZE, config["max_output_bytes"])
    _limit(resource.RLIMIT_NOFILE, 64)
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_NPROC, 0)


def _read_paths(input_dir: str) -> list[str]:
    paths = [sys.base_prefix, sys.prefix, sys.base_exec_prefix, sys.exec_prefix, input_dir]
    paths.append(os.path.dirname(os.__file__))
    paths.extend(p for p in sys.path if p)
    return [os.path.realpath(p) for p in paths]


def _lock_down(config: dict, kernel: types.ModuleType) -> dict:
    warnings = []
    seccomp_filter = None
    try:  # built before Landlock: libseccomp is loaded from /lib
        seccomp_filter = kernel.SeccompFilter()
    except OSError as e:
        warnings.append(f"seccomp is not available ({e})")
    path = os.environ.get("PATH", os.defpath)
    os.environ.clear()
    os.environ["PATH"] = path
    _rlimits(config)
    try:
        kernel.drop_capabilities()
    except OSError as e:
        warnings.append(f"could not drop capabilities ({e})")
    kernel.set_parent_death_signal(signal.SIGKILL)
    kernel.set_no_new_privs()
    no_new_privs = kernel.no_new_privs()
    abi = kernel.landlock_abi()
    if abi:
        ruleset = kernel.landlock_ruleset(_read_paths(config["input_dir"]), abi)
        _allow_writes(ruleset, config["output_dir"], abi)
        kernel.landlock_restrict(ruleset)
        os.close(ruleset)
    else:
        warnings.append("Landlock is not available: the program can read what this user can")
    seccomp = False
    if seccomp_filter is not None:
        seccomp_filter.load()
        seccomp = seccomp_filter.active()
    return {
        "seccomp": seccomp,
        "landlock_abi": abi if kernel.landlock_blocks_root() else 0,
        "no_new_privs": no_new_privs,
        "capabilities_dropped": kernel.capabilities_empty(),
        "rlimits": {
            "address_space_mb_over_start": config["memory_mb"],
            "cpu_seconds": config["cpu_seconds"],
            "max_output_bytes": config["max_output_bytes"],
            "processes": 0,
        },
        "warnings": warnings,
    }


def _guarded_import(real_import):
    listing = ", ".join(sorted(ALLOWED_IMPORTS))

    def guarded(name, globals=None, locals=None, fromlist=(), level=0):
        if level:
            raise ImportError("relative imports are not allowed in a solution program")
        if name.partition(".")[0] not in ALLOWED_IMPORTS:
            raise ImportError(f"import of {name!r} is not allowed here; allowed: {listing}")
        return real_import(name, globals, locals, fromlist, level)

    return guarded


def main() -> int:
    """Runs the program; exit code 0 when it ran to the end, 1 when it raised, 2 on set-up."""
    config = json.loads(sys.argv[1])
    status = config["status_fd"]
    kernel = _load("kernel")
    kernel.set_parent_death_signal(signal.SIGKILL)
    source = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    for name in sorted(ALLOWED_IMPORTS):
        __import__(name)
    import openpyxl.reader.excel  # noqa: F401  (what load_workbook and save need)
    import openpyxl.writer.excel  # noqa: F401

    os.chdir(config["output_dir"])
    try:
        protections = _lock_down(config, kernel)
    except BaseException as e:
        os.write(status, json.dumps({"setup_failed": f"{type(e).__name__}: {e}"}).encode())
        os.close(status)
        return 2
    os.write(status, json.dumps({"protections": protections}).encode())
    os.close(status)
    table = {k: v for k, v in vars(builtins).items() if k not in REMOVED_BUILTINS}
    table["__import__"] = _guarded_import(builtins.__import__)
    namespace = {
        "__name__": "__main__",
        "__builtins__": table,
        "input_path": config["input_path"],
        "output_path": config["output_path"],
    }
    try:
        code = compile(source, "<solution>", "exec", dont_inherit=True)
        exec(code, namespace)
    except SystemExit as e:
        if e.code in (None, 0):
            return 0
        traceback.print_exc()
        return 1
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.stdout.flush()
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
