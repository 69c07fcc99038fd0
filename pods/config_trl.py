"""The ``trl:`` pass-through section of the config: the tables of GRPOConfig fields the package owns.

``trl`` is a pass-through mapping of extra TRL ``GRPOConfig`` fields (``trl.report_to=[tensorboard]``):
fields the package sets from its own options are refused naming the option (:data:`TRL_CONTROLLED`,
:data:`TRL_FIXED`), unknown ones at load time with the closest GRPOConfig field (:func:`check_trl_section`,
which imports TRL through :mod:`pods.trainer`); it is not part of run names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pods.config_base import ConfigError, _show

if TYPE_CHECKING:
    from pods.config_schema import TrainConfig


# The `trl:` pass-through section: any GRPOConfig field, except those the package sets itself.

# GRPOConfig fields that pods.trainer.build_grpo_config sets from a pods option: field -> option.
TRL_CONTROLLED: dict[str, str] = {
    "output_dir": "out_dir",
    "per_device_train_batch_size": "rollout.prompts_per_step",
    "generation_batch_size": "rollout.prompts_per_step",
    "num_generations": "rollout.n",
    "gradient_accumulation_steps": "optim.grad_accum",
    "steps_per_generation": "optim.grad_accum",
    "max_steps": "budget.max_steps",
    "num_train_epochs": "budget.max_steps",
    "temperature": "rollout.temperature",
    "top_p": "rollout.top_p",
    "top_k": "rollout.top_k",
    "vllm_importance_sampling_correction": "rollout.vllm_is_correction",
    "max_completion_length": "rollout.max_completion_length",
    "use_vllm": "rollout.backend",
    "vllm_gpu_memory_utilization": "rollout.vllm_gpu_memory_utilization",
    "loss_type": "optim.aggregation",
    "beta": "optim.beta",
    "epsilon": "optim.epsilon",
    "epsilon_high": "optim.epsilon_high",
    "learning_rate": "optim.lr",
    "lr_scheduler_type": "optim.scheduler",
    "warmup_steps": "optim.warmup_ratio",
    "weight_decay": "optim.weight_decay",
    "adam_beta1": "optim.adam_beta1",
    "adam_beta2": "optim.adam_beta2",
    "max_grad_norm": "optim.max_grad_norm",
    "optim": "optim.optimizer",
    "bf16": "policy.dtype",
    "fp16": "policy.dtype",
    "activation_checkpointing": "policy.gradient_checkpointing",
    "gradient_checkpointing": "policy.gradient_checkpointing",
    "use_cpu": "hardware.device",
    "seed": "seed",
    "save_steps": "checkpoint.every_steps",
    "reward_weights": "task.reward",
}
# GRPOConfig fields build_grpo_config fixes: field -> (value, why). A `trl:` entry may only repeat the value.
TRL_FIXED: dict[str, tuple[Any, str]] = {
    "num_iterations": (1, "PODS runs one update per generation, as every setting of the paper"),
    "vllm_mode": ("colocate", "the run colocates vLLM with training (rollout.backend=vllm)"),
    "scale_rewards": ("group", "PODS recomputes the advantages itself (rollout.normalize)"),
    "use_bias_correction_kl": (False, "the paper adds the plain k3 KL (optim.beta)"),
    "mask_truncated_completions": (False, "truncated completions are scored like any other (the paper)"),
    "logging_steps": (1, "metrics.jsonl has one line per optimizer step"),
    "save_strategy": ("steps", "checkpoints are the run's resume state (checkpoint.every_steps)"),
    "save_total_limit": (None, "the run prunes checkpoints itself once their resume state is written"),
    "remove_unused_columns": (False, "the reward functions read the dataset's columns"),
    "shuffle_dataset": (True, "the run's prompt order is seeded by seed"),
    # not set by build_grpo_config (TRL's default is the value), but the run relies on them:
    "logging_strategy": ("steps", "metrics.jsonl has one line per optimizer step"),
    "eval_strategy": ("no", "the run evaluates on its own grid (eval.every_s / eval.every_steps)"),
    "save_only_model": (False, "resuming needs the optimizer and RNG state"),
    "ignore_data_skip": (False, "a resumed run replays the uninterrupted prompt order"),
}
# Fields build_grpo_config sets to a default that `trl:` may change (tests check the three tables cover it).
TRL_OPEN = ("report_to", "disable_tqdm", "log_completions", "dataloader_num_workers")


def check_trl_keys(section: Mapping[str, Any]) -> None:
    """Refuse `trl:` fields the package sets itself (torch-free); unknown names are checked at load time."""
    for name, value in section.items():
        key = f"trl.{name}"
        if name in TRL_CONTROLLED:
            option = TRL_CONTROLLED[name]
            raise ConfigError(
                key,
                value,
                f"is set by the package from its option {option}",
                f"set {option} instead and remove {key}",
            )
        if name in TRL_FIXED:
            fixed, why = TRL_FIXED[name]
            if value != fixed or type(value) is not type(fixed):
                raise ConfigError(key, value, f"is fixed to {_show(fixed)} by the package ({why})", f"remove {key}")
        if not name.isidentifier():
            raise ConfigError(
                key, value, "is not a field name", "write trl: {FIELD: VALUE} with trl.GRPOConfig field names"
            )


def check_trl_section(cfg: TrainConfig) -> None:
    """The `trl:` section builds a valid GRPOConfig (imports TRL; only when the section is not empty)."""
    if cfg.trl:
        from pods.trainer import check_trl_passthrough  # TRL is heavy: only for configs that use the section

        check_trl_passthrough(cfg.trl)
