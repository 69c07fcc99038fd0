"""Help that lists what can be set, TRL-style flags, plain logs without a terminal, no deprecation
warnings from our own settings."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from pods_repro import cli
from pods_repro import config as pc

REPO = Path(__file__).resolve().parents[2]
TINY = str(REPO / "experiments" / "tiny_a.yaml")


def test_train_help_and_pods_config_list_every_key(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["train", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: pods train")
    rows = [r for r in pc.describe_keys() if r["type"] != "section"]
    assert len(rows) == len(pc.all_keys()) - len({r["key"] for r in pc.describe_keys() if r["type"] == "section"})
    assert len(rows) >= 50
    for row in rows:
        assert row["doc"], f"{row['key']} has no doc"
        assert f"  {row['key']}  {row['type']} = {row['default']}" in text, row["key"]
    assert "  rollout.n  int = 64" in text
    assert "Rollouts generated per prompt group" in text
    assert "  budget.max_steps  int | null = null" in text
    assert "--rollout.n 64" in text  # the flag form is documented

    assert cli.main(["config", "rollout"]) == 0
    out = capsys.readouterr().out
    assert "rollout.m  int = 16" in out
    assert "optim." not in out
    assert cli.main(["config", "rollot"]) == 2
    assert "use one of" in capsys.readouterr().err


def _without_n_m(overrides):
    """The test overrides less rollout.n and rollout.m, which these tests give on the command line."""
    return [o for o in overrides if not o.startswith(("rollout.n=", "rollout.m="))]


def test_trl_style_flags_are_overrides(capsys, tiny_overrides):
    assert cli._flag_overrides(["--rollout.n", "8", "--rollout.m=4", "x.yaml", "--dry-run", "optim.lr=1e-3"]) == [
        "rollout.n=8",
        "rollout.m=4",
        "x.yaml",
        "--dry-run",
        "optim.lr=1e-3",
    ]
    assert cli._flag_overrides(["--policy.lora.enabled", "--trl.report_to", "[tensorboard]"]) == [
        "policy.lora.enabled=true",
        "trl.report_to=[tensorboard]",
    ]
    base = _without_n_m(tiny_overrides)
    assert cli.main(["validate", TINY, *base, "--rollout.n", "16", "--rollout.m=8", "--paper"]) == 0
    out = capsys.readouterr().out
    assert "sel~max_variance_n~16_m~8" in out
    assert cli.main(["validate", TINY, "--rollout.n"]) == 2
    assert "--rollout.n needs a value" in capsys.readouterr().err


def test_a_key_given_twice_with_two_values_is_refused(capsys, tiny_overrides):
    """`rollout.n=64 ... --rollout.n 32` names the clash (exit 2) instead of silently training n = 32."""
    base = _without_n_m(tiny_overrides)
    assert cli.main(["validate", TINY, *base, "rollout.n=64", "rollout.m=16", "--rollout.n", "32", "--paper"]) == 2
    err = capsys.readouterr().err
    assert "rollout.n is given twice on the command line (rollout.n=64 and rollout.n=32)" in err
    assert "Fix: give rollout.n once" in err
    for cmd in (["train", TINY, "--dry-run"], ["eval", "no-such-run"]):  # refused before any other check
        assert cli.main([*cmd, "eval.repeats=1", "eval.repeats=2"]) == 2
        assert "eval.repeats is given twice" in capsys.readouterr().err
    # the same value twice is no clash
    assert cli.main(["validate", TINY, *base, "rollout.n=16", "rollout.m=8", "rollout.n=16", "--paper"]) == 0
    capsys.readouterr()


def test_released_help_names_the_program_and_every_option(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["released", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: pods released")
    assert "python -m pods_repro.analysis" not in text
    for opt in ("--logs", "--out-dir", "--sheet", "--threshold", "--n-boot", "--boot-seed"):
        line = next(ln for ln in text.splitlines() if ln.strip().startswith(opt))
        # an option's help is on its line or the next one
        i = text.splitlines().index(line)
        assert len(line.split()) > 2 or len(text.splitlines()[i + 1].split()) > 0, opt


def test_package_settings_raise_no_deprecation_warnings(make_trainer):
    """Building the GRPOConfig and the trainer from the package's own options warns of nothing deprecated
    (TRL 1.16 / transformers 5 renamed gradient_checkpointing -> activation_checkpointing, ...)."""

    def reward(completions, **_):
        return [float(len(c) % 2) for c in completions]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make_trainer([reward], "trl.report_to=[tensorboard]")
    bad = [w for w in caught if issubclass(w.category, DeprecationWarning | FutureWarning)]
    assert not bad, [f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})" for w in bad]


def test_logs_without_a_terminal_are_plain_lines(tiny_cfg, tmp_path, capfd, monkeypatch):
    """Under Snakemake stderr is a file: no progress bar, no carriage return, one line per evaluation."""
    from pods_repro.run import train

    monkeypatch.delenv("PODS_NO_PROGRESS", raising=False)  # the non-TTY check alone must do it
    run_dir = train(tiny_cfg(tmp_path / "run", "budget.max_steps=2", "eval.every_steps=1", "checkpoint.every_steps=2"))
    err = capfd.readouterr().err
    assert "\r" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith("[pods] eval step")]
    assert [ln.split()[3] for ln in lines] == ["0", "1", "2"], err[-2000:]
    assert "arith accuracy" in lines[0]
    assert (run_dir / "summary.json").is_file()
