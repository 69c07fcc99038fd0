"""The config's ``trl:`` pass-through section: any GRPOConfig field, except those the
package sets from its own options; TensorBoard logging end to end; the model card cites PODS."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pods_repro import config as pc
from pods_repro.config import ConfigError, from_dict, to_dict

REPO = Path(__file__).resolve().parents[2]


def test_controlled_fields_are_refused_naming_the_pods_option():
    with pytest.raises(ConfigError, match=r"trl\.num_generations=8: is set by the package from its option rollout\.n"):
        from_dict({"trl": {"num_generations": 8}})
    with pytest.raises(ConfigError, match=r"trl\.learning_rate.*set optim\.lr instead"):
        from_dict({"trl": {"learning_rate": 1e-6}})
    with pytest.raises(ConfigError, match=r"trl\.gradient_accumulation_steps.*optim\.grad_accum"):
        from_dict({"trl": {"gradient_accumulation_steps": 4}})
    with pytest.raises(ConfigError, match=r"trl\.logging_steps=10: is fixed to 1 by the package.*metrics\.jsonl"):
        from_dict({"trl": {"logging_steps": 10}})
    with pytest.raises(ConfigError, match="mapping"):
        from_dict({"trl": ["report_to"]})
    cfg = from_dict({"trl": {"logging_steps": 1, "report_to": ["tensorboard"], "log_completions": True}})
    assert cfg.trl["report_to"] == ["tensorboard"]
    assert to_dict(cfg)["trl"] == {"logging_steps": 1, "report_to": ["tensorboard"], "log_completions": True}
    assert pc.run_name(cfg) == pc.run_name(from_dict({}))  # logging does not rename the run


def test_unknown_field_names_the_closest_match(tiny_overrides, tmp_path):
    tiny = REPO / "experiments" / "tiny_a.yaml"
    with pytest.raises(
        ConfigError, match=r"trl\.report_too=\[tensorboard\]: is not a field of trl\.GRPOConfig.*trl\.report_to\?"
    ):
        pc.load_config(tiny, [*tiny_overrides, "trl.report_too=[tensorboard]"])
    with pytest.raises(ConfigError, match=r"trl\.report_to.*'tensorbored' is not a reporting integration"):
        pc.load_config(tiny, [*tiny_overrides, "trl.report_to=[tensorbored]"])
    cfg = pc.load_config(tiny, [*tiny_overrides, "trl.report_to=[tensorboard]", "trl.log_completions=true"])
    assert cfg.trl == {"report_to": ["tensorboard"], "log_completions": True}


def test_build_grpo_config_covers_every_field_it_sets(tiny_cfg, tmp_path, monkeypatch):
    """Every GRPOConfig field build_grpo_config sets is refused (TRL_CONTROLLED), fixed (TRL_FIXED, with
    that value) or open (TRL_OPEN): a new option added to build_grpo_config must be listed here."""
    import pods_repro.trainer.grpo_config as pt  # the module whose build_grpo_config calls it

    seen = {}
    real = pt.grpo_config_with_passthrough

    def spy(kwargs, section):
        seen.update(kwargs)
        return real(kwargs, section)

    monkeypatch.setattr(pt, "grpo_config_with_passthrough", spy)
    cfg = tiny_cfg(tmp_path, "trl.report_to=[tensorboard]", "trl.log_completions=true")
    args = pt.build_grpo_config(cfg, tmp_path / "c", 1, False, 5)
    assert args.report_to == ["tensorboard"]
    assert args.log_completions is True
    unlisted = set(seen) - set(pc.TRL_CONTROLLED) - set(pc.TRL_FIXED) - set(pc.TRL_OPEN)
    assert not unlisted, f"add {sorted(unlisted)} to pods_repro.config.TRL_CONTROLLED / TRL_FIXED / TRL_OPEN"
    for name, (value, _) in pc.TRL_FIXED.items():
        assert name not in seen or seen[name] == value, name
    from trl import GRPOConfig

    names = {f.name for f in __import__("dataclasses").fields(GRPOConfig)}
    assert set(pc.TRL_CONTROLLED) | set(pc.TRL_FIXED) | set(pc.TRL_OPEN) <= names


def test_tensorboard_events_and_pods_model_card(tiny_cfg, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from pods_repro.run import train

    cfg = tiny_cfg(
        tmp_path / "run",
        "budget.max_steps=2",
        "eval.every_steps=2",
        "checkpoint.every_steps=2",
        "trl.report_to=[tensorboard]",
        "trl.log_completions=true",  # TRL logs all n completions of a step; the hook then keeps m
    )
    run_dir = train(cfg)
    events = sorted(run_dir.rglob("events.out.tfevents.*"))
    assert events, f"no TensorBoard event file under {run_dir}"
    acc = EventAccumulator(str(events[0].parent))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {"train/loss", "train/reward", "train/kept_reward"} <= tags, tags
    assert [e.step for e in acc.Scalars("train/kept_reward")] == [1, 2]
    # the evaluations (what every figure plots) reach the backend too, at their steps, as in eval.jsonl
    from pods_repro.runlog import read_jsonl

    evals = [row for row in read_jsonl(run_dir / "eval.jsonl") if row["dataset"] == "arith"]
    assert [(e.step, e.value) for e in acc.Scalars("eval/arith/accuracy")] == [
        (row["step"], pytest.approx(row["accuracy"])) for row in evals
    ]
    assert [row["step"] for row in evals] == [0, 2]
    # reporting an evaluation from on_step_end goes through the callback handler's on_log, which clears
    # control.should_log: the step's own log (its metrics.jsonl row, the step count) must survive it
    assert [row["step"] for row in read_jsonl(run_dir / "metrics.jsonl")] == [1, 2]
    assert json.loads((run_dir / "summary.json").read_text())["steps"] == 2
    assert [e.step for e in acc.Scalars("train/loss")] == [1, 2]
    assert {"eval/arith/format_accuracy", "eval/arith/both_accuracy", "eval/arith/completion_len_mean"} <= tags
    assert {"train/kept_reward_std", "train/kept_frac_reward_zero_std", "train/kept_completion_length"} <= tags
    card = (run_dir / "checkpoints" / "README.md").read_text()
    assert "2504.13818" in card
    assert "@article{xu2025pods" in card
    assert "[None]" not in card
    assert cfg.policy.model in card
    assert "GRPO-PODS" in card
