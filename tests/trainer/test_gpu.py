"""The CUDA path, run for real. Every test here is marked ``gpu``: the default selection
(``-m "not slow and not gpu"``) leaves them out, and ``pytest -m gpu`` on a machine without CUDA skips
them. On a GPU machine: ``pytest -m gpu tests/trainer/test_gpu.py tests/config/test_fidelity.py``.

What they check, on the project's own test policy (conftest ``tiny_policy_dir``):
- a bfloat16 policy update on CUDA with full parameters and with LoRA (only the adapters move), its
  per-token log-probs close to float32's;
- gradient checkpointing: the same gradients, a lower peak of CUDA memory;
- ``pods bench memory`` on CUDA: peaks from ``max_memory_allocated``, PODS's update at m rows a
  quarter of GRPO's at n = 4m, equal to GRPO at m;
- ``pods bench asymmetry`` on CUDA (HF generate + update);
- pods_repro.fastgen gives transformers' ``generate`` tokens on CUDA too;
- ``pods train`` end to end on CUDA in bfloat16, with TRL's generate (HF path) and with pods_repro.fastgen;
- one process under ``accelerate launch`` with DeepSpeed ZeRO-2 (experiments/accelerate/zero2_1gpu.yaml):
  the run trains through a ``DeepSpeedEngine`` and records the launch in config.json.
The 4-bit base (bitsandbytes) is tests/config/test_fidelity.py::test_load_in_4bit_trains_lora_on_a_4bit_base.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import one_per_key

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run on a GPU machine: pytest -m gpu)"),
]

REPO = Path(__file__).resolve().parents[2]
ZERO2_1GPU = "experiments/accelerate/zero2_1gpu.yaml"


def _pods_batch(vocab: int, n: int = 16, m: int = 4, prompt_len: int = 12, completion_len: int = 24, seed: int = 0):
    """A PODS update batch on CUDA: n rollouts with graded rewards, the max-variance m kept (the memory
    benchmark's PODS arm)."""
    from pods_repro.bench.bench_memory import arm_plan

    g = torch.Generator().manual_seed(seed)
    _, _, adv_M, keep_M = arm_plan("pods", n, m, g)
    prompt_T = torch.randint(4, vocab, (prompt_len,), generator=g)
    completions_M_T = torch.randint(4, vocab, (n, completion_len), generator=g)[keep_M]
    mask_M_T = torch.ones_like(completions_M_T)
    return [t.cuda() for t in (prompt_T, completions_M_T, mask_M_T, adv_M)]


def _snapshot(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: p.detach().clone() for k, p in model.named_parameters()}


def test_bf16_update_full_parameters(tiny_policy_dir):
    from pods_repro.bench.bench_memory import completion_logps, load_model, policy_update

    model, _ = load_model(str(tiny_policy_dir), dtype="bfloat16", device="cuda")
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    assert {p.device.type for p in model.parameters()} == {"cuda"}
    vocab = model.get_output_embeddings().weight.shape[0]
    prompt_T, comp_M_T, mask_M_T, adv_M = _pods_batch(vocab)

    ref, _ = load_model(str(tiny_policy_dir), dtype="float32", device="cuda")
    with torch.no_grad():
        lp_bf16 = completion_logps(model, prompt_T, comp_M_T)
        lp_fp32 = completion_logps(ref, prompt_T, comp_M_T)
    assert lp_bf16.dtype == torch.float32  # the log-softmax runs in float32 on bf16 logits
    assert (lp_bf16 - lp_fp32).abs().mean() < 0.05, "bf16 log-probs far from float32's"

    before = _snapshot(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)  # large enough to move bf16 weights
    loss = policy_update(model, opt, prompt_T, comp_M_T, mask_M_T, adv_M)
    assert torch.isfinite(torch.tensor(loss))
    # Pure bf16 weights (as the paper's runs load them): an Adam step of 1e-3 moves every matrix, but
    # not a norm weight near 1.0, where bf16's spacing is 2**-7.
    moved = {k for k, p in model.named_parameters() if not torch.equal(p, before[k])}
    matrices = {k for k, p in model.named_parameters() if p.ndim == 2}
    assert matrices <= moved, f"matrices that did not move: {matrices - moved}"
    assert all(p.grad is None for p in model.parameters())


def test_bf16_update_with_lora_moves_only_the_adapters(tiny_policy_dir):
    from pods_repro.bench.bench_memory import load_model, policy_update

    model, _ = load_model(str(tiny_policy_dir), lora_rank=8, dtype="bfloat16", device="cuda")
    trainable = {k for k, p in model.named_parameters() if p.requires_grad}
    assert trainable
    assert all("lora_" in k for k in trainable)
    vocab = model.get_output_embeddings().weight.shape[0]
    before = _snapshot(model)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    for _ in range(2):  # lora_B starts at zero: the second step moves lora_A too
        policy_update(model, opt, *_pods_batch(vocab))
    moved = {k for k, p in model.named_parameters() if not torch.equal(p, before[k])}
    assert moved == trainable
    assert any("lora_B" in k for k in moved)


def test_gradient_checkpointing_same_gradients_less_memory(tiny_policy_dir):
    from pods_repro.bench.bench_memory import accumulate_grads, load_model

    peaks, grads = {}, {}
    for ckpt in (False, True):
        torch.manual_seed(0)
        model, _ = load_model(str(tiny_policy_dir), dtype="float32", device="cuda", grad_ckpt=ckpt)
        vocab = model.get_output_embeddings().weight.shape[0]
        prompt_T, comp_M_T, mask_M_T, adv_M = _pods_batch(vocab, n=128, m=64, prompt_len=32, completion_len=224)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        accumulate_grads(model, prompt_T, comp_M_T, mask_M_T, adv_M)
        torch.cuda.synchronize()
        peaks[ckpt] = (torch.cuda.max_memory_allocated() - base) / 2**20
        grads[ckpt] = {k: p.grad.detach().clone() for k, p in model.named_parameters() if p.grad is not None}
        del model
        torch.cuda.empty_cache()
    assert grads[True].keys() == grads[False].keys()
    assert grads[True]
    for k in grads[False]:
        torch.testing.assert_close(grads[True][k], grads[False][k], rtol=1e-4, atol=1e-6, msg=k)
    assert peaks[True] < 0.8 * peaks[False], peaks


def test_bench_memory_reads_cuda_peaks(tiny_policy_dir, tmp_path):
    from pods_repro.bench import bench_memory

    out = tmp_path / "memory.csv"
    args = ["--model", str(tiny_policy_dir), "--device", "cuda", "--dtype", "float32", "--n", "64", "--m", "16"]
    args += ["--prompt-len", "32", "--completion-len", "128", "--arms", "grpo_n", "grpo_ga", "pods", "grpo_m"]
    bench_memory.main([*args, "--out", str(out)])
    rows = {r["arm"]: r for r in csv.DictReader(out.open())}
    assert {r["method"] for r in rows.values()} == {"cuda_max_memory_allocated"}
    assert {r["device"] for r in rows.values()} == {"cuda"}
    peak = {arm: float(r["peak_mb"]) for arm, r in rows.items()}
    assert all(v > 0 for v in peak.values()), peak
    assert 3.0 < peak["grpo_n"] / peak["pods"] < 4.5, peak  # activations and logits grow with the rows
    assert peak["pods"] == pytest.approx(peak["grpo_m"], rel=0.05), peak
    assert peak["pods"] <= peak["grpo_ga"] < peak["grpo_n"], peak


def test_bench_asymmetry_on_cuda(tiny_policy_dir, tmp_path):
    from pods_repro.bench import bench_asymmetry

    out = tmp_path / "asym.csv"
    args = ["--model", str(tiny_policy_dir), "--device", "cuda", "--rollouts", "8", "32"]
    bench_asymmetry.main([*args, "--prompt-len", "8", "--completion-len", "16", "--out", str(out)])
    rows = list(csv.DictReader(out.open()))
    assert [int(r["rollouts"]) for r in rows] == [8, 32]
    for r in rows:
        assert r["device"] == "cuda"
        assert r["dtype"] == "bfloat16"
        assert int(r["gen_tokens"]) == int(r["rollouts"]) * 16
        assert float(r["gen_time_s"]) > 0
        assert float(r["update_time_s"]) > 0


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_fastgen_gives_generate_tokens_on_cuda(arch):
    from test_fastgen import _gen_cfg, _model, _prompts

    from pods_repro import fastgen

    model = _model(arch).cuda().eval()
    ids, mask = (t.cuda() for t in _prompts(12))
    cfg = _gen_cfg()
    torch.manual_seed(7)
    ref = model.generate(input_ids=ids, attention_mask=mask, generation_config=cfg)
    torch.manual_seed(7)
    got = fastgen.sample(model, ids, mask, cfg)
    assert got.shape == ref.shape
    assert torch.equal(got, ref)


@pytest.mark.parametrize("fast_decode", ["false", "true"])
def test_pods_train_end_to_end_on_cuda_bf16(tiny_cfg, tmp_path, fast_decode):
    from pods_repro.run import train
    from pods_repro.runlog import read_jsonl

    cfg = tiny_cfg(
        tmp_path / "run", "hardware.device=cuda", "policy.dtype=bfloat16", f"rollout.fast_decode={fast_decode}"
    )
    run_dir = train(cfg)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 4
    assert summary["stop_reason"] == "max_steps"
    assert summary["peak_mem_mb"] > 0
    meta = json.loads((run_dir / "config.json").read_text())["meta"]
    assert meta["device"] == torch.cuda.get_device_name(0)
    assert meta["distributed"]["mixed_precision"] == "bf16"
    metrics = read_jsonl(run_dir / "metrics.jsonl")
    assert [m["step"] for m in metrics] == [1, 2, 3, 4]
    assert all(m["gen_time_s"] > 0 for m in metrics)
    evals = read_jsonl(run_dir / "eval.jsonl")
    assert [e["step"] for e in evals] == [0, 2, 4]


@pytest.mark.skipif(importlib.util.find_spec("deepspeed") is None, reason="deepspeed is not installed ([gpu] extra)")
def test_deepspeed_zero2_one_process_pods_step(tiny_overrides, tmp_path):
    run_dir = tmp_path / "zero2"
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", ZERO2_1GPU, "--num_processes", "1"]
    cmd += ["-m", "pods_repro", "train", "experiments/tiny_a.yaml"]
    cmd += one_per_key(
        *tiny_overrides,
        f"out_dir={run_dir}",
        *("hardware.device=cuda", "policy.dtype=bfloat16", "budget.max_steps=2", "eval.every_steps=2"),
        *("hardware.num_processes=1", f"hardware.accelerate_config={ZERO2_1GPU}"),
    )
    env = {**os.environ, "MASTER_PORT": "29531"}
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 2
    assert summary["engine"] == "DeepSpeedEngine"
    meta = json.loads((run_dir / "config.json").read_text())["meta"]
    assert meta["distributed"] == {"type": "DEEPSPEED", "deepspeed_zero_stage": 2, "mixed_precision": "bf16"}
    assert meta["packages"]["deepspeed"]
