"""The analysis command line refuses inputs that would give a wrong number without a word.

Each case here once gave exit 0 with a silently wrong table, or a traceback: the same run counted
twice, seeds of one arm on different evaluation grids, unchecked cells of curves.csv, nonsense
options, unusable paths, a released-logs folder that is not the release. Each is now one line on
stderr (exit 2) that names the input and the fix.

    pytest tests/analysis/test_analysis_robust.py
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pods_repro.analysis.cli import main as analysis_main
from pods_repro.analysis.released import read_released
from pods_repro.analysis.released_logs import make_manifest
from pods_repro.analysis.tidy import AnalysisInputError, check_grids, read_curves, read_steps


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_pods_test_{name}", Path(__file__).with_name(f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


H = _load("test_analysis")
I = _load("test_analysis_inputs")  # noqa: E741 (the released-logs folder builder)
RELEASED = H.RELEASED

# Every subcommand that reads --curves, with options that keep it fast.
READERS = {
    "time-to-peak": [],
    "plateau": [],
    "levels": [],
    "seeds": ["--seeds", "4", "--sims", "20"],
    "ablations": [],
    "signal": [],
}


def _run(capsys, *argv) -> tuple[int, str]:
    """(exit code, stderr) of the analysis CLI run in-process."""
    rc = analysis_main([str(a) for a in argv])
    return rc, capsys.readouterr().err


def _one_line_error(err: str) -> str:
    """The error line of a refusal; fails unless it is exactly one `error:` line and no traceback."""
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def _contains(text: str, *parts: str) -> None:
    """Every part appears in `text` (an error line)."""
    missing = [p for p in parts if p not in text]
    assert not missing, f"{missing} not in {text!r}"


def _usage_error(capsys, *argv) -> str:
    """The message of an argparse refusal (exit 2): its last stderr line."""
    with pytest.raises(SystemExit) as exit_:
        analysis_main([str(a) for a in argv])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


def _add_signal(run_dir: Path, kept: float = 0.5) -> None:
    """Give a fake run's metrics.jsonl the per-step reward-spread shares our trainer logs."""
    path = run_dir / "metrics.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for r in rows:
        r.update(kept_frac_zero_std=kept, frac_zero_std=0.4)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> Path:
    """curves.csv / steps.csv of the fake tree (settings a and e, three seeds per arm), with signal rows."""
    root = tmp_path_factory.mktemp("robust")
    runs = H.fake_tree(root / "runs")
    for d in runs.glob("*/*/seed~*"):
        _add_signal(d)
    sheet = H.fake_sheet(root / "runs.tsv")
    assert (
        analysis_main(["collect", "--runs", str(runs), "--out-dir", str(root / "tables"), "--sheet", str(sheet)]) == 0
    )
    return root / "tables"


def _reader_args(cmd: str, curves: Path, out: Path) -> list:
    flag = "--curves"
    return [cmd, flag, curves, "--out-dir", out, *READERS[cmd], *([] if cmd == "seeds" else ["--n-boot", "100"])]


# ----------------------------------------------------------------------------------------------
# the same arm and seed twice


def test_collect_refuses_one_run_copied_under_another_folder_name(tmp_path, capsys):
    root = H.fake_tree(tmp_path / "runs")
    run = root / "a_toy" / "sel~max_variance_n~4_m~4" / "seed~0"
    copy = root / "a_toy" / "sel~max_variance_n~4_m~4 (copy)" / "seed~0"
    shutil.copytree(run, copy)
    rc, err = _run(capsys, "collect", "--runs", root, "--out-dir", tmp_path / "t")
    assert rc == 2
    line = _one_line_error(err)
    _contains(line, str(run), str(copy))
    _contains(line, "one run twice", "'seed': 0")
    assert "Fix:" in line
    assert not (tmp_path / "t" / "curves.csv").exists()


@pytest.mark.parametrize("cmd", sorted(READERS))
def test_every_reader_refuses_duplicated_curve_rows(table, tmp_path, capsys, cmd):
    # Two collects of the same runs concatenated: each arm and seed twice.
    curves = pd.read_csv(table / "curves.csv")
    doubled = tmp_path / "curves.csv"
    pd.concat([curves, curves.assign(source="elsewhere")]).to_csv(doubled, index=False)
    rc, err = _run(capsys, *_reader_args(cmd, doubled, tmp_path / "out"))
    assert rc == 2
    line = _one_line_error(err)
    assert f"{len(curves)} duplicated rows" in line
    _contains(line, "setting=a", "seed=0", "grid=0")  # the first duplicated key
    assert "Fix:" in line
    assert not (tmp_path / "out").exists()


