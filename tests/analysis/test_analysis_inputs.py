"""pods_repro.analysis refuses nonsense: values out of range, broken or wrongly shaped
JSON/CSV, a comparison with a missing arm, and an interval from one seed. Each error names the file
(and line, row or key) and says what to do.

    pytest tests/analysis/test_analysis_inputs.py
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from pods_repro.analysis.cli import main as analysis_main
from pods_repro.analysis.collect import collect_runs, load_runs
from pods_repro.analysis.released import read_released
from pods_repro.analysis.speedups import Comparison, released_comparisons, speedup_table
from pods_repro.analysis.tidy import AnalysisInputError, read_curves


def _helpers():
    spec = importlib.util.spec_from_file_location("_pods_test_analysis", Path(__file__).with_name("test_analysis.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


H = _helpers()


# ----------------------------------------------------------------------------------------------
# a small released-logs folder: setting (a), GRPO 16/16 and PODS 64/16, two runs each


def released_dir(root: Path, pods_scale: float = 1.0, runs: int = 2) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    base = {"gsm8k": {"ans_acc": [0.5] * 5, "lengths": [200.0] * 5}}
    (root / "base-qwen.json").write_text(json.dumps(base))
    curves = {(16, 16): [0.6, 0.7, 0.8, 0.8], (64, 16): [0.8, 0.8, 0.8, 0.81]}
    for (n, m), accs in curves.items():
        for run in range(1, runs + 1):
            scale = pods_scale if (n, m) == (64, 16) and run == 1 else 1.0
            log = {
                f"checkpoint-{(k + 1) * 100}": {"gsm8k": {"ans_acc": [a * scale] * 5, "lengths": [200.0] * 5}}
                for k, a in enumerate(accs)
            }
            (root / f"Instruct-GSM8K-512-{n}-{m}-Run{run}.json").write_text(json.dumps(log))
    return root


def test_small_released_folder_is_analysed(tmp_path):
    curves, _ = read_released(released_dir(tmp_path / "rel"))
    table = speedup_table(curves, released_comparisons(), n_boot=50)
    assert table["setting"].tolist() == ["a"]
    assert table["speedup"].tolist() == [3.0]  # GRPO reaches 0.99 x 0.8 at 1.5 h, PODS at 0.5 h


def test_released_accuracy_in_percent_is_refused(tmp_path):
    # One run logged in percent would silently change the speed-up; refuse it and name the file.
    folder = released_dir(tmp_path / "rel", pods_scale=100.0)
    with pytest.raises(AnalysisInputError, match=r"Instruct-GSM8K-512-64-16-Run1\.json.*ans_acc.*\[0, 1\]"):
        read_released(folder)


def test_collect_refuses_accuracies_out_of_range(tmp_path):
    for bad in (7.5, -2.0):
        root = tmp_path / f"runs{bad}"
        H.write_run(root, "a_x", 4, 4, 0, [0.1, bad, 0.3])
        with pytest.raises(AnalysisInputError, match=r"eval\.jsonl line 2: accuracy=.*not in \[0, 1\]"):
            load_runs(root)


def test_broken_released_json_names_the_file(tmp_path):
    folder = released_dir(tmp_path / "rel")
    (folder / "Instruct-GSM8K-512-16-16-Run2.json").write_text('{"checkpoint-100": {"gsm8k": ')
    with pytest.raises(AnalysisInputError, match=r"Instruct-GSM8K-512-16-16-Run2\.json.*not valid JSON"):
        read_released(folder)


def test_wrongly_shaped_released_json_names_the_file(tmp_path):
    folder = released_dir(tmp_path / "rel")
    (folder / "Instruct-GSM8K-512-16-16-Run2.json").write_text(json.dumps([0.1, 0.2]))
    with pytest.raises(AnalysisInputError, match=r"Instruct-GSM8K-512-16-16-Run2\.json.*checkpoint"):
        read_released(folder)
    (folder / "Instruct-GSM8K-512-16-16-Run2.json").write_text(json.dumps({"checkpoint-100": {"gsm8k": 0.5}}))
    with pytest.raises(AnalysisInputError, match=r"Instruct-GSM8K-512-16-16-Run2\.json.*checkpoint-100.*gsm8k"):
        read_released(folder)


def test_broken_wandb_csv_names_the_file_and_row(tmp_path):
    folder = tmp_path / "rel"
    folder.mkdir()
    head = '"eval/time","data/GRPO-s1-p8-n128-m32-ga4 - _step","data/GRPO-s1-p8-n128-m32-ga4 - {}"\n'
    key = "eval/rewards/accuracy_reward/mean"
    (folder / "h100s-acc.csv").write_text(head.format(key) + "0,0,0.5\n120,4,zero point six\n")
    (folder / "h100s-length.csv").write_text(head.format("eval/completions/mean_length") + "0,0,200\n120,4,210\n")
    with pytest.raises(AnalysisInputError, match=r"h100s-acc\.csv row 3.*zero point six"):
        read_released(folder)


def test_broken_run_config_and_eval_rows_name_the_file(tmp_path):
    d = H.write_run(tmp_path / "r1", "a_x", 4, 4, 0, [0.1, 0.2])
    (d / "config.json").write_text("{not json")
    with pytest.raises(AnalysisInputError, match=r"config\.json.*not valid JSON"):
        load_runs(tmp_path / "r1")
    d = H.write_run(tmp_path / "r2", "a_x", 4, 4, 0, [0.1, 0.2])
    (d / "eval.jsonl").write_text('{"step": 1, "time_s": 3.0, "accuracy": 0.5}\n{"step": 2}\n')
    with pytest.raises(AnalysisInputError, match=r"eval\.jsonl line 1.*dataset"):
        load_runs(tmp_path / "r2")


def test_two_runs_of_the_same_arm_and_seed_are_refused_not_averaged(tmp_path):
    a = H.write_run(tmp_path / "one", "a_x", 4, 4, 0, [0.1, 0.2])
    b = H.write_run(tmp_path / "two", "a_x", 4, 4, 0, [0.3, 0.9, 0.9])  # e.g. a longer budget of the same seed
    H.write_run(tmp_path / "one", "a_x", 4, 4, 1, [0.1, 0.2])  # another seed: fine
    load_runs(tmp_path / "one")
    with pytest.raises(AnalysisInputError, match=rf"{a} and {b} are the same arm and seed.*'seed': 0"):
        collect_runs(None, run_dirs=[a, b])


@pytest.mark.parametrize(
    ("option", "value", "why"),
    [
        ("--threshold", "nan", "not a fraction in \\(0, 1\\]"),
        ("--threshold", "0", "not a fraction"),
        ("--threshold", "1.5", "not a fraction"),
        ("--threshold", "-1", "not a fraction"),
        ("--n-boot", "0", "not a whole number in 100..100000"),
        ("--n-boot", "-5", "not a whole number in 100..100000"),
        ("--n-boot", "many", "not a whole number in 100..100000"),
    ],
)
def test_nonsense_threshold_or_resample_count_is_a_usage_error(tmp_path, capsys, option, value, why):
    with pytest.raises(SystemExit) as exit_:
        analysis_main(["time-to-peak", "--curves", str(tmp_path / "c.csv"), "--out-dir", str(tmp_path), option, value])
    assert exit_.value.code == 2
    assert re.search(why, capsys.readouterr().err)


def test_curves_csv_out_of_range_names_the_row(tmp_path):
    root = H.fake_tree(tmp_path / "runs")
    out = tmp_path / "tables"
    assert analysis_main(["collect", "--runs", str(root), "--out-dir", str(out)]) == 0
    curves = pd.read_csv(out / "curves.csv")
    curves.loc[5, "value"] = 3.0
    curves.loc[5, "metric"] = "accuracy"
    curves.to_csv(out / "curves.csv", index=False)
    with pytest.raises(AnalysisInputError, match=r"curves\.csv row 7: accuracy=3\.0 is not in \[0, 1\]"):
        read_curves(out / "curves.csv")


def test_a_missing_arm_is_refused_naming_the_setting_and_the_arm(tmp_path, capsys):
    root = H.fake_tree(tmp_path / "runs")
    for d in root.glob("e_toy/sel~max_variance_n~16_m~4/*"):  # every PODS run of e
        for f in d.iterdir():
            f.unlink()
        d.rmdir()
    out = tmp_path / "tables"
    sheet = H.fake_sheet(tmp_path / "runs.tsv")
    assert analysis_main(["collect", "--runs", str(root), "--out-dir", str(out), "--sheet", str(sheet)]) == 0
    assert (
        analysis_main(["time-to-peak", "--curves", str(out / "curves.csv"), "--out-dir", str(out), "--n-boot", "100"])
        == 2
    )
    err = capsys.readouterr().err
    assert "setting e" in err
    assert "pods" in err
    # An explicit comparison whose PODS runs are absent is refused too (no silent drop).
    curves = read_curves(out / "curves.csv")
    comp = Comparison("e", "gsm8k", "accuracy", {"arm": "grpo_ga"}, {"arm": "pods", "n": 16}, None)
    with pytest.raises(AnalysisInputError, match=r"setting e.*PODS arm .*pods n=16"):
        speedup_table(curves, [comp], n_boot=20)


def test_released_folder_missing_an_arm_is_refused(tmp_path):
    folder = released_dir(tmp_path / "rel")
    for f in folder.glob("Instruct-GSM8K-512-64-16-*.json"):
        f.unlink()
    curves, _ = read_released(folder)
    with pytest.raises(AnalysisInputError, match=r"setting a.*PODS arm"):
        speedup_table(curves, released_comparisons(), n_boot=20)


def test_one_seed_prints_no_interval(tmp_path):
    root = tmp_path / "runs"
    H.write_run(root, "a_x", 4, 4, 0, [0.2, 0.5, 0.7, 0.8, 0.79])
    H.write_run(root, "a_x", 16, 4, 0, [0.2, 0.8, 0.82, 0.83, 0.84])
    sheet = H.fake_sheet(tmp_path / "runs.tsv")
    out = tmp_path / "tables"
    assert analysis_main(["collect", "--runs", str(root), "--out-dir", str(out), "--sheet", str(sheet)]) == 0
    assert (
        analysis_main(["time-to-peak", "--curves", str(out / "curves.csv"), "--out-dir", str(out), "--n-boot", "100"])
        == 0
    )
    table = pd.read_csv(out / "time_to_peak.csv")
    assert table["ci_low"].isna().all()
    assert table["ci_high"].isna().all()
    md = (out / "time_to_peak.md").read_text()
    assert "n/a (1 seed)" in md
    assert "| 3.0 | 3.00 | 3.00 | 3.00 |" not in md


def test_wrongly_shaped_tables_name_the_file(tmp_path, capsys):
    root = H.fake_tree(tmp_path / "runs")
    out = tmp_path / "tables"
    sheet = H.fake_sheet(tmp_path / "runs.tsv")
    assert analysis_main(["collect", "--runs", str(root), "--out-dir", str(out), "--sheet", str(sheet)]) == 0
    # a steps table without its `steps` column
    pd.read_csv(out / "steps.csv").drop(columns="steps").to_csv(tmp_path / "bad_steps.csv", index=False)
    args = ["time-to-peak", "--curves", str(out / "curves.csv"), "--out-dir", str(out), "--n-boot", "100"]
    assert analysis_main([*args, "--steps", str(tmp_path / "bad_steps.csv")]) == 2
    assert "bad_steps.csv" in capsys.readouterr().err
    # a curves table whose seed column holds text
    curves = pd.read_csv(out / "curves.csv")
    curves["seed"] = curves["seed"].astype(object)
    curves.loc[3, "seed"] = "three"
    curves.to_csv(tmp_path / "bad_curves.csv", index=False)
    with pytest.raises(AnalysisInputError, match=r"bad_curves\.csv row 5: seed='three' is not a number"):
        read_curves(tmp_path / "bad_curves.csv")
    # not a CSV at all
    (tmp_path / "binary.csv").write_bytes(b'"a,b\n\x00\x01"\n"')
    with pytest.raises(AnalysisInputError, match=r"binary\.csv"):
        read_curves(tmp_path / "binary.csv")


def test_abbreviated_options_are_refused_not_guessed(tmp_path, capsys):
    # argparse's prefix matching read `pods bench select --m 0` as --max-n 0; every parser now refuses it.
    with pytest.raises(SystemExit) as exit_:
        analysis_main(
            ["time-to-peak", "--curves", str(tmp_path / "c.csv"), "--out-dir", str(tmp_path), "--thresh", "0.9"]
        )
    assert exit_.value.code == 2
    assert "unrecognized arguments: --thresh" in capsys.readouterr().err


def test_a_steps_table_with_no_roles_reads_without_a_pandas_warning(tmp_path):
    """An all-empty role column reads as floats; filling it with "" warns (and will raise) in pandas 4."""
    import warnings

    from pods_repro.analysis.tidy import read_steps

    steps = pd.DataFrame(
        {"setting": ["a"], "arm": ["grpo"], "n": [8], "m": [8], "grad_accum": [1], "seed": [0], "time_s": [1.0],
         "steps": [2], "role": [None]}
    )  # fmt: skip
    steps.to_csv(tmp_path / "steps.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = read_steps(tmp_path / "steps.csv")
    assert list(got["role"]) == [""]


def test_a_truncated_gzipped_table_is_one_error(tmp_path):
    from pods_repro.analysis.tidy import AnalysisInputError, read_steps

    path = tmp_path / "steps.csv.gz"
    pd.DataFrame({"setting": ["a"] * 200, "seed": range(200)}).to_csv(path, index=False, compression="gzip")
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(AnalysisInputError, match="steps.csv.gz is not a readable steps CSV"):
        read_steps(path)
