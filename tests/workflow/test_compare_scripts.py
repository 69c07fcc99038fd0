"""scripts/compare_runs.py and scripts/compare_tables.py on damaged input: a broken log line, a byte that is
not UTF-8, a JSON line that is not an object, a cut table row, a binary table and empty tables are each one
line naming the file (and line) with the fix, exit status 2, never a traceback or a pass.

The comparisons themselves (seconds ignored, first difference named) are tested in tests/trainer/test_determinism.py.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def compare_runs():
    return _load("compare_runs")


@pytest.fixture(scope="module")
def compare_tables():
    return _load("compare_tables")


def _run(root: Path) -> Path:
    """A finished two-step run with one evaluation under ``root``."""
    d = root / "e" / "arm" / "seed~0"
    d.mkdir(parents=True)
    steps = [{"step": s, "time_s": 0.1 * s, "reward_mean": 1.0 + s} for s in (1, 2)]
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in steps))
    (d / "eval.jsonl").write_text(json.dumps({"step": 0, "dataset": "arith", "accuracy": 0.5}) + "\n")
    (d / "summary.json").write_text("{}")
    return d


def _one_line(capsys) -> str:
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (b'{"step": 2, "reward_me\n', "not a JSON line"),  # a damaged line (here the last one, of a finished run)
        (b'{"step": 2, "reward_mean": "\xff\xfe"}\n', "not UTF-8"),
        (b"[2, 3.0]\n", "not a JSON object"),
        (b"17\n", "not a JSON object"),
    ],
    ids=["cut", "not-utf8", "list", "number"],
)
@pytest.mark.parametrize("mode", [[], ["--shared-steps"], ["--outcomes"]], ids=["whole", "shared", "outcomes"])
def test_compare_runs_names_a_damaged_log_line(compare_runs, tmp_path, capsys, damage, why, mode):
    _run(tmp_path / "a")
    run_b = _run(tmp_path / "b")
    lines = (run_b / "metrics.jsonl").read_bytes().splitlines(keepends=True)
    (run_b / "metrics.jsonl").write_bytes(lines[0] + damage)
    assert compare_runs.main([*mode, str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    err = _one_line(capsys)
    assert f"{run_b / 'metrics.jsonl'}:2: {why}" in err
    assert "Fix: " in err


def _tables(root: Path, curves: bytes = b"setting,step,value\na,0,0.5\na,10,0.8\n") -> Path:
    root.mkdir()
    (root / "levels.csv").write_text("setting,speedup\na,1.5\n")
    (root / "curves.csv").write_bytes(curves)
    return root


@pytest.mark.parametrize(
    ("curves", "why"),
    [
        (b"setting,step,value\na,0,0.5\na,10\n", "line 3: 2 field(s) where the header has 3"),  # a cut last row
        (b"setting,step,value\na,0,0.5\na,10,0.8,7\n", "line 3: 4 field(s) where the header has 3"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "not UTF-8 text"),  # a binary file
        (b"setting,step,value\na,0,0.5\x00\n", "line 2"),  # a NUL byte: csv refuses the line
    ],
    ids=["cut-row", "long-row", "binary", "nul"],
)
def test_compare_tables_names_a_damaged_table(compare_tables, tmp_path, capsys, curves, why):
    _tables(tmp_path / "a")
    b = _tables(tmp_path / "b", curves)
    assert compare_tables.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    err = _one_line(capsys)
    assert str(b / "curves.csv") in err
    assert why in err
    assert "Fix: " in err


def test_compare_tables_does_not_call_empty_tables_identical(compare_tables, tmp_path, capsys):
    """Two 0-byte tables are no table at all (the workflow writes at least the header): an input error. Two
    tables with a header and no row compare nothing: EMPTY, not identical, and the run does not pass."""
    a = _tables(tmp_path / "a", b"")
    _tables(tmp_path / "b", b"")
    assert compare_tables.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    err = _one_line(capsys)
    assert f"{a / 'curves.csv'} is empty" in err
    assert "Fix: " in err
    for side in ("a", "b"):
        (tmp_path / side / "curves.csv").write_text("setting,step,value\n")
    assert compare_tables.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    out = capsys.readouterr().out
    assert "EMPTY      curves.csv: no rows on either side, nothing compared" in out
    assert "identical  curves.csv" not in out
    assert "1 of 2 shared tables equal" in out


def test_compare_tables_refuses_a_folder_that_is_not_one(compare_tables, tmp_path, capsys):
    _tables(tmp_path / "a")
    assert compare_tables.main([str(tmp_path / "a"), str(tmp_path / "nope")]) == 2
    err = _one_line(capsys)
    assert str(tmp_path / "nope") in err


def test_a_metric_logged_by_one_version_only_is_not_a_difference(tmp_path):
    """Runs of two versions, the later logging a new metric: the values both log decide (a changed one still
    counts)."""
    import json
    import subprocess
    import sys

    for side, extra in (("a", {}), ("b", {"gen_tokens": 12.0})):
        run = tmp_path / side / "x" / "seed~0"
        run.mkdir(parents=True)
        (run / "metrics.jsonl").write_text(json.dumps({"step": 1, "loss": 0.5, "time_s": 1.0, **extra}) + "\n")
        (run / "eval.jsonl").write_text(json.dumps({"step": 1, "dataset": "arith", "accuracy": 0.5}) + "\n")
        (run / "summary.json").write_text("{}")
    script = [sys.executable, "scripts/compare_runs.py", str(tmp_path / "a"), str(tmp_path / "b")]
    done = subprocess.run(script, capture_output=True, text=True, cwd=SCRIPTS.parent)
    assert done.returncode == 0, done.stdout
    run = tmp_path / "b" / "x" / "seed~0"
    (run / "metrics.jsonl").write_text(json.dumps({"step": 1, "loss": 0.6, "time_s": 1.0, "gen_tokens": 12.0}) + "\n")
    assert subprocess.run(script, capture_output=True, text=True, cwd=SCRIPTS.parent).returncode == 1
