"""Runs a SpreadsheetBench solution program on one test case, never in the host process.

A solution program is Python source that uses openpyxl: it finds the variables ``input_path``
(the test case's input workbook) and ``output_path`` (where to save the result) defined, reads
the first and saves the second, as SpreadsheetBench's solutions do::

    import openpyxl
    wb = openpyxl.load_workbook(input_path)
    wb["Sheet1"]["E1"] = 42
    wb.save(output_path)

The rules sandbox (:mod:`envharness.sandbox`) cannot serve these programs as it stands: its
import allow-list has no openpyxl and its children may neither read a workbook outside the
Python installation nor write any file (``RLIMIT_FSIZE=0``). So each run is its own process,
``python -I _runner.py``, started with only ``PATH`` in its environment, in a new session, and
locked down with the sandbox's kernel primitives (``envharness/sandbox/kernel.py``) before the
program is read in: rlimits (address space = start size + ``memory_mb``, CPU seconds, output
file size, 64 open files, no core dumps, no new processes), all capabilities dropped,
``no_new_privs``, Landlock (read beneath the Python installation and the folder holding a copy
of the input; create and write files only in a fresh output folder; nothing else), and the
sandbox's seccomp deny-list (no fork/exec/threads, sockets, signals to other processes,
ptrace, mounts, namespaces, chmod ...). The program gets restricted builtins (no ``eval``,
``exec``, ``compile``, ``input`` ...) and an import allow-list (:data:`ALLOWED_IMPORTS`), as a
first line of defence; the kernel layers are the wall. The host enforces a wall-clock timeout
(killing the process group), reads at most the last :data:`LOG_TAIL` characters of output, and
records what protections were measured in force (:attr:`ProgramRun.protections`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envharness.bridges.spreadsheet.bench._runner import ALLOWED_IMPORTS
from envharness.errors import BridgeError

__all__ = ["ALLOWED_IMPORTS", "LOG_TAIL", "ProgramLimits", "ProgramRun", "run_program"]

LOG_TAIL = 2000
"""How many characters of the program's output (stdout and stderr) a run keeps."""

_RUNNER = Path(__file__).with_name("_runner.py")
_BRIDGE = "spreadsheet"


@dataclass(frozen=True)
class ProgramLimits:
    """Limits of one program run.

    Attributes:
        wall_seconds: Wall-clock time before the process group is killed.
        cpu_seconds: ``RLIMIT_CPU``.
        memory_mb: ``RLIMIT_AS`` above the process's size when it locks down.
        max_output_bytes: ``RLIMIT_FSIZE``: the largest file (output workbook, log) it may write.
        max_code_chars: The longest program accepted.
    """

    wall_seconds: float = 60.0
    cpu_seconds: int = 60
    memory_mb: int = 2048
    max_output_bytes: int = 64 << 20
    max_code_chars: int = 2_000_000


@dataclass
class ProgramRun:
    """What one run of a program on one input did.

    Attributes:
        ok: The program ran to the end and saved a workbook at ``output_path``.
        output: The saved workbook (inside ``folder``), or ``None``.
        error: Why it failed (exit status, timeout, no output), or ``None``.
        log: The tail of its stdout and stderr.
        seconds: Wall-clock time of the run.
        protections: The lock-down layers measured in force in the child.
        folder: The run's temporary folder (remove it with :meth:`cleanup`).
    """

    ok: bool
    output: Path | None
    error: str | None
    log: str
    seconds: float
    protections: dict[str, Any] = field(default_factory=dict)
    folder: Path | None = None

    def cleanup(self) -> None:
        """Removes the run's temporary folder."""
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
            self.output = None


def check_code(code: object, limits: ProgramLimits) -> str | None:
    """Why ``code`` is not a program to run (not text, too long, a syntax error), or ``None``."""
    if not isinstance(code, str) or not code.strip():
        return "the program must be non-empty Python source text"
    if len(code) > limits.max_code_chars:
        return f"the program has {len(code)} characters; at most {limits.max_code_chars}"
    try:
        compile(code, "<solution>", "exec", dont_inherit=True, flags=0x400)  # PyCF_ONLY_AST
    except (SyntaxError, ValueError) as e:
        return f"the program does not parse: {type(e).__name__}: {e}"
    return None


def _tail(path: Path) -> str:
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 4 * LOG_TAIL))
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return text[-LOG_TAIL:]


