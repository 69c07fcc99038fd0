"""Tests of pods_repro.analysis.levels: the speed-up at fixed accuracy levels, and its `levels` command."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pods_repro.analysis.cli import main as analysis_main
from pods_repro.analysis.levels import level_speedups, level_table
from pods_repro.analysis.speedups import speedup_table


@pytest.fixture
def helpers(analysis_helpers):
    return analysis_helpers


def _with_start(rows, setting, arm, n, m, start):
    """Prepend each seed's evaluation at t = 0 (step 0) with value `start`."""
    seeds = sorted({r["seed"] for r in rows})
    first = rows[0]
    return [
        dict(first, setting=setting, arm=arm, n=n, m=m, seed=s, grid=0, time_s=0.0, step=0, value=start) for s in seeds
    ] + rows


def test_steps_to_each_level_and_their_ratio_on_a_hand_made_fixture(helpers):
    base = pd.DataFrame(helpers._tidy_arm("a", "grpo", 4, 4, [[0.5, 0.7, 0.9]] * 5, [[10, 20, 30]] * 5))
    pods = pd.DataFrame(helpers._tidy_arm("a", "pods", 16, 4, [[0.7, 0.9, 0.9]] * 5, [[5, 10, 15]] * 5))
    t = level_speedups(base, pods, [0.6, 0.8, 0.95], n_boot=200).set_index("kind")
    lv = t.loc["level"]
    assert list(lv["level"]) == [0.6, 0.8, 0.95]
    assert list(lv["t_baseline"]) == [20, 30, math.inf]
    assert list(lv["t_pods"]) == [5, 10, math.inf]
    assert lv["speedup"].iloc[:2].tolist() == [4.0, 3.0]
    assert math.isnan(lv["speedup"].iloc[2])
    # identical seeds: every resample is the point estimate
    assert lv["ci_low"].iloc[:2].tolist() == [4.0, 3.0]
    assert lv["ci_high"].iloc[:2].tolist() == [4.0, 3.0]
    assert lv["p_baseline_never"].tolist() == [0, 0, 1]
    assert lv["p_pods_never"].tolist() == [0, 0, 1]
    pooled = t.loc["pooled"]
    assert pooled["n_levels"] == 2  # 0.95, which the baseline can miss (here: always), leaves the pool
    assert pooled["speedup"] == pytest.approx(50 / 15)
    assert pooled["ci_low"] == pooled["ci_high"] == pytest.approx(50 / 15)
    assert (t["unit"] == "steps").all()
    # a PODS arm with no evaluation after t = 0 reaches no level (time-to-peak's "never")
    none = level_speedups(base, pods.iloc[:0], [0.6], n_boot=100).iloc[0]
    assert none["t_baseline"] == 20
    assert math.isinf(none["t_pods"])
    # without optimizer steps the positions are grid seconds (100 s apart)
    t_s = level_speedups(base.drop(columns="step"), pods.drop(columns="step"), [0.6], n_boot=100)
    assert t_s["unit"].iloc[0] == "s"
    assert t_s["t_baseline"].iloc[0] == 200
    assert t_s["t_pods"].iloc[0] == 100


