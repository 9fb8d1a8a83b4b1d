"""The Python the Modal executor runs inside a sandbox, as root unless said otherwise.

Plain strings run with `python -I -S -c`: the image needs nothing but its interpreter.
"""

# Runs as root in the sandbox after the upload: unpack, make the writable dirs, link data dirs from
# the Volume, give the job user its paths, and make harness-owned files unwritable and unreplaceable
# (root-owned, read-only, in sticky dirs the job user may add to but not rename in).
SETUP = r"""
import json, os, sys, tarfile
spec = json.loads(sys.argv[1])
uid = gid = spec["uid"]
with tarfile.open(spec["tar"]) as tar:
    if hasattr(tarfile, "tar_filter"):
        tar.extractall("/", filter="tar")
    else:
        tar.extractall("/")
os.remove(spec["tar"])
for path in spec["writable"]:
    os.makedirs(path, exist_ok=True)
for link, target in spec["links"]:
    os.makedirs(os.path.dirname(link), mode=0o755, exist_ok=True)
    os.symlink(target, link)
for root in spec["own"]:
    os.chown(root, uid, gid)
    for base, dirs, files in os.walk(root):
        for name in dirs + files:
            os.chown(os.path.join(base, name), uid, gid, follow_symlinks=False)
for path in spec["protect"]:
    for base, dirs, files in os.walk(path) if os.path.isdir(path) else [(os.path.dirname(path), [], [os.path.basename(path)])]:
        for name in files:
            os.chown(os.path.join(base, name), 0, 0, follow_symlinks=False)
            os.chmod(os.path.join(base, name), 0o444)
for path in spec["sticky"]:
    os.chown(path, 0, 0)
    os.chmod(path, 0o1777)
os.makedirs("/tmp", exist_ok=True)
os.chmod("/tmp", 0o1777)
exe = spec["exe"]
found = os.path.join(spec["workdir"], exe) if "/" in exe and not exe.startswith("/") else exe
if "/" in exe:
    ok = os.path.isfile(found) and os.access(found, os.X_OK)
else:
    import shutil
    ok = shutil.which(exe, path=spec["path"]) is not None
if not ok:
    print(f"cannot start job: executable {exe!r} not found", file=sys.stderr)
    sys.exit(3)
"""

# Runs as the job user after the job: kill(-1) reaches every process of that uid but the caller.
KILL_ALL = "import os\ntry:\n    os.kill(-1, 9)\nexcept OSError:\n    pass\n"

# Runs as root while the job runs: bytes stored under the given roots (links not followed).
DISK_USAGE = r"""
import os, sys
total = 0
for root in sys.argv[1:]:
    for base, dirs, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(base, name)).st_size
            except OSError:
                pass
print(total)
"""
