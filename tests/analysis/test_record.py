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
    for argv in (["--status"], ["--missing"]):  # the record it wrote reads back
        assert record.main(["--data", str(data), *argv]) == 0


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


def test_a_recomputation_that_agrees_is_accepted_whatever_its_seconds(fake_job, tmp_path):
    """A recomputed run's clocks (cpu_time_s, time_s) always differ from the record's: they are not its curves.
    A difference in an evaluation is refused, naming its step."""
    root, _ = fake_job
    data = tmp_path / "data"
    record.record_sitting(root, data, 600.0)
    path = data / "tiny" / "curves.csv.gz"
    curves = pd.read_csv(path)
    for col in ("cpu_time_s", "time_s", "time_s_raw"):
        curves[col] = curves[col] * 1.7 + 0.3  # another machine's seconds
    curves.to_csv(path, index=False, compression="gzip")
    assert record.record_sitting(root, data, 60.0)["agreed"] == 2
    at = curves.index[(curves["metric"] == "accuracy") & (curves["step"] > 0)][0]
    step = int(curves.loc[at, "step"])
    curves.loc[at, "value"] = 0.5 if curves.loc[at, "value"] != 0.5 else 0.25
    curves.to_csv(path, index=False, compression="gzip")
    with pytest.raises(AnalysisInputError, match=rf"other curves \(first at step {step} .*accuracy"):
        record.record_sitting(root, data, 60.0)


def test_runs_of_another_step_budget_are_refused(fake_job, tmp_path, monkeypatch):
    """A run whose steps are not the job's (budget.max_steps, left out of the fingerprint) is not one of its runs:
    the quickstart's runs are not the default job's."""
    import dataclasses

    root, expected = fake_job
    longer = {k: dataclasses.replace(r, max_steps=50) for k, r in expected.items()}
    monkeypatch.setattr(record, "expected_runs", lambda scale_name="tiny": longer)
    with pytest.raises(AnalysisInputError, match=r"trained 2 steps, the default job's run .* trains 50"):
        record.record_sitting(root, tmp_path / "data", 600.0)
    assert not (tmp_path / "data").exists()
    assert all(r.max_steps for r in list(record.expected_runs().values())[:3])
    data = tmp_path / "other"
    monkeypatch.setattr(record, "expected_runs", lambda scale_name="tiny": expected)
    record.record_sitting(root, data, 600.0)
    steps = pd.read_csv(data / "tiny" / "steps.csv.gz")
    with pytest.raises(AnalysisInputError, match=r"trained 2 steps, the default job's trains 50"):
        record.check_record(steps, longer)


def test_the_committed_record_is_the_default_job_s():
    from pods_repro.analysis.tidy import read_steps

    record.check_record(read_steps(REPO / "benchmarks" / "results" / "tiny" / "steps.csv.gz"))


@pytest.mark.parametrize(
    "extra", [["--wall-s", "inf"], ["--wall-s", "-1"], ["--wall-s", "nan"], ["--wall-s", "0"],
              ["--wall-s", "60", "--install-s", "-5"], ["--wall-s", "60", "--install-s", "nan"]],
)  # fmt: skip
def test_seconds_that_are_not_seconds_are_refused(fake_job, tmp_path, capsys, extra):
    root, _ = fake_job
    data = tmp_path / "data"
    assert record.main(["--root", str(root), "--data", str(data), *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert extra[-2] in err
    assert "finite number" in err
    assert not data.exists()


def test_unreadable_records_give_one_line(fake_job, tmp_path, capsys):
    """A data path that is a file, a truncated curves.csv.gz: exit 2 and one line, the record as it was."""
    root, _ = fake_job
    afile = tmp_path / "records.txt"
    afile.write_text("x")
    for argv in (["--status"], ["--missing"], ["--wall-s", "60"]):
        assert record.main(["--root", str(root), "--data", str(afile), *argv]) == 2
        assert "a file, not a records folder" in capsys.readouterr().err
    data = tmp_path / "data"
    record.record_sitting(root, data, 600.0)
    path = data / "tiny" / "curves.csv.gz"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    before = {p.name: p.read_bytes() for p in (data / "tiny").iterdir()}
    for argv in (["--status"], ["--wall-s", "60"]):
        assert record.main(["--root", str(root), "--data", str(data), *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert "curves.csv.gz is not a readable curves CSV" in err
    assert {p.name: p.read_bytes() for p in (data / "tiny").iterdir()} == before


def test_missing_says_when_nothing_is_missing(fake_job, tmp_path, capsys, monkeypatch):
    """`snakemake -c2 $(pods analysis record --missing)` must not schedule the whole job once the record is whole."""
    root, expected = fake_job
    two = dict(list(expected.items())[:2])
    monkeypatch.setattr(record, "expected_runs", lambda scale_name="tiny": two)
    data = tmp_path / "data"
    record.record_sitting(root, data, 600.0)
    capsys.readouterr()
    assert record.main(["--data", str(data), "--missing"]) == 1
    out = capsys.readouterr()
    assert out.out.strip() == record.NOTHING_MISSING
    assert "nothing to train" in out.err


def test_a_sitting_trained_outside_snakemake_leaves_a_readable_record(fake_job, tmp_path, capsys):
    """Runs of `pods train --scale tiny` leave no Snakemake benchmark files: the record has no per-job seconds
    then, and still reads back (--status, --missing, the next sitting)."""
    import shutil

    root, _ = fake_job
    bare = tmp_path / "bare" / "results"
    shutil.copytree(root / "runs", bare / "runs")
    data = tmp_path / "data"
    assert record.main(["--root", str(bare), "--data", str(data), "--wall-s", "60"]) == 0
    for argv in (["--status"], ["--missing"]):
        assert record.main(["--data", str(data), *argv]) == 0, capsys.readouterr().err
    assert "(a) 2 of 3 runs recorded" in capsys.readouterr().out
    assert record.record_sitting(root, data, 60.0)["agreed"] == 2