def test_ablations_refuses_duplicated_released_rows(table, tmp_path, capsys):
    curves = pd.read_csv(table / "curves.csv")
    doubled = tmp_path / "released.csv"
    pd.concat([curves, curves.iloc[[7]]]).to_csv(doubled, index=False)
    rc, err = _run(capsys, "ablations", "--released", doubled, "--out-dir", tmp_path / "out", "--n-boot", "100")
    assert rc == 2
    assert "1 duplicated rows" in _one_line_error(err)


def test_steps_table_with_a_run_twice_is_refused(table, tmp_path):
    steps = pd.read_csv(table / "steps.csv")
    pd.concat([steps, steps.iloc[[0]]]).to_csv(tmp_path / "steps.csv", index=False)
    with pytest.raises(AnalysisInputError, match=r"steps\.csv: 1 duplicated rows.*setting=a.*seed=0"):
        read_steps(tmp_path / "steps.csv")


# ----------------------------------------------------------------------------------------------
# seeds of one arm on different evaluation grids


def _budget_tree(root: Path) -> Path:
    """Setting a, three seeds per arm; baseline seed 3 trained twice as long (and higher at the end)."""
    for seed in range(3):
        H.write_run(root, "a_x", 4, 4, seed, [0.2, 0.5, 0.7, 0.77, 0.76])
        H.write_run(root, "a_x", 16, 4, seed, [0.2, 0.74, 0.77, 0.78, 0.78])
    H.write_run(root, "a_x", 4, 4, 3, [0.2, 0.5, 0.7, 0.77, 0.76, 0.85, 0.9, 0.95, 0.95])
    return root


def test_a_seed_on_a_longer_budget_is_refused_and_until_step_cuts_it(tmp_path, capsys):
    root = _budget_tree(tmp_path / "runs")
    sheet = H.fake_sheet(tmp_path / "runs.tsv")
    assert analysis_main(["collect", "--runs", str(root), "--out-dir", str(tmp_path / "t"), "--sheet", str(sheet)]) == 0
    capsys.readouterr()
    curves = tmp_path / "t" / "curves.csv"
    for cmd in sorted(set(READERS) - {"signal"}):  # (signal: these runs log no reward spread)
        rc, err = _run(capsys, *_reader_args(cmd, curves, tmp_path / "out"))
        assert rc == 2, cmd
        line = _one_line_error(err)
        _contains(line, "grpo n=4 m=4", "seed 3 to step 80 (9 evaluations)", "seeds 0, 1, 2 to step 40 (5")
        assert "--until-step 40" in line
    # the fix the message names: every seed cut to step 40 is the 300-step experiment
    rc, _ = _run(capsys, "time-to-peak", "--curves", curves, "--out-dir", tmp_path / "cut", "--until-step", "40",
                 "--n-boot", "100")  # fmt: skip
    assert rc == 0
    cut = pd.read_csv(tmp_path / "cut" / "time_to_peak.csv")
    assert cut["peak_baseline"].round(4).tolist() == [0.77]
    assert cut["n_seeds_baseline"].tolist() == [4]


def test_a_missing_evaluation_of_one_seed_is_refused(table, tmp_path, capsys):
    # One seed's evaluation at grid point 2 is absent: its mean there would be over the other seeds.
    curves = pd.read_csv(table / "curves.csv")
    gone = (curves["setting"] == "a") & (curves["n"] == 4) & (curves["seed"] == 1) & (curves["grid"] == 2)
    gone &= curves["dataset"] == "gsm8k"
    curves[~gone].to_csv(tmp_path / "curves.csv", index=False)
    rc, err = _run(capsys, "time-to-peak", "--curves", tmp_path / "curves.csv", "--out-dir", tmp_path / "o")
    assert rc == 2
    line = _one_line_error(err)
    assert "seed 1 lacks grid point 2" in line
    _contains(line, "grpo n=4 m=4", "Fix:")


# A committed step-grid table (eval.every_steps: 8 seeds per arm of setting a, each evaluated at the same steps).
STEP_GRID_CURVES = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "gpu_h100_tt_curves.csv"
RELEASED_CURVES = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "released" / "curves.csv.gz"


