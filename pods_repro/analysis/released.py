"""The authors' released evaluation logs -> tidy curves and steps tables (`read_released`).

This module owns the file formats of the authors' results/ folder (github.com/YixuanEvenXu/pods,
commit 187f43b): the per-run JSONs of the single-GPU settings and the wandb CSV exports of the
multi-GPU ones, their names for datasets, metrics and rules, and how their evaluations map to our
evaluation grid. The tables follow the contract of pods_repro.analysis.tidy; the roles come from the paper sheet.

The authors' names map as ans_acc -> accuracy, for_acc -> format_accuracy, both_acc ->
both_accuracy, lengths -> completion_len_mean, and their dataset math500 -> math (pods_repro.data's
MATH-500 test set); per-run values are the mean of the 5 repeated evaluations, as in their
scripts/plot.py.

How the released logs map to the grid (checked against the paper's Table 3 and the authors' plotting by tests/analysis/test_analysis.py):
- (a)/(c) and the n/m/rule sweeps: checkpoints sorted by step number, the i-th at (i+1) x 0.5 h,
  kept up to 6 h (two m=2 runs have 14 checkpoints); (b) Llama: (i+1) x 10 min up to 1.5 h. This is
  the authors' plot.py. Base-model files give the t = 0 point.
- (e)/(f): wandb exports; for each seed the evaluation nearest to each target minute 0, 2, ..., 30
  (the authors' plot-h100s/a100s.py). Accuracy uses the seeds of the accuracy file, lengths those
  of the length file (A100 GA: seed 15 vs 24). The authors' script keeps only seeds in both files
  (4 A100 GA seeds: peak 87.04%); the paper's numbers (87.24%, 1.75x before the paper's
  truncation to 1.7x) come from all 5 accuracy seeds, which is what this module reproduces.
- Seconds per step = horizon / mean(steps at the horizon) over runs (arXiv 2504.13818 §4 footnote).
- (e)/(f) optimizer steps: the exports carry wandb's `_step`, which counts `wandb.log` calls, not micro-
  or optimizer steps (`optimizer_steps`). At the authors' pinned trainer every optimizer step logs
  3 x GA + 5 times and every timed evaluation 4 x B + 1 times (B evaluation batches), which gives a whole
  number of optimizer steps at every one of the 357 evaluation rows; the authors' plotting (and the
  paper's Fig. 3(e)/(f) bars) read `_step / GA`, which overstates the steps 3.5-15x (docs/fidelity.md,
  "the released (e)/(f) step counter").
"""

from __future__ import annotations

import csv
import re
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from pods_repro import registry
from pods_repro.analysis import command, released_logs
from pods_repro.analysis.speedups import print_table, released_comparisons, speedup_table, write_table
from pods_repro.analysis.tidy import (
    CURVE_COLUMNS,
    FRACTION_METRICS,
    PAPER_SHEET,
    STEP_COLUMNS,
    AnalysisInputError,
    as_fraction,
    as_number,
    check_grids,
    curve_row,
    load_json,
    paper_defaults,
    run_ident,
    sheet_roles,
    step_ident,
    tidy_frame,
)


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


# pods_repro.data calls the MATH-500 test set "math"; AMC23 keeps its name (evaluated, never reported).
_AUTHOR_DATASETS = {"math500": "math"}
_AUTHOR_METRICS = {
    "ans_acc": "accuracy",
    "for_acc": "format_accuracy",
    "both_acc": "both_accuracy",
    "lengths": "completion_len_mean",
}
_AUTHOR_RULES = {None: "max_variance", "MaxR": "max_reward", "Rand": "random"}


def _author_value(block: Mapping, key: str, where: str) -> float | None:
    """Mean of one metric list of the authors' JSON (None when absent/empty), range-checked."""
    values = block.get(key)
    if not values:
        return None
    if not isinstance(values, list):
        raise AnalysisInputError(f"{where} / {key}: expected a list of per-repeat values, got {type(values).__name__}")
    check = as_fraction if _AUTHOR_METRICS[key] in FRACTION_METRICS else as_number
    return float(np.mean([check(v, f"{where} / {key}", key) for v in values]))


def _author_log(path: Path) -> dict:
    """An authors' evaluation JSON {checkpoint-N | dataset: ...}, shape-checked."""
    log = load_json(path, ": the authors' per-run evaluation files are JSON objects")
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


