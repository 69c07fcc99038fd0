"""The tidy-table contract shared by every reader and by the statistics: columns, checks, roles.

This module owns what a curves / steps table is (pods.analysis.released writes them from the authors' logs,
pods.analysis.collect from our run directories; pods.analysis.speedups and the figures read them), the checks every
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
accuracies outside [0, 1] (a run logged in percent), broken or wrongly shaped JSON / CSV, missing
keys or columns.
"""

from __future__ import annotations

import json
import math
import re
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from pods import registry

# fmt: off
CURVE_COLUMNS = ["setting", "setting_name", "arm", "role", "n", "m", "rule", "normalize", "grad_accum", "seed", "grid",
                 "time_s", "time_s_raw", "step", "dataset", "primary_dataset", "metric", "value", "source"]
STEP_COLUMNS = ["setting", "setting_name", "arm", "role", "n", "m", "rule", "normalize", "grad_accum", "seed", "time_s",
                "steps", "seconds_per_step", "gen_s_per_step", "update_s_per_step", "completion_len_mean",
                "peak_mem_mb", "source"]
# fmt: on
# Columns that identify one configuration (an "arm" at given n, m, ...) across seeds.
CONFIG_KEYS = ["setting", "setting_name", "arm", "n", "m", "rule", "normalize", "grad_accum"]
METRICS = registry.METRICS
DEFAULT_THRESHOLD = 0.99
# The paper sheet: roles of the released runs (config/runs.tsv), unless --sheet says otherwise.
PAPER_SHEET = registry.repo_file("config/runs.tsv")  # in a checkout or shipped in the package


class AnalysisInputError(ValueError):
    """Missing or unusable input; the CLI turns it into exit code 2."""


def arm_rng(seed: int, *key) -> np.random.Generator:
    """The bootstrap generator of one arm: seeded from the table's `seed` and the arm's configuration
    (setting, n, m, rule, normalize, grad_accum; each part hashed with CRC-32, so the same on every machine
    and Python), not from the arms drawn before it. So adding or dropping an arm of a table leaves every other arm's
    interval as it was, and two arms get independent draws."""

    def text(part) -> str:  # 16, 16.0 and np.int64(16) alike: a float column of n or m seeds as an int one
        if isinstance(part, (int, float, np.integer, np.floating)) and float(part).is_integer():
            return str(int(part))
        return str(part)

    return np.random.default_rng([int(seed), *(zlib.crc32(text(part).encode()) for part in key)])