def _installed_pods(*argv) -> subprocess.CompletedProcess:
    """The installed `pods` command (the console script beside this Python), run as a user runs it."""
    exe = Path(sys.executable).with_name("pods")
    assert exe.is_file(), f"{exe} is missing: install the package (bash scripts/install.sh)"
    return subprocess.run([str(exe), *map(str, argv)], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("cmd", ["time-to-peak", "levels", "plateau"])
def test_a_seed_rerun_on_another_step_grid_is_refused(tmp_path, cmd):
    # Seed 3 of the baseline rerun with eval.every_steps 30 instead of 25 (100 -> 120 on the hard sets): as many
    # evaluations, at other steps. Averaged by grid index it shifted the baseline's time to peak without a word.
    curves = pd.read_csv(STEP_GRID_CURVES)
    rerun = (curves["setting"] == "a") & (curves["arm"] == "grpo") & (curves["seed"] == 3)
    curves.loc[rerun, "step"] = curves.loc[rerun, "step"] * 6 // 5
    curves.to_csv(tmp_path / "curves.csv", index=False)
    res = _installed_pods("analysis", cmd, "--curves", tmp_path / "curves.csv", "--out-dir", tmp_path / "o")
    assert res.returncode == 2, res.stdout + res.stderr
    line = _one_line_error(res.stderr)
    _contains(
        line,
        "seed 3 of grpo n=16 m=16 (setting a,",
        "at steps 30, 60, 90, 120, ... where seeds 0, 1, 2, 4, 5, 6, 7 were at steps 25, 50, 75, 100, ...",
        "Fix: rerun seed 3 on the other seeds' step grid (eval.every_steps 25)",
    )
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_seeds_on_one_step_grid_and_wall_clock_grids_pass(tmp_path):
    # On a step grid the seeds' times differ at a grid point and their steps agree; on the released logs'
    # wall-clock grid it is the other way round. Both are one grid, and both are read.
    step_grid = read_curves(STEP_GRID_CURVES)
    evals = step_grid[step_grid["dataset"] != "train"]
    assert evals.groupby(["setting", "arm", "dataset", "metric", "grid"])["time_s"].nunique().max() > 1
    check_grids(step_grid, STEP_GRID_CURVES)
    released = read_curves(RELEASED_CURVES)
    assert released.groupby(["setting", "arm", "n", "m", "dataset", "metric", "grid"])["step"].nunique().max() > 1
    check_grids(released, RELEASED_CURVES)
    res = _installed_pods("analysis", "time-to-peak", "--curves", RELEASED_CURVES, "--out-dir", tmp_path / "o",
                          "--n-boot", "100")  # fmt: skip
    assert res.returncode == 0, res.stderr


# ----------------------------------------------------------------------------------------------
# cells of curves.csv


@pytest.mark.parametrize(
    ("cmd", "metric", "column", "bad", "why"),
    [
        ("plateau", "accuracy", "time_s", "", "time_s is empty"),
        ("plateau", "accuracy", "time_s", "inf", "time_s=inf is not a finite number >= 0"),
        ("time-to-peak", "accuracy", "time_s", "-100", "time_s=-100.0 is not a finite number >= 0"),
        ("time-to-peak", "accuracy", "step", "inf", "step=inf is not a finite number >= 0"),
        ("levels", "accuracy", "step", "-3", "step=-3.0 is not a finite number >= 0"),
        ("levels", "accuracy", "step", "", "step is empty"),
        ("plateau", "completion_len_mean", "value", "inf", "completion_len_mean=inf is not a finite number >= 0"),
        ("signal", "kept_frac_zero_std", "value", "7.0", "kept_frac_zero_std=7.0 is not in [0, 1]"),
        ("signal", "frac_zero_std", "value", "-0.5", "frac_zero_std=-0.5 is not in [0, 1]"),
    ],
)
def test_curve_cells_are_range_checked_naming_row_and_column(table, tmp_path, capsys, cmd, metric, column, bad, why):
    curves = pd.read_csv(table / "curves.csv", dtype=str, keep_default_na=False)
    i = int(curves.index[(curves["metric"] == metric) & (curves["grid"] == "2")][0])
    curves.loc[i, column] = bad
    curves.to_csv(tmp_path / "curves.csv", index=False)
    rc, err = _run(capsys, *_reader_args(cmd, tmp_path / "curves.csv", tmp_path / "out"))
    assert rc == 2
    line = _one_line_error(err)
    assert f"row {i + 2}: {why}" in line


def test_collect_refuses_reward_spread_shares_outside_0_1(tmp_path, capsys):
    run = H.write_run(tmp_path / "runs", "a_x", 4, 4, 0, [0.2, 0.5, 0.7])
    _add_signal(run, kept=7.0)  # 700%: a share logged in percent
    rc, err = _run(capsys, "collect", "--runs", tmp_path / "runs", "--out-dir", tmp_path / "t")
    assert rc == 2
    line = _one_line_error(err)
    assert "metrics.jsonl line 1: kept_frac_zero_std=7.0 is not in [0, 1]" in line


# ----------------------------------------------------------------------------------------------
# options


@pytest.mark.parametrize("cmd", ["released", *sorted(READERS)])
@pytest.mark.parametrize(
    ("option", "value", "why"),
    [
        ("--boot-seed", "-1", "'-1' is not a whole number >= 0"),
        ("--n-boot", "1000000000000", "'1000000000000' is not a whole number in 100..100000"),
    ],
)
def test_bootstrap_options_are_checked_in_every_subcommand(table, tmp_path, capsys, cmd, option, value, why):
    source = ["--logs", tmp_path] if cmd == "released" else ["--curves", table / "curves.csv"]
    msg = _usage_error(capsys, cmd, *source, "--out-dir", tmp_path / "o", option, value)
    _contains(msg, why, option)


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["levels", "--levels", "5,0.8"], "--levels 5: accuracy levels are fractions in [0, 1]"),
        (["levels", "--levels", "0.5,-1"], "'0.5,-1': levels are numbers >= 0"),
        (["levels", "--fractions", "0,2"], "'0,2': fractions of the baseline's rise lie in (0, 1]"),
        (["seeds", "--width", "nan"], "'nan' is not a finite width > 0"),
        (["seeds", "--width", "-1"], "'-1' is not a finite width > 0"),
        (["seeds", "--sims", "1000000000000"], "is not a whole number in 1..100000"),
    ],
)
def test_nonsense_option_values_are_usage_errors(table, tmp_path, capsys, argv, why):
    msg = _usage_error(capsys, *argv, "--curves", table / "curves.csv", "--out-dir", tmp_path / "o")
    assert why in msg


