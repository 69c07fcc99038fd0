"""benchmarks/gpu/main_runs_list.py and main_runs.sh: the tiny default job's builds and runs on another machine's CPU,
many at once, under a deadline, to check that a second machine with every core busy gives the same bits
(benchmarks/README.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu" / "main_runs.sh"


def _list(text: str, times_from: Path | None = None) -> subprocess.CompletedProcess:
    args = [sys.executable, str(ROOT / "benchmarks" / "gpu" / "main_runs_list.py")]
    if times_from is not None:
        args += ["--times-from", str(times_from)]
    return subprocess.run(args, input=text, capture_output=True, text=True, check=False)


def test_main_runs_list_puts_builds_first_then_the_longest_runs(tmp_path):
    """The dry run's builds come first, then the runs by the seconds they took in an earlier job (longest
    first, a run it lacks last); a dry run without training commands is an error that says what to pipe."""
    earlier = tmp_path / "job"
    for rel, wall in (("results/runs/e/x/seed~0", 50.0), ("results/runs/a/y/seed~0", 400.0)):
        (earlier / rel).mkdir(parents=True)
        (earlier / rel / "summary.json").write_text(json.dumps({"wall_s_last_session": wall}))
    dry = "\n".join(
        [
            "rule train:",
            "Shell command: python -m pods_repro train experiments/tiny_e.yaml seed=0 out_dir=results/runs/e/x/seed~0 >> l 2>&1",
            "Shell command: python -m pods_repro train experiments/tiny_c.yaml seed=0 out_dir=results/runs/c/z/seed~0 >> l 2>&1",
            "Shell command: python -m pods_repro.models build tiny:llama-arith_warm > results/logs/models/w.log 2>&1",
            "Shell command: python -m pods_repro train experiments/tiny_a.yaml seed=0 out_dir=results/runs/a/y/seed~0 >> l 2>&1",
            "Shell command: python -m pods_repro.analysis collect --run-dirs x > results/logs/collect.log 2>&1",
        ]
    )
    res = _list(dry, earlier)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("python -m pods_repro.models build tiny:llama-arith_warm")
    assert [line.split("out_dir=")[1].split()[0] for line in lines[1:]] == [
        "results/runs/a/y/seed~0",
        "results/runs/e/x/seed~0",
        "results/runs/c/z/seed~0",
    ]
    assert "1 builds, 3 runs; the runs took 450 s" in res.stderr
    bad = _list("Shell command: python -m pods_repro.analysis collect\n")
    assert bad.returncode == 1
    assert "pipe `snakemake -n -p --forceall`" in bad.stderr


def test_main_runs_sh_runs_at_once_stops_at_the_deadline_and_packs(tmp_path):
    """main_runs.sh: by default as many processes as the machine has cores even when OMP_NUM_THREADS=1 is
    already set (setup.sh sets it; nproc obeys it, which once ran a whole device call one job at a time);
    each job one thread; builds write into results/fresh_cache, not the carried models; a job still running
    at the deadline is stopped (exit 124 in results/xhost_jobs.txt), one not started by then is listed as
    skipped, in this call's records only; what finished comes back in $OUT/main_runs.tgz."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')  # this venv's, as `python`
    (bin_dir / "python").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),
        "OMP_NUM_THREADS": "1",
        "OUT": str(tmp_path / "out"),
    }
    (tmp_path / "out").mkdir()
    work = tmp_path / "work"
    work.mkdir()
    cmds = work / "cmds.txt"
    show = "python -c \"import os; print(os.environ['{}'])\""
    cmds.write_text(
        "\n".join(
            [
                show.format("PODS_CACHE") + " > results/logs/models/build.log 2>&1  # pods_repro.models build",
                show.format("OMP_NUM_THREADS") + " > results/logs/train/threads.log 2>&1",
            ]
        )
        + "\n"
    )
    res = subprocess.run(["bash", str(SCRIPT), str(cmds)], cwd=work, env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"processes: {len(os.sched_getaffinity(0))}," in res.stdout
    assert "| pin avx2" in res.stdout or "| pin native" in res.stdout  # the env line: torch, trl, the kernels
    assert "2 jobs ran, 0 with a nonzero exit" in res.stdout
    assert (work / "results/logs/models/build.log").read_text().strip() == str(work / "results" / "fresh_cache")
    assert (work / "results/logs/train/threads.log").read_text().strip() == "1"
    with tarfile.open(tmp_path / "out" / "main_runs.tgz") as tar:
        assert "results/xhost_jobs.txt" in tar.getnames()

    # one process, a 6 s deadline: the first job ends, the second is stopped, the third never starts
    cmds.write_text("true > results/logs/a.log\nsleep 60 > results/logs/b.log\ntrue > results/logs/c.log\n")
    env["PODS_MAIN_RUNS_DEADLINE_S"] = "6"  # in the same tree: the first call's records must not remain
    res = subprocess.run(
        ["bash", str(SCRIPT), str(cmds), "1"], cwd=work, env=env, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stdout + res.stderr
    jobs = (work / "results/xhost_jobs.txt").read_text().splitlines()
    assert [j.split()[0] for j in jobs] == ["0", "124"]
    assert (work / "results/xhost_skipped.txt").read_text().strip() == "true > results/logs/c.log"
    assert "1 jobs not started (deadline)" in res.stdout