def _read_single_gpu(path: Path, match: re.Match, base_cache: dict, roles: Mapping) -> tuple[list, dict]:
    rec = next(s for s in _released_settings("json").values() if s.released.token == match["ds"])
    letter, name, primary, base_file = rec.letter, rec.name, rec.dataset, rec.released.base_file
    grid_s, horizon_s = rec.grid_s, rec.horizon_s
    n, m, rule = int(match["n"]), int(match["m"]), _AUTHOR_RULES[match["rule"]]
    role = roles.get((letter, _released_run_name(rec, n, m, rule, "after", 1)), "")
    ident = run_ident(letter, name, n, m, rule, "after", 1, int(match["run"]), primary, role)
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
                    rows.append(
                        curve_row(ident, i + 1, t, t, step, _AUTHOR_DATASETS.get(ds, ds), metric, value, path.name)
                    )
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
                rows.append(curve_row(ident, 0, 0.0, 0.0, 0, _AUTHOR_DATASETS.get(ds, ds), metric, value, base_file))
    step_at_horizon = int(ckpts[-1].rsplit("-", 1)[-1]) if ckpts else None
    step_row = {**step_ident(ident), "time_s": float(horizon_s), "steps": step_at_horizon, "source": path.name}
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
    if not body:
        raise AnalysisInputError(
            f"{path}: a header and no rows: the wandb export holds no evaluation; export the runs' history again"
        )
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
                    as_fraction(r[j], where, "accuracy")
                    if "accuracy" in hit["key"]
                    else as_number(r[j], where, "value")
                )
                series.append((as_number(r[0], f"{path} row {i}, column {header[0]!r}", "time"), value))
        if not series:
            raise AnalysisInputError(f"{path}: column {col!r} holds no value; export the runs' history again")
        out[(hit["run"], hit["key"])] = series
    return out


def _nearest(series: list, target_s: float) -> tuple[float, float]:
    """The (time, value) of `series` closest in time to `target_s` (the authors' alignment)."""
    times = np.array([t for t, _ in series])
    return series[int(np.abs(times - target_s).argmin())]


# wandb.log calls of the authors' multi-GPU trainer (open-r1's GRPOTrainer with the PODS changes, at the TRL
# commit its setup pins): per micro-step `_prepare_inputs`, `compute_loss` and `_get_per_token_logps` each log
# their profiling time; per optimizer step each reward function (accuracy, format, tag_count) logs once, then
# the Trainer's metrics and the completions table; per timed evaluation, per batch `_prepare_inputs` and the
# three reward functions, then the evaluation's own log.
_CALLS_PER_MICRO_STEP = 3
_REWARD_FUNCS = 3


def optimizer_steps(step_values, ga: int, where: str = "") -> list[int]:
    """Optimizer steps completed at each evaluation row of one released multi-GPU run, from its wandb
    `_step` values in time order.

    Evaluation j (1-based), run after optimizer step N, is logged at `_step = N (3 GA + 5) + j (4 B + 1) - 2`
    (`_step` counts from 0, and step N's completions table is logged after its evaluation). B, the number
    of evaluation batches, follows from the first row, which comes right after step 1 (the timed
    evaluation's clock starts at 0). The evaluation that the Trainer's final log triggers after the 40-min
    stop comes after that table and that log: remainder +2 instead of -2, on the last row only.
    AnalysisInputError when a row fits neither (the file is not such a run's export).
    """
    s = [int(round(float(v))) for v in step_values]
    if not s:
        return []
    if any(b <= a for a, b in zip(s, s[1:], strict=False)):
        raise AnalysisInputError(f"{where}: _step values are not increasing in time: not one run's evaluations")
    per_step = _CALLS_PER_MICRO_STEP * ga + _REWARD_FUNCS + 2
    per_eval = s[0] + 2 - per_step
    if per_eval < _REWARD_FUNCS + 2 or (per_eval - 1) % (_REWARD_FUNCS + 1):
        raise AnalysisInputError(
            f"{where}: the first evaluation's _step {s[0]} does not follow optimizer step 1 of a GA={ga} run "
            "(3 x GA + 5 calls per step, 4 x batches + 1 per evaluation): check the run name's -gaN"
        )
    out = []
    for j, value in enumerate(s, start=1):
        steps, rem = divmod(value + 2 - j * per_eval, per_step)
        if rem and not (rem == 2 and j == len(s)):
            raise AnalysisInputError(
                f"{where}: evaluation {j} (_step {value}) is not a whole optimizer step of a GA={ga} run "
                f"(remainder {rem} of {per_step}): not the authors' logging pattern"
            )
        out.append(steps)
    if out[0] < 1 or any(b < a for a, b in zip(out, out[1:], strict=False)):
        raise AnalysisInputError(f"{where}: optimizer steps {out} do not rise from 1: not one run's evaluations")
    return out