def test_levels_above_one_are_fine_for_a_length_metric(table, tmp_path, capsys):
    rc, _ = _run(capsys, "levels", "--curves", table / "curves.csv", "--out-dir", tmp_path, "--levels", "80,95",
                 "--metric", "completion_len_mean", "--setting", "a", "--n-boot", "100")  # fmt: skip
    assert rc == 0


@pytest.mark.parametrize("cmd", ["levels", "seeds", "ablations"])
def test_an_unknown_setting_is_refused_naming_the_present_ones(table, tmp_path, capsys, cmd):
    rc, err = _run(capsys, *_reader_args(cmd, table / "curves.csv", tmp_path / "o"), "--setting", "z")
    assert rc == 2
    line = _one_line_error(err)
    _contains(line, "--setting z", "settings present: a, e")
    assert not (tmp_path / "o").exists()


# ----------------------------------------------------------------------------------------------
# paths


def test_a_folder_given_as_a_table_is_one_line(table, tmp_path, capsys):
    for argv in (
        ["time-to-peak", "--curves", table],
        ["time-to-peak", "--curves", table / "curves.csv", "--steps", table],
        ["ablations", "--released", table],
    ):
        rc, err = _run(capsys, *argv, "--out-dir", tmp_path / "o")
        assert rc == 2
        assert f"{table} is a folder, not a CSV file" in _one_line_error(err)


def test_out_dir_that_is_a_file_is_refused_before_any_computation(table, tmp_path, capsys, monkeypatch):
    from pods_repro.analysis import collect, speedups

    def no_computation(*args, **kwargs):
        raise AssertionError("the computation ran before the output folder was checked")

    monkeypatch.setattr(speedups, "speedup_table", no_computation)
    monkeypatch.setattr(collect, "collect_runs", no_computation)
    (tmp_path / "a_file").write_text("x")
    for argv in (
        ["time-to-peak", "--curves", table / "curves.csv"],
        ["collect", "--runs", tmp_path],
    ):
        for out in (tmp_path / "a_file", tmp_path / "a_file" / "sub"):
            rc, err = _run(capsys, *argv, "--out-dir", out)
            assert rc == 2
            line = _one_line_error(err)
            _contains(line, f"--out-dir {out}", "a_file is a file")


