"""Do two runs of the main job give the same tables, except for the columns measured in seconds? (issue 10, criterion 1)

Run:  python scripts/compare_tables.py TABLES_A TABLES_B          e.g. results/tables /elsewhere/results/tables

Every ``*.csv`` in both folders (the tables the workflow writes: curves, steps, time_to_peak, plateau, levels,
seeds, ablations) is compared row by row and column by column, as the text the workflow wrote. A column is
machine-bound, and may differ, when it holds seconds, speeds or memory of this machine (``MACHINE_BOUND``
below: ``time_s``, ``seconds_per_step``, ``sps_*``, ``speedup_wall*``, ``peak_mem_mb``, and in
``time_to_peak.csv`` the eval-grid time speed-up ``speedup``/``ci_low``/``ci_high``). Everything else (every
accuracy, step count, steps-to-peak speed-up, paper-hardware prediction, plateau and level) must be equal.
The ``.md`` and ``.tex`` files are renderings of the CSVs and are not compared.

Each table is reported as ``identical``, ``seconds`` (differs only in machine-bound columns, which are named
with the number of rows that differ) or ``DIFFERENT`` (the first differing cell outside them); a table in one
folder only is listed as ``ONE SIDE``. Exit status 0 when both folders hold the same tables, each identical or
differing in seconds only, and at least one was compared; 1 otherwise.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

# Seconds, speeds and memory of the machine that ran the job, by column name in any table ...
MACHINE_BOUND_NAMES = {"seconds_per_step", "gen_s_per_step", "update_s_per_step", "reward_s_per_step", "peak_mem_mb"}
MACHINE_BOUND_PREFIXES = ("sps_", "speedup_wall")
# ... and the columns whose name alone does not say so: time_to_peak.csv's time-to-peak on the evaluation
# grid's seconds (its steps-to-peak and paper-hardware speed-ups have their own, hardware-free columns).
MACHINE_BOUND = {"time_to_peak.csv": {"speedup", "speedup_exact", "ci_low", "ci_high"}}


def machine_bound(table: str, column: str) -> bool:
    """Whether `column` of `table` is measured in this machine's seconds (or bytes)."""
    return (
        column.endswith("_s")
        or "_s_" in column
        or column in MACHINE_BOUND_NAMES
        or column.startswith(MACHINE_BOUND_PREFIXES)
        or column in MACHINE_BOUND.get(table, ())
    )


def _read(path: Path) -> tuple[list[str], list[list[str]]]:
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    return (rows[0], rows[1:]) if rows else ([], [])


def compare(table: str, a: Path, b: Path) -> tuple[str, str]:
    """(status, detail) of one table: status is identical / seconds / DIFFERENT."""
    head_a, rows_a = _read(a)
    head_b, rows_b = _read(b)
    if head_a != head_b:
        only = sorted(set(head_a) ^ set(head_b))
        return "DIFFERENT", f"columns differ ({', '.join(only) or 'order'})"
    if len(rows_a) != len(rows_b):
        return "DIFFERENT", f"{len(rows_a)} vs {len(rows_b)} rows"
    bound_rows: dict[str, int] = {}
    for i, (ra, rb) in enumerate(zip(rows_a, rows_b, strict=True)):
        for col, va, vb in zip(head_a, ra, rb, strict=True):
            if va == vb:
                continue
            if not machine_bound(table, col):
                return "DIFFERENT", f"row {i + 1}, {col}: {va!r} vs {vb!r}"
            bound_rows[col] = bound_rows.get(col, 0) + 1
    if not bound_rows:
        return "identical", f"{len(rows_a)} rows"
    cols = ", ".join(f"{c} ({k})" for c, k in bound_rows.items())
    return "seconds", f"differs only in {cols} of {len(rows_a)} rows"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tables_a", type=Path)
    ap.add_argument("tables_b", type=Path)
    args = ap.parse_args(argv)
    for root in (args.tables_a, args.tables_b):
        if not root.is_dir():
            print(f"{root}: not a folder (give two results/tables folders)", file=sys.stderr)
            return 1
    names_a = {p.name for p in args.tables_a.glob("*.csv")}
    names_b = {p.name for p in args.tables_b.glob("*.csv")}
    shared = sorted(names_a & names_b)
    bad = 0
    for name in shared:
        status, detail = compare(name, args.tables_a / name, args.tables_b / name)
        bad += status == "DIFFERENT"
        print(f"{status:10s} {name}: {detail}")
    for name in sorted(names_a ^ names_b):
        print(f"ONE SIDE   {name} (only in {'A' if name in names_a else 'B'})")
    print(f"{len(shared) - bad} of {len(shared)} shared tables equal outside the columns measured in seconds")
    return 0 if shared and not bad and names_a == names_b else 1


if __name__ == "__main__":
    sys.exit(main())
