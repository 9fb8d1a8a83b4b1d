"""What a job may ask of the kernel beyond its namespaces (issue 26): keyrings, AIO and io_uring, bpf,
userfaultfd and perf_event_open are refused by the job's seccomp filter, whatever the host's sysctls say,
and its processes' open files are bounded so that parallel jobs cannot fill the host's file table.
Each is tried from inside a job run by the real executor in its bubblewrap sandbox."""

from __future__ import annotations

import os
import resource
from pathlib import Path

import pytest

from researchbench.benchmark.executors import Limits, LocalExecutor, LocalExecutorConfig
from researchbench.benchmark.executors.local.open_files import FLOOR, SHARE, file_max, open_files_limit
from tests.executor_conformance import make_job, run
from test_executor_local import HAS_BWRAP

pytestmark = pytest.mark.skipif(not HAS_BWRAP, reason="no working bubblewrap on this host")

KERNEL_CALLS = """
    import ctypes, errno, os, platform
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    X86 = platform.machine() == "x86_64"
    NR = {"add_key": 248 if X86 else 217, "request_key": 249 if X86 else 218, "keyctl": 250 if X86 else 219,
          "io_setup": 206 if X86 else 0, "io_uring_setup": 425, "bpf": 321 if X86 else 280,
          "userfaultfd": 323 if X86 else 282, "perf_event_open": 298 if X86 else 241, "getpid": 39 if X86 else 172}
    USER_KEYRING, SESSION_KEYRING = -4, -3
    buf = ctypes.create_string_buffer(512)
    attempts = {
        # stash test inputs in the uid's keyring, for a later job leased the same uid
        "add_key": (b"user", b"stash", b"test inputs", ctypes.c_size_t(11), ctypes.c_int(USER_KEYRING)),
        "request_key": (b"user", b"stash", None, ctypes.c_int(0)),
        "keyctl": (ctypes.c_int(0), ctypes.c_int(SESSION_KEYRING), ctypes.c_int(0)),  # KEYCTL_GET_KEYRING_ID
        "io_setup": (ctypes.c_uint(64), ctypes.byref(ctypes.c_ulong(0))),
        "io_uring_setup": (ctypes.c_uint(8), buf),
        "bpf": (ctypes.c_int(0), buf, ctypes.c_uint(48)),  # BPF_MAP_CREATE with an empty attribute
        "userfaultfd": (ctypes.c_int(0),),
        "perf_event_open": (buf, ctypes.c_int(0), ctypes.c_int(-1), ctypes.c_int(-1), ctypes.c_ulong(0)),
        "getpid": (),
    }
    for name, args in attempts.items():
        ctypes.set_errno(0)
        rc = libc.syscall(ctypes.c_long(NR[name]), *args)
        print(name, "ok" if rc >= 0 else errno.errorcode.get(ctypes.get_errno()))
"""


def test_keyrings_aio_io_uring_bpf_userfaultfd_and_perf_are_refused_in_a_job(tmp_path: Path) -> None:
    job = make_job(tmp_path, KERNEL_CALLS, name="kernel")
    with LocalExecutor(LocalExecutorConfig(sandbox="bwrap")) as harness:
        result, out, err = run(harness, job)
    assert result.ok, err
    verdicts = dict(line.split(" ", 1) for line in out.splitlines())
    assert verdicts.pop("getpid") == "ok"  # the calls are made right; the filter refuses them
    assert verdicts == {name: "EPERM" for name in ("add_key", "request_key", "keyctl", "io_setup", "io_uring_setup",
                                                   "bpf", "userfaultfd", "perf_event_open")}, verdicts


KEYRING_STASH_THEN_READ = """
    import ctypes, errno, sys
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    USER_KEYRING = -4
    if sys.argv[1] == "stash":
        rc = libc.syscall(ctypes.c_long(248), b"user", b"stash", b"7,3,9", ctypes.c_size_t(5), ctypes.c_int(USER_KEYRING))
    else:  # KEYCTL_SEARCH the uid's keyring for it
        rc = libc.syscall(ctypes.c_long(250), ctypes.c_int(10), ctypes.c_int(USER_KEYRING), b"user", b"stash",
                          ctypes.c_int(0))
    print(sys.argv[1], rc, errno.errorcode.get(ctypes.get_errno()) if rc < 0 else "")
"""


@pytest.mark.skipif(__import__("platform").machine() != "x86_64", reason="system-call numbers of x86-64")
def test_a_job_cannot_leave_data_in_a_keyring_for_the_next_job(tmp_path: Path) -> None:
    """The attack of issue 26: a test-phase job stashes data in its uid's keyring and a later job (leased the
    same uid: one uid, one job at a time) reads it back. Both halves are refused."""
    first_uid = 300000 + (int.from_bytes(os.urandom(3), "big") % 100000) * 10  # a range no other test leases
    with LocalExecutor(LocalExecutorConfig(sandbox="bwrap", job_uid=first_uid, job_uid_count=1)) as harness:
        first, out1, err1 = run(harness, make_job(tmp_path, KEYRING_STASH_THEN_READ, "stash", name="stash"))
        second, out2, err2 = run(harness, make_job(tmp_path, KEYRING_STASH_THEN_READ, "read", name="read"))
    assert first.ok and second.ok, err1 + err2
    assert out1.split() == ["stash", "-1", "EPERM"] and out2.split() == ["read", "-1", "EPERM"]


OPEN_UNTIL_REFUSED = """
    import os, resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    fds = []
    try:
        while True:
            fds.append(os.open("/dev/null", os.O_RDONLY))
    except OSError as exc:
        print(soft, hard, len(fds), exc.strerror)
"""


def test_a_job_holds_a_bounded_share_of_the_hosts_open_files(tmp_path: Path) -> None:
    host_max = file_max()
    if host_max is None:
        pytest.skip("fs.file-max is not readable here")
    limits = Limits(max_processes=256)
    with LocalExecutor(LocalExecutorConfig(sandbox="bwrap", max_parallel=4)) as harness:
        result, out, err = run(harness, make_job(tmp_path, OPEN_UNTIL_REFUSED, name="files", limits=limits))
    assert result.ok, err
    soft, hard, opened, why = out.split(" ", 3)
    expected = open_files_limit(4, 256, host_max)
    assert int(soft) == int(hard) == expected and int(opened) <= expected
    assert why.strip() == "Too many open files"
    # 4 parallel jobs of 256 processes each stay within the share of file-max (unless the floor binds)
    assert expected == FLOOR or expected * 256 * 4 <= host_max * SHARE
    inherited = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    assert expected <= inherited or inherited == resource.RLIM_INFINITY


def test_the_open_files_limit_follows_file_max_capacity_and_the_floor() -> None:
    assert open_files_limit(1, 256, 2_466_170) == min(4816, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
    assert open_files_limit(64, 256, 2_466_170) == FLOOR  # too many jobs for the host: the floor, and a warning
    assert open_files_limit(1, 256, None) == resource.getrlimit(resource.RLIMIT_NOFILE)[1]
