"""Do two runs of the tiny default job give the same tables, except for the columns measured in seconds?

The tiny scale's tables must not depend on the machine's load: this checks a whole job between two runs.

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
differing in seconds only, and at least one was compared; 1 otherwise. A table with a header and no row on
both sides is ``EMPTY``: nothing was compared, so it is not a pass. Bad input is one line naming the file (and
line) on stderr, exit status 2: a folder that is not one, an empty (0-byte) table, one that is not UTF-8 text
(a binary file), holds a NUL byte, or a row whose number of fields is not the header's (a cut last row).
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path

from pods_repro.textutil import NotTextError, decode_text

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


class BadTable(Exception):
    """A table that cannot be compared as the workflow wrote it; the message names the file and line (exit 2)."""


def _read(path: Path) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of a CSV table; :class:`BadTable` for an empty, binary or damaged one."""
    fix = "Fix: rerun the workflow step that writes it, or remove it from both folders"
    try:
        data = path.read_bytes()
    except OSError as e:
        raise BadTable(f"{path} cannot be read ({e.strerror or e}). {fix}") from None
    try:
        text = decode_text(data)
    except NotTextError as e:
        if e.byte is None:
            raise BadTable(f"{path}: line {e.line} holds a NUL byte (a binary or damaged file). {fix}") from None
        raise BadTable(
            f"{path}: line {e.line} is not UTF-8 text (byte 0x{e.byte:02x}; a binary file?). {fix}"
        ) from None
    reader = csv.reader(io.StringIO(text, newline=""))  # as open(newline=""): quoted newlines stay in their field
    rows = []
    try:
        for row in reader:
            if rows and len(row) != len(rows[0]):
                raise BadTable(
                    f"{path}: line {reader.line_num}: {len(row)} field(s) where the header has {len(rows[0])} (a cut "
                    f"or damaged row). {fix}"
                )
            rows.append(row)
    except csv.Error as e:
        raise BadTable(f"{path}: line {reader.line_num}: {e}. {fix}") from None
    if not rows:
        raise BadTable(f"{path} is empty (0 rows, not even a header; the workflow writes at least the header). {fix}")
    return rows[0], rows[1:]


def compare(table: str, a: Path, b: Path) -> tuple[str, str]:
    """(status, detail) of one table: status is identical / seconds / DIFFERENT / EMPTY (no row on either side)."""
    head_a, rows_a = _read(a)
    head_b, rows_b = _read(b)
    if head_a != head_b:
        only = sorted(set(head_a) ^ set(head_b))
        return "DIFFERENT", f"columns differ ({', '.join(only) or 'order'})"
    if len(rows_a) != len(rows_b):
        return "DIFFERENT", f"{len(rows_a)} vs {len(rows_b)} rows"
    if not rows_a:
        return "EMPTY", "no rows on either side, nothing compared"
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
            print(f"compare_tables: {root} is not a folder. Fix: give two results/tables folders", file=sys.stderr)
            return 2
    try:
        return _compare_folders(args.tables_a, args.tables_b)
    except BadTable as e:
        print(f"compare_tables: {e}", file=sys.stderr)
        return 2


def _compare_folders(tables_a: Path, tables_b: Path) -> int:
    names_a = {p.name for p in tables_a.glob("*.csv")}
    names_b = {p.name for p in tables_b.glob("*.csv")}
    shared = sorted(names_a & names_b)
    bad = 0
    for name in shared:
        status, detail = compare(name, tables_a / name, tables_b / name)
        bad += status in ("DIFFERENT", "EMPTY")
        print(f"{status:10s} {name}: {detail}")
    for name in sorted(names_a ^ names_b):
        print(f"ONE SIDE   {name} (only in {'A' if name in names_a else 'B'})")
    print(f"{len(shared) - bad} of {len(shared)} shared tables equal outside the columns measured in seconds")
    return 0 if shared and not bad and names_a == names_b else 1


if __name__ == "__main__":
    sys.exit(main())
