"""Our run directories -> tidy tables: curves.csv and steps.csv (`load_runs`, `load_run_steps`).

Run directories: each holds config.json (the trainer's resolved config: arm, setting, grid),
eval.jsonl (one row per evaluation and dataset) and metrics.jsonl (one row per optimizer step);
the curves are aligned on the evaluation grid (eval.every_s, or eval.every_steps in tests).
Training completion lengths and the shares of steps without a gradient (pods_repro.analysis.gradsignal) from metrics.jsonl go
to curves.csv as dataset "train" (mean over the steps in each grid interval), beside the evaluation lengths.
The tables follow the contract of pods_repro.analysis.tidy; `python -m pods_repro.analysis collect` writes them.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from pods_repro import registry
from pods_repro.analysis import command
from pods_repro.analysis.gradsignal import SIGNAL_METRICS
from pods_repro.analysis.tidy import (
    CURVE_COLUMNS,
    FRACTION_METRICS,
    METRICS,
    STEP_COLUMNS,
    AnalysisInputError,
    as_fraction,
    as_number,
    curve_row,
    load_json,
    run_ident,
    setting_letter,
    sheet_roles,
    step_ident,
    tidy_frame,
)
from pods_repro.runlog import RunLogger


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


def _share(value, where: str, key: str) -> None:
    """AnalysisInputError naming `where` unless `value` is None, NaN or a share in [0, 1]."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= 1:
        raise AnalysisInputError(
            f"{where}: {key}={value!r} is not in [0, 1]: it is a share of the step's prompts (logged in percent?); "
            "fix or remove that run directory"
        )


def _grid_index(time_s: float, grid_s: float) -> int:
    # The trainer evaluates at the first step after each grid time, so floor() names the grid
    # point; the 1% slack absorbs float round-off just below a grid time.
    return int(math.floor(time_s / grid_s + 0.01))


def _check_finished(run_dir: Path) -> None:
    """A run that says it finished (summary.json) must hold every step and evaluation it claims: a cut
    or duplicated metrics.jsonl / eval.jsonl is refused, naming the file."""
    if (run_dir / "summary.json").exists():
        try:
            RunLogger(run_dir, enabled=False).check_finished()
        except ValueError as e:  # RunDirError (a ValueError) names the damaged file
            raise AnalysisInputError(str(e)) from None


def _read_metrics(run_dir: Path) -> pd.DataFrame:
    """A run's metrics.jsonl, each row checked: step, time_s, the shares of SIGNAL_METRICS."""
    mrecs = _read_jsonl(run_dir / "metrics.jsonl")
    for line, rec in mrecs:
        where = f"{run_dir / 'metrics.jsonl'} line {line}"
        for key in ("step", "time_s"):
            if key not in rec:
                raise AnalysisInputError(f"{where}: missing key {key!r}")
            as_number(rec[key], where, key)
        for key in SIGNAL_METRICS:  # shares of the step's prompts (None / NaN: not logged that step)
            _share(rec.get(key), where, key)
    return pd.DataFrame([rec for _, rec in mrecs])


def _summarise_steps(step_row: dict, mdf: pd.DataFrame, cpu_clock: bool) -> None:
    """A run's step row from its metrics.jsonl (in place): its clock at the last step, the mean generation and
    update seconds per step, the peak memory and the mean completion length."""
    step_row.update(time_s=float(mdf["time_s"].iloc[-1]), steps=int(mdf["step"].iloc[-1]))
    if cpu_clock and "cpu_time_s" in mdf and mdf["cpu_time_s"].notna().all():
        step_row["cpu_time_s"] = float(mdf["cpu_time_s"].iloc[-1])
    for col, key in (("gen_time_s", "gen_s_per_step"), ("update_time_s", "update_s_per_step")):
        if col in mdf:
            step_row[key] = float(mdf[col].mean())
    if "peak_mem_mb" in mdf:
        step_row["peak_mem_mb"] = float(mdf["peak_mem_mb"].max())
    if "completion_len_mean" in mdf:
        step_row["completion_len_mean"] = float(mdf["completion_len_mean"].mean())


