"""pods_repro.fastgen: the lean sampler gives the tokens transformers' generate gives."""

from __future__ import annotations

import pytest
import torch
from conftest import strip_timing

from pods_repro import fastgen
from pods_repro.run import train
from pods_repro.runlog import read_jsonl

PAD, BOS, EOS, VOCAB = 0, 1, 2, 40


def _model(arch: str, seed: int = 0):
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    common = dict(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=128,
        tie_word_embeddings=True,
        pad_token_id=PAD,
        bos_token_id=BOS,
        eos_token_id=EOS,
    )
    torch.manual_seed(seed)
    if arch == "llama":
        model = LlamaForCausalLM(LlamaConfig(**common, num_key_value_heads=4))
    else:  # q/k/v biases and grouped-query attention
        model = Qwen2ForCausalLM(Qwen2Config(**common, num_key_value_heads=2, use_sliding_window=False))
    with torch.no_grad():  # make EOS likely enough that rows finish at different steps
        model.lm_head.weight[EOS] *= 0.0
        model.model.norm.weight.mul_(3.0)
    return model


def _gen_cfg(max_new: int = 24, **kw):
    from transformers import GenerationConfig

    base = dict(
        max_new_tokens=max_new,
        do_sample=True,
        temperature=0.9,
        top_p=1.0,
        top_k=0,
        pad_token_id=PAD,
        eos_token_id=[EOS],
        bos_token_id=BOS,
    )
    return GenerationConfig(**{**base, **kw})


