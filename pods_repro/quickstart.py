"""``pods quickstart``: the package end to end in minutes on a laptop's CPU.

Trains both arms of the tiny (a) comparison, GRPO (n = m = 16) and GRPO-PODS (n = 64, m = 16), on a few
seeds for a few hundred optimizer steps (``--jobs`` runs at a time, single-threaded each), then prints the
time-to-peak table, draws the accuracy curves (Fig. 3's panel for (a)) and says in one line what they show::

    pods quickstart                      # 5 seeds per arm, 300 steps: a few minutes on 2 cores
    pods quickstart --steps 600          # the default job's budget: continues the runs above

Each run is the default job's run of that arm and seed with a shorter budget (``pods train tiny_a seed=S
--scale tiny budget.max_steps=N``), so a larger ``--steps`` continues it from its last checkpoint and
ends with the curves of the longer budget. ``--steps`` is at least 25 (one evaluation interval) and no
fewer than the runs in ``--out`` have trained. The output (``--out``, default ``results/quickstart``) holds
the run directories, ``tables/`` (curves, steps, time-to-peak) and ``fig_3_a.png``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pods_repro import registry

ARMS = (
    ("GRPO", "sel~max_variance_n~16_m~16", ["rollout.n=16", "rollout.m=16"]),
    ("PODS", "sel~max_variance_n~64_m~16", []),
)
MODEL = "tiny:llama-arith_warm_tt"


def _parser(prog: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--seeds", type=int, default=5, help="seeds per arm (default 5: the fewest with an interval)")
    ap.add_argument(
        "--steps",
        type=int,
        default=300,
        help="optimizer steps per run, at least 25 (one evaluation interval) and no fewer than the runs in --out "
        "have trained (default 300; the job's: 600)",
    )
    ap.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1, help="runs at a time (default: cores)")
    ap.add_argument("--out", default="results/quickstart", help="output folder (default results/quickstart)")
    return ap


def _run(cmd: list[str], log: Path, env: dict) -> tuple[int, float]:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as fh:
        t0 = time.perf_counter()
        rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, check=False).returncode
    return rc, time.perf_counter() - t0


def _check_out(out: Path, steps: int) -> str | None:
    """Why ``--out`` cannot hold this quickstart (a file on its path; runs trained longer than ``--steps``, whose
    table would be theirs, not this budget's), or None."""
    import json

    for p in (out, *out.parents):
        if p.exists() and not p.is_dir():
            return f"--out {out}: {p} is a file, not a folder; give --out a folder (default results/quickstart)"
    longest = 0
    for summary in (out / "runs").glob("a/*/seed~*/summary.json"):
        try:
            longest = max(longest, int(json.loads(summary.read_text(encoding="utf-8")).get("steps") or 0))
        except (OSError, ValueError, TypeError, AttributeError):
            continue  # a damaged run: its `pods train` says what is wrong
    if longest > steps:
        return (
            f"--steps {steps}: the runs in {out} have trained {longest} steps and a shorter budget does not shorten "
            f"them; give --steps {longest} or more (continues them), or another --out"
        )
    return None


def _verdict(row) -> str:
    """One line from the steps-to-peak interval: above 1 faster, below 1 slower, containing 1 not resolved."""
    lo, hi, point = float(row["speedup_steps_ci_low"]), float(row["speedup_steps_ci_high"]), float(row["speedup_steps"])
    if float(row["t_pods_s"]) == float("inf"):
        return "PODS did not reach GRPO's 99%-of-peak accuracy within this budget (more --steps continue the runs)"
    if lo != lo:  # NaN: too few seeds for an interval
        return f"PODS / GRPO steps-to-peak {point:.2f}; no interval below 5 seeds per arm (--seeds 5 or more)"
    interval = f"{point:.2f} [{lo:.2f}, {hi:.2f}]"
    if lo > 1:
        return f"PODS reached GRPO's 99%-of-peak accuracy in fewer optimizer steps: {interval}x (95% interval above 1)"
    if hi < 1:
        return f"PODS needed more optimizer steps than GRPO to reach GRPO's 99%-of-peak accuracy: {interval}x"
    return (
        f"not resolved at {row['n_seeds_pods']:.0f} seeds per arm and this budget: PODS / GRPO steps-to-peak "
        f"{interval}x includes 1 (the default job trains 64 seeds per arm: docs/results.md)"
    )


def main(argv: list[str] | None = None, prog: str = "pods quickstart") -> int:
    args = _parser(prog).parse_args(argv)
    if args.seeds < 1 or args.steps < 25 or args.jobs < 1:
        print(f"{prog}: --seeds >= 1, --steps >= 25 (one evaluation interval) and --jobs >= 1", file=sys.stderr)
        return 2
    out = Path(args.out)
    problem = _check_out(out, args.steps)
    if problem:
        print(f"{prog}: {problem}", file=sys.stderr)
        return 2
    env = {**os.environ, "PODS_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1"}
    if registry.IN_CHECKOUT:  # the workflow's model cache: a later `snakemake` reuses the model built here
        env.setdefault("PODS_CACHE", str(registry.REPO_ROOT / "resources" / "models"))
    t0, c0 = time.perf_counter(), time.process_time()
    py = [sys.executable, "-m", "pods_repro"]
    print(f"[quickstart] building {MODEL} (once; cached)", flush=True)
    rc, _ = _run([sys.executable, "-m", "pods_repro.models", "build", MODEL], out / "logs" / "build.log", env)
    if rc:
        print(f"{prog}: the model build failed; see {out / 'logs' / 'build.log'}", file=sys.stderr)
        return 1
    jobs = []
    for seed in range(args.seeds):
        for label, name, extra in ARMS:
            run_dir = out / "runs" / "a" / name / f"seed~{seed}"
            cmd = [*py, "train", "tiny_a", f"seed={seed}", "--scale", "tiny", *extra,
                   f"budget.max_steps={args.steps}", f"out_dir={run_dir}"]  # fmt: skip
            jobs.append((label, seed, run_dir, cmd, out / "logs" / f"{label}_seed{seed}.log"))
    print(f"[quickstart] training {len(jobs)} runs ({args.seeds} seeds x GRPO 16/16, PODS 64/16; {args.steps} "
          f"steps each), {args.jobs} at a time; logs in {out / 'logs'}", flush=True)  # fmt: skip
    failed = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(_run, cmd, log, env): (label, seed, log) for label, seed, _, cmd, log in jobs}
        for done, fut in enumerate(futures, start=1):
            label, seed, log = futures[fut]
            rc, secs = fut.result()
            state = "ok" if rc == 0 else f"FAILED (exit {rc}; {log})"
            print(f"[quickstart] {done}/{len(jobs)} {label} seed {seed}: {secs:.0f} s {state}", flush=True)
            if rc:
                failed.append(log)
    if failed:
        print(f"{prog}: {len(failed)} run(s) failed; see {failed[0]}", file=sys.stderr)
        return 1
    return _report(out, [d for _, _, d, _, _ in jobs], t0, c0)


