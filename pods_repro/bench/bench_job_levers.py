"""CPU seconds of the tiny default job's runs under two versions of the code, side by side, same bits.

    python benchmarks/bench_job_levers.py --old REV_OR_DIR (= pods bench job_levers)
        [--new DIR] [--steps 100] [--arms baseline pods] [--seed 0] [--repeats 2] [--per-lever] [--out CSV]

``--old`` is the code to compare against: a checkout directory (one holding ``pods/``), or a git revision
of this checkout, checked out for the benchmark into a temporary worktree (``git worktree add``) and
removed after. ``--new`` is this checkout by default. Each run is one ``python -m pods_repro train tiny_a
seed=S --scale tiny budget.max_steps=N`` of an arm of tiny (a) (baseline: GRPO 16/16, pods: 64 -> 16),
exactly as the default job trains it shortened to ``--steps``, in its own single-threaded subprocess
with ``PYTHONPATH`` set to that code; old and new alternate (which goes first rotates from repeat to
repeat), so both see the same load. Each run's CPU seconds (``time.process_time``) come from its
``summary.json``: training steps (``train_cpu_s``), evaluations (``eval_cpu_s``), start-up up to the
first step (``startup_cpu_s``, imports and building), the rest of the process (``other``: the final save,
the summary) and the whole process (``cpu_s_last_session``). Wall seconds on a shared host measure the
neighbours; CPU seconds measure the code.

The runs use a private model cache (``PODS_CACHE`` in a temporary folder whose ``tiny/`` links to the
real cache's built models), so that the step-0 evaluation cache (:mod:`pods_repro.evalcache`) starts empty. A
one-step warm-up run of each version comes first (not timed): under the new code it stores the step-0
evaluation, as the first run of a setting does in the job, so the timed new runs are the job's 127 other
runs of (a). ``--per-lever`` adds a third version, the new code with that reuse off (``noreuse``:
``PODS_EVAL_CACHE=off``), so that the lean sampler and the reused evaluation are measured apart. Every timed pair is checked to be the same bits (``eval.jsonl`` and ``metrics.jsonl``,
every value except the ones in seconds), and the table says so; a pair that differs makes the exit
status 1.

Printed: one line per run, then per arm and phase the median CPU seconds of each version and their
ratio old/new. ``--out`` writes both as CSV (``kind`` run or ratio) with the host's CPU model in a
column. The committed measurement is ``benchmarks/results/job_levers.csv``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

ARMS = {"baseline": ("rollout.n=16", "rollout.m=16"), "pods": ("rollout.n=64", "rollout.m=16")}
PHASES = ("train_cpu_s", "eval_cpu_s", "startup_cpu_s", "other_cpu_s", "total_cpu_s")
MACHINE_BOUND = ("time_s", "cpu_s", "peak_mem_mb")
COLUMNS = ("kind", "code", "arm", "repeat", "steps", *PHASES, "identical", "host_cpu")


def _checkout(spec: str, tmp: Path) -> tuple[Path, bool]:
    """(directory holding pods/, whether it is a temporary worktree) for a directory or a git revision."""
    path = Path(spec).expanduser()
    if (path / "pods" / "__init__.py").is_file():
        return path.resolve(), False
    from pods_repro.bench import PACKAGE_PARENT

    dest = tmp / "old-code"
    res = subprocess.run(
        ["git", "-C", str(PACKAGE_PARENT), "worktree", "add", "--detach", str(dest), spec],
        capture_output=True,
        text=True,
    )
    if res.returncode:
        raise FileNotFoundError(f"--old {spec!r} is neither a checkout (a folder with pods/) nor a git revision: "
                                f"{res.stderr.strip()}")  # fmt: skip
    return dest, True


def _private_cache(tmp: Path) -> Path:
    from pods_repro.tiny import cache_root

    real = cache_root() / "tiny"
    real.mkdir(parents=True, exist_ok=True)
    root = tmp / "cache"
    root.mkdir()
    (root / "tiny").symlink_to(real.resolve(), target_is_directory=True)
    return root


def train(
    code: Path, arm: str, seed: int, steps: int, out: Path, cache: Path, reuse: bool = True, extra: tuple = ()
) -> dict:
    """One run of `arm` under the code in `code` (``reuse``: of the stored step-0 evaluation, where the code
    has pods_repro.evalcache); its summary.json with ``other_cpu_s`` and ``total_cpu_s``."""
    env = {**os.environ, "PYTHONPATH": str(code), "PODS_CACHE": str(cache), "PODS_NO_PROGRESS": "1"}
    env.pop("PODS_EVAL_CACHE", None)
    if not reuse:
        env["PODS_EVAL_CACHE"] = "off"
    cmd = [sys.executable, "-m", "pods_repro", "train", "tiny_a", f"seed={seed}", "--scale", "tiny", *ARMS[arm],
           f"budget.max_steps={steps}", *extra, f"out_dir={out}"]  # fmt: skip
    res = subprocess.run(cmd, cwd=code, env=env, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed ({res.returncode}):\n{res.stderr[-3000:]}")
    summary = json.loads((out / "summary.json").read_text())
    total = summary["cpu_s_last_session"]
    summary["total_cpu_s"] = total
    summary["other_cpu_s"] = total - sum(summary[k] for k in ("train_cpu_s", "eval_cpu_s", "startup_cpu_s"))
    return summary


def _records(run: Path, name: str) -> list[dict]:
    rows = [json.loads(ln) for ln in (run / name).read_text().splitlines() if ln.strip()]
    return [{k: v for k, v in r.items() if not k.endswith(MACHINE_BOUND)} for r in rows]


def same_bits(a: Path, b: Path) -> bool:
    """Whether two runs logged the same evaluations and steps, every value but the machine-bound ones."""
    return all(_records(a, n) == _records(b, n) and _records(a, n) for n in ("eval.jsonl", "metrics.jsonl"))


def main(argv: list[str] | None = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    if args.steps < 1 or args.repeats < 1:
        ap.error("--steps and --repeats must be >= 1")

    from pods_repro.bench import PACKAGE_PARENT
    from pods_repro.kernels import cpuinfo_field

    host = cpuinfo_field("model name") or "unknown"
    tmp = Path(tempfile.mkdtemp(prefix="bench_job_levers."))
    old, worktree = _checkout(args.old, tmp)
    try:
        new = Path(args.new).resolve() if args.new else PACKAGE_PARENT
        codes = {"old": old, "new": new, **({"noreuse": new} if args.per_lever else {})}
        cache = _private_cache(tmp)
        runs_root = args.keep or tmp / "runs"
        print(f"old: {old}\nnew: {new}\nhost CPU: {host}; {args.steps} steps of tiny (a), seed {args.seed}")
        for name in ("old", "new"):  # warm-up: page cache, and the new code's step-0 evaluation stored
            train(codes[name], "pods", args.seed, 1, runs_root / "warmup" / name, cache, extra=tuple(args.set))
        rows, ok = _run_pairs(args, codes, runs_root, cache, host)
        ratios = _medians_and_ratios(args, codes, rows, host)
        if args.out:
            _write_csv(args.out, rows + ratios)
        print("every pair the same bits" if ok else "SOME PAIRS DIFFER: the new code changed a run")
        return 0 if ok else 1
    finally:
        if worktree:
            subprocess.run(["git", "-C", str(PACKAGE_PARENT), "worktree", "remove", "--force", str(old)],
                           capture_output=True)  # fmt: skip
        shutil.rmtree(tmp, ignore_errors=True)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        allow_abbrev=False, description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--old", required=True, help="the code to compare against: a checkout folder or a git revision")
    ap.add_argument("--new", default=None, help="the new code's checkout (default: the one this benchmark runs from)")
    ap.add_argument("--steps", type=int, default=100, help="optimizer steps per run (the job: 600)")
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=2, help="old/new pairs per arm (the order rotates)")
    ap.add_argument("--out", type=Path, default=None, help="CSV of the runs and the ratios")
    ap.add_argument("--keep", type=Path, default=None, help="keep the run folders here (default: deleted)")
    ap.add_argument(
        "--per-lever",
        action="store_true",
        help="also run the new code without reusing the step-0 evaluation (PODS_EVAL_CACHE=off): code 'noreuse'",
    )
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config override for every run (e.g. policy.model=... eval.max_examples=...; the default: none, "
        "the job's own runs)",
    )
    return ap


def _run_pairs(
    args: argparse.Namespace, codes: dict, runs_root: Path, cache: Path, host: str
) -> tuple[list[dict], bool]:
    """Each repeat and arm: one run per code (who goes first rotates), and whether their bits agree."""
    rows = []
    ok = True
    for rep in range(args.repeats):
        for arm in args.arms:
            names = list(codes)
            order = names[rep % len(names) :] + names[: rep % len(names)]  # who goes first rotates
            dirs = {}
            for name in order:
                dirs[name] = runs_root / f"{arm}_r{rep}" / name
                reuse = name != "noreuse"
                s = train(codes[name], arm, args.seed, args.steps, dirs[name], cache, reuse, tuple(args.set))
                rows.append({"kind": "run", "code": name, "arm": arm, "repeat": rep, "steps": s["steps"],
                             **{k: s[k] for k in PHASES}, "host_cpu": host})  # fmt: skip
            same = all(same_bits(dirs["old"], dirs[name]) for name in names[1:])
            ok &= same
            for r in rows[-len(names) :]:
                r["identical"] = same
            for r in sorted(rows[-len(names) :], key=lambda r: names.index(r["code"])):
                print(f"{arm:8s} r{rep} {r['code']:3s} " + " ".join(f"{k} {r[k]:7.2f}" for k in PHASES)
                      + f"  same bits: {'yes' if same else 'NO'}")  # fmt: skip
    return rows, ok


def _medians_and_ratios(args: argparse.Namespace, codes: dict, rows: list[dict], host: str) -> list[dict]:
    """Per arm, each code's median CPU seconds per phase and the ratios between the codes (printed too)."""
    ratios = []
    print("\nmedian CPU seconds per run, old / new (ratio > 1: the new code is cheaper)")
    for arm in args.arms:
        med = {
            name: {k: statistics.median(r[k] for r in rows if r["arm"] == arm and r["code"] == name) for k in PHASES}
            for name in codes
        }
        print(f"{arm}: " + "; ".join(f"{k} {med['old'][k]:.2f}/{med['new'][k]:.2f} = "
                                     f"{med['old'][k] / med['new'][k]:.2f}x" for k in PHASES))  # fmt: skip
        for name in codes:
            ratios.append({"kind": "median", "code": name, "arm": arm, "steps": args.steps, **med[name]})
        pairs = [("old", "new"), *([("old", "noreuse"), ("noreuse", "new")] if args.per_lever else [])]
        for a, b in pairs:
            ratios.append({"kind": "ratio", "code": f"{a}/{b}", "arm": arm, "steps": args.steps,
                           **{k: med[a][k] / med[b][k] for k in PHASES}})  # fmt: skip
        if args.per_lever:
            print(f"{arm} without step-0 reuse: " + "; ".join(
                f"{k} old/noreuse {med['old'][k] / med['noreuse'][k]:.2f}x, noreuse/new "
                f"{med['noreuse'][k] / med['new'][k]:.2f}x" for k in PHASES))  # fmt: skip
    for r in ratios:
        r.update(repeat="", identical=all(x["identical"] for x in rows if x["arm"] == r["arm"]), host_cpu=host)
    return ratios


def _write_csv(out: Path, rows: list[dict]) -> None:
    """The runs and the ratios as CSV (``--out``)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in r.items()})
    print(f"wrote {out}")


if __name__ == "__main__":
    from pods_repro.bench import run_cli

    run_cli(main, "bench_job_levers")
