"""The authors' released evaluation logs: download of the pinned release and SHA-256 verification.

The paper's released logs are the files of the folder ``results/`` of github.com/YixuanEvenXu/pods at
commit 187f43b648f69385103029c2dd0934521e17bb71 (148 files, 44 MB). :data:`MANIFEST` (shipped with the
package, ``sha256sum`` format) holds the SHA-256 of each of them, computed from a copy of that folder.
Whatever folder the re-analysis reads, a download or a local copy, is checked against it first, so the
table in the README is reproduced from exactly the released bytes. A symbolic link in the folder counts as
the file it points to only when that file lies inside the folder; a link loop, a dangling link, a link out of
the folder and an entry that is not a regular file (a FIFO) each fail the check, named.

    python -m pods_repro.analysis.released_logs verify DIR                      # a local copy: exit 0 iff it matches
    python -m pods_repro.analysis.released_logs download --dest DIR [--url URL] # the pinned tarball -> DIR, verified
    python -m pods_repro.analysis.released_logs manifest DIR > pods_repro/analysis/released_logs.sha256   (maintainers only)

The workflow (rules/released.smk) downloads when ``--config released_logs=DIR`` is not given and
verifies either folder before ``pods_repro.analysis released`` reads it. Failures are printed on stderr in
one line that says why and what to do instead ("download failed: no network (curl exit 6); use
--config released_logs=DIR with a local copy ...").
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from pods_repro.textutil import NotTextError, decode_text

REPOSITORY = "https://github.com/YixuanEvenXu/pods"
COMMIT = "187f43b648f69385103029c2dd0934521e17bb71"
URL = f"{REPOSITORY}/archive/{COMMIT}.tar.gz"
FOLDER = "results"  # the folder of the repository that holds the logs
MANIFEST = Path(__file__).with_name("released_logs.sha256")
LOCAL_HINT = (
    "use --config released_logs=DIR with a local copy of the authors' results/ folder "
    f"({REPOSITORY} at commit {COMMIT[:7]})"
)

# curl exit codes worth a plain-words reason (man curl, EXIT CODES).
CURL_REASONS = {
    5: "no network (proxy host not found)",
    6: "no network (host not found)",
    7: "could not connect",
    22: "the server answered with an HTTP error",
    28: "timed out",
    35: "TLS handshake failed",
    52: "empty reply from server",
    56: "connection reset while receiving",
    60: "TLS certificate not trusted",
}


class ReleasedLogsError(Exception):
    """The released logs are missing, altered or could not be fetched; the message says what to do."""


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _files(folder: Path) -> list[str]:
    """Relative POSIX paths of the regular files under `folder`, hidden files and folders left out."""
    out = []
    for path in folder.rglob("*"):
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts) or not path.is_file():
            continue
        out.append(rel.as_posix())
    return sorted(out)


def _unusable_entries(folder: Path) -> tuple[list[str], list[str]]:
    """(links, others) under `folder`, hidden entries left out as in :func:`_files`: symbolic links that cannot
    stand for a released file (a loop, dangling, or pointing outside the folder), and entries that are neither
    files nor folders (a FIFO, a socket, a device). Each is ``"<relative path> (why)"``. A link to a file
    inside the folder is that file."""
    root = folder.resolve()
    links, others = [], []
    for dirpath, dirnames, filenames in os.walk(folder):  # followlinks=False: a linked folder is an entry here
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in [*dirnames, *filenames]:
            if name.startswith("."):
                continue
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                try:
                    real = path.resolve(strict=True)
                except RuntimeError:  # Python < 3.13 reports a loop so
                    links.append(f"{rel} (a symlink loop)")
                    continue
                except OSError as e:
                    if e.errno == errno.ELOOP:
                        links.append(f"{rel} (a symlink loop)")
                    else:
                        links.append(f"{rel} (dangling: its target {os.readlink(path)} does not exist)")
                    continue
                if not real.is_relative_to(root):
                    links.append(f"{rel} (points outside the folder, to {real})")
            elif not path.is_dir() and not path.is_file():
                others.append(f"{rel} (not a regular file)")
    return sorted(links), sorted(others)


def make_manifest(folder: str | os.PathLike) -> str:
    """``sha256sum``-format text (``<hex>  <relative path>`` per line, sorted) of every file in `folder`."""
    folder = Path(folder)
    return "".join(f"{sha256_of(folder / rel)}  {rel}\n" for rel in _files(folder))


def read_manifest(path: str | os.PathLike = MANIFEST) -> dict[str, str]:
    """Relative path -> SHA-256 hex digest; :class:`ReleasedLogsError` in one line naming the file otherwise."""
    path = Path(path)
    fix = f"Fix: give the package's manifest ({MANIFEST}) or one written by `python -m pods_repro.analysis.released_logs manifest DIR`"
    if path.is_dir():
        raise ReleasedLogsError(f"checksum manifest {path} is a folder, not a `sha256sum`-format file. {fix}")
    if not path.is_file():
        if path.resolve() == MANIFEST.resolve():
            raise ReleasedLogsError(f"checksum manifest {path} not found: reinstall the package (it ships the file)")
        raise ReleasedLogsError(f"checksum manifest {path} not found. {fix}")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ReleasedLogsError(f"checksum manifest {path} cannot be read ({e.strerror or e}). {fix}") from None
    try:
        text = decode_text(data)
    except NotTextError as e:
        if e.byte is None:
            raise ReleasedLogsError(
                f"checksum manifest {path} holds a NUL byte: a binary file, not text. {fix}"
            ) from None
        raise ReleasedLogsError(
            f"checksum manifest {path} is not text (byte 0x{e.byte:02x} at offset {e.offset} is not UTF-8: "
            f"a binary file?). {fix}"
        ) from None
    out = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        digest, sep, rel = line.partition("  ")
        if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest) or not rel:
            raise ReleasedLogsError(f"{path} line {number} is not `<sha256>  <path>`. {fix}")
        out[rel] = digest
    if not out:
        raise ReleasedLogsError(f"checksum manifest {path} holds no checksum. {fix}")
    return out


def verify(folder: str | os.PathLike, manifest: str | os.PathLike = MANIFEST) -> int:
    """Check that `folder` holds exactly the released files, byte for byte; returns the number of files.

    Raises ReleasedLogsError naming the first few missing, altered or unexpected files.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ReleasedLogsError(
            f"released logs folder {folder} does not exist: {LOCAL_HINT}, or leave it unset to download"
        )
    expected = read_manifest(manifest)
    present = set(_files(folder))
    missing = sorted(set(expected) - present)
    extra = sorted(present - set(expected))
    altered = sorted(rel for rel in set(expected) & present if sha256_of(folder / rel) != expected[rel])
    links, others = _unusable_entries(folder)  # skipped by _files or read through: named, never passed
    problems = []
    for what, names in (
        ("missing", missing),
        ("altered (SHA-256 differs)", altered),
        ("not in the release", extra),
        ("unusable links", links),
        ("not regular files", others),
    ):
        if names:
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            problems.append(f"{len(names)} {what}: {shown}")
    if problems:
        raise ReleasedLogsError(
            f"{folder} is not the authors' released results/ folder ({'; '.join(problems)}; checked against "
            f"{manifest}). Fix: point released_logs at an unmodified copy of {REPOSITORY}/tree/{COMMIT}/{FOLDER}, "
            "or leave it unset to download it"
        )
    return len(expected)


