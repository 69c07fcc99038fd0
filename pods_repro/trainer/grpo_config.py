"""The trainer's config -> TRL mapping: ``build_grpo_config``, the `trl:` pass-through, step plan, trainer kwargs.

Part of :mod:`pods.trainer` (the one place that touches TRL or HF Trainer internals); the batch geometry
these settings realise is described in that package's docstring.
"""

from __future__ import annotations

import os
from typing import Any

from trl import GRPOConfig

from pods_repro.config import TrainConfig
from pods_repro.config.trl import check_trl_passthrough

__all__ = [
    "build_grpo_config",
    "check_trl_passthrough",
    "grpo_config_with_passthrough",
    "pods_trainer_kwargs",
    "records_to_dataset",
    "step_plan",
]

LOSS_TYPES = {"sequence": "grpo", "token": "bnpo", "token_group": "bnpo"}  # pods aggregation -> TRL loss_type
BIG_STEPS = 10**7  # "no step cap" for time-budgeted runs (HF needs a finite max_steps)


# --------------------------------------------------------------------------------------------
# Config -> TRL
# --------------------------------------------------------------------------------------------
def build_grpo_config(
    cfg: TrainConfig, output_dir: str | os.PathLike, num_processes: int, use_cuda: bool, max_steps: int
) -> GRPOConfig:
    """The GRPOConfig that realises ``cfg`` (see the module docstring for the batch geometry)."""
    ro, op = cfg.rollout, cfg.optim
    if ro.prompts_per_step % num_processes:
        raise ValueError(
            f"rollout.prompts_per_step={ro.prompts_per_step} is not divisible by the {num_processes} processes; "
            f"each process must hold whole prompt groups: use a multiple of {num_processes}"
        )
    prompts_local = ro.prompts_per_step // num_processes
    bf16 = use_cuda and cfg.policy.dtype == "bfloat16"
    fp16 = use_cuda and cfg.policy.dtype == "float16"
    kwargs: dict[str, Any] = dict(
        output_dir=str(output_dir),
        # batch geometry: P x n rows per micro-step, GA micro-steps per generation and per optimizer step
        per_device_train_batch_size=prompts_local * ro.n,
        num_generations=ro.n,
        gradient_accumulation_steps=op.grad_accum,
        steps_per_generation=op.grad_accum,
        num_iterations=1,
        max_steps=max_steps,
        # sampling
        temperature=ro.temperature,
        top_p=ro.top_p,
        top_k=ro.top_k,  # 0 = off (the paper; the (a)-(d) code); the (e)-(f) code sampled with TRL's old default 50
        max_completion_length=ro.max_completion_length,
        use_vllm=ro.backend == "vllm",
        vllm_mode="colocate",
        vllm_gpu_memory_utilization=ro.vllm_gpu_memory_utilization,
        # TRL 1.16 turns this on for vLLM (an extra forward and a per-sequence reweighting); the authors' code
        # has no such term. When on, PODS computes it on the kept rows only (PODSGRPOTrainer._pods_kept_forwards).
        vllm_importance_sampling_correction=ro.vllm_is_correction,
        # objective
        loss_type=LOSS_TYPES[op.aggregation],
        beta=op.beta,
        epsilon=op.epsilon,
        epsilon_high=op.epsilon_high,
        scale_rewards="group",
        # TRL 1.16 multiplies the KL term by the importance ratio by default (DeepSeek-V3.2), which changes
        # the KL gradient even on-policy; the paper's code adds plain beta * k3 (docs/paper.md#grpo).
        use_bias_correction_kl=False,
        mask_truncated_completions=False,  # truncated completions are scored like any other (paper)
        # optimiser
        learning_rate=op.lr,
        lr_scheduler_type=op.scheduler,
        warmup_steps=float(op.warmup_ratio),  # a float in [0, 1) is a ratio of max_steps
        weight_decay=op.weight_decay,
        adam_beta1=op.adam_beta1,
        adam_beta2=op.adam_beta2,
        max_grad_norm=op.max_grad_norm,
        optim=op.optimizer,
        # precision: GRPOConfig defaults bf16=True and gradient_checkpointing=True; on CPU both cost a lot
        # (a SmolLM2 step took 297 s instead of about 40 s), so CPU runs turn them off.
        bf16=bf16,
        fp16=fp16,
        # transformers 5 renamed gradient_checkpointing (a FutureWarning under the old name)
        activation_checkpointing=bool(cfg.policy.gradient_checkpointing) and use_cuda,
        use_cpu=not use_cuda,
        # bookkeeping
        seed=cfg.seed,
        logging_steps=1,
        save_strategy="steps",
        save_steps=cfg.checkpoint.every_steps,
        save_total_limit=None,  # pruned by pods_repro.run.RunController.on_save once pods_state.json is written
        report_to=[],
        disable_tqdm=True,
        log_completions=False,
        remove_unused_columns=False,
        dataloader_num_workers=0,
        shuffle_dataset=True,
    )
    return grpo_config_with_passthrough(kwargs, getattr(cfg, "trl", None) or {})


