"""The job's seccomp filter: no user namespaces, and no kernel facility that outlives or escapes a job.

Inside a new user namespace an unprivileged job holds every capability over the namespaces it then
creates (mount, network, pid), which widens the kernel surface it can reach; no ML job needs one. As
root, bubblewrap's own `--disable-userns` is not an option: it needs `--unshare-user`, and a user
namespace made by real root maps the job's uid to host root, which would undo the job's unprivileged
host uid. So both a root and a non-root harness hand bubblewrap this filter (`--seccomp FD`), applied
to the job and everything it starts, for good (bubblewrap sets no_new_privs first):

- `unshare` and `clone` with CLONE_NEWUSER fail with EPERM;
- `clone3` fails with ENOSYS (its flags sit in a struct a filter cannot read), so the C library falls
  back to `clone`, which is checked;
- `add_key`, `request_key` and `keyctl` fail with EPERM: kernel keyrings live outside every namespace, so a
  job could leave data in its uid's keyring for a later job leased the same uid, pass it to a concurrent
  job, or read the harness user's session keyring (Docker's default profile denies them too);
- `io_setup` and `io_uring_setup`/`_enter`/`_register` fail with EPERM: AIO contexts come from one host-wide
  pool (`fs.aio-max-nr`) a job could drain, and io_uring is a wide kernel surface no ML job needs;
- `bpf`, `userfaultfd` and `perf_event_open` fail with EPERM whatever the host's sysctls say;
- a system call of a foreign ABI (32-bit `int 0x80` or x32 on x86-64) kills the process: the rules above are
  written for the native ABI only.

The program is built with libseccomp (through `pyseccomp`), which knows each architecture's
system-call numbers.
"""

from __future__ import annotations

import errno
import functools
import os
import tempfile

from researchbench.benchmark.common.errors import UserError

CLONE_NEWUSER = 0x10000000
# Refused outright (EPERM): see the module docstring for why each.
DENIED_SYSCALLS = ("add_key", "request_key", "keyctl", "io_setup", "io_uring_setup", "io_uring_enter",
                   "io_uring_register", "bpf", "userfaultfd", "perf_event_open")


@functools.lru_cache(maxsize=1)
def no_userns_program() -> bytes:
    """The job filter as raw BPF, ready for `bwrap --seccomp`; built once per process."""
    try:
        import pyseccomp as sc
    except (ImportError, RuntimeError, OSError) as exc:  # RuntimeError: libseccomp.so not found
        raise UserError(
            f"the job sandbox needs libseccomp to keep jobs from creating user namespaces ({exc}): install "
            "it (`pip install pyseccomp` and `apt-get install libseccomp2`), or choose executor.sandbox=none "
            "knowingly"
        ) from None
    program = sc.SyscallFilter(sc.ALLOW)
    newuser = sc.Arg(0, sc.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)
    program.add_rule(sc.ERRNO(errno.EPERM), "unshare", newuser)
    program.add_rule(sc.ERRNO(errno.EPERM), "clone", newuser)
    program.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for name in DENIED_SYSCALLS:
        try:
            program.add_rule(sc.ERRNO(errno.EPERM), name)
        except OSError as exc:  # a libseccomp too old to know the call: refuse rather than leave it open
            raise UserError(f"the job sandbox's libseccomp does not know the system call {name} ({exc}): "
                            "upgrade libseccomp2 (2.5 or later)") from None
    with tempfile.TemporaryFile() as f:
        program.export_bpf(f)
        f.seek(0)
        return f.read()


def program_fd() -> int:
    """A fresh read end holding the filter: bwrap reads it to EOF, so every job needs its own.

    The program is a few hundred bytes, far below a pipe's buffer, so writing it never blocks.
    """
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, no_userns_program())
    finally:
        os.close(write_end)
    return read_end
