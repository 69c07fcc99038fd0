"""Tests of pods_repro.analysis.jobtime: a finished job's per-job seconds and their replay on more cores."""

from __future__ import annotations

import json

import pytest

from pods_repro.analysis import jobtime
from pods_repro.analysis.cli import main as analysis_main


def _bench(path, seconds):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"s\th:m:s\tmax_rss\n{seconds}\t0:00:00\t1.0\n")


def _job(root):
    """Two model builds (100 s, 10 s), four runs of the first model (50 s each), one of the second (5 s) and a
    benchmark (20 s), laid out as the workflow's logs and run directories."""
    logs = root / "logs"
    _bench(logs / "models" / "big.benchmark.tsv", 100)
    _bench(logs / "models" / "small.benchmark.tsv", 10)
    for i in range(4):
        _bench(logs / "train" / "a" / "arm" / f"seed~{i}.benchmark.tsv", 50)
        run = root / "runs" / "a" / "arm" / f"seed~{i}"
        run.mkdir(parents=True)
        (run / "config.json").write_text(json.dumps({"policy": {"model": "tiny:big"}}))
    _bench(logs / "train" / "b" / "arm" / "seed~0.benchmark.tsv", 5)
    run = root / "runs" / "b" / "arm" / "seed~0"
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"policy": {"model": "tiny:small"}}))
    _bench(logs / "bench" / "asymmetry.benchmark.tsv", 20)


def test_job_table_reads_kinds_models_and_seconds(tmp_path):
    _job(tmp_path)
    rows = jobtime.job_table(tmp_path)
    kinds = sorted((r["kind"], r["model"], r["seconds"]) for r in rows)
    assert kinds == [("build", "big", 100.0), ("build", "small", 10.0), ("other", "", 20.0), ("run", "big", 50.0),
                     ("run", "big", 50.0), ("run", "big", 50.0), ("run", "big", 50.0), ("run", "small", 5.0)]  # fmt: skip
    again = jobtime.read_jobs(jobtime.write_jobs(rows, tmp_path / "jobs.tsv"))
    assert again == rows


def test_replay_waits_for_each_model_build_and_runs_longest_first(tmp_path):
    _job(tmp_path)
    rows = jobtime.job_table(tmp_path)
    # one core: everything in a row
    assert jobtime.project(rows, 1) == pytest.approx(100 + 10 + 4 * 50 + 5 + 20)
    # two cores: builds first (big on one core, small then the benchmark on the other); at 100 s the big
    # model's four runs go two by two: 100 + 2 x 50 = 200, the small model's run fits in the gaps
    assert jobtime.project(rows, 2) == pytest.approx(200)
    # enough cores: the big build, then one round of its runs
    assert jobtime.project(rows, 16) == pytest.approx(150)


def test_bad_inputs_are_one_line_errors(tmp_path, capsys):
    with pytest.raises(jobtime.JobTimeError, match="no such folder"):
        jobtime.job_table(tmp_path / "nowhere")
    (tmp_path / "logs").mkdir()
    with pytest.raises(jobtime.JobTimeError, match="run the workflow first"):
        jobtime.job_table(tmp_path)
    (tmp_path / "logs" / "x.benchmark.tsv").write_text("not a table")
    with pytest.raises(jobtime.JobTimeError, match="not a Snakemake benchmark file"):
        jobtime.job_table(tmp_path)
    with pytest.raises(jobtime.JobTimeError, match="whole number >= 1"):
        jobtime.project([{"kind": "run", "name": "x", "model": "", "seconds": 1.0}], 0)
    assert analysis_main(["job-time", "--root", str(tmp_path)]) == 2
    assert "not a Snakemake benchmark file" in capsys.readouterr().err
    assert analysis_main(["job-time", "--jobs", str(tmp_path / "none.tsv")]) == 2


def test_cli_prints_the_replays(tmp_path, capsys):
    _job(tmp_path)
    assert analysis_main(["job-time", "--root", str(tmp_path), "--cores", "1,2", "--out", str(tmp_path / "j.tsv")]) == 0
    out = capsys.readouterr().out
    assert "8 jobs (2 builds, 5 runs, 1 other): 335 s of one core" in out
    assert "on   2 cores:      200 s" in out
    assert (tmp_path / "j.tsv").exists()


def test_cpu_seconds_are_kept_and_replayed(tmp_path):
    """A job's CPU seconds (Snakemake's `cpu_time`) travel with the table, and the replay can use them: on a shared
    host the wall seconds measure the neighbours."""
    from pods_repro.analysis import jobtime

    logs = tmp_path / "results" / "logs"
    for name, wall, cpu in (("train/a/x/seed~0", 30.0, 10.0), ("train/a/x/seed~1", 40.0, 12.0)):
        f = logs / f"{name}.benchmark.tsv"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(f"s\th:m:s\tmax_rss\tcpu_time\n{wall}\t0:00:30\t1\t{cpu}\n")
    rows = jobtime.job_table(tmp_path / "results")
    assert [r[jobtime.CPU_COLUMN] for r in rows] == [10.0, 12.0]
    back = jobtime.read_jobs(jobtime.write_jobs(rows, tmp_path / "jobs.tsv"))
    assert jobtime.has_cpu(back)
    assert jobtime.project(back, 1) == 70.0
    assert jobtime.project(back, 1, jobtime.CPU_COLUMN) == 22.0
    assert jobtime.project(back, 2, jobtime.CPU_COLUMN) == 12.0
    (logs / "train/a/x/seed~1.benchmark.tsv").write_text("s\tmax_rss\n40.0\t1\n")  # an older file: wall only
    assert not jobtime.has_cpu(jobtime.job_table(tmp_path / "results"))
