"""Update-memory benchmark: peak memory of ONE policy update for GRPO, GRPO-GA and GRPO-PODS.

The details: docs/design.md, "Module notes" (`pods_repro/bench/bench_memory.py`).
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import math
import resource
import subprocess
import sys
import time
from pathlib import Path

import torch

from pods.grpo import group_advantages, pods_advantages, policy_loss
from pods.selectors import select
from pods_repro.bench import child_env

ARMS = ("grpo_n", "grpo_ga", "pods", "grpo_m")
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
# Discrete reward levels like the paper's correctness + format + tag rewards (App. A.1).
REWARD_LEVELS = torch.tensor([0.0, 0.5, 1.0, 2.0, 2.5, 3.0])
_RESULT_TAG = "BENCH_RESULT "


# ----------------------------------------------------------------------------- model and update


def load_model(spec: str, *, lora_rank: int = 0, dtype: str = "float32", device: str = "cpu", grad_ckpt: bool = False):
    """(model, tokenizer) through ``pods_repro.models.load_policy``; LoRA (alpha = rank, all linear layers,
    as in the paper's Table 2) when ``lora_rank > 0``, full-parameter training otherwise."""
    from pods_repro.models import load_policy

    lora = None
    if lora_rank > 0:
        lora = {"enabled": True, "rank": lora_rank, "alpha": lora_rank, "dropout": 0.0, "targets": LORA_TARGETS}
    model, tok = load_policy(spec, dtype=dtype, device=device, lora=lora)
    if grad_ckpt:
        model.gradient_checkpointing_enable()
        if lora_rank > 0:  # inputs must require grad for checkpointed blocks when the embeddings are frozen
            model.enable_input_require_grads()
    model.train()
    return model, tok


def make_optimizer(model: torch.nn.Module) -> torch.optim.Optimizer:
    """AdamW over the trainable parameters with the paper's betas/weight decay (Table 2, code values)."""
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters; use --lora-rank 0 or a LoRA-capable model")
    return torch.optim.AdamW(params, lr=1e-6, betas=(0.9, 0.99), weight_decay=0.1)


def completion_logps(
    model: torch.nn.Module, prompt_ids_T: torch.Tensor, completion_ids_B_T: torch.Tensor
) -> torch.Tensor:
    """Per-token log-probs (B, T) of the completions after one shared prompt.

    Only the completion positions' logits are materialised (``logits_to_keep``) and the log-softmax is
    evaluated at the sampled token only, as TRL's GRPOTrainer does, so the (B, T, V) logits tensor is
    the one big activation we add on top of the model's own.
    """
    B, T = completion_ids_B_T.shape
    input_ids = torch.cat([prompt_ids_T.unsqueeze(0).expand(B, -1), completion_ids_B_T], dim=1)
    logits_B_T_V = model(input_ids=input_ids, logits_to_keep=T + 1).logits[:, :-1].float()
    tok_logit_B_T = logits_B_T_V.gather(-1, completion_ids_B_T.unsqueeze(-1)).squeeze(-1)
    return tok_logit_B_T - torch.logsumexp(logits_B_T_V, dim=-1)


def accumulate_grads(
    model: torch.nn.Module,
    prompt_ids_T: torch.Tensor,
    completion_ids_B_T: torch.Tensor,
    mask_B_T: torch.Tensor,
    adv_B: torch.Tensor,
    micro_batch: int | None = None,
) -> float:
    """Forward + backward of the loss over B rows in micro-batches of ``micro_batch`` rows.

    The paper's loss is a mean over sequences, so micro-batch losses are weighted by rows/B; the
    accumulated gradient equals the one-batch gradient. Returns the (weighted) loss.
    """
    B = completion_ids_B_T.shape[0]
    mb = B if micro_batch is None else micro_batch
    total = 0.0
    for s in range(0, B, mb):
        rows = slice(s, min(s + mb, B))
        logp_b_T = completion_logps(model, prompt_ids_T, completion_ids_B_T[rows])
        loss, _ = policy_loss(logp_b_T, None, adv_B[rows], mask_B_T[rows], aggregation="sequence")
        loss = loss * (logp_b_T.shape[0] / B)
        loss.backward()
        total += float(loss.detach())
        del logp_b_T, loss  # free this micro-batch's graph before the next forward
    return total


def policy_update(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    prompt_ids_T: torch.Tensor,
    completion_ids_B_T: torch.Tensor,
    mask_B_T: torch.Tensor,
    adv_B: torch.Tensor,
    *,
    micro_batch: int | None = None,
    max_grad_norm: float = 1.0,
) -> float:
    """One optimizer step over B rows (gradient accumulation when ``micro_batch`` < B): the gradients,
    clipping to ``max_grad_norm`` and the optimizer step. Returns the loss."""
    total = accumulate_grads(model, prompt_ids_T, completion_ids_B_T, mask_B_T, adv_B, micro_batch)
    torch.nn.utils.clip_grad_norm_([p for g in optimizer.param_groups for p in g["params"]], max_grad_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return total


def arm_plan(
    arm: str, n: int, m: int, generator: torch.Generator
) -> tuple[int, int, torch.Tensor, torch.Tensor | None]:
    """(rollouts generated, micro-batch rows, advantages of the update rows, kept indices or None)."""
    if arm == "grpo_m":
        rewards_N = REWARD_LEVELS[torch.randint(len(REWARD_LEVELS), (m,), generator=generator)]
        return m, m, group_advantages(rewards_N), None
    rewards_N = REWARD_LEVELS[torch.randint(len(REWARD_LEVELS), (n,), generator=generator)]
    if arm == "grpo_n":
        return n, n, group_advantages(rewards_N), None
    if arm == "grpo_ga":
        return n, m, group_advantages(rewards_N), None
    if arm == "pods":
        keep_M = select(rewards_N, m, rule="max_variance")  # PODS: keep the max-variance m of n
        return n, m, pods_advantages(rewards_N, keep_M, normalize="after"), keep_M
    raise ValueError(f"unknown arm {arm!r}; choose from {ARMS}")


# ----------------------------------------------------------------------------- memory probes


def _proc_status_kb(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def rss_mb() -> float:
    kb = _proc_status_kb("VmRSS")
    if kb is None:
        import psutil

        return psutil.Process().memory_info().rss / 2**20
    return kb / 1024


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS counter (VmHWM); False where that is not possible."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return _proc_status_kb("VmHWM") is not None
    except OSError:
        return False


def peak_rss_mb(resettable: bool) -> float:
    if resettable:
        return _proc_status_kb("VmHWM") / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def peak_mb_of(fn, device: torch.device | str) -> float:
    """Peak tensor memory (MB) that ``fn()`` allocates above the level before it, on ``device``."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        fn()
        torch.cuda.synchronize()
        return (torch.cuda.max_memory_allocated() - base) / 2**20
    return profiled_alloc_peak_mb(fn)


def profiled_alloc_peak_mb(fn) -> float:
    """Peak of torch's CPU tensor allocations during ``fn()``, above the level before it (MB)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = [
        e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]" and e.device_type().name == "CPU"
    ]
    events.sort(key=lambda e: e.start_ns())
    cur = peak = 0
    for e in events:
        cur += e.nbytes()  # negative for frees
        peak = max(peak, cur)
    return peak / 2**20


# ----------------------------------------------------------------------------- one arm (child process)


def measure_arm(args: argparse.Namespace, arm: str, model=None) -> dict:
    """Load (or reuse) the model, warm up, and measure one update of ``arm``; returns a result row."""
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    if model is None:
        model, _ = load_model(
            args.model, lora_rank=args.lora_rank, dtype=args.dtype, device=args.device, grad_ckpt=args.grad_ckpt
        )
    opt = make_optimizer(model)
    vocab = model.get_output_embeddings().weight.shape[0]
    g = torch.Generator().manual_seed(args.seed)
    prompt_ids_T = torch.randint(vocab, (args.prompt_len,), generator=g).to(device)
    n_gen, micro, adv_B, keep_M = arm_plan(arm, args.n, args.m, g)
    # Every generated rollout exists as token ids (tiny); the update uses all of them or the kept rows.
    completions_N_T = torch.randint(vocab, (n_gen, args.completion_len), generator=g).to(device)
    if keep_M is not None:
        completions_N_T = completions_N_T[keep_M.to(device)]  # PODS: only the kept rows enter the update
    mask_B_T = torch.ones_like(completions_N_T)
    adv_B = adv_B.to(device)

    # Warm-up: a 1-row update creates AdamW's state (resident for the whole run in training).
    policy_update(model, opt, prompt_ids_T, completions_N_T[:1], mask_B_T[:1], adv_B[:1])

    def run() -> None:
        policy_update(model, opt, prompt_ids_T, completions_N_T, mask_B_T, adv_B, micro_batch=micro)

    row = {
        "arm": arm,
        "rollouts_generated": n_gen,
        "update_rows": completions_N_T.shape[0],
        "rows_per_backward": micro,
        "micro_batches": math.ceil(completions_N_T.shape[0] / micro),
    }
    gc.collect()
    if device.type == "cuda":
        t0 = time.perf_counter()
        row["peak_mb"] = peak_mb_of(run, device)
        row["update_time_s"] = time.perf_counter() - t0
        row["method"] = "cuda_max_memory_allocated"
        return row
    # CPU: first the plain run for peak RSS and time, then a profiled run for allocator peaks.
    base_rss = rss_mb()
    resettable = reset_peak_rss()
    t0 = time.perf_counter()
    run()
    row["update_time_s"] = time.perf_counter() - t0
    row["rss_peak_mb"] = peak_rss_mb(resettable) - base_rss
    gc.collect()
    row["alloc_peak_mb"] = profiled_alloc_peak_mb(run) if args.alloc_stats else float("nan")
    row["peak_mb"] = row["alloc_peak_mb"] if args.alloc_stats else row["rss_peak_mb"]
    row["method"] = ("torch_profiler_alloc" if args.alloc_stats else "rss") + ("" if resettable else "+ru_maxrss")
    return row


# ----------------------------------------------------------------------------- driver


def model_parser(doc: str) -> argparse.ArgumentParser:
    """The CLI header shared by the benchmarks: which model, how it is trained, where it runs."""
    ap = argparse.ArgumentParser(
        allow_abbrev=False,
        description=doc.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(doc.splitlines()[1:]),
    )
    ap.add_argument("--model", default="tiny:llama-arith", help='"tiny:<name>", "smol", a hub id or a local path')
    ap.add_argument(
        "--lora-rank", type=int, default=0, help="LoRA rank (alpha = rank, all linear layers); 0 = full parameters"
    )
    ap.add_argument("--device", default="auto", help="auto | cpu | cuda")
    ap.add_argument(
        "--dtype", default=None, help="float32 | bfloat16 | float16 (default: float32 on CPU, bfloat16 on CUDA)"
    )
    ap.add_argument("--grad-ckpt", action="store_true", help="gradient checkpointing in the update")
    return ap


def resolve_device(args: argparse.Namespace) -> None:
    """Fill in --device auto and the default --dtype for that device."""
    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.dtype is None:
        args.dtype = "bfloat16" if args.device == "cuda" else "float32"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = model_parser(__doc__)
    ap.add_argument("--n", type=int, default=64, help="rollouts generated per prompt (paper setting (a): 64)")
    ap.add_argument("--m", type=int, default=16, help="rollouts kept / rows per micro-batch (paper: 16)")
    ap.add_argument("--prompt-len", type=int, default=64, help="prompt tokens")
    ap.add_argument("--completion-len", type=int, default=128, help="completion tokens (all rows full length)")
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    ap.add_argument(
        "--no-alloc-stats", dest="alloc_stats", action="store_false", help="CPU: skip the profiled allocator run"
    )
    ap.add_argument(
        "--in-process",
        action="store_true",
        help="measure all arms in this process, loading the model once (fast; RSS numbers then unreliable)",
    )
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="write the table as CSV here")
    ap.add_argument("--_child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    resolve_device(args)
    if not 1 <= args.m <= args.n:
        ap.error(f"need 1 <= m <= n, got n={args.n}, m={args.m}")
    if args.n % args.m:
        ap.error(f"GRPO-GA splits n into micro-batches of m: n={args.n} must be a multiple of m={args.m}")
    if min(args.prompt_len, args.completion_len) < 1:
        ap.error("--prompt-len and --completion-len must be >= 1")
    return args


def _child_argv(args: argparse.Namespace, arm: str) -> list[str]:
    argv = [
        sys.executable,
        "-m",
        "pods_repro.bench.bench_memory",
        "--_child",
        arm,
        "--model",
        args.model,
        "--lora-rank",
        str(args.lora_rank),
        "--n",
        str(args.n),
        "--m",
        str(args.m),
        "--prompt-len",
        str(args.prompt_len),
        "--completion-len",
        str(args.completion_len),
        "--device",
        args.device,
        "--dtype",
        args.dtype,
        "--threads",
        str(args.threads),
        "--seed",
        str(args.seed),
    ]
    if args.grad_ckpt:
        argv.append("--grad-ckpt")
    if not args.alloc_stats:
        argv.append("--no-alloc-stats")
    return argv


def run_arm_subprocess(args: argparse.Namespace, arm: str) -> dict:
    proc = subprocess.run(_child_argv(args, arm), capture_output=True, text=True, env=child_env())
    for line in proc.stdout.splitlines():
        if line.startswith(_RESULT_TAG):
            return json.loads(line[len(_RESULT_TAG) :])
    raise RuntimeError(f"arm {arm} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")


def run(args: argparse.Namespace) -> list[dict]:
    torch.set_num_threads(args.threads)
    if args.in_process:
        model, _ = load_model(
            args.model, lora_rank=args.lora_rank, dtype=args.dtype, device=args.device, grad_ckpt=args.grad_ckpt
        )
        rows = [measure_arm(args, arm, model) for arm in args.arms]
    else:
        rows = [run_arm_subprocess(args, arm) for arm in args.arms]
    pods_peak = next((r["peak_mb"] for r in rows if r["arm"] == "pods"), None)
    for r in rows:
        r.update(
            model=args.model,
            lora_rank=args.lora_rank,
            n=args.n,
            m=args.m,
            prompt_len=args.prompt_len,
            completion_len=args.completion_len,
            device=args.device,
            dtype=args.dtype,
            in_process=args.in_process,
        )
        r["ratio_to_pods"] = r["peak_mb"] / pods_peak if pods_peak else float("nan")
    return rows


def print_table(rows: list[dict]) -> None:
    r0 = rows[0]
    print(
        f"model={r0['model']} lora_rank={r0['lora_rank']} n={r0['n']} m={r0['m']} tokens={r0['prompt_len']}+"
        f"{r0['completion_len']} device={r0['device']} dtype={r0['dtype']} method={r0['method']}"
    )
    print(
        f"{'arm':<8} {'rows/backward':>13} {'micro':>5} {'peak MB':>9} {'rss MB':>8} {'ratio/PODS':>10} {'update s':>9}"
    )
    for r in rows:
        print(
            f"{r['arm']:<8} {r['rows_per_backward']:>13} {r['micro_batches']:>5} {r['peak_mb']:>9.1f} "
            f"{r.get('rss_peak_mb', float('nan')):>8.1f} {r['ratio_to_pods']:>10.2f} {r['update_time_s']:>9.2f}"
        )


COLUMNS = [
    "arm",
    "rows_per_backward",
    "micro_batches",
    "peak_mb",
    "ratio_to_pods",
    "rss_peak_mb",
    "alloc_peak_mb",
    "update_time_s",
    "rollouts_generated",
    "update_rows",
    "method",
    "model",
    "lora_rank",
    "n",
    "m",
    "prompt_len",
    "completion_len",
    "device",
    "dtype",
    "in_process",
]


def write_csv(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore", restval="")
        w.writeheader()
        w.writerows(rows)


def main(argv: list[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    if args._child is not None:  # one arm in this fresh process; the parent parses the tagged line
        torch.set_num_threads(args.threads)
        print(_RESULT_TAG + json.dumps(measure_arm(args, args._child)), flush=True)
        return []
    from pods_repro.models import describe_policy

    describe_policy(args.model)  # an unknown model: PolicyError here, not once per arm subprocess
    rows = run(args)
    print_table(rows)
    if args.out is not None:
        write_csv(rows, args.out)
        print(f"wrote {args.out}")
    return rows


if __name__ == "__main__":
    from pods_repro.bench import run_cli

    run_cli(main, "bench_memory")
