"""Generation cost of ``PODSGRPOTrainer`` against ``trl.GRPOTrainer`` at equal rollouts, side by side.

    OMP_NUM_THREADS=1 python benchmarks/bench_trl_generation.py (= pods bench trl_generation)
        [--prompts 8] [--n 8] [--m 4] [--steps 3] [--repeats 5] [--model tiny:llama-arith]

Each repeat trains three short runs on the same tiny model, prompts and reward functions, in an order
that rotates from repeat to repeat: ``trl.GRPOTrainer`` (vanilla GRPO on all n), ``PODSGRPOTrainer``
as a TRL user builds it (m of n kept; one ``generate`` call per generation round, as TRL) and
``PODSGRPOTrainer`` with ``pods_seeded_generation=True`` (what ``pods train`` uses: each prompt group
under its own seed, one call per group). ``--prompts`` prompt groups of ``--n`` rollouts are generated
per optimizer step (``per_device_train_batch_size = prompts x n``, no gradient accumulation). The
model's ``generate`` is wrapped to count its calls and time them; the table prints, per trainer, the
median over the repeats of generate calls per step, generation seconds per step (time inside
``generate``) and seconds per optimizer step (the whole step: PODS's update is on m of n rollouts).

By default the learning rate is 0 and the prompts come in dataset order, so every run samples from
the same weights: the generation columns compare the same work (``tokens/step``, the completion tokens
sampled per step, says how much), and TRL's and PODS's first steps, drawn from the same RNG state, are
the same tokens (the table says whether they were). ``--lr`` trains for real.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny models on a shared CPU: one thread is fastest

ARMS = ("trl", "pods", "pods_seeded")
LABELS = {
    "trl": "trl.GRPOTrainer",
    "pods": "PODSGRPOTrainer",
    "pods_seeded": "PODSGRPOTrainer, seeded",
}


def _count_generate(model: Any, record: dict) -> None:
    """Wrap ``model.generate`` (the object TRL unwraps for generation on one process) to count and time it."""
    inner = model.generate

    def generate(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        out = inner(*args, **kwargs)
        record["calls"] += 1
        record["gen_s"] += time.perf_counter() - t0
        return out

    model.generate = generate


def run_arm(arm: str, args: argparse.Namespace, records: list[dict], out_dir: str) -> dict:
    """Train one short run of ``arm``; returns calls, generation seconds and step seconds per step, and a
    digest of every completion it sampled."""
    from transformers.trainer_callback import PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    from pods_repro.models import load_policy
    from pods_repro.rewards import trl_reward_funcs
    from pods_repro.trainer import PODSConfig, PODSGRPOTrainer, records_to_dataset

    model, tok = load_policy(args.model, dtype="float32", device="cpu")
    record = {"calls": 0, "gen_s": 0.0}
    _count_generate(model, record)
    common = dict(
        output_dir=out_dir,
        num_generations=args.n,
        per_device_train_batch_size=args.prompts * args.n,
        gradient_accumulation_steps=1,
        max_steps=args.steps,
        max_completion_length=args.max_completion_length,
        learning_rate=args.lr,
        temperature=1.0,
        beta=0.0,
        shuffle_dataset=False,
        seed=0,
        use_cpu=True,
        bf16=False,
        activation_checkpointing=False,
        report_to=[],
        logging_steps=1,
        save_strategy="no",
        disable_tqdm=True,
    )
    dataset = records_to_dataset(records)
    digests: list[str] = []  # per step: SHA-256 of the step's completions
    tokens = [0]

    def digest_reward(completions: list[str], completion_ids: list[list[int]], **_: Any) -> list[float]:
        digests.append(hashlib.sha256("\x00".join(completions).encode()).hexdigest())
        tokens[0] += sum(len(ids) for ids in completion_ids)
        return [0.0] * len(completions)

    funcs = [*trl_reward_funcs("arith"), digest_reward]
    if arm == "trl":
        trainer = GRPOTrainer(
            model=model, reward_funcs=funcs, args=GRPOConfig(**common), train_dataset=dataset, processing_class=tok
        )
    else:
        cfg = PODSConfig(**common, pods_m=args.m, pods_seeded_generation=arm == "pods_seeded")
        trainer = PODSGRPOTrainer(
            model=model, reward_funcs=funcs, args=cfg, train_dataset=dataset, processing_class=tok
        )
    trainer.remove_callback(PrinterCallback)  # HF prints every log dict without a progress bar
    t0 = time.perf_counter()
    trainer.train()
    train_s = time.perf_counter() - t0
    steps = trainer.state.global_step
    return {
        "calls": record["calls"] / steps,
        "gen_s": record["gen_s"] / steps,
        "step_s": train_s / steps,
        "tokens": tokens[0] / steps,
        "first_step": digests[0],
    }


def table(results: dict[str, list[dict]], repeats: int) -> list[str]:
    """The printed table: per arm, medians over the repeats; PODS / TRL ratios last."""
    keys = ("calls", "gen_s", "step_s", "tokens")
    med = {arm: {k: statistics.median(r[k] for r in rows) for k in keys} for arm, rows in results.items()}
    head = f"{'trainer':<30} {'generate calls/step':>19} {'generation s/step':>17} {'step s':>7} {'tokens/step':>11}"
    lines = [f"{head}   (medians of {repeats} repeats)"]
    for arm, row in med.items():
        lines.append(
            f"{LABELS[arm]:<30} {row['calls']:>19.2f} {row['gen_s']:>17.3f} {row['step_s']:>7.3f} {row['tokens']:>11.0f}"
        )
    trl = med["trl"]
    for arm in ("pods", "pods_seeded"):
        row = med[arm]
        lines.append(
            f"{LABELS[arm] + ' / TRL':<30} {row['calls'] / trl['calls']:>18.2f}x {row['gen_s'] / trl['gen_s']:>16.2f}x "
            f"{row['step_s'] / trl['step_s']:>6.2f}x {row['tokens'] / trl['tokens']:>10.2f}x"
        )
    same = all(a["first_step"] == b["first_step"] for a, b in zip(results["trl"], results["pods"], strict=True))
    lines.append(
        "first step's rollouts, PODSGRPOTrainer (default) vs trl.GRPOTrainer: "
        + ("the same tokens in every repeat" if same else "different tokens")
        + " (later steps draw from an RNG stream that TRL's row shuffle moved by a different amount)"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="tiny:llama-arith", help="policy spec or model directory (pods_repro.models)")
    ap.add_argument("--prompts", type=int, default=8, help="prompt groups generated per optimizer step")
    ap.add_argument("--n", type=int, default=8, help="rollouts generated per prompt (num_generations)")
    ap.add_argument("--m", type=int, default=4, help="rollouts PODS keeps per prompt (pods_m)")
    ap.add_argument("--steps", type=int, default=3, help="optimizer steps per run")
    ap.add_argument("--repeats", type=int, default=5, help="runs of each trainer (medians are printed)")
    ap.add_argument("--max-completion-length", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.0, help="learning rate (0: every run samples the same rollouts)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads")
    ap.add_argument("--out", help="also write the medians as CSV (trainer, generate_calls_per_step, ...)")
    args = ap.parse_args(argv)
    if args.steps < 1 or args.repeats < 1 or args.prompts < 1:
        ap.error("--steps, --repeats and --prompts must be >= 1")
    if not 2 <= args.m <= args.n:
        ap.error(f"--m {args.m} must be in [2, --n {args.n}]")

    import torch
    import transformers
    import trl

    from pods_repro.data import load_task
    from pods_repro.models import load_policy

    torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    warnings.filterwarnings("ignore", category=FutureWarning)
    load_policy(args.model, dtype="float32", device="cpu")  # a bad spec fails here (exit 2); a tiny model is built
    records = load_task("arith", "train", prompt_style="plain", seed=0)[: args.prompts * args.steps]
    print(
        f"trl {trl.__version__}, transformers {transformers.__version__}, torch {torch.__version__}, "
        f"{args.threads} thread(s); model {args.model}; {args.prompts} prompt groups x n={args.n} rollouts per "
        f"step (PODS keeps m={args.m}), {args.steps} steps, {args.repeats} repeats, lr {args.lr}",
        flush=True,
    )
    results: dict[str, list[dict]] = {arm: [] for arm in ARMS}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeats):
            order = ARMS[rep % len(ARMS) :] + ARMS[: rep % len(ARMS)]  # each arm runs first, second, third in turn
            for arm in order:
                res = run_arm(arm, args, records, str(Path(tmp) / f"{arm}_{rep}"))
                results[arm].append(res)
                print(
                    f"  repeat {rep + 1} {LABELS[arm]:<26} calls/step {res['calls']:.2f} gen s/step "
                    f"{res['gen_s']:.3f} step s {res['step_s']:.3f}",
                    file=sys.stderr,
                    flush=True,
                )
    print("\n".join(table(results, args.repeats)))
    if args.out:
        write_csv(results, args, args.out)
    return 0


def write_csv(results: dict[str, list[dict]], args: argparse.Namespace, path: str) -> None:
    """The medians per trainer, with the run's settings, as one CSV (the results page reads it)."""
    import csv

    import torch
    import trl

    cols = ("calls", "gen_s", "step_s", "tokens")
    names = ("generate_calls_per_step", "generation_s_per_step", "step_s", "tokens_per_step")
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["trainer", *names, "repeats", "prompts", "n", "m", "steps", "model", "threads", "torch", "trl"])
        for arm, rows in results.items():
            med = [statistics.median(r[k] for r in rows) for k in cols]
            w.writerow([LABELS[arm], *(f"{x:.6g}" for x in med), args.repeats, args.prompts, args.n, args.m,
                        args.steps, args.model, args.threads, torch.__version__, trl.__version__])  # fmt: skip


if __name__ == "__main__":
    from pods_repro.bench import run_cli

    run_cli(main, "bench_trl_generation")
