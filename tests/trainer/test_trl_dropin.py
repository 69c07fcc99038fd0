"""PODSGRPOTrainer as a drop-in for TRL users: epochs, TRL-style vs same-prompt GA,
PODSConfig, and the model card.

Each trainer here is built from a user's own ``GRPOConfig``/``PODSConfig`` (not from a pods config) on
the cached tiny test policy, with a cheap reward that records which prompts each optimizer step saw.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
import torch
from conftest import QUIET_CPU_ARGS, build_user_trainer

from pods_repro.trainer import EpochRepeatSampler, PODSConfig, PODSGRPOTrainer, records_to_dataset

N_PROMPTS = 8


def _user_args(tmp_path, cls=None, **kw):
    from trl import GRPOConfig

    base = dict(
        output_dir=str(tmp_path / "out"),
        num_generations=4,
        per_device_train_batch_size=4,
        gradient_accumulation_steps=2,
        num_train_epochs=1,
        max_steps=-1,  # epoch-based, TRL's default style
        max_completion_length=8,
        learning_rate=1e-4,
        **QUIET_CPU_ARGS,
        seed=0,
    )
    base.update(kw)
    return (cls or GRPOConfig)(**base)


def _train(tiny_policy_dir, args, **pods_kw):
    seen: dict[int, list[str]] = defaultdict(list)  # optimizer step -> prompt of every generated row
    holder = {}

    def reward_len(prompts, completions, **_):
        seen[holder["trainer"].state.global_step].extend(prompts)
        return [float(len(c) % 3) for c in completions]

    trainer, records = build_user_trainer(tiny_policy_dir, args, reward_len, records=N_PROMPTS, **pods_kw)
    holder["trainer"] = trainer
    trainer.train()
    return trainer, seen, [r["prompt"] for r in records]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_epochs_and_trl_style_ga_vs_same_prompt_ga(tiny_policy_dir, tmp_path):
    # TRL's meaning of GA: one generation round per optimizer step, 4 x 2 = 8 rows = 2 different prompts
    # (one group of n=4 each), split into 2 micro-batches; one epoch of 8 prompts = 4 steps; two epochs,
    # each in its own order (HF's set_epoch reaches the sampler).
    trainer, seen, prompts = _train(tiny_policy_dir, _user_args(tmp_path / "trl", num_train_epochs=2), pods_m=2)
    steps = N_PROMPTS // 2
    assert trainer.state.global_step == 2 * steps
    assert sorted(seen) == list(range(2 * steps))
    for step, rows in seen.items():
        assert len(rows) == 8, (step, rows)
        assert len(set(rows)) == 2, (step, rows)
        assert all(rows.count(p) == 4 for p in set(rows))  # one group of n per prompt
    epochs = [[p for s in range(e * steps, (e + 1) * steps) for p in dict.fromkeys(seen[s])] for e in (0, 1)]
    assert sorted(epochs[0]) == sorted(epochs[1]) == sorted(prompts)  # each prompt once per epoch
    assert epochs[0] != epochs[1]  # reshuffled per epoch
    assert trainer.pods_last_selection["keep_G_M"].shape == (2, 2)

    # The paper's GRPO-GA (settings e-f), asked for explicitly: GA groups of n of the same prompt, so one
    # distinct prompt per optimizer step (8 rows = 2 groups of 4), 8 steps per epoch.
    args = _user_args(tmp_path / "same", cls=PODSConfig, pods_m=2, pods_ga_same_prompt=True)
    trainer, seen, prompts = _train(tiny_policy_dir, args)
    assert trainer.pods_m == 2
    assert trainer.pods_ga_same_prompt
    assert trainer.state.global_step == N_PROMPTS
    for step, rows in seen.items():
        assert len(rows) == 8, (step, rows)
        assert len(set(rows)) == 1, (step, rows)
    assert sorted(rows[0] for rows in seen.values()) == sorted(prompts)
    assert trainer.pods_last_selection["keep_G_M"].shape == (2, 2)  # two groups of n, m kept from each


def test_pods_config_and_keyword_errors(tiny_policy_dir, tmp_path):
    with pytest.raises(ValueError, match="needs pods_m"):
        _user_args(tmp_path, cls=PODSConfig)
    with pytest.raises(ValueError, match="pods_m"):
        _user_args(tmp_path, cls=PODSConfig, pods_m=5)  # m > n
    with pytest.raises(ValueError, match="pods_rule"):
        _user_args(tmp_path, cls=PODSConfig, pods_m=2, pods_rule="max_varience")
    args = _user_args(tmp_path, cls=PODSConfig, pods_m=2)
    assert args.num_generations == 4
    assert args.pods_rule == "max_variance"
    assert not args.pods_ga_same_prompt

    from pods_repro.models import load_policy

    model, _ = load_policy(str(tiny_policy_dir), dtype="float32", device="cpu")
    records = [{"prompt": f"{i}+1=", "answer": str(i + 1)} for i in range(8)]

    def build(args, **kw):
        zero = lambda completions, **_: [0.0] * len(completions)  # noqa: E731
        return build_user_trainer(tiny_policy_dir, args, zero, records=records, model=model, quiet=False, **kw)[0]

    with pytest.raises(ValueError, match="set it in one place"):
        build(args, pods_m=3)
    tr = build(args, pods_rule="random")  # a PODSConfig field left at its default may be set by keyword
    assert (tr.pods_m, tr.pods_rule, tr.pods_ga_same_prompt) == (2, "random", False)
    with pytest.raises(ValueError, match=r"needs pods_m.*PODSConfig"):
        build(_user_args(tmp_path))
    with pytest.raises(ValueError, match="would be split across processes"):  # GA groups of one prompt: 2 x 4
        build(_user_args(tmp_path, per_device_train_batch_size=2), pods_m=2, pods_ga_same_prompt=True)
    with pytest.raises(ValueError, match="do not split into steps_per_generation=2"):  # 3 kept of 4 rows, GA 2
        build(_user_args(tmp_path, per_device_train_batch_size=2), pods_m=3)
    with pytest.raises(ValueError, match="pods_grad_accum"):  # the legacy spelling must agree with args
        build(_user_args(tmp_path), pods_m=2, pods_grad_accum=3)


def test_pods_config_is_refused_by_a_trainer_that_would_ignore_it(tiny_policy_dir, tmp_path):
    from trl import GRPOTrainer

    from pods_repro.models import load_policy

    model, tok = load_policy(str(tiny_policy_dir), dtype="float32", device="cpu")
    ds = records_to_dataset([{"prompt": f"{i}+1=", "answer": str(i + 1)} for i in range(8)])
    args = _user_args(tmp_path, cls=PODSConfig, pods_m=2)
    args.get_process_log_level()  # an HF-style script setting up its logging first is not a trainer: fine
    kw = dict(model=model, reward_funcs=lambda completions, **_: [0.0] * len(completions), train_dataset=ds,
              processing_class=tok)  # fmt: skip
    # trl.GRPOTrainer would train on all n = 4 rollouts, silently: refused, with the trainer to use instead
    with pytest.raises(TypeError, match=r"PODSConfig\(pods_m=2\) was given to trl.*GRPOTrainer.*PODSGRPOTrainer"):
        GRPOTrainer(args=args, **kw)

    class MyTrainer(PODSGRPOTrainer):  # a user's subclass of the PODS trainer is one
        pass

    assert MyTrainer(args=args, **kw).pods_m == 2
    GRPOTrainer(args=_user_args(tmp_path), **kw)  # TRL's own config still builds TRL's own trainer


def test_epoch_sampler_reshuffles_per_epoch_with_trl_length():
    s = EpochRepeatSampler(list(range(10)), mini_repeat_count=2, batch_size=3, repeat_count=2, shuffle=True, seed=1)
    assert len(s) == (10 // 3) * 3 * 2 * 2 == len(list(s))  # TRL's RepeatSampler length: one epoch
    s.set_epoch(0)
    e0 = list(s)
    s.set_epoch(1)
    e1 = list(s)
    assert e0 != e1
    assert sorted(set(e0)) != []
    assert len(e1) == len(e0)
    s.set_epoch(0)
    assert list(s) == e0  # the order is a function of (seed, epoch): a resumed epoch replays it
    with pytest.raises(ValueError, match="total_rows"):
        EpochRepeatSampler(list(range(4)), 2, 2, 1, True, 0, total_rows=-8)


def test_model_card_cites_pods_and_names_the_base_model(tiny_policy_dir, tmp_path):
    from pods_repro.models import load_policy

    model, tok = load_policy(str(tiny_policy_dir), dtype="float32", device="cpu")
    ds = records_to_dataset([{"prompt": f"{i}+1=", "answer": str(i + 1)} for i in range(8)])
    args = _user_args(tmp_path, cls=PODSConfig, pods_m=2)
    trainer = PODSGRPOTrainer(
        model=model, reward_funcs=lambda completions, **_: [0.0] * len(completions), args=args, train_dataset=ds,
        processing_class=tok, pods_base_model="Qwen/Qwen2.5-3B-Instruct",
    )  # fmt: skip
    trainer.create_model_card(model_name="my-run")
    card = (tmp_path / "out" / "README.md").read_text()
    assert "base_model: Qwen/Qwen2.5-3B-Instruct" in card
    assert "fine-tuned version of [Qwen/Qwen2.5-3B-Instruct]" in card
    assert "[None]" not in card
    assert "2504.13818" in card
    assert "@article{xu2025pods" in card
    assert "Down-Sampling Rollouts" in card
    assert "n = 4" in card
    assert "m = 2" in card
    assert "TRL" in card
    assert "vonwerra2020trl" in card
    # a local model (no hub id) is named by its path, not "None"
    trainer.pods_base_model = None
    trainer.create_model_card()
    card = (tmp_path / "out" / "README.md").read_text()
    assert "[None]" not in card
    assert str(tiny_policy_dir) in card
    assert "base_model:" not in card
    torch.manual_seed(0)


def test_example_script_trains_one_epoch_open_r1_style(tmp_path, capsys, monkeypatch):
    """examples/trl_openr1_style.py (GA 4, num_train_epochs=1, max_steps=-1) on a slice of 8 prompts."""
    import importlib.util
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("trl_openr1_style", repo / "examples" / "trl_openr1_style.py")
    example = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "trl_openr1_style", example)  # its dataclass looks itself up there
    spec.loader.exec_module(example)
    out = tmp_path / "out"
    argv = ["--num_prompts", "8", "--output_dir", str(out), "--max_completion_length", "32", "--disable_tqdm", "true"]
    assert example.main(argv) == 0
    stdout = capsys.readouterr().out
    # 8 prompts / (GA 4 micro-batches x 1 prompt group of n=8 each) = 2 optimizer steps in the epoch
    assert "[example] 2 optimizer steps (1 epoch of 8 prompts, GA 4, n=8, m=4)" in stdout, stdout
    card = (out / "README.md").read_text()
    assert "2504.13818" in card
    assert "tiny:llama-arith" in card


def _user_trainer(tiny_policy_dir, args, reward_funcs, **pods_kw):
    from pods_repro.data import load_task
    from pods_repro.models import load_policy

    model, tok = load_policy(str(tiny_policy_dir), dtype="float32", device="cpu")
    records = load_task("arith", "train", prompt_style="plain", seed=0)[:N_PROMPTS]
    trainer = PODSGRPOTrainer(
        model=model, reward_funcs=reward_funcs, args=args, train_dataset=records_to_dataset(records),
        processing_class=tok, **pods_kw,
    )  # fmt: skip
    trainer.remove_console_callbacks()
    return trainer


def _row_mod3(completions, **_):
    return [float(i % 3) for i in range(len(completions))]


@pytest.mark.parametrize("scale", ["group", "batch", "none"])
def test_scale_rewards_scales_the_kept_advantages_as_trl(tiny_policy_dir, tmp_path, scale):
    # 2 prompt groups of n=8 per step, m=4 kept from each; TRL's scale_rewards on the kept rewards.
    args = _user_args(
        tmp_path, num_generations=8, per_device_train_batch_size=16, gradient_accumulation_steps=1, max_steps=1,
        scale_rewards=scale,
    )  # fmt: skip
    trainer = _user_trainer(tiny_policy_dir, args, _row_mod3, pods_m=4)
    trainer.train()
    sel = trainer.pods_last_selection
    kept = sel["rewards_G_N"].gather(1, sel["keep_G_M"])
    centred = kept - kept.mean(1, keepdim=True)
    std = {"group": kept.std(1, keepdim=True), "batch": kept.std(), "none": None}[scale]
    want = centred if std is None else centred / (std + 1e-4)
    assert kept.std(1).ne(kept.std()).any()  # the two groups differ, so the three scales differ
    torch.testing.assert_close(sel["adv_G_M"], want)


def test_misaligned_generation_runs_no_forward_over_discarded_rollouts(tiny_policy_dir, tmp_path):
    # steps_per_generation=2 > GA=1: each generation round feeds two optimizer steps, so TRL needs the
    # old log-probs of the rows the second step trains on; the hook computes them on the kept rows only.
    args = _user_args(
        tmp_path, num_generations=8, per_device_train_batch_size=8, gradient_accumulation_steps=1,
        steps_per_generation=2, max_steps=2,
    )  # fmt: skip
    trainer = _user_trainer(tiny_policy_dir, args, _row_mod3, pods_m=4)
    forwards, losses = [], []
    logps, compute_loss = trainer._get_per_token_logps_and_entropies, trainer._compute_loss

    def spy_logps(model, ids, *a, **k):
        forwards.append((ids.shape[0], torch.is_grad_enabled()))
        return logps(model, ids, *a, **k)

    def spy_loss(model, inputs):
        losses.append((inputs["completion_ids"].shape[0], inputs.get("old_per_token_logps") is not None))
        return compute_loss(model, inputs)

    trainer._get_per_token_logps_and_entropies, trainer._compute_loss = spy_logps, spy_loss
    trainer.train()
    assert trainer.state.global_step == 2
    # one round: 2 groups of n=8 generated (16 rows), 2 x 4 = 8 kept; the old log-probs over those 8 only
    assert [f for f in forwards if not f[1]] == [(8, False)], forwards
    assert losses == [(4, True), (4, True)], losses


def test_keyword_route_gets_the_pods_config_checks(tiny_policy_dir, tmp_path):
    args = _user_args(tmp_path, max_steps=1)  # a plain GRPOConfig, n = 4
    for kw, match in (
        ({"pods_m": 1}, "zero advantage"),
        ({"pods_m": 2, "pods_rule": "all"}, "pods_rule"),
        ({"pods_m": 4, "pods_rule": "random"}, "pods_rule"),
    ):
        with pytest.raises(ValueError, match=match):
            _user_trainer(tiny_policy_dir, args, _row_mod3, **kw)


def test_none_from_a_reward_function_counts_as_nothing_as_in_trl(tiny_policy_dir, tmp_path):
    def r_even(completions, **_):  # applies to even rows only (TRL's multi-task convention)
        return [1.0 if i % 2 == 0 else None for i in range(len(completions))]

    def r_odd(completions, **_):
        return [None if i % 2 == 0 else float(i % 3) for i in range(len(completions))]

    args = _user_args(tmp_path, num_generations=4, gradient_accumulation_steps=1, max_steps=1)
    trainer = _user_trainer(tiny_policy_dir, args, [r_even, r_odd], pods_m=2)
    trainer.train()
    assert trainer.pods_last_selection["rewards_G_N"].tolist() == [[1.0, 1.0, 1.0, 0.0]]

    from pods.trainer import NonFiniteRewardError

    def r_none_at_2(completions, **_):
        return [None if i == 2 else 0.5 for i in range(len(completions))]

    trainer = _user_trainer(tiny_policy_dir, args, [r_none_at_2, r_none_at_2], pods_m=2)
    with pytest.raises(NonFiniteRewardError, match="no reward function scored rollout 2"):
        trainer.train()
    trainer = _user_trainer(tiny_policy_dir, args, [r_even, r_odd], pods_m=2, pods_strict_rewards=True)
    with pytest.raises(NonFiniteRewardError, match=r"'r_odd' returned nan .* rollout 0"):
        trainer.train()
