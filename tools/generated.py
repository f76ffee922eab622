"""The files generated from the tables' column descriptors (src/render/columns.c), and the check
that the committed ones are current.

    python tools/generated.py JAXPROF_COLUMNS ROOT           exit 1 naming each stale file
    python tools/generated.py JAXPROF_COLUMNS ROOT --write   rewrite them (`make generate`)

JAXPROF_COLUMNS is the built tools/gen_columns.c; ROOT the source tree.
"""
from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

# (jaxprof-columns mode, the file it writes, relative to the source tree)
GENERATED = [("schema", "docs/json-schema.md"), ("python", "python/jaxprof/results.py"),
             ("js", "src/serve/assets/columns.js")]


def main(gen: str, root: str, write: bool) -> int:
    stale = 0
    for mode, rel in GENERATED:
        want = subprocess.run([gen, mode], check=True, capture_output=True, text=True).stdout
        path = Path(root) / rel
        have = path.read_text() if path.exists() else ""
        if have == want:
            continue
        if write:
            path.write_text(want)
            print(f"wrote {rel}")
            continue
        stale += 1
        diff = difflib.unified_diff(have.splitlines(True), want.splitlines(True), f"{rel} (committed)",
                                    f"{rel} (from src/render/columns.c)")
        sys.stdout.writelines(list(diff)[:60])
        print(f"\n{rel} is stale: run `make generate` and commit it")
    return 1 if stale else 0


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] != "--write"):
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2], len(sys.argv) == 4))
