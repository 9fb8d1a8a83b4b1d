"""Confine one agent call at the operating-system level: Landlock for files, seccomp for the rest.

A Python audit hook checks path strings, and plain Python gets around it (`os.open(name, dir_fd=fd)`,
`os.fchdir` then a relative write, `_posixsubprocess.fork_exec`, none of which name the real path or
raise an event). So `run_isolated` seals each child with kernel rules before agent code runs; they hold
for the rest of the child's life, whatever code it runs:

- **Landlock** (Linux 5.13+): the child may read every file hierarchy except the blocked folders (the
  data, the test inputs, the driver's scratch with the other calls' results), write, create, rename or
  delete only under its own output folder, and execute nothing. The check is on the file the kernel
  reaches, however its path was spelled (a dir fd, a link, /proc/self/root). Landlock also keeps the
  child from reading or tracing processes outside its domain (the driver's memory), and, where the
  kernel has ABI 4 and 6, from TCP and from signalling or reaching the abstract sockets of processes
  outside it.
- **seccomp** (a filter written here, no library): no new process (execve, execveat, fork, vfork,
  clone without CLONE_THREAD; clone3 answers ENOSYS so the C library starts threads with clone), so
  nothing outlives the call; no System V or POSIX message-queue IPC, keyrings, file metadata changes
  (chmod, chown, utime, xattrs: Landlock does not cover them, and a timestamp or an xattr on a code
  file would carry numbers to the next call), ptrace and process_vm_*, io_uring and AIO, bpf,
  userfaultfd, perf_event_open; signals only to itself. A foreign-ABI system call kills the process.

Where the kernel offers no Landlock the call is refused (`ConfinementUnavailable`), never run bare.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import stat
import struct
from pathlib import Path
from typing import Iterable, Optional

# Landlock (include/uapi/linux/landlock.h)
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_MAKE_ALL = sum(1 << bit for bit in range(4, 13))  # REMOVE_DIR .. MAKE_SYM
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV  # what a rule on a non-directory may grant

# seccomp (include/uapi/linux/seccomp.h, filter.h, audit.h)
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_RET_KILL_PROCESS, _RET_ALLOW, _RET_ERRNO = 0x80000000, 0x7FFF0000, 0x00050000
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_CLONE_THREAD = 0x00010000
_X32_BIT = 0x40000000

# System-call numbers of the two architectures this runs on (arch/x86/entry/syscalls, asm-generic/unistd.h).
_ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (0xC000003E, {
        "execve": 59, "execveat": 322, "fork": 57, "vfork": 58, "clone": 56, "clone3": 435,
        "shmget": 29, "shmat": 30, "shmctl": 31, "semget": 64, "semop": 65, "semctl": 66, "semtimedop": 220,
        "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71, "mq_open": 240, "mq_unlink": 241,
        "mq_timedsend": 242, "mq_timedreceive": 243, "mq_notify": 244, "mq_getsetattr": 245,
        "add_key": 248, "request_key": 249, "keyctl": 250,
        "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452, "chown": 92, "fchown": 93, "lchown": 94,
        "fchownat": 260, "utime": 132, "utimes": 235, "futimesat": 261, "utimensat": 280,
        "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198,
        "fremovexattr": 199, "setxattrat": 463, "removexattrat": 466,
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438,
        "kill": 62, "tkill": 200, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
        "pidfd_send_signal": 424, "io_setup": 206, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "bpf": 321, "userfaultfd": 323, "perf_event_open": 298,
    }),
    "aarch64": (0xC00000B7, {
        "execve": 221, "execveat": 281, "clone": 220, "clone3": 435,
        "shmget": 194, "shmat": 196, "shmctl": 195, "semget": 190, "semop": 193, "semctl": 191, "semtimedop": 192,
        "msgget": 186, "msgsnd": 189, "msgrcv": 188, "msgctl": 187, "mq_open": 180, "mq_unlink": 181,
        "mq_timedsend": 182, "mq_timedreceive": 183, "mq_notify": 184, "mq_getsetattr": 185,
        "add_key": 217, "request_key": 218, "keyctl": 219,
        "fchmod": 52, "fchmodat": 53, "fchmodat2": 452, "fchown": 55, "fchownat": 54, "utimensat": 88,
        "setxattr": 5, "lsetxattr": 6, "fsetxattr": 7, "removexattr": 14, "lremovexattr": 15,
        "fremovexattr": 16, "setxattrat": 463, "removexattrat": 466,
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438,
        "kill": 129, "tkill": 130, "tgkill": 131, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
        "pidfd_send_signal": 424, "io_setup": 0, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "bpf": 280, "userfaultfd": 282, "perf_event_open": 241,
    }),
}
# Signals: allowed when the first argument (the pid or thread group) is the child itself.
_SELF_ONLY = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
_DENIED = tuple(name for name in _ARCHES["x86_64"][1]
                if name not in ("clone", "clone3", *_SELF_ONLY))


class ConfinementUnavailable(Exception):
    """This kernel or architecture cannot confine agent code; the call must not run."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 where it has none (too old, or not enabled at boot)."""
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(ctypes.c_long(_SYS_CREATE_RULESET), None, ctypes.c_size_t(0),
                           ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def unavailable() -> str:
    """Why agent calls cannot be confined here, or "" when they can (asked by the parent before forking)."""
    if platform.machine() not in _ARCHES:
        return f"agent calls are confined with seccomp rules written for {' and '.join(_ARCHES)}, not {platform.machine()}"
    if landlock_abi() < 1:
        return ("agent calls are confined with Landlock, which this kernel does not offer (Linux 5.13 or later "
                "with landlock among its LSMs, e.g. lsm=landlock,...): the task cannot run here")
    return ""


def readable_roots(blocked: Iterable[Path]) -> list[str]:
    """Every hierarchy of the filesystem except the blocked ones: the siblings of each blocked folder
    and of each of its ancestors (Landlock grants by hierarchy and cannot subtract)."""
    hidden = {os.path.realpath(p) for p in blocked}
    roots: list[str] = []

    def on_the_way(path: str) -> bool:
        return any(h.startswith(path.rstrip("/") + "/") for h in hidden)

    def visit(folder: str) -> None:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return  # unlistable: nothing under it is granted
        for name in names:
            path = os.path.join(folder, name)
            real = os.path.realpath(path)
            if real in hidden or any(real.startswith(h + "/") for h in hidden):
                continue
            if os.path.islink(path):
                if not on_the_way(real):
                    roots.append(real)  # what the link reaches, granted where it lives
                continue
            if on_the_way(path):
                visit(path)
            else:
                roots.append(path)

    if "/" in hidden:
        return []
    visit("/")
    return list(dict.fromkeys(roots))


def _handled(abi: int) -> tuple[int, int, int]:
    """(filesystem rights, network rights, scopes) this kernel's Landlock can restrict."""
    fs = _EXECUTE | _WRITE_FILE | _READ_FILE | _READ_DIR | _MAKE_ALL
    fs |= (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0) | (_IOCTL_DEV if abi >= 5 else 0)
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 else 0
    scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if abi >= 6 else 0
    return fs, net, scoped


def _landlock(readable: list[str], writable: list[str]) -> None:
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    abi = landlock_abi()
    if abi < 1:
        raise ConfinementUnavailable("this kernel offers no Landlock")
    fs, net, scoped = _handled(abi)
    attr = ctypes.create_string_buffer(struct.pack("=QQQ", fs, net, scoped))
    ruleset = libc.syscall(ctypes.c_long(_SYS_CREATE_RULESET), attr, ctypes.c_size_t(len(attr.raw)),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        raise ConfinementUnavailable(f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    read = (_READ_FILE | _READ_DIR | (_IOCTL_DEV if abi >= 5 else 0)) & fs
    write = fs & ~_EXECUTE
    try:
        for paths, rights in ((readable, read), (writable, write)):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue  # gone since it was listed: nothing to grant
                try:
                    allowed = rights if stat.S_ISDIR(os.fstat(fd).st_mode) else rights & _FILE_RIGHTS
                    rule = ctypes.create_string_buffer(struct.pack("=Qi", allowed, fd))
                    if libc.syscall(ctypes.c_long(_SYS_ADD_RULE), ctypes.c_int(ruleset),
                                    ctypes.c_int(_RULE_PATH_BENEATH), rule, ctypes.c_uint32(0)) < 0:
                        code = ctypes.get_errno()
                        if paths is writable:
                            raise ConfinementUnavailable(f"landlock_add_rule {path}: {os.strerror(code)}")
                finally:
                    os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
            raise ConfinementUnavailable(f"no_new_privs: {os.strerror(ctypes.get_errno())}")
        if libc.syscall(ctypes.c_long(_SYS_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            raise ConfinementUnavailable(f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(ruleset)


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


def seccomp_program(pid: int, machine: Optional[str] = None) -> bytes:
    """The child's filter as classic BPF: the denials listed in the module docstring, for `pid`."""
    arch, numbers = _ARCHES[machine or platform.machine()]
    deny = _RET_ERRNO | errno.EPERM
    body: list[bytes] = []
    tail: list[bytes] = [_insn(_RET_K, 0, 0, _RET_ALLOW)]

    # Each check is a block that jumps over its own action when the number differs; every action ends in a
    # return, so the accumulator (the number) is intact for the next block.
    def block_equal(nr: int, action: list[bytes]) -> list[bytes]:
        return [_insn(_JEQ_K, 0, len(action), nr), *action]

    for name in _DENIED:
        if name in numbers:
            body += block_equal(numbers[name], [_insn(_RET_K, 0, 0, deny)])
    # clone: threads only (CLONE_THREAD set in the low word of the first argument); then reload nr
    clone = [_insn(_LD_W_ABS, 0, 0, 16), _insn(_JSET_K, 0, 1, _CLONE_THREAD), _insn(_RET_K, 0, 0, _RET_ALLOW),
             _insn(_RET_K, 0, 0, deny)]
    body += block_equal(numbers["clone"], clone)
    body += block_equal(numbers["clone3"], [_insn(_RET_K, 0, 0, _RET_ERRNO | errno.ENOSYS)])
    for name in _SELF_ONLY:
        self_only = [_insn(_LD_W_ABS, 0, 0, 16), _insn(_JEQ_K, 0, 1, pid), _insn(_RET_K, 0, 0, _RET_ALLOW),
                     _insn(_RET_K, 0, 0, deny)]
        body += block_equal(numbers[name], self_only)
    head = [_insn(_LD_W_ABS, 0, 0, 4), _insn(_JEQ_K, 1, 0, arch), _insn(_RET_K, 0, 0, _RET_KILL_PROCESS),
            _insn(_LD_W_ABS, 0, 0, 0)]
    if arch == _ARCHES["x86_64"][0]:
        head += [_insn(_JGE_K, 0, 1, _X32_BIT), _insn(_RET_K, 0, 0, _RET_KILL_PROCESS)]
    return b"".join(head + body + tail)


def _seccomp(program: bytes) -> None:
    libc = _libc()
    count = len(program) // 8
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = struct.pack("=HxxxxxxQ", count, ctypes.addressof(buffer))
    fprog_buf = ctypes.create_string_buffer(fprog, len(fprog))
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
        raise ConfinementUnavailable(f"no_new_privs: {os.strerror(ctypes.get_errno())}")
    if libc.prctl(_PR_SET_SECCOMP, ctypes.c_ulong(_SECCOMP_MODE_FILTER), fprog_buf, ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
        raise ConfinementUnavailable(f"seccomp: {os.strerror(ctypes.get_errno())}")


def confine(blocked: Iterable[Path], allowed_writes: Iterable[Path]) -> None:
    """Seal this process for good: read all but `blocked`, write only under `allowed_writes`, no exec,
    no new process, no IPC, no metadata changes. Raises ConfinementUnavailable when it cannot."""
    machine = platform.machine()
    if machine not in _ARCHES:
        raise ConfinementUnavailable(f"no seccomp rules for {machine}")
    writable = [os.path.realpath(p) for p in allowed_writes]
    _landlock(readable_roots(blocked), writable)
    _seccomp(seccomp_program(os.getpid(), machine))
