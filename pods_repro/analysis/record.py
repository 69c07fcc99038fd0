"""The default job's record, assembled from one or several sittings.

The tiny default job (every run of ``config/runs_tiny.tsv`` at the seeds of ``scales.tiny``) takes hours on
2 cores. Its runs are deterministic and independent, so its record (``benchmarks/results/tiny/``) may be
made in sittings: each sitting trains some runs in a fresh clone, then adds what finished::

    pods analysis record --root results                    # add this sitting's finished runs
    .venv/bin/snakemake -c2 $(pods analysis record --missing)  # next sitting: only the runs not recorded
    # (a complete record: --missing prints a target no rule makes and exits 1, so nothing is scheduled)

A run enters the record with its curves (``curves.csv.gz``), its per-run seconds (``steps.csv.gz``: training,
evaluation and start-up, wall and CPU seconds) and the fingerprint of the config that trained it
(:func:`pods_repro.config.fingerprint.config_fingerprint`). ``job.json`` lists the sittings (host, cores, the
sitting's wall seconds, the runs it added) and ``jobs.tsv`` the per-job seconds of the replay
(:mod:`pods_repro.analysis.jobtime`).

Checks, each an :class:`AnalysisInputError` naming the run and the fix, before anything is written:

- a run whose fingerprint is not what the default job trains today (another config, or code that changed
  a default), or whose steps are not the job's ``budget.max_steps`` (the fingerprint leaves the budget out:
  the quickstart's shorter runs are not the job's), is refused;
- a run already in the record is compared with the record: the same curves (every evaluation's values; the
  seconds of its clocks, which always differ, are no part of them) count as a recomputation that agrees;
  other curves are refused, naming the first differing step;
- :func:`check_record` (``pods analysis results`` calls it) refuses a record with a run the default job
  does not make, or whose fingerprint differs from today's.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from pods_repro import registry
from pods_repro.analysis import jobtime
from pods_repro.analysis.collect import load_runs_at
from pods_repro.analysis.tidy import RUN_KEY, AnalysisInputError, read_curves, read_steps

__all__ = [
    "ExpectedRun",
    "check_record",
    "compare_with_record",
    "expected_runs",
    "host_info",
    "missing_runs",
    "record_sitting",
    "record_status",
]

SCALE = "tiny"
JOB_COMMAND = "bash scripts/install.sh && .venv/bin/snakemake -c2 --config released_logs=DIR"
TINY_FILES = ("job.json", "curves.csv.gz", "steps.csv.gz", "jobs.tsv")
# Curves columns that measure the machine (seconds of its clocks, memory) or name a folder: a recomputation
# agrees on everything else, the curves themselves.
_MACHINE_COLUMNS = ("time_s", "time_s_raw", "cpu_time_s", "wall_s", "seconds", "peak_mem_mb", "source")


@dataclass(frozen=True)
class ExpectedRun:
    """One run of the default job: its folder under ``{root}/runs``, its experiment and overrides, and the
    fingerprint of the config it trains."""

    key: str  # "{setting}/{run name}/seed~{seed}"
    setting: str
    experiment: str
    overrides: tuple[str, ...]
    fingerprint: str
    max_steps: int | None = None  # the job's step budget (left out of the fingerprint; checked on its own)


def expected_runs(scale_name: str = SCALE) -> dict[str, ExpectedRun]:
    """Every run the workflow trains at ``scale_name``, keyed as its run folder (``a/sel~..._m~16/seed~0``)."""
    from pods_repro.config import load_config
    from pods_repro.config.fingerprint import config_fingerprint
    from pods_repro.config.scales import load_scales, run_overrides

    scale = load_scales()[scale_name]
    out = {}
    for arm in registry.read_sheet(registry.repo_file(scale["runs"])):
        experiment = registry.SETTINGS[arm.setting].experiments[scale_name]
        overrides = run_overrides(scale, arm, "paper", scale_name)
        base = load_config(registry.repo_file(experiment), overrides, check_machine=False, environment=False)
        for seed in scale["seeds"][arm.seeds]:
            cfg = dataclasses.replace(base, seed=seed)  # what `pods train ... seed=S` loads
            key = f"{arm.setting}/{arm.run_name}/seed~{seed}"
            digest = config_fingerprint(cfg)[1]
            out[key] = ExpectedRun(key, arm.setting, experiment, tuple(overrides), digest, cfg.budget.max_steps)
    return out


def _run_key(row: pd.Series) -> tuple:
    return tuple(str(row[c]) for c in RUN_KEY)


def _folder_of(source: str) -> str:
    parts = Path(str(source)).parts
    return "/".join(parts[-3:])


def _read(data: Path) -> tuple[pd.DataFrame | None, pd.DataFrame | None, dict | None, list[dict] | None]:
    if data.exists() and not data.is_dir():
        raise AnalysisInputError(
            f"{data}: a file, not a records folder; give --data the folder (default benchmarks/results)"
        )
    tiny = data / "tiny"
    if tiny.exists() and not tiny.is_dir():
        raise AnalysisInputError(f"{tiny}: a file, not the record's folder; restore it from git")
    present = [n for n in TINY_FILES if (tiny / n).exists()]
    if not present:
        return None, None, None, None
    if len(present) != len(TINY_FILES):
        raise AnalysisInputError(
            f"{tiny}: the record is incomplete ({', '.join(present)} present, {len(TINY_FILES)} files expected); "
            "restore it from git (git checkout -- benchmarks/results/tiny) before adding a sitting"
        )
    try:
        job = json.loads((tiny / "job.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise AnalysisInputError(f"{tiny / 'job.json'}: not a JSON record ({err}); restore it from git") from None
    return read_curves(tiny / "curves.csv.gz"), read_steps(tiny / "steps.csv.gz"), job, _read_jobs(tiny / "jobs.tsv")


def _read_jobs(path: Path) -> list[dict]:
    """The record's per-job seconds; none (a header only) when its sittings trained outside Snakemake, which
    leaves no benchmark files to replay."""
    try:
        header_only = len(path.read_text(encoding="utf-8").strip().splitlines()) == 1
    except (OSError, UnicodeDecodeError):
        header_only = False  # read_jobs names the problem
    return [] if header_only else jobtime.read_jobs(path)


def host_info() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import torch  # the versions that trained the runs

    return {
        "cpu": cpu,
        "cores": len(os.sched_getaffinity(0)),
        "python": platform.python_version(),
        "torch": torch.__version__,
    }


def _commit(root: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root.resolve().parent, capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _finished_dirs(root: Path, expected: dict[str, ExpectedRun]) -> tuple[list[Path], list[str]]:
    runs = root / "runs"
    if not runs.is_dir():
        raise AnalysisInputError(f"{runs}: no such folder; give --root the workflow's root (e.g. results)")
    found, foreign = [], []
    for summary in sorted(runs.glob("*/*/seed~*/summary.json")):
        key = "/".join(summary.parent.relative_to(runs).parts)
        (found if key in expected else foreign).append(summary.parent if key in expected else key)
    return found, foreign


def _check_fingerprints(run_dirs: list[Path], root: Path, expected: dict[str, ExpectedRun]) -> dict[str, str]:
    from pods_repro.config import ConfigError
    from pods_repro.config.fingerprint import run_fingerprint

    out = {}
    for d in run_dirs:
        key = "/".join(d.relative_to(root / "runs").parts)
        try:
            digest = run_fingerprint(d)
        except (OSError, ValueError, ConfigError, TypeError) as err:
            raise AnalysisInputError(f"{d / 'config.json'}: cannot be read as a run's config ({err})") from None
        if digest != expected[key].fingerprint:
            raise AnalysisInputError(
                f"{d}: trained under another config than the default job's run {key} (fingerprint {digest[:12]} "
                f"vs {expected[key].fingerprint[:12]}): it is not a run of this job. Fix: train it again from a "
                "fresh clone of this version, or leave it out (move the run directory away)"
            )
        want = expected[key].max_steps
        got = _trained_steps(d)
        if want is not None and got != want:
            raise AnalysisInputError(
                f"{d}: trained {got} steps, the default job's run {key} trains {want} (budget.max_steps): it is not "
                "a run of this job. Fix: train the job's runs (.venv/bin/snakemake -c2), or record these runs "
                "elsewhere"
            )
        out[key] = digest
    return out


def _trained_steps(run_dir: Path) -> int | None:
    """The steps a finished run trained (its summary.json), None when it does not say."""
    try:
        steps = json.loads((run_dir / "summary.json").read_text(encoding="utf-8")).get("steps")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError) as err:
        raise AnalysisInputError(
            f"{run_dir / 'summary.json'}: not a run's summary ({err}); train the run again"
        ) from None
    return None if steps is None else int(steps)


def _summary_seconds(run_dir: Path) -> dict:
    s = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    keys = ("train_cpu_s", "eval_cpu_s", "startup_cpu_s", "cpu_s_last_session", "eval_time_s", "startup_s",
            "wall_s_last_session")  # fmt: skip
    return {k: s.get(k) for k in keys}


def first_difference(old: pd.DataFrame, new: pd.DataFrame) -> str | None:
    """None when two runs' curves agree in every evaluation (timing columns aside), else the first difference
    in step order: its step, dataset and metric and the two values."""
    cols = [c for c in old.columns if c not in _MACHINE_COLUMNS and c in new.columns]
    key = [c for c in ("step", "dataset", "metric", "grid") if c in cols]
    a, b = old[cols].astype(str), new[cols].astype(str)
    if not key:
        same = a.shape == b.shape and bool((a.reset_index(drop=True) == b.reset_index(drop=True)).all().all())
        return None if same else "the rows differ"
    both = a.merge(b, on=key, how="outer", suffixes=("_record", "_new"), indicator=True)
    values = [c for c in cols if c not in key]
    differs = both["_merge"] != "both"
    for c in values:
        differs |= both[f"{c}_record"] != both[f"{c}_new"]
    if not differs.any() and len(a) == len(b):
        return None
    if not differs.any():
        return "an evaluation recorded twice"
    both = both[differs].assign(_step=pd.to_numeric(both.loc[differs, "step"], errors="coerce"))
    row = both.sort_values(["_step", *key], kind="stable").iloc[0]
    where = f"step {row['step']}" + "".join(f" {row[c]}" for c in ("dataset", "metric") if c in key)
    if row["_merge"] != "both":
        return f"{where}: only in {'the record' if row['_merge'] == 'left_only' else 'the recomputation'}"
    changed = [c for c in values if row[f"{c}_record"] != row[f"{c}_new"]]
    v = "value" if "value" in changed else changed[0]
    return f"{where}: {row[f'{v}_record']} in the record, {row[f'{v}_new']} recomputed"


def same_curves(old: pd.DataFrame, new: pd.DataFrame) -> bool:
    return first_difference(old, new) is None


def _sitting_tables(root: Path, expected: dict[str, ExpectedRun]) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """The curves and steps of the finished runs under ``root`` (their fingerprints checked; per-run seconds,
    sources relative to the root) and the runs found that the default job does not make."""
    from pods_repro.config.scales import load_scales

    dirs, foreign = _finished_dirs(root, expected)
    if not dirs:
        raise AnalysisInputError(
            f"{root / 'runs'}: no finished run of the default job (a summary.json); run `.venv/bin/snakemake -c2` first"
        )
    prints = _check_fingerprints(dirs, root, expected)
    curves, steps = load_runs_at(dirs, sheet=registry.repo_file(load_scales()[SCALE]["runs"]))
    steps = steps.copy()
    steps["run"] = [_folder_of(s) for s in steps["source"]]
    extra = pd.DataFrame([_summary_seconds(Path(s)) for s in steps["source"]], index=steps.index)
    # sources relative to the job's root: the record names no folder of the machine that made it
    steps["source"] = ["runs/" + r for r in steps["run"]]
    curves = curves.assign(source=["runs/" + _folder_of(s) for s in curves["source"]])
    steps["config_sha256"] = [prints[k] for k in steps["run"]]
    return curves, pd.concat([steps, extra], axis=1), foreign


def _keys(df: pd.DataFrame) -> pd.Series:
    return df[RUN_KEY].astype(str).apply(tuple, axis=1)


def _new_runs(curves, steps, old_curves, old_steps) -> tuple[set, int]:
    """The run keys of ``steps`` the record lacks, and how many it holds already with the same curves
    (AnalysisInputError for one it holds with other curves: the record keeps the first)."""
    old_keys = set() if old_steps is None else set(_keys(old_steps))
    add, agreed = set(), 0
    for key, row in zip(_keys(steps), steps.itertuples(), strict=True):
        if key not in old_keys:
            add.add(key)
        elif (diff := first_difference(old_curves[_keys(old_curves) == key], curves[_keys(curves) == key])) is None:
            agreed += 1
        else:
            raise AnalysisInputError(
                f"{row.source}: recomputes the recorded run {row.run} with other curves (first at {diff}); the record keeps the "
                "first. Compare the two with scripts/compare_runs.py; a difference across CPUs of another vendor is "
                "expected (docs/reproduce.md), then record this host's job in its own data folder (--data)"
            )
    return add, agreed


def _jobs(root: Path, steps: pd.DataFrame, jobs: list[dict] | None) -> list[dict]:
    """The record's per-job seconds with this sitting's new jobs (its new runs, its model builds) added; a run's
    CPU seconds are its own process's (summary.json), which Snakemake's sampled `cpu_time` only approaches."""
    cpu = {f"train/{r}": c for r, c in zip(steps["run"], steps["cpu_s_last_session"], strict=True)}
    names = set(cpu)
    try:
        table = jobtime.job_table(root)
    except jobtime.JobTimeError:  # runs trained outside Snakemake leave no benchmark files: no replay for them
        table = []
    for j in table:
        if j["name"] in cpu and pd.notna(cpu[j["name"]]):
            j[jobtime.CPU_COLUMN] = float(cpu[j["name"]])
    known = {j["name"] for j in jobs or []}
    return [*(jobs or []), *(j for j in table if (j["kind"] != "run" or j["name"] in names) and j["name"] not in known)]


def _job_meta(job: dict | None, meta: dict, expected: int, recorded: int) -> dict:
    job = dict(job or {})
    job.update(command=JOB_COMMAND, scale=SCALE, sittings=[*job.get("sittings", []), meta])
    job.update(runs_expected=expected, runs_recorded=recorded, wall_s=sum(float(s["wall_s"]) for s in job["sittings"]))
    first = job["sittings"][0]
    job.update(cores=first["cores"], cpu=first["cpu"], python=first["python"], torch=first["torch"])
    job["install_s"] = first.get("install_s")
    return job


def record_sitting(root: str | Path, data: str | Path, wall_s: float, install_s: float | None = None) -> dict:
    """Add the finished runs of the job under ``root`` to the record in ``data``/tiny/ (see the module
    docstring); returns what the sitting added (``{"added": N, "agreed": K, "recorded": R, "expected": E}``)."""
    root, data = Path(root), Path(data)
    expected = expected_runs()
    curves, steps, foreign = _sitting_tables(root, expected)
    old_curves, old_steps, job, jobs = _read(data)
    steps["sitting"] = 1 + len((job or {}).get("sittings", []))
    add, agreed = _new_runs(curves, steps, old_curves, old_steps)
    new_curves, new_steps = curves[_keys(curves).isin(add)], steps[_keys(steps).isin(add)]
    all_curves = new_curves if old_curves is None else pd.concat([old_curves, new_curves], ignore_index=True)
    all_steps = new_steps if old_steps is None else pd.concat([old_steps, new_steps], ignore_index=True)
    meta = {
        **host_info(),
        "sitting": int(steps["sitting"].iloc[0]),
        "wall_s": float(wall_s),
        "install_s": None if install_s is None else float(install_s),
        "runs_added": len(add),
        "runs_agreed": agreed,
        "runs_finished_elsewhere": len(foreign),
        "run_cpu_s": float(pd.to_numeric(new_steps["cpu_s_last_session"], errors="coerce").sum()),
        "commit": _commit(root),
    }
    tiny = data / "tiny"
    tiny.mkdir(parents=True, exist_ok=True)
    gz = {"method": "gzip", "mtime": 0}
    all_curves.sort_values([*RUN_KEY, "dataset", "metric", "grid"]).to_csv(
        tiny / "curves.csv.gz", index=False, compression=gz
    )
    all_steps.sort_values(RUN_KEY).to_csv(tiny / "steps.csv.gz", index=False, compression=gz)
    jobtime.write_jobs(_jobs(root, new_steps, jobs), tiny / "jobs.tsv")
    job = _job_meta(job, meta, len(expected), len(all_steps))
    (tiny / "job.json").write_text(json.dumps(job, indent=1) + "\n", encoding="utf-8")
    return {"added": len(add), "agreed": agreed, "recorded": len(all_steps), "expected": len(expected)}


def compare_with_record(runs: str | Path, data: str | Path) -> list[tuple[str, str]]:
    """(run, 'identical' | 'DIFFERENT' | 'not recorded' | 'unfinished') for every run directory under ``runs``
    (``{setting}/{run}/seed~{seed}``): its curves recomputed from its logs against the record's rows (every
    evaluation's values; seconds aside)."""
    from pods_repro.config.scales import load_scales

    runs = Path(runs)
    old_curves, old_steps, _, _ = _read(Path(data).parent if Path(data).name == "tiny" else Path(data))
    if old_steps is None:
        raise AnalysisInputError(f"{data}: no record (benchmarks/results/tiny/ holds it)")
    recorded = dict(zip(old_steps["run"].astype(str), old_steps.apply(_run_key, axis=1), strict=True))
    sheet = registry.repo_file(load_scales()[SCALE]["runs"])
    out = []
    for d in sorted(p.parent for p in runs.glob("*/*/seed~*/config.json")):
        key = "/".join(d.relative_to(runs).parts)
        if key not in recorded:
            out.append((key, "not recorded"))
            continue
        if not (d / "summary.json").is_file():
            out.append((key, "unfinished"))
            continue
        curves, _ = load_runs_at([d], sheet=sheet)
        mine = curves.assign(source="runs/" + key)
        theirs = old_curves[old_curves[RUN_KEY].astype(str).apply(tuple, axis=1) == recorded[key]]
        out.append((key, "identical" if same_curves(theirs, mine) else "DIFFERENT"))
    return out