def _fetch(url: str, dest: Path, timeout_s: int) -> None:
    """Download `url` to the file `dest` (curl when installed, else urllib); ReleasedLogsError on failure."""
    curl = shutil.which("curl")
    if curl:
        res = subprocess.run(
            [curl, "-fsSL", "--connect-timeout", "30", "--max-time", str(timeout_s), "-o", str(dest), url],
            capture_output=True,
            text=True,
        )
        if res.returncode != 0:
            reason = CURL_REASONS.get(res.returncode, "curl failed")
            detail = " ".join(res.stderr.split())
            raise ReleasedLogsError(
                f"download failed: {reason} (curl exit {res.returncode}{': ' + detail if detail else ''})"
            )
        return
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp, open(dest, "wb") as fh:
            shutil.copyfileobj(resp, fh)
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise ReleasedLogsError(f"download failed: {reason}") from None


def _extract_results(archive: Path, dest: Path) -> int:
    """The files of `<top>/results/` in a GitHub tarball -> `dest`; returns how many."""
    count = 0
    with tarfile.open(archive, "r:*") as tar:
        for member in tar:
            parts = member.name.split("/")
            if len(parts) < 3 or parts[1] != FOLDER or not member.isfile():
                continue
            rel = Path(*parts[2:])
            if rel.is_absolute() or ".." in rel.parts:
                raise ReleasedLogsError(f"download failed: unsafe path {member.name!r} in {archive}")
            out = dest / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            with tar.extractfile(member) as src, open(out, "wb") as fh:
                shutil.copyfileobj(src, fh)
            count += 1
    if not count:
        raise ReleasedLogsError(f"download failed: the archive has no {FOLDER}/ folder")
    return count