def _prompts(rows: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded prompts of different lengths (as TRL and HFGenerator build them)."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(2, 9, (rows,), generator=g).tolist()
    width = max(lengths)
    ids = torch.full((rows, width), PAD, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, n in enumerate(lengths):
        ids[i, width - n :] = torch.cat([torch.tensor([BOS]), torch.randint(3, VOCAB, (n - 1,), generator=g)])
        mask[i, width - n :] = 1
    return ids, mask


def _completions(out: torch.Tensor, width: int) -> list[list[int]]:
    rows = []
    for row in out[:, width:].tolist():
        rows.append(row[: row.index(EOS) + 1] if EOS in row else row)
    return rows


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_same_tokens_as_generate(arch):
    model = _model(arch).eval()
    ids, mask = _prompts(12)
    cfg = _gen_cfg()
    torch.manual_seed(7)
    ref = model.generate(input_ids=ids, attention_mask=mask, generation_config=cfg)
    torch.manual_seed(7)
    got = fastgen.sample(model, ids, mask, cfg)
    assert got.shape == ref.shape  # same stopping step
    assert torch.equal(got, ref)
    lengths = {len(c) for c in _completions(ref, ids.shape[1])}
    assert len(lengths) > 2, "rows should finish at different steps (the compaction path)"


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_group_seeds_batch_equals_each_group_alone(arch):
    """The trainer's seeded path: one batched call = torch.manual_seed(seed); generate(group), per group."""
    model = _model(arch, seed=1).train()  # TRL generates with the policy in training mode
    ids, mask = _prompts(4, seed=3)
    groups, rows = 4, 5
    seeds = [101, 202, 303, 404]
    cfg = _gen_cfg(temperature=1.0)
    ref = []
    for g in range(groups):
        gi, gm = ids[g : g + 1].repeat(rows, 1), mask[g : g + 1].repeat(rows, 1)
        keep = int(gm.sum(0).gt(0).long().argmax())  # drop the columns of the group's own padding
        gi, gm = gi[:, keep:], gm[:, keep:]
        torch.manual_seed(seeds[g])
        ref += _completions(model.generate(input_ids=gi, attention_mask=gm, generation_config=cfg), gi.shape[1])
    batch_ids = ids.repeat_interleave(rows, 0)
    batch_mask = mask.repeat_interleave(rows, 0)
    got = _completions(fastgen.sample(model, batch_ids, batch_mask, cfg, group_seeds=seeds), ids.shape[1])
    assert got == ref
    # and the global RNG is untouched by the seeded path
    state = torch.get_rng_state()
    fastgen.sample(model, batch_ids, batch_mask, cfg, group_seeds=seeds)
    assert torch.equal(state, torch.get_rng_state())


def test_logits_match_the_model_forward():
    """The last-position logits of the prefill equal the model's own forward (left padding included)."""
    model = _model("qwen2").eval()
    ids, mask = _prompts(6, seed=5)
    cfg = _gen_cfg(max_new=1)
    with torch.no_grad():
        ref = model(input_ids=ids, attention_mask=mask).logits[:, -1].float()
    probs = torch.softmax(ref / cfg.temperature, -1)
    torch.manual_seed(0)
    want = torch.multinomial(probs, 1).squeeze(1)
    torch.manual_seed(0)
    got = fastgen.sample(model, ids, mask, cfg)[:, -1]
    assert torch.equal(got, want)


def _softmax_inputs(monkeypatch, model, ids, mask, cfg, lean: bool, seeds=None):
    """fastgen.sample's tokens and the logits of every decoding step (the inputs of its sampling softmax);
    ``lean=False`` turns off the inlined layers, the rotary table and the inlined rotation, so that every
    layer runs as the model's own modules (the path before the lean one, and the fallback for other layers)."""
    seen = []
    real = torch.nn.functional.softmax

    class _F:  # fastgen's ``F`` with a recording softmax
        def __getattr__(self, name):
            return getattr(torch.nn.functional, name)

        @staticmethod
        def softmax(x, *a, **k):
            seen.append(x.clone())
            return real(x, *a, **k)

    with monkeypatch.context() as mp:
        mp.setattr(fastgen, "F", _F())
        if not lean:
            mp.setattr(fastgen, "_rope_table", lambda *a, **k: None)
            mp.setattr(fastgen, "_lean_rms", lambda norm: lambda module, x: module(x))
            mp.setattr(fastgen, "_lean_mlp", lambda mlp: lambda module, x: module(x))
        torch.manual_seed(3)
        out = fastgen.sample(model, ids, mask, cfg, group_seeds=seeds)
    return out, seen


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("grouped", [False, True])
def test_the_lean_layers_give_the_modules_logits_bit_for_bit(monkeypatch, arch, grouped):
    """The inlined RMSNorm/MLP, the rotary lookup table and the inlined rotation are the same operations in the
    same order as the model's modules: every decoding step's logits are the same bits, not merely close (the
    tiny tables are reproducible to the bit, so a faster sampler must not move one)."""
    model = _model(arch, seed=2).eval()
    ids, mask = _prompts(8, seed=4)
    cfg = _gen_cfg(max_new=20, temperature=1.0)
    seeds = [11, 12, 13, 14] if grouped else None
    lean_out, lean_logits = _softmax_inputs(monkeypatch, model, ids, mask, cfg, True, seeds)
    plain_out, plain_logits = _softmax_inputs(monkeypatch, model, ids, mask, cfg, False, seeds)
    assert len(lean_logits) == len(plain_logits) > 5
    assert torch.equal(lean_out, plain_out)
    for step, (a, b) in enumerate(zip(lean_logits, plain_logits, strict=True)):
        assert torch.equal(a, b), f"decoding step {step}: logits differ by {(a - b).abs().max().item():.3g}"


def _long_model(arch: str):
    """The test model with EOS made rare, so that rows run past several chunks of the key/value cache."""
    model = _model(arch, seed=4).eval()
    with torch.no_grad():
        model.lm_head.weight[EOS] = model.lm_head.weight[EOS] - 2.0 * model.lm_head.weight[3]
    return model


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_growing_caches_give_the_tokens_of_generate(monkeypatch, arch):
    """Completions that outgrow the first chunk of the key/value caches (which then grow, and are compacted as
    rows finish) are the tokens of transformers' generate under the same seed."""
    model = _long_model(arch)
    ids, mask = _prompts(10, seed=6)
    cfg = _gen_cfg(max_new=100)
    grown = []
    real = fastgen._grown
    monkeypatch.setattr(fastgen, "_grown", lambda *a: grown.append(a[2]) or real(*a))
    torch.manual_seed(5)
    ref = model.generate(input_ids=ids, attention_mask=mask, generation_config=cfg)
    torch.manual_seed(5)
    got = fastgen.sample(model, ids, mask, cfg)
    assert torch.equal(got, ref)
    assert grown, "no completion outgrew the first chunk of the caches"
    assert max(len(c) for c in _completions(ref, ids.shape[1])) > fastgen._CHUNK + 8


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("grouped", [False, True])
def test_chunked_caches_give_the_full_length_caches_logits_bit_for_bit(monkeypatch, arch, grouped):
    """Caches grown 4 positions at a time (many growths) and caches of the full length from the start give the
    same logits at every decoding step, to the bit."""
    model = _long_model(arch)
    ids, mask = _prompts(8, seed=7)
    cfg = _gen_cfg(max_new=60, temperature=1.0)
    seeds = [21, 22, 23, 24] if grouped else None
    with monkeypatch.context() as mp:
        mp.setattr(fastgen, "_CHUNK", 4)
        small_out, small_logits = _softmax_inputs(monkeypatch, model, ids, mask, cfg, True, seeds)
    with monkeypatch.context() as mp:
        mp.setattr(fastgen, "_CHUNK", 10_000)  # one allocation of the full length, as before the caches grew
        full_out, full_logits = _softmax_inputs(monkeypatch, model, ids, mask, cfg, True, seeds)
    assert len(small_logits) == len(full_logits) > 30
    assert torch.equal(small_out, full_out)
    for step, (a, b) in enumerate(zip(small_logits, full_logits, strict=True)):
        assert torch.equal(a, b), f"decoding step {step}: logits differ by {(a - b).abs().max().item():.3g}"


def test_cache_lengths_keep_the_full_lengths_alignment():
    for total in (17, 40, 96, 131):
        for needed in range(1, total + 1):
            cap = fastgen._capacity(needed, total)
            assert needed <= cap <= total
            assert cap - needed < fastgen._CHUNK_ALIGN
            assert (total - cap) % fastgen._CHUNK_ALIGN == 0


def test_sampling_leaves_autograd_usable(tiny_policy_dir):
    """The sampler runs under torch.inference_mode: its tokens, and the model it ran, still train."""
    from pods_repro.models import load_policy

    model, tok = load_policy(str(tiny_policy_dir))
    model.train()
    ids, mask = _prompts(4, seed=8)
    ids = ids.clamp(max=model.config.vocab_size - 1)
    out = fastgen.sample(model, ids, mask, _gen_cfg(max_new=8, eos_token_id=[tok.eos_token_id]), group_seeds=[1, 2])
    assert not out.is_inference()
    loss = model(input_ids=out, labels=out).loss  # the embedding's backward keeps the ids
    loss.backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (dict(top_p=0.9), "top_p"),
        (dict(top_k=50), "top_k"),
        (dict(repetition_penalty=1.1), "repetition_penalty"),
        (dict(do_sample=False, temperature=None, top_p=None, top_k=None), "greedy"),
    ],
)
def test_settings_it_does_not_cover_are_refused(change, reason):
    model = _model("llama")
    assert fastgen.unsupported_reason(model, _gen_cfg()) is None
    why = fastgen.unsupported_reason(model, _gen_cfg(**change))
    assert why
    assert reason in why
    with pytest.raises(ValueError, match="cannot stand in"):
        fastgen.sample(model, *_prompts(2), _gen_cfg(**change))


