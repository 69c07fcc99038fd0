"""The tidy-table contract shared by every reader and by the statistics: columns, checks, roles.

This module owns what a curves / steps table is (pods_repro.analysis.released writes them from the authors' logs,
pods_repro.analysis.collect from our run directories; pods_repro.analysis.speedups and the figures read them), the checks every
input value passes, the arm label and setting letter of a run, the roles of the run sheet, and the
readers of the tables written to disk (`read_curves`, `read_steps`, the Fig. 1 benchmark).

Tidy curves (`CURVE_COLUMNS`, one row per run x evaluation x dataset x metric):
    setting       paper letter a-f when known, else the run's setting name
    setting_name  the name the runs carry (`config.json: setting`, or the authors' file prefix)
    arm           grpo | grpo_ga | pods | pods_<rule> | pods[_<rule>]_before  (see `arm_label`)
    role          baseline | pods | empty: the run sheet's `role` of the run's row (main comparison)
    n, m, rule, normalize, grad_accum, seed
    grid          index on the evaluation grid (0 = the t = 0 evaluation / base model)
    time_s        grid time in training seconds (evaluation excluded); time_s_raw: as logged
    step          optimizer steps reached at that evaluation
    dataset, primary_dataset, metric, value, source
Metrics are named as in our eval.jsonl: accuracy, format_accuracy, both_accuracy (fractions) and
completion_len_mean (tokens). Steps tables (`STEP_COLUMNS`) have one row per run: training seconds
and optimizer steps at its end, seconds per step and its generation/update split, memory.

Inputs are checked, and every error (`AnalysisInputError`) names the file and the line, row or key:
accuracies and shares outside [0, 1] (a run logged in percent), empty, non-finite or negative times,
steps and values, broken or wrongly shaped JSON / CSV, missing keys or columns. Nothing is averaged
that should not be: a curves or steps table that holds one evaluation (or run) twice is refused
(`refuse_duplicates`), and so are the seeds of one arm evaluated at different grid points
(`check_grids`: a seed trained longer, or one missing an evaluation, would shift the mean curve where
only some seeds have a point; on a step grid, eval.every_steps, a seed evaluated at other steps, as when
rerun with another eval.every_steps, would be averaged with the others by grid index; on a wall-clock grid,
eval.every_s and the released logs, where `time_s` is the grid time shared by the seeds, their steps may differ). `read_curves` returns its rows in one order whatever the file's order,
so the tables computed from it do not depend on it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from pods_repro import registry
from pods_repro.textutil import NotTextError, decode_text

# fmt: off
CURVE_COLUMNS = ["setting", "setting_name", "arm", "role", "n", "m", "rule", "normalize", "grad_accum", "seed", "grid",
                 "time_s", "time_s_raw", "step", "dataset", "primary_dataset", "metric", "value", "source"]
STEP_COLUMNS = ["setting", "setting_name", "arm", "role", "n", "m", "rule", "normalize", "grad_accum", "seed", "time_s",
                "steps", "seconds_per_step", "gen_s_per_step", "update_s_per_step", "completion_len_mean",
                "peak_mem_mb", "source"]
# fmt: on
# Columns that identify one configuration (an "arm" at given n, m, ...) across seeds.
CONFIG_KEYS = ["setting", "setting_name", "arm", "n", "m", "rule", "normalize", "grad_accum"]
# One run: the statistics select an arm's runs by setting letter and configuration, so two runs that agree on
# these are one run to them (whatever their setting_name or source).
RUN_KEY = ["setting", "arm", "n", "m", "rule", "normalize", "grad_accum", "seed"]
# One evaluation of a run: a curves table holds each at most once.
CURVE_KEY = [*RUN_KEY, "dataset", "metric", "grid"]
METRICS = registry.METRICS
DEFAULT_THRESHOLD = 0.99
# The paper sheet: roles of the released runs (config/runs.tsv), unless --sheet says otherwise.
PAPER_SHEET = registry.repo_file("config/runs.tsv")  # in a checkout or shipped in the package


class AnalysisInputError(ValueError):
    """Missing or unusable input; the CLI turns it into exit code 2."""


# ----------------------------------------------------------------------------------------------
# naming


def arm_label(n: int, m: int, rule: str = "max_variance", normalize: str = "after", grad_accum: int = 1) -> str:
    """Arm label of a configuration (the curves' `arm` column; not a run-directory name, which is
    pods_repro.registry.format_run_name): n == m is vanilla GRPO (any rule keeps all rollouts)."""
    if int(n) == int(m):
        return "grpo_ga" if int(grad_accum) > 1 else "grpo"
    name = "pods" if rule == "max_variance" else f"pods_{rule}"
    return name if normalize == "after" else f"{name}_{normalize}"


def setting_letter(name: str, letters: Mapping[str, str] | None = None) -> str | None:
    """Paper letter of a setting name: an explicit map first, then the experiment names of the
    setting records (pods_repro.registry.SETTINGS), then a lone letter token ("tiny_b", "b_toy")."""
    if letters and name in letters:
        return letters[name]
    known = registry.setting_names()
    if name in known:
        return known[name]
    low = str(name).lower()
    alphabet = "".join(sorted(registry.SETTINGS))
    if len(low) == 1 and low in alphabet:
        return low
    hit = re.search(rf"(?:^|[_\-~.])([{alphabet}])(?:$|[_\-~.])", low)
    return hit.group(1) if hit else None


def time_unit(max_time_s: float) -> tuple[str, float]:
    """Axis unit for a time span: hours from 1 h, minutes from 10 min, else seconds."""
    if max_time_s >= 3600:
        return "hours", 3600.0
    if max_time_s >= 600:
        return "minutes", 60.0
    return "seconds", 1.0


# ----------------------------------------------------------------------------------------------
# checked values

# Metrics that are fractions of test problems: every value must lie in [0, 1].
FRACTION_METRICS = ("accuracy", "format_accuracy", "both_accuracy")
# Training-time shares of steps (pods_repro.analysis.gradsignal.SIGNAL_METRICS): fractions too.
SHARE_METRICS = ("kept_frac_zero_std", "frac_zero_std")
# Metrics that count something (tokens): finite and >= 0.
NONNEGATIVE_METRICS = ("completion_len_mean",)


def load_json(path: Path, what: str = "") -> object:
    """json.loads of a file; AnalysisInputError naming the file when it is not JSON."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise AnalysisInputError(f"{path}: not valid JSON ({err}){what}") from None