def record_status(steps: pd.DataFrame | None, expected: dict[str, ExpectedRun] | None = None) -> dict[str, tuple]:
    """Per setting letter: (runs recorded, runs the default job makes)."""
    expected = expected_runs() if expected is None else expected
    want: dict[str, int] = {}
    for run in expected.values():
        want[run.setting] = want.get(run.setting, 0) + 1
    have: dict[str, int] = {}
    if steps is not None and "run" in steps.columns:
        for run in steps["run"]:
            letter = str(run).split("/")[0]
            have[letter] = have.get(letter, 0) + 1
    return {k: (have.get(k, 0), v) for k, v in sorted(want.items())}


def check_record(steps: pd.DataFrame, expected: dict[str, ExpectedRun] | None = None) -> None:
    """AnalysisInputError unless every recorded run is a run of the default job trained under today's config."""
    expected = expected_runs() if expected is None else expected
    if "run" not in steps.columns or "config_sha256" not in steps.columns:
        raise AnalysisInputError(
            "benchmarks/results/tiny/steps.csv.gz has no run fingerprints (columns run, config_sha256): it was "
            "written before records were checked; record the job again with `pods analysis record`"
        )
    for _, row in steps.iterrows():
        run = str(row["run"])
        if run not in expected:
            raise AnalysisInputError(
                f"the record holds {run}, which the default job does not make (config/runs_tiny.tsv x the seeds of "
                "scales.tiny): remove it from the record, or restore the sheet"
            )
        if str(row["config_sha256"]) != expected[run].fingerprint:
            raise AnalysisInputError(
                f"the recorded run {run} was trained under another config than the default job trains now "
                f"(fingerprint {str(row['config_sha256'])[:12]} vs {expected[run].fingerprint[:12]}): the record is "
                "stale. Fix: train the changed runs again and record them (pods analysis record)"
            )
        want = expected[run].max_steps
        if want is not None and "steps" in row and pd.notna(row["steps"]) and int(row["steps"]) != want:
            raise AnalysisInputError(
                f"the recorded run {run} trained {int(row['steps'])} steps, the default job's trains {want} "
                "(budget.max_steps): it is not a run of this job. Fix: restore the record from git "
                "(git checkout -- benchmarks/results/tiny)"
            )


