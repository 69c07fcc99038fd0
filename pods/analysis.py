"""Tidy curves from run directories and from the authors' released logs; time-to-peak; bootstrap.

Everything the figures and the time-to-peak table show is computed in pods/, so it can be tested;
the scripts in `figures/` only select and plot. The work is split by job:
- pods.tidy: the tidy-table contract (columns, input checks, arm labels, sheet roles, table readers);
- pods.released: the authors' released logs -> tidy tables;
- pods.speedup: mean curves, time-to-peak, bootstrap, the speed-up table and its comparisons;
- pods.levels: the speed-up at fixed accuracy levels (budget-free where both arms reach a level);
- pods.ablations: what the sweeps and ablations show (Figs. 4-6), beside the released logs;
- this module: our run directories -> tidy tables (`load_runs`, `load_run_steps`), and the CLI.
It re-exports the public names of the other three, so `from pods import analysis as A; A.select`
(figures/, tests/) keeps working.

Run directories: each holds config.json (the trainer's resolved config: arm, setting, grid),
eval.jsonl (one row per evaluation and dataset) and metrics.jsonl (one row per optimizer step);
the curves are aligned on the evaluation grid (eval.every_s, or eval.every_steps in tests).
Training completion lengths and the shares of steps without a gradient (pods.gradsignal) from metrics.jsonl go
to curves.csv as dataset "train" (mean over the steps in each grid interval), beside the evaluation lengths.

Run:
    python -m pods.analysis released --logs ../shared/reference/pods-released-results --out-dir results/released
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
Exit codes: 0 ok, 2 missing or empty input (the message says how to produce it), 1 anything else.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from pods import registry
from pods.ablations import ablation_table, write_ablation_table
from pods.gradsignal import SIGNAL_METRICS, signal_table, write_signal_table
from pods.levels import DEFAULT_FRACTIONS, level_table, write_level_table
from pods.power import DEFAULT_SEEDS, seed_projection, write_seed_projection
from pods.released import load_released, load_released_steps, read_released
from pods.runlog import RunLogger
from pods.speedup import (
    Comparison,
    baseline_late_gain,
    baseline_plateau,
    baseline_plateau_share,
    baseline_trend,
    bootstrap_speedup,
    default_comparisons,
    main_comparison,
    mean_curve,
    paper_seconds_per_step,
    plateau_table,
    point_speedups,
    primary_dataset,
    printed_speedup,
    released_comparisons,
    seconds_per_step,
    speedup_table,
    time_to_peak,
    write_plateau_table,
    write_table,
)
from pods.tidy import (
    CONFIG_KEYS,
    CURVE_COLUMNS,
    DEFAULT_THRESHOLD,
    FRACTION_METRICS,
    METRICS,
    PAPER_SHEET,
    STEP_COLUMNS,
    AnalysisInputError,
    _fraction,
    _ident,
    _load_json,
    _number,
    _row,
    _step_ident,
    _tidy,
    arm_label,
    read_benchmark,
    read_curves,
    read_steps,
    select,
    setting_letter,
    sheet_roles,
    summarize_benchmark,
    time_unit,
)

# The public names of pods.tidy, pods.released and pods.speedup that callers (figures/, tests/,
# pods/cli.py) reach through this module, and this module's own.
__all__ = [
    "CONFIG_KEYS",
    "CURVE_COLUMNS",
    "DEFAULT_THRESHOLD",
    "FRACTION_METRICS",
    "METRICS",
    "PAPER_SHEET",
    "STEP_COLUMNS",
    "AnalysisInputError",
    "Comparison",
    "arm_label",
    "baseline_late_gain",
    "baseline_plateau",
    "baseline_plateau_share",
    "baseline_trend",
    "bootstrap_speedup",
    "default_comparisons",
    "load_released",
    "load_released_steps",
    "load_run_steps",
    "load_runs",
    "main",
    "main_comparison",
    "mean_curve",
    "paper_seconds_per_step",
    "plateau_table",
    "point_speedups",
    "primary_dataset",
    "printed_speedup",
    "read_benchmark",
    "read_curves",
    "read_released",
    "read_steps",
    "released_comparisons",
    "seconds_per_step",
    "select",
    "setting_letter",
    "sheet_roles",
    "speedup_table",
    "summarize_benchmark",
    "time_to_peak",
    "time_unit",
    "write_table",
]


# ----------------------------------------------------------------------------------------------
# our run directories


def _read_jsonl(path: Path) -> list[tuple[int, dict]]:
    """(line number, record) of a JSON-lines file; [] when absent. A partial last line (a run killed
    mid-write) is dropped; any other broken or non-object line is an error naming the file and line."""
    if not path.exists():
        return []
    lines = [(i, ln) for i, ln in enumerate(path.read_text().splitlines(), start=1) if ln.strip()]
    out = []
    for k, (i, line) in enumerate(lines):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as err:
            if k == len(lines) - 1:  # a run killed mid-write leaves a partial last line
                break
            raise AnalysisInputError(
                f"{path}: line {i} is not JSON ({err}); delete the run directory and rerun it"
            ) from err
        if not isinstance(rec, dict):
            raise AnalysisInputError(f"{path} line {i}: expected a JSON object, got {type(rec).__name__}")
        out.append((i, rec))
    return out


def _grid_index(time_s: float, grid_s: float) -> int:
    # The trainer evaluates at the first step after each grid time, so floor() names the grid
    # point; the 1% slack absorbs float round-off just below a grid time.
    return int(math.floor(time_s / grid_s + 0.01))


def _check_finished(run_dir: Path) -> None:
    """A run that says it finished (summary.json) must hold every step and evaluation it claims: a cut
    or duplicated metrics.jsonl / eval.jsonl is refused, naming the file (issue 13, item 5)."""
    if (run_dir / "summary.json").exists():
        try:
            RunLogger(run_dir, enabled=False).check_finished()
        except ValueError as e:  # RunDirError (a ValueError) names the damaged file
            raise AnalysisInputError(str(e)) from None


def _one_run(run_dir: Path, letters: Mapping[str, str] | None, roles: Mapping) -> tuple[list, dict]:
    cfg = _load_json(run_dir / "config.json", ": the trainer writes it first; rerun the run")
    if not isinstance(cfg, dict) or not isinstance(cfg.get("rollout"), dict):
        raise AnalysisInputError(
            f"{run_dir / 'config.json'}: expected the trainer's resolved config (a `rollout` section)"
        )
    roll, ev = cfg.get("rollout", {}), cfg.get("eval", {})
    n, m = int(roll["n"]), int(roll["m"])
    rule, normalize = roll.get("rule", "max_variance"), roll.get("normalize", "after")
    ga = int(cfg.get("optim", {}).get("grad_accum") or 1)
    name = str(cfg.get("setting") or run_dir.parts[-3])
    datasets = ev.get("datasets") or [None]
    letter = setting_letter(name, letters) or name
    # The run directory is {setting}/{run name}/seed~{seed}: its row of the sheet gives the role.
    role = roles.get((letter, run_dir.parent.name), "")
    ident = _ident(letter, name, n, m, rule, normalize, ga, int(cfg.get("seed", 0)), datasets[0], role)
    # Grid: wall-clock (eval.every_s, the paper's) or steps (eval.every_steps, deterministic tests;
    # seeds are then aligned by step and time_s stays the logged time).
    every_steps = ev.get("every_steps")
    grid_s = float(ev.get("every_s") or 1800)

    def grid_of(time_s: float, step: int, ceil: bool = False) -> tuple[int, float]:
        if every_steps:
            k = math.ceil(step / every_steps) if ceil else round(step / every_steps)
            return int(k), time_s
        k = math.ceil(time_s / grid_s - 0.01) if ceil else _grid_index(time_s, grid_s)
        return int(k), k * grid_s

    rows, seen = [], set()
    for line, rec in _read_jsonl(run_dir / "eval.jsonl"):
        where = f"{run_dir / 'eval.jsonl'} line {line}"
        missing = [k for k in ("time_s", "dataset") if k not in rec]
        if missing:
            raise AnalysisInputError(f"{where}: missing key(s) {missing}; eval.jsonl rows are written by the trainer")
        t, step = _number(rec["time_s"], where, "time_s"), int(_number(rec.get("step", 0), where, "step"))
        k, t_grid = grid_of(t, step)
        if (k, rec["dataset"]) in seen:  # e.g. a final evaluation off the grid: keep the first
            continue
        seen.add((k, rec["dataset"]))
        for metric in METRICS:
            if rec.get(metric) is not None:
                check = _fraction if metric in FRACTION_METRICS else _number
                value = check(rec[metric], where, metric)
                rows.append(_row(ident, k, t_grid, t, step, rec["dataset"], metric, value, run_dir))
    step_row = {**_step_ident(ident), "source": str(run_dir)}
    policy = (cfg.get("meta") or {}).get("policy")
    if isinstance(policy, dict) and policy.get("weights_sha256"):
        step_row["policy_sha256"] = str(policy["weights_sha256"])
    mrecs = _read_jsonl(run_dir / "metrics.jsonl")
    for line, rec in mrecs:
        for key in ("step", "time_s"):
            if key not in rec:
                raise AnalysisInputError(f"{run_dir / 'metrics.jsonl'} line {line}: missing key {key!r}")
            _number(rec[key], f"{run_dir / 'metrics.jsonl'} line {line}", key)
    mdf = pd.DataFrame([rec for _, rec in mrecs])
    if mdf.empty:
        return rows, step_row
    step_row.update(time_s=float(mdf["time_s"].iloc[-1]), steps=int(mdf["step"].iloc[-1]))
    for col, key in (("gen_time_s", "gen_s_per_step"), ("update_time_s", "update_s_per_step")):
        if col in mdf:
            step_row[key] = float(mdf[col].mean())
    if "peak_mem_mb" in mdf:
        step_row["peak_mem_mb"] = float(mdf["peak_mem_mb"].max())
    if "completion_len_mean" in mdf:
        step_row["completion_len_mean"] = float(mdf["completion_len_mean"].mean())
    # Training-time series over time: the mean over the steps of each grid interval ((k-1) grid, k grid],
    # written as dataset "train": the rollouts' lengths (Figs. 8-10) and the shares of steps whose rollouts
    # all got one reward (pods.gradsignal).
    mdf["grid"] = [grid_of(t, st, ceil=True)[0] for t, st in zip(mdf["time_s"], mdf["step"], strict=True)]
    for metric in ("completion_len_mean", *SIGNAL_METRICS):
        if metric not in mdf:
            continue
        for k, grp in mdf.dropna(subset=[metric]).groupby("grid"):
            t_last, step_last = float(grp["time_s"].iloc[-1]), int(grp["step"].iloc[-1])
            t_grid = grid_of(t_last, step_last, ceil=True)[1]
            value = float(grp[metric].mean())
            rows.append(_row(ident, k, t_grid, t_last, step_last, "train", metric, value, run_dir))
    _check_finished(run_dir)  # after the analysis's own reading, whose messages are more specific
    return rows, step_row


def _collect(
    root: str | Path | None,
    letters: Mapping[str, str] | None = None,
    sheet: str | Path | None = None,
    run_dirs: Sequence[str | Path] | None = None,
):
    """Curves and steps of every run directory under `root`, or of exactly `run_dirs` when given (the
    workflow passes the runs of its sheet, so a manual run under the same root is never merged in)."""
    roles = sheet_roles(sheet)
    how = (
        "train runs first (`snakemake` or `python -m pods train CONFIG`); each run directory "
        "needs config.json and eval.jsonl (docs/DESIGN.md)"
    )
    if run_dirs is not None:
        run_dirs = sorted(Path(d) for d in run_dirs)
        for d in run_dirs:
            if not (d / "config.json").is_file() or not (d / "eval.jsonl").is_file():
                raise AnalysisInputError(f"{d} is not a run directory (no config.json or eval.jsonl): {how}")
        # absolute, so that relative and absolute run directories can be given together (only messages use it)
        root = Path(os.path.commonpath([d.absolute() for d in run_dirs])) if run_dirs else Path(".")
    else:
        root = Path(root)
        if not root.is_dir():
            raise AnalysisInputError(f"runs folder {root} does not exist: {how}")
        run_dirs = sorted(p.parent for p in root.rglob("config.json") if (p.parent / "eval.jsonl").exists())
    if not run_dirs:
        raise AnalysisInputError(f"no run directories under {root}: {how}")
    rows, step_rows = [], []
    for d in run_dirs:
        r, s = _one_run(d, letters, roles)
        rows += r
        step_rows.append(s)
    _refuse_duplicate_seeds(step_rows)
    _warn_mixed_policies(step_rows)
    if not rows:
        raise AnalysisInputError(f"every eval.jsonl under {root} is empty: {how}")
    steps = pd.DataFrame(step_rows).reindex(columns=STEP_COLUMNS)
    steps["seconds_per_step"] = steps["time_s"] / steps["steps"]
    return _tidy(pd.DataFrame(rows).reindex(columns=CURVE_COLUMNS)), steps


def _refuse_duplicate_seeds(step_rows: list[dict]) -> None:
    """AnalysisInputError if two run directories are the same arm and seed: their curves would be merged."""
    seen: dict[tuple, str | None] = {}
    key_cols = ("setting", "run", "n", "m", "rule", "normalize", "grad_accum", "seed")
    for row in step_rows:
        run = Path(str(row.get("source"))).parent.name  # the arm's folder, {run name}/seed~{seed}
        key = tuple(run if k == "run" else row.get(k) for k in key_cols)
        if key in seen:
            raise AnalysisInputError(
                f"{seen[key]} and {row.get('source')} are the same arm and seed ({dict(zip(key_cols, key, strict=True))}); their "
                "curves would be averaged as one run. Fix: pass only one of them (--run-dirs), or move the other out"
            )
        seen[key] = row.get("source")


def _warn_mixed_policies(step_rows: list[dict]) -> None:
    """Warn (stderr) when one setting's runs started from different weights (``meta.policy.weights_sha256``,
    recorded for tiny models): its arms are then not one experiment. A tiny model built on another kind
    of CPU differs (issue 10), so run directories copied between machines can mix builds."""
    by_setting: dict[str, dict[str, list[str]]] = {}
    for row in step_rows:
        if row.get("policy_sha256"):
            by_setting.setdefault(str(row.get("setting")), {}).setdefault(row["policy_sha256"], []).append(
                str(row.get("source"))
            )
    for setting, builds in sorted(by_setting.items()):
        if len(builds) > 1:
            which = "; ".join(f"{sha[:12]}: {len(srcs)} run(s), e.g. {srcs[0]}" for sha, srcs in sorted(builds.items()))
            print(
                f"warning: the runs of setting {setting} start from {len(builds)} different policy weights ({which}). "
                "Their curves are compared as one experiment all the same. A tiny model's build depends on the CPU "
                "it ran on (docs/workflow.md): train every run of a setting from one model cache on one machine",
                file=sys.stderr,
            )


def load_runs(
    root: str | Path, letters: Mapping[str, str] | None = None, sheet: str | Path | None = None
) -> pd.DataFrame:
    """Tidy curves (CURVE_COLUMNS) from every run directory under `root`.

    The arm comes from the resolved config (see `arm_label`); the setting letter from
    `setting_letter(config.setting, letters)`; the role from the run `sheet` (the row whose run name
    is the run's directory name). Unfinished runs (no summary.json) are included.
    """
    return _collect(root, letters, sheet)[0]


def load_run_steps(
    root: str | Path, letters: Mapping[str, str] | None = None, sheet: str | Path | None = None
) -> pd.DataFrame:
    """One row per run (STEP_COLUMNS): s/step, generation/update split, mean training length."""
    return _collect(root, letters, sheet)[1]


# ----------------------------------------------------------------------------------------------
# CLI


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


def _n_boot_arg(text: str) -> int:
    """A whole number >= 1 (argparse type of --n-boot)."""
    return _whole_at_least_one(text, "a whole number", 2000)


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
    """`--curves`, read and cut at `--until-step` (the subcommands that take both)."""
    return _until(read_curves(args.curves), args.until_step, args.curves)


def _floats(text: str) -> list[float]:
    """A comma-separated list of numbers (argparse type of --levels and --fractions)."""
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of numbers, e.g. 0.8,0.84") from None
    if not out or not all(math.isfinite(x) for x in out):
        raise argparse.ArgumentTypeError(f"{text!r}: give at least one finite number, e.g. 0.8,0.84")
    return out


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
    p = sub.add_parser("collect", allow_abbrev=False, help="curves.csv and steps.csv from our run directories")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--runs", help="every run directory under this folder")
    which.add_argument("--run-dirs", nargs="+", metavar="DIR", help="exactly these run directories (the workflow's)")
    p.add_argument("--out-dir", required=True, help="where curves.csv and steps.csv are written")
    p.add_argument("--letters", help="NAME=LETTER,... paper letter of setting names not ending in _a.._f")
    p.add_argument("--sheet", help="run sheet: its `role` column marks each setting's baseline and PODS runs")
    p = sub.add_parser("time-to-peak", allow_abbrev=False, help="Table 3 with bootstrap CIs from a curves.csv")
    p.add_argument("--curves", required=True, help="a curves.csv written by collect or released")
    p.add_argument("--out-dir", required=True, help="where time_to_peak.* is written")
    p.add_argument("--metric", help="override the metric (default: the setting record's, pods.registry)")
    p.add_argument("--steps", help="steps.csv of the same runs: this machine's seconds per step, speed-up (ii)")
    p.add_argument(
        "--paper-steps",
        help="steps.csv of `released` (the authors' logs): paper-hardware seconds per step, speed-up (iii); "
        "settings without released logs use the cost model (pods/bench/cost_model.py)",
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
        "--levels", type=_floats, help="comma-separated levels in the metric's units, e.g. 0.8,0.84 (compare budgets)"
    )
    which.add_argument(
        "--fractions",
        type=_floats,
        default=DEFAULT_FRACTIONS,
        help="comma-separated fractions of the baseline's rise from start to peak "
        f"(default {','.join(map(str, DEFAULT_FRACTIONS))})",
    )
    p.add_argument("--setting", nargs="+", help="only these settings (letters)")
    p.add_argument("--metric", help="override the metric (default: the setting record's, pods.registry)")
    p = sub.add_parser(
        "seeds",
        allow_abbrev=False,
        help="how wide would (i)'s interval be with N seeds per arm? (trend + noise model, pods/power.py)",
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
    p.add_argument("--width", type=float, default=1.0, help="the interval width asked for (default 1.0)")
    p.add_argument("--sims", type=_n_boot_arg, default=2000, help="simulated experiments per N (default 2000)")
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
        help="the share of steps whose trained rollouts all got one reward (no gradient), per arm (pods/gradsignal.py)",
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
                "--n-boot", type=_n_boot_arg, default=2000, help="bootstrap resamples over seeds (default 2000)"
            )
            q.add_argument("--boot-seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    return ap


def main(argv: Sequence[str] | None = None, prog: str = "python -m pods.analysis") -> int:
    """Entry point; ``prog`` is the program name shown in usage/help (``pods`` passes "pods")."""
    args = _parser(prog).parse_args(argv)
    try:
        out = Path(args.out_dir)
        if args.cmd == "released":
            curves, steps = read_released(args.logs, args.sheet)
            comparisons = released_comparisons(args.sheet)
            # The authors' runs are their own "this machine" and paper hardware: (ii) = (iii).
            table = speedup_table(curves, comparisons, args.threshold, args.n_boot, args.boot_seed, steps, steps)
            written = [_write_csv(curves, out / "curves.csv"), _write_csv(steps, out / "steps.csv")]
            written += write_table(table, out / "time_to_peak")
        elif args.cmd == "collect":
            curves, steps = _collect(args.runs, _parse_letters(args.letters), args.sheet, args.run_dirs)
            written = [_write_csv(curves, out / "curves.csv"), _write_csv(steps, out / "steps.csv")]
            table = None
        elif args.cmd == "levels":
            levels = level_table(
                _read_until(args), args.levels, args.fractions, args.metric, args.setting,
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
            ablations = ablation_table(
                _read_until(args) if args.curves else None,
                read_curves(args.released) if args.released else None,
                args.setting, args.window, args.metric, args.n_boot, args.boot_seed,
            )  # fmt: skip
            written = write_ablation_table(ablations, out / "ablations")
            print((out / "ablations.md").read_text().split("\n\n")[0])
            table = None
        elif args.cmd == "seeds":
            projection = seed_projection(
                _read_until(args), args.setting, args.seeds, args.threshold, args.sims, args.boot_seed,
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
            table = speedup_table(
                curves,
                default_comparisons(curves, args.metric),
                args.threshold,
                args.n_boot,
                args.boot_seed,
                steps,
                paper_steps,
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
