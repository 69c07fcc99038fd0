"""Are two roots of training runs the same bits, except for what is measured in seconds?

Step-budget runs must not depend on the machine's load: this checks it between two machines or two loads.

Run:  python scripts/compare_runs.py RUNS_A RUNS_B          e.g. results/runs /elsewhere/results/runs

Every run directory (one holding ``metrics.jsonl``) found under both roots, by its path relative to the root,
is compared record by record: ``eval.jsonl`` (every evaluation) and ``metrics.jsonl`` (every step), each value
except the machine-bound ones (keys ending in ``time_s``, ``cpu_s``, ``peak_mem_mb``) and the keys one side does
not log at all (a metric added by a later version). A run is ``identical`` when both
files have the same records with equal values; otherwise the first difference is printed (file, record,
key, both values). A run without ``summary.json`` on either side (still training, or stopped) is listed
as unfinished and not compared; runs under one root only are listed apart. Exit status 0 when every shared run is
identical and at least one was compared, 1 otherwise; 2 on bad input (a log line that is not a JSON object in
UTF-8, named with its file and line).

With ``--shared-steps`` two runs of one arm and seed under different budgets or evaluation grids are compared
on what both hold: the steps up to the shorter run's last, and the evaluations (step and test set) both made
up to it. The tiny scale's step budget makes a short run the prefix of a long one (e.g. a 200-step overlay
against the tiny default job's 600 steps), which this checks:

      python scripts/compare_runs.py --shared-steps results/ablations200/runs results/runs

With ``--outcomes`` only what a run sampled and scored is compared, not the floats it computed on the way:
each step's rewards (``reward_mean``, ``kept_reward_mean``, the ``reward_*_mean`` parts), completion lengths,
zero-variance and clipped shares, and every evaluation (accuracies, lengths). Two CPUs of different vendors
do not give the same bits (benchmarks/README.md, "A second kind of CPU"): the losses and gradients part at
about 1e-7 from step 1, and the sampled rewards and evaluations then hold until a rounding difference flips
one sampled token. This mode says, for each run, the first step at which the rewards part and the first
at which the evaluations do, and both runs' best and final accuracy on the primary test set:

      python scripts/compare_runs.py --outcomes /amd/results/runs /intel/results/runs

With ``--record DATA`` one root is compared with the committed record of the tiny default job instead (``DATA``:
``benchmarks/results``): each finished run under the root that the record holds has its curves recomputed from
its logs and compared with the record's, value for value (a recomputed run of the record, on one kind of CPU):

      pods train tiny_a seed=5 --scale tiny out_dir=/tmp/check/a/sel~max_variance_n~64_m~16/seed~5
      python scripts/compare_runs.py --record benchmarks/results /tmp/check
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pods_repro.runlog import read_jsonl

MACHINE_BOUND_SUFFIXES = ("time_s", "cpu_s", "peak_mem_mb")
# --outcomes: the per-step values that are counts or means of what was sampled and scored.
OUTCOME_KEYS = (
    "reward_mean",
    "kept_reward_mean",
    "completion_len_mean",
    "kept_completion_len_mean",
    "frac_zero_std",
    "kept_frac_zero_std",
    "clipped_ratio",
)
# Bookkeeping of the evaluation grid and the budget, which differ by design between a short and a long run.
GRID_KEYS = ("grid_index", "final")


class BadLog(Exception):
    """A log line that is not a JSON object in UTF-8: the message names the file and line (exit 2)."""


def _read(path: Path) -> list[dict]:
    try:
        return read_jsonl(path)
    except ValueError as e:  # pods_repro.runlog.read_jsonl: "<path>:<line>: not ..."
        raise BadLog(str(e)) from None
    except OSError as e:  # a folder named like a log, no permission
        raise BadLog(f"{path}: cannot be read ({e.strerror or e})") from None


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
    logs = {name: (_read(run_a / name), _read(run_b / name)) for name in ("eval.jsonl", "metrics.jsonl")}
    ignored = ()
    if shared_steps:
        last = min(max((r.get("step", 0) for r in rows), default=0) for rows in logs["metrics.jsonl"])
        logs = {name: _shared(ra, rb, last) for name, (ra, rb) in logs.items()}
        ignored = GRID_KEYS
    counts = len(logs["eval.jsonl"][0]), len(logs["metrics.jsonl"][0])
    for name, (ra, rb) in logs.items():
        for i, (a, b) in enumerate(zip(ra, rb, strict=False)):  # lengths compared below
            a, b = _strip(a, ignored), _strip(b, ignored)
            # a key logged by one version only (a metric added since) says nothing about what was computed
            shared = set(a) & set(b)
            a, b = {k: v for k, v in a.items() if k in shared}, {k: v for k, v in b.items() if k in shared}
            if a != b:
                keys = sorted(set(a) | set(b))
                key = next(k for k in keys if a.get(k) != b.get(k))
                where = f"step {a.get('step', b.get('step'))}" + (f" {a['dataset']}" if "dataset" in a else "")
                return f"{name} record {i} ({where}): {key} = {a.get(key)!r} vs {b.get(key)!r}", *counts
        if len(ra) != len(rb):
            return f"{name}: {len(ra)} vs {len(rb)} records", *counts
    return None, *counts


def _outcomes(rec: dict) -> dict:
    keep = {k: v for k, v in rec.items() if k in OUTCOME_KEYS or (k.startswith("reward_") and k.endswith("_mean"))}
    return {"step": rec.get("step"), **keep}


def outcome_differences(run_a: Path, run_b: Path) -> dict[str, str | int | None]:
    """Where two runs' sampled outcomes first part: 'rewards' (the first step whose rewards, lengths or
    shares differ, None if none), 'evaluations' (the step of the first evaluation that differs), 'what'
    (that first difference in words), and 'accuracy' (best / final accuracy of each run on the first
    test set it evaluates)."""
    out: dict[str, str | int | None] = {"rewards": None, "evaluations": None, "what": None}
    evals = _read(run_a / "eval.jsonl"), _read(run_b / "eval.jsonl")  # read once: compared, then scored
    for name, field, strip in (("metrics.jsonl", "rewards", _outcomes), ("eval.jsonl", "evaluations", _strip)):
        ra, rb = evals if name == "eval.jsonl" else (_read(run_a / name), _read(run_b / name))
        for a, b in zip(ra, rb, strict=False):
            a, b = strip(a), strip(b)
            if a != b:
                key = next(k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k))
                out[field] = step = a.get("step", b.get("step"))
                if out["what"] is None or (isinstance(out["rewards"], int) and step < out["rewards"]):  # the earlier
                    out["what"] = f"{name} step {step}: {key} = {a.get(key)!r} vs {b.get(key)!r}"
                break
        else:
            if len(ra) != len(rb):
                out[field] = "length"
                out["what"] = out["what"] or f"{name}: {len(ra)} vs {len(rb)} records"
    accs = []
    for rows in evals:
        first = rows[0].get("dataset") if rows else None
        acc = [r["accuracy"] for r in rows if r.get("dataset") == first and r.get("step", 0) > 0]
        accs.append(f"{max(acc):.4f}/{acc[-1]:.4f}" if acc else "-")
    out["accuracy"] = " vs ".join(accs)
    return out


def run_dirs(root: Path) -> dict[str, Path]:
    return {str(p.parent.relative_to(root)): p.parent for p in sorted(root.rglob("metrics.jsonl"))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs_a", type=Path)
    ap.add_argument("runs_b", type=Path, nargs="?")
    ap.add_argument("--record", type=Path, metavar="DATA", help="compare RUNS_A with the committed record in DATA")
    ap.add_argument(
        "--shared-steps",
        action="store_true",
        help="compare only the steps and evaluations both runs hold (runs of one arm under different budgets)",
    )
    ap.add_argument(
        "--outcomes",
        action="store_true",
        help="compare only sampled rewards, lengths and evaluations; say where each first parts (two CPU vendors)",
    )
    args = ap.parse_args(argv)
    if args.record is not None:
        return _against_record(args.runs_a, args.record)
    if args.runs_b is None:
        ap.error("give two roots to compare, or one with --record DATA")
    if args.outcomes and args.shared_steps:
        ap.error("--outcomes compares whole runs; use it without --shared-steps")
    for root in (args.runs_a, args.runs_b):
        if not root.is_dir():
            ap.error(f"{root} is not a directory (give the folder that holds the runs, e.g. results/runs)")
    try:
        return _compare(args)
    except BadLog as e:
        print(
            f"compare_runs: {e}. Fix: restore that file from a good copy of the run, or compare roots without it",
            file=sys.stderr,
        )
        return 2


def _against_record(runs: Path, data: Path) -> int:
    from pods_repro.analysis.record import compare_with_record
    from pods_repro.analysis.tidy import AnalysisInputError

    try:
        rows = compare_with_record(runs, data)
    except AnalysisInputError as e:
        print(f"compare_runs: {e}", file=sys.stderr)
        return 2
    for key, verdict in rows:
        print(f"{verdict:<12}  {key}")
    compared = [v for _, v in rows if v in ("identical", "DIFFERENT")]
    same = compared.count("identical")
    print(f"{same} of {len(compared)} recorded runs identical")
    return 0 if compared and same == len(compared) else 1


def _compare(args: argparse.Namespace) -> int:
    a, b = run_dirs(args.runs_a), run_dirs(args.runs_b)
    shared = sorted(set(a) & set(b))
    same = unfinished = 0
    for rel in shared:
        missing = [x for x, d in (("A", a[rel]), ("B", b[rel])) if not (d / "summary.json").is_file()]
        if missing:  # a run still training (or stopped) is not compared record by record
            print(f"UNFINISHED {rel}  (no summary.json in {' and '.join(missing)})")
            unfinished += 1
            continue
        if args.outcomes:
            o = outcome_differences(a[rel], b[rel])
            agree = o["rewards"] is None and o["evaluations"] is None
            same += agree
            verdict = "same outcomes" if agree else "OUTCOMES PART"
            at = {k: "none" if o[k] is None else o[k] for k in ("rewards", "evaluations")}  # step 0 is a step
            print(
                f"{verdict:<13}  {rel}  rewards part at step {at['rewards']}, evaluations at step "
                f"{at['evaluations']}; best/final accuracy {o['accuracy']}"
                + (f"; first: {o['what']}" if o["what"] else "")
            )
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
    what = "with the same sampled outcomes" if args.outcomes else "identical"
    left = f" ({unfinished} unfinished, not compared)" if unfinished else ""
    print(f"{same} of {len(shared)} shared runs {what}{left}")
    return 0 if shared and same == len(shared) else 1


if __name__ == "__main__":
    sys.exit(main())
