"""PODS with two filters beyond the paper, in a TRL training: a length-aware down-sampling rule and the
zero-variance group filter, on a CPU in well under a minute.

- ``pods_rule="max_variance_shortest"``: keep the rewards PODS's max-variance rule keeps (so the same
  advantages), taking each kept reward value from the shortest completions that have it (a GFPO-style
  pressure towards short answers that costs PODS no variance; docs/trl.md gives the exact definition).
- ``pods_filter_zero_std=True``: a prompt group whose n rewards are all equal leaves the update (DAPO's
  dynamic sampling, without refilling the batch); ``pods/filtered_groups`` counts them per round.

Run (the tiny model is built into $PODS_CACHE on first use, a few minutes once)::

    python examples/trl_length_aware_filter.py
    python examples/trl_length_aware_filter.py --max_steps 8 --report_to tensorboard

Every ``PODSConfig``/``GRPOConfig`` field works as a ``--flag`` (``TrlParser``); ``--model`` takes any
``pods_repro.models`` spec or model directory.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field

os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny models on a shared CPU: one thread is fastest

import pods  # noqa: E402
import pods_repro  # noqa: E402, F401  (first: pins torch's CPU kernels as `pods train` does, so both use one cached model)
from pods import PODSConfig, PODSGRPOTrainer  # noqa: E402

RECIPE = dict(
    output_dir="results/examples/trl_length_aware_filter",
    num_generations=8,  # n: rollouts generated per prompt
    pods_m=4,  # m: rollouts kept per prompt
    pods_rule="max_variance_shortest",  # length-aware: the shortest completions of each kept reward
    pods_filter_zero_std=True,  # groups whose 8 rewards are all equal leave the update
    per_device_train_batch_size=32,  # 4 prompt groups of n per step, one generate() call
    gradient_accumulation_steps=1,
    max_steps=4,
    learning_rate=1e-4,
    max_completion_length=64,
    temperature=1.0,
    beta=0.0,
    logging_steps=1,
    save_strategy="no",
    report_to="none",
    seed=0,
    use_cpu=True,
    bf16=False,
    activation_checkpointing=False,
    disable_tqdm=True,
)


@dataclass
class ExampleArguments:
    model: str = field(default="tiny:llama-arith", metadata={"help": "pods_repro.models spec or model directory."})
    num_prompts: int = field(default=64, metadata={"help": "Training prompts: the first N of the arith train set."})


def main(argv: list[str] | None = None) -> int:
    from transformers.trainer_callback import PrinterCallback
    from trl import TrlParser

    from pods_repro.data import load_task
    from pods_repro.models import load_policy
    from pods_repro.rewards import trl_reward_funcs
    from pods_repro.trainer import records_to_dataset

    parser = TrlParser((ExampleArguments, PODSConfig))
    parser.set_defaults(**RECIPE)
    example, args = parser.parse_args_and_config(argv)

    model, tokenizer = load_policy(example.model, dtype="float32", device="cpu")
    records = load_task("arith", "train", prompt_style="plain", seed=args.seed)[: example.num_prompts]
    trainer = PODSGRPOTrainer(
        model=model,
        reward_funcs=trl_reward_funcs("arith"),  # accuracy + format + tags
        args=args,
        train_dataset=records_to_dataset(records),
        processing_class=tokenizer,
    )
    trainer.remove_callback(PrinterCallback)
    t0 = time.perf_counter()
    trainer.train()
    logs = [row for row in trainer.state.log_history if "kept_reward" in row]
    for row in logs:
        print(
            f"[example] step {row['step']}: reward {row['reward']:.2f} over all n, {row['kept_reward']:.2f} over the "
            f"kept m; completion length {row['completions/mean_length']:.1f} all, "
            f"{row['kept_completion_length']:.1f} kept; groups filtered (all rewards equal) "
            f"{row.get('pods/filtered_groups', 0):.0f}"
        )
    print(
        f"[example] pods {pods.__version__}: {trainer.state.global_step} steps of rule {trainer.pods_rule} with the "
        f"zero-variance filter {'on' if trainer.pods_filter_zero_std else 'off'} in {time.perf_counter() - t0:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
