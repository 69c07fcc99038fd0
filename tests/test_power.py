"""Tests of pods.analysis.power: the projected width of speed-up (i)'s interval with N seeds per arm (`analysis seeds`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pods.analysis.cli import main as analysis_main
from pods.analysis.power import seed_projection

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
    table = seed_projection(_curves(helpers), seeds=[8, 32, 256], sims=2000).set_index("seeds_per_arm")
    # the model recovers the noise it was given (per-evaluation 0.02; the per-seed offset is small)
    for arm in ("baseline", "pods"):
        assert table[f"{arm}_sigma_eval"].iloc[0] == pytest.approx(0.02, rel=0.2)
        assert table[f"{arm}_sigma_seed"].iloc[0] < 0.012
        assert table[f"{arm}_misfit"].iloc[0] < 2.5
    widths = table["width"]
    assert widths[8] > widths[32] > widths[256]
    assert widths[256] < 0.5 * widths[8]
    # PODS learns twice as fast per step: (i) near 2 once the noise averages out
    assert 1.5 <= table.loc[256, "median"] <= 2.6
    assert table.loc[256, "ci_low"] <= table.loc[256, "median"] <= table.loc[256, "ci_high"]
    # the measured bootstrap interval (16 seeds) sits beside every row
    assert (table["measured_seeds"] == "16 + 16").all()
    assert table["measured_ci_low"].nunique() == 1
    assert table["measured_ci_low"].iloc[0] < table["measured_ci_high"].iloc[0]
    # no seed offsets at all: the offsets' spread is the evaluation noise averaged over 24 evaluations, which
    # the model takes out (else a sigma_seed of 0.04 / sqrt(24) = 0.008 would appear)
    flat = seed_projection(_curves(helpers, seeds=64, sigma_seed=0.0, sigma_eval=0.04), seeds=[8], sims=100)
    assert flat["baseline_sigma_seed"].iloc[0] < 0.0065
    assert flat["pods_sigma_seed"].iloc[0] < 0.0065
    # deterministic for a seed
    again = seed_projection(_curves(helpers), seeds=[8, 32, 256], sims=2000).set_index("seeds_per_arm")
    pd.testing.assert_frame_equal(table, again)


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
    row = seed_projection(pd.DataFrame(rows), seeds=[8], sims=200).iloc[0]
    assert row["baseline_sigma_eval"] < 1e-9
    assert row["baseline_sigma_seed"] < 1e-9
    assert row["width"] == 0.0
    assert row["ci_low"] == row["median"] == row["ci_high"] == pytest.approx(2.0, rel=0.15)
    assert row["p_pods_never"] == 0.0


def test_cli_seeds_writes_the_tables_and_says_which_width_is_reached(helpers, tmp_path, capsys):
    curves = tmp_path / "curves.csv"
    one_seed = _curves(helpers, seeds=1, seed=1).assign(setting="c", setting_name="c")  # skipped unless named
    pd.concat([_curves(helpers), one_seed]).to_csv(curves, index=False)
    out = tmp_path / "tables"
    args = ["seeds", "--curves", str(curves), "--out-dir", str(out), "--seeds", "8,64", "--sims", "500"]
    assert analysis_main(args + ["--n-boot", "200"]) == 0
    table = pd.read_csv(out / "seeds.csv")
    assert table["seeds_per_arm"].tolist() == [8, 64]
    assert set(table["setting"]) == {"a"}
    assert "(a): width <= 1" in (out / "seeds.md").read_text()
    assert analysis_main(args + ["--width", "50"]) == 0
    assert "(a): width <= 50 from 8 seeds per arm" in (out / "seeds.md").read_text()
    assert analysis_main(args + ["--width", "0.001"]) == 0
    assert "(a): width <= 0.001 not reached with up to 64 seeds per arm" in (out / "seeds.md").read_text()
    capsys.readouterr()
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
