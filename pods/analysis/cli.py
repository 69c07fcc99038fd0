"""Tidy curves from run directories and from the authors' released logs; time-to-peak; bootstrap.

The command line of the analysis (``python -m pods.analysis``, ``pods analysis``): each subcommand reads
run directories (pods.analysis.collect), the authors' released logs (pods.analysis.released) or a
curves.csv (pods.analysis.tidy) and writes the tables of pods.analysis.speedups, plateau, levels, power,
ablations and gradsignal.

Run:
    python -m pods.analysis released --logs DIR --out-dir results/released
    python -m pods.analysis collect --runs results/runs --out-dir results/tables --sheet config/runs_tiny.tsv
    python -m pods.analysis time-to-peak --curves results/tables/curves.csv --steps results/tables/steps.csv \
        --paper-steps results/released/steps.csv --out-dir results/tables
    python -m pods.analysis plateau --curves results/tables/curves.csv --out-dir results/tables
    python -m pods.analysis plateau --run-dirs results/warm_a4000/runs/a/*/seed~* --out-dir results/warm_a4000/tables
    python -m pods.analysis levels --curves results/tables/curves.csv --out-dir results/tables
    python -m pods.analysis levels --curves results/warm_a2000/tables/curves.csv --levels 0.8,0.84,0.86 --out-dir D
    python -m pods.analysis seeds --curves results/tables/curves.csv --setting a e --out-dir results/tables
    python -m pods.analysis ablations --curves results/tables/curves.csv --released results/released/curves.csv \
        --out-dir results/tables
    python -m pods.analysis signal --curves results/tables/curves.csv --out-dir results/tables
    python -m pods.analysis time-to-peak --curves results/a1200/tables/curves.csv --until-step 600 --out-dir D
(--until-step N, on time-to-peak, plateau, levels, seeds, ablations and signal: the same runs read as if their step
budget had ended at N.)
Exit codes: 0 ok, 2 missing, empty or unusable input or option (one line that names it and says how to fix it),
1 anything else.

What is refused rather than averaged: a curves table that holds one evaluation twice (a run collected twice),
and the seeds of one arm evaluated at different grid points, whether one was trained longer (pass --until-step N
to read every seed up to a common budget) or one lacks an evaluation the others have (restore it, or leave that
seed out and collect again: no seed is dropped in silence), or, on a step grid, one was evaluated at other
steps than the others (rerun with another eval.every_steps). `released` checks the logs folder against the
package's SHA-256 manifest first, as the workflow does (--no-verify skips that, with a warning).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from pods import registry
from pods.analysis import released_logs
from pods.analysis.ablations import ablation_table, write_ablation_table
from pods.analysis.collect import _collect
from pods.analysis.gradsignal import signal_table, write_signal_table
from pods.analysis.levels import DEFAULT_FRACTIONS, level_table, write_level_table
from pods.analysis.plateau import plateau_table, write_plateau_table
from pods.analysis.power import DEFAULT_SEEDS, seed_projection, write_seed_projection
from pods.analysis.released import read_released
from pods.analysis.speedups import default_comparisons, released_comparisons, speedup_table, write_table
from pods.analysis.tidy import (
    DEFAULT_THRESHOLD,
    FRACTION_METRICS,
    PAPER_SHEET,
    AnalysisInputError,
    check_grids,
    read_curves,
    read_steps,
)

# The most bootstrap resamples (and `seeds --sims`) one run may ask for: each resample holds a mean curve per arm,
# so memory grows as resamples x seeds x evaluations (a 100000 x 8 x 80 array is 0.5 GB).
MAX_RESAMPLES = 100_000


def _parse_letters(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    out = {}
    for item in text.split(","):
        name, sep, letter = item.partition("=")
        if not sep or letter not in registry.SETTINGS:
            raise AnalysisInputError(
                f"--letters item {item!r}: write NAME=LETTER with LETTER one of {', '.join(registry.SETTINGS)}, "
                "e.g. --letters tiny_gsm8k=a,tiny_llama=b"
            )
        out[name.strip()] = letter
    return out


def _threshold_arg(text: str) -> float:
    """A number in (0, 1] (argparse type of --threshold)."""
    try:
        x = float(text)
    except ValueError:
        x = math.nan
    if not 0 < x <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction in (0, 1], e.g. 0.99 (the paper's)")
    return x


def _whole_at_least_one(text: str, what: str, example: int) -> int:
    """`text` as a whole number >= 1, else argparse's error naming `what` it should be and an example."""
    try:
        x = int(text)
    except ValueError:
        x = 0
    if x < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what} >= 1, e.g. {example}")
    return x


