"""The ``trl:`` pass-through section of the config: the tables of GRPOConfig fields the package owns.

``trl`` is a pass-through mapping of extra TRL ``GRPOConfig`` fields (``trl.report_to=[tensorboard]``):
fields the package sets from its own options are refused naming the option (:data:`TRL_CONTROLLED`,
:data:`TRL_FIXED`), unknown ones at load time with the closest GRPOConfig field (:func:`check_trl_section`,
which imports TRL only then); it is not part of run names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pods_repro.config.base import ConfigError, _show

# The `trl:` pass-through section: any GRPOConfig field, except those the package sets itself.

# GRPOConfig fields that pods_repro.trainer.build_grpo_config sets from a pods option: field -> option.
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


def check_trl_section(cfg: Any) -> None:
    """The `trl:` section of a :class:`~pods_repro.config.schema.TrainConfig` builds a valid GRPOConfig (imports
    TRL; only when the section is not empty). Typed ``Any``: the schema imports this module, not the reverse."""
    if cfg.trl:
        check_trl_passthrough(cfg.trl)


def check_trl_passthrough(section: dict[str, Any]) -> None:
    """Raise ConfigError for a `trl:` field GRPOConfig does not have or a value it refuses.

    Builds a throw-away GRPOConfig with the fields on top of CPU-safe defaults, so TRL's and HF's own
    checks run; ``report_to`` names must be installed integrations.
    """
    import dataclasses
    import difflib
    import tempfile

    import trl  # TRL is heavy: only for configs that use the section
    from trl import GRPOConfig

    check_trl_keys(section)
    names = [f.name for f in dataclasses.fields(GRPOConfig) if f.init]
    for name, value in section.items():
        if name not in names:
            close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
            hint = f"did you mean trl.{close[0]}?" if close else "see the fields of trl.GRPOConfig (TRL docs)"
            raise ConfigError(f"trl.{name}", value, f"is not a field of trl.GRPOConfig (trl {trl.__version__})", hint)
    _check_report_to(section.get("report_to"))
    with tempfile.TemporaryDirectory() as tmp:
        try:
            GRPOConfig(
                **{"output_dir": tmp, "use_cpu": True, "bf16": False, "activation_checkpointing": False, **section}
            )
        except (TypeError, ValueError) as e:
            keys = ", ".join(f"trl.{k}" for k in section)
            raise ConfigError(
                "trl",
                section,
                f"TRL refuses these fields ({keys}): {' '.join(str(e).split())}",
                "fix the value TRL names",
            ) from None


def _check_report_to(report_to: Any) -> None:
    from transformers.integrations import get_available_reporting_integrations
    from transformers.integrations.integration_utils import INTEGRATION_TO_CALLBACK

    if report_to is None or report_to in ("none", "all"):
        return
    wanted = [report_to] if isinstance(report_to, str) else list(report_to)
    available = set(get_available_reporting_integrations())
    for name in wanted:
        if name not in INTEGRATION_TO_CALLBACK:
            raise ConfigError(
                "trl.report_to",
                report_to,
                f"{name!r} is not a reporting integration of transformers",
                f"use some of {', '.join(sorted(INTEGRATION_TO_CALLBACK))}",
            )
        if name not in available:
            pkg = {"tensorboard": "tensorboard", "wandb": "wandb", "trackio": "trackio"}.get(name, name)
            raise ConfigError(
                "trl.report_to", report_to, f"{name!r} is not installed", f"pip install {pkg}, or remove {name!r}"
            )