def _read_multi_gpu(log_dir: Path, letter: str, roles: Mapping) -> tuple[list, list]:
    rec = registry.SETTINGS[letter]
    prefix, name, primary = rec.released.token, rec.name, rec.dataset
    grid_s, horizon_s = rec.grid_s, rec.horizon_s
    targets_s = np.arange(0, horizon_s + 1, grid_s)
    rows, step_rows = [], []
    # Each file is read with its own seeds: the accuracy file has A100 GA seed 15, the length
    # file seed 24 instead. The authors' plot-a100s.py keeps only seeds in both, but the paper's
    # numbers (arXiv 2504.13818 Table 3, Fig. 3(f): GA peak 87.24%) use all five accuracy seeds.
    for kind, key in (("acc", "eval/rewards/accuracy_reward/mean"), ("length", "eval/completions/mean_length")):
        metric = "accuracy" if kind == "acc" else "completion_len_mean"
        series = _wandb_series(log_dir / f"{prefix}-{kind}.csv")
        for run in sorted(r for r, k in series if k == key and (r, "_step") in series):
            hit = _WANDB_RUN.match(f"data/{run} - x")
            n, m, ga = int(hit["n"]), int(hit["m"]), int(hit["ga"])
            role = roles.get((letter, _released_run_name(rec, n, m, "max_variance", "after", ga)), "")
            ident = run_ident(letter, name, n, m, "max_variance", "after", ga, int(hit["seed"]), primary, role)
            src = f"{prefix}-{kind}.csv"
            calls = series[(run, "_step")]
            steps = optimizer_steps([c for _, c in calls], ga, f"{src}, run {run}")
            step_series = [(t, float(n_steps)) for (t, _), n_steps in zip(calls, steps, strict=True)]
            for k, target in enumerate(targets_s):
                t_raw, value = _nearest(series[(run, key)], target)
                _, n_steps = _nearest(step_series, target)
                rows.append(curve_row(ident, k, target, t_raw, int(n_steps), "gsm8k", metric, value, src))
            if kind == "acc":
                _, n_steps = _nearest(step_series, horizon_s)
                step_rows.append({**step_ident(ident), "time_s": float(horizon_s), "steps": n_steps, "source": src})
    return rows, step_rows


def _released_run_name(rec: registry.Setting, n, m, rule, normalize, ga) -> str:
    """The run-directory name a released run would have in our paper-scale workflow."""
    base = paper_defaults(rec)
    extra = [f"{k}~{v}" for k, v in (("norm", normalize), ("ga", ga)) if v != base[k]]
    return registry.format_run_name(rule, n, m, extra)


def read_released(log_dir: str | Path, sheet: str | Path | None = PAPER_SHEET) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(curves, steps): tidy curves (CURVE_COLUMNS) and per-run steps at the horizon (STEP_COLUMNS) of
    the authors' released result files in `log_dir`; the `role` column from the run `sheet` (the
    paper sheet by default). AnalysisInputError if the folder is missing, holds no log or a bad one."""
    log_dir = Path(log_dir)
    roles = sheet_roles(sheet)
    if not log_dir.is_dir():
        raise AnalysisInputError(
            f"released-logs folder {log_dir} does not exist: pass the authors' results/ folder "
            "(github.com/YixuanEvenXu/pods, commit 187f43b, folder results/; "
            "`python -m pods_repro.analysis.released_logs download --dest DIR` fetches it)"
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
    return tidy_frame(curves), steps


# ----------------------------------------------------------------------------------------------
# the command: pods analysis released


def add_arguments(p) -> None:
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


def run(args) -> int:
    """Check the folder against the manifest, read it and write curves, steps and the time-to-peak table."""
    out = command.check_out_dir(args.out_dir)
    if args.no_verify:
        print(
            f"warning: --no-verify: {args.logs} is read without checking it against {args.manifest}; the "
            "tables are not the release's unless it is an unmodified copy of the authors' results/ folder",
            file=sys.stderr,
        )
    else:
        verify_folder(args.logs, args.manifest)
    curves, steps = read_released(args.logs, args.sheet)
    check_grids(curves, args.logs)
    # The authors' runs are their own "this machine" and paper hardware: (ii) = (iii).
    table = speedup_table(
        curves, released_comparisons(args.sheet), args.threshold, args.n_boot, args.boot_seed, steps, steps, curves
    )
    written = [command.write_csv(curves, out / "curves.csv"), command.write_csv(steps, out / "steps.csv")]
    written += write_table(table, out / "time_to_peak")
    print_table(table)
    return command.wrote(written)


def verify_folder(logs: str, manifest: str) -> None:
    """AnalysisInputError unless `logs` holds exactly the released files (pods_repro.analysis.released_logs.verify,
    as the workflow checks it before this command reads it)."""
    try:
        released_logs.verify(logs, manifest)
    except released_logs.ReleasedLogsError as err:
        text = str(err)
        # a problem of the folder (not of the manifest): its fix is another --logs, not the workflow's config
        if text.startswith(("released logs folder", f"{Path(logs)} is not the authors'")):
            text = re.split(r"\. Fix: |: use --config", text)[0] + (
                f". Fix: pass --logs an unmodified copy of the authors' results/ folder ({released_logs.REPOSITORY} "
                f"at commit {released_logs.COMMIT[:7]}; `python -m pods_repro.analysis.released_logs download --dest DIR` "
                "fetches one), or --no-verify to read this folder anyway"
            )
        raise AnalysisInputError(text) from None