def _whole_in(text: str, low: int, why: str) -> int:
    try:
        x = int(text)
    except ValueError:
        x = low - 1
    if not low <= x <= MAX_RESAMPLES:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number in {low}..{MAX_RESAMPLES} ({why}), e.g. 4000")
    return x


def _n_boot_arg(text: str) -> int:
    """A whole number in 100..MAX_RESAMPLES (argparse type of --n-boot): the expanded intervals read tails of
    0.1-2% of the resamples."""
    return _whole_in(text, 100, "the intervals read the resamples' 0.1-2% tails; memory grows with it")


def _sims_arg(text: str) -> int:
    """A whole number in 1..MAX_RESAMPLES (argparse type of `seeds --sims`)."""
    return _whole_in(text, 1, "memory grows with it")


def _boot_seed_arg(text: str) -> int:
    """A whole number >= 0 (argparse type of --boot-seed: numpy's generators take no negative seed)."""
    try:
        x = int(text)
    except ValueError:
        x = -1
    if x < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0, e.g. 0")
    return x


def _until_step_arg(text: str) -> int:
    """A whole number of optimizer steps >= 1 (argparse type of --until-step)."""
    return _whole_at_least_one(text, "a whole number of optimizer steps", 600)


def _until(curves: pd.DataFrame, until_step: int | None, source: str) -> pd.DataFrame:
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


def _read_until(args: argparse.Namespace) -> pd.DataFrame:
    """`--curves`, read and cut at `--until-step` (the subcommands that take both), its seeds checked to share
    each arm's evaluation grid after the cut (`check_grids`)."""
    curves = _until(read_curves(args.curves), args.until_step, args.curves)
    check_grids(curves, args.curves)
    return curves


def _verify_released(logs: str, manifest: str) -> None:
    """AnalysisInputError unless `logs` holds exactly the released files (pods.analysis.released_logs.verify,
    as the workflow checks it before this command reads it)."""
    try:
        released_logs.verify(logs, manifest)
    except released_logs.ReleasedLogsError as err:
        text = str(err)
        # a problem of the folder (not of the manifest): its fix is another --logs, not the workflow's config
        if text.startswith(("released logs folder", f"{Path(logs)} is not the authors'")):
            text = re.split(r"\. Fix: |: use --config", text)[0] + (
                f". Fix: pass --logs an unmodified copy of the authors' results/ folder ({released_logs.REPOSITORY} "
                f"at commit {released_logs.COMMIT[:7]}; `python -m pods.analysis.released_logs download --dest DIR` "
                "fetches one), or --no-verify to read this folder anyway"
            )
        raise AnalysisInputError(text) from None