def test_seed_noise_gives_an_interval_and_never_shares(helpers):
    """A resample in which PODS misses the level counts (as 0: the lower end falls to 0), the share is
    reported, and the interval over the resamples that reach it stands beside, labelled conditional."""
    # PODS seeds 0-2 reach 0.85 at once, seeds 3-4 never (0.8); the mean does (0.88)
    base = pd.DataFrame(
        helpers._tidy_arm(
            "a", "grpo", 4, 4, [[0.5, 0.7, 0.9], [0.5, 0.8, 0.9]] * 2 + [[0.5, 0.75, 0.9]], [[10, 20, 30]] * 5
        )
    )
    pods = pd.DataFrame(
        helpers._tidy_arm("a", "pods", 16, 4, [[0.9, 0.9, 0.9]] * 3 + [[0.8, 0.8, 0.8]] * 2, [[5, 10, 15]] * 5)
    )
    row = level_speedups(base, pods, [0.85], n_boot=4000).iloc[0]
    assert row["t_baseline"] == 30
    assert row["t_pods"] == 5
    assert row["speedup"] == 6.0
    # a resample's PODS mean is >= 0.85 iff at most 2 of its 5 draws are seeds 3-4 (p = 0.4): P = 0.317
    assert row["p_pods_never"] == pytest.approx(1 - 0.68256, abs=0.03)
    assert row["p_baseline_never"] == 0
    assert row["ci_low"] == 0.0 <= 6.0 <= row["ci_high"]
    assert row["cond_low"] == row["cond_high"] == 6.0  # when reached: always at step 5 against 30
    # fewer than 5 seeds per arm: no interval (coverage not shown), the point stands
    few = level_speedups(base[base["seed"] < 3], pods[pods["seed"] < 3], [0.85], n_boot=100).iloc[0]
    assert few["speedup"] == 6.0
    assert math.isnan(few["ci_low"])
    assert "no interval: 3 seed(s)" in few["note"]
    # one seed per arm: no interval and no shares
    one = level_speedups(base[base["seed"] == 0], pods[pods["seed"] == 0], [0.85], n_boot=100).iloc[0]
    assert one["speedup"] == 6.0
    assert math.isnan(one["ci_low"])
    assert math.isnan(one["p_pods_never"])


def test_a_level_both_arms_reach_gets_the_same_row_from_a_longer_run(helpers):
    """The point of fixed levels: a short run and a longer run of the same seeds (whose first part is the
    short run, as under the step budget) give identical rows, intervals included, at every level both
    arms reach in the short run; the long run only adds higher levels. Time-to-peak moves instead."""
    rng = np.random.default_rng(3)
    steps = [[25 * (k + 1) for k in range(16)]] * 4

    def curves(rate):
        return [list(np.round(0.6 + 0.3 * (1 - np.exp(-rate * np.arange(1, 17))) + rng.normal(0, 0.02, 16), 4))
                for _ in range(4)]  # fmt: skip

    long = pd.DataFrame(
        helpers._tidy_arm("a", "grpo", 16, 16, curves(0.12), steps)
        + helpers._tidy_arm("a", "pods", 64, 16, curves(0.25), steps)
    )
    long["role"] = np.where(long["arm"] == "grpo", "baseline", "pods")
    long["primary_dataset"] = "gsm8k"
    short = long[long["step"] <= 200]
    levels = [0.65, 0.7, 0.75, 0.8, 0.85, 0.88]
    t_long, t_short = (level_table(d, levels=levels, n_boot=500).set_index(["kind", "level"]) for d in (long, short))
    reached = t_short.loc["level"]
    reached = reached[
        np.isfinite(reached["speedup"]) & (reached["p_baseline_never"] == 0) & (reached["p_pods_never"] == 0)
    ]
    assert len(reached) >= 3
    cols = ["t_baseline", "t_pods", "speedup", "ci_low", "ci_high"]
    pd.testing.assert_frame_equal(t_long.loc["level"].loc[reached.index, cols], reached[cols])
    assert np.isfinite(t_long.loc["level"]["speedup"]).sum() > len(reached)  # the long run reaches more
    tp_long, tp_short = (speedup_table(d, n_boot=200).iloc[0] for d in (long, short))
    assert tp_long["target"] != tp_short["target"]  # the time-to-peak target moved with the budget


