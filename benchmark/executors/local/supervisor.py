"""The supervisor: the first program inside a relocating local sandbox (benchmark/executors/local/job_fs.py).

Run by path, bound read-only into the sandbox at `SUPERVISOR_PATH`, as `python -I -S SUPERVISOR_PATH spec argv...`,
so `ps` shows one short line. `spec` is six lines (`job_fs.supervisor_spec`): in-sandbox paths and numbers only, no
host path (the job can read this argv). It drops to the job user (root harness), copies the harness's host dirs
(bound read-only at a staging path) into the job's tmpfs, runs the job, watches the tmpfs with `statvfs` (notes when
it was full; ends the job at more files than the harness accepts), then kills every process left and streams the
writable dirs back to the harness as a tar on a pipe, after a one-line JSON report.

A standalone program: the standard library only (the sandbox has no harness on its path), and only light modules
before the job starts; tarfile loads while it runs. Nothing imports it.
"""
import os
import select
import signal
import stat
import sys
import time


def main() -> None:
    fd, user, numbers, sources, targets, back = sys.argv[1].split("\n")
    channel, (root, limit, max_entries, max_depth) = int(fd), numbers.split(" ")
    limit, max_entries, max_depth = int(limit), int(max_entries), int(max_depth)
    argv = sys.argv[2:]
    if user:
        uid, gid, groups = user.split(" ")
        os.setgroups([int(g) for g in groups.split(",") if g])
        os.setgid(int(gid))
        os.setuid(int(uid))

    def copy(src: str, dst: str) -> None:
        with open(src, "rb") as a, open(dst, "wb") as b:
            while True:
                chunk = a.read(1 << 20)
                if not chunk:
                    break
                b.write(chunk)
        os.chmod(dst, os.stat(src).st_mode & 0o777)

    try:
        for src, dst in zip(sources.split("\t"), targets.split("\t")):
            for base, dirs, files in os.walk(src):
                target = os.path.normpath(os.path.join(dst, os.path.relpath(base, src)))
                os.makedirs(target, exist_ok=True)
                for name in files:
                    if not os.path.lexists(os.path.join(target, name)):  # harness-owned files are mounts
                        copy(os.path.join(base, name), os.path.join(target, name))
    except OSError as exc:
        print(f"cannot start job: its files do not fit in the job's disk ({exc.strerror})", file=sys.stderr)
        os._exit(127)
    pid = os.fork()
    if pid == 0:
        os.close(channel)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            print(f"cannot start job: {argv[0]}: {exc.strerror}", file=sys.stderr)
        os._exit(127)

    def usage() -> tuple[bool, int]:
        st = os.statvfs(root)
        return st.f_bfree == 0, st.f_files - st.f_ffree

    try:
        exited = os.pidfd_open(pid)  # readable when the job's main process ends: no polling latency
    except (AttributeError, OSError):
        exited = None
    full, files, status, tarfile = False, 0, None, None
    while status is None:  # a full disk is only noted (the job got ENOSPC); too many inodes end the job
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            status = code
            break
        now_full, files = usage()
        full = full or now_full
        if files > max_entries:
            break
        if tarfile is None:
            import tarfile
        elif exited is None:
            time.sleep(0.1)
        else:
            select.select([exited], [], [], 0.1)
    try:
        os.kill(-1, signal.SIGKILL)  # every job process but this one (and bwrap's init, pid 1)
    except OSError:
        pass
    if status is None:
        status = os.waitpid(pid, 0)[1]
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(p.isdigit() and int(p) not in (1, os.getpid()) for p in os.listdir("/proc")):
        time.sleep(0.01)
    now_full, now_files = usage()
    members, apparent, seen = [], 0, set()
    for index, top in enumerate(back.split("\t") if back else []):
        stack = [(top, str(index), 0)]
        while stack and len(members) <= max_entries:
            path, name, depth = stack.pop()
            try:
                st = os.lstat(path)
            except OSError:
                continue
            members.append((path, name))
            if stat.S_ISREG(st.st_mode) and st.st_ino not in seen:
                seen.add(st.st_ino)
                apparent += st.st_size
            if stat.S_ISDIR(st.st_mode) and depth <= max_depth:
                try:
                    stack += [(os.path.join(path, n), name + "/" + n, depth + 1) for n in os.listdir(path)]
                except OSError:
                    pass
    import tarfile
    header = '{"full": %d, "files": %d, "apparent": %d}\n' % (full or now_full, max(files, now_files), apparent)
    with os.fdopen(channel, "wb") as out:
        out.write(header.encode())
        if apparent <= limit:
            with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:
                for path, name in members:
                    try:
                        info = tar.gettarinfo(path, arcname=name)
                        if info is None:
                            continue
                        if info.isreg():
                            with open(path, "rb") as f:
                                tar.addfile(info, f)
                        else:
                            tar.addfile(info)
                    except OSError:
                        pass
    if os.WIFSIGNALED(status):  # die the job's death, so the harness sees its signal
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    main()
