"""Property: a damaged curves.csv is refused in one line, or gives the tables of the clean one.

A small clean table (setting a: GRPO 4/4 as baseline, GRPO-PODS 16/4 as PODS and 8/4 for the n sweep, three
seeds each, evaluations at steps 0-50 with the per-step reward-spread shares) is damaged at random:
rows duplicated (with another value, as from a rerun), one seed's evaluation dropped or one seed trained a step
further, a value, time or step emptied or made non-finite or negative, the rows shuffled, unknown columns added.
Every analysis subcommand that reads --curves then either exits 2 with one `error:` line, or writes the numbers
of the clean table; shuffled rows and extra columns alone must give the clean tables exactly.

    pytest tests/analysis/test_analysis_property.py
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pods_repro.analysis.cli import main as analysis_main
from pods_repro.analysis.tidy import CURVE_COLUMNS

ARMS = [("grpo", 4, 4, "baseline", 0.70), ("pods", 16, 4, "pods", 0.74), ("pods", 8, 4, "", 0.72)]
SEEDS = (0, 1, 2)
GRID = range(6)  # t = 0 and five evaluations, one every 10 steps
FAST = ["--n-boot", "100"]
# subcommand -> (extra options, the table it writes)
COMMANDS = {
    "time-to-peak": (FAST, "time_to_peak.csv"),
    "plateau": (FAST, "plateau.csv"),
    "levels": (FAST, "levels.csv"),
    "seeds": ([*FAST, "--seeds", "4,8", "--sims", "50"], "seeds.csv"),
    "ablations": (FAST, "ablations.csv"),
    "signal": (FAST, "signal.csv"),
}


def clean_curves() -> pd.DataFrame:
    """The clean table: accuracy and length on gsm8k at each grid point, shares of no-gradient steps."""
    rows = []
    for arm, n, m, role, top in ARMS:
        for seed in SEEDS:
            ident = dict(setting="a", setting_name="a_prop", arm=arm, role=role, n=n, m=m, rule="max_variance",
                         normalize="after", grad_accum=1, seed=seed, primary_dataset="gsm8k",
                         source=f"runs/a_prop/sel~max_variance_n~{n}_m~{m}/seed~{seed}")  # fmt: skip
            for g in GRID:
                acc = 0.2 + (top - 0.2) * (1 - 0.5**g) + 0.01 * (seed - 1) * (g > 0) + 0.002 * (g == 4)
                time = 100.0 * g
                base = dict(ident, grid=g, time_s=time, time_s_raw=time + 3 * (g > 0), step=10 * g, dataset="gsm8k")
                rows.append(dict(base, metric="accuracy", value=round(acc, 4)))
                rows.append(dict(base, metric="completion_len_mean", value=100.0 + 5 * g - 2 * seed))
                if g > 0:
                    train = dict(base, dataset="train", time_s_raw=time)
                    share = round(0.1 + 0.08 * g + 0.02 * seed - 0.05 * (n > m), 4)
                    rows.append(dict(train, metric="kept_frac_zero_std", value=share))
                    rows.append(dict(train, metric="frac_zero_std", value=round(share / 2, 4)))
    return pd.DataFrame(rows).reindex(columns=CURVE_COLUMNS)


def run(cmd: str, curves: Path, out: Path) -> tuple[int, str, pd.DataFrame | None]:
    """(exit code, stderr, the table written) of one subcommand, in-process."""
    extra, table = COMMANDS[cmd]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = analysis_main([cmd, "--curves", str(curves), "--out-dir", str(out), *extra])
    path = out / table
    if rc != 0:
        return rc, err.getvalue(), None
    return rc, err.getvalue(), pd.read_csv(path) if path.stat().st_size > 1 else pd.DataFrame()


@pytest.fixture(scope="module")
def clean_tables(tmp_path_factory) -> dict[str, pd.DataFrame]:
    root = tmp_path_factory.mktemp("clean")
    clean_curves().to_csv(root / "curves.csv", index=False)
    out = {}
    for cmd in COMMANDS:
        rc, err, table = run(cmd, root / "curves.csv", root / cmd)
        assert rc == 0, (cmd, err)
        assert len(table), cmd  # every table has rows to compare
        out[cmd] = table
    return out


# ----------------------------------------------------------------------------------------------
# damage


def _rows_of(df: pd.DataFrame, arm: int, seed: int) -> pd.Series:
    _, n, m, _, _ = ARMS[arm]
    return (df["n"] == n) & (df["m"] == m) & (df["seed"] == seed)


def damage(df: pd.DataFrame, ops: list[tuple]) -> pd.DataFrame:
    for op in ops:
        kind = op[0]
        if kind == "duplicate":  # the same evaluation again, e.g. from a rerun of that seed
            again = df.iloc[[op[1] % len(df)]]
            again = again.assign(value=np.round(pd.to_numeric(again["value"], errors="coerce") * 0.9, 4))
            df = pd.concat([df, again], ignore_index=True)
        elif kind == "drop_eval":  # one seed's evaluation at one grid point is missing
            _, arm, seed, grid = op
            df = df[~(_rows_of(df, arm, seed) & (df["grid"] == grid) & (df["dataset"] == "gsm8k"))]
        elif kind == "extend":  # one seed evaluated once more: a longer budget
            _, arm, seed = op
            last = df[_rows_of(df, arm, seed) & (df["dataset"] == "gsm8k") & (df["grid"] == max(GRID))]
            more = last.assign(grid=last["grid"] + 1, time_s=last["time_s"] + 100, step=last["step"] + 10)
            df = pd.concat([df, more.assign(value=np.minimum(more["value"] + 0.05, 1.0))], ignore_index=True)
        elif kind == "cell":
            _, row, column, bad = op
            df = df.astype({column: object})
            df.iloc[row % len(df), df.columns.get_loc(column)] = bad
        elif kind == "shuffle":
            df = df.sample(frac=1.0, random_state=op[1]).reset_index(drop=True)
        elif kind == "extra_column":
            _, name, position = op
            df = df.copy()
            df.insert(position % (len(df.columns) + 1), name, np.arange(len(df)) % 7)
    return df


HARMLESS = ("shuffle", "extra_column")
ops = st.one_of(
    st.tuples(st.just("duplicate"), st.integers(0, 10_000)),
    st.tuples(st.just("drop_eval"), st.integers(0, 2), st.sampled_from(SEEDS), st.integers(1, max(GRID))),
    st.tuples(st.just("extend"), st.integers(0, 2), st.sampled_from(SEEDS)),
    st.tuples(
        st.just("cell"),
        st.integers(0, 10_000),
        st.sampled_from(["value", "time_s", "step"]),
        st.sampled_from(["", "nan", "inf", "-inf", "-1"]),
    ),
    st.tuples(st.just("shuffle"), st.integers(0, 2**16)),
    st.tuples(st.just("extra_column"), st.sampled_from(["note", "host", "x_unused"]), st.integers(0, 30)),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damages=st.lists(ops, min_size=1, max_size=3, unique_by=lambda op: (op[0], op[1] if op[0] != "cell" else 0)))
@example(damages=[("shuffle", 7), ("extra_column", "note", 3)])  # harmless: the clean tables exactly
@example(damages=[("duplicate", 14)])  # the same evaluation twice
@example(damages=[("extend", 0, 2)])  # a baseline seed on a longer budget
@example(damages=[("cell", 40, "time_s", "")])
def test_damaged_curves_are_refused_or_give_the_clean_tables(clean_tables, damages):
    harmless = all(op[0] in HARMLESS for op in damages)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "curves.csv"
        damage(clean_curves(), damages).to_csv(path, index=False)
        for cmd in COMMANDS:
            rc, err, table = run(cmd, path, Path(tmp) / cmd)
            if rc == 2 and not harmless:
                lines = err.strip().splitlines()
                assert len(lines) == 1, (cmd, damages, err)
                assert lines[0].startswith("error: "), (cmd, damages, err)
                continue
            assert rc == 0, (cmd, damages, err)
            pd.testing.assert_frame_equal(table, clean_tables[cmd], obj=f"{cmd} after {damages}")
