"""pods_repro.analysis.released_logs: the committed SHA-256 manifest of the authors' released logs, verification of a
local copy, and the download of the pinned release (offline: a file:// tarball and an unreachable host).

The README's released-logs command downloads the pinned release by default, verified
against the manifest; a local copy (``--config released_logs=DIR``) is verified the same way; a failed
download says why and what to do instead.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import tarfile
from pathlib import Path

import pytest

from pods_repro.analysis import released_logs as R

REPO = Path(__file__).resolve().parents[2]
RELEASED = REPO.parent / "shared" / "reference" / "pods-released-results"
needs_released = pytest.mark.skipif(not RELEASED.is_dir(), reason=f"{RELEASED} (the released logs) is not here")


def fake_release(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "Instruct-GSM8K-512-16-16-Run1.json").write_text('{"0": 0.5}\n')
    (folder / "h100s-acc.csv").write_text("step,acc\n1,0.5\n")
    (folder / "sub").mkdir()
    (folder / "sub" / "README.md").write_text("released\n")
    return folder


def tarball(src: Path, path: Path, top: str = "pods-187f43b") -> Path:
    """A GitHub-style archive: top/results/<files of src> plus files outside results/."""
    with tarfile.open(path, "w:gz") as tar:
        for f in sorted(src.rglob("*")):
            if f.is_file():
                tar.add(f, arcname=f"{top}/results/{f.relative_to(src).as_posix()}")
        data = b"not a log\n"
        info = tarfile.TarInfo(f"{top}/README.md")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


def test_manifest_is_sha256sum_format_of_the_148_released_files():
    lines = R.MANIFEST.read_text().splitlines()
    assert len(lines) == 148
    assert all(re.fullmatch(r"[0-9a-f]{64}  [A-Za-z0-9._-]+", line) for line in lines), lines[:3]
    assert lines == sorted(lines, key=lambda line: line.split("  ", 1)[1])
    names = set(R.read_manifest())
    assert {"h100s-acc.csv", "a100s-acc.csv", "Instruct-GSM8K-512-64-16-Run1.json", "base-qwen.json"} <= names


@needs_released
def test_the_local_copy_matches_the_committed_manifest():
    assert R.verify(RELEASED) == 148
    assert R.make_manifest(RELEASED) == R.MANIFEST.read_text()


def test_verify_names_missing_altered_and_unexpected_files(tmp_path, capsys):
    folder = fake_release(tmp_path / "results")
    manifest = tmp_path / "m.sha256"
    manifest.write_text(R.make_manifest(folder))
    assert R.verify(folder, manifest) == 3
    (folder / ".DS_Store").write_text("hidden files are ignored")
    assert R.verify(folder, manifest) == 3

    (folder / "h100s-acc.csv").write_text("step,acc\n1,0.9\n")
    (folder / "sub" / "README.md").unlink()
    (folder / "extra.json").write_text("{}")
    with pytest.raises(R.ReleasedLogsError) as err:
        R.verify(folder, manifest)
    text = str(err.value)
    assert "1 missing: sub/README.md" in text
    assert "1 altered (SHA-256 differs): h100s-acc.csv" in text
    assert "1 not in the release: extra.json" in text
    assert "Fix:" in text
    # The CLI prints it (exit 2, bad input), and accepts the good folder.
    assert R.main(["verify", str(folder), "--manifest", str(manifest)]) == 2
    assert "altered" in capsys.readouterr().err
    with pytest.raises(R.ReleasedLogsError, match="does not exist"):
        R.verify(tmp_path / "nope", manifest)


@pytest.mark.parametrize("use_curl", [True, False], ids=["curl", "urllib"])
def test_download_keeps_results_and_verifies(tmp_path, monkeypatch, use_curl):
    if use_curl and shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    if not use_curl:
        monkeypatch.setattr(R.shutil, "which", lambda name: None)
    src = fake_release(tmp_path / "src")
    manifest = tmp_path / "m.sha256"
    manifest.write_text(R.make_manifest(src))
    url = tarball(src, tmp_path / "release.tar.gz").as_uri()
    dest = tmp_path / "resources" / "released" / "results"
    assert R.download(dest, url, manifest) == 3
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "Instruct-GSM8K-512-16-16-Run1.json",
        "h100s-acc.csv",
        "sub/README.md",
    ]
    assert [p.name for p in dest.parent.iterdir()] == ["results"]  # no temporary files left


def test_a_tampered_download_leaves_nothing(tmp_path, capsys):
    src = fake_release(tmp_path / "src")
    manifest = tmp_path / "m.sha256"
    manifest.write_text(R.make_manifest(src))
    (src / "h100s-acc.csv").write_text("tampered\n")
    url = tarball(src, tmp_path / "release.tar.gz").as_uri()
    dest = tmp_path / "out" / "results"
    rc = R.main(["download", "--url", url, "--dest", str(dest), "--manifest", str(manifest)])
    assert rc == 1
    err = capsys.readouterr().err
    assert "download failed: checksum mismatch" in err
    assert "h100s-acc.csv" in err
    assert not dest.exists()


def test_a_failed_download_prints_why_and_the_local_copy_option(tmp_path, capsys):
    dest = tmp_path / "out" / "results"
    log = tmp_path / "download.log"
    # Port 9 (discard) on the loopback interface: refused at once, no network needed.
    rc = R.main(["download", "--url", "http://127.0.0.1:9/x.tar.gz", "--dest", str(dest), "--log", str(log)])
    assert rc == 1
    err = capsys.readouterr().err
    assert err.startswith("error: download failed: ")
    if shutil.which("curl"):
        assert "could not connect (curl exit 7" in err
    assert "use --config released_logs=DIR with a local copy" in err
    assert "download failed" in log.read_text()  # logged as well as printed
    assert not dest.exists()


def test_verify_fails_on_link_loops_dangling_links_and_links_out_of_the_folder(tmp_path, capsys):
    """A symlink loop or a dangling link among the files was skipped as "not a file", and a link to a file
    outside the folder was hashed through: verify passed. Each is now a failure naming the file."""
    folder = fake_release(tmp_path / "results")
    (folder / "sub" / "inside.json").symlink_to("../Instruct-GSM8K-512-16-16-Run1.json")  # a link inside: a file
    manifest = tmp_path / "m.sha256"
    manifest.write_text(R.make_manifest(folder))
    assert R.verify(folder, manifest) == 4
    (folder / "loop.json").symlink_to("loop.json")
    (folder / "sub" / "gone.csv").symlink_to(tmp_path / "nowhere.csv")
    outside = tmp_path / "copy.csv"
    shutil.copy(folder / "h100s-acc.csv", outside)
    (folder / "h100s-acc.csv").unlink()
    (folder / "h100s-acc.csv").symlink_to(outside)  # the released bytes, but not in the folder
    with pytest.raises(R.ReleasedLogsError) as err:
        R.verify(folder, manifest)
    text = str(err.value)
    assert "3 unusable links: h100s-acc.csv (points outside the folder" in text
    assert "loop.json (a symlink loop)" in text
    assert "sub/gone.csv (dangling: its target" in text
    assert "inside.json" not in text
    os.mkfifo(folder / "pipe.json")  # read as a log it would block; skipped, it passed unseen
    with pytest.raises(R.ReleasedLogsError, match=r"1 not regular files: pipe\.json \(not a regular file\)"):
        R.verify(folder, manifest)
    assert R.main(["verify", str(folder), "--manifest", str(manifest)]) == 2
    err_text = capsys.readouterr().err
    assert "loop.json (a symlink loop)" in err_text
    assert len(err_text.strip().splitlines()) == 1


@pytest.mark.parametrize("content", [b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", b"\x00" * 64], ids=["binary", "nul"])
def test_a_binary_or_unreadable_manifest_is_one_line(tmp_path, capsys, content):
    folder = fake_release(tmp_path / "results")
    manifest = tmp_path / "m.sha256"
    manifest.write_bytes(content)
    assert R.main(["verify", str(folder), "--manifest", str(manifest)]) == 2
    err = capsys.readouterr().err
    assert str(manifest) in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert "Fix: " in err


def test_a_manifest_that_is_a_folder_or_missing_says_so(tmp_path, capsys):
    folder = fake_release(tmp_path / "results")
    for manifest, why in ((tmp_path, "is a folder"), (tmp_path / "none.sha256", "not found")):
        assert R.main(["verify", str(folder), "--manifest", str(manifest)]) == 2
        err = capsys.readouterr().err
        assert f"{manifest} {why}" in err
        assert "reinstall" not in err  # a manifest the user named, not the package's
