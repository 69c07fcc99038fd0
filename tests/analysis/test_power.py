"""Tests of pods_repro.analysis.power: the projected width of speed-up (i)'s interval with N seeds per arm (`analysis seeds`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pods_repro.analysis.cli import main as analysis_main
from pods_repro.analysis.power import seed_projection

STEPS = list(range(25, 625, 25))  # 24 evaluations, as the tiny (a) main arms


@pytest.fixture
def helpers(analysis_helpers):
    return analysis_helpers


def _arm(helpers, arm, n, role, speed, seeds, sigma_seed, sigma_eval, rng):
    """Seeds of a saturating curve 0.7 + 0.2 (1 - exp(-speed * step / 100)), a per-seed offset and per-evaluation
    noise of the given sds."""
    steps = np.array(STEPS, float)
    trend = 0.7 + 0.2 * (1 - np.exp(-speed * steps / 100))
    values = [trend + rng.normal(0, sigma_seed) + rng.normal(0, sigma_eval, len(steps)) for _ in range(seeds)]
    rows = helpers._tidy_arm("a", arm, n, 16, [v.tolist() for v in values], [STEPS] * seeds)
    extra = {"role": role, "primary_dataset": "gsm8k", "source": f"runs/{arm}"}
    return [dict(r, time_s_raw=r["time_s"], **extra) for r in rows]


def _curves(helpers, seeds=16, sigma_seed=0.005, sigma_eval=0.02, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        _arm(helpers, "grpo", 16, "baseline", 1.0, seeds, sigma_seed, sigma_eval, rng)
        + _arm(helpers, "pods", 64, "pods", 2.0, seeds, sigma_seed, sigma_eval, rng)
    )


def test_the_fitted_noise_is_the_simulated_one_and_more_seeds_narrow_the_interval(helpers):
    table = seed_projection(_curves(helpers), seeds=[8, 32, 128], sims=60, n_boot=500).set_index("seeds_per_arm")
    # the model recovers the noise it was given (per-evaluation 0.02; the per-seed offset is small)
    for arm in ("baseline", "pods"):
        assert table[f"{arm}_sigma_eval"].iloc[0] == pytest.approx(0.02, rel=0.2)
        assert table[f"{arm}_sigma_seed"].iloc[0] < 0.012
        assert table[f"{arm}_misfit"].iloc[0] < 2.5
    widths = table["width"]
    assert widths[8] > widths[32] > widths[128]
    assert widths[128] < 0.5 * widths[8]
    # PODS learns twice as fast per step: (i) near 2 once the noise averages out
    assert 1.5 <= table.loc[128, "median"] <= 2.6
    assert table.loc[128, "ci_low"] <= table.loc[128, "median"] <= table.loc[128, "ci_high"]
    assert (table["note"] == "").all()
    # the measured interval (16 seeds) sits beside every row
    assert (table["measured_seeds"] == "16 + 16").all()
    assert table["measured_ci_low"].nunique() == 1
    assert table["measured_ci_low"].iloc[0] < table["measured_ci_high"].iloc[0]
    # no seed offsets at all: the offsets' spread is the evaluation noise averaged over 24 evaluations, which
    # the model takes out (else a sigma_seed of 0.04 / sqrt(24) = 0.008 would appear)
    flat = seed_projection(_curves(helpers, seeds=64, sigma_seed=0.0, sigma_eval=0.04), seeds=[8], sims=5, n_boot=200)
    assert flat["baseline_sigma_seed"].iloc[0] < 0.0065
    assert flat["pods_sigma_seed"].iloc[0] < 0.0065
    # deterministic for a seed
    again = seed_projection(_curves(helpers), seeds=[8, 32, 128], sims=60, n_boot=500).set_index("seeds_per_arm")
    pd.testing.assert_frame_equal(table, again)


def test_each_simulated_and_the_measured_interval_is_the_time_to_peak_table_s_expanded_percentile(helpers):
    """The projected interval is the one the time-to-peak table prints for (i): intervals.ratio_interval's expanded
    percentile bootstrap over seeds, in every simulated experiment (drawn here from the same generator, the same
    way: each arm's seeds as trend + offset + noise, then the resamples) and on the measured seeds. The plain
    percentile of the same resamples is narrower: this projection used to report it (over resamples in which
    PODS reached the target)."""
    from pods_repro.analysis import intervals, power
    from pods_repro.analysis.curves import arm_matrices as arm_of

    curves = _curves(helpers, sigma_eval=0.03)
    steps_T = np.array(STEPS, float)
    x_T = np.log(steps_T)
    mats = [arm_of(curves[curves["arm"] == a]) for a in ("grpo", "pods")]
    fb, fp = (power._fit_arm(m.values_S_T, x_T) for m in mats)
    sim = power._simulate(fb, fp, steps_T, 8, 0.99, 4, 400, np.random.default_rng(7))
    rng = np.random.default_rng(7)
    seeds_E_S_T = [
        fit["trend"] + rng.normal(0, fit["sigma_seed"], (4, 8, 1)) + rng.normal(0, fit["sigma_eval"], (4, 8, 24))
        for fit in (fb, fp)
    ]
    both = intervals.ratio_interval(*seeds_E_S_T, steps_T, rng=rng, n_boot=400, method=("percentile", "expanded"))
    assert sim["low"] == pytest.approx(both["expanded"]["low"])
    assert sim["high"] == pytest.approx(both["expanded"]["high"])
    wide = {m: both[m]["high"] - both[m]["low"] for m in both}
    assert (wide["expanded"] >= wide["percentile"]).all()  # the step grid makes some equal
    assert (wide["expanded"] > wide["percentile"]).any()
    # the measured interval: the same method on the measured seeds (their own steps), drawn from the boot seed
    row = seed_projection(curves, seeds=[8], sims=2, n_boot=400, seed=3).iloc[0]
    measured = intervals.ratio_interval(
        mats[0].values_S_T, mats[1].values_S_T, mats[0].steps_S_T, pods_steps_T=mats[1].steps_S_T,
        rng=np.random.default_rng(3), n_boot=400,
    )  # fmt: skip
    assert (row["measured_ci_low"], row["measured_ci_high"]) == pytest.approx((measured["low"], measured["high"]))


def test_below_five_seeds_per_arm_there_is_no_interval_and_the_row_says_why(helpers, tmp_path):
    """At 3 seeds per arm no interval held 95% in simulation: the time-to-peak table gives none, so the projection
    reports n/a (the point and the never share stand), and so does the measured interval of a 4-seed run."""
    from pods_repro.analysis.power import write_seed_projection

    table = seed_projection(_curves(helpers, seeds=4), seeds=[3, 5], sims=20, n_boot=200)
    three, five = table.iloc[0], table.iloc[1]
    assert np.isnan([three["ci_low"], three["ci_high"], three["width"], three["p_low_zero"]]).all()
    assert "3 seeds in the smaller arm, below the 5 per arm" in three["note"]
    assert 1.0 < three["median"] < 3.0
    assert five["note"] == ""
    assert five["ci_low"] < five["median"] < five["ci_high"]
    assert np.isnan(table["measured_ci_low"]).all()
    assert "4 seeds in the smaller arm" in table["measured_note"].iloc[0]
    md = write_seed_projection(table, tmp_path / "seeds")[1].read_text()
    assert "| a | 3 | " in md
    assert "| n/a | n/a |" in md
    assert "| 4 + 4: n/a |" in md
    assert "n/a: no interval: 3 seeds in the smaller arm" in md
    assert "expanded percentile bootstrap" in md


def test_a_pods_arm_that_often_never_reaches_the_target_gets_a_lower_end_of_0(helpers):
    """PODS saturating just under 0.99 x the baseline's peak misses the target in many resamples; each counts as
    speed-up 0, so the interval starts at 0 (the projection used to take quantiles of the reached ones only)."""
    rng = np.random.default_rng(0)
    steps = np.array(STEPS, float)
    rows = []
    for arm, n, role, top in (("grpo", 16, "baseline", 0.90), ("pods", 64, "pods", 0.89)):
        trend = 0.7 + (top - 0.7) * (1 - np.exp(-steps / 100))
        values = [trend + rng.normal(0, 0.01, len(steps)) for _ in range(8)]
        rows += [
            dict(r, role=role, primary_dataset="gsm8k", source=arm, time_s_raw=r["time_s"])
            for r in helpers._tidy_arm("a", arm, n, 16, [v.tolist() for v in values], [STEPS] * 8)
        ]
    row = seed_projection(pd.DataFrame(rows), seeds=[16], sims=40, n_boot=400).iloc[0]
    assert row["p_low_zero"] > 0.5
    assert row["ci_low"] == 0.0
    assert row["measured_ci_low"] == 0.0


def test_noise_free_arms_on_the_model_s_own_trend_project_a_point(helpers):
    """Curves that are exactly quadratic in log(step) and the same for every seed: no noise, one ratio."""
    x = np.log(np.array(STEPS, float))
    rows = []
    for arm, n, role, shift in (("grpo", 16, "baseline", 0.0), ("pods", 64, "pods", np.log(2.0))):
        curve = (0.5 + 0.1 * (x + shift) - 0.008 * (x + shift) ** 2).tolist()
        rows += [
            dict(r, role=role, primary_dataset="gsm8k", source=arm, time_s_raw=r["time_s"])
            for r in helpers._tidy_arm("a", arm, n, 16, [curve] * 4, [STEPS] * 4)
        ]
    row = seed_projection(pd.DataFrame(rows), seeds=[8], sims=20, n_boot=200).iloc[0]
    assert row["baseline_sigma_eval"] < 1e-9
    assert row["baseline_sigma_seed"] < 1e-9
    assert row["width"] == 0.0
    assert row["ci_low"] == row["median"] == row["ci_high"] == pytest.approx(2.0, rel=0.15)
    assert row["p_pods_never"] == 0.0
    assert row["p_low_zero"] == 0.0


def test_cli_seeds_writes_the_tables_and_says_which_width_is_reached(helpers, tmp_path, capsys):
    curves = tmp_path / "curves.csv"
    one_seed = _curves(helpers, seeds=1, seed=1).assign(setting="c", setting_name="c")  # skipped unless named
    pd.concat([_curves(helpers), one_seed]).to_csv(curves, index=False)
    out = tmp_path / "tables"
    args = ["seeds", "--curves", str(curves), "--out-dir", str(out), "--seeds", "8,64", "--sims", "20"]
    assert analysis_main(args + ["--n-boot", "200"]) == 0
    table = pd.read_csv(out / "seeds.csv")
    assert table["seeds_per_arm"].tolist() == [8, 64]
    assert set(table["setting"]) == {"a"}
    assert "(a): median width <= 1" in (out / "seeds.md").read_text()
    assert analysis_main(args + ["--width", "50", "--n-boot", "200"]) == 0
    assert "(a): median width <= 50 from 8 seeds per arm" in (out / "seeds.md").read_text()
    assert analysis_main(args + ["--width", "0.001", "--n-boot", "200"]) == 0
    assert "(a): median width <= 0.001 not reached with up to 64 seeds per arm" in (out / "seeds.md").read_text()
    capsys.readouterr()
    with pytest.raises(SystemExit) as too_few:  # the expanded interval reads the resamples' tails: >= 100
        analysis_main(args + ["--n-boot", "50"])
    assert too_few.value.code == 2
    assert "'50' is not a whole number in 100..100000" in capsys.readouterr().err
    assert analysis_main(args + ["--setting", "e"]) == 2
    assert "--setting e: not in" in capsys.readouterr().err
    assert analysis_main(args + ["--setting", "c"]) == 2
    assert "setting c: an arm has one seed" in capsys.readouterr().err
    for bad in ("0", "8,2.5", "8,x"):
        with pytest.raises(SystemExit) as exc:
            analysis_main(["seeds", "--curves", str(curves), "--out-dir", str(out), "--seeds", bad])
        assert exc.value.code == 2
    assert "whole numbers >= 2" in capsys.readouterr().err
    # nothing projectable and no setting named (the workflow at one seed per arm): a table that says so
    one_only = tmp_path / "one.csv"
    one_seed.to_csv(one_only, index=False)
    assert analysis_main(["seeds", "--curves", str(one_only), "--out-dir", str(tmp_path / "one")]) == 0
    assert (tmp_path / "one" / "seeds.md").read_text().startswith("No setting could be projected")
    assert analysis_main(["seeds", "--curves", str(tmp_path / "nope.csv"), "--out-dir", str(out)]) == 2
    assert "is missing or empty" in capsys.readouterr().err
