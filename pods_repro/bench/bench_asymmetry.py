"""Inference/update asymmetry benchmark (the measurement behind the paper's Fig. 1).

The details: docs/design.md, "Module notes" (`pods_repro/bench/bench_asymmetry.py`).
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import time
from pathlib import Path

import torch

from pods.grpo import group_advantages
from pods_repro.bench.bench_memory import (
    REWARD_LEVELS,
    accumulate_grads,
    load_model,
    make_optimizer,
    model_parser,
    peak_mb_of,
    policy_update,
    resolve_device,
)

COLUMNS = [
    "rollouts",
    "step_time_s",
    "gen_time_s",
    "update_time_s",
    "gen_tokens",
    "per_token_gen_ms",
    "update_oom",
    "update_chunk",
    "est_update_peak_mb",
    "gen_tokens_per_s",
    "update_rows_per_s",
    "prompt_len",
    "completion_len",
    "model",
    "lora_rank",
    "device",
    "dtype",
    "threads",
    "update_peak_mb",
]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


@torch.no_grad()
def generate(
    model,
    prompt_ids_T: torch.Tensor,
    R: int,
    completion_len: int,
    *,
    pad_id: int,
    eos_id: int | None,
    fixed_length: bool,
    seed: int,
) -> tuple[torch.Tensor, torch.Tensor, float]:
    """R sampled completions of one prompt in one batched call: (completion ids (R, T), mask (R, T), seconds)."""
    model.eval()
    torch.manual_seed(seed)
    input_ids_R_Tp = prompt_ids_T.unsqueeze(0).expand(R, -1).contiguous()
    device = input_ids_R_Tp.device
    _sync(device)
    t0 = time.perf_counter()
    out_R_T = model.generate(
        input_ids=input_ids_R_Tp,
        attention_mask=torch.ones_like(input_ids_R_Tp),
        do_sample=True, temperature=0.9, top_k=0, top_p=1.0,  # the paper's sampling (docs/paper.md#hyperparameters)
        max_new_tokens=completion_len,
        min_new_tokens=completion_len if fixed_length else 0,
        pad_token_id=pad_id, eos_token_id=eos_id,
    )  # fmt: skip
    _sync(device)
    seconds = time.perf_counter() - t0
    model.train()
    completion_R_T = out_R_T[:, input_ids_R_Tp.shape[1] :]
    # A token counts as generated up to and including the first EOS; later positions are padding.
    if eos_id is None or fixed_length:
        mask_R_T = torch.ones_like(completion_R_T)
    else:
        is_eos_R_T = completion_R_T == eos_id
        mask_R_T = ((is_eos_R_T.cumsum(-1) - is_eos_R_T.long()) == 0).long()
    return completion_R_T, mask_R_T, seconds


PROBE_ROWS = (4, 8)  # rows of the two memory probes of fit_memory


def fit_memory(
    model, opt, prompt_ids_T: torch.Tensor, completion_len: int, vocab: int, device: torch.device
) -> tuple[float, float, float]:
    """(a, b, c): predicted peak update memory of R rows is ``max(a + b R, c)`` MB.

    ``a + b R`` is the forward/backward peak (activations and logits grow per row, gradients do not),
    fitted from probes of PROBE_ROWS rows; ``c`` is the peak of a whole 1-row update, whose optimizer
    step (AdamW's temporaries, proportional to the parameters) can dominate for small R.

    The probes are 4 and 8 rows, not 1 and 2: in a full-parameter update the gradient buffers (one per
    parameter, allocated during the backward) set the peak while a row's activations are smaller than
    them, so the peak is not yet linear in the rows. On an H100, probes of 1 and 2 rows of the 85M model
    (64 + 256 tokens) gave 20 MB/row where the measured update takes 133 MB/row (6.5x under at 512 rows).
    """
    g = torch.Generator().manual_seed(123)
    lo, hi = PROBE_ROWS
    batches = {}
    for rows in (1, lo, hi):
        ids_B_T = torch.randint(vocab, (rows, completion_len), generator=g).to(device)
        batches[rows] = (ids_B_T, torch.ones_like(ids_B_T), torch.linspace(-1.0, 1.0, rows).to(device))
    fb = []
    for rows in (lo, hi):
        fb.append(peak_mb_of(lambda: accumulate_grads(model, prompt_ids_T, *batches[rows]), device))  # noqa: B023
        opt.zero_grad(set_to_none=True)
    c = peak_mb_of(lambda: policy_update(model, opt, prompt_ids_T, *batches[1]), device)
    b = max((fb[1] - fb[0]) / (hi - lo), 1e-9)
    return fb[0] - lo * b, b, c


def default_mem_limit_mb(device: torch.device) -> float:
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info()
        return 0.9 * free / 2**20
    import psutil

    return 0.5 * psutil.virtual_memory().available / 2**20


def _time_repeat(args, model, tok, opt, prompt_ids_T, R, rep, chunk, pad_id, g, device):
    """One repeat of :func:`run` at R rollouts: (generation s, update s, completion mask R x T)."""
    comp_R_T, mask_R_T, gen_s = generate(
        model,
        prompt_ids_T,
        R,
        args.completion_len,
        pad_id=pad_id,
        eos_id=tok.eos_token_id,
        fixed_length=not args.allow_eos,
        seed=args.seed + rep,
    )
    rewards_R = REWARD_LEVELS[torch.randint(len(REWARD_LEVELS), (R,), generator=g)]
    adv_R = group_advantages(rewards_R).to(device)

    def update() -> None:
        policy_update(model, opt, prompt_ids_T, comp_R_T, mask_R_T, adv_R, micro_batch=min(chunk, R))

    _sync(device)
    t0 = time.perf_counter()
    # The measured peak beside the prediction: free on CUDA (allocator counters), not on CPU (profiler).
    if device.type == "cuda":
        peak = peak_mb_of(update, device)
    else:
        update()
        peak = float("nan")
    _sync(device)
    return gen_s, time.perf_counter() - t0, mask_R_T, peak


def run(args: argparse.Namespace) -> list[dict]:
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    model, tok = load_model(
        args.model, lora_rank=args.lora_rank, dtype=args.dtype, device=args.device, grad_ckpt=args.grad_ckpt
    )
    opt = make_optimizer(model)
    vocab = model.get_output_embeddings().weight.shape[0]
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    g = torch.Generator().manual_seed(args.seed)
    # A random prompt (ordinary tokens only) keeps the length exact and identical across models' runs.
    specials = [i for i in tok.all_special_ids if i is not None]
    lo = max(specials) + 1 if specials and max(specials) < vocab // 2 else 0
    prompt_ids_T = torch.randint(lo, vocab, (args.prompt_len,), generator=g).to(device)

    a_mb, b_mb, c_mb = fit_memory(model, opt, prompt_ids_T, args.completion_len, vocab, device)
    limit = args.mem_limit_mb if args.mem_limit_mb is not None else default_mem_limit_mb(device)
    print(
        f"model={args.model} lora_rank={args.lora_rank} device={args.device} dtype={args.dtype} threads="
        f"{torch.get_num_threads()} tokens={args.prompt_len}+{args.completion_len}; update peak ~ {a_mb:.1f} + "
        f"{b_mb:.3f} MB/row (optimizer step {c_mb:.1f} MB), limit {limit:.0f} MB",
        flush=True,
    )
    if max(a_mb + b_mb, c_mb) > limit:
        raise SystemExit(
            f"even a 1-row update needs ~{max(a_mb + b_mb, c_mb):.0f} MB > --mem-limit-mb {limit:.0f}; raise the limit "
            "or shorten --completion-len"
        )
    # Warm-up generation at the smallest R and the full length: first-call allocations, lazy initialisation
    # and (CUDA) the clocks' ramp must not count for R = min. A 2-row, 4-token warm-up left the H200's R = 8
    # call slower than its R = 32 call (10.1 s vs 7.1 s), which the cost-model fit read as a
    # negative per-rollout cost.
    generate(
        model,
        prompt_ids_T,
        min(args.rollouts),
        args.completion_len,
        pad_id=pad_id,
        eos_id=tok.eos_token_id,
        fixed_length=True,
        seed=0,
    )

    print(
        f"{'R':>5} {'gen s':>8} {'tokens':>8} {'ms/token':>9} {'update s':>9} {'oom':>5} {'chunk':>5} {'step s':>8}",
        flush=True,
    )
    rows = []
    for R in args.rollouts:
        gen_times, upd_times, peaks = [], [], []
        est = max(a_mb + b_mb * R, c_mb)
        oom = est > limit
        chunk = R if not oom else 2 ** int(math.floor(math.log2(max((limit - a_mb) / b_mb, 1))))
        for rep in range(args.repeats):
            gen_s, upd_s, mask_R_T, peak = _time_repeat(
                args, model, tok, opt, prompt_ids_T, R, rep, chunk, pad_id, g, device
            )
            upd_times.append(upd_s)
            peaks.append(peak)
            gen_times.append(gen_s)
        gen_s, upd_s = statistics.median(gen_times), statistics.median(upd_times)
        tokens = int(mask_R_T.sum())
        row = {
            "rollouts": R, "step_time_s": gen_s + upd_s, "gen_time_s": gen_s, "update_time_s": upd_s,
            "gen_tokens": tokens, "per_token_gen_ms": 1e3 * gen_s / max(tokens, 1), "update_oom": oom,
            "update_chunk": min(chunk, R), "est_update_peak_mb": round(est, 4), "gen_tokens_per_s": tokens / gen_s,
            "update_rows_per_s": R / upd_s, "prompt_len": args.prompt_len, "completion_len": args.completion_len,
            "model": args.model, "lora_rank": args.lora_rank, "device": args.device, "dtype": args.dtype,
            "threads": torch.get_num_threads(), "update_peak_mb": round(max(peaks), 4),
        }  # fmt: skip
        rows.append(row)
        if args.out is not None:  # after every R: a run stopped part-way keeps the rows it measured
            write_csv(rows, args.out)
        print(
            f"{R:>5} {gen_s:>8.2f} {tokens:>8} {row['per_token_gen_ms']:>9.3f} {upd_s:>9.2f} {str(oom):>5} "
            f"{row['update_chunk']:>5} {row['step_time_s']:>8.2f}",
            flush=True,
        )
    return rows


def summarize(rows: list[dict]) -> str:
    """The two numbers Fig. 1 is about: per-token generation speed-up from the smallest to the largest
    R, and how the update time grows with R (per rollout)."""
    lo, hi = rows[0], rows[-1]
    gen_ratio = lo["per_token_gen_ms"] / hi["per_token_gen_ms"]
    upd_lo, upd_hi = lo["update_time_s"] / lo["rollouts"], hi["update_time_s"] / hi["rollouts"]
    return (
        f"per-token generation time falls {gen_ratio:.1f}x from R={lo['rollouts']} to R={hi['rollouts']} "
        f"(paper, 8 A100s: 21x from 8 to 512); update time per rollout {1e3 * upd_lo:.1f} ms at R={lo['rollouts']} "
        f"vs {1e3 * upd_hi:.1f} ms at R={hi['rollouts']} ({upd_lo / upd_hi:.1f}x); "
        f"generation share of the step {lo['gen_time_s'] / lo['step_time_s']:.0%} -> {hi['gen_time_s'] / hi['step_time_s']:.0%}"
    )


def write_csv(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = model_parser(__doc__)
    ap.add_argument(
        "--rollouts", type=int, nargs="+", default=[8, 16, 32, 64, 128, 256, 512], help="R values (rollouts per step)"
    )
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--completion-len", type=int, default=128, help="new tokens per completion")
    ap.add_argument("--allow-eos", action="store_true", help="let completions stop at EOS (token counts then vary)")
    ap.add_argument(
        "--mem-limit-mb",
        type=float,
        default=None,
        help="update memory budget; R rows predicted above it are marked update_oom and run as GA "
        "(default: half the available RAM on CPU, 90%% of free GPU memory on CUDA)",
    )
    ap.add_argument("--repeats", type=int, default=1, help="timings per R (median reported)")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="write the CSV here")
    args = ap.parse_args(argv)
    resolve_device(args)
    if min(args.rollouts) < 1 or args.repeats < 1 or min(args.prompt_len, args.completion_len) < 1:
        ap.error("--rollouts, --repeats, --prompt-len and --completion-len must all be >= 1")
    if args.mem_limit_mb is not None and args.mem_limit_mb <= 0:
        ap.error("--mem-limit-mb must be positive (MB)")
    args.rollouts = sorted(set(args.rollouts))
    return args


def main(argv: list[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    rows = run(args)
    print(summarize(rows))
    if args.out is not None:  # run() wrote it after every R
        print(f"wrote {args.out}")
    return rows


if __name__ == "__main__":
    from pods_repro.bench import run_cli

    run_cli(main, "bench_asymmetry")