class _Started:
    """A program process started on one input, not yet waited for."""

    def __init__(self, code: str, input_file: Path, limits: ProgramLimits) -> None:
        self.limits = limits
        self.folder = Path(tempfile.mkdtemp(prefix="envharness-program-"))
        inputs, outputs = self.folder / "in", self.folder / "out"
        inputs.mkdir()
        outputs.mkdir()
        self.input = inputs / input_file.name
        shutil.copyfile(input_file, self.input)
        self.output = outputs / f"output{input_file.suffix or '.xlsx'}"
        self.log_path = self.folder / "log.txt"
        status_read, status_write = os.pipe()
        config = {
            "input_path": str(self.input),
            "output_path": str(self.output),
            "input_dir": str(inputs),
            "output_dir": str(outputs),
            "status_fd": status_write,
            "cpu_seconds": limits.cpu_seconds,
            "memory_mb": limits.memory_mb,
            "max_output_bytes": limits.max_output_bytes,
        }
        env = {"PATH": os.environ.get("PATH", os.defpath), "PYTHONHASHSEED": "0"}
        self.start = time.perf_counter()
        self.status = status_read
        try:
            with self.log_path.open("wb") as log:
                self.process = subprocess.Popen(
                    [sys.executable, "-I", str(_RUNNER), json.dumps(config)],
                    stdin=subprocess.PIPE,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    pass_fds=(status_write,),
                    env=env,
                    cwd=str(outputs),
                    start_new_session=True,
                )
        except OSError as e:
            os.close(status_read)
            shutil.rmtree(self.folder, ignore_errors=True)
            raise BridgeError(f"cannot start a solution program: {e}", bridge=_BRIDGE) from e
        finally:
            os.close(status_write)
        self.code = code.encode("utf-8")

    def _kill(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def finish(self) -> ProgramRun:
        deadline = self.start + self.limits.wall_seconds
        error = None
        try:
            self.process.communicate(self.code, timeout=max(0.1, deadline - time.perf_counter()))
        except subprocess.TimeoutExpired:
            self._kill()
            self.process.wait()
            error = f"the program ran past its {self.limits.wall_seconds:g} s limit and was killed"
        except BrokenPipeError:
            self.process.wait()
        self._kill()  # anything left in its session
        seconds = time.perf_counter() - self.start
        with os.fdopen(self.status, "rb") as status:
            report = status.read(1 << 16)
        try:
            message = json.loads(report) if report else {}
        except ValueError:
            message = {}
        log = _tail(self.log_path)
        code = self.process.returncode
        if error is None and "setup_failed" in message:
            error = f"the program's process could not lock down: {message['setup_failed']}"
        elif error is None and code != 0:
            if code is not None and code < 0:
                try:
                    how = f"killed by {signal.Signals(-code).name}"
                except ValueError:
                    how = f"killed by signal {-code}"
            else:
                how = f"exited with status {code}"
            last = log.strip().splitlines()[-1:] or ["(no output)"]
            error = f"the program {how}: {last[0]}"
        elif error is None and not self.output.is_file():
            error = f"the program ended without saving a workbook to output_path ({self.output})"
        ok = error is None
        return ProgramRun(
            ok,
            self.output if ok else None,
            error,
            log,
            seconds,
            dict(message.get("protections", {})),
            self.folder,
        )


def run_programs(
    code: str, inputs: list[Path], limits: ProgramLimits | None = None
) -> list[ProgramRun]:
    """Runs ``code`` on each input workbook, all at once, each in its own locked-down process.

    Returns:
        One :class:`ProgramRun` per input, in order; call ``cleanup()`` on each when done.

    Raises:
        BridgeError: If ``code`` is not a program (see :func:`check_code`) or a process cannot
            be started.
    """
    limits = limits or ProgramLimits()
    problem = check_code(code, limits)
    if problem is not None:
        raise BridgeError(problem, bridge=_BRIDGE)
    started: list[_Started] = []
    try:
        for path in inputs:
            started.append(_Started(code, Path(path), limits))
        return [run.finish() for run in started]
    except BaseException:
        for run in started:
            run._kill()
            shutil.rmtree(run.folder, ignore_errors=True)
        raise


def run_program(code: str, input_file: Path, limits: ProgramLimits | None = None) -> ProgramRun:
    """Runs ``code`` on one input workbook (see :func:`run_programs`)."""
    return run_programs(code, [input_file], limits)[0]
