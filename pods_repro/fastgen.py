"""A lean KV-cache sampler for Llama/Qwen2-layout causal LMs: ``model.generate`` without its per-token overhead.

The details: docs/design.md, "Module notes" (`pods_repro/fastgen.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

__all__ = ["sample", "unsupported_reason"]

_ARCHS = {"llama", "qwen2"}
# GenerationConfig fields whose non-default values add a logits processor or a stopping rule this sampler
# does not implement (value considered "off").
_OFF = {
    "top_p": (None, 1.0),
    "top_k": (None, 0),
    "min_p": (None, 0.0),
    "typical_p": (None, 1.0),
    "epsilon_cutoff": (None, 0.0),
    "eta_cutoff": (None, 0.0),
    "repetition_penalty": (None, 1.0),
    "encoder_repetition_penalty": (None, 1.0),
    "no_repeat_ngram_size": (None, 0),
    "bad_words_ids": (None,),
    "suppress_tokens": (None,),
    "begin_suppress_tokens": (None,),
    "forced_bos_token_id": (None,),
    "forced_eos_token_id": (None,),
    "sequence_bias": (None,),
    "min_new_tokens": (None, 0),
    "min_length": (None, 0),
    "exponential_decay_length_penalty": (None,),
    "renormalize_logits": (None, False),
    "guidance_scale": (None, 1.0),
    "watermarking_config": (None,),
    "stop_strings": (None,),
    "max_time": (None,),
    "num_beams": (None, 1),
    "num_return_sequences": (None, 1),
    "assistant_model": (None,),
    "prompt_lookup_num_tokens": (None,),
}


def _model_reason(model: Any) -> str | None:
    cfg = getattr(model, "config", None)
    if cfg is None or getattr(cfg, "model_type", None) not in _ARCHS:
        return f"architecture {getattr(cfg, 'model_type', None)!r} is not one of {sorted(_ARCHS)}"
    if type(model).__name__ not in ("LlamaForCausalLM", "Qwen2ForCausalLM"):
        return f"{type(model).__name__} is not a plain LlamaForCausalLM/Qwen2ForCausalLM (LoRA or another wrapper)"
    if getattr(model, "is_loaded_in_4bit", False) or getattr(model, "is_loaded_in_8bit", False):
        return "quantised weights"
    if getattr(cfg, "mlp_bias", False):
        return "mlp_bias"
    rope = getattr(cfg, "rope_parameters", None) or {}
    if rope.get("rope_type", "default") != "default":
        return f"rope_type {rope.get('rope_type')!r}"
    if getattr(cfg, "use_sliding_window", False):
        return "sliding-window attention"
    if getattr(cfg, "attention_dropout", 0.0):
        return "attention dropout"
    return None


def _config_reason(gen_cfg: Any) -> str | None:
    if not getattr(gen_cfg, "do_sample", False):
        return "greedy decoding (do_sample=False)"
    temperature = getattr(gen_cfg, "temperature", None)
    if temperature is not None and temperature <= 0:
        return f"temperature {temperature}"
    if not getattr(gen_cfg, "max_new_tokens", None):
        return "no max_new_tokens"
    for name, off in _OFF.items():
        value = getattr(gen_cfg, name, None)
        if value not in off and not (isinstance(value, (list, tuple)) and not value):
            return f"{name}={value!r}"
    return None


def unsupported_reason(model: Any, gen_cfg: Any = None) -> str | None:
    """Why :func:`sample` cannot stand in for ``model.generate`` here (None: it can)."""
    return _model_reason(model) or (_config_reason(gen_cfg) if gen_cfg is not None else None)


def _eos_ids(gen_cfg: Any) -> list[int]:
    eos = getattr(gen_cfg, "eos_token_id", None)
    if eos is None:
        return []
    return [int(eos)] if isinstance(eos, int) else [int(e) for e in eos]


def sample(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    gen_cfg: Any,
    group_seeds: list[int] | None = None,
) -> torch.Tensor:
    """``model.generate(input_ids, attention_mask, generation_config=gen_cfg)`` for plain temperature sampling.

    ``input_ids`` is left-padded (``attention_mask`` 0 on padding), as TRL and HFGenerator build it.

    ``group_seeds``: the rows form ``len(group_seeds)`` equal consecutive groups, and group ``g`` draws its
    tokens from its own generator seeded with ``group_seeds[g]``, exactly the draws of
    ``torch.manual_seed(group_seeds[g]); model.generate(<that group alone>)`` (torch.multinomial with one
    sample is ``argmax(p / q)`` with ``q ~ Exp(1)`` drawn over the group's (rows, vocab)), in one batched
    call. Without it, draws come from the global generator as in ``generate``.

    The decoding runs under ``torch.inference_mode`` (no autograd bookkeeping on any operation); the
    returned ids are a copy made outside it, an ordinary tensor that training may use.
    """
    reason = unsupported_reason(model, gen_cfg)
    if reason:
        raise ValueError(f"pods_repro.fastgen.sample cannot stand in for generate: {reason}")
    with torch.inference_mode():
        out = _decode(model, input_ids, attention_mask, gen_cfg, group_seeds)
    return out.clone()


def _decode(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    gen_cfg: Any,
    group_seeds: list[int] | None,
) -> torch.Tensor:
    cfg = model.config
    inner = model.model
    layers = inner.layers
    rows, prompt_len = input_ids.shape
    device = input_ids.device
    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids)
    attention_mask = attention_mask.to(device=device, dtype=torch.bool)
    max_new = int(gen_cfg.max_new_tokens)
    total = prompt_len + max_new
    n_heads = cfg.num_attention_heads
    n_kv = cfg.num_key_value_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // n_heads
    dtype = inner.embed_tokens.weight.dtype
    temperature = float(gen_cfg.temperature) if gen_cfg.temperature is not None else 1.0
    eos = _eos_ids(gen_cfg)
    pad = gen_cfg.pad_token_id if gen_cfg.pad_token_id is not None else (eos[0] if eos else 0)
    eos_t = torch.tensor(eos, device=device, dtype=torch.long) if eos else None
    gens, group_rows = _seeded_generators(group_seeds, rows, device)

    # The key/value caches start at the prompt plus one chunk of positions and grow by a chunk when decoding
    # reaches their end (most completions stop long before max_new_tokens); every slot up to the current
    # position is written before it is read, so they are not zero-filled. Their length stays congruent to
    # ``total`` modulo _CHUNK_ALIGN, so that every cached row starts at the same byte alignment as in a cache
    # of the full length (a matmul kernel may take another path on another alignment).
    cap = _capacity(prompt_len + _CHUNK, total)
    k_cache = [torch.empty(rows, n_kv, cap, head_dim, device=device, dtype=dtype) for _ in layers]
    v_cache = [torch.empty(rows, n_kv, cap, head_dim, device=device, dtype=dtype) for _ in layers]
    key_ok, pos, next_pos = _keys_and_positions(attention_mask, total)
    rope_table = _rope_table(model, inner, int(next_pos.max()) + max_new, device, dtype)
    forward = _forward_fn(model, n_heads, n_kv, head_dim, dtype, rope_table, k_cache, v_cache)

    logits = forward(input_ids, pos, 0, _prefill_blocked(key_ok, prompt_len))  # prefill

    out = torch.empty((rows, max_new), dtype=torch.long, device=device)  # column t is written at step t
    unfinished = torch.ones(rows, dtype=torch.bool, device=device)
    # Finished rows leave the batch (their caches are compacted away) but keep a placeholder distribution in
    # the full-size draw: torch.multinomial with one sample draws exponential noise over the whole
    # (rows, vocab) tensor whatever the values, so the active rows get the tokens generate() would give them.
    active = torch.arange(rows, device=device)
    # The active rows' positions and blocked keys, indexed again only when the batch is compacted.
    act_pos, act_blocked = next_pos, ~key_ok[:, None, None, None, :]
    compacted = False
    vocab = logits.shape[-1]
    placeholder = torch.zeros(rows, vocab, device=device)
    placeholder[:, 0] = 1.0
    steps = 0
    for t in range(max_new):
        tok = _sample(logits, temperature, placeholder, active, gens, group_rows)
        tok = torch.where(unfinished, tok, torch.full_like(tok, pad))
        out[:, t] = tok
        steps = t + 1
        if eos_t is not None:
            unfinished &= ~torch.isin(tok, eos_t)
        if steps == max_new or not bool(unfinished.any()):
            break
        keep = unfinished[active]
        if int(keep.sum()) <= (3 * active.numel()) // 4:  # compact: drop the finished rows from the batch
            _compact(k_cache, v_cache, keep)
            active = active[keep]
            act_pos, act_blocked = act_pos[keep], act_blocked[keep]
            compacted = True
        cur = prompt_len + t
        if cur >= cap:  # the next position is past the caches' end: grow them by a chunk
            cap = _capacity(cur + _CHUNK, total)
            for i in range(len(layers)):
                k_cache[i], v_cache[i] = _grown(k_cache[i], cur, cap), _grown(v_cache[i], cur, cap)
        ids = tok[active] if compacted else tok
        logits = forward(ids[:, None], act_pos + t, cur, act_blocked[..., : cur + 1])
    return torch.cat([input_ids, out[:, :steps]], dim=1)


def _keys_and_positions(attention_mask: torch.Tensor, total: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(key_ok, pos, next_pos)`` of a left-padded batch (``attention_mask`` bool, ``(rows, prompt_len)``)."""
    rows, prompt_len = attention_mask.shape
    device = attention_mask.device
    # Keys a query may attend to: real tokens (prompt, then every generated position), plus itself, so that a
    # padding query row is never fully masked (a NaN there would reach the cache through the next layer).
    key_ok = torch.empty(rows, total, device=device, dtype=torch.bool)
    key_ok[:, :prompt_len] = attention_mask
    key_ok[:, prompt_len:] = True
    # Positions as transformers derives them from the mask (cumsum - 1; padding gets 1).
    pos = attention_mask.long().cumsum(-1) - 1
    pos = pos.masked_fill(~attention_mask, 1)
    next_pos = pos[:, -1:] + 1  # (rows, 1)
    return key_ok, pos, next_pos


def _prefill_blocked(key_ok: torch.Tensor, prompt_len: int) -> torch.Tensor:
    """The prefill's blocked keys, ``(rows, 1, 1, prompt_len, prompt_len)``."""
    device = key_ok.device
    # Prefill: causal over the prompt, padding keys blocked, the diagonal always allowed.
    idx = torch.arange(prompt_len, device=device)
    allowed = (idx[None, :] <= idx[:, None])[None] & key_ok[:, None, :prompt_len]
    allowed |= torch.eye(prompt_len, dtype=torch.bool, device=device)[None]
    return ~allowed[:, None, None]


def _seeded_generators(
    group_seeds: list[int] | None, rows: int, device: torch.device
) -> tuple[list[torch.Generator], int]:
    """One generator per seeded group of rows (none without ``group_seeds``), and the rows per group."""
    gens: list[torch.Generator] = []
    group_rows = 0
    if group_seeds is not None:
        if not group_seeds or rows % len(group_seeds):
            raise ValueError(f"{rows} rows do not split into {len(group_seeds)} equal seeded groups")
        for seed in group_seeds:
            gen = torch.Generator(device=device)
            gen.manual_seed(int(seed))
            gens.append(gen)
        group_rows = rows // len(group_seeds)
    return gens, group_rows


def _sample(
    logits: torch.Tensor,
    temperature: float,
    placeholder: torch.Tensor,
    active: torch.Tensor,
    gens: list[torch.Generator],
    group_rows: int,
) -> torch.Tensor:
    """One decoding step's draw, a token per row of the full batch (a finished row's is its placeholder's).

    With seeded groups, each group's rows draw their exponential noise from the group's generator (the
    operations of ``generate``'s sampling under ``torch.manual_seed``); otherwise ``torch.multinomial``.
    """
    rows, vocab = placeholder.shape
    scores = logits / temperature if temperature != 1.0 else logits
    probs = F.softmax(scores, dim=-1)
    if probs.shape[0] != rows:
        full = placeholder.clone()
        full[active] = probs
        probs = full
    if gens:
        device = placeholder.device
        noise = torch.cat([torch.empty(group_rows, vocab, device=device).exponential_(1, generator=g) for g in gens])
        return (probs / noise).argmax(dim=-1)
    return torch.multinomial(probs, num_samples=1).squeeze(1)


def _compact(k_cache: list[torch.Tensor], v_cache: list[torch.Tensor], keep: torch.Tensor) -> None:
    """Drop the finished rows from every layer's key/value cache (in the lists, in place)."""
    for i in range(len(k_cache)):
        k_cache[i] = k_cache[i][keep]
        v_cache[i] = v_cache[i][keep]


def _layer_tensors(layers: Any) -> list[tuple]:
    """Each layer's norms, MLP and (weight, bias) of its four projections, looked up once, not at every token
    (module attribute access is slow in Python)."""
    return [
        (
            layer.input_layernorm,
            layer.post_attention_layernorm,
            layer.mlp,
            *(
                (proj.weight, proj.bias)
                for proj in (
                    layer.self_attn.q_proj,
                    layer.self_attn.k_proj,
                    layer.self_attn.v_proj,
                    layer.self_attn.o_proj,
                )
            ),
        )
        for layer in layers
    ]


def _forward_fn(
    model: Any,
    n_heads: int,
    n_kv: int,
    head_dim: int,
    dtype: torch.dtype,
    rope_table: tuple[torch.Tensor, torch.Tensor] | None,
    k_cache: list[torch.Tensor],
    v_cache: list[torch.Tensor],
) -> Callable[[torch.Tensor, torch.Tensor, int, torch.Tensor], torch.Tensor]:
    """The decoder's forward over new positions, writing their keys and values into the caches (the lists,
    whose tensors the decoding loop replaces when it compacts or grows them) and returning the last
    position's float32 logits."""
    inner = model.model
    group = n_heads // n_kv
    scaling = head_dim**-0.5
    apply_rope = _rope_fn(model)
    rms = _lean_rms(inner.norm)
    mlp = _lean_mlp(inner.layers[0].mlp)
    per_layer = _layer_tensors(inner.layers)

    def forward(ids: torch.Tensor, positions: torch.Tensor, start: int, blocked: torch.Tensor) -> torch.Tensor:
        # The model's own operations in the model's own order (so the logits are the same bits as before this
        # was trimmed), without the modules' call overhead and the dtype casts that are no-ops in float32.
        batch, length = ids.shape
        h = F.embedding(ids, inner.embed_tokens.weight, inner.embed_tokens.padding_idx)
        if rope_table is None:
            cos, sin = inner.rotary_emb(h, positions)
        else:  # the same values, looked up: (batch, 1, length, head_dim) to broadcast over the heads
            cos, sin = rope_table[0][positions].unsqueeze(1), rope_table[1][positions].unsqueeze(1)
        end = start + length
        for i, (norm1, norm2, layer_mlp, q_proj, k_proj, v_proj, o_proj) in enumerate(per_layer):
            x = rms(norm1, h)
            q = F.linear(x, *q_proj).view(batch, length, n_heads, head_dim).transpose(1, 2)
            k = F.linear(x, *k_proj).view(batch, length, n_kv, head_dim).transpose(1, 2)
            v = F.linear(x, *v_proj).view(batch, length, n_kv, head_dim).transpose(1, 2)
            if rope_table is None:
                q, k = apply_rope(q, k, cos, sin)
            else:  # apply_rotary_pos_emb's operations, cos and sin already unsqueezed
                q = (q * cos) + (_rotate_half(q) * sin)
                k = (k * cos) + (_rotate_half(k) * sin)
            k_cache[i][:, :, start:end] = k
            v_cache[i][:, :, start:end] = v
            # Attention by hand, queries grouped per key/value head (on CPU, SDPA with a mask and grouped
            # heads takes a slower path for these shapes).
            qg = q.reshape(batch, n_kv, group * length, head_dim)
            scores = torch.matmul(qg, k_cache[i][:, :, :end].transpose(2, 3)) * scaling
            scores = scores.view(batch, n_kv, group, length, end).masked_fill(blocked, float("-inf"))
            probs = torch.softmax(scores, dim=-1, dtype=torch.float32)
            if probs.dtype != dtype:
                probs = probs.to(dtype)
            o = torch.matmul(probs.view(batch, n_kv, group * length, end), v_cache[i][:, :, :end])
            o = o.view(batch, n_heads, length, head_dim).transpose(1, 2).reshape(batch, length, n_heads * head_dim)
            h = h + F.linear(o, *o_proj)
            h = h + mlp(layer_mlp, rms(norm2, h))
        h = rms(inner.norm, h[:, -1:, :])
        logits = F.linear(h, model.lm_head.weight, model.lm_head.bias)[:, -1, :]
        return logits if logits.dtype == torch.float32 else logits.float()

    return forward


# Positions added to the key/value caches at a time, and the residue their length keeps modulo _CHUNK_ALIGN:
# two lengths 16 positions apart move every cached row by a multiple of 64 bytes (the CPU allocator's
# alignment), so each row of a grown cache sits at the alignment it had in a cache of the full length.
_CHUNK = 32
_CHUNK_ALIGN = 16


def _capacity(needed: int, total: int) -> int:
    """The least length >= ``needed`` (at most ``total``) congruent to ``total`` modulo _CHUNK_ALIGN."""
    return total - _CHUNK_ALIGN * max(0, (total - needed) // _CHUNK_ALIGN)


def _grown(cache: torch.Tensor, filled: int, cap: int) -> torch.Tensor:
    """``cache`` (rows, heads, length, head_dim) copied into a longer one of length ``cap``, positions
    ``0 .. filled - 1`` kept (the rest is written before it is read)."""
    rows, heads, _, head_dim = cache.shape
    out = torch.empty(rows, heads, cap, head_dim, device=cache.device, dtype=cache.dtype)
    out[:, :, :filled] = cache[:, :, :filled]
    return out


def _rope_fn(model: Any):
    module = __import__(type(model).__module__, fromlist=["apply_rotary_pos_emb"])
    return module.apply_rotary_pos_emb


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _rope_table(model: Any, inner: Any, positions: int, device: Any, dtype: Any):
    """``(cos, sin)`` of the model's rotary embedding for positions ``0 .. positions - 1``, each
    ``(positions, head_dim)``: the rotary module computes each position's values elementwise, so looking them
    up gives the values it would give per step (tests/trainer/test_fastgen.py checks the logits bit for bit). None
    (compute per step and rotate with the model's own ``apply_rotary_pos_emb``) where the rotary module is not
    the plain Llama/Qwen2 class or the model's module has no ``rotate_half`` (another rotation)."""
    rotary = inner.rotary_emb
    if type(rotary).__name__ not in ("LlamaRotaryEmbedding", "Qwen2RotaryEmbedding"):
        return None
    module = __import__(type(model).__module__, fromlist=["apply_rotary_pos_emb", "rotate_half"])
    if getattr(module, "rotate_half", None) is None:
        return None
    probe = torch.zeros(1, 1, device=device, dtype=dtype)
    cos, sin = rotary(probe, torch.arange(positions, device=device)[None])
    return cos[0], sin[0]


def _lean_rms(norm: Any):
    """``norm(x)`` for the model's RMSNorm class, its operations inlined (the same ones, in the same order; the
    casts to float32 and back are skipped when the input already is float32); any other norm is called."""
    if type(norm).__name__ not in ("LlamaRMSNorm", "Qwen2RMSNorm"):
        return lambda module, x: module(x)

    def rms(module: Any, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.float32:
            return module(x)
        variance = x.pow(2).mean(-1, keepdim=True)
        return module.weight * (x * torch.rsqrt(variance + module.variance_epsilon))

    return rms


def _lean_mlp(mlp: Any):
    """``mlp(x)`` for the model's gated SiLU MLP, its three projections called as functions; any other MLP
    (another activation, a subclass) is called as a module."""
    if type(mlp).__name__ not in ("LlamaMLP", "Qwen2MLP") or type(mlp.act_fn).__name__ != "SiLUActivation":
        return lambda module, x: module(x)

    def run(module: Any, x: torch.Tensor) -> torch.Tensor:
        gate = F.linear(x, module.gate_proj.weight, module.gate_proj.bias)
        up = F.linear(x, module.up_proj.weight, module.up_proj.bias)
        return F.linear(F.silu(gate) * up, module.down_proj.weight, module.down_proj.bias)

    return run
