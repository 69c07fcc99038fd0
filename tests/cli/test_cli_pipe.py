"""The installed ``pods`` command at a shell: a closed stdout, and what ``pods train --help`` takes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PODS = [sys.executable, "-m", "pods_repro"]
REPO = Path(__file__).resolve().parents[2]


def test_a_closed_stdout_ends_the_command_quietly():
    # `pods config | head`: the reader goes away before pods writes; the write must not end in a traceback.
    proc = subprocess.Popen([*PODS, "config"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    proc.stdout.close()  # closed before anything is read: every write of the child meets EPIPE
    err = proc.stderr.read().decode()
    rc = proc.wait(timeout=120)
    proc.stderr.close()
    assert err == "", err
    assert rc == 141


def test_train_help_says_a_shipped_name_works():
    out = subprocess.run([*PODS, "train", "--help"], capture_output=True, text=True, cwd=REPO, check=True).stdout
    usage = out.split("overrides:")[0]  # the arguments' help, above the key listing
    assert "experiments/*.yaml" not in usage
    assert "tiny_a" in usage
    assert "pods list" in usage
    out = subprocess.run([*PODS, "validate", "--help"], capture_output=True, text=True, cwd=REPO, check=True).stdout
    assert "shipped experiment" in out
