"""Tests of pods_repro.analysis: time-to-peak, bootstrap, tidy loaders, the released-logs re-analysis.

The released-logs tests check the numbers recomputed from the authors' files (docs/paper.md#table-3), so
they pin the checkpoint-to-grid mapping; they are skipped when ../shared/reference is absent.
`write_run` (fake run directories in the docs/design.md schema) is also used by test_figures.py.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pods_repro.analysis.cli import main as analysis_main
from pods_repro.analysis.collect import load_run_steps, load_runs
from pods_repro.analysis.curves import mean_curve
from pods_repro.analysis.paper_clock import cost_model, paper_clock
from pods_repro.analysis.plateau import baseline_plateau_share
from pods_repro.analysis.released import read_released
from pods_repro.analysis.speedups import (
    Comparison,
    bootstrap_speedup,
    default_comparisons,
    printed_speedup,
    released_comparisons,
    seconds_per_step,
    speedup_table,
    time_to_peak,
    write_table,
)
from pods_repro.analysis.tidy import (
    CURVE_COLUMNS,
    AnalysisInputError,
    arm_label,
    select,
    setting_letter,
    summarize_benchmark,
    time_unit,
)

REPO = Path(__file__).resolve().parents[2]
RELEASED = REPO.parent / "shared" / "reference" / "pods-released-results"
needs_released = pytest.mark.skipif(
    not RELEASED.is_dir(), reason=f"authors' released logs not found at {RELEASED} (../shared/reference)"
)


# ----------------------------------------------------------------------------------------------
# fake run directories


def write_run(
    root,
    setting,
    n,
    m,
    seed,
    accs,
    *,
    rule="max_variance",
    normalize="after",
    ga=1,
    every_s=100.0,
    step_s=10.0,
    jitter=3.0,
    lengths=None,
    datasets=("gsm8k",),
    extra_eval=None,
    every_steps=None,
):
    """A finished run directory: eval every `every_s` training seconds (logged `jitter` s late),
    accuracy `accs[k]` at grid point k (k = 0 is the base model), one step every `step_s` s."""
    extra = ("_norm~before" if normalize == "before" else "") + (f"_ga~{ga}" if ga > 1 else "")
    d = Path(root) / setting / f"sel~{rule}_n~{n}_m~{m}{extra}" / f"seed~{seed}"
    d.mkdir(parents=True)
    cfg = {
        "setting": setting,
        "seed": seed,
        "rollout": {"n": n, "m": m, "rule": rule, "normalize": normalize},
        "optim": {"grad_accum": ga},
        "eval": {"every_s": every_s, "every_steps": every_steps, "datasets": list(datasets)},
        "meta": {"git": "x"},
    }
    (d / "config.json").write_text(json.dumps(cfg))
    evals = []
    for k, acc in enumerate(accs):
        t = 0.0 if k == 0 else k * every_s + jitter
        for ds in datasets:
            evals.append(
                {
                    "step": int(t // step_s),
                    "time_s": t,
                    "dataset": ds,
                    "accuracy": acc,
                    "format_accuracy": 1.0,
                    "both_accuracy": acc,
                    "n_examples": 10,
                    "repeats": 1,
                    "completion_len_mean": (lengths or [100.0] * len(accs))[k],
                    "eval_time_s": 1.0,
                }
            )
    evals += extra_eval or []
    (d / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
    horizon = (len(accs) - 1) * every_s + jitter
    steps = [
        {
            "step": s,
            "time_s": s * step_s,
            "gen_time_s": 0.7 * step_s,
            "update_time_s": 0.3 * step_s,
            "completion_len_mean": 50.0 + s,
            "peak_mem_mb": 10.0 + s,
        }
        for s in range(1, int(horizon // step_s) + 1)
    ]
    (d / "metrics.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    # what the trainer writes last: a finished summary that agrees with the logs (collect checks it)
    (d / "summary.json").write_text(json.dumps({"status": "finished", "steps": len(steps), "n_evals": len(evals)}))
    return d


def fake_tree(root) -> Path:
    """Setting a_toy: GRPO (n=m=4) reaches its peak 0.8 at grid 3, PODS (n=16, m=4) at grid 1:
    speed-up 3.0. Also a random-rule and a normalize=before arm, and a GA setting e_toy."""
    root = Path(root)
    for seed, noise in enumerate([0.0, 0.02, -0.02]):
        write_run(
            root, "a_toy", 4, 4, seed, [0.2, 0.5 + noise, 0.7, 0.8 + noise, 0.79], lengths=[90, 95, 100, 105, 110]
        )
        write_run(
            root,
            "a_toy",
            16,
            4,
            seed,
            [0.2, 0.8 + noise, 0.82, 0.83, 0.84],
            lengths=[90, 80, 75, 70, 70],
            datasets=("gsm8k", "math"),
        )
        write_run(root, "a_toy", 16, 4, seed, [0.2, 0.6, 0.7, 0.75, 0.8], rule="random")
        write_run(root, "a_toy", 16, 4, seed, [0.2, 0.3, 0.5, 0.7, 0.8], normalize="before")
        write_run(root, "a_toy", 8, 4, seed, [0.2, 0.7, 0.75, 0.8, 0.81], step_s=8.0)
        write_run(root, "e_toy", 4, 4, seed, [0.0, 0.1, 0.5, 0.7, 0.7], ga=4, every_s=120.0)
        write_run(root, "e_toy", 16, 4, seed, [0.0, 0.4, 0.7, 0.72, 0.71], ga=1, every_s=120.0)
    return root


def fake_sheet(path) -> Path:
    """The run sheet of `fake_tree`: its `role` rows are each setting's main comparison."""
    rows = [
        ("a", "max_variance", 4, 4, "", "baseline"),
        ("a", "max_variance", 16, 4, "", "pods"),
        ("a", "max_variance", 8, 4, "", ""),
        ("a", "random", 16, 4, "", ""),
        ("a", "max_variance", 16, 4, "norm~before", ""),
        ("e", "max_variance", 4, 4, "ga~4", "baseline"),
        ("e", "max_variance", 16, 4, "", "pods"),
    ]
    lines = ["setting\trule\tn\tm\textra\trole\tseeds\tfigures\tnote"]
    lines += ["\t".join(map(str, r)) + "\tmain\tfig_3_main\tfake" for r in rows]
    Path(path).write_text("\n".join(lines) + "\n")
    return Path(path)


# ----------------------------------------------------------------------------------------------
# time-to-peak


def test_time_to_peak_golden():
    base = pd.Series({0.0: 0.5, 10.0: 0.6, 20.0: 0.8, 30.0: 0.9, 40.0: 0.85})
    pods = pd.Series({0.0: 0.5, 10.0: 0.7, 20.0: 0.895, 30.0: 0.91})
    res = time_to_peak(base, pods)
    assert res["peak"] == pytest.approx(0.9)
    assert res["target"] == pytest.approx(0.891)
    assert (res["t_baseline_s"], res["t_pods_s"], res["t_peak_s"]) == (30.0, 20.0, 30.0)
    assert res["speedup"] == pytest.approx(1.5)
    # threshold 1.0: PODS must reach 0.9 itself, first at 30 s.
    assert time_to_peak(base, pods, threshold=1.0)["speedup"] == pytest.approx(1.0)


def test_time_to_peak_excludes_t0_and_accepts_mean_curve_frames():
    base = pd.DataFrame({"time_s": [0.0, 10.0, 20.0], "mean": [1.0, 0.5, 0.6]})  # t = 0 is the highest
    pods = pd.DataFrame({"time_s": [0.0, 10.0], "mean": [1.0, 0.6]})
    res = time_to_peak(base, pods)
    assert res["peak"] == pytest.approx(0.6)
    assert res["t_baseline_s"] == 20.0
    assert res["speedup"] == pytest.approx(2.0)


def test_time_to_peak_never_reached_and_empty_baseline():
    res = time_to_peak(pd.Series({10.0: 0.8, 20.0: 0.9}), pd.Series({10.0: 0.5, 20.0: 0.6}))
    assert res["t_pods_s"] == math.inf
    assert math.isnan(res["speedup"])  # no number: "never" (it used to be coded 0)
    assert not res["pods_reached"]
    res = time_to_peak(pd.Series({10.0: 0.8}), pd.Series({0.0: 0.9}))  # PODS only has t = 0
    assert not res["pods_reached"]
    with pytest.raises(ValueError, match="baseline curve has no points"):
        time_to_peak(pd.Series({0.0: 0.8}), pd.Series({10.0: 0.9}))