def _check_out_dir(path: str) -> None:
    """AnalysisInputError unless `path` is a folder or can be made one (before any computation)."""
    out = Path(path)
    existing = next((p for p in (out, *out.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise AnalysisInputError(
            f"--out-dir {out}: {existing} is a file, not a folder; pass a folder (it is created if missing)"
        )
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise AnalysisInputError(f"--out-dir {out}: {existing} is not writable; pass a folder you can write to")


def _check_settings(asked: Sequence[str] | None, *tables: pd.DataFrame | None, source: str) -> None:
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


def _floats(text: str) -> list[float]:
    """A comma-separated list of numbers (argparse type of --levels and --fractions)."""
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of numbers, e.g. 0.8,0.84") from None
    if not out or not all(math.isfinite(x) for x in out):
        raise argparse.ArgumentTypeError(f"{text!r}: give at least one finite number, e.g. 0.8,0.84")
    return out


def _levels_arg(text: str) -> list[float]:
    """Levels >= 0 (argparse type of `levels --levels`; accuracy levels are also <= 1, checked with --metric)."""
    out = _floats(text)
    if min(out) < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: levels are numbers >= 0 in the metric's units, e.g. 0.8,0.84")
    return out


def _fractions_arg(text: str) -> list[float]:
    """Fractions in (0, 1] (argparse type of `levels --fractions`)."""
    out = _floats(text)
    if not all(0 < x <= 1 for x in out):
        raise argparse.ArgumentTypeError(
            f"{text!r}: fractions of the baseline's rise lie in (0, 1] (1 = its peak), e.g. 0.5,0.9,1"
        )
    return out


def _width_arg(text: str) -> float:
    """A finite number > 0 (argparse type of `seeds --width`)."""
    try:
        x = float(text)
    except ValueError:
        x = math.nan
    if not (math.isfinite(x) and x > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite width > 0 of the speed-up interval, e.g. 1.0")
    return x


def _window_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number: pass a share in (0, 1], e.g. 0.5") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text}: the window is a share of the span, in (0, 1], e.g. 0.5")
    return value


def _seed_counts(text: str) -> list[int]:
    """A comma-separated list of whole numbers of seeds >= 2 (argparse type of `seeds --seeds`)."""
    counts = _floats(text)
    if not all(c == int(c) and c >= 2 for c in counts):
        raise argparse.ArgumentTypeError(f"{text!r}: seeds per arm are whole numbers >= 2, e.g. 8,16,32")
    return [int(c) for c in counts]


def _write_csv(df: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False)
    return path


def _parser(prog: str) -> argparse.ArgumentParser:
    """The command line of :func:`main`: subcommands released, collect, time-to-peak, plateau, levels, seeds,
    ablations, signal."""
    ap = argparse.ArgumentParser(allow_abbrev=False, prog=prog, description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("released", allow_abbrev=False, help="re-analyse the authors' released logs (Table 3 a,b,c,e,f)")
    p.add_argument("--logs", required=True, help="folder with the authors' results/ files")
    p.add_argument("--out-dir", required=True, help="where curves.csv, steps.csv and time_to_peak.* are written")
    p.add_argument("--sheet", default=str(PAPER_SHEET), help="run sheet whose `role` rows are the comparisons")
    p.add_argument(
        "--manifest",
        default=str(released_logs.MANIFEST),
        help="SHA-256 manifest the folder is checked against before it is read (default: the package's)",
    )
    p.add_argument(
        "--no-verify",
        action="store_true",
        help="read the folder without checking it against the manifest (the tables are then not the release's)",
    )
    p = sub.add_parser("collect", allow_abbrev=False, help="curves.csv and steps.csv from our run directories")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--runs", help="every run directory under this folder")
    which.add_argument("--run-dirs", nargs="+", metavar="DIR", help="exactly these run directories (the workflow's)")
    p.add_argument("--out-dir", required=True, help="where curves.csv and steps.csv are written")
    p.add_argument("--letters", help="NAME=LETTER,... paper letter of setting names not ending in _a.._f")
    p.add_argument("--sheet", help="run sheet: its `role` column marks each setting's baseline and PODS runs")
    sub.add_parser("results", add_help=False, help="docs/results.md and the README's headline table from the records")
    sub.add_parser("record", add_help=False, help="add a sitting's finished runs to the default job's record")
    sub.add_parser("job-time", add_help=False, help="a finished job's per-job seconds, replayed on more cores")
    sub.add_parser("arena", add_help=False, help="the selection arena's tables and page (docs/arena.md)")
    p = sub.add_parser("time-to-peak", allow_abbrev=False, help="Table 3 with bootstrap CIs from a curves.csv")
    p.add_argument("--curves", required=True, help="a curves.csv written by collect or released")
    p.add_argument("--out-dir", required=True, help="where time_to_peak.* is written")
    p.add_argument("--metric", help="override the metric (default: the setting record's, pods.registry)")
    p.add_argument("--steps", help="steps.csv of the same runs: this machine's seconds per step, speed-up (ii)")
    p.add_argument(
        "--paper-steps",
        help="steps.csv of `released` (the authors' logs): paper-hardware seconds per step, speed-up (iii); "
        "settings without released logs use the cost model (pods/analysis/cost_model.py)",
    )
    p.add_argument(
        "--paper-curves",
        help="curves.csv of `released`: the paper hardware's training time at each step count, for speed-up "
        "(iii) (else --paper-steps' mean seconds per step)",
    )
    p = sub.add_parser(
        "plateau", allow_abbrev=False, help="has each arm's mean curve stopped rising? (peak position, trend)"
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--curves", help="a curves.csv written by collect or released")
    which.add_argument("--run-dirs", nargs="+", metavar="DIR", help="run directories (one arm alone will do)")
    p.add_argument("--out-dir", required=True, help="where plateau.csv and plateau.md are written")
    p.add_argument("--metric", help="override the metric (default: the setting record's, pods.registry)")
    p.add_argument("--sheet", help="with --run-dirs: run sheet whose `role` column names the arms' roles")
    p.add_argument("--letters", help="with --run-dirs: NAME=LETTER,... as for collect")
    p = sub.add_parser(
        "levels", allow_abbrev=False, help="steps each arm needs to first reach fixed accuracy levels, and their ratio"
    )
    p.add_argument("--curves", required=True, help="a curves.csv written by collect or released")
    p.add_argument("--out-dir", required=True, help="where levels.csv and levels.md are written")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--levels",
        type=_levels_arg,
        help="comma-separated levels in the metric's units, e.g. 0.8,0.84 (compare budgets); accuracies in [0, 1]",
    )
    which.add_argument(
        "--fractions",
        type=_fractions_arg,
        default=DEFAULT_FRACTIONS,
        help="comma-separated fractions in (0, 1] of the baseline's rise from start to peak "
        f"(default {','.join(map(str, DEFAULT_FRACTIONS))})",
    )
    p.add_argument("--setting", nargs="+", help="only these settings (letters)")
    p.add_argument("--metric", help="override the metric (default: the setting record's, pods.registry)")
    p = sub.add_parser(
        "seeds",
        allow_abbrev=False,
        help="how wide would (i)'s interval be with N seeds per arm? (trend + noise model, pods/analysis/power.py)",
    )
    p.add_argument("--curves", required=True, help="a curves.csv written by collect")
    p.add_argument("--out-dir", required=True, help="where seeds.csv and seeds.md are written")
    p.add_argument("--setting", nargs="+", help="only these settings (letters)")
    p.add_argument(
        "--seeds",
        type=_seed_counts,
        default=list(DEFAULT_SEEDS),
        help=f"comma-separated seeds per arm to simulate (default {','.join(map(str, DEFAULT_SEEDS))})",
    )
    p.add_argument("--width", type=_width_arg, default=1.0, help="the interval width asked for (default 1.0)")
    p.add_argument(
        "--sims",
        type=_sims_arg,
        default=200,
        help=f"simulated experiments per N, each its own bootstrap, at most {MAX_RESAMPLES} (default 200)",
    )
    p.add_argument("--metric", help="override the metric (default: the setting record's, pods.registry)")
    p = sub.add_parser(
        "ablations",
        allow_abbrev=False,
        help="what the n/m sweeps and rule/normalisation ablations show (Figs. 4-6), beside the released logs",
    )
    p.add_argument("--curves", help="a curves.csv written by collect (our runs, read per optimizer step)")
    p.add_argument("--released", help="a curves.csv written by released (the authors' logs, per hour and per step)")
    p.add_argument("--out-dir", required=True, help="where ablations.csv and ablations.md are written")
    p.add_argument("--setting", nargs="+", help="only these settings (letters)")
    p.add_argument(
        "--window", type=_window_arg, default=0.5,
        help="average each seed over this last share of the span every arm reaches (default 0.5)",
    )  # fmt: skip
    p.add_argument("--metric", help="override the metric (default: the setting record's, pods.registry)")
    p = sub.add_parser(
        "signal",
        allow_abbrev=False,
        help="the share of steps whose trained rollouts all got one reward (no gradient), per arm (pods/analysis/gradsignal.py)",
    )
    p.add_argument(
        "--curves", required=True, help="a curves.csv written by collect (our runs; the released logs have none)"
    )
    p.add_argument("--out-dir", required=True, help="where signal.csv and signal.md are written")
    for q in sub.choices.values():
        if q.prog.endswith(("released", "time-to-peak", "seeds")):
            q.add_argument(
                "--threshold",
                type=_threshold_arg,
                default=DEFAULT_THRESHOLD,
                help=f"time to peak = first time a curve reaches this fraction of the baseline's peak "
                f"(default {DEFAULT_THRESHOLD})",
            )
        if q.prog.endswith(("time-to-peak", "plateau", "levels", "seeds", "ablations", "signal")):
            q.add_argument(
                "--until-step",
                type=_until_step_arg,
                help="read our runs' curves only up to this optimizer step: what the same runs show on that "
                "budget (step budgets, constant learning rate; ablations: --curves only)",
            )
        if q.prog.endswith(("released", "time-to-peak", "plateau", "levels", "seeds", "ablations", "signal")):
            q.add_argument(
                "--n-boot",
                type=_n_boot_arg,
                default=4000,
                help=f"bootstrap resamples over seeds, at most {MAX_RESAMPLES} (default 4000)",
            )
            q.add_argument(
                "--boot-seed",
                type=_boot_seed_arg,
                default=0,
                help="seed of the bootstrap, a whole number >= 0 (default 0)",
            )
    return ap


def main(argv: Sequence[str] | None = None, prog: str = "python -m pods.analysis") -> int:
    """Entry point; ``prog`` is the program name shown in usage/help (``pods`` passes "pods")."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["results"]:  # its own parser: the page and README block from the committed records
        from pods.analysis import results

        return results.main(argv[1:], prog=f"{prog} results")
    if argv[:1] == ["record"]:  # its own parser: add a sitting's runs to the default job's record
        from pods.analysis import record

        return record.main(argv[1:], prog=f"{prog} record")
    if argv[:1] == ["arena"]:  # its own parser: the selection arena (pods.analysis.arena)
        from pods.analysis import arena

        return arena.main(argv[1:], prog=f"{prog} arena")
    if argv[:1] == ["job-time"]:
        from pods.analysis import jobtime

        return jobtime.main(argv[1:], prog=f"{prog} job-time")
    parser = _parser(prog)
    args = parser.parse_args(argv)
    if getattr(args, "levels", None) and (args.metric is None or args.metric in FRACTION_METRICS):
        above = [x for x in args.levels if x > 1]
        if above:
            parser.error(
                f"--levels {above[0]:g}: accuracy levels are fractions in [0, 1], e.g. 0.8,0.84 "
                "(a level in tokens needs --metric completion_len_mean)"
            )
    try:
        _check_out_dir(args.out_dir)
        out = Path(args.out_dir)
        if args.cmd == "released":
            if args.no_verify:
                print(
                    f"warning: --no-verify: {args.logs} is read without checking it against {args.manifest}; the "
                    "tables are not the release's unless it is an unmodified copy of the authors' results/ folder",
                    file=sys.stderr,
                )
            else:
                _verify_released(args.logs, args.manifest)
            curves, steps = read_released(args.logs, args.sheet)
            check_grids(curves, args.logs)
            comparisons = released_comparisons(args.sheet)
            # The authors' runs are their own "this machine" and paper hardware: (ii) = (iii).
            table = speedup_table(
                curves, comparisons, args.threshold, args.n_boot, args.boot_seed, steps, steps, curves
            )
            written = [_write_csv(curves, out / "curves.csv"), _write_csv(steps, out / "steps.csv")]
            written += write_table(table, out / "time_to_peak")
        elif args.cmd == "collect":
            curves, steps = _collect(args.runs, _parse_letters(args.letters), args.sheet, args.run_dirs)
            written = [_write_csv(curves, out / "curves.csv"), _write_csv(steps, out / "steps.csv")]
            table = None
        elif args.cmd == "levels":
            curves = _read_until(args)
            _check_settings(args.setting, curves, source=args.curves)
            levels = level_table(
                curves, args.levels, args.fractions, args.metric, args.setting,
                args.n_boot, args.boot_seed,
            )  # fmt: skip
            written = write_level_table(levels, out / "levels")
            print((out / "levels.md").read_text().split("\n\n")[0])
            table = None
        elif args.cmd == "signal":
            written = write_signal_table(signal_table(_read_until(args), args.n_boot, args.boot_seed), out / "signal")
            print((out / "signal.md").read_text().split("\n\n")[0])
            table = None
        elif args.cmd == "ablations":
            if not (args.curves or args.released):
                raise AnalysisInputError("pass --curves (our runs), --released (the authors' logs) or both")
            ours = _read_until(args) if args.curves else None
            theirs = read_curves(args.released) if args.released else None
            if theirs is not None:
                check_grids(theirs, args.released)
            _check_settings(args.setting, ours, theirs, source=" and ".join(filter(None, (args.curves, args.released))))
            ablations = ablation_table(
                ours,
                theirs,
                args.setting, args.window, args.metric, args.n_boot, args.boot_seed,
            )  # fmt: skip
            written = write_ablation_table(ablations, out / "ablations")
            print((out / "ablations.md").read_text().split("\n\n")[0])
            table = None
        elif args.cmd == "seeds":
            curves = _read_until(args)
            _check_settings(args.setting, curves, source=args.curves)
            projection = seed_projection(
                curves, args.setting, args.seeds, args.threshold, args.sims, args.boot_seed,
                args.metric, args.n_boot,
            )  # fmt: skip
            if projection.empty and args.setting:
                raise AnalysisInputError(
                    f"{args.curves} has no setting with both a baseline and a PODS arm among {', '.join(args.setting)}"
                )
            written = write_seed_projection(projection, out / "seeds", args.width)
            print((out / "seeds.md").read_text().split("\n\n")[0])
            table = None
        elif args.cmd == "plateau":
            if args.curves:
                curves = read_curves(args.curves)
            else:
                curves = _collect(None, _parse_letters(args.letters), args.sheet, args.run_dirs)[0]
            curves = _until(curves, args.until_step, args.curves or "the run directories")
            check_grids(curves, args.curves or "the run directories")
            plateau = plateau_table(curves, args.metric, args.n_boot, args.boot_seed)
            if plateau.empty:
                raise AnalysisInputError("no arm has an evaluation after t = 0: nothing to take a peak of")
            written = write_plateau_table(plateau, out / "plateau")
            print((out / "plateau.md").read_text().split("\n\n")[0])
            table = None
        else:
            curves = _read_until(args)
            steps = read_steps(args.steps)
            if args.steps and steps is None:
                raise AnalysisInputError(f"steps table {args.steps} is missing or empty: `collect` writes it")
            paper_steps = read_steps(args.paper_steps)
            if args.paper_steps and paper_steps is None:
                raise AnalysisInputError(
                    f"{args.paper_steps} is missing or empty: `python -m pods.analysis released` writes it"
                )
            paper_curves = read_curves(args.paper_curves) if args.paper_curves else None
            table = speedup_table(
                curves,
                default_comparisons(curves, args.metric),
                args.threshold,
                args.n_boot,
                args.boot_seed,
                steps,
                paper_steps,
                paper_curves,
            )
            if table.empty:
                raise AnalysisInputError(
                    f"{args.curves} has no setting with both a baseline and a PODS run (the run sheet's "
                    "`role` column, passed to `collect --sheet`): train both arms first"
                )
            written = write_table(table, out / "time_to_peak")
    except AnalysisInputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if table is not None:
        cols = ["setting", "metric", "t_baseline_s", "t_pods_s", "speedup", "speedup_exact", "ci_low", "ci_high"]
        cols += ["speedup_steps", "speedup_wall", "speedup_paper_hw", "p_pods_never", "paper_speedup"]
        print(table[cols].to_string(index=False))
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