def as_fraction(value, where: str, metric: str) -> float:
    """A fraction metric's value as float; AnalysisInputError naming `where` unless it is in [0, 1]."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise AnalysisInputError(f"{where}: {metric}={value!r} is not a number") from None
    if not 0.0 <= x <= 1.0:  # NaN fails too
        raise AnalysisInputError(
            f"{where}: {metric}={value!r} is not in [0, 1]: accuracies are fractions of the test set "
            "(a run logged in percent?); fix or remove that file"
        )
    return x


def as_number(value, where: str, metric: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise AnalysisInputError(f"{where}: {metric}={value!r} is not a number") from None
    if not math.isfinite(x) or x < 0:
        raise AnalysisInputError(f"{where}: {metric}={value!r} must be a finite number >= 0")
    return x


# fmt: off
def run_ident(setting, name, n, m, rule, normalize, ga, seed, primary, role="") -> dict:
    """The identity columns of one run (CURVE_COLUMNS up to seed, plus primary_dataset)."""
    return dict(setting=setting, setting_name=name, arm=arm_label(n, m, rule, normalize, ga), role=role, n=n, m=m,
                rule=rule, normalize=normalize, grad_accum=ga, seed=seed, primary_dataset=primary)


def curve_row(ident, grid, time_s, time_s_raw, step, dataset, metric, value, source) -> dict:
    """One tidy curve row."""
    return {**ident, "grid": int(grid), "time_s": float(time_s), "time_s_raw": float(time_s_raw), "step": step,
            "dataset": dataset, "metric": metric, "value": float(value), "source": str(source)}
# fmt: on


def step_ident(ident: dict) -> dict:
    return {c: ident[c] for c in STEP_COLUMNS if c in ident}


# ----------------------------------------------------------------------------------------------
# roles from the run sheet


def sheet_roles(sheet: str | Path | None) -> dict[tuple[str, str], str]:
    """(setting letter, run-directory name) -> role, from a run sheet ({} without one)."""
    if sheet is None:
        return {}
    _check_text(Path(sheet), "run sheet")
    try:
        arms = registry.read_sheet(sheet)
    except registry.SheetError as err:
        raise AnalysisInputError(str(err)) from None
    return {(a.setting, a.run_name): a.role for a in arms}


def _check_text(path: Path, what: str) -> None:
    """AnalysisInputError unless `path` (when it is a file) holds UTF-8 text without NUL bytes."""
    if not path.is_file():
        return  # its reader says what is missing
    try:
        data = path.read_bytes()
    except OSError as err:
        raise AnalysisInputError(f"{what} {path} cannot be read ({err.strerror or err})") from None
    try:
        decode_text(data)
    except NotTextError as err:
        where = (
            "it holds a NUL byte" if err.byte is None else f"byte 0x{err.byte:02x} at offset {err.offset} is not UTF-8"
        )
        raise AnalysisInputError(
            f"{what} {path} is not text ({where}: a binary file?): pass the tab-separated run sheet, "
            "e.g. config/runs_tiny.tsv"
        ) from None


def paper_defaults(rec: registry.Setting) -> dict:
    """rollout.normalize and optim.grad_accum of a setting's paper-scale YAML (its run-name base)."""
    path = registry.repo_file(rec.experiments.get("paper", ""))
    cfg = yaml.safe_load(path.read_text()) if path.is_file() else {}
    return {
        "norm": (cfg.get("rollout") or {}).get("normalize", "after"),
        "ga": int((cfg.get("optim") or {}).get("grad_accum") or 1),
    }