def test_printed_speedup_truncates_like_the_paper():
    assert [printed_speedup(x) for x in (1.75, 12 / 7, 2.0, 0.3 / 0.1, 5400 / 1800)] == [1.7, 1.7, 2.0, 3.0, 3.0]


def test_mean_curve_sem_band():
    df = pd.DataFrame(
        {
            "arm": "pods",
            "seed": [0, 1, 0, 1, 2],
            "grid": [1, 1, 2, 2, 2],
            "time_s": [10.0, 10.0, 20.0, 20.0, 20.0],
            "value": [0.1, 0.3, 0.5, 0.5, 0.8],
        }
    )
    mc = mean_curve(df, keys=["arm"])
    first, second = mc.iloc[0], mc.iloc[1]
    assert first["mean"] == pytest.approx(0.2)
    assert first["sem"] == pytest.approx(0.1)
    assert first["lo"] == pytest.approx(0.2 - 0.196)
    assert first["hi"] == pytest.approx(0.2 + 0.196)
    assert second["n_seeds"] == 3
    assert second["sem"] == pytest.approx(np.std([0.5, 0.5, 0.8], ddof=1) / np.sqrt(3))
    single = mean_curve(df[df["seed"] == 2], keys=["arm"])
    assert single["sem"].iloc[0] == 0.0  # one seed: no band (the authors' convention)


def _runs(curves_by_seed):
    return pd.DataFrame(
        [
            {"seed": s, "grid": k, "time_s": 10.0 * k, "step": 5 * k, "value": v}
            for s, vals in enumerate(curves_by_seed)
            for k, v in enumerate(vals)
        ]
    )


def test_bootstrap_is_deterministic_and_brackets_the_estimate():
    rng = np.random.default_rng(1)
    base = _runs([[0.1, 0.5, 0.7, 0.8, 0.8] + rng.normal(0, 0.03, 5) for _ in range(6)])
    pods = _runs([[0.1, 0.7, 0.8, 0.82, 0.83] + rng.normal(0, 0.03, 5) for _ in range(6)])
    one = bootstrap_speedup(base, pods, n_boot=500, seed=3)
    two = bootstrap_speedup(base, pods, n_boot=500, seed=3)
    assert np.array_equal(one["samples"], two["samples"])
    assert len(one["samples"]) == 500
    point = time_to_peak(mean_curve(base, keys=[]), mean_curve(pods, keys=[]))["speedup"]
    assert one["ci_low"] <= point <= one["ci_high"]
    assert not np.array_equal(one["samples"], bootstrap_speedup(base, pods, n_boot=500, seed=4)["samples"])


def test_bootstrap_identical_seeds_collapse_to_point_and_counts_never_as_a_share():
    base, pods = _runs([[0, 0.5, 0.9, 0.9]] * 5), _runs([[0, 0.9, 0.9, 0.9]] * 5)
    boot = bootstrap_speedup(base, pods, n_boot=200)
    assert boot["ci_low"] == boot["ci_high"] == pytest.approx(2.0)
    assert boot["speedup_steps_ci_low"] == boot["speedup_steps_ci_high"] == pytest.approx(2.0)
    assert boot["p_never"] == 0.0
    slow = _runs([[0, 0.1, 0.2, 0.3]] * 5)
    never = bootstrap_speedup(base, slow, n_boot=50)
    assert never["p_never"] == 1.0  # every resample: PODS never reached the target
    # never-reached resamples count, as a speed-up of 0: the interval is [0, 0], not empty
    assert never["ci_low"] == never["ci_high"] == 0.0
    assert never["speedup_steps_ci_high"] == 0.0
    assert math.isnan(never["speedup_steps_cond_high"])  # no resample reached: no conditional interval


def test_never_reached_resamples_count_in_the_interval_and_the_conditional_one_stands_beside():
    """Half of PODS's seeds reach the target, half never do: resamples in which the mean curve misses it are
    a speed-up of 0 and pull the lower end to 0 (they are results, not gaps); the interval over the reached
    resamples alone is the conditional one, reported beside it."""
    base = _runs([[0, 0.5, 0.9, 0.9]] * 6)
    pods = _runs([[0, 0.95, 0.95, 0.95]] * 3 + [[0, 0.5, 0.6, 0.7]] * 3)
    boot = bootstrap_speedup(base, pods, n_boot=2000, seed=1)
    assert 0.05 < boot["p_never"] < 0.95
    assert boot["speedup_steps_ci_low"] == 0.0
    assert boot["speedup_steps_cond_low"] > 0.0
    assert boot["speedup_steps_ci_high"] == boot["speedup_steps_cond_high"]


def test_no_speedup_interval_below_five_seeds_per_arm():
    """At 3-4 seeds per arm no bootstrap interval of a first-reach ratio held 95% coverage in simulation
    (pods_repro.analysis.intervals), so none is printed: NaN, and the point and never share still stand."""
    base, pods = _runs([[0, 0.5, 0.9, 0.9]] * 4), _runs([[0, 0.9, 0.9, 0.9]] * 4)
    boot = bootstrap_speedup(base, pods, n_boot=200)
    assert math.isnan(boot["ci_low"])
    assert math.isnan(boot["speedup_steps_ci_high"])
    assert boot["p_never"] == 0.0


# ----------------------------------------------------------------------------------------------
# naming and tables


def test_arm_label_and_setting_letter():
    assert arm_label(16, 16, "random") == "grpo"
    assert arm_label(32, 32, grad_accum=16) == "grpo_ga"
    assert arm_label(128, 32, grad_accum=4) == "pods"
    assert arm_label(64, 16, "max_reward") == "pods_max_reward"
    assert arm_label(64, 16, "max_variance", "before") == "pods_before"
    assert setting_letter("a_gsm8k_qwen3b") == "a"
    assert setting_letter("tiny_e") == "e"
    assert setting_letter("gsm8k_main") is None
    assert setting_letter("gsm8k_main", {"gsm8k_main": "b"}) == "b"
    assert time_unit(21600) == ("hours", 3600.0)
    assert time_unit(1800) == ("minutes", 60.0)
    assert time_unit(300)[0] == "seconds"


def test_write_table(tmp_path):
    table = pd.DataFrame(
        [
            {
                "setting": "a",
                "baseline": "grpo n=16",
                "pods": "pods n=64",
                "metric": "both_accuracy",
                "grid_s": 1800.0,
                "threshold": 0.99,
                "speedup": 2.0,
                "speedup_exact": 2.0,
                "ci_low": 1.0,
                "ci_high": math.nan,
                "t_pods_s": math.inf,
            }
        ]
    )
    csv, md, tex = write_table(table, tmp_path / "sub" / "ttp")
    assert pd.read_csv(csv)["speedup"].tolist() == [2.0]
    text = md.read_text()
    assert "| a | grpo n=16 |" in text
    assert "never" in text
    assert "| - |" in text
    assert r"both\_accuracy" in tex.read_text()
    assert r"\bottomrule" in tex.read_text()


def test_summarize_benchmark():
    bench = pd.DataFrame(
        {
            "rollouts": [32, 8, 8, 64],
            "step_time_s": [3.0, 1.0, 2.0, 9.0],
            "gen_time_s": [2.0, 0.5, 1.5, 8.0],
            "update_time_s": [1.0, 0.5, 0.5, None],
            "gen_tokens": [1, 1, 1, 1],
            "per_token_gen_ms": [1.0, 4.0, 2.0, 0.5],
            "update_oom": [False, "False", False, "True"],
        }
    )
    out = summarize_benchmark(bench)
    assert out["rollouts"].tolist() == [8, 32, 64]
    assert out["step_time_s"].tolist() == [1.5, 3.0, 9.0]
    assert out["update_oom"].tolist() == [False, False, True]
    with pytest.raises(AnalysisInputError, match="update_oom"):
        summarize_benchmark(bench.drop(columns="update_oom"))


# ----------------------------------------------------------------------------------------------
# our run directories


