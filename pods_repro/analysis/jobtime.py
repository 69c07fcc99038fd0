"""How long would the workflow's job take on more cores? A projection from one job's per-job times.

Snakemake writes a benchmark file per training run, model build and benchmark job
(`{root}/logs/**/*.benchmark.tsv`, column ``s``: the job's wall seconds). :func:`job_table` reads
them into one table (kind, name, model, seconds); :func:`project` replays the job on ``cores``
single-threaded slots with the workflow's one dependency that matters for time (a run starts after
the build of its tiny model) and longest-job-first among the ready jobs, the order a list scheduler
with free cores approaches. The replay on the cores the job was measured on is the check of the
model: it should land near the measured wall time.

    pods analysis job-time --root results               # measured work, replays on 2, 8, 16 cores
    pods analysis job-time --jobs jobs.tsv --cores 2,8,16

The projection assumes each job takes on the larger machine what it took here (the same per-core
speed, no memory-bandwidth contention) and leaves out the analysis jobs after training (seconds).
"""

from __future__ import annotations

import csv
import heapq
import json
from collections.abc import Sequence
from pathlib import Path

from pods_repro.analysis.tidy import AnalysisInputError

JOB_COLUMNS = ("kind", "name", "model", "seconds")
# Optional: the job's CPU seconds (Snakemake's `cpu_time`, or a run's own process_time from its summary.json):
# on a shared host the wall seconds measure the neighbours as much as the job, so the replay prefers these.
CPU_COLUMN = "cpu_seconds"


class JobTimeError(AnalysisInputError):
    """A benchmark file or jobs table that cannot be read; the message says which and how to fix it."""


def _cpu_seconds(path: Path) -> float | None:
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            value = float(list(csv.DictReader(fh, delimiter="\t"))[-1]["cpu_time"])
    except (OSError, UnicodeDecodeError, KeyError, IndexError, ValueError, TypeError, csv.Error):
        return None
    return value if value >= 0 and value != float("inf") else None


def _seconds(path: Path) -> float:
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh, delimiter="\t"))
        value = float(rows[-1]["s"])
    except (OSError, UnicodeDecodeError, KeyError, IndexError, ValueError, csv.Error) as e:
        raise JobTimeError(
            f"{path}: not a Snakemake benchmark file with a column 's' ({type(e).__name__}); "
            "rerun its job, or delete the file"
        ) from None
    if not value >= 0 or value == float("inf"):
        raise JobTimeError(f"{path}: wall seconds {value!r} is not a finite number >= 0; rerun its job")
    return value