# ----------------------------------------------------------------------------------------------
# reading and selecting tables


def tidy_frame(df: pd.DataFrame) -> pd.DataFrame:
    df = df.astype({"n": int, "m": int, "grad_accum": int, "seed": int, "grid": int})
    df["role"] = df["role"].astype(object).fillna("").astype(str)
    return df.sort_values(
        ["setting", "arm", "n", "m", "rule", "normalize", "seed", "dataset", "metric", "grid"], kind="stable"
    ).reset_index(drop=True)


def _read_table(path: Path, what: str) -> pd.DataFrame:
    """pd.read_csv of a table this module wrote; AnalysisInputError naming the file when unreadable."""
    if path.is_dir():
        raise AnalysisInputError(
            f"{path} is a folder, not a CSV file: pass the {what} table itself (e.g. {path / f'{what}.csv'})"
        )
    try:
        return pd.read_csv(path, keep_default_na=False, na_values=[""])
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError, OSError, EOFError) as err:
        # EOFError: a truncated .csv.gz
        raise AnalysisInputError(
            f"{path} is not a readable {what} CSV ({err or type(err).__name__}); regenerate it"
        ) from None


def _numeric(df: pd.DataFrame, path: Path, columns: Iterable[str]) -> pd.DataFrame:
    """Columns converted to numbers; AnalysisInputError naming the file and row of the first bad cell."""
    for col in columns:
        num = pd.to_numeric(df[col], errors="coerce")
        bad = num.isna() & df[col].notna()
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise AnalysisInputError(f"{path} row {i + 2}: {col}={df[col].iloc[i]!r} is not a number")
        df[col] = num
    return df


def _first(mask: pd.Series | np.ndarray) -> int | None:
    """Position of the first True of `mask`, None if none."""
    hits = np.flatnonzero(np.asarray(mask))
    return int(hits[0]) if hits.size else None


