"""The arena's record, assembled in sittings: each sitting adds its finished runs to a record folder.

The full arena (config/arena.yaml, scale ``full``) is several CPU hours on 2 cores, more than one working
sitting. Its runs are deterministic and independent, so a record may be assembled from several sittings, like
the default job's (:mod:`pods_repro.analysis.record`):

    pods analysis arena --scale full --missing                        # targets not yet in the record
    snakemake -c2 $(pods analysis arena --scale full --missing)       # train them (or some of them)
    pods analysis arena --scale full --record benchmarks/results/arena --wall-s 5400   # add the sitting

Adding a sitting checks each finished run's resolved config against what the grid trains today (its
fingerprint, :func:`pods_repro.config.fingerprint.config_fingerprint`) and refuses a foreign one; a run already in
the record must have the same curves (it is counted as agreed, not added twice). ``arena_meta.json`` lists the
sittings (host, cores, torch, wall seconds, runs added, their CPU seconds). The page and the tables use a
condition once all its runs (every arm x seed) are recorded; until then it reads "k of K runs recorded".
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pandas as pd

from pods_repro import registry

__all__ = ["RUN_KEY", "complete_conditions", "condition_counts", "expected_fingerprints", "merge_sitting", "missing"]

RUN_KEY = ("condition", "arm", "seed")
FLOAT_FORMAT = "%.6g"  # the record's CSV precision


class ArenaRecordError(ValueError):
    """A sitting that cannot be added; the message says why and how to fix it."""


def expected_fingerprints(grid) -> dict[str, str]:
    """Run folder (``base/pods/seed~0``) -> the fingerprint of the config ``pods train`` resolves for it."""
    from pods_repro.config import load_config
    from pods_repro.config.fingerprint import config_fingerprint

    out, base = {}, {}
    experiment = registry.repo_file(grid.experiment)
    for run in grid.runs():
        key = (run.condition, run.arm)
        if key not in base:
            base[key] = load_config(experiment, list(run.overrides), check_machine=False, environment=False)
        out[run.folder] = config_fingerprint(dataclasses.replace(base[key], seed=run.seed))[1]
    return out


def check_fingerprint(run_dir: Path, folder: str, expected: dict[str, str]) -> str:
    """The run's fingerprint, refused unless it is the one the grid expects for ``folder``."""
    from pods_repro.config import ConfigError
    from pods_repro.config.fingerprint import run_fingerprint

    try:
        digest = run_fingerprint(run_dir)
    except (OSError, ValueError, ConfigError, TypeError) as err:
        raise ArenaRecordError(f"{run_dir / 'config.json'}: cannot be read as a run's config ({err})") from None
    if digest != expected[folder]:
        raise ArenaRecordError(
            f"{run_dir}: trained under another config than the arena's run {folder} (fingerprint {digest[:12]} vs "
            f"{expected[folder][:12]}). Fix: train it again from a fresh clone of this version, or move it away"
        )
    return digest


def _keyed(df: pd.DataFrame) -> pd.Series:
    return df.condition.astype(str) + "/" + df.arm.astype(str) + "/seed~" + df.seed.astype(str)


def _as_written(df: pd.DataFrame) -> pd.DataFrame:
    """The table as the record reads it back (its CSV's precision), so that a run compares equal to itself."""
    return pd.read_csv(io.StringIO(df.to_csv(index=False, float_format=FLOAT_FORMAT)))


def merge_sitting(old: tuple | None, new: tuple, meta: dict, sitting: dict) -> tuple[tuple, dict, dict]:
    """Merge a sitting's (curves, steps, runs) into a record's (old: its tables and meta, or None).

    Returns the merged tables, the merged meta (its ``sittings`` extended) and counts {added, agreed}. A run in
    both must have the same curves and step rows; a record of another grid (scale, steps, seeds) is refused."""
    curves, steps, runs = (_as_written(df) for df in new)  # compared as the record holds them
    if old is None:
        merged, old_meta, known = (curves, steps, runs), {**meta, "sittings": []}, set()
    else:
        o_curves, o_steps, o_runs, old_meta = old
        for key in ("scale", "steps", "eval_every", "seeds", "experiment"):
            if old_meta.get(key) != meta.get(key):
                raise ArenaRecordError(
                    f"the record holds the arena's {old_meta.get('scale')!r} grid ({key}: {old_meta.get(key)!r}), "
                    f"this sitting's grid has {meta.get(key)!r}: record it in another folder, or remove the old one"
                )
        known = set(_keyed(o_runs))
        merged = (o_curves, o_steps, o_runs)
    new_keys = set(_keyed(runs))
    agreed = sorted(new_keys & known)
    for key in agreed:
        for old_df, new_df, what in ((merged[0], curves, "curves"), (merged[1], steps, "step rows")):
            a = old_df[_keyed(old_df) == key].reset_index(drop=True)
            b = new_df[_keyed(new_df) == key].reset_index(drop=True)
            b = b[[c for c in a.columns if c in b.columns]]
            same = a.shape == b.shape and bool(
                (a.drop(columns=["step_cpu_s"], errors="ignore").astype(str)
                 == b.drop(columns=["step_cpu_s"], errors="ignore").astype(str)).all().all()
            )  # fmt: skip
            if not same:
                raise ArenaRecordError(
                    f"run {key}: its {what} differ from the record's; the run is not deterministic on this "
                    "machine or the code changed. Fix: compare with scripts/compare_runs.py, keep one"
                )
    fresh = sorted(new_keys - known)
    if old is not None and fresh:
        pick = [df[_keyed(df).isin(fresh)] for df in (curves, steps, runs)]
        merged = tuple(pd.concat([a, b], ignore_index=True) for a, b in zip(merged, pick, strict=True))
    merged = tuple(df.sort_values([*RUN_KEY, "step"] if "step" in df else list(RUN_KEY)) for df in merged)
    added_cpu = float(runs[_keyed(runs).isin(fresh)].process_cpu_s.fillna(0).sum()) if fresh else 0.0
    out_meta = {**meta, "sittings": [*old_meta.get("sittings", []), {**sitting, "runs_added": len(fresh),
                                                                      "runs_agreed": len(agreed),
                                                                      "cpu_s_of_runs_added": round(added_cpu, 1)}]}  # fmt: skip
    out_meta["recorded_runs"] = len(set(_keyed(merged[2])))
    out_meta["grid_runs"] = len(meta["seeds"]) * len(meta["conditions"]) * len(meta["arms"])
    return merged, out_meta, {"added": len(fresh), "agreed": len(agreed)}


def condition_counts(runs: pd.DataFrame, meta: dict) -> dict[str, tuple[int, int]]:
    """Per condition: (runs recorded, runs of the grid)."""
    per = len(meta["seeds"]) * len(meta["arms"])
    return {c: (int((runs.condition == c).sum()), per) for c in meta["conditions"]}


def complete_conditions(runs: pd.DataFrame, meta: dict) -> list[str]:
    return [c for c, (k, n) in condition_counts(runs, meta).items() if k == n]


def missing(grid, record: tuple | None) -> list[str]:
    """Snakemake targets (``{root}/runs/{folder}/summary.json``) of the grid's runs not in the record."""
    known = set(_keyed(record[2])) if record is not None else set()
    return [f"{grid.root}/runs/{r.folder}/summary.json" for r in grid.runs() if r.folder not in known]
