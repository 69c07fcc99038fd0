"""The default job's record made in sittings (pods_repro.analysis.record): real runs are added, a recomputed run must
agree with the record, a run trained under another config is refused, and the runs still to train are listed as
Snakemake targets."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pods_repro.analysis import record
from pods_repro.analysis.tidy import AnalysisInputError
from pods_repro.config.fingerprint import config_fingerprint
from pods_repro.run import train

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def job(tmp_path_factory, tiny_overrides):
    """A job root with two finished real runs (the test policy, 2 steps) and their Snakemake benchmark files,
    and the default job taken to be those two runs plus a third, not trained."""
    from pods_repro.config import load_config

    root = tmp_path_factory.mktemp("job") / "results"
    expected = {}
    for name, seed, extra in (("sel~max_variance_n~8_m~4", 0, ()), ("sel~max_variance_n~8_m~8", 1, ("rollout.m=8",))):
        key = f"a/{name}/seed~{seed}"
        over = [*tiny_overrides, "budget.max_steps=2", f"seed={seed}", *extra]
        cfg = load_config(REPO / "experiments" / "tiny_a.yaml", [*over, f"out_dir={root / 'runs' / key}"])
        train(cfg)
        expected[key] = record.ExpectedRun(key, "a", "experiments/tiny_a.yaml", tuple(over), config_fingerprint(cfg)[1])
        bench = root / "logs" / "train" / f"{key}.benchmark.tsv"
        bench.parent.mkdir(parents=True, exist_ok=True)
        bench.write_text("s\tmax_rss\n12.5\t1\n")
    expected["a/sel~random_n~8_m~4/seed~0"] = record.ExpectedRun("a/sel~random_n~8_m~4/seed~0", "a", "", (), "x")
    return root, expected


@pytest.fixture
def fake_job(job, monkeypatch):
    root, expected = job
    monkeypatch.setattr(record, "expected_runs", lambda scale_name="tiny": expected)
    return root, expected


def test_a_sitting_adds_its_runs_and_a_second_one_agrees(fake_job, tmp_path):
    root, expected = fake_job
    data = tmp_path / "data"
    got = record.record_sitting(root, data, 600.0, 40.0)
    assert got == {"added": 2, "agreed": 0, "recorded": 2, "expected": 3}
    steps = pd.read_csv(data / "tiny" / "steps.csv.gz")
    assert set(steps["run"]) == set(list(expected)[:2])
    for col in ("train_cpu_s", "eval_cpu_s", "cpu_s_last_session", "wall_s_last_session", "eval_time_s"):
        assert (steps[col] > 0).all(), col  # per-run CPU and wall seconds
    assert steps["source"].str.startswith("runs/").all()  # no folder of the recording machine
    assert record.missing_runs(data) == ["results/runs/a/sel~random_n~8_m~4/seed~0/summary.json"]
    assert record.record_status(steps, expected) == {"a": (2, 3)}
    again = record.record_sitting(root, data, 60.0)  # the same runs recomputed: they agree
    assert again == {"added": 0, "agreed": 2, "recorded": 2, "expected": 3}
    job = json.loads((data / "tiny" / "job.json").read_text())
    assert [s["sitting"] for s in job["sittings"]] == [1, 2]
    assert job["wall_s"] == 660.0
    assert job["runs_recorded"] == 2
    assert job["runs_expected"] == 3
    assert {"cpu", "cores", "torch", "run_cpu_s"} <= set(job["sittings"][0])
    record.check_record(steps, expected)


def test_a_recomputed_run_with_other_curves_is_refused(fake_job, tmp_path):
    root, _ = fake_job
    data = tmp_path / "data"
    record.record_sitting(root, data, 600.0)
    curves = pd.read_csv(data / "tiny" / "curves.csv.gz")
    acc = curves["metric"] == "accuracy"
    curves.loc[acc, "value"] = 1.0 - curves.loc[acc, "value"]
    curves.to_csv(data / "tiny" / "curves.csv.gz", index=False, compression="gzip")
    before = (data / "tiny" / "job.json").read_bytes()
    with pytest.raises(AnalysisInputError, match="recomputes the recorded run .* with other curves"):
        record.record_sitting(root, data, 60.0)
    assert (data / "tiny" / "job.json").read_bytes() == before  # nothing already recorded is lost


def test_a_run_trained_under_another_config_is_refused(fake_job, tmp_path, monkeypatch):
    root, expected = fake_job
    key = sorted(expected)[0]
    changed = {**expected, key: record.ExpectedRun(key, "a", "", (), "0" * 64)}
    monkeypatch.setattr(record, "expected_runs", lambda scale_name="tiny": changed)
    with pytest.raises(AnalysisInputError, match="trained under another config than the default job's run"):
        record.record_sitting(root, tmp_path / "data", 600.0)
    assert not (tmp_path / "data" / "tiny").exists()


def test_the_command_records_lists_and_refuses(fake_job, tmp_path):
    root, _ = fake_job
    data = tmp_path / "data"
    assert record.main(["--root", str(root), "--data", str(data)]) == 2  # no --wall-s: one line, nothing written
    assert not (data / "tiny").exists()
    assert record.main(["--root", str(root), "--data", str(data), "--wall-s", "600"]) == 0
    assert (data / "tiny" / "job.json").exists()


def test_the_default_job_s_runs_are_the_workflow_s():
    """expected_runs is the workflow's list: the run sheet x the seeds of scales.tiny, each with its fingerprint."""
    out = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--quiet", "rules", "--config", "released_logs=none"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    runs = record.expected_runs()
    train_jobs = [ln for ln in out.stdout.splitlines() if ln.strip().startswith("train ")]
    assert train_jobs
    assert int(train_jobs[0].split()[-1]) == len(runs)
    assert len({r.fingerprint for r in runs.values()}) == len(runs)  # every run its own config