def download(
    dest: str | os.PathLike, url: str = URL, manifest: str | os.PathLike = MANIFEST, timeout_s: int = 900
) -> int:
    """Download the pinned release, keep its results/ files in `dest`, verify them; returns the file count.

    `dest` appears only once the files are verified (a failed or altered download leaves nothing).
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".download-") as tmp:
        archive = Path(tmp) / "release.tar.gz"
        _fetch(url, archive, timeout_s)
        staged = Path(tmp) / FOLDER
        try:
            _extract_results(archive, staged)
        except (tarfile.TarError, EOFError, OSError) as err:
            raise ReleasedLogsError(f"download failed: {url} is not a readable tar.gz ({err})") from None
        try:
            count = verify(staged, manifest)
        except ReleasedLogsError as err:
            raise ReleasedLogsError(f"download failed: checksum mismatch: {err}") from None
        if dest.exists():
            shutil.rmtree(dest)
        staged.rename(dest)
    return count


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        allow_abbrev=False, prog="python -m pods_repro.analysis.released_logs", description=__doc__.split("\n")[0]
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("verify", allow_abbrev=False, help="check a folder against the manifest")
    p.add_argument("folder")
    p.add_argument("--manifest", default=str(MANIFEST))
    p = sub.add_parser(
        "download", allow_abbrev=False, help="download the pinned release's results/ folder and verify it"
    )
    p.add_argument("--dest", required=True, help="folder to create (e.g. resources/released/pods-187f43b/results)")
    p.add_argument("--url", default=URL)
    p.add_argument("--manifest", default=str(MANIFEST))
    p.add_argument("--log", help="also append what happened to this file")
    p = sub.add_parser("manifest", allow_abbrev=False, help="print the manifest of a folder (maintainers)")
    p.add_argument("folder")
    args = ap.parse_args(argv)

    def log(line: str) -> None:
        if getattr(args, "log", None):
            Path(args.log).parent.mkdir(parents=True, exist_ok=True)
            with open(args.log, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")

    try:
        if args.cmd == "manifest":
            if not Path(args.folder).is_dir():
                raise ReleasedLogsError(f"{args.folder} is not a folder")
            sys.stdout.write(make_manifest(args.folder))
        elif args.cmd == "verify":
            n = verify(args.folder, args.manifest)
            print(f"{args.folder}: {n} files match {args.manifest}")
        else:
            log(f"downloading {args.url} -> {args.dest}")
            n = download(args.dest, args.url, args.manifest)
            print(f"downloaded and verified {n} files into {args.dest}")
            log(f"ok: {n} files verified against {args.manifest}")
    except ReleasedLogsError as err:
        message = str(err)
        if args.cmd == "download":
            message += f"; {LOCAL_HINT}"
        log(message)
        print(f"error: {message}", file=sys.stderr)
        return 2 if args.cmd != "download" else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
