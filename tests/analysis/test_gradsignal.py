"""pods_repro.analysis.gradsignal and `pods analysis signal`: the share of steps whose trained rollouts all got one reward."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from pods_repro.analysis.cli import main as analysis_main
from pods_repro.analysis.gradsignal import _per_run_shares


def write_run(root: Path, n: int, m: int, seed: int, kept: list[float], generated: list[float], rule="max_variance"):
    """A finished step-grid run of setting a_toy (evaluated every 2 steps) whose step s logged
    kept_frac_zero_std = kept[s-1] and frac_zero_std = generated[s-1]."""
    d = root / "a_toy" / f"sel~{rule}_n~{n}_m~{m}" / f"seed~{seed}"
    d.mkdir(parents=True)
    cfg = {
        "setting": "a_toy",
        "seed": seed,
        "rollout": {"n": n, "m": m, "rule": rule, "normalize": "after"},
        "optim": {"grad_accum": 1},
        "eval": {"every_s": None, "every_steps": 2, "datasets": ["gsm8k"]},
    }
    (d / "config.json").write_text(json.dumps(cfg))
    evals = [
        {"step": s, "time_s": float(s), "dataset": "gsm8k", "accuracy": 0.5, "completion_len_mean": 10.0}
        for s in range(0, len(kept) + 1, 2)
    ]
    (d / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
    steps = [
        {"step": s, "time_s": float(s), "completion_len_mean": 9.0, "kept_frac_zero_std": k, "frac_zero_std": g}
        for s, (k, g) in enumerate(zip(kept, generated, strict=True), start=1)
    ]
    (d / "metrics.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    (d / "summary.json").write_text(json.dumps({"status": "finished", "steps": len(steps), "n_evals": len(evals)}))


def sheet(path: Path) -> Path:
    lines = ["setting\trule\tn\tm\textra\trole\tseeds\tfigures\tnote"]
    lines += [
        "a\tmax_variance\t4\t4\t\tbaseline\tmain\tfig_3_main\tfake",
        "a\tmax_variance\t16\t4\t\tpods\tmain\tfig_3_main\tfake",
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def curves(tmp_path) -> Path:
    runs = tmp_path / "runs"
    # GRPO (n = m): seed 0 has a gradient in its first 2 of 8 steps only, seed 1 in every other step
    write_run(runs, 4, 4, 0, [0, 0, 1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1, 1, 1])
    write_run(runs, 4, 4, 1, [0, 1, 0, 1, 0, 1, 0, 1], [0, 1, 0, 1, 0, 1, 0, 1])
    # PODS: its 16 generated rollouts all tie in the second half, so its 4 kept ones do too there
    for seed in (0, 1):
        write_run(runs, 16, 4, seed, [0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1, 1, 1])
    # A rule that keeps tied rollouts though the generated ones differ: max-reward keeps 4 correct answers
    for seed in (0, 1):
        write_run(runs, 16, 4, seed, [1] * 8, [0, 0, 0, 0, 0, 0, 1, 1], rule="max_reward")
    out = tmp_path / "tables"
    assert (
        analysis_main(
            ["collect", "--runs", str(runs), "--sheet", str(sheet(tmp_path / "s.tsv")), "--out-dir", str(out)]
        )
        == 0
    )
    return out / "curves.csv"


def test_signal_table_shares_quarters_and_generated_ties(curves, tmp_path, capsys):
    assert analysis_main(["signal", "--curves", str(curves), "--out-dir", str(tmp_path / "t")]) == 0
    df = pd.read_csv(tmp_path / "t" / "signal.csv").set_index(["n", "rule"])
    grpo, pods, maxr = df.loc[(4, "max_variance")], df.loc[(16, "max_variance")], df.loc[(16, "max_reward")]
    assert (grpo["seeds"], grpo["steps"], grpo["role"]) == (2, 8, "baseline")
    assert grpo["kept_zero_share"] == pytest.approx((6 / 8 + 4 / 8) / 2)
    assert [grpo[f"kept_zero_q{q}"] for q in (1, 2, 3, 4)] == pytest.approx([0.25, 0.75, 0.75, 0.75])
    # Student t over the 2 seeds' shares 0.75 and 0.5: t_1 at 0.975 = 12.706205 (a printed table's value) times
    # sd / sqrt(2) = 0.125; the CSV keeps [-0.96, 2.21], the Markdown prints it within [0%, 100%]
    half = 12.706205 * 0.125
    assert (grpo["kept_zero_ci_low"], grpo["kept_zero_ci_high"]) == pytest.approx((0.625 - half, 0.625 + half))
    assert grpo["generated_zero_share"] == pytest.approx(grpo["kept_zero_share"])  # n = m: nothing is dropped
    assert pods["kept_zero_share"] == pytest.approx(0.5)
    assert [pods[f"kept_zero_q{q}"] for q in (1, 2, 3, 4)] == pytest.approx([0, 0, 1, 1])
    assert pods["kept_zero_ci_low"] == pods["kept_zero_ci_high"] == pytest.approx(0.5)  # identical seeds
    assert (maxr["kept_zero_share"], maxr["generated_zero_share"]) == pytest.approx((1.0, 0.25))
    md = (tmp_path / "t" / "signal.md").read_text()
    assert "| a | pods_max_reward n=16 m=4 grad_accum=1 | max_reward / after | - | 2 | 8 | 100% [100%, 100%] |" in md
    assert "| a | grpo n=4 m=4 grad_accum=1 | max_variance / after | baseline | 2 | 8 | 62% [0%, 100%] |" in md
    assert "95% Student t-interval over seeds" in md
    assert "printed at that bound" in md
    assert "no-gradient steps" in capsys.readouterr().out


def test_signal_until_step_reads_the_runs_as_if_they_had_stopped_there(curves, tmp_path):
    assert (
        analysis_main(["signal", "--curves", str(curves), "--out-dir", str(tmp_path / "t"), "--until-step", "4"]) == 0
    )
    df = pd.read_csv(tmp_path / "t" / "signal.csv").set_index(["n", "rule"])
    assert df.loc[(4, "max_variance"), "steps"] == 4
    assert df.loc[(4, "max_variance"), "kept_zero_share"] == pytest.approx(0.5)  # seed 0: 2 of 4, seed 1: 2 of 4
    assert df.loc[(16, "max_variance"), "kept_zero_share"] == 0.0


def test_an_interval_counts_as_many_steps_as_it_covers():
    rows = pd.DataFrame({"step": [4, 1], "value": [0.0, 1.0]})  # step 1 alone, then steps 2-4
    whole, quarters = _per_run_shares(rows, span=4.0)
    assert whole == pytest.approx(0.25)
    assert quarters[0] == 1.0
    assert quarters[3] == 0.0


def test_signal_without_per_step_rows_is_an_input_error(curves, tmp_path, capsys):
    """Curves collected from runs that logged no reward spread (or the released logs'): exit 2, saying why."""
    frame = pd.read_csv(curves)
    frame[frame["dataset"] != "train"].to_csv(tmp_path / "no_train.csv", index=False)
    assert analysis_main(["signal", "--curves", str(tmp_path / "no_train.csv"), "--out-dir", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err
    assert "kept_frac_zero_std" in err
    assert "collect" in err


def _signal_rows(n: int, shares_by_seed: list[float]) -> list[dict]:
    """curves.csv rows (dataset "train") of one arm of setting a: per seed, one 10-step interval at its share."""
    ident = {"setting": "a", "setting_name": "tiny_a", "role": "", "m": 4, "rule": "max_variance",
             "normalize": "after", "grad_accum": 1, "dataset": "train", "primary_dataset": "arith"}  # fmt: skip
    return [
        ident | {"arm": "pods", "n": n, "seed": s, "grid": 1, "time_s": 1.0, "step": 10, "metric": metric, "value": v}
        for s, v in enumerate(shares_by_seed)
        for metric in ("kept_frac_zero_std", "frac_zero_std")
    ]


def test_an_arm_s_interval_is_the_t_interval_of_its_own_seeds_shares():
    """The whole-run share's interval is Student t over the arm's per-seed shares: 8 seeds, t_7 at 0.975 = 2.364624
    (a printed table's value) times sd / sqrt(8), [0.14, 0.61]; the percentile bootstrap of the same shares gave
    [0.20, 0.57] (2000 resamples), the narrower interval that covered 84-88% at 5-8 seeds in simulation. An arm
    sorted before it (n = 8 before n = 16) does not shift it, and the same shares under another arm's key give
    the same interval: nothing is drawn."""
    import numpy as np

    from pods_repro.analysis.gradsignal import signal_table

    shares = [0.05, 0.1, 0.2, 0.3, 0.35, 0.5, 0.6, 0.9]
    alone = signal_table(pd.DataFrame(_signal_rows(16, shares)), n_boot=300).iloc[0]
    half = 2.364624 * np.std(shares, ddof=1) / np.sqrt(8)
    cols = ["kept_zero_ci_low", "kept_zero_ci_high"]
    assert list(alone[cols]) == pytest.approx([np.mean(shares) - half, np.mean(shares) + half])
    with_other = signal_table(pd.DataFrame(_signal_rows(8, shares[::-1]) + _signal_rows(16, shares)), n_boot=300)
    assert list(with_other["n"]) == [8, 16]
    assert list(with_other.iloc[1][cols]) == list(alone[cols])
    assert list(with_other.iloc[0][cols]) == pytest.approx(list(alone[cols]))
