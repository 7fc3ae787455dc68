"""The kernel layers that contain a sandbox child: rlimits, prctl, capabilities, Landlock, seccomp.

Everything here talks to the kernel through ``ctypes`` (glibc's ``syscall``/``prctl``/``capset``
and ``libseccomp.so.2``). The template process builds the Landlock ruleset and the seccomp filter
once; each forked child only applies them, which keeps an episode start cheap.

The seccomp filter allows by default and returns ``EPERM`` for the syscalls in
:data:`DENIED_SYSCALLS`: new processes and threads, program execution, sockets, signals to other
processes, namespaces and mounts, the privileged operations root could otherwise still perform,
metadata changes Landlock does not cover (chmod, chown, xattrs, timestamps) and shared IPC.
Landlock handles every filesystem right the kernel's ABI knows and allows only reading beneath
the Python installation; on ABI 4+ it also denies TCP bind/connect, on ABI 6+ it scopes signals
and abstract unix sockets to the sandbox.

This module is loaded by the sandbox worker by file path under ``python -I -S``: it must import
nothing from envharness.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import signal
from collections.abc import Iterable

__all__ = [
    "DENIED_SYSCALLS",
    "OTHER_PID_SYSCALLS",
    "SeccompFilter",
    "apply_rlimits",
    "capabilities_empty",
    "drop_capabilities",
    "landlock_abi",
    "landlock_blocks_root",
    "landlock_restrict",
    "landlock_ruleset",
    "no_new_privs",
    "set_no_new_privs",
    "set_parent_death_signal",
]

DENIED_SYSCALLS: tuple[str, ...] = (
    # new processes, threads, programs
    "fork", "vfork", "clone", "clone3", "execve", "execveat",
    # sockets and networking
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    "sendto", "sendmsg", "sendmmsg", "recvfrom", "recvmsg", "recvmmsg",
    # reaching other processes
    "kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
    "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "ptrace",
    "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp",
    "setpriority", "sched_setscheduler", "sched_setparam", "sched_setattr",
    "sched_setaffinity", "ioprio_set", "migrate_pages", "move_pages",
    # learning about other processes and the host (probing pids, listing mounts)
    "getpgid", "getsid", "listmount", "statmount",
    # undoing the set-up
    "setsid", "setpgid", "prctl", "seccomp", "setrlimit", "personality", "capset",
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid",
    "setgroups", "setfsuid", "setfsgid",
    # namespaces and mounts
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "open_tree_attr",
    "mount_setattr",
    # what root could otherwise still do
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "reboot", "swapon", "swapoff", "acct", "quotactl", "syslog", "sethostname",
    "setdomainname", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "iopl", "ioperm", "vhangup", "uselib",
    # kernel attack surface
    "bpf", "perf_event_open", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "userfaultfd", "keyctl", "add_key", "request_key", "memfd_create", "memfd_secret",
    "open_by_handle_at", "name_to_handle_at", "fanotify_init",
    # metadata Landlock does not cover
    "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
    "setxattr", "lsetxattr", "fsetxattr", "setxattrat", "removexattr", "lremovexattr",
    "fremovexattr", "removexattrat",
    "utime", "utimes", "futimesat", "utimensat", "mknod", "mknodat", "file_setattr",
    # IPC objects shared with other processes
    "shmget", "shmat", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl",
    "semget", "semop", "semtimedop", "semctl",
    "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
)  # fmt: skip
"""Syscalls that fail with ``EPERM`` in a sandbox child.