def missing_runs(data: str | Path, root: str = "results") -> list[str]:
    """The Snakemake targets (``{root}/runs/<run>/summary.json``) of the default job's runs not yet recorded."""
    _, steps, _, _ = _read(Path(data))
    have = set() if steps is None or "run" not in steps.columns else set(steps["run"].astype(str))
    return [f"{root}/runs/{key}/summary.json" for key in expected_runs() if key not in have]


# ----------------------------------------------------------------------------------------------
# the command: pods analysis record


def add_arguments(p) -> None:
    p.add_argument("--root", default="results", help="the workflow's root of this sitting (default results)")
    p.add_argument("--data", default="benchmarks/results", help="the records folder (default benchmarks/results)")
    p.add_argument("--wall-s", type=float, help="this sitting's measured wall seconds (install to the last run)")
    p.add_argument("--install-s", type=float, help="the install's seconds, when this sitting installed")
    p.add_argument(
        "--missing",
        action="store_true",
        help="print the Snakemake targets of the runs not yet recorded (snakemake -c2 $(pods analysis record --missing))",
    )
    p.add_argument("--status", action="store_true", help="print runs recorded per setting and exit")


NOTHING_MISSING = "nothing-missing:the-record-is-complete"
"""What ``--missing`` prints when the record is complete: a target no rule makes, so that
``snakemake -c2 $(pods analysis record --missing)`` stops at once instead of scheduling the whole job."""


