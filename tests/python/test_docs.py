"""The docs name only what exists: every repository path, source file name, `jp_*`/`JP_*` identifier,
`jaxprof.NAME` and `--flag` that README.md and docs/*.md mention is looked up in the tree.

A rename (a function, a file, a flag) that leaves a doc behind fails here, naming the doc, the line
and the stale name. What the docs name on purpose outside this repository (XLA's and XProf's files,
other tools' flags) is listed below, each with the reason; add to those lists only for such names.

    python tests/python/test_docs.py    # the same checks without pytest: one line per stale name
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Repository folders whose paths the docs cite; a token starting with one of them must exist.
TOP = ("src", "cli", "python", "tests", "tools", "benchmarks", "docs", "include", "examples", "third_party")

# Source files the docs name that live elsewhere (by basename).
EXTERNAL_FILES = {
    "trace_utils.h",          # XLA/TSL: the derived lines' thread ids
    "train.py", "serve.py", "cap.py", "capture64.py",  # the user's scripts in examples
}

# Flags of other programs that the docs show.
EXTERNAL_FLAGS = {
    "--detach",               # git, in the GitHub Actions example
    "--suite",                # meson test, in docs/benchmarks.md
    "--lr",                   # the user's program's own flag, in `jaxprof run -- python train.py --lr 3e-4`
}

DOC_FILES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])

SOURCE_SUFFIXES = (".c", ".h")
FLAG_SOURCES = (".c", ".h", ".py", ".sh")


def tracked_files() -> list[str]:
    """Every file git tracks or would track (not ignored), else every file under ROOT."""
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
        return [line for line in out.splitlines() if line]
    except (OSError, subprocess.CalledProcessError):
        return [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and ".venv" not in p.parts]


def read(paths: list[str], suffixes: tuple[str, ...]) -> str:
    text = []
    for p in paths:
        if p.endswith(suffixes) and (ROOT / p).is_file():
            text.append((ROOT / p).read_text(errors="replace"))
    return "\n".join(text)


def code_spans(line: str) -> list[str]:
    """The `code` spans of one Markdown line (a fenced block's lines are passed whole)."""
    return re.findall(r"`([^`]+)`", line)


def doc_lines(doc: Path):
    """(line number, text to check) for every line: code spans, plus whole lines inside fences."""
    fenced = False
    for n, line in enumerate(doc.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        yield n, line, fenced


PATH_RE = re.compile(r"(?<![\w./-])((?:%s)/[\w.*/<>+-]*)" % "|".join(TOP))
BARE_FILE_RE = re.compile(r"(?<![\w./<>-])([A-Za-z_][\w-]*\.(?:c|h|py|js|css|sh))(?![\w/])")
JP_RE = re.compile(r"\b((?:jp|JP)_[A-Za-z0-9_]*)(\*|\.[a-z_][a-z0-9_]*)?")
PY_RE = re.compile(r"\bjaxprof\.([A-Za-z_][A-Za-z0-9_]*)")
FLAG_RE = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*[a-z0-9])")


def anchors(doc: Path) -> set[str]:
    """The #anchors GitHub makes of a Markdown file's headings (lower case, punctuation dropped,
    spaces to hyphens, a repeated heading numbered -1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    for line in doc.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or not line.startswith("#"):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        out.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return out


class Tree:
    """What exists: files, their basenames, the C identifiers and the flags the sources spell."""

    def __init__(self) -> None:
        self.files = tracked_files()
        self.fileset = set(self.files)
        self.dirs = {str(Path(f).parents[i]) for f in self.files for i in range(len(Path(f).parents) - 1)}
        self.basenames = {Path(f).name for f in self.files}
        csrc = read(self.files, SOURCE_SUFFIXES)
        self.c_words = set(re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", csrc))
        this = str(Path(__file__).resolve().relative_to(ROOT))   # its planted names are no source
        self.flag_text = read([f for f in self.files if f != this], FLAG_SOURCES) + (ROOT / "Makefile").read_text()
        init = (ROOT / "python/jaxprof/__init__.py").read_text()
        self.py_public = set(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', init.split("__all__", 1)[1]))
        self.py_modules = {Path(f).stem for f in self.files if f.startswith("python/jaxprof/") and
                           f.count("/") == 2 and f.endswith((".py", ".c"))}

    def path_exists(self, token: str) -> bool:
        token = token.rstrip(".,;:)/") or token
        if "<" in token or ">" in token:          # a pattern such as tests/c/test_<module>.c
            pattern = re.escape(token).replace(r"\*", "[^/]*")
            pattern = re.sub(r"<[^>]*>", "[^/]+", pattern.replace(r"\<", "<").replace(r"\>", ">"))
            return any(re.fullmatch(pattern, f) for f in self.files)
        if "*" in token:
            pattern = re.escape(token).replace(r"\*", "[^/]*")
            return any(re.fullmatch(pattern, f) or re.fullmatch(pattern, d) for f in self.files for d in [f])
        return token in self.fileset or token in self.dirs

    def jp_exists(self, name: str, tail: str | None) -> bool:
        if tail == "*" or name.endswith("_"):     # a prefix: jp_http_* names a family
            prefix = name if name.endswith("_") else name + "_"
            return any(w.startswith(prefix) for w in self.c_words) or name.rstrip("_") in self.c_words
        if name not in self.c_words:
            return False
        return tail is None or tail[1:] in self.c_words   # jp_load_options.has_steps: the field exists too

    def flag_exists(self, flag: str) -> bool:
        """Spelled as a string in a source file, or made from a Python name (remote.py's tracer levels)."""
        text = self.flag_text
        if any(f"{q}{flag}" in text for q in "\"' "):
            return True
        name = flag[2:]
        return "-" in name and re.search(r"\b%s\b" % re.escape(name.replace("-", "_")), text) is not None

    def py_exists(self, name: str) -> bool:
        return name in self.py_public or name in self.py_modules or name in ("testing", "__all__")


def problems() -> list[str]:
    tree = Tree()
    found = []
    for doc in DOC_FILES:
        rel = doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc
        for n, line, fenced in doc_lines(doc):
            spans = [line] if fenced else code_spans(line)
            links = re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", line)
            for span in spans:
                for token in PATH_RE.findall(span):
                    if not tree.path_exists(token):
                        found.append(f"{rel}:{n}: no such path: {token}")
                for token in BARE_FILE_RE.findall(span):
                    if token not in tree.basenames and token not in EXTERNAL_FILES:
                        found.append(f"{rel}:{n}: no file named {token} in the tree")
                for name, tail in JP_RE.findall(span):
                    if not tree.jp_exists(name, tail or None):
                        found.append(f"{rel}:{n}: {name}{tail or ''} appears in no .c or .h file")
                for name in PY_RE.findall(span):
                    if name != "h" and not name.isupper() and not tree.py_exists(name):  # jaxprof.h; jaxprof.NAME
                        found.append(f"{rel}:{n}: jaxprof.{name} is not public (python/jaxprof/__init__.py)")
                for flag in FLAG_RE.findall(span):
                    if flag not in EXTERNAL_FLAGS and not tree.flag_exists(flag):
                        found.append(f"{rel}:{n}: flag {flag} is spelled in no source file")
            for link, anchor in links:
                if "://" in link or link.startswith("mailto:"):
                    continue
                target = (doc.parent / link).resolve() if link else doc
                if not target.exists():
                    found.append(f"{rel}:{n}: broken link {link}")
                elif anchor and target.suffix == ".md" and anchor not in anchors(target):
                    found.append(f"{rel}:{n}: no heading #{anchor} in {link or rel}")
    return found


def test_docs_name_only_what_exists():
    found = problems()
    assert not found, "stale names in the docs:\n" + "\n".join(found)


def test_the_check_catches_a_planted_name(tmp_path):
    """The checks are not vacuous: each kind of name, made up, is reported."""
    tree = Tree()
    assert tree.path_exists("src/decode/pb.c") and not tree.path_exists("src/decode/pb_renamed.c")
    assert tree.path_exists("tests/c/test_<module>.c") and tree.path_exists("src/analyses/*.c")
    assert tree.jp_exists("jp_pb_next", None) and not tree.jp_exists("jp_pb_next_renamed", None)
    assert tree.jp_exists("jp_http", "*") and not tree.jp_exists("jp_nosuchmodule", "*")
    assert tree.jp_exists("jp_load_options", ".has_steps") and not tree.jp_exists("jp_load_options", ".no_such_field")
    assert tree.py_exists("load") and not tree.py_exists("load_renamed")
    assert tree.flag_exists("--fail-if-op-slower") and tree.flag_exists("--host-tracer-level")
    assert not tree.flag_exists("--fail-if-op-slowr")


def test_a_planted_stale_name_fails_the_docs_check(tmp_path, monkeypatch):
    """A doc that names a renamed function, a moved file, a gone flag or a broken link is reported."""
    doc = tmp_path / "planted.md"
    doc.write_text("See `jp_diff_newer` in `src/compare/differ.c` and `jaxprof.loader`; pass `--no-such-flag`.\n"
                   "And [gone](nowhere.md), [here](#no-such-heading), [fine](#planted).\n# Planted\n")
    monkeypatch.setattr(sys.modules[__name__], "DOC_FILES", [doc])
    found = "\n".join(problems())
    for stale in ("jp_diff_newer", "src/compare/differ.c", "jaxprof.loader", "--no-such-flag", "nowhere.md",
                  "#no-such-heading"):
        assert stale in found, (stale, found)


def _cli_help_docs():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import cli_help_docs
    finally:
        sys.path.pop(0)
    return cli_help_docs


def test_cli_help_blocks_are_what_the_cli_prints():
    """docs/cli.md's `usage: jaxprof ...` blocks are lines of today's `jaxprof CMD --help`, so a
    renamed flag or a changed default cannot outlive its doc (tools/cli_help_docs.py --write
    rewrites them)."""
    from conftest import JAXPROF_BIN
    tool = _cli_help_docs()
    stale = tool.stale_blocks(str(JAXPROF_BIN), tool.DOC.read_text())
    assert not stale, "stale help blocks in docs/cli.md (run tools/cli_help_docs.py JAXPROF --write):\n" + \
        "\n".join(m.group(1).splitlines()[0] for m, _ in stale)
    blocks = list(tool.BLOCK.finditer(tool.DOC.read_text()))
    assert len(blocks) >= 20, len(blocks)  # every command has its block


def test_a_stale_help_block_is_caught():
    """The block check is not vacuous: an old flag spelling in a block is reported."""
    from conftest import JAXPROF_BIN
    tool = _cli_help_docs()
    doc = "```\nusage: jaxprof view [DIR]\n  --host ADDR        address to listen on (built-in viewer only)\n```\n"
    assert len(tool.stale_blocks(str(JAXPROF_BIN), doc)) == 1
    fresh = "```\n" + tool.help_text(str(JAXPROF_BIN), "usage: jaxprof view").split("\n\n")[0] + "\n```\n"
    assert tool.stale_blocks(str(JAXPROF_BIN), fresh) == []


if __name__ == "__main__":
    stale = problems()
    print("\n".join(stale) or "docs: every name exists")
    sys.exit(1 if stale else 0)