def test_default_levels_are_fractions_of_the_baseline_rise_and_its_peak_is_reached(helpers):
    # 0.03 + (0.3 - 0.03) > 0.3 in floating point: fraction 1.0 must still be reached at the peak
    base_rows = helpers._tidy_arm("a", "grpo", 4, 4, [[0.03, 0.3, 0.15], [0.07, 0.3, 0.1]], [[10, 20, 30]] * 2)
    pods_rows = helpers._tidy_arm("a", "pods", 16, 4, [[0.3, 0.3, 0.3]] * 2, [[5, 10, 15]] * 2)
    df = pd.DataFrame(
        _with_start(base_rows, "a", "grpo", 4, 4, 0.03) + _with_start(pods_rows, "a", "pods", 16, 4, 0.03)
    )
    df["role"] = np.where(df["arm"] == "grpo", "baseline", "pods")
    df["primary_dataset"] = "gsm8k"
    t = level_table(df, fractions=(0.5, 1.0), n_boot=100)
    lv = t[t["kind"] == "level"]
    assert lv["start_baseline"].iloc[0] == pytest.approx(0.03)
    assert lv["peak_baseline"].iloc[0] == pytest.approx(0.3)
    assert lv["level"].tolist() == pytest.approx([0.165, 0.3])
    assert lv["t_baseline"].tolist() == [20, 20]
    assert lv["speedup"].tolist() == [4.0, 4.0]


def test_cli_levels_writes_the_table_and_refuses_bad_input(helpers, tmp_path, capsys):
    root = helpers.fake_tree(tmp_path / "runs")
    tables = tmp_path / "tables"
    assert (
        analysis_main(
            [
                "collect",
                "--runs",
                str(root),
                "--out-dir",
                str(tables),
                "--sheet",
                str(helpers.fake_sheet(tmp_path / "s.tsv")),
            ]
        )
        == 0
    )
    curves = str(tables / "curves.csv")
    assert analysis_main(["levels", "--curves", curves, "--out-dir", str(tables), "--n-boot", "200"]) == 0
    table = pd.read_csv(tables / "levels.csv")
    assert set(table["setting"]) == {"a", "e"}
    assert (table.groupby("setting")["kind"].count() == 6).all()
    md = (tables / "levels.md").read_text()
    assert "(1.00 of rise)" in md
    assert "pooled (" in md
    assert (
        analysis_main(["levels", "--curves", curves, "--out-dir", str(tables), "--levels", "0.6,0.7", "--setting", "a"])
        == 0
    )
    table = pd.read_csv(tables / "levels.csv")
    assert set(table["setting"]) == {"a"}
    assert table["level"].dropna().tolist() == [0.6, 0.7]
    capsys.readouterr()
    assert analysis_main(["levels", "--curves", curves, "--out-dir", str(tables), "--setting", "z"]) == 2
    assert "--setting z: not in" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        analysis_main(["levels", "--curves", curves, "--out-dir", str(tables), "--levels", "0.6,high"])
    assert exc.value.code == 2
    assert "is not a comma-separated list of numbers" in capsys.readouterr().err
    assert analysis_main(["levels", "--curves", str(tmp_path / "nope.csv"), "--out-dir", str(tables)]) == 2
    assert "is missing or empty" in capsys.readouterr().err


def test_fractions_keep_their_levels_when_the_baseline_falls_below_its_start(helpers):
    """A baseline whose best evaluation is below its start (the smoke scale's (c)): fraction 1.0 is still
    its peak, and each fraction's row carries its own level (they descend)."""
    rows = helpers._tidy_arm("c", "grpo", 4, 4, [[0.2, 0.1, 0.1]] * 2, [[10, 20, 30]] * 2)
    rows += helpers._tidy_arm("c", "pods", 16, 4, [[0.1, 0.2, 0.2]] * 2, [[5, 10, 15]] * 2)
    df = pd.DataFrame(_with_start(rows[:6], "c", "grpo", 4, 4, 0.3) + _with_start(rows[6:], "c", "pods", 16, 4, 0.3))
    df["role"] = np.where(df["arm"] == "grpo", "baseline", "pods")
    df["primary_dataset"] = "gsm8k"
    lv = level_table(df, fractions=(0.5, 1.0), n_boot=100).set_index("kind").loc["level"]
    assert lv["fraction"].tolist() == [0.5, 1.0]
    assert lv["level"].tolist() == pytest.approx([0.25, 0.2])
    assert lv["t_baseline"].tolist() == [math.inf, 10]
    assert lv["t_pods"].tolist() == [math.inf, 10]