def _plain(value) -> str:
    """A key value for a message: 4.0 as 4."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


_REGENERATE = "regenerate the table with `python -m pods_repro.analysis collect` (or `released`)"


def _check_curve_cells(df: pd.DataFrame, path: Path) -> None:
    """Every cell a statistic reads holds a usable value; AnalysisInputError naming the row and column of the
    first that does not. Identity cells are filled; n, m, grad_accum, seed and grid are whole numbers;
    time_s is a finite number >= 0; step is too, in every row or none (a table without optimizer steps);
    value is finite, in [0, 1] for the fraction metrics (accuracies, shares of steps), >= 0 for lengths."""

    def refuse(mask: np.ndarray, why) -> None:
        i = _first(mask)
        if i is not None:
            raise AnalysisInputError(f"{path} row {i + 2}: {why(i)}; {_REGENERATE}")

    def cell(col: str, i: int) -> str:
        return f"{col}={float(df[col].iloc[i])!r}"

    for col in ("setting", "arm", "rule", "normalize", "dataset", "metric", "n", "m", "grad_accum", "seed", "grid"):
        refuse(df[col].isna().to_numpy(), lambda i, col=col: f"{col} is empty")
    for col, low in (("n", 1), ("m", 1), ("grad_accum", 1), ("seed", None), ("grid", 0)):
        x = df[col].to_numpy(float)
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(x) | (x != np.round(x)) | (x < (low if low is not None else -np.inf))
        at_least = "" if low is None else f" >= {low}"
        refuse(bad, lambda i, col=col, at_least=at_least: f"{cell(col, i)} is not a whole number{at_least}")
    if df["step"].notna().any():  # steps in every row, or none (then the statistics use seconds)
        refuse(df["step"].isna().to_numpy(), lambda i: "step is empty, while other rows have optimizer steps")
    refuse(df["time_s"].isna().to_numpy(), lambda i: "time_s is empty")
    for col in ("time_s", "step", "time_s_raw"):
        x = df[col].to_numpy(float)
        with np.errstate(invalid="ignore"):
            bad = ~np.isnan(x) & ~(np.isfinite(x) & (x >= 0))
        refuse(bad, lambda i, col=col: f"{cell(col, i)} is not a finite number >= 0")
    value = df["value"].to_numpy(float)
    metric = df["metric"].astype(str).to_numpy()

    def of(i: int) -> str:
        return f"{metric[i]}={float(value[i])!r}"

    refuse(np.isnan(value), lambda i: f"value ({metric[i]}) is empty")
    with np.errstate(invalid="ignore"):
        out = np.isin(metric, FRACTION_METRICS + SHARE_METRICS) & ~((value >= 0) & (value <= 1))
        negative = np.isin(metric, NONNEGATIVE_METRICS) & (value < 0)
    kind = {m: "a fraction of the test set (logged in percent?)" for m in FRACTION_METRICS}
    kind |= {m: "a share of the steps (logged in percent?)" for m in SHARE_METRICS}
    refuse(out, lambda i: f"{of(i)} is not in [0, 1]: {metric[i]} is {kind[metric[i]]}")
    at_least = {m: " >= 0" for m in NONNEGATIVE_METRICS}
    refuse(~np.isfinite(value) | negative, lambda i: f"{of(i)} is not a finite number{at_least.get(metric[i], '')}")


def refuse_duplicates(df: pd.DataFrame, key: Sequence[str], source, what: str = "evaluation") -> None:
    """AnalysisInputError if two rows of `df` share `key` (e.g. CURVE_KEY: the same run's evaluation twice),
    with how many rows repeat an earlier one and the first of them. Row numbers are the file's (header = 1)."""
    key = [k for k in key if k in df.columns]
    dup = df.duplicated(key, keep="first").to_numpy()
    if not dup.any():
        return
    i = _first(dup)
    row = df.iloc[i]
    group = df.groupby(key, dropna=False, sort=False).ngroup().to_numpy()
    j = _first(group == group[i])
    shown = ", ".join(f"{k}={_plain(row[k])}" for k in key)
    where = ""
    if "source" in df.columns and str(df["source"].iloc[j]) != str(row["source"]):
        where = f", from {df['source'].iloc[j]} and {row['source']}"
    raise AnalysisInputError(
        f"{source}: {int(dup.sum())} duplicated rows, the same {what} twice: the first is row {i + 2}, as row "
        f"{j + 2} ({shown}{where}); the statistics would average them as if they were more seeds. Fix: "
        "collect the run directories again, each run once (not two tables concatenated, nor a run copied "
        "under two folders)"
    )


def check_grids(df: pd.DataFrame, source) -> None:
    """AnalysisInputError unless the seeds of each arm (setting, configuration, dataset, metric) were evaluated
    at the same grid points: a mean curve over seeds taken point by point would otherwise mix budgets (a seed
    trained longer becomes the arm's late curve alone) or, where one seed lacks an evaluation, be a mean over
    the others there. Rows of dataset "train" (means over each grid interval's steps) need the same last
    grid point only. Call it after any cut to a common budget (--until-step)."""
    keys = [k for k in RUN_KEY if k != "seed"] + ["dataset", "metric"]
    grids = df.groupby([*keys, "seed"], sort=True, dropna=False)["grid"].agg(lambda g: tuple(sorted(set(g))))
    train = grids.index.get_level_values("dataset") == "train"
    grids[train] = [(g[-1],) for g in grids[train]]
    per_arm = grids.groupby(level=list(range(len(keys))), sort=True, dropna=False)
    for arm_key, seeds in per_arm:
        if seeds.nunique() > 1:
            raise AnalysisInputError(_grid_message(df, dict(zip(keys, arm_key, strict=True)), seeds, source))
    _check_steps(df, keys, source)


def _same(x: np.ndarray) -> bool:
    """All of `x` equal (up to float round-off)."""
    return bool(np.ptp(x) <= 1e-6 * max(1.0, float(np.max(np.abs(x)))))


def _check_steps(df: pd.DataFrame, keys: list[str], source) -> None:
    """check_grids's second half: on a step grid, the seeds of an arm share each grid point's optimizer step.

    The table says which grid an arm is on through `time_s`: on a wall-clock grid (eval.every_s, the paper's, and
    the authors' released logs) `time_s` is the grid time k x every_s, the same for every seed at grid point k,
    while the optimizer steps reached there legitimately differ between seeds; on a step grid (eval.every_steps)
    `time_s` is the logged time, different for every seed, and the steps are the grid. So an arm whose seeds
    share `time_s` at every grid point is on a wall-clock grid and passes; any other arm must have one step per
    grid point. Else a seed rerun with another eval.every_steps (as many evaluations, at other steps) would be
    averaged with the others by grid index. Evaluations only: the rows of dataset "train" are means over grid
    intervals (check_grids). A table without steps is on a time grid."""
    evals = df[df["dataset"] != "train"]
    if evals.empty or evals["step"].isna().any():
        return
    for arm_key, rows in evals.groupby(keys, sort=True, dropna=False):
        if rows["seed"].nunique() < 2:
            continue
        by_grid = rows.groupby("grid", sort=True)
        if all(_same(t.to_numpy(float)) for _, t in by_grid["time_s"]):
            continue  # a wall-clock grid: the grid times are shared, the steps may differ
        if all(_same(s.to_numpy(float)) for _, s in by_grid["step"]):
            continue
        raise AnalysisInputError(_step_message(rows, dict(zip(keys, arm_key, strict=True)), source))


def _step_message(rows: pd.DataFrame, arm: dict, source) -> str:
    """_check_steps's refusal: the first seed whose steps differ from the arm's most common ones, and where."""
    steps = rows.pivot_table(index="seed", columns="grid", values="step", aggfunc="first").sort_index()
    tuples = [tuple(float(x) for x in r) for r in steps.to_numpy()]
    common = max(tuples, key=lambda t: (tuples.count(t), -tuples.index(t)))
    seeds = list(steps.index)
    odd = next(s for s, t in zip(seeds, tuples, strict=True) if t != common)
    others = [_plain(s) for s, t in zip(seeds, tuples, strict=True) if t == common]
    mine = tuples[seeds.index(odd)]
    at = [i for i, (a, b) in enumerate(zip(mine, common, strict=True)) if a != b]
    grid = list(steps.columns)

    def listed(vals) -> str:
        return ", ".join(_plain(v) for v in vals[:4]) + (", ..." if len(vals) > 4 else "")

    label = f"{arm['arm']} n={_plain(arm['n'])} m={_plain(arm['m'])}"
    label += f" grad_accum={_plain(arm['grad_accum'])}" if int(arm["grad_accum"]) != 1 else ""
    every = np.array([common[i] / grid[i] for i in range(len(grid)) if grid[i] > 0])
    hint = f" (eval.every_steps {_plain(every[0])})" if every.size and _same(every) else ""
    s = "s" if len(others) > 1 else ""
    return (
        f"{source}: seed {_plain(odd)} of {label} (setting {arm['setting']}, {arm['dataset']} / {arm['metric']}) "
        f"was evaluated at steps {listed([mine[i] for i in at])} where seed{s} {', '.join(others)} "
        f"{'were' if s else 'was'} at steps {listed([common[i] for i in at])} (grid point"
        f"{'s' if len(at) > 1 else ''} {listed([grid[i] for i in at])}{f': {len(at)} differ' if len(at) > 4 else ''})"
        ": averaging them by grid point would mix different steps. Fix: rerun seed "
        f"{_plain(odd)} on the other seeds' step grid{hint}, or remove its run directory and collect again"
    )


def _grid_message(df: pd.DataFrame, arm: dict, seeds: pd.Series, source) -> str:
    """check_grids's refusal: which seeds reach which budget, or which seed lacks which grid point."""
    rows = select(df, **arm)
    has_steps = rows["step"].notna().all()
    label = f"{arm['arm']} n={_plain(arm['n'])} m={_plain(arm['m'])}"
    label += f" grad_accum={_plain(arm['grad_accum'])}" if int(arm["grad_accum"]) != 1 else ""
    head = f"{source}: the seeds of {label} (setting {arm['setting']}, {arm['dataset']} / {arm['metric']})"
    seed_of = {idx[-1]: grid for idx, grid in seeds.items()}

    def pos(seed, grid) -> float:
        at = rows[(rows["seed"] == seed) & (rows["grid"] == grid)]
        return float(at["step"].max() if has_steps else at["time_s"].max())

    def where(x: float) -> str:  # an evaluation's position: its optimizer step, else its training seconds
        return f"step {_plain(x)}" if has_steps else f"{x:g} s"

    last = {s: g[-1] for s, g in seed_of.items()}
    if len(set(last.values())) > 1:  # different budgets
        ends = {s: pos(s, g) for s, g in last.items()}
        by_end: dict[tuple, list] = {}
        for s in sorted(seed_of):
            by_end.setdefault((ends[s], len(seed_of[s])), []).append(_plain(s))
        shown = ", ".join(
            f"seed{'s' if len(ss) > 1 else ''} {', '.join(ss)} to {where(end)} ({count} evaluations)"
            for (end, count), ss in sorted(by_end.items())
        )
        common = min(ends.values())
        fix = (
            f"pass --until-step {_plain(common)} to read every seed up to a common budget, or train the missing steps"
            if has_steps
            else "train the missing evaluations, or remove the longer runs"
        )
        return f"{head} end at different budgets: {shown}; averaging them would mix budgets. Fix: {fix}"
    union = sorted(set().union(*seed_of.values()))
    for s in sorted(seed_of):
        missing = [g for g in union if g not in seed_of[s]]
        if missing:
            others = [_plain(o) for o in sorted(seed_of) if o != s and missing[0] in seed_of[o]]
            gaps = ", ".join(_plain(g) for g in missing[:5]) + (
                f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            )
            return (
                f"{head}: seed {_plain(s)} lacks grid point{'s' if len(missing) > 1 else ''} {gaps} that seed"
                f"{'s' if len(others) > 1 else ''} {', '.join(others)} evaluated; the mean curve there would be over "
                "the other seeds. Fix: restore that seed's evaluation rows (or rerun it), or remove its run "
                "directory and collect again"
            )
    return f"{head} were evaluated at different grid points"  # not reached: the seeds' grids differ somewhere


def read_curves(path: str | Path) -> pd.DataFrame:
    """Read a curves.csv written by this module; AnalysisInputError if missing, empty, wrongly shaped
    (columns, numbers), holding a value out of range or an empty, non-finite or negative time or step
    (naming the row and column), or one evaluation twice (`refuse_duplicates`). The rows come back in
    CURVE_KEY order, whatever the file's; columns beyond CURVE_COLUMNS are kept and ignored."""
    path = Path(path)
    if not path.exists() or (path.is_file() and path.stat().st_size == 0):
        raise AnalysisInputError(
            f"curves file {path} is missing or empty: produce it with `python -m pods_repro.analysis "
            "collect --runs results/runs --out-dir results/tables` (our runs) or `... released "
            "--logs DIR --out-dir results/released` (the authors' logs)"
        )
    df = _read_table(path, "curves")
    missing = set(CURVE_COLUMNS) - set(df.columns)
    if missing or df.empty:
        raise AnalysisInputError(
            f"{path} is not a curves table (missing columns {sorted(missing)} "
            "or no rows): regenerate it with `python -m pods_repro.analysis collect`"
        )
    df = _numeric(df, path, ("value", "time_s", "time_s_raw", "step", "seed", "grid", "n", "m", "grad_accum"))
    _check_curve_cells(df, path)
    df = df.astype({"setting": str, "seed": int, "grid": int}).assign(
        role=df["role"].astype(object).fillna("").astype(str)
    )
    refuse_duplicates(df, CURVE_KEY, path)
    return df.sort_values(CURVE_KEY, kind="stable").reset_index(drop=True)


STEPS_REQUIRED = ("setting", "arm", "n", "m", "grad_accum", "seed", "time_s", "steps")


def read_steps(path: str | Path | None) -> pd.DataFrame | None:
    """Read a steps.csv; None when no path is given or the file is absent (figures show a note);
    AnalysisInputError naming the file when it lacks columns, holds non-numbers, negative or infinite
    times or steps, or one run twice."""
    if path is None or not Path(path).exists() or (Path(path).is_file() and Path(path).stat().st_size == 0):
        return None
    path = Path(path)
    steps = _read_table(path, "steps")
    missing = [c for c in STEPS_REQUIRED if c not in steps.columns]
    if missing:
        raise AnalysisInputError(
            f"{path} is not a steps table (missing columns {missing}): regenerate it with "
            "`python -m pods_repro.analysis collect` (our runs) or `released` (the authors' logs)"
        )
    steps = _numeric(steps, path, ("n", "m", "grad_accum", "seed", "time_s", "steps")).astype({"setting": str})
    for col in ("time_s", "steps"):  # empty: a run without a logged step (no seconds per step)
        x = steps[col].to_numpy(float)
        with np.errstate(invalid="ignore"):
            i = _first(~np.isnan(x) & ~(np.isfinite(x) & (x >= 0)))
        if i is not None:
            raise AnalysisInputError(
                f"{path} row {i + 2}: {col}={float(x[i])!r} is not a finite number >= 0; regenerate the table with "
                "`python -m pods_repro.analysis collect` (or `released`)"
            )
    refuse_duplicates(steps, RUN_KEY, path, "run")
    if "role" not in steps:
        return steps
    return steps.assign(role=steps["role"].astype(object).fillna("").astype(str))  # an all-empty column reads float


def select(df: pd.DataFrame, **where) -> pd.DataFrame:
    """Rows whose columns equal the given values (a list/tuple value means "is in")."""
    mask = np.ones(len(df), dtype=bool)
    for col, val in where.items():
        mask &= df[col].isin(val).to_numpy() if isinstance(val, list | tuple | set) else (df[col] == val).to_numpy()
    return df[mask]


def read_benchmark(path: str | Path) -> pd.DataFrame:
    """Read the Fig. 1 benchmark CSV; AnalysisInputError if missing or empty."""
    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        raise AnalysisInputError(
            f"benchmark table {path} is missing or empty: produce it with the benchmark rule (`pods bench`)"
        )
    return pd.read_csv(path)


def summarize_benchmark(bench: pd.DataFrame) -> pd.DataFrame:
    """Mean over repeats per rollout count of the Fig. 1 benchmark; `update_oom` if any repeat OOMed."""
    need = {"rollouts", "step_time_s", "gen_time_s", "update_time_s", "per_token_gen_ms", "update_oom"}
    missing = need - set(bench.columns)
    if missing:
        raise AnalysisInputError(
            f"benchmark table lacks columns {sorted(missing)}: regenerate it with the benchmark rule (`pods bench`)"
        )
    bench = bench.assign(update_oom=bench["update_oom"].astype(str).str.lower().isin(["true", "1"]))
    agg = {c: "mean" for c in need - {"rollouts", "update_oom"}}
    out = bench.groupby("rollouts").agg({**agg, "update_oom": "any"}).reset_index()
    return out.sort_values("rollouts").reset_index(drop=True)