def test_load_runs_grid_arms_and_lengths(tmp_path):
    root = fake_tree(tmp_path / "runs")
    # An off-grid final evaluation at 410 s (grid 4 already logged at 403 s) is ignored; a partial
    # trailing line (a killed run) is tolerated.
    extra = [{"step": 41, "time_s": 410.0, "dataset": "gsm8k", "accuracy": 0.0}]
    d = write_run(root, "a_toy", 4, 4, 9, [0.2, 0.3, 0.4, 0.5, 0.6], extra_eval=extra)
    with (d / "eval.jsonl").open("a") as fh:
        fh.write('{"step": 50, "time_s"')
    (d / "summary.json").unlink()  # a killed run never wrote its summary (a finished one is checked whole)
    df = load_runs(root)
    assert list(df.columns) == CURVE_COLUMNS
    assert set(df["arm"]) == {"grpo", "grpo_ga", "pods", "pods_random", "pods_before"}
    assert set(df["setting"]) == {"a", "e"}
    assert set(df.loc[df["setting"] == "e", "arm"]) == {"grpo_ga", "pods"}
    acc = select(df, setting="a", arm="grpo", seed=9, dataset="gsm8k", metric="accuracy")
    assert acc["grid"].tolist() == [0, 1, 2, 3, 4]
    assert acc["time_s"].tolist() == [0, 100, 200, 300, 400]
    assert acc["time_s_raw"].iloc[1] == 103.0
    assert acc["value"].iloc[-1] == 0.6
    train = select(df, setting="a", arm="grpo", seed=0, dataset="train")
    # steps every 10 s: grid 1 = steps 1..10 (lengths 51..60), mean 55.5
    assert train["value"].iloc[0] == pytest.approx(55.5)
    assert train["time_s"].iloc[0] == 100.0
    steps = load_run_steps(root)
    row = select(steps, setting="a", arm="pods", n=8, seed=0).iloc[0]
    assert row["seconds_per_step"] == pytest.approx(8.0)
    assert row["gen_s_per_step"] == pytest.approx(5.6)
    sps = seconds_per_step(steps)
    assert select(sps, setting="a", arm="grpo")["seconds_per_step"].iloc[0] == pytest.approx(10.0)


def test_load_runs_step_grid_aligns_seeds_by_step(tmp_path):
    # eval.every_steps (deterministic tests): grid = step / every_steps, time_s stays as logged.
    for seed, step_s in enumerate([10.0, 12.0]):
        write_run(tmp_path, "b_x", 4, 4, seed, [0.1, 0.2, 0.3], every_steps=10, step_s=step_s)
    df = select(load_runs(tmp_path), metric="accuracy", seed=0)
    assert df["grid"].tolist() == [0, 1, 2]
    assert df["time_s"].tolist() == [0.0, 103.0, 203.0]


