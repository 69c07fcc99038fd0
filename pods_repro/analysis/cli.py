"""Tidy curves from run directories and from the authors' released logs; time-to-peak; bootstrap.

The command line of the analysis (``python -m pods_repro.analysis``, ``pods analysis``): COMMANDS lists the
subcommands, each a module with ``add_arguments(parser)`` and ``run(args)`` (pods_repro.analysis.command holds
what they share); `results` parses its own options.

Run:
    python -m pods_repro.analysis released --logs DIR --out-dir results/released
    python -m pods_repro.analysis collect --runs results/runs --out-dir results/tables --sheet config/runs_tiny.tsv
    python -m pods_repro.analysis time-to-peak --curves results/tables/curves.csv --steps results/tables/steps.csv \
        --paper-steps results/released/steps.csv --out-dir results/tables
    python -m pods_repro.analysis plateau --run-dirs results/warm_a4000/runs/a/*/seed~* --out-dir results/warm_a4000/tables
    python -m pods_repro.analysis levels --curves results/warm_a2000/tables/curves.csv --levels 0.8,0.84,0.86 --out-dir D
    python -m pods_repro.analysis seeds --curves results/tables/curves.csv --setting a e --out-dir results/tables
    python -m pods_repro.analysis ablations --curves results/tables/curves.csv --released results/released/curves.csv \
        --out-dir results/tables
    python -m pods_repro.analysis signal --curves results/tables/curves.csv --until-step 600 --out-dir results/tables
Exit codes: 0 ok, 2 missing, empty or unusable input or option (one line that names it and says how to fix it),
1 anything else. What is refused rather than averaged: docs/design.md#the-analysis-commands.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NamedTuple

from pods_repro.analysis import (
    ablations,
    arena,
    collect,
    command,
    gradsignal,
    jobtime,
    levels,
    plateau,
    power,
    record,
    released,
    speedups,
)
from pods_repro.analysis.tidy import AnalysisInputError


class Command(NamedTuple):
    """A subcommand: its module (``add_arguments(parser)``, ``run(args) -> int``; None: its own parser), the
    help line, the common options it takes (pods_repro.analysis.command.COMMON) and extra parser settings."""

    name: str
    module: ModuleType | None
    help: str
    common: tuple[str, ...] = ()
    parser: dict | None = None


def _own_description(module: ModuleType, allow_abbrev: bool) -> dict:
    return {"description": (module.__doc__ or "").split("\n\n")[0], "allow_abbrev": allow_abbrev}


STATS = ("until_step", "boot")
COMMANDS = (
    Command("released", released, "re-analyse the authors' released logs (Table 3 a,b,c,e,f)", ("threshold", "boot")),
    Command("collect", collect, "curves.csv and steps.csv from our run directories"),
    Command("results", None, "docs/results.md and the README's headline table from the records"),
    Command("record", record, "add a sitting's finished runs to the default job's record", (),
            _own_description(record, allow_abbrev=False)),
    Command("arena", arena, "the selection arena's tables and page (docs/arena.md)", (),
            _own_description(arena, allow_abbrev=False)),
    Command("job-time", jobtime, "a finished job's per-job seconds, replayed on more cores", (),
            _own_description(jobtime, allow_abbrev=True)),
    Command("time-to-peak", speedups, "Table 3 with bootstrap CIs from a curves.csv", ("threshold", *STATS)),
    Command("plateau", plateau, "has each arm's mean curve stopped rising? (peak position, trend)", STATS),
    Command("levels", levels, "steps each arm needs to first reach fixed accuracy levels, and their ratio", STATS),
    Command("seeds", power,
            "how wide would (i)'s interval be with N seeds per arm? (trend + noise model, pods_repro/analysis/power.py)",
            ("threshold", *STATS)),
    Command("ablations", ablations,
            "what the n/m sweeps and rule/normalisation ablations show (Figs. 4-6), beside the released logs", STATS),
    Command("signal", gradsignal,
            "the share of steps whose trained rollouts all got one reward (no gradient), per arm "
            "(pods_repro/analysis/gradsignal.py)", STATS),
)  # fmt: skip


def _parser(prog: str) -> argparse.ArgumentParser:
    """The command line of :func:`main`: one subparser per entry of COMMANDS."""
    ap = argparse.ArgumentParser(allow_abbrev=False, prog=prog, description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for c in COMMANDS:
        if c.module is None:  # parsed by its own module (see main)
            sub.add_parser(c.name, add_help=False, help=c.help)
            continue
        p = sub.add_parser(c.name, help=c.help, **(c.parser or {"allow_abbrev": False}))
        c.module.add_arguments(p)
        command.add_common(p, c.common)
        # a command described by its own module (record, job-time) names unknown arguments under its own usage
        p.set_defaults(run=c.module.run, unknown_to=p if c.parser else ap)
    return ap


def main(argv: Sequence[str] | None = None, prog: str = "python -m pods_repro.analysis") -> int:
    """Entry point; ``prog`` is the program name shown in usage/help (``pods`` passes "pods")."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["results"]:  # its own parser: the page and README block from the committed records
        from pods_repro.analysis import results

        return results.main(argv[1:], prog=f"{prog} results")
    parser = _parser(prog)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        args.unknown_to.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return args.run(args)
    except command.UsageError as err:
        parser.error(str(err))
    except AnalysisInputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
