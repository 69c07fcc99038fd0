"""Tests of pods_repro.analysis.ablations: what the sweeps and the rule/normalisation ablations show (`analysis ablations`)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from pods_repro.analysis.ablations import _agreement, ablation_groups, ablation_table, write_ablation_table
from pods_repro.analysis.cli import main as analysis_main
from pods_repro.analysis.tidy import arm_label


def _arm(setting, n, m, values_by_seed, steps, rule="max_variance", normalize="after", role="", start=0.8, dt=100.0):
    """Tidy rows of one arm: t = 0 at `start`, then one evaluation per step of `steps` (dt seconds apart)."""
    rows = []
    for seed, values in enumerate(values_by_seed):
        for k, (step, v) in enumerate([(0, start), *zip(steps, values, strict=True)]):
            rows.append(
                {"setting": setting, "setting_name": f"tiny_{setting}", "arm": arm_label(n, m, rule, normalize),
                 "role": role, "n": n, "m": m, "rule": rule, "normalize": normalize, "grad_accum": 1, "seed": seed,
                 "grid": k, "time_s": dt * k, "time_s_raw": dt * k, "step": step, "dataset": "arith",
                 "primary_dataset": "arith", "metric": "accuracy", "value": v, "source": f"runs/{n}_{m}_{rule}"}
            )  # fmt: skip
    return rows


MAIN_STEPS = [25, 50, 75, 100]  # the main arms run longer on another grid
ABL_STEPS = [20, 40, 60]  # the ablations' span: 60, window [30, 60] -> steps 40 and 60 (main arms: 50)


def _curves():
    rows = []
    # main arms: GRPO 16/16 at 0.80, GRPO-PODS 64/16 at 0.84 (3 seeds, +-0.002 between seeds)
    rows += _arm("a", 16, 16, [[0.80 + d] * 4 for d in (-0.002, 0, 0.002)], MAIN_STEPS, role="baseline")
    rows += _arm("a", 64, 16, [[0.84 + d] * 4 for d in (-0.002, 0, 0.002)], MAIN_STEPS, role="pods")
    # n = 128: level with PODS within wide seed noise; m = 4: clearly below; max-reward collapses; before: level
    rows += _arm("a", 128, 16, [[0.79] * 3, [0.84] * 3, [0.89] * 3], ABL_STEPS)
    rows += _arm("a", 64, 4, [[0.70 + d] * 3 for d in (-0.002, 0, 0.002)], ABL_STEPS)
    rows += _arm("a", 64, 16, [[0.9, 0.6, 0.5], [0.9, 0.6, 0.5], [0.9, 0.6, 0.5]], ABL_STEPS, rule="max_reward")
    rows += _arm("a", 64, 16, [[0.80] * 3, [0.84] * 3, [0.88] * 3], ABL_STEPS, normalize="before")
    # setting (b): the main comparison alone, which is Fig. 3, not an n sweep
    rows += _arm("b", 16, 16, [[0.5] * 4], MAIN_STEPS, role="baseline")
    rows += _arm("b", 64, 16, [[0.6] * 4], MAIN_STEPS, role="pods")
    return pd.DataFrame(rows)


def test_groups_are_the_sweeps_and_ablations_around_the_pods_arm_and_not_the_main_comparison_alone():
    curves = _curves()
    ref, groups = ablation_groups(curves, "a")
    assert ref == {"n": 64, "m": 16, "rule": "max_variance", "normalize": "after"}
    by_group = {}
    for group, sel in groups:
        by_group.setdefault(group, []).append((sel["n"], sel["m"], sel["rule"], sel["normalize"]))
    assert by_group["n sweep"] == [(16, 16, "max_variance", "after"), (64, 16, "max_variance", "after"),
                                   (128, 16, "max_variance", "after")]  # fmt: skip
    assert by_group["m sweep"] == [(64, 16, "max_variance", "after"), (64, 4, "max_variance", "after")]
    assert by_group["rule"] == [(64, 16, "max_variance", "after"), (64, 16, "max_reward", "after")]
    assert by_group["normalisation"] == [(64, 16, "max_variance", "after"), (64, 16, "max_variance", "before")]
    assert ablation_groups(curves, "b") == ({"n": 64, "m": 16, "rule": "max_variance", "normalize": "after"}, [])
    assert ablation_groups(curves[curves["role"] != "pods"], "a") == ({}, [])


def test_window_means_differences_and_readings_on_a_hand_made_fixture():
    table = ablation_table(_curves(), n_boot=500)
    assert set(table["setting"]) == {"a"}
    assert set(table["source"]) == {"ours"}
    assert (table["span"] == 60).all()
    assert (table["window_from"] == 30).all()
    row = {(r.group, r.n, r.m, r.rule, r.normalize): r for r in table.itertuples()}
    pods = row[("rule", 64, 16, "max_variance", "after")]
    assert pods.reading == "reference"
    assert pods.mean == pytest.approx(0.84)
    assert pods.n_evals == 1
    maxr = row[("rule", 64, 16, "max_reward", "after")]
    assert maxr.n_evals == 2
    assert maxr.mean == pytest.approx(0.55)
    assert maxr.diff == pytest.approx(-0.29)
    assert maxr.reading == "below"
    assert maxr.diff_high < 0
    assert maxr.start == pytest.approx(0.8)
    m4 = row[("m sweep", 64, 4, "max_variance", "after")]
    assert m4.reading == "below"
    assert m4.ci_low < m4.mean < m4.ci_high
    grpo = row[("n sweep", 16, 16, "max_variance", "after")]
    assert grpo.diff == pytest.approx(-0.04)
    assert grpo.reading == "below"
    assert row[("n sweep", 128, 16, "max_variance", "after")].reading == "level"  # seeds 0.79 / 0.84 / 0.89
    assert row[("normalisation", 64, 16, "max_variance", "before")].reading == "level"


def test_the_difference_s_interval_is_welch_s_t_on_per_seed_window_means(tmp_path):
    """m = 4 against the reference, per seed over the window: 0.698 / 0.700 / 0.702 against 0.838 / 0.840 / 0.842.
    Equal spreads and seeds: Welch-Satterthwaite gives 4 degrees of freedom, t_4 at 0.975 = 2.776445 (a printed
    table's value), SE = sqrt(2 x 0.002^2 / 3). The arm's mean: t_2 at 0.975 = 4.302653 times 0.002 / sqrt(3).
    The percentile bootstrap of the same means gave [-14.27, -13.73] and [69.8, 70.2] points."""
    table = ablation_table(_curves())
    m4 = table[(table["group"] == "m sweep") & (table["m"] == 4)].iloc[0]
    half = 2.776445 * math.sqrt(2 * 0.002**2 / 3)
    assert (m4["diff_low"], m4["diff_high"]) == pytest.approx((-0.14 - half, -0.14 + half), abs=1e-6)
    half_mean = 4.302653 * 0.002 / math.sqrt(3)
    assert (m4["ci_low"], m4["ci_high"]) == pytest.approx((0.70 - half_mean, 0.70 + half_mean), abs=1e-6)
    md = write_ablation_table(table, tmp_path / "ablations")[1].read_text()
    assert "| m sweep | pods 64/4 | 3, 80.0, 70.0 [69.5, 70.5]; -14.0 [-14.5, -13.5] |" in md
    assert "95% Welch t-interval" in md
    # unequal spreads: n = 128's seeds 0.79 / 0.84 / 0.89 (sd 0.05) against the reference's sd 0.002, about 2
    # degrees of freedom, Welch's SE from each arm's own variance: wider than t_4 x the pooled SE would be
    n128 = table[(table["group"] == "n sweep") & (table["n"] == 128)].iloc[0]
    va, vb = 0.05**2 / 3, 0.002**2 / 3
    df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 2)
    assert 2.0 < df < 2.02  # t quantile between t_2's 4.302653 and t_3's 3.182446, close to t_2's
    width = n128["diff_high"] - n128["diff_low"]
    assert 2 * 4.2 * math.sqrt(va + vb) < width < 2 * 4.302653 * math.sqrt(va + vb)
    assert n128["reading"] == "level"


def test_released_logs_are_read_per_hour_and_per_step_and_set_beside_ours(tmp_path):
    # Released-like arms: 0.5 h grid; n = 256 takes 4x the steps' time, so its span in steps is the shortest.
    rel = []
    hour = 3600.0
    rel += _arm("a", 16, 16, [[0.80, 0.81, 0.82, 0.83]] * 2, [100, 200, 300, 400], role="baseline", dt=hour)
    rel += _arm("a", 64, 16, [[0.82, 0.83, 0.84, 0.85]] * 2, [75, 150, 225, 300], role="pods", dt=hour)
    rel += _arm("a", 256, 16, [[0.83, 0.84, 0.85, 0.86]] * 2, [25, 50, 75, 100], dt=hour)
    rel += _arm("a", 64, 16, [[0.60, 0.60, 0.60, 0.60], [0.62] * 4], [75, 150, 225, 300], rule="max_reward", dt=hour)
    table = ablation_table(_curves(), pd.DataFrame(rel), n_boot=500)
    released = table[table["source"] == "released"]
    one = ["n", "rule"]  # the reference arm is a row of each group: keep one
    per_hour = released[released["axis"] == "time_s"].drop_duplicates(one).set_index(one)
    per_step = released[released["axis"] == "step"].drop_duplicates(one).set_index(one)
    assert (per_hour["span"] == 4 * hour).all()
    assert (per_hour["window_from"] == 2 * hour).all()
    assert per_hour.loc[(256, "max_variance"), "diff"] == pytest.approx(0.01)  # hours 2-4: 0.845 vs 0.835
    assert (per_step["span"] == 100).all()  # n = 256 reaches step 100 only; the others are cut there
    assert per_step.loc[(16, "max_variance"), "mean"] == pytest.approx(0.80)  # GRPO's step 100
    assert per_step.loc[(64, "max_variance"), "mean"] == pytest.approx(0.82)  # PODS's step 75
    assert per_step.loc[(256, "max_variance"), "mean"] == pytest.approx(0.85)  # steps 50, 75 and 100
    assert per_step.loc[(64, "max_reward"), "reading"] == "below"
    md = write_ablation_table(table, tmp_path / "ablations")[1].read_text()
    line = next(x for x in md.splitlines() if "pods_max_reward 64/16" in x)
    assert line.endswith("| agrees |")  # both below: here -29 points, released -21 per step
    assert "no released logs" in next(x for x in md.splitlines() if "pods_before 64/16" in x)
    assert "released logs per step: mean over steps 50-100" in md


def test_one_seed_has_no_interval_and_no_reading():
    curves = _curves()
    table = ablation_table(curves[curves["seed"] == 0], n_boot=200)
    rows = table[~table["reference"]]
    assert rows["ci_low"].isna().all()
    assert (rows["reading"] == "-").all()
    assert not math.isnan(float(rows["diff"].iloc[0]))


def test_agreement_reads_direction_not_significance_alone():
    assert _agreement("below", "below") == "agrees"
    assert _agreement("level", "level") == "level in both"
    assert _agreement("level", "below") == "not resolved here"
    assert _agreement("above", "level") == "here only"
    assert _agreement("above", "below") == "disagrees"
    assert _agreement("-", "below") == "-"


def test_cli_ablations_writes_the_tables_and_refuses_bad_input(tmp_path, capsys):
    curves = tmp_path / "curves.csv"
    _curves().to_csv(curves, index=False)
    assert (
        analysis_main(["ablations", "--curves", str(curves), "--out-dir", str(tmp_path / "t"), "--n-boot", "200"]) == 0
    )
    assert "**Setting (a)**" in capsys.readouterr().out
    csv = pd.read_csv(tmp_path / "t" / "ablations.csv")
    assert len(csv) == 9
    assert set(csv["group"]) == {"n sweep", "m sweep", "rule", "normalisation"}
    assert "pods_max_reward 64/16" in (tmp_path / "t" / "ablations.md").read_text()
    assert analysis_main(["ablations", "--out-dir", str(tmp_path / "u")]) == 2
    assert "pass --curves" in capsys.readouterr().err
    assert (
        analysis_main(["ablations", "--curves", str(tmp_path / "missing.csv"), "--out-dir", str(tmp_path / "u")]) == 2
    )
    with pytest.raises(SystemExit) as exc:
        analysis_main(["ablations", "--curves", str(curves), "--out-dir", str(tmp_path / "u"), "--window", "1.5"])
    assert exc.value.code == 2
    assert "in (0, 1]" in capsys.readouterr().err


def test_an_arm_without_an_evaluation_in_the_window_is_reported_empty_not_a_crash():
    """An arm whose grid skips the window (evaluated at steps 20 and 70; the span is 60, the window 30-60) gets
    no mean and no reading instead of stopping the table."""
    curves = _curves()
    curves = curves[~((curves["n"] == 128) & curves["step"].isin([40, 60]))]
    coarse = _arm("a", 128, 16, [[0.8, 0.8]] * 3, [20, 70])
    rows = ablation_table(pd.concat([curves[curves["n"] != 128], pd.DataFrame(coarse)]), n_boot=200)
    sparse_row = rows[(rows["n"] == 128) & (rows["group"] == "n sweep")].iloc[0]
    assert sparse_row["n_evals"] == 0
    assert math.isnan(sparse_row["mean"])
    assert sparse_row["reading"] == "-"


def test_an_arm_s_intervals_do_not_depend_on_which_other_arms_the_table_holds():
    """Each arm's intervals read its own seeds and the reference's alone: dropping the n = 128 arm, listed before
    the m sweep and the rule and normalisation arms, leaves their intervals as they were."""
    curves = _curves()
    cols = ["ci_low", "ci_high", "diff_low", "diff_high"]
    keys = ["group", "n", "m", "rule", "normalize"]
    whole = ablation_table(curves, n_boot=300).set_index(keys)
    fewer = ablation_table(curves[curves["n"] != 128], n_boot=300).set_index(keys)
    later = [("m sweep", 64, 4, "max_variance", "after"), ("normalisation", 64, 16, "max_variance", "before")]
    assert whole.loc[later, "ci_high"].gt(whole.loc[later, "ci_low"]).all()  # intervals with a width to shift
    pd.testing.assert_frame_equal(whole.loc[fewer.index, cols], fewer[cols])
