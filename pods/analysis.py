"""Tidy curves from run directories and from the authors' released logs; time-to-peak; bootstrap.

Everything the figures and the time-to-peak table show is computed here, so it can be tested; the
scripts in `figures/` only select and plot.

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
completion_len_mean (tokens). The authors' names map as ans_acc -> accuracy, for_acc ->
format_accuracy, both_acc -> both_accuracy, lengths -> completion_len_mean, and their dataset
math500 -> math (pods.data's MATH-500 test set); per-run values are the mean of the 5 repeated
evaluations, as in their scripts/plot.py.

Time-to-peak (PAPER.md §5, App. A.4 of the paper): on the mean-over-seeds curve at the evaluation
grid, with t = 0 excluded, T = threshold x max(baseline curve); the speed-up is t_base / t_pods,
the first grid times at which each mean curve is >= T. Hence it is quantized by the grid.
If PODS never reaches T within its budget, t_pods = inf and the speed-up is 0 (treated as infinitely
slow, which is also what the bootstrap counts); the table says so in `note`. The baseline always
reaches its own target unless its curve is empty, which is an error.

How the released logs map to the grid (verified against PAPER.md §4-§5 by tests/test_analysis.py):
- (a)/(c) and the n/m/rule sweeps: checkpoints sorted by step number, the i-th at (i+1) x 0.5 h,
  kept up to 6 h (two m=2 runs have 14 checkpoints); (b) Llama: (i+1) x 10 min up to 1.5 h. This is
  the authors' plot.py. Base-model files give the t = 0 point.
- (e)/(f): wandb exports; for each seed the evaluation nearest to each target minute 0, 2, ..., 30
  (the authors' plot-h100s/a100s.py). Accuracy uses the seeds of the accuracy file, lengths those
  of the length file (A100 GA: seed 15 vs 24). The authors' script keeps only seeds in both files
  (4 A100 GA seeds: peak 87.04%, 40.65 s/step); the paper's numbers (87.24%, 39.82 s/step, 1.75x,
  PAPER.md §5) come from all 5 accuracy seeds, which is what this module reproduces.
- Seconds per step = horizon / mean(steps at the horizon) over runs (PAPER.md §4 footnote), and for
  (e)/(f) per *global* step (wandb `_step` / GA).

Departures from the authors' scripts: none in the numbers. The printed speed-up is the exact ratio
truncated to one decimal, which is how the paper prints 28/16 = 1.75 as "1.7x" (`speedup`); the
exact ratio is `speedup_exact`. Training completion lengths from metrics.jsonl go to curves.csv as
dataset "train" (mean over the steps in each grid interval), beside the evaluation lengths.

Run:
    python -m pods.analysis released --logs ../shared/reference/pods-released-results --out-dir results/released
    python -m pods.analysis collect --runs results/runs --out-dir results/tables
    python -m pods.analysis time-to-peak --curves results/tables/curves.csv --out-dir results/tables
Exit codes: 0 ok, 2 missing or empty input (the message says how to produce it), 1 anything else.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
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
PAPER_SHEET = registry.REPO_ROOT / "config" / "runs.tsv"


class AnalysisInputError(ValueError):
    """Missing or unusable input; the CLI turns it into exit code 2."""


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
# the authors' released logs


def _single_gpu_pattern() -> re.Pattern:
    """File names of the authors' per-run JSONs; the dataset tokens come from the setting records."""
    tokens = "|".join(re.escape(s.released.token) for s in _released_settings("json").values())
    return re.compile(
        rf"^Instruct-(?P<ds>{tokens})(?:-(?P<rule>MaxR|Rand))?-512-(?P<n>\d+)-(?P<m>\d+)"
        r"(?:-(?P<beta>[\d.]+))?-Run(?P<run>\d+)\.json$"
    )


_WANDB_RUN = re.compile(
    r"^data/(?P<run>\S+-s(?P<seed>\d+)-p\d+-n(?P<n>\d+)-m(?P<m>\d+)-ga(?P<ga>\d+))"
    r" - (?P<key>.+)$"
)


def _released_settings(kind: str) -> dict[str, registry.Setting]:
    """Settings whose released logs are of `kind` (json | wandb), by letter."""
    return {k: s for k, s in registry.SETTINGS.items() if s.released is not None and s.released.kind == kind}


# pods.data calls the MATH-500 test set "math"; AMC23 keeps its name (evaluated, never reported).
_AUTHOR_DATASETS = {"math500": "math"}
_AUTHOR_METRICS = {
    "ans_acc": "accuracy",
    "for_acc": "format_accuracy",
    "both_acc": "both_accuracy",
    "lengths": "completion_len_mean",
}
_AUTHOR_RULES = {None: "max_variance", "MaxR": "max_reward", "Rand": "random"}


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


