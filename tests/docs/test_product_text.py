"""The product reads as a product, not as a lab notebook.

Code, comments, docstrings, tests, configs, scripts and docs say what the package does and why, and
cite the paper (arXiv 2504.13818) or docs/paper.md; how a choice was reached lives in notebook/ and
CHANGELOG.md. So no product file may carry the markers of its history: work periods ("session 12",
"s25"), tracker items ("issue 10", "criterion 1"), dates of past runs (YYYY-MM-DD), this repository's
commit hashes, references to a private PAPER.md, or paths into a private ``../shared`` folder (tests
and CI may use ``../shared/...`` to find local copies of data, and skip without them).

A link into the notebook (``notebook/LOG.md#<dated heading>``, ``notebook/records/<dated file>``) is
allowed: that is where a measurement behind a choice is kept.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# History by design: the notebook, the changelog and the dated benchmark records; and this file, whose
# examples are the markers themselves.
HISTORY = ("notebook/", "CHANGELOG.md", "benchmarks/results/", "tests/docs/test_product_text.py")

# Product files not rewritten yet. Each entry is a path or a folder prefix; delete an entry when the
# rewrite of those files lands, and the test then holds them to the same rule.
PENDING: tuple[str, ...] = ()  # paths not yet scrubbed (none left)

# Where ``../shared`` may appear: tests and CI locate local copies of the released logs and data there.
SHARED_ALLOWED = ("tests/", ".ci/")

# Lines that look like a marker and are not one (path, line pattern).
NOT_MARKERS = (
    ("CITATION.cff", re.compile(r"^date-released:")),  # the release date is citation metadata
)

MARKERS = {
    "session": re.compile(r"\b[Ss]ession[ -]\d+"),
    "session (sNN)": re.compile(r"\bs\d{2}(?:_|\b)"),
    "issue": re.compile(r"\b[Ii]ssue[ -]#?\d+"),
    "criterion": re.compile(r"\b[Cc]riterion[ -]\d+"),
    "date": re.compile(r"\b20\d{2}-\d{2}-\d{2}\b"),  # not an ISO timestamp (2031-02-03T00:00) of test data
    "PAPER.md": re.compile(r"PAPER\.md|PAPER §"),
    "../shared": re.compile(r"\.\./shared\b"),
}
HEX_WORD = re.compile(r"\b[0-9a-f]{7,40}\b")
NOTEBOOK_LINK = re.compile(r"notebook/[^\s)\]`'\"<>,;]*")

SKIP_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".pdf", ".gz", ".tgz", ".zip", ".whl", ".pt", ".safetensors")
SKIP_DIRS = {".git", ".venv", "results", "resources", ".snakemake", "__pycache__", ".pytest_cache", ".ruff_cache"}


def _git(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(REPO), *args], input=stdin, capture_output=True, text=True, check=False)


def _in_git_checkout() -> bool:
    try:
        return _git("rev-parse", "--is-inside-work-tree").stdout.strip() == "true"
    except OSError:  # no git on this machine
        return False


def _files() -> list[str]:
    """Repository-relative paths of the files to scan: tracked ones in a checkout, else every file on disk."""
    if _in_git_checkout():
        paths = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard").stdout.split("\0")
    else:
        paths = [
            str(p.relative_to(REPO))
            for p in REPO.rglob("*")
            if p.is_file() and not SKIP_DIRS.intersection(p.relative_to(REPO).parts)
        ]
    return sorted(p for p in paths if p and not p.startswith(HISTORY) and not p.endswith(SKIP_SUFFIXES))


def product_lines(pending: tuple[str, ...] = PENDING) -> list[tuple[str, int, str]]:
    """(path, line number, text) of every product line, notebook links blanked out."""
    out = []
    for rel in _files():
        if rel.startswith(pending):
            continue
        path = REPO / rel
        if not path.is_file():  # deleted in the work tree, still in the index
            continue
        raw = path.read_bytes()
        if b"\0" in raw:
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        for no, line in enumerate(text.splitlines(), 1):
            out.append((rel, no, NOTEBOOK_LINK.sub("notebook/", line)))
    return out


def history_markers(lines: list[tuple[str, int, str]]) -> list[str]:
    found = []
    for rel, no, line in lines:
        if any(rel == p and rx.search(line) for p, rx in NOT_MARKERS):
            continue
        for kind, rx in MARKERS.items():
            if kind == "../shared" and rel.startswith(SHARED_ALLOWED):
                continue
            m = rx.search(line)
            if m:
                found.append(f"{rel}:{no}: {kind}: {m.group(0)!r}")
    return found


def commit_hashes(lines: list[tuple[str, int, str]]) -> list[str]:
    """Hex words of 7-40 characters that name a commit of this repository."""
    where: dict[str, list[str]] = {}
    for rel, no, line in lines:
        for word in HEX_WORD.findall(line):
            where.setdefault(word, []).append(f"{rel}:{no}")
    words = sorted(where)
    if not words:
        return []
    res = _git("cat-file", "--batch-check=%(objecttype)", stdin="".join(f"{w}\n" for w in words))
    kinds = res.stdout.splitlines()
    assert len(kinds) == len(words), res.stderr  # one answer per word, "<word> missing" for no object
    return [f"{loc}: commit {w}" for w, kind in zip(words, kinds, strict=True) if kind == "commit" for loc in where[w]]


def test_product_has_no_history_markers():
    found = history_markers(product_lines())
    assert not found, (
        "the product must not read like a lab notebook: keep the fact and its why, drop the marker, and link "
        "notebook/LOG.md#<heading> where the why is a measurement; cite the paper as arXiv 2504.13818 or "
        "docs/paper.md#<anchor>:\n" + "\n".join(found)
    )


def test_product_names_no_commit_of_this_repository():
    if not _in_git_checkout():
        pytest.skip("not a git checkout: no commits to look up")
    found = commit_hashes(product_lines())
    assert not found, "the product must not cite this repository's commits:\n" + "\n".join(found)


def test_the_scan_finds_each_kind_of_marker(tmp_path):
    """The checks above can fail: each marker, planted in a line, is found; a notebook link and the
    allowed ``../shared`` of a test are not."""
    planted = [
        ("pods/x.py", "# measured in session 31"),
        ("pods/x.py", "see ../s25_job/results"),
        ("pods/x.py", "asked by issue 10"),
        ("pods/x.py", "criterion 1 holds"),
        ("pods/x.py", "on 2031-02-03 the job took 40 min"),
        ("pods/x.py", "as PAPER.md says"),
        ("pods/x.py", "reads ../shared/data"),
    ]
    found = history_markers([(rel, no, text) for no, (rel, text) in enumerate(planted, 1)])
    assert [f.split(": ")[1] for f in found] == [
        "session",
        "session (sNN)",
        "issue",
        "criterion",
        "date",
        "PAPER.md",
        "../shared",
    ]
    allowed = [
        ("pods/x.py", 1, "the record: " + NOTEBOOK_LINK.sub("notebook/", "notebook/LOG.md#2031-02-03-a-run")),
        ("tests/test_x.py", 2, "DATA = '../shared/data'"),
        ("tests/test_x.py", 3, "held.write('since 2031-02-03T00:00:00')"),
        ("CITATION.cff", 4, 'date-released: "2031-02-03"'),
    ]
    assert history_markers(allowed) == []


def test_the_scan_finds_a_commit_of_this_repository():
    if not _in_git_checkout():
        pytest.skip("not a git checkout: no commits to look up")
    head = _git("rev-parse", "--short=9", "HEAD").stdout.strip()
    found = commit_hashes([("pods/x.py", 7, f"fixed in {head}"), ("pods/x.py", 8, "the authors' code at 187f43b")])
    assert found == [f"pods/x.py:7: commit {head}"]