def test_a_recomputed_run_is_compared_with_the_record(fake_job, tmp_path):
    """scripts/compare_runs.py --record: a run directory's curves against the record's rows, value for value."""
    import shutil

    root, expected = fake_job
    data = tmp_path / "data"
    record.record_sitting(root, data, 600.0)
    copy = tmp_path / "check"
    shutil.copytree(root / "runs", copy)
    cmd = [sys.executable, str(REPO / "scripts" / "compare_runs.py"), "--record", str(data), str(copy)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 of 2 recorded runs identical" in done.stdout
    run = copy / sorted(expected)[0]
    rows = [json.loads(x) for x in (run / "eval.jsonl").read_text().splitlines()]
    rows[-1]["accuracy"] = 0.5 if rows[-1]["accuracy"] != 0.5 else 0.25
    (run / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert f"DIFFERENT     {sorted(expected)[0]}" in done.stdout


def test_cpu_runs_carry_their_cpu_clock_into_the_curves(job):
    """CPU runs' curves carry cpu_time_s (their training clock in CPU seconds), which speed-up (ii) reads."""
    from pods_repro.analysis.collect import load_runs_at
    from pods_repro.analysis.curves import arm_matrices

    root, _ = job
    dirs = sorted(p.parent for p in (root / "runs").glob("*/*/seed~*/summary.json"))
    curves, steps = load_runs_at(dirs)
    assert curves["cpu_time_s"].notna().all()
    assert "cpu_time_s" in steps
    acc = curves[(curves["dataset"] == "arith") & (curves["metric"] == "accuracy")]
    one = acc[acc["seed"] == acc["seed"].iloc[0]]
    m = arm_matrices(one[one["arm"] == one["arm"].iloc[0]])
    got = m.elapsed_S_T[0][~pd.isna(m.elapsed_S_T[0])]
    assert list(got) == list(one[one["arm"] == one["arm"].iloc[0]].query("time_s > 0")["cpu_time_s"])
