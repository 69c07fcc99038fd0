"""Which CPU operations give the same bits on this machine as on another? (issue 10, pods_repro.kernels)

Run from the repository root (a few seconds):

    python notebook/scripts/kernel_fingerprint.py [--model DIR] [--native]

Prints one JSON object: for each operation the tiny runs use (matrix products of the tiny models' shapes,
softmax, RMSNorm's pieces, SiLU, attention, a backward pass, an AdamW step, sampling), the first 16 hex
digits of the SHA-256 of its float32 output's bytes, on inputs made by exact integer arithmetic (no
random-number or transcendental kernel makes them). With ``--model``, also the logits and the gradients of
a whole model (e.g. the pinned tiny:llama-arith_warm) on a fixed batch. Run it on two machines under the
same environment variables and compare the objects: the operations whose digits differ are where the
machines' kernels part. The process pins its kernels as the ``pods`` command does (pods_repro.kernels) unless
``--native``; variables already set (``MKL_CBWR``, ``ONEDNN_MAX_CPU_ISA``, ...) are kept, and printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os


def _digest(t) -> str:
    return hashlib.sha256(t.detach().contiguous().float().numpy().tobytes()).hexdigest()[:16]


def _exact(*shape: int, salt: int = 0):
    """Values in [-2, 2) from integer arithmetic only (the same bits on every machine)."""
    import torch

    n = 1
    for s in shape:
        n *= s
    i = torch.arange(n, dtype=torch.int64)
    return (((i * 7919 + salt * 104729) % 1000) - 500).to(torch.float32).div_(250.0).reshape(shape)


def fingerprint(model_dir: str | None = None) -> dict[str, str]:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the tiny runs and builds run; MKL's sums may split by thread count
    try:
        return _fingerprint(model_dir)
    finally:
        torch.set_num_threads(threads)


def _fingerprint(model_dir: str | None) -> dict[str, str]:
    import torch
    import torch.nn.functional as F

    out: dict[str, str] = {}
    a, w = _exact(64, 96, salt=1), _exact(256, 96, salt=2)
    out["mm 64x96 @ 96x256"] = _digest(a @ w.T)
    out["mm 1x96 @ 96x256 (gemv)"] = _digest(a[:1] @ w.T)
    out["linear 64x96 -> 256"] = _digest(F.linear(a, w))
    out["linear 64x256 -> 96"] = _digest(F.linear(_exact(64, 256, salt=3), w.T.contiguous()))
    out["linear 64x96 -> 101 (lm head)"] = _digest(F.linear(a, _exact(101, 96, salt=4)))
    q, k = _exact(4, 64, 24, salt=5), _exact(4, 64, 24, salt=6)
    out["bmm 4x64x24 @ 4x24x64"] = _digest(torch.bmm(q, k.transpose(1, 2)))
    s = _exact(8, 101, salt=7)
    out["softmax"] = _digest(torch.softmax(s, -1))
    out["log_softmax"] = _digest(torch.log_softmax(s, -1))
    out["exp"] = _digest(s.exp())
    out["log"] = _digest((s.abs() + 0.5).log())
    out["rsqrt(mean(x^2))"] = _digest(torch.rsqrt(a.pow(2).mean(-1, keepdim=True) + 1e-6))
    out["silu"] = _digest(F.silu(a))
    out["sum"] = _digest(a.sum(-1))
    qh, kh, vh = (_exact(2, 4, 16, 24, salt=x) for x in (8, 9, 10))
    out["sdpa causal"] = _digest(F.scaled_dot_product_attention(qh, kh, vh, is_causal=True))
    lin1, lin2 = torch.nn.Linear(96, 256, bias=False), torch.nn.Linear(256, 96, bias=False)
    with torch.no_grad():
        lin1.weight.copy_(w / 8)
        lin2.weight.copy_(_exact(96, 256, salt=11) / 16)
    loss = torch.log_softmax(lin2(F.silu(lin1(a))), -1).mean()
    loss.backward()
    out["backward (2-layer MLP) grad 1"] = _digest(lin1.weight.grad)
    out["backward (2-layer MLP) grad 2"] = _digest(lin2.weight.grad)
    opt = torch.optim.AdamW([lin1.weight, lin2.weight], lr=1e-3)
    opt.step()
    out["AdamW step"] = _digest(lin1.weight)
    g = torch.Generator().manual_seed(0)
    out["multinomial"] = _digest(torch.multinomial(torch.softmax(s, -1), 4, generator=g).float())
    out["rand"] = _digest(torch.rand(64, generator=torch.Generator().manual_seed(0)))
    if model_dir:
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
        ids = (torch.arange(4 * 48).reshape(4, 48) * 37) % (model.config.vocab_size - 3) + 3
        logits = model(input_ids=ids).logits
        out["model logits"] = _digest(logits)
        torch.log_softmax(logits, -1).gather(-1, ids[..., None]).mean().backward()
        grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
        out["model grads"] = _digest(grads)
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="a model directory to fingerprint whole (logits, gradients)")
    ap.add_argument("--native", action="store_true", help="leave torch's own kernel choice (no pin)")
    args = ap.parse_args(argv)
    if args.native:
        os.environ["PODS_KERNELS"] = "native"
    from pods_repro.kernels import cpuinfo_field, pin_cpu_kernels

    label = pin_cpu_kernels()
    import torch

    env = {k: os.environ[k] for k in sorted(os.environ) if k.startswith(("ATEN_", "MKL_", "ONEDNN_", "DNNL_"))}
    res = {
        "cpu": cpuinfo_field("model name"),
        "torch": torch.__version__,
        "env": env,
        "ops": fingerprint(args.model),
        "kernels": label,
        "capability": torch.backends.cpu.get_cpu_capability(),
    }
    print(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