# --------------------------------------------------------------------------------------------
# The config's `trl:` pass-through section (pods_repro.config.TRL_CONTROLLED / TRL_FIXED / TRL_OPEN)
# --------------------------------------------------------------------------------------------
def grpo_config_with_passthrough(kwargs: dict[str, Any], section: dict[str, Any]) -> GRPOConfig:
    """The GRPOConfig of ``kwargs`` (build_grpo_config's) updated with the config's `trl:` section."""
    from pods_repro.config import ConfigError, check_trl_keys

    check_trl_keys(section)
    args = {**kwargs, **section}
    try:
        return GRPOConfig(**args)
    except TypeError as e:  # an unknown field: the load-time check names the closest one
        check_trl_passthrough(section)
        raise ConfigError("trl", section, f"is refused by trl.GRPOConfig: {e}", "fix or remove the field") from None


def records_to_dataset(records: list[dict]) -> Any:
    """The ``datasets.Dataset`` TRL trains on, from task records."""
    from datasets import Dataset

    # Columns present in every record (reward functions receive them as keyword arguments).
    keys = [k for k in records[0] if all(k in r for r in records)]
    return Dataset.from_list([{k: r[k] for k in keys} for r in records])


def step_plan(cfg: TrainConfig, n_train: int) -> tuple[int, int]:
    """(max_steps for HF, horizon of the LR schedule) in optimizer steps.

    A constant schedule runs until the time budget (or budget.max_steps). A decaying schedule needs a
    horizon: optim.scheduler_steps, else budget.max_steps, else one epoch as the authors' (e)-(f) code
    counted it (num_train_epochs 1); without budget.max_steps training stops at that horizon.

    The authors' epoch (docs/fidelity.md, "LR schedule"): HF sets max_steps = len(dataloader) // GA, and
    their sampler yields one prompt per process per dataloader batch, so one epoch is
    (training prompts per process) // GA optimizer steps (each step consumes GA batches but generates
    from the first only): with GSM8K's 7,473 prompts on 8 processes, 934 // 4 = 233 steps for PODS and
    934 // 16 = 58 for GRPO-GA (warmup ceil(0.1 x horizon) = 24 and 6). Here prompts_per_step counts
    prompt groups over all processes, so the horizon is n_train // prompts_per_step // grad_accum.
    """
    epoch = max(1, n_train // cfg.rollout.prompts_per_step // cfg.optim.grad_accum)
    if cfg.optim.scheduler == "constant":
        max_steps = int(cfg.budget.max_steps or BIG_STEPS)
        return max_steps, max_steps
    horizon = int(cfg.optim.scheduler_steps or cfg.budget.max_steps or epoch)
    return int(cfg.budget.max_steps or horizon), horizon


def pods_trainer_kwargs(cfg: TrainConfig, max_steps: int, scheduler_steps: int | None) -> dict[str, Any]:
    """The PODS arguments of :class:`PODSGRPOTrainer`, read from a ``TrainConfig``."""
    return {
        "pods_m": cfg.rollout.m,
        "pods_rule": cfg.rollout.rule,
        "pods_normalize": cfg.rollout.normalize,
        "pods_ga_same_prompt": True,  # the paper's GRPO-GA: GA groups of n of the same prompt (settings e-f)
        "pods_base_model": cfg.policy.model,
        "pods_seed": cfg.seed,
        "pods_max_steps": max_steps,
        "pods_scheduler_steps": scheduler_steps,
        "pods_logprob_temperature": cfg.optim.logprob_temperature,
        "pods_keep_groups": cfg.optim.aggregation == "token_group",
        "pods_fast_decode": cfg.rollout.fast_decode,
        # Each prompt group under its own seed: a run's rollouts do not depend on how many processes or
        # prompts per generate() call produced them (the library's default is TRL's one call per round).
        "pods_seeded_generation": True,
        "pods_strict_rewards": True,  # the run's reward functions score every completion: a NaN is a bug
        **group_filter_kwargs(cfg),
    }


def group_filter_kwargs(cfg: TrainConfig) -> dict[str, Any]:
    """The trainer keywords of ``rollout.filter`` and the GRESO skip; none while they are off (the trainer's
    defaults), so a config that leaves them alone builds exactly the trainer it always did."""
    ro, out = cfg.rollout, {}
    if ro.filter == "zero_std":
        out["pods_filter_zero_std"] = True
    elif ro.filter == "refill":
        out.update(pods_filter_zero_std=True, pods_refill_max_rounds=ro.refill_max_rounds)
    if ro.skip_after:
        out.update(pods_skip_after=ro.skip_after, pods_skip_prob=ro.skip_prob)
    return out
