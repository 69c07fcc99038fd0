"""The main job's model builds and training runs as a list of shell commands, for main_runs.sh.

Reads the output of `snakemake -n -p --forceall` (its "Shell command:" lines) on stdin and prints the
`pods_repro.models build` commands first, then the `pods train` commands, longest first by the seconds each
run took in an earlier job (its summary.json's wall_s_last_session; runs it lacks come last), so that
many processes at once finish close together:

    .venv/bin/snakemake -n -p --forceall --config released_logs=DIR \\
        | python benchmarks/gpu/main_runs_list.py --times-from OLD_JOB > .xhost/cmds.txt

DIR is a local copy of the authors' released results/ folder; OLD_JOB the clone of an earlier job.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

PREFIX = "Shell command: "


def commands(text: str) -> tuple[list[str], list[str]]:
    builds, trains = [], []
    for line in text.splitlines():
        if not line.startswith(PREFIX):
            continue
        cmd = line[len(PREFIX) :].strip()
        if cmd.startswith("python -m pods_repro.models build "):
            builds.append(cmd)
        elif cmd.startswith("python -m pods_repro train "):
            trains.append(cmd)
    return builds, trains


def seconds(cmd: str, job_root: Path | None) -> float:
    match = re.search(r"out_dir=(\S+)", cmd)
    if job_root is None or match is None:
        return -1.0
    summary = job_root / match.group(1) / "summary.json"
    if not summary.exists():
        return -1.0
    return float(json.loads(summary.read_text()).get("wall_s_last_session") or -1.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--times-from", type=Path, default=None, help="an earlier job's repository root")
    args = parser.parse_args(argv)
    builds, trains = commands(sys.stdin.read())
    if not trains:
        print(
            "no `python -m pods_repro train` command in the input: pipe `snakemake -n -p --forceall` into this",
            file=sys.stderr,
        )
        return 1
    took = {c: seconds(c, args.times_from) for c in trains}  # each summary.json read once
    trains.sort(key=lambda c: -took[c])
    total = sum(max(t, 0.0) for t in took.values())
    print("\n".join(builds + trains))
    print(
        f"{len(builds)} builds, {len(trains)} runs; the runs took {total:.0f} s together in the earlier job",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
