"""A hostile corpus: each snippet attacks the sandbox and must end in a precise, contained outcome.

Most snippets bypass the static check and get the real builtins (test seams of ``RulesSandbox``),
to prove that the kernel walls (seccomp, Landlock, rlimits) hold even when the lint and the
restricted builtins are fooled; ``lint`` records what the static check says about the same code.
The last test checks that the host came out of the whole corpus unharmed.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field

import pytest
from sandbox_helpers import (
    FAST,
    call,
    children,
    hostile,
    open_fds,
    process_exists,
    rss_mb,
    rules,
    wait_until,
)

from envharness.errors import RulesError
from envharness.sandbox import (
    RulesSandbox,
    SandboxLimits,
    check_rules_code,
    kernel_protections,
    template,
)

MARKER = f"/tmp/envharness-sandbox-escape-{os.getpid()}"
SLOW = SandboxLimits(call_timeout=5.0)
LINT = r"is not allowed|is not available|reaches"  # the lint's wording for a forbidden reach


@dataclass(frozen=True)
class Case:
    """One attack: the code, the hook to call, and the one outcome that counts as contained."""

    id: str
    code: str
    hook: str = "filter_observation"
    raises: str | None = None  # regex the RulesError must match
    returns: object = None  # the value the hook must return (or a predicate on it)
    error_hook: str | None = "same"  # RulesError.hook; "same" means the hook called
    lint: str | None = LINT  # regex of the static check's verdict; None: the lint passes it
    trusted: bool = True  # real builtins (test seam)
    limits: SandboxLimits = FAST
    calls: int = 1  # call repeatedly until the outcome (episode CPU limit)
    at_start: bool = False  # the outcome comes from start_episode (loading the code)
    extra: dict = field(default_factory=dict)

    @property
    def needs(self) -> str | None:
        """The kernel layer this outcome depends on: EPERM is seccomp's, EACCES Landlock's."""
        expected = f"{self.raises} {self.returns!r}".replace("\\", "")
        if "Errno 1]" in expected or "(-1, 1)" in expected or self.id in SECCOMP_CASES:
            return "seccomp"
        if "Errno 13]" in expected:
            return "landlock"
        return None


SECCOMP_CASES = {"os-system", "subclasses-walk-to-os-system", "thread"}


def obs(body: str, imports: str = "") -> str:
    return rules("filter_observation", body, imports=imports)


FORGE = "import os, struct\n"

CASES = [
    # -- time --------------------------------------------------------------------------------------
    Case("infinite-loop", obs("while True:\n    pass"), raises=r"timed out after 0\.3s", lint=None),
    Case("sleep-forever", obs("time.sleep(1e9)", "import time"), raises=r"timed out after 0\.3s"),
    Case(
        "ignore-sigterm-then-hang",
        obs(
            "for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):\n"
            "    signal.signal(sig, signal.SIG_IGN)\nwhile True:\n    pass",
            "import signal",
        ),
        raises=r"timed out after 0\.3s; the sandbox process was killed",
    ),
    Case(
        "episode-cpu-limit",
        obs(
            "t = time.process_time()\nwhile time.process_time() - t < 0.4:\n    pass\nreturn 'ok'",
            "import time",
        ),
        raises=r"died \(killed by SIGXCPU: the episode CPU limit of 1s was reached\)",
        limits=SandboxLimits(call_timeout=3.0, episode_cpu_seconds=1),
        calls=8,
    ),
    Case(
        "sleep-just-under-the-timeout-every-call",
        obs("time.sleep(0.25)\nreturn 'slow'", "import time"),
        raises=r"used up the episode's wall-clock budget for hooks \(1s, "
        r"SandboxLimits.episode_wall_seconds\)",
        limits=SandboxLimits(call_timeout=0.3, episode_wall_seconds=1.0),
        calls=8,
    ),
    Case(
        "slow-but-legal-20ms",
        obs(
            "t = time.perf_counter()\nwhile time.perf_counter() - t < 0.02:\n    pass\n"
            "return 'done'",
            "import time",
        ),
        returns="done",
    ),
    # -- memory and recursion ----------------------------------------------------------------------
    Case(
        "memory-bomb",
        obs("return str(len(bytearray(8 << 30)))"),
        raises=r"raised MemoryError",
        lint=None,
    ),
    Case(
        "memory-creep",
        obs("chunks = []\nwhile True:\n    chunks.append(' ' * (1 << 20))"),
        raises=r"raised MemoryError",
        lint=None,
        limits=SLOW,
    ),
    Case(
        "deep-recursion",
        obs("return self.filter_observation(observation, state)"),
        raises=r"raised RecursionError",
        lint=None,
    ),
    Case(
        "c-level-recursion",
        obs(
            "sys.setrecursionlimit(10**8)\nnested = []\nfor _ in range(10**6):\n"
            "    nested = [nested]\nreturn json.dumps(nested)",
            "import sys, json",
        ),
        raises=r"sandbox process died \(killed by SIGSEGV",
        limits=SLOW,
    ),
    # -- processes and threads ---------------------------------------------------------------------
    Case(
        "fork-bomb",
        obs("while True:\n    os.fork()", "import os"),
        raises=r"raised PermissionError: \[Errno 1\] Operation not permitted",
    ),
    Case(
        "thread",
        obs("threading.Thread(target=print).start()\nreturn 'started'", "import threading"),
        raises=r"raised RuntimeError: can't start new thread",
    ),
    Case(
        "subprocess",
        obs(
            "return subprocess.run(['id'], capture_output=True).stdout.decode()",
            "import subprocess",
        ),
        raises=r"raised PermissionError: \[Errno 1\]",
    ),
    Case(
        "posixsubprocess-fork-exec",
        obs(
            "r, w = os.pipe()\n_posixsubprocess.fork_exec([b'/bin/true'], [b'/bin/true'], True,"
            " (w,), None, None, -1, -1, -1, -1, -1, -1, r, w, True, False, -1, None, None, None,"
            " -1, None, False)\nreturn 'spawned'",
            "import os, _posixsubprocess",
        ),
        raises=r"raised PermissionError: \[Errno 1\]",
    ),
    Case(
        "posix-spawn",
        obs("return str(os.posix_spawn('/bin/true', ['true'], {}))", "import os"),
        raises=r"raised PermissionError: \[Errno 1\]",
    ),
    Case(
        "os-system",
        obs(f"return str(os.system('touch {MARKER}'))", "import os"),
        returns=lambda status: status != "0",
        extra={"absent": MARKER},
    ),
    Case(
        "kill-the-template",
        obs("os.kill(os.getppid(), signal.SIGKILL)\nreturn 'killed'", "import os, signal"),
        raises=r"raised PermissionError: \[Errno 1\]",
        extra={"template_survives": True},
    ),
    Case(
        "setsid",
        obs("os.setsid()\nreturn 'new session'", "import os"),
        raises=r"raised PermissionError: \[Errno 1\]",
    ),
    Case(
        "unshare-namespaces",
        obs(
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "return str((libc.unshare(0x10000000 | 0x20000000), ctypes.get_errno()))",
            "import ctypes",
        ),
        returns="(-1, 1)",
    ),
    Case(
        "ptrace-the-template",
        obs(
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "return str((libc.ptrace(16, os.getppid(), 0, 0), ctypes.get_errno()))",
            "import ctypes, os",
        ),
        returns="(-1, 1)",
    ),
    Case(
        "probe-host-pids-with-getpgid",
        obs("return str(os.getpgid(1))", "import os"),
        raises=r"raised PermissionError: \[Errno 1\]",
    ),
    Case(
        "probe-host-pids-with-getsid",
        obs("return str(os.getsid(1))", "import os"),
        raises=r"raised PermissionError: \[Errno 1\]",
    ),
    Case(
        "read-another-process-limits",
        obs(
            "return str(resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE))",
            "import os, resource",
        ),
        raises=r"raised PermissionError: \[Errno 1\]",
    ),
    Case(
        "read-own-limits-is-fine",
        obs(
            "return str(resource.getrlimit(resource.RLIMIT_NOFILE)[0] > 0)",
            "import resource",
        ),
        returns="True",
        lint=r".",
    ),
    Case(
        "another-process-affinity",
        obs("return str(sorted(os.sched_getaffinity(1)))", "import os"),
        raises=r"raised PermissionError: \[Errno 1\]",
    ),
    Case(
        "list-the-host-mounts",
        obs(
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "req = (ctypes.c_uint64 * 4)(32, 0, 0, 0)\n"
            "ids = (ctypes.c_uint64 * 64)()\n"
            "n = libc.syscall(458, ctypes.byref(req), ids, 64, 0)\n"
            "return str((n, ctypes.get_errno()))",
            "import ctypes",
        ),
        returns="(-1, 1)",
    ),
    Case(
        "raise-own-limits",
        obs(
            "resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY,) * 2)\n"
            "return 'unlimited'",
            "import resource",
        ),
        raises=r"raised ValueError: not allowed to raise maximum limit",
    ),
    # -- exits -------------------------------------------------------------------------------------
    Case("os-exit", obs("os._exit(0)", "import os"), raises=r"died \(exited with code 0\)"),
    Case("sys-exit", obs("sys.exit(3)", "import sys"), raises=r"raised SystemExit: 3"),
    Case(
        "raise-in-filter-action",
        rules("filter_action", "raise ValueError('no moves')"),
        hook="filter_action",
        raises=r"hook 'filter_action' failed: raised ValueError: no moves",
        lint=None,
    ),
    Case(
        "raise-in-modify-transition",
        rules("modify_transition", "raise KeyError('gone')"),
        hook="modify_transition",
        raises=r"hook 'modify_transition' failed: raised KeyError: 'gone'",
        lint=None,
    ),
    Case(
        "raise-in-filter-observation",
        obs("raise LookupError('nothing to see')"),
        raises=r"hook 'filter_observation' failed: raised LookupError: nothing to see",
        lint=None,
    ),
    Case(
        "raise-hostile-exception",
        obs(
            "class Nasty(Exception):\n    def __str__(self):\n        raise RuntimeError\n"
            "raise Nasty()"
        ),
        raises=r"raised Nasty: <unprintable>",
        lint=None,
    ),
    # -- files, environment, network ---------------------------------------------------------------
    Case(
        "write-a-file",
        obs(f"open({MARKER!r}, 'w').write('x')\nreturn 'written'"),
        raises=r"raised PermissionError: \[Errno 13\] Permission denied",
        extra={"absent": MARKER},
    ),
    Case(
        "overwrite-the-stdlib",
        obs("open(os.__file__, 'a').write('import this')\nreturn 'patched'", "import os"),
        raises=r"raised PermissionError: \[Errno 13\] Permission denied: '/.*os\.py'",
    ),
    Case(
        "truncate-the-stdlib",
        obs("os.truncate(json.__file__, 0)\nreturn 'truncated'", "import os, json"),
        raises=r"raised PermissionError: \[Errno 13\]",
    ),
    Case(
        "xattr-on-the-stdlib",
        obs("os.setxattr(os.__file__, 'user.note', b'x')\nreturn 'tagged'", "import os"),
        raises=r"raised PermissionError: \[Errno 1\]",
    ),
    Case(
        "read-etc-shadow",
        obs("return open('/etc/shadow').read()"),
        raises=r"raised PermissionError: \[Errno 13\] Permission denied: '/etc/shadow'",
    ),
    Case(
        "list-root",
        obs("return str(os.listdir('/'))", "import os"),
        raises=r"raised PermissionError: \[Errno 13\]",
    ),
    Case(
        "read-parent-environ",
        obs("return open(f'/proc/{os.getppid()}/environ').read()", "import os"),
        raises=r"raised PermissionError: \[Errno 13\]",
    ),
    Case(
        "chmod-etc-shadow",
        obs("os.chmod('/etc/shadow', 0o777)\nreturn 'chmod'", "import os"),
        raises=r"raised PermissionError: \[Errno 1\]",
    ),
    Case("environment", obs("return str(sorted(os.environ))", "import os"), returns="['PATH']"),
    Case(
        "socket-connect",
        obs("socket.socket().connect(('127.0.0.1', 80))\nreturn 'connected'", "import socket"),
        raises=r"raised PermissionError: \[Errno 1\]",
    ),
    # -- output and replies ------------------------------------------------------------------------
    Case(
        "huge-print", obs("print('x' * (50 << 20))\nreturn 'printed'"), returns="printed", lint=None
    ),
    Case(
        "huge-return",
        obs("return 'x' * (50 << 20)"),
        raises=r"returned a value whose JSON is at least 52428800 bytes, over the cap",
        lint=None,
    ),
    Case(
        "return-object",
        obs("return object()"),
        raises=r"returned object, expected a str; not JSON-serializable",
        lint=None,
    ),
    Case(
        "return-bytes", obs("return b'bytes'"), raises=r"returned bytes, expected a str", lint=None
    ),
    Case("return-int", obs("return 42"), raises=r"returned int, expected a str$", lint=None),
    Case(
        "modify-transition-returns-none",
        rules("modify_transition", "pass"),
        hook="modify_transition",
        raises=r"hook 'modify_transition' failed: returned NoneType, expected a str",
        lint=None,
    ),
    Case(
        "nan-in-action-args",
        rules("filter_action", "return {'tool': 'move', 'args': {'x': float('nan')}}"),
        hook="filter_action",
        raises=r"not JSON-serializable \(ValueError: Out of range float values",
        lint=None,
    ),
    Case(
        "action-with-extra-keys",
        rules("filter_action", "return dict(action, reward=1.0)"),
        hook="filter_action",
        raises=r"returned a dict with keys \['args', 'reward', 'tool'\], expected an action dict",
        lint=None,
    ),
    Case(
        "action-with-bad-types",
        rules("filter_action", "return {'tool': 7, 'args': []}"),
        hook="filter_action",
        raises=r"expected an action dict \{'tool': str, 'args': dict\} or a str",
        lint=None,
    ),
    # -- the protocol ------------------------------------------------------------------------------
    Case(
        "close-the-pipes",
        obs("os.close(3)\nos.close(4)\nreturn 'closed'", "import os"),
        raises=r"sandbox process died",
    ),
    Case(
        "close-the-pipes-then-hang",
        obs("os.close(3)\nos.close(4)\nwhile True:\n    pass", "import os"),
        raises=r"sandbox process died \(it closed its channel and was killed\)",
    ),
    Case(
        "forge-sequence-number",
        obs("os.write(4, struct.pack('>II', 2, 999) + b'{}')\nreturn 'forged'", FORGE),
        raises=r"broke the protocol \(the reply carries seq 999, expected 1\)",
    ),
    Case(
        "forge-huge-header",
        obs("os.write(4, struct.pack('>II', 1 << 31, 1))\nwhile True:\n    pass", FORGE),
        raises=r"sent a reply of 2147483648 bytes, over max_message_bytes=4194304",
    ),
    Case(
        "forge-nan-reply",
        obs(
            "body = b'{\"ok\":NaN}'\nos.write(4, struct.pack('>II', len(body), 1) + body)\n"
            "while True:\n    pass",
            FORGE,
        ),
        raises=r"broke the protocol \(the body is not strict JSON \(NaN is not allowed\)\)",
    ),
    Case(
        "forge-extra-frame",
        obs(
            "body = b'{\"ok\":\"forged\"}'\nos.write(4, struct.pack('>II', len(body), 1) + body)\n"
            "return 'real'",
            FORGE,
        ),
        raises=r"broke the protocol \(\d+ unexpected bytes after the reply\)|"
        r"broke the protocol \(the reply carries seq 1, expected 2\)",
        calls=2,
    ),
    Case(
        "forge-an-unhashable-hook-name",
        obs(
            'body = b\'{"hook":{"x":1},"raised":"Boom"}\'\n'
            "os.write(4, struct.pack('>II', len(body), 1) + body)\nwhile True:\n    pass",
            FORGE,
        ),
        raises=r"hook 'filter_observation' failed: raised Boom",
    ),
    Case(
        "forge-a-ready-frame-with-bad-hooks",
        rules(
            "filter_observation",
            "return observation",
            imports=FORGE + 'body = b\'{"ready":{"hooks":[[1]],"protections":5}}\'\n'
            "os.write(4, struct.pack('>II', len(body), 0) + body)",
        ),
        raises=r"broke the protocol while loading the code",
        at_start=True,
        error_hook=None,
    ),
    # -- walking around the lint and the builtins --------------------------------------------------
    Case(
        "subclasses-walk-to-os-system",
        obs(
            "for cls in ().__class__.__base__.__subclasses__():\n"
            "    if cls.__name__ == '_wrap_close':\n"
            f"        return str(cls.__init__.__globals__['system']('touch {MARKER}'))\n"
            "return 'not found'"
        ),
        returns=lambda status: status not in ("0", "not found"),
        trusted=False,
        lint=r"`\.__subclasses__` reaches interpreter internals",
        extra={"absent": MARKER},
    ),
    Case(
        "module-attribute-to-os-fork",
        obs("return str(typing.sys.modules['os'].fork())", "import typing"),
        raises=r"raised PermissionError: \[Errno 1\]",
        trusted=False,
        lint=r"attribute `\.sys` reaches the module `sys`",
    ),
    Case(
        "gc-walk-disables-the-policy",
        obs(
            "for obj in gc.get_objects():\n"
            "    if type(obj).__name__ in ('_Layers', 'SeccompFilter'):\n"
            "        obj.__dict__.clear()\n"
            "return str(os.fork())",
            "import gc, os",
        ),
        raises=r"raised PermissionError: \[Errno 1\]",
    ),
    Case(
        "restricted-import",
        obs("return str(__import__('os').getpid())"),
        raises=r"raised ImportError: import of 'os' is not allowed in rules code",
        trusted=False,
        lint=r"name `__import__` is not available",
    ),
    Case(
        "restricted-open",
        obs("return open('/etc/hostname').read()"),
        raises=r"raised NameError: name 'open' is not defined",
        trusted=False,
        lint=r"builtin `open` is not available",
    ),
    Case(
        "restricted-eval",
        obs("return eval('6 * 7')"),
        raises=r"raised NameError: name 'eval' is not defined",
        trusted=False,
        lint=r"builtin `eval` is not available",
    ),
    # -- loading the code --------------------------------------------------------------------------
    Case(
        "module-level-loop",
        "while True:\n    pass\nclass _Rules:\n    pass\n",
        at_start=True,
        raises=r"loading the code timed out after 2\.3s",
        error_hook=None,
        lint=None,
    ),
    Case(
        "module-level-exit",
        "import os\nos._exit(5)\n",
        at_start=True,
        raises=r"sandbox process died \(exited with code 5\) while loading the code",
        error_hook=None,
    ),
    Case(
        "no-rules-class",
        "x = 1\n",
        at_start=True,
        raises=r"loading the code raised TypeError: the code defines no class _Rules",
        error_hook=None,
        lint=r"defines no top-level `class _Rules`",
    ),
    Case(
        "init-raises",
        "class _Rules:\n    def __init__(self):\n        raise OSError('no')\n",
        at_start=True,
        raises=r"loading the code raised OSError: no",
        error_hook=None,
        lint=None,
    ),
]


def _ids() -> list[str]:
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids)) and len(ids) >= 25
    return ids


_BASELINE: dict[str, object] = {}


def test_baseline_before_the_corpus(template_pid):
    # Warm up (the template, the modules, one episode) so that the baseline is steady.
    with RulesSandbox(obs("return observation")).start_episode() as session:
        call(session, "filter_observation")
    _BASELINE.update(fds=open_fds(), rss=rss_mb(), template=template_pid)


@pytest.mark.parametrize("case", CASES, ids=_ids())
def test_static_check_verdict(case):
    if case.lint is None:
        check_rules_code(case.code)
    else:
        with pytest.raises(RulesError, match=case.lint):
            check_rules_code(case.code)


@pytest.fixture(scope="module")
def protections() -> dict:
    return kernel_protections()


@pytest.mark.parametrize("case", CASES, ids=_ids())
def test_contained(case, protections):
    if case.needs == "seccomp" and not protections["seccomp"]:
        pytest.skip("seccomp is not available on this machine (see kernel_protections())")
    if case.needs == "landlock" and not protections["landlock_abi"]:
        pytest.skip("Landlock is not available on this machine (see kernel_protections())")
    sandbox = hostile(case.code, trusted=case.trusted, limits=case.limits)
    template_before = template.get_template().pid
    if case.at_start:
        started = time.monotonic()
        with pytest.raises(RulesError, match=case.raises) as caught:
            sandbox.start_episode()
        assert caught.value.hook is None
        assert time.monotonic() - started < case.limits.call_timeout + 3
        return
    session = sandbox.start_episode()
    pid = session._pid
    try:
        if case.raises is None:
            got = call(session, case.hook)
            expected = case.returns
            assert expected(got) if callable(expected) else got == expected, got
            assert session.alive
        else:
            started = time.monotonic()
            with pytest.raises(RulesError, match=case.raises) as caught:
                for _ in range(case.calls):
                    call(session, case.hook)
            elapsed = time.monotonic() - started
            assert elapsed < case.calls * case.limits.call_timeout + 1.0
            hook = case.hook if case.error_hook == "same" else case.error_hook
            assert caught.value.hook == hook
            assert not session.alive
            with pytest.raises(RulesError, match="ended after an earlier failure"):
                call(session, case.hook)
    finally:
        session.close()
    assert wait_until(lambda: not process_exists(pid)), "the child was not reaped"
    if "absent" in case.extra:
        assert not os.path.exists(case.extra["absent"])
    if case.extra.get("template_survives"):
        assert template.get_template().pid == template_before
        assert template.get_template().alive


def _hook_of(code: str) -> str:
    return re.findall(r"def (filter_action|modify_transition|filter_observation)", code)[0]


def test_corpus_covers_the_hooks():
    assert {_hook_of(c.code) for c in CASES if not c.at_start} == {
        "filter_action",
        "modify_transition",
        "filter_observation",
    }


def test_host_is_unharmed_after_the_corpus():
    assert _BASELINE, "run the whole module: the baseline is taken by its first test"
    current = template.get_template()
    # A normal session still runs.
    with RulesSandbox(obs("return observation.upper()")).start_episode() as session:
        assert session.filter_observation("still here", {}) == "STILL HERE"
    # The template is the same process (the corpus never killed it) and has no children left.
    assert current.pid == _BASELINE["template"]
    assert wait_until(lambda: current.children() == [] and children(current.pid) == {})
    # No zombies among the host's children either, no leaked fds, no ballooning memory.
    assert "Z" not in children(os.getpid()).values()
    assert open_fds() == _BASELINE["fds"]
    assert rss_mb() - _BASELINE["rss"] < 64
    assert not os.path.exists(MARKER)