def _one_run(run_dir: Path, letters: Mapping[str, str] | None, roles: Mapping) -> tuple[list, dict]:
    cfg = load_json(run_dir / "config.json", ": the trainer writes it first; rerun the run")
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
    ident = run_ident(letter, name, n, m, rule, normalize, ga, int(cfg.get("seed", 0)), datasets[0], role)
    # Grid: wall-clock (eval.every_s, the paper's) or steps (eval.every_steps, deterministic tests;
    # seeds are then aligned by step and time_s stays the logged time).
    every_steps = ev.get("every_steps")
    grid_s = float(ev.get("every_s") or 1800)
    # A CPU run's training clock in CPU seconds (cpu_time_s), beside its wall seconds: on a shared host the wall
    # clock measures the neighbours; on a GPU the process's CPU seconds are not the run's time, so none is kept.
    cpu_clock = (cfg.get("hardware") or {}).get("device") == "cpu" or (cfg.get("meta") or {}).get("device") == "cpu"

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
        t, step = as_number(rec["time_s"], where, "time_s"), int(as_number(rec.get("step", 0), where, "step"))
        k, t_grid = grid_of(t, step)
        if (k, rec["dataset"]) in seen:  # e.g. a final evaluation off the grid: keep the first
            continue
        seen.add((k, rec["dataset"]))
        for metric in METRICS:
            if rec.get(metric) is not None:
                check = as_fraction if metric in FRACTION_METRICS else as_number
                value = check(rec[metric], where, metric)
                rows.append(curve_row(ident, k, t_grid, t, step, rec["dataset"], metric, value, run_dir))
                if cpu_clock and rec.get("cpu_time_s") is not None:
                    rows[-1]["cpu_time_s"] = as_number(rec["cpu_time_s"], where, "cpu_time_s")
    step_row = {**step_ident(ident), "source": str(run_dir)}
    policy = (cfg.get("meta") or {}).get("policy")
    if isinstance(policy, dict) and policy.get("weights_sha256"):
        step_row["policy_sha256"] = str(policy["weights_sha256"])
    mdf = _read_metrics(run_dir)
    if mdf.empty:
        return rows, step_row
    _summarise_steps(step_row, mdf, cpu_clock)
    # Training-time series over time: the mean over the steps of each grid interval ((k-1) grid, k grid],
    # written as dataset "train": the rollouts' lengths (Figs. 8-10) and the shares of steps whose rollouts
    # all got one reward (pods_repro.analysis.gradsignal).
    mdf["grid"] = [grid_of(t, st, ceil=True)[0] for t, st in zip(mdf["time_s"], mdf["step"], strict=True)]
    for metric in ("completion_len_mean", *SIGNAL_METRICS):
        if metric not in mdf:
            continue
        for k, grp in mdf.dropna(subset=[metric]).groupby("grid"):
            t_last, step_last = float(grp["time_s"].iloc[-1]), int(grp["step"].iloc[-1])
            t_grid = grid_of(t_last, step_last, ceil=True)[1]
            value = float(grp[metric].mean())
            rows.append(curve_row(ident, k, t_grid, t_last, step_last, "train", metric, value, run_dir))
            if cpu_clock and "cpu_time_s" in grp and grp["cpu_time_s"].notna().all():
                rows[-1]["cpu_time_s"] = float(grp["cpu_time_s"].iloc[-1])
    _check_finished(run_dir)  # after the analysis's own reading, whose messages are more specific
    return rows, step_row