Besides these, :data:`OTHER_PID_SYSCALLS` fail when they name a process other than the caller
(a nonzero pid), and ``prlimit64`` fails when it sets a limit.
"""

OTHER_PID_SYSCALLS: tuple[str, ...] = (
    "prlimit64", "sched_getaffinity", "sched_getparam", "sched_getscheduler",
    "sched_getattr", "sched_rr_get_interval",
)  # fmt: skip
"""Syscalls whose first argument is a pid: allowed on the caller itself (pid 0) only."""

# Syscalls newer than some libseccomp releases; these numbers are shared by x86_64 and aarch64.
_GENERIC_NUMBERS = {
    "fchmodat2": 452,
    "setxattrat": 463,
    "removexattrat": 466,
    "open_tree_attr": 467,
    "file_setattr": 469,
    "statmount": 457,
    "listmount": 458,
}

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int
_libc.prctl.argtypes = [
    ctypes.c_int,
    ctypes.c_ulong,
    ctypes.c_ulong,
    ctypes.c_ulong,
    ctypes.c_ulong,
]

_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_GET_NO_NEW_PRIVS = 39


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


# -- prctl, capabilities, rlimits ----------------------------------------------------------------


def set_parent_death_signal(signum: int = signal.SIGKILL) -> None:
    """Asks the kernel to send ``signum`` to this process when its parent exits."""
    _check(_libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")


def set_no_new_privs() -> None:
    """Sets ``no_new_privs``: no execve can ever grant privileges again (irreversible)."""
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")


def no_new_privs() -> bool:
    """Whether ``no_new_privs`` is set for this process."""
    return _libc.prctl(_PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


_CAP_VERSION_3 = 0x20080522


def drop_capabilities() -> None:
    """Empties the effective, permitted and inheritable capability sets (root keeps its uid)."""
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")


def capabilities_empty() -> bool:
    """Whether this process holds no effective or permitted capability."""
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    if _libc.capget(ctypes.byref(header), data) != 0:
        return False
    return all(d.effective == 0 and d.permitted == 0 for d in data)


def _vm_size_bytes() -> int:
    with open("/proc/self/status", "rb") as f:
        for line in f:
            if line.startswith(b"VmSize:"):
                return int(line.split()[1]) * 1024
    raise OSError(errno.ENOENT, "no VmSize in /proc/self/status")


def _lower(which: int, soft: int, hard: int) -> None:
    _, current_hard = resource.getrlimit(which)
    if current_hard != resource.RLIM_INFINITY:
        hard = min(hard, current_hard)
        soft = min(soft, hard)
    resource.setrlimit(which, (soft, hard))


def apply_rlimits(cpu_seconds: int, memory_headroom_mb: int, max_open_files: int) -> None:
    """Sets the child's resource limits (soft and hard; lowering needs no privilege).

    Args:
        cpu_seconds: ``RLIMIT_CPU`` soft limit (SIGXCPU); the hard limit (SIGKILL) is one more.
        memory_headroom_mb: ``RLIMIT_AS`` is the current virtual size plus this much.
        max_open_files: ``RLIMIT_NOFILE``.
    """
    headroom = memory_headroom_mb << 20
    address_space = _vm_size_bytes() + headroom
    _lower(resource.RLIMIT_AS, address_space, address_space)
    _lower(resource.RLIMIT_CPU, cpu_seconds, cpu_seconds + 1)
    _lower(resource.RLIMIT_FSIZE, 0, 0)
    _lower(resource.RLIMIT_NOFILE, max_open_files, max_open_files)
    _lower(resource.RLIMIT_CORE, 0, 0)
    _lower(resource.RLIMIT_NPROC, 0, 0)


# -- Landlock --------------------------------------------------------------------------------------

_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_FS_READ_FILE = 1 << 2
_FS_READ_DIR = 1 << 3


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    """The Landlock ABI version the kernel offers, 0 when Landlock is missing or disabled."""
    version = _libc.syscall(
        ctypes.c_long(_SYS_LANDLOCK_CREATE_RULESET),
        None,
        ctypes.c_size_t(0),
        ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION),
    )
    return max(int(version), 0)


def _handled_fs(abi: int) -> int:
    # ABI 1: EXECUTE .. MAKE_SYM (13 rights); 2: + REFER; 3: + TRUNCATE; 5: + IOCTL_DEV.
    bits = 13 + (abi >= 2) + (abi >= 3) + (abi >= 5)
    return (1 << bits) - 1


def landlock_ruleset(read_paths: Iterable[str], abi: int) -> int:
    """Creates a ruleset that denies everything but reading beneath ``read_paths``.

    Args:
        read_paths: Directories whose contents stay readable (missing ones are skipped).
        abi: The kernel's Landlock ABI (from :func:`landlock_abi`), at least 1.

    Returns:
        The ruleset fd (close-on-exec), to pass to :func:`landlock_restrict`.
    """
    attr = _RulesetAttr(
        handled_access_fs=_handled_fs(abi),
        handled_access_net=0b11 if abi >= 4 else 0,  # BIND_TCP | CONNECT_TCP
        scoped=0b11 if abi >= 6 else 0,  # ABSTRACT_UNIX_SOCKET | SIGNAL
    )
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = _check(
        _libc.syscall(
            ctypes.c_long(_SYS_LANDLOCK_CREATE_RULESET),
            ctypes.byref(attr),
            ctypes.c_size_t(size),
            ctypes.c_uint32(0),
        ),
        "landlock_create_ruleset",
    )
    try:
        for path in dict.fromkeys(read_paths):
            if not os.path.isdir(path):
                continue
            parent = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_DIRECTORY)
            try:
                rule = _PathBeneathAttr(_FS_READ_FILE | _FS_READ_DIR, parent)
                _check(
                    _libc.syscall(
                        ctypes.c_long(_SYS_LANDLOCK_ADD_RULE),
                        ctypes.c_int(ruleset),
                        ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH),
                        ctypes.byref(rule),
                        ctypes.c_uint32(0),
                    ),
                    f"landlock_add_rule({path})",
                )
            finally:
                os.close(parent)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def landlock_restrict(ruleset: int) -> None:
    """Enforces ``ruleset`` on this process (irreversible; needs ``no_new_privs``)."""
    _check(
        _libc.syscall(
            ctypes.c_long(_SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)
        ),
        "landlock_restrict_self",
    )


def landlock_blocks_root() -> bool:
    """Whether opening ``/`` for listing is denied (Landlock is enforced on this process)."""
    try:
        fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except PermissionError:
        return True
    os.close(fd)
    return False


# -- seccomp ---------------------------------------------------------------------------------------

_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_ACT_ERRNO = 0x00050000
_SCMP_CMP_NE = 1


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


class SeccompFilter:
    """A libseccomp filter built once (in the template) and loaded by each child.

    Args:
        denied: Syscall names that fail with ``EPERM``.

    Raises:
        OSError: ``libseccomp.so.2`` is missing or refuses the filter.

    Attributes:
        unknown: Names neither libseccomp nor the generic syscall table knows (not filtered).
    """

    def __init__(self, denied: Iterable[str] = DENIED_SYSCALLS) -> None:
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
        lib.seccomp_init.restype = ctypes.c_void_p
        lib.seccomp_init.argtypes = [ctypes.c_uint32]
        lib.seccomp_rule_add_array.restype = ctypes.c_int
        lib.seccomp_rule_add_array.argtypes = [
            ctypes.c_void_p,
            ctypes.c_uint32,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.POINTER(_ArgCmp),
        ]
        lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
        lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
        lib.seccomp_load.restype = ctypes.c_int
        lib.seccomp_load.argtypes = [ctypes.c_void_p]
        self._lib = lib
        ctx = lib.seccomp_init(_SCMP_ACT_ALLOW)
        if not ctx:
            raise OSError(errno.ENOMEM, "seccomp_init failed")
        self._ctx = ctx
        self.unknown: list[str] = []
        eperm = _SCMP_ACT_ERRNO | errno.EPERM
        machine = os.uname().machine
        for name in denied:
            number = self.resolve(name)
            if number < 0 and machine in ("x86_64", "aarch64"):
                number = _GENERIC_NUMBERS.get(name, -1)
            if number < 0:
                self.unknown.append(name)
                continue
            self._add(eperm, number, name)
        # prlimit64(pid, resource, new, old) may read limits but never set them.
        setting = _ArgCmp(2, _SCMP_CMP_NE, 0, 0)
        self._add(eperm, self.resolve("prlimit64"), "prlimit64", setting)
        # Calls that name a pid may name the caller (0) only: no probing of host processes.
        other_pid = _ArgCmp(0, _SCMP_CMP_NE, 0, 0)
        for name in OTHER_PID_SYSCALLS:
            number = self.resolve(name)
            if number >= 0:
                self._add(eperm, number, name, other_pid)

    def resolve(self, name: str) -> int:
        """The native syscall number of ``name``, or a negative number if unknown."""
        return int(self._lib.seccomp_syscall_resolve_name(name.encode()))

    def _add(self, action: int, number: int, name: str, *conditions: _ArgCmp) -> None:
        array = (_ArgCmp * len(conditions))(*conditions) if conditions else None
        rc = self._lib.seccomp_rule_add_array(self._ctx, action, number, len(conditions), array)
        if rc < 0:
            raise OSError(-rc, f"seccomp_rule_add({name}): {os.strerror(-rc)}")

    def load(self) -> None:
        """Loads the filter into this process (irreversible; sets ``no_new_privs`` too)."""
        rc = self._lib.seccomp_load(self._ctx)
        if rc < 0:
            raise OSError(-rc, f"seccomp_load: {os.strerror(-rc)}")

    def active(self) -> bool:
        """Whether the filter is in force: a harmless ``personality`` query fails with EPERM."""
        number = self.resolve("personality")
        result = _libc.syscall(ctypes.c_long(number), ctypes.c_ulong(0xFFFFFFFF))
        return result == -1 and ctypes.get_errno() == errno.EPERM