def check_seconds(option: str, value: float | None, *, zero: bool = False) -> None:
    """AnalysisInputError unless ``value`` (an option's seconds) is None or a finite number > 0 (>= 0 with zero)."""
    import math

    if value is not None and not (math.isfinite(value) and (value >= 0 if zero else value > 0)):
        bound = ">= 0" if zero else "> 0"
        raise AnalysisInputError(f"{option} {value}: give a finite number of seconds {bound}")


def run(args) -> int:
    import sys

    try:
        if args.missing:
            targets = missing_runs(args.data, args.root)
            if not targets:
                print(NOTHING_MISSING)
                print(f"{args.data}: the record holds every run of the default job; nothing to train", file=sys.stderr)
                return 1
            print("\n".join(targets))
            return 0
        if args.status:
            _, steps, job, _ = _read(Path(args.data))
            for letter, (have, want) in record_status(steps).items():
                print(f"({letter}) {have} of {want} runs recorded")
            for s in (job or {}).get("sittings", []):
                print(
                    f"sitting {s['sitting']}: {s['runs_added']} runs, {s['wall_s'] / 60:.0f} min on {s['cores']} cores ({s['cpu']})"
                )
            return 0
        if args.wall_s is None:
            raise AnalysisInputError(
                "--wall-s SECONDS is needed: this sitting's measured wall time (install to the last run)"
            )
        check_seconds("--wall-s", args.wall_s)
        check_seconds("--install-s", args.install_s, zero=True)
        got = record_sitting(args.root, args.data, args.wall_s, args.install_s)
    except AnalysisInputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(
        f"recorded {got['added']} new run(s) ({got['agreed']} recomputed and identical); the record holds "
        f"{got['recorded']} of the default job's {got['expected']} runs; `pods analysis results` renders it"
    )
    return 0


def main(argv=None, prog: str = "pods analysis record") -> int:
    import argparse

    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0], allow_abbrev=False)
    add_arguments(ap)
    return run(ap.parse_args(argv))
