"""docs/cli.md's `usage: jaxprof ...` blocks against what `jaxprof CMD --help` prints today.

    python tools/cli_help_docs.py JAXPROF [--write]

A block is current when its lines appear, in order, among the help's lines (a block may show a
command's own text and leave out the options the tables share). --write replaces each block with
the help as printed, cut before its shared part where the block had left that out. The test
(tests/python/test_docs.py) fails on a stale block, so a renamed flag cannot outlive its doc.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
BLOCK = re.compile(r"^```\n((?:usage: jaxprof |options:\n)[^\n]*\n?.*?)^```\n", re.S | re.M)
# A block that starts with "options:" is the options the report and the tables share: those of
# `jaxprof steps`, a table with no options of its own.
SHARED_OPTIONS_OF = "usage: jaxprof steps"
SHARED_START = "PATH is an "  # where the analysis commands' shared part begins


def help_text(jaxprof: str, first_line: str) -> str:
    """What `jaxprof CMD --help` prints, CMD read from a block's usage line."""
    if first_line == "options:":
        first_line = SHARED_OPTIONS_OF
    cmd = first_line.split()[2]
    args = ["--help"] if cmd.startswith("<") else [cmd, "--help"]
    env = dict(os.environ, COLUMNS="100")  # argparse's width, for the Python commands
    out = subprocess.run([jaxprof, *args], capture_output=True, text=True, env=env, timeout=120)
    return out.stdout


def is_current(block: str, help_out: str) -> bool:
    """Every line of the block in order among the help's lines."""
    lines = iter(help_out.splitlines())
    return all(any(line == h for h in lines) for line in block.splitlines())


def rewritten(block: str, help_out: str) -> str:
    """The help as printed, without its shared part when the block left it out."""
    if block.startswith("options:"):
        return help_out[help_out.index("options:"):]
    if SHARED_START not in block and SHARED_START in help_out:
        help_out = help_out[:help_out.index(SHARED_START)].rstrip("\n") + "\n"
    return help_out


def stale_blocks(jaxprof: str, text: str) -> list[tuple[re.Match[str], str]]:
    found = []
    for m in BLOCK.finditer(text):
        block = m.group(1)
        out = help_text(jaxprof, block.splitlines()[0])
        if not is_current(block, out):
            found.append((m, out))
    return found


def main(jaxprof: str, write: bool) -> int:
    text = DOC.read_text()
    stale = stale_blocks(jaxprof, text)
    for m, out in reversed(stale):
        if write:
            text = text[:m.start(1)] + rewritten(m.group(1), out) + text[m.end(1):]
        else:
            print(f"docs/cli.md: stale help block: {m.group(1).splitlines()[0]}")
    if write and stale:
        DOC.write_text(text)
        print(f"rewrote {len(stale)} help blocks in docs/cli.md")
    return 1 if stale and not write else 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "--write"):
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], len(sys.argv) == 3))