def _read_single_gpu(path: Path, match: re.Match, base_cache: dict, roles: Mapping) -> tuple[list, dict]:
    rec = next(s for s in _released_settings("json").values() if s.released.token == match["ds"])
    letter, name, primary, base_file = rec.letter, rec.name, rec.dataset, rec.released.base_file
    grid_s, horizon_s = rec.grid_s, rec.horizon_s
    n, m, rule = int(match["n"]), int(match["m"]), _AUTHOR_RULES[match["rule"]]
    role = roles.get((letter, _released_run_name(rec, n, m, rule, "after", 1)), "")
    ident = _ident(letter, name, n, m, rule, "after", 1, int(match["run"]), primary, role)
    log = json.loads(path.read_text())
    # The i-th checkpoint by step number was saved at (i + 1) grid intervals (scripts/plot.py).
    ckpts = sorted(log, key=lambda k: int(k.rsplit("-", 1)[-1]))
    ckpts = ckpts[: horizon_s // grid_s]
    rows = []
    for i, ck in enumerate(ckpts):
        t = (i + 1) * grid_s
        for ds, block in log[ck].items():
            for key, metric in _AUTHOR_METRICS.items():
                if block.get(key):
                    step = int(ck.rsplit("-", 1)[-1])
                    value = np.mean(block[key])
                    rows.append(_row(ident, i + 1, t, t, step, _AUTHOR_DATASETS.get(ds, ds), metric, value, path.name))
    # t = 0: the untrained model, the same value for every seed (SEM 0 there, as in plot.py).
    if base_file not in base_cache:
        base_path = path.parent / base_file
        base_cache[base_file] = json.loads(base_path.read_text()) if base_path.exists() else {}
    evaluated = {ds for ck in ckpts for ds in log[ck]}
    for ds, block in base_cache[base_file].items():
        if ds not in evaluated:  # base-llama.json also scores MATH-500, the Llama runs never did
            continue
        for key, metric in _AUTHOR_METRICS.items():
            if block.get(key):
                value = np.mean(block[key])
                rows.append(_row(ident, 0, 0.0, 0.0, 0, _AUTHOR_DATASETS.get(ds, ds), metric, value, base_file))
    step_at_horizon = int(ckpts[-1].rsplit("-", 1)[-1]) if ckpts else None
    step_row = {**_step_ident(ident), "time_s": float(horizon_s), "steps": step_at_horizon, "source": path.name}
    return rows, step_row


def _wandb_series(path: Path) -> dict:
    """{(run, key): [(eval time s, value), ...]} from a wandb CSV export (one run per cell)."""
    with path.open(newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        body = list(reader)
    out: dict = {}
    for j, col in enumerate(header):
        hit = _WANDB_RUN.match(col)
        if not hit or hit["key"].endswith(("__MIN", "__MAX")):
            continue
        out[(hit["run"], hit["key"])] = [(float(r[0]), float(r[j])) for r in body if r[j]]
    return out


def _nearest(series: list, target_s: float) -> tuple[float, float]:
    """The (time, value) of `series` closest in time to `target_s` (the authors' alignment)."""
    times = np.array([t for t, _ in series])
    return series[int(np.abs(times - target_s).argmin())]


def _read_multi_gpu(log_dir: Path, letter: str, roles: Mapping) -> tuple[list, list]:
    rec = registry.SETTINGS[letter]
    prefix, name, primary = rec.released.token, rec.name, rec.dataset
    grid_s, horizon_s = rec.grid_s, rec.horizon_s
    targets_s = np.arange(0, horizon_s + 1, grid_s)
    rows, step_rows = [], []
    # Each file is read with its own seeds: the accuracy file has A100 GA seed 15, the length
    # file seed 24 instead. The authors' plot-a100s.py keeps only seeds in both, but the paper's
    # numbers (PAPER.md §5: GA peak 87.24%, 39.82 s per global step) use all five accuracy seeds.
    for kind, key in (("acc", "eval/rewards/accuracy_reward/mean"), ("length", "eval/completions/mean_length")):
        metric = "accuracy" if kind == "acc" else "completion_len_mean"
        series = _wandb_series(log_dir / f"{prefix}-{kind}.csv")
        for run in sorted(r for r, k in series if k == key and (r, "_step") in series):
            hit = _WANDB_RUN.match(f"data/{run} - x")
            n, m, ga = int(hit["n"]), int(hit["m"]), int(hit["ga"])
            role = roles.get((letter, _released_run_name(rec, n, m, "max_variance", "after", ga)), "")
            ident = _ident(letter, name, n, m, "max_variance", "after", ga, int(hit["seed"]), primary, role)
            src = f"{prefix}-{kind}.csv"
            for k, target in enumerate(targets_s):
                t_raw, value = _nearest(series[(run, key)], target)
                # wandb `_step` counts micro-steps; a global (optimizer) step is GA of them.
                _, micro = _nearest(series[(run, "_step")], target)
                rows.append(_row(ident, k, target, t_raw, int(micro) // ga, "gsm8k", metric, value, src))
            if kind == "acc":
                _, micro = _nearest(series[(run, "_step")], horizon_s)
                step_rows.append({**_step_ident(ident), "time_s": float(horizon_s), "steps": micro / ga, "source": src})
    return rows, step_rows


def _paper_defaults(rec: registry.Setting) -> dict:
    """rollout.normalize and optim.grad_accum of a setting's paper-scale YAML (its run-name base)."""
    path = registry.REPO_ROOT / rec.experiments.get("paper", "")
    cfg = yaml.safe_load(path.read_text()) if path.is_file() else {}
    return {
        "norm": (cfg.get("rollout") or {}).get("normalize", "after"),
        "ga": int((cfg.get("optim") or {}).get("grad_accum") or 1),
    }


def _released_run_name(rec: registry.Setting, n, m, rule, normalize, ga) -> str:
    """The run-directory name a released run would have in our paper-scale workflow."""
    base = _paper_defaults(rec)
    extra = [f"{k}~{v}" for k, v in (("norm", normalize), ("ga", ga)) if v != base[k]]
    return registry.format_run_name(rule, n, m, extra)


def sheet_roles(sheet: str | Path | None) -> dict[tuple[str, str], str]:
    """(setting letter, run-directory name) -> role, from a run sheet ({} without one)."""
    if sheet is None:
        return {}
    try:
        arms = registry.read_sheet(sheet)
    except registry.SheetError as err:
        raise AnalysisInputError(str(err)) from None
    return {(a.setting, a.run_name): a.role for a in arms}


def _released(log_dir: str | Path, sheet: str | Path | None = PAPER_SHEET) -> tuple[pd.DataFrame, pd.DataFrame]:
    log_dir = Path(log_dir)
    roles = sheet_roles(sheet)
    if not log_dir.is_dir():
        raise AnalysisInputError(
            f"released-logs folder {log_dir} does not exist: pass the authors' results/ folder "
            "(a copy is at ../shared/reference/pods-released-results; upstream: "
            "github.com/YixuanEvenXu/pods, commit 187f43b, folder results/)"
        )
    rows, step_rows, base_cache = [], [], {}
    single_gpu = _single_gpu_pattern()
    for path in sorted(log_dir.glob("Instruct-*.json")):
        hit = single_gpu.match(path.name)
        if hit:
            r, s = _read_single_gpu(path, hit, base_cache, roles)
            rows += r
            step_rows.append(s)
    for letter, rec in _released_settings("wandb").items():
        prefix = rec.released.token
        if (log_dir / f"{prefix}-acc.csv").exists() and (log_dir / f"{prefix}-length.csv").exists():
            r, s = _read_multi_gpu(log_dir, letter, roles)
            rows += r
            step_rows += s
    if not rows:
        raise AnalysisInputError(
            f"no released log files in {log_dir}: expected Instruct-*-Run*.json and/or "
            "{h100s,a100s}-{acc,length}.csv (the authors' results/ folder)"
        )
    curves = pd.DataFrame(rows).reindex(columns=CURVE_COLUMNS)
    steps = pd.DataFrame(step_rows).reindex(columns=STEP_COLUMNS)
    steps["seconds_per_step"] = steps["time_s"] / steps["steps"]
    return _tidy(curves), steps


def load_released(log_dir: str | Path) -> pd.DataFrame:
    """Tidy curves (CURVE_COLUMNS) from the authors' released result files in `log_dir`.

    Includes the base-model anchors at time_s = 0 for (a)-(c) (time-to-peak ignores t = 0).
    """
    return _released(log_dir)[0]


def load_released_steps(log_dir: str | Path) -> pd.DataFrame:
    """Per-run steps reached at the horizon (STEP_COLUMNS) from the released logs."""
    return _released(log_dir)[1]


# ----------------------------------------------------------------------------------------------
# our run directories


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    out = []
    for i, line in enumerate(lines):
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as err:
            if i == len(lines) - 1:  # a run killed mid-write leaves a partial last line
                break
            raise AnalysisInputError(
                f"{path}: line {i + 1} is not JSON ({err}); delete the run directory and rerun it"
            ) from err
    return out


def _grid_index(time_s: float, grid_s: float) -> int:
    # The trainer evaluates at the first step after each grid time, so floor() names the grid
    # point; the 1% slack absorbs float round-off just below a grid time.
    return int(math.floor(time_s / grid_s + 0.01))


def _one_run(run_dir: Path, letters: Mapping[str, str] | None, roles: Mapping) -> tuple[list, dict]:
    cfg = json.loads((run_dir / "config.json").read_text())
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
    for rec in _read_jsonl(run_dir / "eval.jsonl"):
        t, step = float(rec["time_s"]), int(rec.get("step", 0))
        k, t_grid = grid_of(t, step)
        if (k, rec["dataset"]) in seen:  # e.g. a final evaluation off the grid: keep the first
            continue
        seen.add((k, rec["dataset"]))
        for metric in METRICS:
            if rec.get(metric) is not None:
                rows.append(_row(ident, k, t_grid, t, step, rec["dataset"], metric, rec[metric], run_dir))
    step_row = {**_step_ident(ident), "source": str(run_dir)}
    mdf = pd.DataFrame(_read_jsonl(run_dir / "metrics.jsonl"))
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
        # Training-rollout lengths over time: the mean over the steps of each grid interval
        # ((k-1) grid, k grid], written as dataset "train".
        mdf["grid"] = [grid_of(t, st, ceil=True)[0] for t, st in zip(mdf["time_s"], mdf["step"], strict=True)]
        for k, grp in mdf.dropna(subset=["completion_len_mean"]).groupby("grid"):
            t_last, step_last = float(grp["time_s"].iloc[-1]), int(grp["step"].iloc[-1])
            t_grid = grid_of(t_last, step_last, ceil=True)[1]
            value = grp["completion_len_mean"].mean()
            rows.append(_row(ident, k, t_grid, t_last, step_last, "train", "completion_len_mean", value, run_dir))
    return rows, step_row


def _collect(root: str | Path, letters: Mapping[str, str] | None = None, sheet: str | Path | None = None):
    root = Path(root)
    roles = sheet_roles(sheet)
    how = (
        "train runs first (`snakemake` or `python -m pods train CONFIG`); each run directory "
        "needs config.json and eval.jsonl (docs/DESIGN.md)"
    )
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
    if not rows:
        raise AnalysisInputError(f"every eval.jsonl under {root} is empty: {how}")
    steps = pd.DataFrame(step_rows).reindex(columns=STEP_COLUMNS)
    steps["seconds_per_step"] = steps["time_s"] / steps["steps"]
    return _tidy(pd.DataFrame(rows).reindex(columns=CURVE_COLUMNS)), steps


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


def _tidy(df: pd.DataFrame) -> pd.DataFrame:
    df = df.astype({"n": int, "m": int, "grad_accum": int, "seed": int, "grid": int})
    df["role"] = df["role"].fillna("").astype(str)
    return df.sort_values(
        ["setting", "arm", "n", "m", "rule", "normalize", "seed", "dataset", "metric", "grid"], kind="stable"
    ).reset_index(drop=True)


def read_curves(path: str | Path) -> pd.DataFrame:
    """Read a curves.csv written by this module; AnalysisInputError if missing or empty."""
    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        raise AnalysisInputError(
            f"curves file {path} is missing or empty: produce it with `python -m pods.analysis "
            "collect --runs results/runs --out-dir results/tables` (our runs) or `... released "
            "--logs DIR --out-dir results/released` (the authors' logs)"
        )
    df = pd.read_csv(path, keep_default_na=False, na_values=[""])
    missing = set(CURVE_COLUMNS) - set(df.columns)
    if missing or df.empty:
        raise AnalysisInputError(
            f"{path} is not a curves table (missing columns {sorted(missing)} "
            "or no rows): regenerate it with `python -m pods.analysis collect`"
        )
    return df.astype({"setting": str, "seed": int, "grid": int}).assign(role=df["role"].fillna("").astype(str))


def read_steps(path: str | Path | None) -> pd.DataFrame | None:
    """Read a steps.csv; None when no path is given or the file is absent (figures show a note)."""
    if path is None or not Path(path).exists() or Path(path).stat().st_size == 0:
        return None
    steps = pd.read_csv(path, keep_default_na=False, na_values=[""]).astype({"setting": str})
    return steps.assign(role=steps["role"].fillna("").astype(str)) if "role" in steps else steps


# ----------------------------------------------------------------------------------------------
# statistics


def select(df: pd.DataFrame, **where) -> pd.DataFrame:
    """Rows whose columns equal the given values (a list/tuple value means "is in")."""
    mask = np.ones(len(df), dtype=bool)
    for col, val in where.items():
        mask &= df[col].isin(val).to_numpy() if isinstance(val, list | tuple | set) else (df[col] == val).to_numpy()
    return df[mask]


def mean_curve(df: pd.DataFrame, keys: Sequence[str] | None = None) -> pd.DataFrame:
    """Mean over seeds at each grid point, with SEM and the 1.96 x SEM band used in the paper.

    `keys`: columns that identify one curve (default: CONFIG_KEYS + dataset + metric present in df).
    Returns keys + grid, time_s, mean, sem, lo, hi, n_seeds. SEM uses ddof = 1 over the seeds that
    have that grid point; with a single seed SEM is 0 (the authors' plot.py convention).
    """
    if keys is None:
        keys = [k for k in (*CONFIG_KEYS, "dataset", "metric") if k in df.columns]
    keys = list(keys)
    g = df.groupby([*keys, "grid"], dropna=False, sort=True)
    out = g.agg(
        time_s=("time_s", "mean"), mean=("value", "mean"), std=("value", "std"), n_seeds=("value", "count")
    ).reset_index()
    out["sem"] = (out["std"] / np.sqrt(out["n_seeds"])).where(out["n_seeds"] > 1, 0.0)
    out["lo"] = out["mean"] - 1.96 * out["sem"]
    out["hi"] = out["mean"] + 1.96 * out["sem"]
    return out.drop(columns="std")


def _as_series(curve) -> pd.Series:
    if isinstance(curve, pd.DataFrame):
        curve = curve.set_index("time_s")["mean"]
    s = pd.Series(curve, dtype=float).dropna().sort_index()
    return s[s.index > 0]  # t = 0 is the base model: excluded (compute_pods_speedup_99)


def _first_reach(times_T: np.ndarray, values_B_T: np.ndarray, target_B: np.ndarray) -> np.ndarray:
    """First time at which each row is >= its target; inf where it never is (NaN never counts)."""
    hit_B_T = values_B_T >= target_B[:, None]
    first_B = np.where(hit_B_T.any(axis=1), hit_B_T.argmax(axis=1), -1)
    return np.where(first_B >= 0, times_T[np.maximum(first_B, 0)], np.inf)


def time_to_peak(baseline_curve, pods_curve, threshold: float = DEFAULT_THRESHOLD) -> dict:
    """PAPER.md §5: speed-up of PODS in reaching `threshold` x the baseline's peak mean accuracy.

    Curves: a Series of mean values indexed by time_s, or a `mean_curve` frame (time_s, mean).
    Returns peak, t_peak_s, target, t_baseline_s, t_pods_s, speedup, pods_reached. If PODS never
    reaches the target, t_pods_s = inf and speedup = 0.0; an empty baseline curve is a ValueError.
    """
    base, pods = _as_series(baseline_curve), _as_series(pods_curve)
    if base.empty:
        raise ValueError(
            "baseline curve has no points after t = 0: nothing to take a peak of; "
            "check that the baseline runs evaluated at least once after training began"
        )
    peak = float(base.max())
    target = threshold * peak
    t_base = float(_first_reach(base.index.to_numpy(float), base.to_numpy()[None], np.array([target]))[0])
    if pods.empty:
        t_pods = math.inf
    else:
        t_pods = float(_first_reach(pods.index.to_numpy(float), pods.to_numpy()[None], np.array([target]))[0])
    return {
        "peak": peak,
        "t_peak_s": float(base.idxmax()),
        "target": target,
        "t_baseline_s": t_base,
        "t_pods_s": t_pods,
        "speedup": t_base / t_pods if math.isfinite(t_pods) else 0.0,
        "pods_reached": math.isfinite(t_pods),
    }


def _seed_matrix(runs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(times_T, values_S_T) for one arm's tidy rows of a single metric/dataset; NaN = missing."""
    runs = runs[runs["time_s"] > 0]
    wide = runs.pivot_table(index="seed", columns="grid", values="value", aggfunc="first")
    times = runs.groupby("grid")["time_s"].mean().reindex(wide.columns)
    return times.to_numpy(float), wide.to_numpy(float)


def _bootstrap_means(values_S_T: np.ndarray, idx_B_S: np.ndarray) -> np.ndarray:
    pick_B_S_T = values_S_T[idx_B_S]
    count_B_T = np.sum(~np.isnan(pick_B_S_T), axis=1)
    total_B_T = np.nansum(pick_B_S_T, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count_B_T > 0, total_B_T / count_B_T, np.nan)


def bootstrap_speedup(
    baseline_runs: pd.DataFrame,
    pods_runs: pd.DataFrame,
    threshold: float = DEFAULT_THRESHOLD,
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
) -> dict:
    """Percentile bootstrap of the time-to-peak speed-up, resampling seeds within each arm.

    Inputs: tidy rows (seed, grid, time_s, value) of one metric and dataset per arm. Each resample
    recomputes both mean curves, the baseline peak and target, and the ratio (0 when PODS never
    reaches the target). Deterministic for a given `seed`. Returns ci_low, ci_high, samples.
    """
    t_base_T, base_S_T = _seed_matrix(baseline_runs)
    t_pods_T, pods_S_T = _seed_matrix(pods_runs)
    if base_S_T.size == 0 or pods_S_T.size == 0:
        return {"ci_low": math.nan, "ci_high": math.nan, "samples": np.array([])}
    rng = np.random.default_rng(seed)
    base_B_T = _bootstrap_means(base_S_T, rng.integers(0, len(base_S_T), (n_boot, len(base_S_T))))
    pods_B_T = _bootstrap_means(pods_S_T, rng.integers(0, len(pods_S_T), (n_boot, len(pods_S_T))))
    target_B = threshold * np.nanmax(base_B_T, axis=1)
    t_base_B = _first_reach(t_base_T, base_B_T, target_B)
    t_pods_B = _first_reach(t_pods_T, pods_B_T, target_B)
    speedup_B = np.where(np.isfinite(t_pods_B), t_base_B / t_pods_B, 0.0)
    alpha = (1 - ci) / 2
    lo, hi = np.quantile(speedup_B, [alpha, 1 - alpha])
    return {"ci_low": float(lo), "ci_high": float(hi), "samples": speedup_B}


def seconds_per_step(steps: pd.DataFrame, keys: Sequence[str] | None = None) -> pd.DataFrame:
    """Seconds per (global) step per configuration: mean(time) / mean(steps) over runs.

    This is the formula behind PAPER.md §4 (6 h / mean steps) and §5 (1800 s / mean global
    steps). Also averages the generation/update split per step where logged.
    """
    if keys is None:
        keys = [k for k in CONFIG_KEYS if k in steps.columns]
    g = steps.groupby(list(keys), dropna=False, sort=True)
    out = g.agg(
        time_s=("time_s", "mean"),
        steps=("steps", "mean"),
        n_runs=("steps", "count"),
        gen_s_per_step=("gen_s_per_step", "mean"),
        update_s_per_step=("update_s_per_step", "mean"),
    ).reset_index()
    out["seconds_per_step"] = out["time_s"] / out["steps"]
    return out


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


# ----------------------------------------------------------------------------------------------
# comparisons and the table


@dataclass(frozen=True)
class Comparison:
    """One Table 3 entry: baseline vs PODS rows of `setting` on `dataset` / `metric`."""

    setting: str
    dataset: str
    metric: str
    baseline: dict = field(default_factory=dict)  # column -> value selecting the baseline runs
    pods: dict = field(default_factory=dict)
    paper: float | None = None


def _label(sel: Mapping) -> str:
    parts = [str(sel.get("arm", "?"))]
    parts += [f"{k}={sel[k]}" for k in ("n", "m", "grad_accum") if k in sel]
    return " ".join(parts)


def main_comparison(df: pd.DataFrame, setting: str) -> tuple[dict, dict] | None:
    """Selectors for the baseline and PODS arms of a setting's Fig. 3 / Table 3 comparison: the
    runs whose sheet row has `role` baseline / pods (the `role` column). None if either is absent."""
    if "role" not in df.columns:
        return None
    sub = df[df["setting"].astype(str) == str(setting)]
    out = []
    for role in registry.ROLES:
        runs = sub[sub["role"] == role]
        if runs.empty:
            return None
        configs = runs[["arm", "n", "m", "grad_accum"]].drop_duplicates()
        if len(configs) > 1:
            raise AnalysisInputError(
                f"setting {setting}: runs of {len(configs)} configurations carry role {role!r}; "
                "the run sheet marks one row per role and setting"
            )
        arm, n, m, ga = configs.iloc[0]
        out.append({"arm": str(arm), "n": int(n), "m": int(m), "grad_accum": int(ga)})
    return out[0], out[1]


def primary_dataset(df: pd.DataFrame, setting: str) -> str:
    """The test set a setting is judged on (the first evaluation dataset of its config)."""
    sub = df[(df["setting"].astype(str) == str(setting)) & (df["dataset"] != "train")]
    prim = sub["primary_dataset"].dropna()
    return str(prim.mode().iloc[0]) if not prim.empty else str(sub["dataset"].mode().iloc[0])


def default_comparisons(df: pd.DataFrame, metric: str | None = None) -> list[Comparison]:
    """One comparison per setting that has both a baseline and a PODS arm (letters a-f first)."""
    out = []
    settings = sorted(df["setting"].astype(str).unique(), key=lambda s: (len(s) != 1, s))
    for s in settings:
        sel = main_comparison(df, s)
        if sel is None:
            continue
        out.append(
            Comparison(
                setting=s,
                dataset=primary_dataset(df, s),
                metric=metric or registry.setting_metric(s),
                baseline=sel[0],
                pods=sel[1],
                paper=registry.SETTINGS[s].paper_speedup if s in registry.SETTINGS else None,
            )
        )
    return out


def printed_speedup(x: float) -> float:
    """The ratio as the paper prints it: truncated to one decimal (28/16 = 1.75 is "1.7x")."""
    return math.floor(x * 10 + 1e-9) / 10 if math.isfinite(x) else x


def speedup_table(
    df: pd.DataFrame,
    comparisons: Iterable[Comparison] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    n_boot: int = 2000,
    boot_seed: int = 0,
) -> pd.DataFrame:
    """Table 3: one row per comparison, with the point estimate from the mean curves and a
    percentile bootstrap interval over seeds (`bootstrap_speedup`)."""
    if comparisons is None:
        comparisons = default_comparisons(df)
    rows = []
    for c in comparisons:
        sub = select(df, setting=c.setting, dataset=c.dataset, metric=c.metric)
        base_runs, pods_runs = select(sub, **c.baseline), select(sub, **c.pods)
        if base_runs.empty or pods_runs.empty:
            continue
        base_curve, pods_curve = mean_curve(base_runs), mean_curve(pods_runs)
        res = time_to_peak(base_curve, pods_curve, threshold)
        boot = bootstrap_speedup(base_runs, pods_runs, threshold, n_boot, boot_seed)
        grid = np.diff(np.sort(base_curve["time_s"].unique()))
        rows.append(
            {
                "setting": c.setting,
                "setting_name": base_runs["setting_name"].iloc[0],
                "baseline": _label(c.baseline),
                "pods": _label(c.pods),
                "dataset": c.dataset,
                "metric": c.metric,
                "grid_s": float(np.median(grid)) if grid.size else math.nan,
                "threshold": threshold,
                "peak_baseline": res["peak"],
                "t_peak_baseline_s": res["t_peak_s"],
                "target": res["target"],
                "t_baseline_s": res["t_baseline_s"],
                "t_pods_s": res["t_pods_s"],
                "speedup": printed_speedup(res["speedup"]),
                "speedup_exact": res["speedup"],
                "ci_low": boot["ci_low"],
                "ci_high": boot["ci_high"],
                "paper_speedup": c.paper if c.paper is not None else math.nan,
                "n_seeds_baseline": int(base_runs["seed"].nunique()),
                "n_seeds_pods": int(pods_runs["seed"].nunique()),
                "n_boot": n_boot,
                "note": "" if res["pods_reached"] else "PODS never reached the target: speedup 0",
            }
        )
    return pd.DataFrame(rows)


def _fmt(x, digits=2) -> str:
    if isinstance(x, float | np.floating):
        if math.isnan(x):
            return "-"
        if math.isinf(x):
            return "never"
        return f"{x:.{digits}f}"
    return str(x)


# fmt: off
_SHOWN = [  # (column, header, decimals) of the Markdown / LaTeX tables
    ("setting", "setting", 0), ("baseline", "baseline", 0), ("pods", "PODS", 0), ("metric", "metric", 0),
    ("grid_s", "grid (s)", 0), ("peak_baseline", "baseline peak", 4), ("t_baseline_s", "t baseline (s)", 0),
    ("t_pods_s", "t PODS (s)", 0), ("speedup", "speed-up", 1), ("speedup_exact", "exact", 2),
    ("ci_low", "95% CI low", 2), ("ci_high", "95% CI high", 2), ("paper_speedup", "paper", 1),
]
# fmt: on


def write_table(df: pd.DataFrame, stem: str | Path) -> list[Path]:
    """Write `stem`.csv (all columns), `stem`.md and `stem`.tex (the main columns)."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".csv"), stem.with_suffix(".md"), stem.with_suffix(".tex")]
    df.to_csv(paths[0], index=False)
    cols = [(c, h, d) for c, h, d in _SHOWN if c in df.columns]
    cells = [[_fmt(r[c], d) for c, _, d in cols] for _, r in df.iterrows()]
    head = [h for _, h, _ in cols]
    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    md += ["| " + " | ".join(row) + " |" for row in cells]
    thr = df["threshold"].iloc[0] if len(df) else DEFAULT_THRESHOLD
    md += ["", f"Speed-up: time for the baseline / time for PODS to first reach {thr:g} x the baseline's "
           "peak mean curve on the evaluation grid (t = 0 excluded), truncated to one decimal as the "
           "paper prints it; CI: 95% percentile bootstrap over seeds within each arm."]  # fmt: skip
    paths[1].write_text("\n".join(md) + "\n")

    def tex(s: str) -> str:
        return re.sub(r"([_%&#$])", r"\\\1", s)

    lines = [
        r"\begin{tabular}{" + "l" * 4 + "r" * (len(cols) - 4) + "}",
        r"\toprule",
        " & ".join(tex(h) for h in head) + r" \\",
        r"\midrule",
    ]
    lines += [" & ".join(tex(c) for c in row) + r" \\" for row in cells]
    lines += [r"\bottomrule", r"\end{tabular}"]
    paths[2].write_text("\n".join(lines) + "\n")
    return paths


def _arm_selector(rec: registry.Setting, arm: registry.Arm) -> dict:
    """{"arm", "n", "m", "grad_accum"} of a sheet row at paper scale (YAML values where the row
    does not override them)."""
    base = _paper_defaults(rec)
    ga = int(arm.extra_value("optim.grad_accum") or base["ga"])
    normalize = arm.extra_value("rollout.normalize") or base["norm"]
    return {"arm": arm_label(arm.n, arm.m, arm.rule, normalize, ga), "n": arm.n, "m": arm.m, "grad_accum": ga}


def released_comparisons(sheet: str | Path = PAPER_SHEET) -> list[Comparison]:
    """Table 3 for every setting with released logs: the `role` rows of the paper sheet, the
    dataset, metric and paper speed-up of the setting's record (PAPER.md §5)."""
    try:
        main = registry.main_arms(registry.read_sheet(sheet))
    except registry.SheetError as err:
        raise AnalysisInputError(str(err)) from None
    out = []
    for letter, rec in registry.SETTINGS.items():
        if rec.released is None or letter not in main:
            continue
        base, pods = (_arm_selector(rec, main[letter][role]) for role in registry.ROLES)
        out.append(Comparison(letter, rec.dataset, rec.metric, base, pods, rec.paper_speedup))
    return out


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


def _write_csv(df: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False)
    return path


def main(argv: Sequence[str] | None = None, prog: str = "python -m pods.analysis") -> int:
    """Entry point; ``prog`` is the program name shown in usage/help (``pods`` passes "pods")."""
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("released", help="re-analyse the authors' released logs (Table 3 a,b,c,e,f)")
    p.add_argument("--logs", required=True, help="folder with the authors' results/ files")
    p.add_argument("--out-dir", required=True, help="where curves.csv, steps.csv and time_to_peak.* are written")
    p.add_argument("--sheet", default=str(PAPER_SHEET), help="run sheet whose `role` rows are the comparisons")
    p = sub.add_parser("collect", help="curves.csv and steps.csv from our run directories")
    p.add_argument("--runs", required=True, help="root of our run directories (results/runs or a scale's root)")
    p.add_argument("--out-dir", required=True, help="where curves.csv and steps.csv are written")
    p.add_argument("--letters", help="NAME=LETTER,... paper letter of setting names not ending in _a.._f")
    p.add_argument("--sheet", help="run sheet: its `role` column marks each setting's baseline and PODS runs")
    p = sub.add_parser("time-to-peak", help="Table 3 with bootstrap CIs from a curves.csv")
    p.add_argument("--curves", required=True, help="a curves.csv written by collect or released")
    p.add_argument("--out-dir", required=True, help="where time_to_peak.* is written")
    p.add_argument("--metric", help="override the metric (default: both_accuracy for b, else accuracy)")
    for q in sub.choices.values():
        if q.prog.endswith(("released", "time-to-peak")):
            q.add_argument(
                "--threshold",
                type=float,
                default=DEFAULT_THRESHOLD,
                help=f"time to peak = first time a curve reaches this fraction of the baseline's peak "
                f"(default {DEFAULT_THRESHOLD})",
            )
            q.add_argument("--n-boot", type=int, default=2000, help="bootstrap resamples over seeds (default 2000)")
            q.add_argument("--boot-seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    args = ap.parse_args(argv)
    try:
        out = Path(args.out_dir)
        if args.cmd == "released":
            curves, steps = _released(args.logs, args.sheet)
            comparisons = released_comparisons(args.sheet)
            table = speedup_table(curves, comparisons, args.threshold, args.n_boot, args.boot_seed)
            written = [_write_csv(curves, out / "curves.csv"), _write_csv(steps, out / "steps.csv")]
            written += write_table(table, out / "time_to_peak")
        elif args.cmd == "collect":
            curves, steps = _collect(args.runs, _parse_letters(args.letters), args.sheet)
            written = [_write_csv(curves, out / "curves.csv"), _write_csv(steps, out / "steps.csv")]
            table = None
        else:
            curves = read_curves(args.curves)
            table = speedup_table(
                curves, default_comparisons(curves, args.metric), args.threshold, args.n_boot, args.boot_seed
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
        cols.append("paper_speedup")
        print(table[cols].to_string(index=False))
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
