"""`pods quickstart`: the five-minute path trains both arms of the tiny (a) comparison, writes its tables and
figure and says in one line what they show, the line following the verdict rules of the results page."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pods_repro import quickstart

REPO = Path(__file__).resolve().parents[2]


def _row(lo, hi, point=1.5, t_pods=10.0, seeds=5):
    return pd.Series({"speedup_steps": point, "speedup_steps_ci_low": lo, "speedup_steps_ci_high": hi,
                      "t_pods_s": t_pods, "n_seeds_pods": seeds})  # fmt: skip


def test_the_closing_line_follows_the_interval():
    assert quickstart._verdict(_row(1.1, 2.0)).startswith("PODS reached GRPO's 99%-of-peak accuracy in fewer")
    assert quickstart._verdict(_row(0.2, 0.9, point=0.5)).startswith("PODS needed more optimizer steps")
    assert quickstart._verdict(_row(0.8, 2.0)).startswith("not resolved at 5 seeds per arm")
    assert "no interval below 5 seeds" in quickstart._verdict(_row(math.nan, math.nan, seeds=3))
    assert quickstart._verdict(_row(0.0, 1.0, point=0.0, t_pods=math.inf)).startswith("PODS did not reach")


def test_bad_arguments_are_one_line(capsys):
    assert quickstart.main(["--steps", "3"]) == 2
    assert "--steps >= 25" in capsys.readouterr().err


@pytest.mark.slow
def test_quickstart_runs_end_to_end(tmp_path):
    """The real command at its smallest: one seed per arm, 25 steps (the tiny model is built once per cache)."""
    env = {**os.environ, "PODS_CACHE": os.environ.get("PODS_CACHE", str(REPO / "resources" / "models"))}
    out = tmp_path / "qs"
    done = subprocess.run(
        [sys.executable, "-m", "pods_repro", "quickstart", "--seeds", "1", "--steps", "25", "-j", "2", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=1800, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "steps to 0.99 x GRPO's peak" in done.stdout
    for name in ("curves.csv", "steps.csv", "time_to_peak.csv"):
        assert (out / "tables" / name).exists()
    assert (out / "fig_3_a.png").exists()
    assert len(list(out.glob("runs/a/*/seed~0/summary.json"))) == 2  # GRPO 16/16 and PODS 64/16


def test_steps_below_one_interval_are_documented(capsys):
    with pytest.raises(SystemExit):
        quickstart.main(["--help"])
    assert "at least 25" in " ".join(capsys.readouterr().out.split())


def test_an_output_path_that_is_a_file_is_one_line(tmp_path, capsys):
    afile = tmp_path / "qs"
    afile.write_text("x")
    for out in (afile, afile / "deeper"):
        assert quickstart.main(["--seeds", "1", "--steps", "25", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert "is a file, not a folder" in err
    assert afile.read_text() == "x"


def test_fewer_steps_than_trained_are_refused(tmp_path, capsys):
    """The table would be the longer runs', under a line saying "25 steps each": refused, naming the fix."""
    run = tmp_path / "qs" / "runs" / "a" / "sel~max_variance_n~16_m~16" / "seed~0"
    run.mkdir(parents=True)
    (run / "summary.json").write_text('{"steps": 50}')
    assert quickstart.main(["--seeds", "1", "--steps", "25", "--out", str(tmp_path / "qs")]) == 2
    err = capsys.readouterr().err
    assert "have trained 50 steps" in err
    assert "--steps 50 or more" in err
    assert sorted(p.name for p in (tmp_path / "qs").iterdir()) == ["runs"]  # nothing built or written