def test_collect_with_a_binary_sheet_is_one_line(tmp_path, capsys):
    root = H.fake_tree(tmp_path / "runs")
    (tmp_path / "sheet.tsv").write_bytes(bytes(range(256)) * 4)
    rc, err = _run(capsys, "collect", "--runs", root, "--out-dir", tmp_path / "t", "--sheet", tmp_path / "sheet.tsv")
    assert rc == 2
    line = _one_line_error(err)
    assert f"run sheet {tmp_path / 'sheet.tsv'} is not text" in line


# ----------------------------------------------------------------------------------------------
# the released logs


def _header_only_wandb(folder: Path) -> Path:
    folder.mkdir(parents=True)
    head = '"eval/time","data/GRPO-s1-p8-n128-m32-ga4 - _step","data/GRPO-s1-p8-n128-m32-ga4 - {}"\n'
    (folder / "h100s-acc.csv").write_text(head.format("eval/rewards/accuracy_reward/mean"))
    (folder / "h100s-length.csv").write_text(head.format("eval/completions/mean_length"))
    return folder


def test_header_only_wandb_export_names_the_file(tmp_path, capsys):
    folder = _header_only_wandb(tmp_path / "rel")
    with pytest.raises(AnalysisInputError, match=r"h100s-acc\.csv.*no rows"):
        read_released(folder)
    rc, err = _run(capsys, "released", "--logs", folder, "--out-dir", tmp_path / "o", "--no-verify")
    assert rc == 2
    assert "h100s-acc.csv" in _one_line_error(err)


def test_released_verifies_the_folder_before_reading_it(tmp_path, capsys):
    folder = I.released_dir(tmp_path / "rel")
    manifest = tmp_path / "manifest.sha256"
    manifest.write_text(make_manifest(folder))
    args = ["released", "--logs", folder, "--out-dir", tmp_path / "o", "--n-boot", "100"]
    assert _run(capsys, *args, "--manifest", manifest)[0] == 0
    # one changed digit
    f = folder / "Instruct-GSM8K-512-64-16-Run1.json"
    f.write_text(f.read_text().replace("0.81", "0.91"))
    rc, err = _run(capsys, *args, "--manifest", manifest)
    assert rc == 2
    line = _one_line_error(err)
    assert "1 altered (SHA-256 differs): Instruct-GSM8K-512-64-16-Run1.json" in line
    # the package's manifest by default: this small folder is not the release
    rc, err = _run(capsys, *args)
    assert rc == 2
    assert "is not the authors' released results/ folder" in _one_line_error(err)
    # the opt-out reads it, and says the tables are not the release's
    rc, err = _run(capsys, *args, "--no-verify")
    assert rc == 0
    _contains(err, "warning: --no-verify", "not the release's")


@pytest.mark.skipif(not RELEASED.is_dir(), reason=f"authors' released logs not found at {RELEASED}")
def test_released_refuses_a_copy_of_the_release_with_one_changed_digit(tmp_path, capsys):
    copy = tmp_path / "results"
    shutil.copytree(RELEASED, copy)
    f = copy / "Instruct-GSM8K-512-16-16-Run1.json"
    text = f.read_text()
    # the second decimal of a GSM8K accuracy: still a fraction, so only the checksum can tell
    i = text.index("0.", text.index('"ans_acc"', text.index('"gsm8k"'))) + 3
    f.write_text(text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1 :])
    rc, err = _run(capsys, "released", "--logs", copy, "--out-dir", tmp_path / "o", "--n-boot", "100")
    assert rc == 2
    assert "Instruct-GSM8K-512-16-16-Run1.json" in _one_line_error(err)
    assert not (tmp_path / "o").exists()


def test_read_curves_gives_the_same_table_for_shuffled_rows_and_extra_columns(table, tmp_path):
    curves = pd.read_csv(table / "curves.csv")
    shuffled = curves.sample(frac=1.0, random_state=3).assign(note="x")
    shuffled.insert(0, "extra", 1)
    shuffled.to_csv(tmp_path / "curves.csv", index=False)
    a = read_curves(table / "curves.csv")
    b = read_curves(tmp_path / "curves.csv")
    pd.testing.assert_frame_equal(a, b[a.columns])