def _report(out: Path, run_dirs: list[Path], t0: float, c0: float) -> int:
    from pods_repro.analysis.collect import load_runs_at
    from pods_repro.analysis.speedups import default_comparisons, speedup_table

    sheet = registry.repo_file("config/runs_tiny.tsv")
    curves, steps = load_runs_at(run_dirs, sheet=sheet)
    tables = out / "tables"
    tables.mkdir(parents=True, exist_ok=True)
    curves.to_csv(tables / "curves.csv", index=False)
    steps.to_csv(tables / "steps.csv", index=False)
    table = speedup_table(curves, default_comparisons(curves), steps=steps)
    table.to_csv(tables / "time_to_peak.csv", index=False)
    row = table.iloc[0]
    acc = curves[(curves["dataset"] == "arith") & (curves["metric"] == "accuracy")]
    mean = acc.groupby(["arm", "step"])["value"].mean()
    print("\narm   seeds  step-0 accuracy  peak mean accuracy (step)  steps to 0.99 x GRPO's peak")
    for arm, label, col in (("grpo", "GRPO", "baseline"), ("pods", "PODS", "pods")):
        m = mean.loc[arm]
        seeds = int(row[f"n_seeds_{col}"])
        reach = row.get(f"steps_{col}", float("nan"))
        print(f"{label:<5} {seeds:>5}  {m.iloc[0]:>15.3f}  {m.max():>18.3f} ({int(m.idxmax()):>4})  {reach:>27}")
    print(f"\n{_verdict(row)}")
    figure = registry.repo_file("figures/fig_3_main.py")
    if figure.exists():
        png = out / "fig_3_a.png"
        subprocess.run(
            [sys.executable, str(figure), "--curves", str(tables / "curves.csv"), "--steps", str(tables / "steps.csv"),
             "--x", "steps", "--out", str(png)], check=False, capture_output=True,
        )  # fmt: skip
        if png.exists():
            print(f"figure: {png}")
    wall = time.perf_counter() - t0
    print(f"tables: {tables}; {wall / 60:.1f} min from start (this host's wall clock)")
    return 0
