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
If PODS never reaches T within its budget, t_pods = inf and the speed-up has no value (NaN, "never"
in the tables, `note` says so); the bootstrap reports the share of resamples in which PODS never
reached T (`p_pods_never`) and takes its intervals over the others. The baseline always reaches its
own target unless its curve is empty, which is an error. Beside this eval-grid speed-up the table
has three more to the same target (issue 10): (i) optimizer steps (curves' `step`), (ii) (i) x this
machine's seconds per step of each arm (steps.csv), (iii) (i) x the paper hardware's seconds per
step (the released logs of the same setting's arms, else a cost-model prediction; its source is a
column). An arm with one seed has no interval ("n/a (1 seed)").

Inputs are checked, and every error names the file and the line, row or key: accuracies outside
[0, 1] (a run logged in percent), broken or wrongly shaped JSON / CSV, missing keys; a comparison
whose baseline or PODS arm has no runs is refused, naming the setting and the arm.

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
    python -m pods.analysis collect --runs results/runs --out-dir results/tables --sheet config/runs_tiny.tsv
    python -m pods.analysis time-to-peak --curves results/tables/curves.csv --steps results/tables/steps.csv \
        --paper-steps results/released/steps.csv --out-dir results/tables
Exit codes: 0 ok, 2 missing or empty input (the message says how to produce it), 1 anything else.
"""

from __future__ import annotations

import argparse
import csv
import functools
import importlib.util
import json
import math
import re
import sys
import warnings
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


def _author_value(block: Mapping, key: str, where: str) -> float | None:
    """Mean of one metric list of the authors' JSON (None when absent/empty), range-checked."""
    values = block.get(key)
    if not values:
        return None
    if not isinstance(values, list):
        raise AnalysisInputError(f"{where} / {key}: expected a list of per-repeat values, got {type(values).__name__}")
    check = _fraction if _AUTHOR_METRICS[key] in FRACTION_METRICS else _number
    return float(np.mean([check(v, f"{where} / {key}", key) for v in values]))


def _author_log(path: Path) -> dict:
    """An authors' evaluation JSON {checkpoint-N | dataset: ...}, shape-checked."""
    log = _load_json(path, ": the authors' per-run evaluation files are JSON objects")
    if not isinstance(log, dict):
        raise AnalysisInputError(
            f"{path}: expected a JSON object {{'checkpoint-N': {{dataset: {{metric: [values]}}}}}}, "
            f"got {type(log).__name__}; is it one of the authors' results/ files?"
        )
    return log


def _blocks(path: Path, where: str, node) -> dict:
    """{dataset: {metric: [values]}} of one checkpoint (or the base file), shape-checked."""
    if not isinstance(node, dict):
        raise AnalysisInputError(
            f"{path}: {where}: expected {{dataset: {{metric: [values]}}}}, got {type(node).__name__}"
        )
    for ds, block in node.items():
        if not isinstance(block, dict):
            raise AnalysisInputError(
                f"{path}: {where} / {ds}: expected {{metric: [values]}}, got {type(block).__name__}"
            )
    return node


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
    log = _author_log(path)
    bad = [k for k in log if not re.fullmatch(r"checkpoint-\d+", str(k))]
    if bad:
        raise AnalysisInputError(f"{path}: keys {bad[:3]} are not checkpoint-N (a per-run evaluation file)")
    # The i-th checkpoint by step number was saved at (i + 1) grid intervals (scripts/plot.py).
    ckpts = sorted(log, key=lambda k: int(k.rsplit("-", 1)[-1]))
    ckpts = ckpts[: horizon_s // grid_s]
    rows = []
    for i, ck in enumerate(ckpts):
        t = (i + 1) * grid_s
        for ds, block in _blocks(path, ck, log[ck]).items():
            for key, metric in _AUTHOR_METRICS.items():
                value = _author_value(block, key, f"{path.name}: {ck} / {ds}")
                if value is not None:
                    step = int(ck.rsplit("-", 1)[-1])
                    rows.append(_row(ident, i + 1, t, t, step, _AUTHOR_DATASETS.get(ds, ds), metric, value, path.name))
    # t = 0: the untrained model, the same value for every seed (SEM 0 there, as in plot.py).
    if base_file not in base_cache:
        base_path = path.parent / base_file
        base_cache[base_file] = _blocks(base_path, "base model", _author_log(base_path)) if base_path.exists() else {}
    evaluated = {ds for ck in ckpts for ds in log[ck]}
    for ds, block in base_cache[base_file].items():
        if ds not in evaluated:  # base-llama.json also scores MATH-500, the Llama runs never did
            continue
        for key, metric in _AUTHOR_METRICS.items():
            value = _author_value(block, key, f"{base_file}: {ds}")
            if value is not None:
                rows.append(_row(ident, 0, 0.0, 0.0, 0, _AUTHOR_DATASETS.get(ds, ds), metric, value, base_file))
    step_at_horizon = int(ckpts[-1].rsplit("-", 1)[-1]) if ckpts else None
    step_row = {**_step_ident(ident), "time_s": float(horizon_s), "steps": step_at_horizon, "source": path.name}
    return rows, step_row


def _wandb_series(path: Path) -> dict:
    """{(run, key): [(eval time s, value), ...]} from a wandb CSV export (one run per cell)."""
    try:
        with path.open(newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader)
            body = list(reader)
    except (OSError, UnicodeDecodeError, StopIteration, csv.Error) as err:
        raise AnalysisInputError(f"{path}: not a readable CSV ({err or 'empty'}); expected a wandb export") from None
    if not header or not any(_WANDB_RUN.match(c) for c in header):
        raise AnalysisInputError(f"{path}: no 'data/RUN - KEY' columns: expected the authors' wandb export")
    out: dict = {}
    for j, col in enumerate(header):
        hit = _WANDB_RUN.match(col)
        if not hit or hit["key"].endswith(("__MIN", "__MAX")):
            continue
        series = []
        for i, r in enumerate(body, start=2):  # row 1 is the header
            if len(r) != len(header):
                raise AnalysisInputError(f"{path} row {i}: {len(r)} cells, the header has {len(header)}")
            if r[j]:
                where = f"{path} row {i}, column {col!r}"
                value = (
                    _fraction(r[j], where, "accuracy") if "accuracy" in hit["key"] else _number(r[j], where, "value")
                )
                series.append((_number(r[0], f"{path} row {i}, column {header[0]!r}", "time"), value))
        out[(hit["run"], hit["key"])] = series
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
    return df.astype({"setting": str, "seed": int, "grid": int}).assign(role=df["role"].fillna("").astype(str))


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


def _first_index(values_B_T: np.ndarray, target_B: np.ndarray) -> np.ndarray:
    """Index of the first grid point at which each row is >= its target; -1 where it never is."""
    hit_B_T = values_B_T >= target_B[:, None]  # NaN never counts
    return np.where(hit_B_T.any(axis=1), hit_B_T.argmax(axis=1), -1)


def _first_reach(times_T: np.ndarray, values_B_T: np.ndarray, target_B: np.ndarray) -> np.ndarray:
    """First time at which each row is >= its target; inf where it never is (NaN never counts)."""
    first_B = _first_index(values_B_T, target_B)
    return np.where(first_B >= 0, times_T[np.maximum(first_B, 0)], np.inf)


def time_to_peak(baseline_curve, pods_curve, threshold: float = DEFAULT_THRESHOLD) -> dict:
    """PAPER.md §5: speed-up of PODS in reaching `threshold` x the baseline's peak mean accuracy.

    Curves: a Series of mean values indexed by time_s, or a `mean_curve` frame (time_s, mean).
    Returns peak, t_peak_s, target, t_baseline_s, t_pods_s, speedup, pods_reached. If PODS never
    reaches the target, t_pods_s = inf and speedup = NaN (no number: the table says "never" and the
    bootstrap reports how often); an empty baseline curve is a ValueError.
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
        "speedup": t_base / t_pods if math.isfinite(t_pods) else math.nan,
        "pods_reached": math.isfinite(t_pods),
    }


@dataclass(frozen=True)
class _Arm:
    """One arm's runs as matrices over (seed S, grid point T > 0): values, optimizer steps and each
    seed's training seconds and steps at the end of the run (for seconds per step)."""

    seeds: np.ndarray
    times_T: np.ndarray
    values_S_T: np.ndarray
    steps_S_T: np.ndarray
    run_time_S: np.ndarray
    run_steps_S: np.ndarray


def _arm(runs: pd.DataFrame, run_steps: pd.DataFrame | None = None) -> _Arm:
    runs = runs[runs["time_s"] > 0]
    wide = runs.pivot_table(index="seed", columns="grid", values="value", aggfunc="first")
    if "step" in runs.columns:
        steps = runs.pivot_table(index="seed", columns="grid", values="step", aggfunc="first")
        steps = steps.reindex(index=wide.index, columns=wide.columns)
    else:  # tidy rows without optimizer steps: no steps-based speed-ups
        steps = pd.DataFrame(np.nan, index=wide.index, columns=wide.columns)
    times = runs.groupby("grid")["time_s"].mean().reindex(wide.columns)
    run_time = run_steps_n = np.full(len(wide), np.nan)
    if run_steps is not None and len(run_steps):
        per_seed = run_steps.groupby("seed")[["time_s", "steps"]].mean().reindex(wide.index)
        run_time, run_steps_n = per_seed["time_s"].to_numpy(float), per_seed["steps"].to_numpy(float)
    return _Arm(
        wide.index.to_numpy(), times.to_numpy(float), wide.to_numpy(float), steps.to_numpy(float), run_time, run_steps_n
    )


def _seed_matrix(runs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(times_T, values_S_T) for one arm's tidy rows of a single metric/dataset; NaN = missing."""
    arm = _arm(runs)
    return arm.times_T, arm.values_S_T


def _bootstrap_means(values_S_T: np.ndarray, idx_B_S: np.ndarray) -> np.ndarray:
    pick_B_S_T = values_S_T[idx_B_S]
    count_B_T = np.sum(~np.isnan(pick_B_S_T), axis=1)
    total_B_T = np.nansum(pick_B_S_T, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count_B_T > 0, total_B_T / count_B_T, np.nan)


def _at(matrix_B_T: np.ndarray, first_B: np.ndarray) -> np.ndarray:
    """matrix[b, first[b]], NaN where first[b] = -1 (never reached)."""
    picked = matrix_B_T[np.arange(len(first_B)), np.maximum(first_B, 0)]
    return np.where(first_B >= 0, picked, np.nan)


def _sps(run_time_B_S: np.ndarray, run_steps_B_S: np.ndarray) -> np.ndarray:
    """Seconds per step = mean(training seconds) / mean(steps) over runs (PAPER.md §4 footnote)."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # no steps.csv: NaN, not a warning per resample
        return np.nanmean(run_time_B_S, axis=-1) / np.nanmean(run_steps_B_S, axis=-1)


def _speedups(base: _Arm, pods: _Arm, idx_base_B_S, idx_pods_B_S, threshold, paper_sps=(math.nan, math.nan)) -> dict:
    """The three speed-ups (and the eval-grid one) of each resample of seeds (rows of the idx arrays)."""
    base_B_T, pods_B_T = (
        _bootstrap_means(base.values_S_T, idx_base_B_S),
        _bootstrap_means(pods.values_S_T, idx_pods_B_S),
    )
    target_B = threshold * np.nanmax(base_B_T, axis=1)
    first_base_B, first_pods_B = _first_index(base_B_T, target_B), _first_index(pods_B_T, target_B)
    never_B = first_pods_B < 0
    t_base_B, t_pods_B = (
        _at(base.times_T[None].repeat(len(target_B), 0), first_base_B),
        _at(pods.times_T[None].repeat(len(target_B), 0), first_pods_B),
    )
    steps_base_B = _at(_bootstrap_means(base.steps_S_T, idx_base_B_S), first_base_B)
    steps_pods_B = _at(_bootstrap_means(pods.steps_S_T, idx_pods_B_S), first_pods_B)
    sps_base_B = _sps(base.run_time_S[idx_base_B_S], base.run_steps_S[idx_base_B_S])
    sps_pods_B = _sps(pods.run_time_S[idx_pods_B_S], pods.run_steps_S[idx_pods_B_S])
    with np.errstate(invalid="ignore", divide="ignore"):
        steps_ratio_B = steps_base_B / steps_pods_B
        return {
            "speedup": t_base_B / t_pods_B,
            "speedup_steps": steps_ratio_B,
            "speedup_wall": steps_ratio_B * sps_base_B / sps_pods_B,
            "speedup_paper_hw": steps_ratio_B * paper_sps[0] / paper_sps[1],
            "never": never_B,
            "steps_baseline": steps_base_B,
            "steps_pods": steps_pods_B,
            "sps_baseline": sps_base_B,
            "sps_pods": sps_pods_B,
        }


def _interval(samples_B: np.ndarray, ci: float) -> tuple[float, float]:
    """Percentile interval over the resamples with a number (PODS reached the target)."""
    finite = samples_B[np.isfinite(samples_B)]
    if finite.size == 0:
        return math.nan, math.nan
    alpha = (1 - ci) / 2
    lo, hi = np.quantile(finite, [alpha, 1 - alpha])
    return float(lo), float(hi)


def bootstrap_speedup(
    baseline_runs: pd.DataFrame,
    pods_runs: pd.DataFrame,
    threshold: float = DEFAULT_THRESHOLD,
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
    baseline_steps: pd.DataFrame | None = None,
    pods_steps: pd.DataFrame | None = None,
    paper_sps: tuple[float, float] = (math.nan, math.nan),
) -> dict:
    """Percentile bootstrap of the speed-ups, resampling seeds within each arm.

    Inputs: tidy rows (seed, grid, time_s, step, value) of one metric and dataset per arm, and
    optionally each arm's per-run rows of steps.csv (time_s, steps: seconds per step) and the
    paper-hardware seconds per step (baseline, PODS). Each resample recomputes both mean curves, the
    baseline peak and target, and (i) the eval-grid time ratio `samples`, (ii) the steps-to-target
    ratio, (iii) the wall-clock ratio (steps x this machine's s/step), (iv) the paper-hardware ratio.
    A resample in which PODS never reaches the target has no ratio (NaN); `p_never` is their share
    and the intervals are over the others. Deterministic for a given `seed`.
    Returns ci_low, ci_high, samples, p_never and {name}_ci_low/high for speedup_steps,
    speedup_wall, speedup_paper_hw.
    """
    base, pods = _arm(baseline_runs, baseline_steps), _arm(pods_runs, pods_steps)
    names = ("speedup_steps", "speedup_wall", "speedup_paper_hw")
    if base.values_S_T.size == 0 or pods.values_S_T.size == 0:
        out = {"ci_low": math.nan, "ci_high": math.nan, "samples": np.array([]), "p_never": math.nan}
        return out | {f"{n}_ci_{e}": math.nan for n in names for e in ("low", "high")}
    rng = np.random.default_rng(seed)
    idx_base = rng.integers(0, len(base.seeds), (n_boot, len(base.seeds)))
    idx_pods = rng.integers(0, len(pods.seeds), (n_boot, len(pods.seeds)))
    res = _speedups(base, pods, idx_base, idx_pods, threshold, paper_sps)
    lo, hi = _interval(res["speedup"], ci)
    out = {"ci_low": lo, "ci_high": hi, "samples": res["speedup"], "p_never": float(res["never"].mean())}
    for name in names:
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = _interval(res[name], ci)
    return out


def point_speedups(
    baseline_runs: pd.DataFrame,
    pods_runs: pd.DataFrame,
    threshold: float = DEFAULT_THRESHOLD,
    baseline_steps: pd.DataFrame | None = None,
    pods_steps: pd.DataFrame | None = None,
    paper_sps: tuple[float, float] = (math.nan, math.nan),
) -> dict:
    """The point estimates of `bootstrap_speedup`'s ratios, from all seeds: steps to the target
    (mean optimizer step at the first grid point where each mean curve reaches it), seconds per step
    per arm (mean training seconds / mean steps over runs), and the three speed-ups."""
    base, pods = _arm(baseline_runs, baseline_steps), _arm(pods_runs, pods_steps)
    all_base = np.arange(len(base.seeds))[None]
    all_pods = np.arange(len(pods.seeds))[None]
    res = _speedups(base, pods, all_base, all_pods, threshold, paper_sps)
    return {k: (bool(v[0]) if k == "never" else float(v[0])) for k, v in res.items()}


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
    """One comparison per setting whose runs carry the roles baseline and pods (letters first).

    A setting with runs of one role but none of the other is refused (AnalysisInputError naming the
    setting and the missing arm), never dropped in silence.
    """
    out = []
    settings = sorted(df["setting"].astype(str).unique(), key=lambda s: (len(s) != 1, s))
    for s in settings:
        roles = set(df.loc[df["setting"].astype(str) == s, "role"]) if "role" in df.columns else set()
        present = [r for r in registry.ROLES if r in roles]
        if len(present) == 1:
            missing = next(r for r in registry.ROLES if r not in roles)
            raise AnalysisInputError(
                f"setting {s}: runs of the {present[0]} arm but none of the {missing} arm (run-sheet role "
                f"{missing!r}): train it, or remove the setting's `role` rows from the run sheet"
            )
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


@functools.cache
def _cost_model():
    """benchmarks/cost_model.py (a script, not a package module), loaded by path."""
    path = registry.REPO_ROOT / "benchmarks" / "cost_model.py"
    spec = importlib.util.spec_from_file_location("_pods_cost_model", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def paper_seconds_per_step(setting: str, paper_steps: pd.DataFrame | None = None) -> tuple[float, float, str]:
    """(baseline s/step, PODS s/step, source) of a setting's arms on the paper's hardware.

    First the authors' released logs (`paper_steps`: the steps.csv of `released`, whose `role`
    column marks the arms of the paper sheet); else a prediction of the linear cost model
    c + g1 n + u1 m fitted to (a)'s eight released s/step values on 1 L40S (benchmarks/cost_model.py,
    `invert_paper`), at the n, m of the setting's paper arms, for single-GPU settings without
    gradient accumulation; else NaN.
    """
    if paper_steps is not None and "role" in paper_steps.columns:
        sub = paper_steps[paper_steps["setting"].astype(str) == str(setting)]
        arms = [sub[sub["role"] == role] for role in registry.ROLES]
        if all(len(a) and a["steps"].notna().any() for a in arms):
            sps = [float(a["time_s"].mean() / a["steps"].mean()) for a in arms]
            labels = [_label({"arm": a["arm"].iloc[0], "n": a["n"].iloc[0], "m": a["m"].iloc[0]}) for a in arms]
            return (
                sps[0],
                sps[1],
                f"released logs ({setting}): {labels[0]} vs {labels[1]}, {len(arms[0])}+{len(arms[1])} runs",
            )
    try:
        main = registry.main_arms(registry.read_sheet(PAPER_SHEET)).get(setting)
    except registry.SheetError:
        main = None
    if main is None or any(a.extra_value("optim.grad_accum") for a in main.values()):
        return math.nan, math.nan, "none: no released s/step and no single-GPU paper arms to predict"
    fit = next(r for r in _cost_model().invert_paper() if r["setting"] == "a")
    c, g1, u1 = fit["fixed_s"], fit["g1_s"], fit["u1_s"]
    b, q = main["baseline"], main["pods"]
    sps = [c + g1 * a.n + u1 * a.m for a in (b, q)]
    source = (
        f"prediction: cost model c + g1 n + u1 m (c={c:.3g} s, g1={g1:.3g} s, u1={u1:.3g} s; fitted to (a)'s "
        f"released s/step on 1xL40S, benchmarks/cost_model.py) at n/m {b.n}/{b.m} vs {q.n}/{q.m}"
    )
    return sps[0], sps[1], source


def _select_steps(steps: pd.DataFrame | None, setting: str, sel: Mapping) -> pd.DataFrame | None:
    if steps is None:
        return None
    keys = {k: v for k, v in sel.items() if k in steps.columns}
    return select(steps[steps["setting"].astype(str) == str(setting)], **keys)


def speedup_table(
    df: pd.DataFrame,
    comparisons: Iterable[Comparison] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    n_boot: int = 2000,
    boot_seed: int = 0,
    steps: pd.DataFrame | None = None,
    paper_steps: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Table 3: one row per comparison. Four speed-ups, each a point estimate from the mean curves
    with a 95% percentile bootstrap interval over seeds (`bootstrap_speedup`):

    - `speedup`: eval-grid training time to the target (the paper's definition, PAPER.md §5);
    - `speedup_steps` (i): optimizer steps to the target;
    - `speedup_wall` (ii): (i) x this machine's seconds per step of each arm (`steps`: steps.csv);
    - `speedup_paper_hw` (iii): (i) x the paper hardware's seconds per step (`paper_seconds_per_step`:
      the released logs, else the cost model's prediction; `paper_sps_source` says which).

    `p_pods_never`: share of resamples in which PODS never reached the target (those have no ratio).
    A comparison of a setting present in `df` whose baseline or PODS runs are missing is refused
    (AnalysisInputError); a setting absent from `df` altogether is skipped. With one seed in an arm
    there is no interval: the CI columns are NaN and the tables print "n/a (1 seed)".
    """
    if comparisons is None:
        comparisons = default_comparisons(df)
    rows = []
    for c in comparisons:
        if not (df["setting"].astype(str) == str(c.setting)).any():
            continue
        sub = select(df, setting=c.setting, dataset=c.dataset, metric=c.metric)
        base_runs, pods_runs = select(sub, **c.baseline), select(sub, **c.pods)
        for which, runs, sel in (("baseline", base_runs, c.baseline), ("PODS", pods_runs, c.pods)):
            if runs.empty:
                raise AnalysisInputError(
                    f"setting {c.setting}: no runs of the {which} arm ({_label(sel)}) on {c.dataset} / "
                    f"{c.metric}: train that arm (or fix its row of the run sheet); a comparison with a "
                    "missing arm has no speed-up"
                )
        base_steps, pods_steps = _select_steps(steps, c.setting, c.baseline), _select_steps(steps, c.setting, c.pods)
        paper_sps = paper_seconds_per_step(c.setting, paper_steps)
        base_curve, pods_curve = mean_curve(base_runs), mean_curve(pods_runs)
        res = time_to_peak(base_curve, pods_curve, threshold)
        point = point_speedups(base_runs, pods_runs, threshold, base_steps, pods_steps, paper_sps[:2])
        n_base, n_pods = int(base_runs["seed"].nunique()), int(pods_runs["seed"].nunique())
        boot = bootstrap_speedup(
            base_runs, pods_runs, threshold, n_boot, boot_seed,
            baseline_steps=base_steps, pods_steps=pods_steps, paper_sps=paper_sps[:2],
        )  # fmt: skip
        one_seed = min(n_base, n_pods) < 2
        if one_seed:  # a resample of one seed is that seed: no interval
            boot = {k: (math.nan if k.endswith(("_low", "_high")) else v) for k, v in boot.items()}
        grid = np.diff(np.sort(base_curve["time_s"].unique()))
        note = []
        if not res["pods_reached"]:
            note.append("PODS never reached the target")
        if one_seed:
            note.append("n/a (1 seed): no interval")
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
                "steps_baseline": point["steps_baseline"],
                "steps_pods": point["steps_pods"],
                "speedup_steps": point["speedup_steps"],
                "speedup_steps_ci_low": boot["speedup_steps_ci_low"],
                "speedup_steps_ci_high": boot["speedup_steps_ci_high"],
                "sps_baseline": point["sps_baseline"],
                "sps_pods": point["sps_pods"],
                "speedup_wall": point["speedup_wall"],
                "speedup_wall_ci_low": boot["speedup_wall_ci_low"],
                "speedup_wall_ci_high": boot["speedup_wall_ci_high"],
                "paper_sps_baseline": paper_sps[0],
                "paper_sps_pods": paper_sps[1],
                "paper_sps_source": paper_sps[2],
                "speedup_paper_hw": point["speedup_paper_hw"],
                "speedup_paper_hw_ci_low": boot["speedup_paper_hw_ci_low"],
                "speedup_paper_hw_ci_high": boot["speedup_paper_hw_ci_high"],
                "p_pods_never": boot["p_never"],
                "paper_speedup": c.paper if c.paper is not None else math.nan,
                "n_seeds_baseline": n_base,
                "n_seeds_pods": n_pods,
                "n_boot": n_boot,
                "note": "; ".join(note),
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
# The three speed-ups: (header, point column, CI prefix or None, decimals).
_THREE = [
    ("steps to target (base / PODS)", ("steps_baseline", "steps_pods"), None, 0),
    ("(i) steps speed-up [95% CI]", "speedup_steps", "speedup_steps", 2),
    ("s/step here (base / PODS)", ("sps_baseline", "sps_pods"), None, 2),
    ("(ii) wall-clock here [95% CI]", "speedup_wall", "speedup_wall", 2),
    ("s/step paper hw (base / PODS)", ("paper_sps_baseline", "paper_sps_pods"), None, 2),
    ("(iii) paper-hw prediction [95% CI]", "speedup_paper_hw", "speedup_paper_hw", 2),
]
# fmt: on


def _one_seed(row) -> bool:
    return min(row.get("n_seeds_baseline", 2), row.get("n_seeds_pods", 2)) < 2


def _ci_cell(row, col: str, digits: int) -> str:
    """A CI bound; "n/a (1 seed)" where an arm has one seed (no interval can be computed)."""
    value = row.get(col, math.nan)
    if isinstance(value, float) and math.isnan(value) and _one_seed(row):
        return "n/a (1 seed)"
    return _fmt(value, digits)


def _three_cells(row) -> list[str]:
    cells = [str(row["setting"])]
    for _, point, ci, digits in _THREE:
        if isinstance(point, tuple):
            cells.append(" / ".join(_fmt(float(row.get(c, math.nan)), digits) for c in point))
            continue
        text = "never" if not row.get("t_pods_s", 0) < math.inf else _fmt(float(row.get(point, math.nan)), digits)
        if _one_seed(row):
            text += " [n/a (1 seed)]"
        else:
            lo, hi = (_fmt(float(row.get(f"{ci}_ci_{e}", math.nan)), digits) for e in ("low", "high"))
            text += f" [{lo}, {hi}]"
        cells.append(text)
    cells.append(_fmt(float(row.get("p_pods_never", math.nan)), 2))
    cells.append(_fmt(float(row.get("paper_speedup", math.nan)), 1))
    return cells


def write_table(df: pd.DataFrame, stem: str | Path) -> list[Path]:
    """Write `stem`.csv (all columns), `stem`.md and `stem`.tex (the main columns; the Markdown also
    the three speed-ups with their inputs)."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".csv"), stem.with_suffix(".md"), stem.with_suffix(".tex")]
    df.to_csv(paths[0], index=False)
    cols = [(c, h, d) for c, h, d in _SHOWN if c in df.columns]
    cells = [
        [_ci_cell(r, c, d) if c in ("ci_low", "ci_high") else _fmt(r[c], d) for c, _, d in cols]
        for _, r in df.iterrows()
    ]
    head = [h for _, h, _ in cols]
    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    md += ["| " + " | ".join(row) + " |" for row in cells]
    thr = df["threshold"].iloc[0] if len(df) else DEFAULT_THRESHOLD
    md += ["", f"Speed-up: time for the baseline / time for PODS to first reach {thr:g} x the baseline's "
           "peak mean curve on the evaluation grid (t = 0 excluded), truncated to one decimal as the "
           "paper prints it; CI: 95% percentile bootstrap over seeds within each arm."]  # fmt: skip
    if len(df) and "speedup_steps" in df.columns:
        head3 = ["setting"] + [h for h, *_ in _THREE] + ["PODS never (share of resamples)", "paper"]
        md += ["", "### Three speed-ups", "", "| " + " | ".join(head3) + " |", "|" + "---|" * len(head3)]
        md += ["| " + " | ".join(_three_cells(r)) + " |" for _, r in df.iterrows()]
        md += ["", "(i) optimizer steps for the baseline / for PODS to first reach the same target (steps: the mean "
               "over seeds of the step at that evaluation); (ii) (i) x the seconds per training step measured "
               "for each arm here (mean training seconds / mean steps over runs); (iii) (i) x the seconds per "
               "step of the setting's arms on the paper's hardware, a prediction: sources below. Intervals: "
               "95% percentile bootstrap over seeds, over the resamples in which PODS reached the target; "
               "'PODS never' is the share of resamples in which it did not.", ""]  # fmt: skip
        md += [f"- ({r['setting']}) paper s/step: {r['paper_sps_source']}" for _, r in df.iterrows()]
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


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pods.analysis", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("released", help="re-analyse the authors' released logs (Table 3 a,b,c,e,f)")
    p.add_argument("--logs", required=True, help="folder with the authors' results/ files")
    p.add_argument("--out-dir", required=True)
    p.add_argument("--sheet", default=str(PAPER_SHEET), help="run sheet whose `role` rows are the comparisons")
    p = sub.add_parser("collect", help="curves.csv and steps.csv from our run directories")
    p.add_argument("--runs", required=True)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--letters", help="NAME=LETTER,... paper letter of setting names not ending in _a.._f")
    p.add_argument("--sheet", help="run sheet: its `role` column marks each setting's baseline and PODS runs")
    p = sub.add_parser("time-to-peak", help="Table 3 with bootstrap CIs from a curves.csv")
    p.add_argument("--curves", required=True)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--metric", help="override the metric (default: the setting record's, pods.registry)")
    p.add_argument("--steps", help="steps.csv of the same runs: this machine's seconds per step, speed-up (ii)")
    p.add_argument(
        "--paper-steps",
        help="steps.csv of `released` (the authors' logs): paper-hardware seconds per step, speed-up (iii); "
        "settings without released logs use the cost model (benchmarks/cost_model.py)",
    )
    for q in sub.choices.values():
        if q.prog.endswith(("released", "time-to-peak")):
            q.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD)
            q.add_argument("--n-boot", type=int, default=2000)
            q.add_argument("--boot-seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        out = Path(args.out_dir)
        if args.cmd == "released":
            curves, steps = _released(args.logs, args.sheet)
            comparisons = released_comparisons(args.sheet)
            # The authors' runs are their own "this machine" and paper hardware: (ii) = (iii).
            table = speedup_table(curves, comparisons, args.threshold, args.n_boot, args.boot_seed, steps, steps)
            written = [_write_csv(curves, out / "curves.csv"), _write_csv(steps, out / "steps.csv")]
            written += write_table(table, out / "time_to_peak")
        elif args.cmd == "collect":
            curves, steps = _collect(args.runs, _parse_letters(args.letters), args.sheet)
            written = [_write_csv(curves, out / "curves.csv"), _write_csv(steps, out / "steps.csv")]
            table = None
        else:
            curves = read_curves(args.curves)
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
