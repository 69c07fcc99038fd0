"""PODS in your own TRL training: an open-r1-style GRPO recipe with PODS down-sampling, on a CPU.

open-r1's GRPO recipes train for one epoch (``num_train_epochs: 1``, ``max_steps: -1``) with gradient
accumulation, parsed by ``TrlParser`` from a YAML recipe plus ``--flags``. The only changes for PODS:

1. ``GRPOConfig`` -> :class:`pods.trainer.PODSConfig`, which adds ``pods_m`` (rollouts kept per prompt;
   ``num_generations`` is n, the rollouts generated), ``pods_rule`` and ``pods_normalize``;
2. ``GRPOTrainer`` -> :class:`pods.trainer.PODSGRPOTrainer`.

Gradient accumulation keeps TRL's meaning (different prompts in each micro-batch); the paper's GRPO-GA
grouping (GA groups of n rollouts of the *same* prompt per step, settings (e)/(f)) is
``--pods_ga_same_prompt true``.

Run (about a minute on a CPU; the tiny model is built into $PODS_CACHE on first use)::

    python examples/trl_openr1_style.py
    python examples/trl_openr1_style.py --pods_m 2 --report_to tensorboard --num_prompts 64
    python examples/trl_openr1_style.py --config my_recipe.yaml      # an open-r1-style YAML recipe

The model is the project-built tiny Llama (``pods_repro.models.ensure_tiny("llama-arith")``) and the data a
slice of the synthetic ``arith`` training set; swap in your own model, dataset and reward functions.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field

os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny models on a shared CPU: one thread is fastest

# isort: off
import pods_repro  # noqa: E402, F401  (first: pins torch's CPU kernels as `pods train` does, so both use one cached model)

# isort: on
from trl import TrlParser  # noqa: E402

from pods import PODSConfig, PODSGRPOTrainer  # noqa: E402

# open-r1 recipe style (recipes/*/grpo/config_demo.yaml), shrunk so that it runs in a CPU minute.
RECIPE = dict(
    output_dir="results/examples/trl_openr1_style",
    num_generations=8,  # n: rollouts generated per prompt
    pods_m=4,  # m: rollouts kept per prompt for the update (max-variance rule)
    per_device_train_batch_size=8,  # generated rows per micro-batch: one prompt group of n
    gradient_accumulation_steps=4,  # 4 micro-batches (4 different prompts) per optimizer step
    num_train_epochs=1,
    max_steps=-1,
    learning_rate=1e-4,
    lr_scheduler_type="cosine",
    warmup_steps=0.1,  # a float < 1 is a ratio of the training steps (transformers 5)
    max_completion_length=96,
    temperature=1.0,
    beta=0.0,
    logging_steps=1,
    save_strategy="epoch",
    report_to="none",
    seed=42,
    use_cpu=True,
    bf16=False,
    activation_checkpointing=False,
)


@dataclass
class ExampleArguments:
    num_prompts: int = field(default=32, metadata={"help": "Training prompts: the first N of the arith train set."})


def main(argv: list[str] | None = None) -> int:
    from pods_repro.data import load_task
    from pods_repro.models import ensure_tiny, load_policy
    from pods_repro.rewards import trl_reward_funcs
    from pods_repro.trainer import records_to_dataset

    parser = TrlParser((ExampleArguments, PODSConfig))
    parser.set_defaults(**RECIPE)
    example, args = parser.parse_args_and_config(argv)

    model, tokenizer = load_policy(str(ensure_tiny("llama-arith")), dtype="float32", device="cpu")
    records = load_task("arith", "train", prompt_style="plain", seed=args.seed)[: example.num_prompts]
    trainer = PODSGRPOTrainer(
        model=model,
        reward_funcs=trl_reward_funcs("arith"),  # accuracy + format + tags (the paper's App. A.1)
        args=args,
        train_dataset=records_to_dataset(records),
        processing_class=tokenizer,
        pods_base_model="tiny:llama-arith",  # named in the model card (README.md) written with each checkpoint
    )
    t0 = time.perf_counter()
    trainer.train()
    logs = [row for row in trainer.state.log_history if "kept_reward" in row]
    print(
        f"[example] {trainer.state.global_step} optimizer steps (1 epoch of {len(records)} prompts, GA "
        f"{args.gradient_accumulation_steps}, n={args.num_generations}, m={trainer.pods_m}) in "
        f"{time.perf_counter() - t0:.0f} s; reward of all n / kept m: first step "
        f"{logs[0]['reward']:.2f} / {logs[0]['kept_reward']:.2f}, last step {logs[-1]['reward']:.2f} / "
        f"{logs[-1]['kept_reward']:.2f}; model card: {os.path.join(args.output_dir, 'README.md')}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