def test_load_runs_bad_input(tmp_path):
    with pytest.raises(AnalysisInputError, match="does not exist"):
        load_runs(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(AnalysisInputError, match="no run directories"):
        load_runs(tmp_path / "empty")
    d = write_run(tmp_path / "r", "a_x", 4, 4, 0, [0.1, 0.2])
    (d / "eval.jsonl").write_text('{"broken\n{"step": 1}\n')
    with pytest.raises(AnalysisInputError, match="line 1 is not JSON"):
        load_runs(tmp_path / "r")


def test_default_comparisons_and_speedup_table_on_fake_runs(tmp_path):
    df = load_runs(fake_tree(tmp_path / "runs"), sheet=fake_sheet(tmp_path / "runs.tsv"))
    comps = {c.setting: c for c in default_comparisons(df)}
    assert comps["a"].baseline == {"arm": "grpo", "n": 4, "m": 4, "grad_accum": 1}
    assert comps["a"].pods == {"arm": "pods", "n": 16, "m": 4, "grad_accum": 1}  # ratio 4 preferred over n=8
    assert comps["e"].baseline["arm"] == "grpo_ga"
    assert comps["a"].paper == 2.0
    table = speedup_table(df, n_boot=300).set_index("setting")
    assert table.loc["a", "speedup"] == 3.0
    assert table.loc["a", "t_baseline_s"] == 300.0
    assert table.loc["e", "t_baseline_s"] == 360.0
    assert table.loc["e", "speedup"] == 1.5
    assert table.loc["a", "n_seeds_baseline"] == 3
    assert math.isnan(table.loc["a", "ci_low"])  # 3 seeds per arm: no interval
    assert "no interval: 3 seed(s) per arm" in table.loc["a", "note"]


def test_cli_collect_and_time_to_peak(tmp_path, capsys):
    root = fake_tree(tmp_path / "runs")
    out = tmp_path / "tables"
    sheet = fake_sheet(tmp_path / "runs.tsv")
    assert analysis_main(["collect", "--runs", str(root), "--out-dir", str(out), "--sheet", str(sheet)]) == 0
    assert {"curves.csv", "steps.csv"} <= {p.name for p in out.iterdir()}
    assert (
        analysis_main(["time-to-peak", "--curves", str(out / "curves.csv"), "--out-dir", str(out), "--n-boot", "100"])
        == 0
    )
    table = pd.read_csv(out / "time_to_peak.csv")
    assert set(CURVE_COLUMNS) <= set(pd.read_csv(out / "curves.csv").columns)
    need = {
        "setting",
        "baseline",
        "metric",
        "grid_s",
        "threshold",
        "t_baseline_s",
        "t_pods_s",
        "speedup",
        "ci_low",
        "ci_high",
        "paper_speedup",
        "n_seeds_baseline",
        "n_seeds_pods",
    }
    assert need <= set(table.columns)
    assert table["speedup"].tolist() == [3.0, 1.5]
    assert (out / "time_to_peak.md").exists()
    assert (out / "time_to_peak.tex").exists()


def test_collect_run_dirs_reads_exactly_the_listed_runs(tmp_path, capsys):
    """The workflow lists its runs: a manual run under the same root stays out."""
    root = fake_tree(tmp_path / "runs")
    manual = write_run(root, "a_toy", 16, 4, 7, [0.2, 0.9, 0.9, 0.9, 0.9])  # `pods train` by hand
    listed = sorted(str(p.parent) for p in root.rglob("summary.json") if p.parent != manual)
    out = tmp_path / "tables"
    assert analysis_main(["collect", "--run-dirs", *listed, "--out-dir", str(out)]) == 0
    curves = pd.read_csv(out / "curves.csv")
    assert 7 not in set(curves["seed"])
    assert len(pd.read_csv(out / "steps.csv")) == len(listed)
    assert analysis_main(["collect", "--runs", str(root), "--out-dir", str(out)]) == 0  # the whole root: included
    assert 7 in set(pd.read_csv(out / "curves.csv")["seed"])
    # A listed directory that is not a run is an input error (exit 2), not a silent skip.
    assert analysis_main(["collect", "--run-dirs", str(tmp_path), "--out-dir", str(out)]) == 2
    assert "is not a run directory" in capsys.readouterr().err


def test_collect_run_dirs_may_mix_relative_and_absolute_paths(tmp_path, monkeypatch):
    """Runs of one comparison can live in two trees (one in the repository, one elsewhere): a
    relative and an absolute run directory in one --run-dirs list are both read, not a ValueError."""
    root = fake_tree(tmp_path / "runs")
    runs = sorted(p.parent for p in root.rglob("summary.json"))
    monkeypatch.chdir(tmp_path)
    listed = [str(runs[0].relative_to(tmp_path))] + [str(p) for p in runs[1:]]
    out = tmp_path / "tables"
    assert analysis_main(["collect", "--run-dirs", *listed, "--out-dir", str(out)]) == 0
    assert len(pd.read_csv(out / "steps.csv")) == len(runs)


def test_until_step_reads_the_same_runs_as_if_their_budget_had_ended_there(tmp_path, capsys):
    """--until-step N (a 600-step budget read off 1200-step runs): time-to-peak, plateau and
    levels on the curves cut at step N give the tables the curves cut by hand give, and differ from the whole
    curves'; a cut with no evaluation after step 0, or a step count below 1, is an input error."""
    root = fake_tree(tmp_path / "runs")
    full = tmp_path / "full"
    sheet = str(fake_sheet(tmp_path / "runs.tsv"))
    assert analysis_main(["collect", "--runs", str(root), "--out-dir", str(full), "--sheet", sheet]) == 0
    curves = pd.read_csv(full / "curves.csv")
    steps = sorted(curves.loc[curves["step"] > 0, "step"].unique())
    cut_at = int(steps[len(steps) // 2])
    by_hand = tmp_path / "by_hand"
    by_hand.mkdir()
    curves[curves["step"] <= cut_at].to_csv(by_hand / "curves.csv", index=False)
    for cmd, table in (("time-to-peak", "time_to_peak"), ("plateau", "plateau"), ("levels", "levels")):
        ref, cut = tmp_path / f"{cmd}_ref", tmp_path / f"{cmd}_cut"
        assert analysis_main([cmd, "--curves", str(by_hand / "curves.csv"), "--out-dir", str(ref)]) == 0
        argv = [cmd, "--curves", str(full / "curves.csv"), "--until-step", str(cut_at), "--out-dir", str(cut)]
        assert analysis_main(argv) == 0
        assert (cut / f"{table}.csv").read_text() == (ref / f"{table}.csv").read_text(), cmd
        whole = tmp_path / f"{cmd}_whole"
        assert analysis_main([cmd, "--curves", str(full / "curves.csv"), "--out-dir", str(whole)]) == 0
        assert (whole / f"{table}.csv").read_text() != (cut / f"{table}.csv").read_text(), cmd
    capsys.readouterr()
    early = int(steps[0]) - 1
    argv = ["plateau", "--curves", str(full / "curves.csv"), "--until-step", str(early), "--out-dir", str(tmp_path)]
    assert analysis_main(argv) == 2
    assert "no evaluation after step 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        analysis_main(
            ["plateau", "--curves", str(full / "curves.csv"), "--until-step", "0", "--out-dir", str(tmp_path)]
        )


def test_collect_warns_when_one_settings_runs_start_from_different_weights(tmp_path, capsys):
    """config.json meta.policy.weights_sha256 (a tiny build differs between CPU kinds): collect
    warns, naming both builds, when the runs of one setting started from different weights; the tables
    are still written. Runs of one build, or without the record (older runs), give no warning."""
    root = tmp_path / "runs"
    dirs = [write_run(root, "a_toy", n, 4, seed, [0.2, 0.5, 0.7, 0.8]) for n in (4, 16) for seed in (0, 1)]

    def stamp(d, sha):
        cfg = json.loads((d / "config.json").read_text())
        cfg["meta"]["policy"] = {"spec": "tiny:llama-arith_warm", "scale": "tiny", "weights_sha256": sha}
        (d / "config.json").write_text(json.dumps(cfg))

    out = tmp_path / "tables"
    assert analysis_main(["collect", "--runs", str(root), "--out-dir", str(out)]) == 0
    assert "different policy weights" not in capsys.readouterr().err  # no record: nothing to compare
    for d in dirs:
        stamp(d, "a" * 64)
    assert analysis_main(["collect", "--runs", str(root), "--out-dir", str(out)]) == 0
    assert "different policy weights" not in capsys.readouterr().err
    stamp(dirs[-1], "b" * 64)
    assert analysis_main(["collect", "--runs", str(root), "--out-dir", str(out)]) == 0
    err = capsys.readouterr().err
    assert "setting a start from 2 different policy weights" in err
    assert f"{'a' * 12}: 3 run(s)" in err
    assert f"{'b' * 12}: 1 run(s), e.g. {dirs[-1]}" in err
    assert len(pd.read_csv(out / "steps.csv")) == 4


def test_cli_missing_inputs_exit_2(tmp_path, capsys):
    assert analysis_main(["time-to-peak", "--curves", str(tmp_path / "c.csv"), "--out-dir", str(tmp_path)]) == 2
    assert "c.csv is missing" in capsys.readouterr().err
    assert analysis_main(["collect", "--runs", str(tmp_path / "runs"), "--out-dir", str(tmp_path)]) == 2
    assert "pods train" in capsys.readouterr().err
    assert analysis_main(["released", "--logs", str(tmp_path), "--out-dir", str(tmp_path)]) == 2
    assert "is not the authors' released results/ folder (148 missing" in capsys.readouterr().err
    assert analysis_main(["released", "--logs", str(tmp_path), "--out-dir", str(tmp_path), "--no-verify"]) == 2
    assert "no released log files" in capsys.readouterr().err
    (tmp_path / "c.csv").write_text("a,b\n1,2\n")
    assert analysis_main(["time-to-peak", "--curves", str(tmp_path / "c.csv"), "--out-dir", str(tmp_path)]) == 2
    assert "not a curves table" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------
# the authors' released logs (docs/paper.md#released-logs)


@pytest.fixture(scope="module")
def released():
    if not RELEASED.is_dir():
        pytest.skip(f"authors' released logs not found at {RELEASED} (../shared/reference)")
    return read_released(RELEASED)


@needs_released
def test_released_table_reproduces_table_3(tmp_path, released):
    curves, _ = released
    table = speedup_table(curves, released_comparisons(), n_boot=300).set_index("setting")
    assert table["speedup"].to_dict() == {"a": 2.0, "b": 3.0, "c": 2.0, "e": 1.7, "f": 1.7}
    assert table["speedup_exact"].round(3).to_dict() == {"a": 2.0, "b": 3.0, "c": 2.0, "e": 1.714, "f": 1.75}
    assert (table["speedup"] == table["paper_speedup"]).all()
    hours = (table[["t_baseline_s", "t_pods_s"]] / 3600).loc[["a", "b", "c"]]
    assert hours.values.tolist() == [[3.0, 1.5], [1.5, 0.5], [5.0, 2.5]]
    assert (table.loc[["e", "f"], ["t_baseline_s", "t_pods_s"]] / 60).values.tolist() == [[24, 14], [28, 16]]
    assert (table[["n_seeds_baseline", "n_seeds_pods"]].loc[["a", "e", "f"]].values == [[10, 10], [5, 5], [5, 5]]).all()
    assert ((table["ci_low"] <= table["speedup_exact"]) & (table["speedup_exact"] <= table["ci_high"])).all()


@needs_released
def test_released_cli_writes_table(tmp_path):
    assert analysis_main(["released", "--logs", str(RELEASED), "--out-dir", str(tmp_path), "--n-boot", "100"]) == 0
    table = pd.read_csv(tmp_path / "time_to_peak.csv")
    assert table["setting"].tolist() == ["a", "b", "c", "e", "f"]
    assert table["speedup"].tolist() == [2.0, 3.0, 2.0, 1.7, 1.7]
    assert {"curves.csv", "steps.csv", "time_to_peak.md", "time_to_peak.tex"} <= {p.name for p in tmp_path.iterdir()}


# The released (a) sweeps: (arm, n, m) -> mean ans_acc (%) at 0.5, 1, 2, 3, 4, 5, 6 h; peak (time h); s/step
PAPER_SEC4 = {
    ("grpo", 16, 16): ([79.11, 79.45, 80.65, 81.27, 81.64, 81.32, 80.76], 81.64, 4.0, 7.53),
    ("pods", 32, 16): ([79.21, 79.91, 80.68, 80.93, 81.44, 82.07, 82.43], 82.44, 5.5, 7.89),
    ("pods", 64, 16): ([79.10, 80.57, 81.27, 81.75, 82.46, 82.45, 82.60], 82.63, 5.5, 10.08),
    ("pods", 128, 16): ([78.07, 80.05, 80.68, 81.28, 81.99, 82.50, 82.68], 82.68, 6.0, 13.57),
    ("pods", 256, 16): ([75.46, 78.96, 80.66, 81.28, 81.66, 82.10, 82.16], 82.18, 5.5, 21.23),
    ("pods", 64, 8): ([78.69, 80.16, 81.27, 81.68, 82.29, 82.79, 82.84], 82.84, 6.0, 9.13),
    ("pods", 64, 4): ([77.95, 80.27, 80.22, 81.31, 81.66, 82.09, 82.86], 82.86, 6.0, 8.94),
    ("pods", 64, 2): ([76.44, 77.51, 80.04, 80.49, 80.23, 81.16, 81.30], 81.62, 5.5, 7.91),
    ("pods_max_reward", 64, 16): ([59.56, 62.78, 65.65, 66.15, 67.17, 64.53, 67.28], 67.28, 6.0, 13.82),
    ("pods_random", 64, 16): ([75.38, 78.53, 79.97, 80.66, 81.08, 81.49, 81.62], 81.62, 6.0, 10.49),
}


@needs_released
def test_released_sweeps_match_paper_section_4(released):
    curves, steps = released
    mc = mean_curve(select(curves, setting="a", dataset="gsm8k", metric="accuracy"))
    sps = seconds_per_step(select(steps, setting="a"))
    assert set(mc["n_seeds"]) == {10}
    for (arm, n, m), (row, peak, t_peak, s_step) in PAPER_SEC4.items():
        c = select(mc, arm=arm, n=n, m=m).set_index("time_s")["mean"] * 100
        assert c.loc[[1800, 3600, 7200, 10800, 14400, 18000, 21600]].round(2).tolist() == row, (arm, n, m)
        later = c[c.index > 0]
        assert (round(later.max(), 2), later.idxmax() / 3600) == (peak, t_peak), (arm, n, m)
        assert round(select(sps, arm=arm, n=n, m=m)["seconds_per_step"].iloc[0], 2) == s_step
        assert c.loc[0.0] == pytest.approx(59.95, abs=0.005)  # base model anchor


@needs_released
def test_released_other_settings_match_paper_section_5(released):
    curves, steps = released
    # Seconds per OPTIMIZER step (wandb's `_step` read by released.optimizer_steps); the paper's Fig. 3(e)/(f)
    # bars, 21.85 / 10.09 and 39.82 / 9.50, are 1800 s over `_step / GA`, which counts logging calls.
    sps = seconds_per_step(steps).set_index(["setting", "arm"])["seconds_per_step"].round(2)
    assert [sps[("e", "grpo_ga")], sps[("e", "pods")], sps[("f", "grpo_ga")], sps[("f", "pods")]] == [
        76.92,
        48.13,
        243.24,
        145.16,
    ]

    def curve(setting, arm, metric="accuracy", dataset="gsm8k"):
        rows = select(curves, setting=setting, arm=arm, metric=metric, dataset=dataset)
        rows = rows[rows["n"] == rows["n"].min()] if arm.startswith("grpo") else rows[rows["n"] == 4 * rows["m"]]
        return (mean_curve(rows).set_index("time_s")["mean"] * 100).round(2)

    b_grpo, b_pods = curve("b", "grpo", "both_accuracy"), curve("b", "pods", "both_accuracy")
    assert (b_grpo.max(), b_grpo.idxmax(), b_pods[1800.0], b_pods.max(), b_grpo[0.0]) == (
        39.13,
        5400,
        42.37,
        55.88,
        3.96,
    )
    c_grpo, c_pods = curve("c", "grpo", dataset="math"), curve("c", "pods", dataset="math")
    assert (c_grpo.max(), c_grpo.idxmax(), c_pods.max(), c_pods.idxmax(), c_grpo[0.0]) == (
        48.90,
        21600,
        50.35,
        19800,
        33.27,
    )
    e_ga, e_pods = curve("e", "grpo_ga"), curve("e", "pods")
    assert (e_ga.max(), e_ga.idxmax() / 60, e_pods.max(), e_pods.idxmax() / 60) == (82.56, 28, 84.12, 24)
    f_ga, f_pods = curve("f", "grpo_ga"), curve("f", "pods")
    assert (f_ga.max(), f_ga.idxmax() / 60, f_pods.max(), f_pods.idxmax() / 60) == (87.24, 28, 87.94, 30)
    assert f_ga.loc[[720, 840, 1080, 1200, 1320, 1440]].round(1).tolist() == [47.8, 64.0, 68.3, 59.9, 75.7, 84.1]
    # Fig. 7 cross-check: the GSM8K-trained (a) models on MATH-500 (docs/paper.md#figures).
    a_grpo, a_pods = curve("a", "grpo", dataset="math"), curve("a", "pods", dataset="math")
    assert (a_grpo[1800.0], a_grpo[21600.0], a_grpo.max()) == pytest.approx((41.8, 42.9, 43.8), abs=0.05)
    assert (a_pods[1800.0], a_pods[21600.0]) == pytest.approx((43.5, 47.9), abs=0.05)


# ----------------------------------------------------------------------------------------------
# the three speed-ups, on hand-made tidy frames


def _tidy_arm(setting, arm, n, m, seeds_values, seeds_steps):
    """Tidy curve rows of one arm: values and optimizer steps per seed at grid points 1..T (100 s apart)."""
    return [
        {"setting": setting, "setting_name": setting, "arm": arm, "role": "", "n": n, "m": m, "rule": "max_variance",
         "normalize": "after", "grad_accum": 1, "seed": seed, "grid": k + 1, "time_s": 100.0 * (k + 1),
         "step": steps[k], "dataset": "gsm8k", "metric": "accuracy", "value": v}
        for seed, (values, steps) in enumerate(zip(seeds_values, seeds_steps, strict=True))
        for k, v in enumerate(values)
    ]  # fmt: skip


def _run_rows(setting, arm, n, m, steps_per_seed, time_s=300.0):
    return [
        {"setting": setting, "arm": arm, "n": n, "m": m, "grad_accum": 1, "seed": seed, "time_s": time_s, "steps": st}
        for seed, st in enumerate(steps_per_seed)
    ]


def test_three_speedups_and_never_reached_share_on_a_hand_made_fixture():
    # 5 seeds per arm, the fewest at which the table gives a speed-up interval.
    base_steps = [[10, 20, 30], [12, 24, 34], [10, 20, 30], [12, 24, 34], [11, 22, 32]]
    pods_steps = [[5, 10, 15], [7, 12, 17], [5, 10, 15], [7, 12, 17], [6, 11, 16]]
    base_values = [[0.5, 0.8, 0.9]] * 5
    curves = pd.DataFrame(
        _tidy_arm("a", "grpo", 4, 4, base_values, base_steps)
        + _tidy_arm("a", "pods", 16, 4, [[0.9, 0.9, 0.9]] * 5, pods_steps)
        # (c): PODS seeds 0-1 reach the target at the first evaluation, seeds 2-4 never do
        + _tidy_arm("c", "grpo", 4, 4, base_values, base_steps)
        + _tidy_arm("c", "pods", 16, 4, [[0.9, 0.9, 0.9]] * 2 + [[0.5, 0.5, 0.5]] * 3, pods_steps)
    )
    steps = pd.DataFrame(
        _run_rows("a", "grpo", 4, 4, [30, 34, 30, 34, 32])
        + _run_rows("a", "pods", 16, 4, [15, 17, 15, 17, 16])
        + _run_rows("c", "grpo", 4, 4, [30, 34, 30, 34, 32])
        + _run_rows("c", "pods", 16, 4, [15, 17, 15, 17, 16])
    )
    paper_steps = pd.DataFrame(  # the authors' s/step of (a)'s arms: 7.53 (GRPO) vs 10.08 (PODS)
        [{"setting": "a", "role": "baseline", "arm": "grpo", "n": 16, "m": 16, "time_s": 753.0, "steps": 100},
         {"setting": "a", "role": "pods", "arm": "pods", "n": 64, "m": 16, "time_s": 1008.0, "steps": 100}]
    )  # fmt: skip
    comps = [Comparison(s, "gsm8k", "accuracy", {"arm": "grpo", "n": 4}, {"arm": "pods", "n": 16}, 2.0) for s in "ac"]
    table = speedup_table(curves, comps, n_boot=4000, steps=steps, paper_steps=paper_steps).set_index("setting")
    a = table.loc["a"]
    # Target 0.99 x 0.9: the baseline reaches it at grid 3 (mean step 32), PODS at grid 1 (mean step 6).
    assert (a["t_baseline_s"], a["t_pods_s"], a["speedup_exact"]) == (300.0, 100.0, 3.0)
    assert (a["steps_baseline"], a["steps_pods"]) == (32.0, 6.0)
    assert a["speedup_steps"] == pytest.approx(32 / 6)  # (i)
    # s/step here: 300 s / 32 steps (baseline), 300 / 16 (PODS): shown, not multiplied into (ii)
    assert (a["sps_baseline"], a["sps_pods"]) == (pytest.approx(300 / 32), pytest.approx(300 / 16))
    # (ii): the training seconds at the crossing evaluations, 300 s and 100 s: 3.0, not (i) x mean s/step
    assert (a["elapsed_baseline_s"], a["elapsed_pods_s"], a["speedup_wall"]) == (300.0, 100.0, 3.0)
    assert (a["paper_sps_baseline"], a["paper_sps_pods"]) == (pytest.approx(7.53), pytest.approx(10.08))
    assert a["speedup_paper_hw"] == pytest.approx(32 * 7.53 / (6 * 10.08))  # (iii) = 3.984 (constant s/step)
    assert a["paper_sps_source"].startswith("released logs (a)")
    assert a["p_pods_never"] == 0.0
    # The baseline's mean curve peaks at its last evaluation (step 32 of 32): no plateau.
    assert (a["peak_at_baseline"], a["last_at_baseline"], a["peak_share_baseline"]) == (32.0, 32.0, 1.0)
    assert not a["plateau_baseline"]
    # Resampled steps: baseline mean in [30, 34], PODS in [5, 7]: (i) within [30/7, 34/5].
    assert 30 / 7 - 1e-9 <= a["speedup_steps_ci_low"] <= a["speedup_steps"] <= a["speedup_steps_ci_high"] <= 6.8
    c = table.loc["c"]
    # Mean PODS curve 0.66 < 0.891: never reached; a resample reaches only when all 5 draws are seeds 0-1.
    assert math.isnan(c["speedup"])
    assert c["t_pods_s"] == math.inf
    assert "never reached" in c["note"]
    assert c["p_pods_never"] == pytest.approx(1 - 0.4**5, abs=0.01)
    # Never-reached resamples count as 0, so the interval starts at 0; over the resamples that reach, PODS
    # takes 6 steps (seeds 0-1: 5 and 7) and the baseline 30-34: the conditional interval lies in [30/7, 6.8].
    assert c["speedup_steps_ci_low"] == 0.0
    assert 30 / 7 - 1e-9 <= c["speedup_steps_cond_low"] <= c["speedup_steps_cond_high"] <= 6.8 + 1e-9
    # (c) has no released s/step: the cost model predicts them from (c)'s paper arms (8/8 vs 32/8).
    assert c["paper_sps_source"].startswith("prediction: cost model")
    assert "8/8 vs 32/8" in c["paper_sps_source"]
    fit = next(r for r in cost_model().invert_paper() if r["setting"] == "a")  # c + g1 n + u1 m
    predicted = [fit["fixed_s"] + fit["g1_s"] * n + fit["u1_s"] * 8 for n in (8, 32)]
    assert [c["paper_sps_baseline"], c["paper_sps_pods"]] == pytest.approx(predicted)
    assert c["paper_sps_baseline"] < c["paper_sps_pods"]


def test_paper_hardware_speedup_reads_the_released_clock_at_the_step_count():
    """(iii) takes the paper hardware's training time at the steps each arm needed from the released curves
    (interpolated between their evaluations, extended at the last point's mean rate), not the whole run's
    mean seconds per step: a run whose first steps were slower than its mean is read as slower there."""
    paper_curves = pd.DataFrame(
        _tidy_arm("a", "grpo", 16, 16, [[0.5, 0.6]] * 2, [[10, 40]] * 2)  # 10 s/step, then 10 s/step
        + _tidy_arm("a", "pods", 64, 16, [[0.5, 0.6]] * 2, [[5, 15]] * 2)  # 20 s/step, then 10 s/step
    )
    paper_curves["role"] = np.where(paper_curves["arm"] == "grpo", "baseline", "pods")
    paper_curves["time_s"] = np.where(paper_curves["arm"] == "grpo", paper_curves["step"] * 10.0, 0.0)
    pods_rows = paper_curves["arm"] == "pods"
    paper_curves.loc[pods_rows, "time_s"] = np.where(paper_curves.loc[pods_rows, "step"] == 5, 100.0, 200.0)
    clock = paper_clock("a", paper_curves)
    assert clock.source.startswith("released logs (a)")
    base_s, pods_s = clock.seconds(np.array([32.0, 80.0]), np.array([6.0, 30.0]))
    assert base_s.tolist() == pytest.approx([320.0, 800.0])  # inside, then beyond at 400 s / 40 steps
    # 6 steps: 100 s at 5 plus one step of the 5-15 segment (10 s); 30 steps: 200 s + 15 x (200 / 15)
    assert pods_s.tolist() == pytest.approx([110.0, 400.0])
    # without released curves: the constant seconds per step (here none known for a made-up setting)
    assert math.isnan(paper_clock("zz").seconds(np.array([1.0]), np.array([1.0]))[0][0])


def test_baseline_plateau_is_where_the_mean_curve_peaks_in_steps_of_the_last_evaluation(tmp_path):
    # Baseline mean curve 0.5, 0.9, 0.8, 0.85, 0.85 at mean steps 10..50: peak at step 20 of 50.
    base = [[0.5, 0.9, 0.8, 0.85, 0.85], [0.5, 0.9, 0.8, 0.85, 0.85]]
    steps = [[10, 20, 30, 40, 50]] * 2
    curves = pd.DataFrame(
        _tidy_arm("a", "grpo", 4, 4, base, steps) + _tidy_arm("a", "pods", 16, 4, [[0.9] * 5] * 2, steps)
    )
    comp = Comparison("a", "gsm8k", "accuracy", {"arm": "grpo", "n": 4}, {"arm": "pods", "n": 16}, 2.0)
    row = speedup_table(curves, [comp], n_boot=200).iloc[0]
    assert (row["peak_at_baseline"], row["last_at_baseline"], row["peak_share_baseline"]) == (20.0, 50.0, 0.4)
    assert row["plateau_baseline"]
    # At the 80% mark it still counts as a plateau; one evaluation later it does not.
    for peak_k, plateau in ((3, True), (4, False)):
        late = [[0.5, 0.6, 0.7, 0.8, 0.8]] * 2
        late = [[*v[:peak_k], 0.95, *v[peak_k + 1 :]] for v in late]
        curves = pd.DataFrame(
            _tidy_arm("a", "grpo", 4, 4, late, steps) + _tidy_arm("a", "pods", 16, 4, [[0.9] * 5] * 2, steps)
        )
        row = speedup_table(curves, [comp], n_boot=50).iloc[0]
        assert row["peak_at_baseline"] == 10.0 * (peak_k + 1)
        assert bool(row["plateau_baseline"]) is plateau
    write_table(speedup_table(curves, [comp], n_boot=50), tmp_path / "t")
    assert "50 of 50 (1.00, no plateau, 0% of resamples peak before 80%; late gain +" in (tmp_path / "t.md").read_text()


def test_late_gain_tells_a_rising_baseline_from_a_flat_one_whose_argmax_fell_late(tmp_path):
    """Where the baseline's peak is in the last 20% ('no plateau'), the table adds how far that late peak
    is above the best evaluation before it, with a bootstrap interval over the baseline's seeds."""
    steps = [[10, 20, 30, 40, 50]] * 3
    comp = Comparison("a", "gsm8k", "accuracy", {"arm": "grpo", "n": 4}, {"arm": "pods", "n": 16}, 2.0)
    pods = _tidy_arm("a", "pods", 16, 4, [[0.9] * 5] * 3, steps)
    rising = [[0.50, 0.60, 0.70, 0.78, 0.95], [0.52, 0.61, 0.69, 0.80, 0.93], [0.49, 0.62, 0.71, 0.79, 0.94]]
    # flat from step 20 on: the last evaluation's mean is highest only because one seed was lucky there
    flat = [[0.5, 0.80, 0.81, 0.79, 0.90], [0.5, 0.81, 0.79, 0.80, 0.76], [0.5, 0.79, 0.80, 0.81, 0.77]]
    rows = {}
    for name, base in (("rising", rising), ("flat", flat)):
        curves = pd.DataFrame(_tidy_arm("a", "grpo", 4, 4, base, steps) + pods)
        rows[name] = speedup_table(curves, [comp], n_boot=2000).iloc[0]
        assert not rows[name]["plateau_baseline"]  # both peak at their last evaluation
    r, f = rows["rising"], rows["flat"]
    assert r["late_gain_baseline"] == pytest.approx(0.94 - 0.79)
    assert 0 < r["late_gain_baseline_ci_low"] <= r["late_gain_baseline_ci_high"]
    # the interval is the jackknife t: the gain of each leave-one-seed-out mean curve (the last evaluation minus
    # the best of the four before), their standard error, t_2 at 0.975 = 4.302653 (a printed table's value);
    # the percentile bootstrap gave [+0.13, +0.17] here, which 3 seeds cannot support
    loo_S_T = (np.sum(rising, axis=0) - np.array(rising)) / 2
    gain_S = loo_S_T[:, 4] - loo_S_T[:, :4].max(axis=1)
    se = math.sqrt(2 / 3 * np.sum((gain_S - gain_S.mean()) ** 2))
    assert (r["late_gain_baseline_ci_low"], r["late_gain_baseline_ci_high"]) == pytest.approx(
        (0.15 - 4.302653 * se, 0.15 + 4.302653 * se), abs=1e-6
    )
    assert (r["late_gain_baseline_ci_low"], r["late_gain_baseline_ci_high"]) == pytest.approx(
        (0.1003, 0.1997), abs=1e-4
    )
    assert f["late_gain_baseline"] == pytest.approx(0.81 - 0.80)
    assert f["late_gain_baseline_ci_low"] < 0 < f["late_gain_baseline_ci_high"]
    write_table(speedup_table(pd.DataFrame(_tidy_arm("a", "grpo", 4, 4, rising, steps) + pods), [comp]), tmp_path / "t")
    assert (
        "50 of 50 (1.00, no plateau, 0% of resamples peak before 80%; late gain +15.0 [+"
        in (tmp_path / "t.md").read_text()
    )
    # one seed: the gain, no interval; a plateau: no late gain in the cell
    one = speedup_table(pd.DataFrame(_tidy_arm("a", "grpo", 4, 4, rising[:1], steps[:1]) + pods), [comp]).iloc[0]
    assert one["late_gain_baseline"] == pytest.approx(0.95 - 0.78)
    assert math.isnan(one["late_gain_baseline_ci_low"])
    from pods_repro.analysis.speedups import _plateau_cell

    assert "late gain" not in _plateau_cell(rows["flat"].to_dict() | {"plateau_baseline": True})


def test_trend_finds_a_slowly_rising_baseline_that_the_late_gain_cannot_tell_from_a_level_one(tmp_path):
    """The second-half trend pools every evaluation after half the run: a curve rising 0.2 points per
    step under noise, with one lucky evaluation before the last 20%, has a late gain whose interval
    includes 0 but a trend above 0; a level curve has both around 0. Both put their argmax last."""
    steps = list(range(10, 110, 10))
    noise_S_T = np.round(np.random.default_rng(0).normal(0, 0.01, (4, 10)), 3)
    rising = np.round(0.70 + 0.002 * np.array(steps) + noise_S_T, 3)
    rising[:, 7] += 0.03  # step 80: every seed lucky
    level = np.round(0.85 + noise_S_T, 3)
    comp = Comparison("a", "gsm8k", "accuracy", {"arm": "grpo", "n": 4}, {"arm": "pods", "n": 16}, 2.0)
    pods = _tidy_arm("a", "pods", 16, 4, [[0.95] * 10] * 4, [steps] * 4)
    rows = {}
    for name, base in (("rising", rising), ("level", level)):
        curves = pd.DataFrame(_tidy_arm("a", "grpo", 4, 4, base.tolist(), [steps] * 4) + pods)
        rows[name] = speedup_table(curves, [comp]).iloc[0]
        assert rows[name]["peak_at_baseline"] == 100.0
    r, f = rows["rising"], rows["level"]
    assert r["late_gain_baseline_ci_low"] < 0 < r["late_gain_baseline_ci_high"]
    # least squares over steps 60..100 of the mean curve, times the 40-step span: 0.002 x 40 + noise
    mean_H = rising.mean(axis=0)[5:]
    x_H = np.array(steps[5:]) - np.mean(steps[5:])
    assert r["trend_baseline"] == pytest.approx(float(mean_H @ x_H / (x_H @ x_H)) * 40)
    # the interval: Student t over the 4 seeds' own rises (t_3 at 0.975 = 3.182446, a printed table's value);
    # the percentile bootstrap of the same rises gave [+0.068, +0.096], too narrow at 4 seeds
    rise_S = (rising[:, 5:] - rising[:, 5:].mean(axis=1, keepdims=True)) @ x_H / (x_H @ x_H) * 40
    half = 3.182446 * rise_S.std(ddof=1) / 2
    assert r["trend_baseline"] == pytest.approx(rise_S.mean())
    assert (r["trend_baseline_ci_low"], r["trend_baseline_ci_high"]) == pytest.approx(
        (rise_S.mean() - half, rise_S.mean() + half), abs=1e-6
    )
    assert 0.05 < r["trend_baseline_ci_low"] < r["trend_baseline_ci_high"] < 0.12  # [+0.055, +0.111]
    assert f["trend_baseline_ci_low"] < 0 < f["trend_baseline_ci_high"]
    assert f["late_gain_baseline_ci_low"] < 0 < f["late_gain_baseline_ci_high"]
    write_table(pd.DataFrame([r]), tmp_path / "t")
    assert "2nd-half trend +8.3 [+5.5, +11.1] pts" in (tmp_path / "t.md").read_text()
    # a plateau row shows its trend too, without a late gain; one seed: no interval; fewer than three
    # evaluations in the second half: no trend
    from pods_repro.analysis.plateau import baseline_trend
    from pods_repro.analysis.speedups import _plateau_cell

    cell = _plateau_cell(f.to_dict() | {"plateau_baseline": True})
    assert "late gain" not in cell
    assert "2nd-half trend +0.3 [-" in cell
    one = baseline_trend(pd.DataFrame(_tidy_arm("a", "grpo", 4, 4, rising[:1].tolist(), [steps])))
    assert one["trend_baseline"] > 0
    assert math.isnan(one["trend_baseline_ci_low"])
    short = baseline_trend(pd.DataFrame(_tidy_arm("a", "grpo", 4, 4, [[0.5, 0.6, 0.7, 0.8]] * 2, [[1, 2, 3, 4]] * 2)))
    assert math.isnan(short["trend_baseline"])


def test_plateau_table_prints_the_t_intervals_and_keeps_the_trend_s_interval_when_a_seed_misses_an_evaluation(
    tmp_path,
):
    """`plateau` prints the late gain's jackknife t-interval and the trend's Student t-interval (pods_repro.analysis.
    intervals), not a percentile bootstrap; where a seed misses an evaluation of the second half, the trend's
    interval is the jackknife t of the mean curve's rise, which on complete seeds is the Student t exactly."""
    from pods_repro.analysis import intervals
    from pods_repro.analysis.plateau import _trend_jackknife, plateau_table, write_plateau_table

    steps = list(range(10, 110, 10))
    values = np.round(0.70 + 0.002 * np.array(steps) + np.random.default_rng(1).normal(0, 0.01, (3, 10)), 3)
    rows = [dict(r, primary_dataset="gsm8k") for r in _tidy_arm("a", "grpo", 4, 4, values.tolist(), [steps] * 3)]
    row = plateau_table(pd.DataFrame(rows)).iloc[0]
    pos = np.array(steps, float)
    trend = intervals.trend_interval(values, pos, 0.5)
    gain = intervals.late_gain_interval(values, pos, 0.8)
    assert (row["trend"], row["trend_ci_low"], row["trend_ci_high"]) == pytest.approx(
        (trend["point"], trend["low"], trend["high"])
    )
    assert (row["late_gain"], row["late_gain_ci_low"], row["late_gain_ci_high"]) == pytest.approx(
        (gain["point"], gain["low"], gain["high"])
    )
    # by hand: t_2 at 0.975 = 4.302653 times the seeds' rises' standard error
    x_H = pos[5:] - pos[5:].mean()
    rise_S = (values[:, 5:] - values[:, 5:].mean(axis=1, keepdims=True)) @ x_H / (x_H @ x_H) * 40
    assert row["trend_ci_high"] - row["trend"] == pytest.approx(4.302653 * rise_S.std(ddof=1) / math.sqrt(3))
    md = write_plateau_table(pd.DataFrame([row]), tmp_path / "p")[1].read_text()
    cell = f"{100 * trend['point']:+.1f} [{100 * trend['low']:+.1f}, {100 * trend['high']:+.1f}] pts |"
    assert cell in md
    assert "95% Student t-interval" in md
    assert "95% jackknife t-interval" in md
    # the jackknife fallback is the Student t on complete seeds ...
    half = pos > 0.5 * pos.max()
    assert _trend_jackknife(values, pos, half, 0.95) == pytest.approx((trend["low"], trend["high"]))
    # ... and gives an interval where seed 2 misses step 80 (the point: the rise of the mean curve of the seeds
    # that have each evaluation)
    holed = [r for r in rows if not (r["seed"] == 2 and r["step"] == 80)]
    missing = plateau_table(pd.DataFrame(holed)).iloc[0]
    mean_T = np.array([values[:, k].mean() if k != 7 else values[:2, 7].mean() for k in range(10)])
    assert missing["trend"] == pytest.approx(float((mean_T[5:] - mean_T[5:].mean()) @ x_H / (x_H @ x_H) * 40))
    assert missing["trend_ci_low"] < missing["trend"] < missing["trend_ci_high"]


def test_paper_seconds_per_step_without_released_logs_uses_stated_values_then_the_cost_model():
    """released_logs: none: (a), (e), (f) take the released runs' s/step the package records, the others the
    cost model."""
    from pods_repro.analysis.paper_clock import paper_seconds_per_step

    # (a): the n sweep's 16/16 and 64/16 values on 1 L40S, as the released logs give them.
    base, pods_, source = paper_seconds_per_step("a", None)
    assert (base, pods_) == (7.53, 10.08)
    assert source.startswith("recorded: s/step of the released (a) runs")
    assert "16/16 vs 64/16" in source
    # (e)/(f): GRPO-GA vs PODS per optimizer step on 8 GPUs, the released logs' steps read from wandb's _step.
    assert paper_seconds_per_step("e", None)[:2] == (76.92, 48.13)
    assert paper_seconds_per_step("f", None)[:2] == (243.24, 145.16)
    assert "8xA100" in paper_seconds_per_step("f", None)[2]
    # (b) (Llama, 16/16 vs 64/16) and (d) have no stated value: the cost model fitted to (a) predicts them.
    fit = next(r for r in cost_model().invert_paper() if r["setting"] == "a")
    for setting in "bd":
        base, pods_, source = paper_seconds_per_step(setting, None)
        assert source.startswith("prediction: cost model"), source
        assert [base, pods_] == pytest.approx([fit["fixed_s"] + fit["g1_s"] * n + fit["u1_s"] * 16 for n in (16, 64)])
    # The released logs, when given, come first: their value, not the stated one.
    logs = pd.DataFrame(
        [{"setting": "a", "role": "baseline", "arm": "grpo", "n": 16, "m": 16, "time_s": 700.0, "steps": 100},
         {"setting": "a", "role": "pods", "arm": "pods", "n": 64, "m": 16, "time_s": 1000.0, "steps": 100}]
    )  # fmt: skip
    assert paper_seconds_per_step("a", logs)[:2] == (7.0, 10.0)


def test_plateau_share_is_the_argmax_criterion_over_seed_resamples(tmp_path):
    """How sure the plateau verdict is: the share of seed resamples whose mean curve peaks before the
    last 20%. Seed 0 peaks early (step 20 of 50), seed 1 last: the mean curve peaks last (no plateau),
    and of the four equally likely resamples only (0, 0) peaks early, so the share is 1/4."""
    steps = [[10, 20, 30, 40, 50]] * 2
    base = [[0.5, 0.9, 0.6, 0.6, 0.6], [0.5, 0.6, 0.6, 0.6, 0.95]]
    curves = pd.DataFrame(
        _tidy_arm("a", "grpo", 4, 4, base, steps) + _tidy_arm("a", "pods", 16, 4, [[0.9] * 5] * 2, steps)
    )
    comp = Comparison("a", "gsm8k", "accuracy", {"arm": "grpo", "n": 4}, {"arm": "pods", "n": 16}, 2.0)
    row = speedup_table(curves, [comp], n_boot=4000).iloc[0]
    assert not row["plateau_baseline"]
    assert row["p_plateau_baseline"] == pytest.approx(0.25, abs=0.03)
    write_table(pd.DataFrame([row]), tmp_path / "t")
    assert re.search(
        r"50 of 50 \(1\.00, no plateau, 2[4-6]% of resamples peak before 80%;", (tmp_path / "t.md").read_text()
    )
    # one seed: a resample is that seed, no share, and the cell says nothing of resamples
    one = baseline_plateau_share(pd.DataFrame(_tidy_arm("a", "grpo", 4, 4, base[:1], steps[:1])))
    assert math.isnan(one["p_plateau_baseline"])
    from pods_repro.analysis.speedups import _plateau_cell

    assert "resamples" not in _plateau_cell(row.to_dict() | {"p_plateau_baseline": math.nan})


def test_cli_plateau_judges_every_arm_and_one_arm_alone(tmp_path, capsys):
    """`plateau` reports every arm of a curves.csv, and works from the run directories of a baseline
    with no PODS arm (notebook/overlays/tiny_a4000.yaml), where time-to-peak cannot run."""
    root = fake_tree(tmp_path / "runs")
    tables = tmp_path / "tables"
    assert (
        analysis_main(
            ["collect", "--runs", str(root), "--out-dir", str(tables), "--sheet", str(fake_sheet(tmp_path / "s.tsv"))]
        )
        == 0
    )
    assert (
        analysis_main(["plateau", "--curves", str(tables / "curves.csv"), "--out-dir", str(tables), "--n-boot", "2000"])
        == 0
    )
    table = pd.read_csv(tables / "plateau.csv")
    assert len(table) == 7  # every arm: a_toy's five, e_toy's two
    grpo = table[(table["setting"] == "a") & (table["role"] == "baseline")].iloc[0]
    # mean curve 0.5, 0.7, 0.8, 0.79 after t = 0 (seed noise 0, +0.02, -0.02 at grid 1 and 3): peak at grid 3 of 4
    assert grpo["peak"] == pytest.approx(0.8)
    assert grpo["plateau"]
    assert grpo["peak_share"] == pytest.approx(0.75, abs=0.02)
    # a resample peaks last only where seed 2 outnumbers seed 1 by two or more: 4 of 27 equally likely draws
    assert grpo["p_plateau"] == pytest.approx(23 / 27, abs=0.03)
    for col in ("late_gain", "late_gain_ci_low", "trend", "trend_ci_high"):
        assert col in table.columns
    assert (
        "| a | grpo n=4 m=4 grad_accum=1 | max_variance / after | baseline | 3 | 80.0% |"
        in (tables / "plateau.md").read_text()
    )
    # one arm alone, from its run directories: no PODS arm needed
    alone = sorted(str(p.parent) for p in root.rglob("summary.json") if "a_toy/sel~max_variance_n~4_m~4/" in str(p))
    out = tmp_path / "alone"
    assert analysis_main(["plateau", "--run-dirs", *alone, "--out-dir", str(out), "--n-boot", "2000"]) == 0
    only = pd.read_csv(out / "plateau.csv")
    assert len(only) == 1
    assert only["p_plateau"].iloc[0] == pytest.approx(grpo["p_plateau"])
    assert "80.0%" in capsys.readouterr().out
    # a folder that is not a run: a clear error, exit 2
    assert analysis_main(["plateau", "--run-dirs", str(tmp_path), "--out-dir", str(out)]) == 2
    assert "is not a run directory" in capsys.readouterr().err


def test_cli_plateau_names_the_metrics_it_has_when_asked_for_one_it_lacks(tmp_path, capsys):
    tables = tmp_path / "tables"
    assert analysis_main(["collect", "--runs", str(fake_tree(tmp_path / "runs")), "--out-dir", str(tables)]) == 0
    assert (
        analysis_main(["plateau", "--curves", str(tables / "curves.csv"), "--out-dir", str(tables), "--metric", "bleu"])
        == 2
    )
    err = capsys.readouterr().err
    assert "no rows of metric 'bleu'" in err
    assert "--metric (accuracy" in err