def _run_model(run_dir: Path) -> str:
    """The `tiny:<name>` policy a run trained (its config.json), or '' when not a tiny model."""
    try:
        cfg = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
        spec = str(cfg["policy"]["model"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    return spec[len("tiny:") :] if spec.startswith("tiny:") else ""


def job_table(root: str | Path) -> list[dict]:
    """One row per job of the workflow rooted at `root` that left a benchmark file."""
    root = Path(root)
    logs = root / "logs"
    if not logs.is_dir():
        raise JobTimeError(f"{logs}: no such folder; give --root the workflow's root (e.g. results)")
    rows = []
    for path in sorted(logs.rglob("*.benchmark.tsv")):
        rel = path.relative_to(logs)
        name = str(rel)[: -len(".benchmark.tsv")]
        if rel.parts[0] == "models":
            rows.append({"kind": "build", "name": name, "model": rel.name[: -len(".benchmark.tsv")]})
        elif rel.parts[0] == "train":
            run_dir = root / "runs" / Path(name[len("train/") :])
            rows.append({"kind": "run", "name": name, "model": _run_model(run_dir)})
        else:
            rows.append({"kind": "other", "name": name, "model": ""})
        rows[-1]["seconds"] = _seconds(path)
        cpu = _cpu_seconds(path)
        if cpu is not None:
            rows[-1][CPU_COLUMN] = cpu
    if not rows:
        raise JobTimeError(f"{logs}: no *.benchmark.tsv files; run the workflow first")
    return rows


def write_jobs(rows: Sequence[dict], path: str | Path) -> Path:
    path = Path(path)
    cpu = all(r.get(CPU_COLUMN) is not None for r in rows)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        fields = [*JOB_COLUMNS, *([CPU_COLUMN] if cpu else [])]
        w = csv.DictWriter(fh, fieldnames=fields, delimiter="\t", lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({**r, "seconds": f"{r['seconds']:.2f}",
                        **({CPU_COLUMN: f"{r[CPU_COLUMN]:.2f}"} if cpu else {})})  # fmt: skip
    return path


def read_jobs(path: str | Path) -> list[dict]:
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh, delimiter="\t"))
        out = [{**r, "seconds": float(r["seconds"])} for r in rows]
        for r in out:
            if r.get(CPU_COLUMN) not in (None, ""):
                r[CPU_COLUMN] = float(r[CPU_COLUMN])
            else:
                r.pop(CPU_COLUMN, None)
    except (OSError, UnicodeDecodeError, KeyError, TypeError, ValueError, csv.Error) as e:
        raise JobTimeError(
            f"{path}: not a jobs table with columns {', '.join(JOB_COLUMNS)} ({type(e).__name__})"
        ) from None
    if not out:
        raise JobTimeError(f"{path}: no jobs")
    return out


def has_cpu(rows: Sequence[dict]) -> bool:
    """Whether every job has its CPU seconds (then the replay can use them)."""
    return bool(rows) and all(r.get(CPU_COLUMN) is not None for r in rows)


def project(rows: Sequence[dict], cores: int, key: str = "seconds") -> float:
    """Makespan in seconds of the jobs on `cores` single-threaded slots (builds before their runs), each job
    taking its `key` seconds ("seconds": wall, as measured; CPU_COLUMN: its CPU seconds)."""
    if cores < 1:
        raise JobTimeError(f"cores={cores}: give a whole number >= 1")
    if key != "seconds":
        rows = [{**r, "seconds": r[key]} for r in rows]
    builds = {r["model"]: r for r in rows if r["kind"] == "build"}
    waiting: dict[str, list] = {}
    ready: list = []
    for i, r in enumerate(rows):
        if r["kind"] == "build":
            heapq.heappush(ready, (0, -r["seconds"], i))  # builds first: every run waits on one
        elif r["model"] in builds:
            waiting.setdefault(r["model"], []).append(i)
        else:
            heapq.heappush(ready, (1, -r["seconds"], i))
    now, running = 0.0, []  # running: heap of (finish time, index)
    while ready or running:
        while ready and len(running) < cores:
            _, _, i = heapq.heappop(ready)
            heapq.heappush(running, (now + rows[i]["seconds"], i))
        now, i = heapq.heappop(running)
        if rows[i]["kind"] == "build":
            for j in waiting.pop(rows[i]["model"], []):
                heapq.heappush(ready, (1, -rows[j]["seconds"], j))
    return now


# ----------------------------------------------------------------------------------------------
# the command: pods analysis job-time


def add_arguments(ap) -> None:
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--root", help="a finished workflow's root (its logs/**/*.benchmark.tsv), e.g. results")
    src.add_argument("--jobs", help="a jobs table written by --out (or the results page's record)")
    ap.add_argument("--cores", default="2,8,16", help="comma-separated core counts to replay on (default 2,8,16)")
    ap.add_argument("--out", help="also write the jobs table (TSV) here")


def run(args) -> int:
    import sys

    try:
        cores = [int(c) for c in args.cores.split(",")]
        if any(c < 1 for c in cores):
            raise ValueError
    except ValueError:
        print(f"error: --cores {args.cores!r}: give whole numbers >= 1, e.g. 2,8,16", file=sys.stderr)
        return 2
    try:
        rows = job_table(args.root) if args.root else read_jobs(args.jobs)
    except JobTimeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.out:
        write_jobs(rows, args.out)
    total = sum(r["seconds"] for r in rows)
    kinds = {k: sum(1 for r in rows if r["kind"] == k) for k in ("build", "run", "other")}
    print(f"{len(rows)} jobs ({kinds['build']} builds, {kinds['run']} runs, {kinds['other']} other): "
          f"{total:.0f} s of one core")  # fmt: skip
    for c in cores:
        print(f"  on {c:>3} cores: {project(rows, c):8.0f} s  ({project(rows, c) / 60:.1f} min)")
    if has_cpu(rows):
        cpu = sum(r[CPU_COLUMN] for r in rows)
        print(f"in CPU seconds (what the jobs cost on an idle host): {cpu:.0f} s of one core")
        for c in cores:
            t = project(rows, c, CPU_COLUMN)
            print(f"  on {c:>3} cores: {t:8.0f} s  ({t / 60:.1f} min)")
    return 0
