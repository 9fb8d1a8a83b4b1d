"""A probe that runs *inside* a val-phase sandbox and reports what hidden data agent code could reach.

`setup.py --check` starts it (with `python -I -c <this file's source>`) as a job with exactly the
val phase's layout: same mounts, same user, same limits. It answers, from the job's own point of
view rather than from the harness's model of the sandbox:

- is any hidden path (the labels folder and files, the test inputs, the task folder) visible?
- does any visible regular file have the bytes of a hidden file (a copied label file, wherever it
  lies and whatever it is called)? Only files of a hidden file's exact size are hashed, so walking
  the whole visible tree stays cheap.

Input: one JSON argument {"paths": [...], "digests": {sha256: name}, "sizes": [...], "skip": [...]}.
Output: one JSON line on stdout {"findings": [...], "entries": n}. Standard library only: it runs
with the job's interpreter and nothing of the harness importable.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

MAX_ENTRIES = 3_000_000  # a walk larger than this is reported, not silently cut short


def _sha256(path: str) -> str | None:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:  # unreadable for the job user: not reachable
        return None
    return digest.hexdigest()


def probe(paths: list[str], digests: dict[str, str], sizes: set[int], skip: set[str]) -> dict:
    findings = [f"{p} is visible" for p in paths if os.path.lexists(p)]
    entries = 0
    stack = ["/"]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                children = list(it)
        except OSError:
            continue
        for entry in children:
            entries += 1
            if entry.path in skip:
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_size in sizes:
                    name = digests.get(_sha256(entry.path) or "")
                    if name is not None:
                        findings.append(f"{entry.path} has the bytes of the hidden file {name}")
            except OSError:
                continue
        if entries > MAX_ENTRIES:
            findings.append(f"more than {MAX_ENTRIES} visible entries; the walk stopped at {folder}")
            break
    return {"findings": findings, "entries": entries}


def main(argv: list[str]) -> int:
    spec = json.loads(argv[1])
    report = probe(list(spec["paths"]), dict(spec["digests"]), {int(s) for s in spec["sizes"]}, set(spec["skip"]))
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
