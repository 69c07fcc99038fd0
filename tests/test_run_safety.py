"""Run-directory safety (issue 13 items 4, 5, 7, 8): one writer per run directory, damaged runs are
named instead of passing silently, unusable inputs exit 2 before any work, resume from a copied
directory, and a full disk is reported as such.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pods import cli

REPO = Path(__file__).resolve().parents[1]
TINY_A = REPO / "experiments" / "tiny_a.yaml"
SHORT = ("budget.max_steps=2", "eval.every_steps=2", "eval.max_examples=2", "checkpoint.every_steps=1")


def _train_cli(tiny_overrides, out: Path, *extra: str) -> int:
    return cli.main(["train", str(TINY_A), *tiny_overrides, *SHORT, f"out_dir={out}", *extra])


# ----------------------------------------------------------------------------------------------
# Item 4: one writer per run directory


def test_second_writer_is_refused_while_the_first_holds_the_run_dir(tiny_overrides, tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    with open(out / ".pods.lock", "a+") as held:  # what the first `pods train` holds while it runs
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("pid 12345 on host since 2026-01-01T00:00:00+00:00\n")
        held.flush()
        code = _train_cli(tiny_overrides, out)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "in use by another `pods train` (pid 12345" in err
    assert "Traceback" not in err
    assert [p.name for p in out.iterdir()] == [".pods.lock"]  # nothing read or written


def test_lock_of_a_killed_process_does_not_block_a_resume(tmp_path):
    from pods.runlog import run_dir_lock

    code = (
        "import os, signal, sys; from pods.runlog import run_dir_lock\n"
        "with run_dir_lock(sys.argv[1]):\n"
        "    print('locked', flush=True); os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == -signal.SIGKILL
    assert proc.stdout.strip() == "locked"
    assert (tmp_path / ".pods.lock").exists()  # the file stays, the lock does not
    with run_dir_lock(tmp_path):
        assert f"pid {os.getpid()}" in (tmp_path / ".pods.lock").read_text()


# ----------------------------------------------------------------------------------------------
# A finished run to damage, copy or resume


@pytest.fixture(scope="module")
def finished_run(tiny_overrides, tmp_path_factory):
    """A finished 2-step run (checkpoint every step); tests damage copies of it."""
    out = tmp_path_factory.mktemp("finished") / "run"
    assert _train_cli(tiny_overrides, out) == 0
    return out


def _copy(run: Path, dest: Path) -> Path:
    import shutil

    shutil.copytree(run, dest, symlinks=True)
    return dest


# ----------------------------------------------------------------------------------------------
# Item 8: resume from a copied directory; a full disk named as such


def test_killed_run_copied_elsewhere_resumes_there(finished_run, tiny_overrides, tmp_path, capsys):
    """A run killed after its last checkpoint (no summary, no final policy), copied to another folder."""
    import json

    run = _copy(finished_run, tmp_path / "elsewhere" / "run")
    (run / "summary.json").unlink()
    import shutil

    shutil.rmtree(run / "final")
    assert _train_cli(tiny_overrides, run) == 0, capsys.readouterr().err
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 2
    assert (run / "metrics.jsonl").read_bytes() == (finished_run / "metrics.jsonl").read_bytes()
    assert (run / "final").is_dir()