def collect_runs(
    root: str | Path | None,
    letters: Mapping[str, str] | None = None,
    sheet: str | Path | None = None,
    run_dirs: Sequence[str | Path] | None = None,
):
    """Curves and steps of every run directory under `root`, or of exactly `run_dirs` when given (the
    workflow passes the runs of its sheet, so a manual run under the same root is never merged in)."""
    roles = sheet_roles(sheet)
    how = (
        "train runs first (`snakemake` or `pods train CONFIG`); each run directory "
        "needs config.json and eval.jsonl (docs/design.md)"
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
    # cpu_time_s (CPU runs' training clock in CPU seconds) is a column only where every run has it
    curves, steps = pd.DataFrame(rows), pd.DataFrame(step_rows)
    cpu = ["cpu_time_s"] if "cpu_time_s" in curves and curves["cpu_time_s"].notna().all() else []
    steps = steps.reindex(columns=[*STEP_COLUMNS, *(cpu if "cpu_time_s" in steps else [])])
    steps["seconds_per_step"] = steps["time_s"] / steps["steps"]
    return tidy_frame(curves.reindex(columns=[*CURVE_COLUMNS, *cpu])), steps


def _refuse_duplicate_seeds(step_rows: list[dict]) -> None:
    """AnalysisInputError if two run directories have the same setting letter, arm configuration and seed,
    whatever their folders are called (one run copied under another name, a setting name mapped to a letter
    twice, or runs that differ only in what curves.csv does not record). The statistics select an arm's runs
    by exactly these (tidy.RUN_KEY), so their curves would be averaged as if they were two seeds."""
    seen: dict[tuple, str | None] = {}
    key_cols = ("setting", "n", "m", "rule", "normalize", "grad_accum", "seed")
    for row in step_rows:
        key = tuple(row.get(k) for k in key_cols)
        if key in seen:
            raise AnalysisInputError(
                f"{seen[key]} and {row.get('source')} are the same arm and seed "
                f"({dict(zip(key_cols, key, strict=True))}): the tables cannot tell them apart (one run twice, or two "
                "runs that differ only in a setting they do not record, such as the learning rate) and would average "
                "them as if they were two seeds. Fix: keep one of them (pass --run-dirs without the other, or move it "
                "out of the runs folder), or collect each into its own table"
            )
        seen[key] = row.get("source")


def _warn_mixed_policies(step_rows: list[dict]) -> None:
    """Warn (stderr) when one setting's runs started from different weights (``meta.policy.weights_sha256``,
    recorded for tiny models): its arms are then not one experiment. A tiny model built on another kind
    of CPU differs (docs/tiny-scale.md), so run directories copied between machines can mix builds."""
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
                "it ran on (docs/tiny-scale.md): train every run of a setting from one model cache on one machine",
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
    return collect_runs(root, letters, sheet)[0]


def load_runs_at(
    run_dirs: Sequence[str | Path], letters: Mapping[str, str] | None = None, sheet: str | Path | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Curves and steps tables of exactly these run directories (the workflow's runs of its sheet)."""
    return collect_runs(None, letters, sheet, run_dirs)


def load_run_steps(
    root: str | Path, letters: Mapping[str, str] | None = None, sheet: str | Path | None = None
) -> pd.DataFrame:
    """One row per run (STEP_COLUMNS): s/step, generation/update split, mean training length."""
    return collect_runs(root, letters, sheet)[1]


# ----------------------------------------------------------------------------------------------
# the command: pods analysis collect


def add_arguments(p) -> None:
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--runs", help="every run directory under this folder")
    which.add_argument("--run-dirs", nargs="+", metavar="DIR", help="exactly these run directories (the workflow's)")
    p.add_argument("--out-dir", required=True, help="where curves.csv and steps.csv are written")
    p.add_argument("--letters", help="NAME=LETTER,... paper letter of setting names not ending in _a.._f")
    p.add_argument("--sheet", help="run sheet: its `role` column marks each setting's baseline and PODS runs")


def run(args) -> int:
    out = command.check_out_dir(args.out_dir)
    curves, steps = collect_runs(args.runs, parse_letters(args.letters), args.sheet, args.run_dirs)
    return command.wrote([command.write_csv(curves, out / "curves.csv"), command.write_csv(steps, out / "steps.csv")])


def parse_letters(text: str | None) -> dict[str, str]:
    """The --letters option: NAME=LETTER,... -> {setting name: paper letter}."""
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
