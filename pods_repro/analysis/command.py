"""What the analysis subcommands share: option types, the common options, and the checks run before any work.

Each subcommand's module (released, collect, speedups, plateau, levels, power, ablations, gradsignal,
jobtime, record) exposes ``add_arguments(parser)`` and ``run(args) -> int``; pods_repro.analysis.cli lists them
and adds the common options here (`add_common`). A run raises AnalysisInputError for bad input (exit 2,
one line) or UsageError for options that parse but do not fit together (the usage and exit 2).
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import pandas as pd

from pods_repro.analysis.tidy import DEFAULT_THRESHOLD, AnalysisInputError, check_grids, read_curves

T = TypeVar("T")

# The most bootstrap resamples (and `seeds --sims`) one run may ask for: each resample holds a mean curve per arm,
# so memory grows as resamples x seeds x evaluations (a 100000 x 8 x 80 array is 0.5 GB).
MAX_RESAMPLES = 100_000


class UsageError(Exception):
    """Options that parse one by one but not together: the CLI prints its usage with this message, exit 2."""


# ----------------------------------------------------------------------------------------------
# option types


def option_type(
    parse: Callable[[str], T], ok: Callable[[T], bool], message: str, unreadable: str | None = None
) -> Callable[[str], T]:
    """An argparse type: ``parse(text)``, refused unless ``ok(value)``. `message` (and `unreadable`, for a text
    `parse` cannot read; default `message`) are str.format templates of ``text``: "{text!r} is not ..."."""

    def convert(text: str) -> T:
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError((unreadable or message).format(text=text)) from None
        if not ok(value):
            raise argparse.ArgumentTypeError(message.format(text=text))
        return value

    return convert


def _number_list(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def _resamples(low: int, why: str) -> Callable[[str], int]:
    return option_type(
        int, lambda x: low <= x <= MAX_RESAMPLES,
        "{text!r} is not a whole number in " + f"{low}..{MAX_RESAMPLES} ({why}), e.g. 4000",
    )  # fmt: skip


numbers = option_type(
    _number_list,
    lambda xs: bool(xs) and all(math.isfinite(x) for x in xs),
    "{text!r}: give at least one finite number, e.g. 0.8,0.84",
    "{text!r} is not a comma-separated list of numbers, e.g. 0.8,0.84",
)
threshold = option_type(float, lambda x: 0 < x <= 1, "{text!r} is not a fraction in (0, 1], e.g. 0.99 (the paper's)")
until_step = option_type(int, lambda x: x >= 1, "{text!r} is not a whole number of optimizer steps >= 1, e.g. 600")
boot_seed = option_type(int, lambda x: x >= 0, "{text!r} is not a whole number >= 0, e.g. 0")
n_boot = _resamples(100, "the intervals read the resamples' 0.1-2% tails; memory grows with it")
sims = _resamples(1, "memory grows with it")


# ----------------------------------------------------------------------------------------------
# the common options

COMMON = ("threshold", "until_step", "boot")  # the groups of common options a subcommand may take


def add_common(p: argparse.ArgumentParser, groups: Sequence[str]) -> None:
    """The common options of `groups` (of COMMON), after the subcommand's own."""
    if "threshold" in groups:
        p.add_argument(
            "--threshold",
            type=threshold,
            default=DEFAULT_THRESHOLD,
            help=f"time to peak = first time a curve reaches this fraction of the baseline's peak "
            f"(default {DEFAULT_THRESHOLD})",
        )
    if "until_step" in groups:
        p.add_argument(
            "--until-step",
            type=until_step,
            help="read our runs' curves only up to this optimizer step: what the same runs show on that "
            "budget (step budgets, constant learning rate; ablations: --curves only)",
        )
    if "boot" in groups:
        p.add_argument(
            "--n-boot",
            type=n_boot,
            default=4000,
            help=f"bootstrap resamples over seeds, at most {MAX_RESAMPLES} (default 4000)",
        )
        p.add_argument(
            "--boot-seed", type=boot_seed, default=0, help="seed of the bootstrap, a whole number >= 0 (default 0)"
        )


METRIC_HELP = "override the metric (default: the setting record's, pods_repro.registry)"
CURVES_HELP = "a curves.csv written by collect or released"


# ----------------------------------------------------------------------------------------------
# before any work: the output folder, the settings asked for, the curves up to --until-step


def check_out_dir(path: str) -> Path:
    """`path` as a Path; AnalysisInputError unless it is a folder or can be made one (before any computation)."""
    out = Path(path)
    existing = next((p for p in (out, *out.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise AnalysisInputError(
            f"--out-dir {out}: {existing} is a file, not a folder; pass a folder (it is created if missing)"
        )
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise AnalysisInputError(f"--out-dir {out}: {existing} is not writable; pass a folder you can write to")
    return out


def check_settings(asked: Sequence[str] | None, *tables: pd.DataFrame | None, source: str) -> None:
    """AnalysisInputError naming the settings present if `--setting` names one that no table holds."""
    if not asked:
        return
    present = sorted({str(s) for t in tables if t is not None for s in t["setting"].unique()})
    unknown = [s for s in asked if s not in present]
    if unknown:
        raise AnalysisInputError(
            f"--setting {' '.join(unknown)}: not in {source} (settings present: {', '.join(present)}); "
            "pass one of those"
        )


def until(curves: pd.DataFrame, until_step: int | None, source: str) -> pd.DataFrame:
    """The curves up to and including optimizer step `until_step` (all of them when None): what the same runs
    would have shown on that step budget, as step-budget runs train the same up to any step (constant
    learning rate; with a schedule that depends on the budget they would not). Curves without a step
    column's values, or without an evaluation after t = 0 within the cut, are an input error."""
    if until_step is None:
        return curves
    if curves["step"].isna().all():
        raise AnalysisInputError(
            f"{source} has no optimizer steps: --until-step cuts curves by step (`collect` writes them)"
        )
    cut = curves[curves["step"] <= until_step]
    if not (cut["step"] > 0).any():
        raise AnalysisInputError(
            f"{source} has no evaluation after step 0 up to step {until_step}: pass a larger --until-step "
            f"(its last evaluation is at step {int(curves['step'].max())})"
        )
    return cut


def read_until(args: argparse.Namespace) -> pd.DataFrame:
    """`--curves`, read and cut at `--until-step`, its seeds checked to share each arm's evaluation grid."""
    curves = until(read_curves(args.curves), args.until_step, args.curves)
    check_grids(curves, args.curves)
    return curves


def write_csv(df: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False)
    return path


def report(out: Path, name: str, written: Sequence[Path]) -> int:
    """Print the first paragraph of `out`/`name`.md and the files written; exit code 0."""
    print((out / f"{name}.md").read_text().split("\n\n")[0])
    return wrote(written)


def wrote(written: Sequence[Path]) -> int:
    print("wrote " + ", ".join(str(p) for p in written))
    return 0
