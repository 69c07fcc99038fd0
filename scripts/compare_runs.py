"""Are two roots of training runs the same bits, except for what is measured in seconds? (issue 10, criterion 1)

Run:  python scripts/compare_runs.py RUNS_A RUNS_B          e.g. results/runs /elsewhere/results/runs

Every run directory (one holding ``metrics.jsonl``) found under both roots, by its path relative to the root,
is compared record by record: ``eval.jsonl`` (every evaluation) and ``metrics.jsonl`` (every step), each value
except the machine-bound ones (keys ending in ``time_s``, ``peak_mem_mb``). A run is ``identical`` when both
files have the same records with equal values; otherwise the first difference is printed (file, record,
key, both values). A run without ``summary.json`` on either side (still training, or stopped) is listed
as unfinished and not compared; runs under one root only are listed apart. Exit status 0 when every shared run is
identical and at least one was compared, 1 otherwise.

With ``--shared-steps`` two runs of one arm and seed under different budgets or evaluation grids are compared
on what both hold: the steps up to the shorter run's last, and the evaluations (step and test set) both made
up to it. The tiny scale's step budget makes a short run the prefix of a long one (e.g. a 200-step overlay
against the main job's 600 steps), which this checks:

      python scripts/compare_runs.py --shared-steps results/ablations200/runs results/runs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pods.runlog import read_jsonl

MACHINE_BOUND_SUFFIXES = ("time_s", "peak_mem_mb")
# Bookkeeping of the evaluation grid and the budget, which differ by design between a short and a long run.
GRID_KEYS = ("grid_index", "final")


def _strip(rec: dict, ignored: tuple[str, ...] = ()) -> dict:
    return {k: v for k, v in rec.items() if not k.endswith(MACHINE_BOUND_SUFFIXES) and k not in ignored}


def _shared(ra: list[dict], rb: list[dict], last_step: int) -> tuple[list[dict], list[dict]]:
    """The records of both runs up to `last_step` whose (step, test set) the other run has too."""

    def key(r):
        return r.get("step"), r.get("dataset")

    keys = {key(r) for r in ra if r.get("step", 0) <= last_step} & {key(r) for r in rb}
    return [r for r in ra if key(r) in keys], [r for r in rb if key(r) in keys]


def first_difference(run_a: Path, run_b: Path, shared_steps: bool = False) -> tuple[str | None, int, int]:
    """(None when the two runs agree on every value not measured in seconds or bytes, else the first
    difference in words; the evaluations and the steps compared). `shared_steps`: only on the steps and
    evaluations both runs hold, their grid bookkeeping aside (see the module)."""
    logs = {name: (read_jsonl(run_a / name), read_jsonl(run_b / name)) for name in ("eval.jsonl", "metrics.jsonl")}
    ignored = ()
    if shared_steps:
        last = min(max((r.get("step", 0) for r in rows), default=0) for rows in logs["metrics.jsonl"])
        logs = {name: _shared(ra, rb, last) for name, (ra, rb) in logs.items()}
        ignored = GRID_KEYS
    counts = len(logs["eval.jsonl"][0]), len(logs["metrics.jsonl"][0])
    for name, (ra, rb) in logs.items():
        for i, (a, b) in enumerate(zip(ra, rb, strict=False)):  # lengths compared below
            a, b = _strip(a, ignored), _strip(b, ignored)
            if a != b:
                keys = sorted(set(a) | set(b))
                key = next(k for k in keys if a.get(k) != b.get(k))
                where = f"step {a.get('step', b.get('step'))}" + (f" {a['dataset']}" if "dataset" in a else "")
                return f"{name} record {i} ({where}): {key} = {a.get(key)!r} vs {b.get(key)!r}", *counts
        if len(ra) != len(rb):
            return f"{name}: {len(ra)} vs {len(rb)} records", *counts
    return None, *counts


def run_dirs(root: Path) -> dict[str, Path]:
    return {str(p.parent.relative_to(root)): p.parent for p in sorted(root.rglob("metrics.jsonl"))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs_a", type=Path)
    ap.add_argument("runs_b", type=Path)
    ap.add_argument(
        "--shared-steps",
        action="store_true",
        help="compare only the steps and evaluations both runs hold (runs of one arm under different budgets)",
    )
    args = ap.parse_args(argv)
    for root in (args.runs_a, args.runs_b):
        if not root.is_dir():
            ap.error(f"{root} is not a directory (give the folder that holds the runs, e.g. results/runs)")
    a, b = run_dirs(args.runs_a), run_dirs(args.runs_b)
    shared = sorted(set(a) & set(b))
    same = 0
    for rel in shared:
        unfinished = [x for x, d in (("A", a[rel]), ("B", b[rel])) if not (d / "summary.json").is_file()]
        if unfinished:  # a run still training (or stopped) is not compared record by record
            print(f"UNFINISHED {rel}  (no summary.json in {' and '.join(unfinished)})")
            continue
        diff, n_eval, n_steps = first_difference(a[rel], b[rel], args.shared_steps)
        if diff is None and args.shared_steps and not n_steps:
            diff = "no step in common"
        if diff is None:
            same += 1
            common = " in common" if args.shared_steps else ""
            print(f"identical  {rel}  ({n_eval} evaluations, {n_steps} steps{common})")
        else:
            print(f"DIFFERENT  {rel}  first: {diff}")
    for rel in sorted(set(a) ^ set(b)):
        print(f"only in {'A' if rel in a else 'B'}: {rel}")
    print(f"{same} of {len(shared)} shared runs identical")
    return 0 if shared and same == len(shared) else 1


if __name__ == "__main__":
    sys.exit(main())