def boot_means(values_S: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """The means of `n_boot` resamples (with replacement) of one arm's per-seed values `values_S`."""
    idx_B_S = rng.integers(0, len(values_S), size=(n_boot, len(values_S)))
    return values_S[idx_B_S].mean(axis=1)


# ----------------------------------------------------------------------------------------------
# naming


def arm_label(n: int, m: int, rule: str = "max_variance", normalize: str = "after", grad_accum: int = 1) -> str:
    """Arm label of a configuration (the curves' `arm` column; not a run-directory name, which is
    pods.registry.format_run_name): n == m is vanilla GRPO (any rule keeps all rollouts)."""
    if int(n) == int(m):
        return "grpo_ga" if int(grad_accum) > 1 else "grpo"
    name = "pods" if rule == "max_variance" else f"pods_{rule}"
    return name if normalize == "after" else f"{name}_{normalize}"


def setting_letter(name: str, letters: Mapping[str, str] | None = None) -> str | None:
    """Paper letter of a setting name: an explicit map first, then the experiment names of the
    setting records (pods.registry.SETTINGS), then a lone letter token ("tiny_b", "b_toy")."""
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


def _load_json(path: Path, what: str = "") -> object:
    """json.loads of a file; AnalysisInputError naming the file when it is not JSON."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise AnalysisInputError(f"{path}: not valid JSON ({err}){what}") from None


def _fraction(value, where: str, metric: str) -> float:
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


def _number(value, where: str, metric: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise AnalysisInputError(f"{where}: {metric}={value!r} is not a number") from None
    if not math.isfinite(x) or x < 0:
        raise AnalysisInputError(f"{where}: {metric}={value!r} must be a finite number >= 0")
    return x


# fmt: off
def _ident(setting, name, n, m, rule, normalize, ga, seed, primary, role="") -> dict:
    """The identity columns of one run (CURVE_COLUMNS up to seed, plus primary_dataset)."""
    return dict(setting=setting, setting_name=name, arm=arm_label(n, m, rule, normalize, ga), role=role, n=n, m=m,
                rule=rule, normalize=normalize, grad_accum=ga, seed=seed, primary_dataset=primary)


def _row(ident, grid, time_s, time_s_raw, step, dataset, metric, value, source) -> dict:
    """One tidy curve row."""
    return {**ident, "grid": int(grid), "time_s": float(time_s), "time_s_raw": float(time_s_raw), "step": step,
            "dataset": dataset, "metric": metric, "value": float(value), "source": str(source)}
# fmt: on


def _step_ident(ident: dict) -> dict:
    return {c: ident[c] for c in STEP_COLUMNS if c in ident}


# ----------------------------------------------------------------------------------------------
# roles from the run sheet


def sheet_roles(sheet: str | Path | None) -> dict[tuple[str, str], str]:
    """(setting letter, run-directory name) -> role, from a run sheet ({} without one)."""
    if sheet is None:
        return {}
    try:
        arms = registry.read_sheet(sheet)
    except registry.SheetError as err:
        raise AnalysisInputError(str(err)) from None
    return {(a.setting, a.run_name): a.role for a in arms}


def _paper_defaults(rec: registry.Setting) -> dict:
    """rollout.normalize and optim.grad_accum of a setting's paper-scale YAML (its run-name base)."""
    path = registry.repo_file(rec.experiments.get("paper", ""))
    cfg = yaml.safe_load(path.read_text()) if path.is_file() else {}
    return {
        "norm": (cfg.get("rollout") or {}).get("normalize", "after"),
        "ga": int((cfg.get("optim") or {}).get("grad_accum") or 1),
    }


# ----------------------------------------------------------------------------------------------
# reading and selecting tables


def _tidy(df: pd.DataFrame) -> pd.DataFrame:
    df = df.astype({"n": int, "m": int, "grad_accum": int, "seed": int, "grid": int})
    df["role"] = df["role"].fillna("").astype(str)
    return df.sort_values(
        ["setting", "arm", "n", "m", "rule", "normalize", "seed", "dataset", "metric", "grid"], kind="stable"
    ).reset_index(drop=True)


def _read_table(path: Path, what: str) -> pd.DataFrame:
    """pd.read_csv of a table this module wrote; AnalysisInputError naming the file when unreadable."""
    try:
        return pd.read_csv(path, keep_default_na=False, na_values=[""])
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as err:
        raise AnalysisInputError(f"{path} is not a readable {what} CSV ({err}); regenerate it") from None


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


def read_curves(path: str | Path) -> pd.DataFrame:
    """Read a curves.csv written by this module; AnalysisInputError if missing, empty, wrongly
    shaped (columns, numbers) or holding accuracies outside [0, 1] (naming the row)."""
    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        raise AnalysisInputError(
            f"curves file {path} is missing or empty: produce it with `python -m pods.analysis "
            "collect --runs results/runs --out-dir results/tables` (our runs) or `... released "
            "--logs DIR --out-dir results/released` (the authors' logs)"
        )
    df = _read_table(path, "curves")
    missing = set(CURVE_COLUMNS) - set(df.columns)
    if missing or df.empty:
        raise AnalysisInputError(
            f"{path} is not a curves table (missing columns {sorted(missing)} "
            "or no rows): regenerate it with `python -m pods.analysis collect`"
        )
    df = _numeric(df, path, ("value", "time_s", "step", "seed", "grid", "n", "m", "grad_accum"))
    frac = df["metric"].isin(FRACTION_METRICS).to_numpy()
    out = frac & ~df["value"].between(0.0, 1.0).to_numpy()
    if out.any():
        i = int(np.flatnonzero(out)[0])
        raise AnalysisInputError(
            f"{path} row {i + 2}: {df['metric'].iloc[i]}={float(df['value'].iloc[i])!r} is not in [0, 1]: accuracies "
            "are fractions; regenerate the table with `python -m pods.analysis collect`"
        )
    for col in ("seed", "grid"):
        if df[col].isna().any():
            i = int(np.flatnonzero(df[col].isna().to_numpy())[0])
            raise AnalysisInputError(f"{path} row {i + 2}: {col} is empty")
    return df.astype({"setting": str, "seed": int, "grid": int}).assign(
        role=df["role"].astype(object).fillna("").astype(str)
    )


STEPS_REQUIRED = ("setting", "arm", "n", "m", "grad_accum", "seed", "time_s", "steps")


def read_steps(path: str | Path | None) -> pd.DataFrame | None:
    """Read a steps.csv; None when no path is given or the file is absent (figures show a note);
    AnalysisInputError naming the file when it lacks columns or holds non-numbers."""
    if path is None or not Path(path).exists() or Path(path).stat().st_size == 0:
        return None
    path = Path(path)
    steps = _read_table(path, "steps")
    missing = [c for c in STEPS_REQUIRED if c not in steps.columns]
    if missing:
        raise AnalysisInputError(
            f"{path} is not a steps table (missing columns {missing}): regenerate it with "
            "`python -m pods.analysis collect` (our runs) or `released` (the authors' logs)"
        )
    steps = _numeric(steps, path, ("n", "m", "grad_accum", "seed", "time_s", "steps")).astype({"setting": str})
    return steps.assign(role=steps["role"].fillna("").astype(str)) if "role" in steps else steps


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
