"""Are two roots of training runs the same bits, except for what is measured in seconds? (issue 10, criterion 1)

Run:  python scripts/compare_runs.py RUNS_A RUNS_B          e.g. results/runs /elsewhere/results/runs

Every run directory (one holding ``metrics.jsonl``) found under both roots, by its path relative to the root,
is compared record by record: ``eval.jsonl`` (every evaluation) and ``metrics.jsonl`` (every step), each value
except the machine-bound ones (keys ending in ``time_s``, ``peak_mem_mb``). A run is ``identical`` when both
files have the same records with equal values; otherwise the first difference is printed (file, record,
key, both values). A run without ``summary.json`` on either side (still training, or stopped) is listed
as unfinished and not compared; runs under one root only are listed apart. Exit status 0 when every shared run is
identical and at least one was compared, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pods.runlog import read_jsonl

MACHINE_BOUND_SUFFIXES = ("time_s", "peak_mem_mb")


def _strip(rec: dict) -> dict:
    return {k: v for k, v in rec.items() if not k.endswith(MACHINE_BOUND_SUFFIXES)}


def first_difference(run_a: Path, run_b: Path) -> str | None:
    """None when the two runs agree on every value not measured in seconds or bytes; else the first
    difference, in words."""
    for name in ("eval.jsonl", "metrics.jsonl"):
        ra, rb = read_jsonl(run_a / name), read_jsonl(run_b / name)
        for i, (a, b) in enumerate(zip(ra, rb, strict=False)):  # lengths compared below
            a, b = _strip(a), _strip(b)
            if a != b:
                keys = sorted(set(a) | set(b))
                key = next(k for k in keys if a.get(k) != b.get(k))
                where = f"step {a.get('step', b.get('step'))}" + (f" {a['dataset']}" if "dataset" in a else "")
                return f"{name} record {i} ({where}): {key} = {a.get(key)!r} vs {b.get(key)!r}"
        if len(ra) != len(rb):
            return f"{name}: {len(ra)} vs {len(rb)} records"
    return None


def run_dirs(root: Path) -> dict[str, Path]:
    return {str(p.parent.relative_to(root)): p.parent for p in sorted(root.rglob("metrics.jsonl"))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs_a", type=Path)
    ap.add_argument("runs_b", type=Path)
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
        diff = first_difference(a[rel], b[rel])
        n_eval, n_steps = len(read_jsonl(a[rel] / "eval.jsonl")), len(read_jsonl(a[rel] / "metrics.jsonl"))
        if diff is None:
            same += 1
            print(f"identical  {rel}  ({n_eval} evaluations, {n_steps} steps)")
        else:
            print(f"DIFFERENT  {rel}  first: {diff}")
    for rel in sorted(set(a) ^ set(b)):
        print(f"only in {'A' if rel in a else 'B'}: {rel}")
    print(f"{same} of {len(shared)} shared runs identical")
    return 0 if shared and same == len(shared) else 1


if __name__ == "__main__":
    sys.exit(main())