def test_models_it_does_not_cover_are_refused():
    from peft import LoraConfig, get_peft_model

    model = _model("llama")
    lora = get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj"]))
    assert "LoRA" in fastgen.unsupported_reason(lora)
    model.config.rope_parameters = {**model.config.rope_parameters, "rope_type": "linear", "factor": 2.0}
    assert "rope" in fastgen.unsupported_reason(model)


def test_training_with_fast_decode_is_identical_to_generate(tiny_cfg, tmp_path):
    """GRPO-GA geometry (4 seeded groups per step, one batched fastgen call): the same rewards, selections,
    losses and evaluations as transformers' generate, step by step."""
    run = ("budget.max_steps=2", "eval.every_steps=2", "eval.max_examples=4", "checkpoint.every_steps=10")
    ga = ("rollout.n=4", "rollout.m=4", "optim.grad_accum=4")
    a = train(tiny_cfg(tmp_path / "fast", *run, *ga, "rollout.fast_decode=true"))
    b = train(tiny_cfg(tmp_path / "hf", *run, *ga, "rollout.fast_decode=false"))
    for name in ("metrics.jsonl", "eval.jsonl"):
        ra, rb = read_jsonl(a / name), read_jsonl(b / name)
        assert ra
        assert len(ra) == len(rb)
        strip = [strip_timing(rows) for rows in (ra, rb)]
        assert strip[0] == strip[1], name
