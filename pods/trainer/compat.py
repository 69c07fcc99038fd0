"""The trainer's guard on TRL/HF internals: what the PODS hook relies on, and the check that it still holds.

Part of :mod:`pods.trainer`, the one place that touches TRL or HF Trainer internals. Every TRL/HF private
the hook overrides, calls or reads is listed here (``TRL_HOOKS``, ``TRL_SOURCE_FACTS``,
``HF_PRIVATE_METHODS``, ``TRL_INIT_ATTRS``, ``REPEAT_SAMPLER_PARAMS``, ...); :func:`check_trl_compat`
fails loudly, naming the internal that moved, when a TRL upgrade breaks one of them.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from trl import GRPOTrainer
from trl.models import unwrap_model_for_generation
from trl.trainer import grpo_trainer as _trl_grpo
from trl.trainer.utils import RepeatSampler, add_fused_lm_head

__all__ = ["TRLCompatError", "check_trl_compat"]

# --------------------------------------------------------------------------------------------
# The TRL internals the hook relies on. check_trl_compat() verifies them at construction time and
# tests/trainer/test_trl_hook.py at test time; a TRL upgrade that moves one fails with its name.
# --------------------------------------------------------------------------------------------
TRL_HOOKS: dict[str, tuple[str, ...]] = {
    "_calculate_rewards": ("self", "inputs", "prompts", "completions", "completion_ids_list"),
    "_generate_and_score_completions": ("self", "inputs"),
    "_generate": ("self", "prompts"),
    "_generate_single_turn": (
        "self",
        "prompt_ids",
        "images",
        "multimodal_fields",
        "num_generations",
        "has_tool_images",
    ),
    "_compute_loss": ("self", "model", "inputs"),
    "_get_train_sampler": ("self", "dataset"),
    "_prepare_inputs": ("self", "generation_batch"),
    "_get_per_token_logps_and_entropies": ("self", "model", "input_ids", "attention_mask", "logits_to_keep"),
}
# Fidelity hooks (see the module docstring): what TRL 1.16's source must still say for them to work.
# (function, text its source must contain, why the hook needs it)
TRL_SOURCE_FACTS: tuple[tuple[str, str, str], ...] = (
    ("_generate_and_score_completions", "if self.beta != 0.0:", "reference log-probs are gated on self.beta"),
    (
        "_generate_and_score_completions",
        "self.use_vllm and self.vllm_importance_sampling_correction",
        "old log-probs / IS ratio are gated on self.vllm_importance_sampling_correction",
    ),
    (
        "_generate_and_score_completions",
        "if self.args.gradient_accumulation_steps % generate_every != 0",
        "off-policy old log-probs are gated on args.steps_per_generation, swapped out while TRL scores",
    ),
    (
        "_generate_and_score_completions",
        "self.reward_weights.to(device).unsqueeze(0)).nansum(dim=1)",
        "a reward function's None for a row counts as nothing in the summed reward (PODS sums the same way)",
    ),
    ("__init__", "temperature=self.temperature", "the fused LM head bakes the sampling temperature in at init"),
    ("_prepare_inputs", "shuffle_sequence_dict(generation_batch)", "rows are shuffled across micro-batches there"),
    (
        "_generate_and_score_completions",
        'self._logs["advantages"].extend(all_process_advantages.tolist())',
        "the completions table logs all n advantages of a round last, which the hook replaces with the trained ones",
    ),
    (
        "_compute_loss",
        "loss = ((per_token_loss * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()",
        "the grpo loss is a mean over rows, rescaled to the live rows by pods_filter_zero_std",
    ),
)
ADD_FUSED_LM_HEAD_PARAMS = ("model", "temperature", "cast_lm_head_to_fp32", "outputs")
# Keys of the dict returned by _generate_and_score_completions: per-row (cut to the kept rows) and
# batch-level scalars (recomputed). Any other key is an error: we would not know how to cut it.
ROW_KEYS = tuple(
    "prompt_ids prompt_mask completion_ids completion_mask advantages old_per_token_logps importance_sampling_ratio "
    "sampling_per_token_logps ref_per_token_logps tool_mask".split()
)
SCALAR_KEYS = ("num_items_in_batch",)
# TRL's attributes read by the hook.
# Private methods of HF's Trainer that the PODS code calls (not overrides).
HF_PRIVATE_METHODS: dict[str, tuple[str, ...]] = {
    "_load_from_checkpoint": ("self", "resume_from_checkpoint"),
    "_save_checkpoint": ("self", "model", "trial"),  # wrapped to name a full disk
    "_save": ("self", "output_dir", "state_dict"),  # wrapped to write the PODS model card first
}
# Attributes GRPOTrainer.__init__ sets that the hook reads (vllm_generation and _last_loaded_step only
# with use_vllm=True); checked in the source of __init__ and, after construction, on the instance.
TRL_INIT_ATTRS = tuple(
    "num_generations reward_weights reward_func_names use_vllm use_transformers_continuous_batching "
    "multi_objective_aggregation shuffle_dataset num_iterations _metrics vllm_generation _last_loaded_step "
    "beta ref_model top_k vllm_importance_sampling_correction vllm_importance_sampling_mode "
    "vllm_importance_sampling_clip_min vllm_importance_sampling_clip_max _logs loss_type".split()
)
VLLM_ONLY_ATTRS = ("vllm_generation", "_last_loaded_step")
# Attributes set outside GRPOTrainer.__init__ (HF Trainer), checked on the instance only.
TRL_ATTRS = ("accelerator", "model_wrapped", "processing_class")
# trl.trainer.utils.RepeatSampler.__init__ (EpochRepeatSampler passes these positionally) and the
# parameter of trl.models.unwrap_model_for_generation that eval_generator passes by name.
REPEAT_SAMPLER_PARAMS = ("self", "data_source", "mini_repeat_count", "batch_size", "repeat_count", "shuffle", "seed")
UNWRAP_PARAMS = ("model", "accelerator", "gradient_checkpointing_kwargs")


class TRLCompatError(RuntimeError):
    """The installed TRL no longer matches what the PODS hook was written against (TRL 1.16.0)."""


def check_trl_compat(
    cls: type = GRPOTrainer, sampler_cls: type = RepeatSampler, unwrap: Any = unwrap_model_for_generation
) -> None:
    """Raise :class:`TRLCompatError` naming the first TRL/HF internal whose name or signature moved.

    Checks the methods the hook overrides (``TRL_HOOKS``) or calls (``HF_PRIVATE_METHODS``), the
    attributes ``cls.__init__`` must set (``TRL_INIT_ATTRS``), ``RepeatSampler``'s constructor and
    ``unwrap_model_for_generation``'s parameters.
    """
    for name, expected in {**TRL_HOOKS, **HF_PRIVATE_METHODS}.items():
        owner = "trl.GRPOTrainer" if name in TRL_HOOKS else "transformers.Trainer"
        fn = getattr(cls, name, None)
        if fn is None:
            raise TRLCompatError(
                f"trl.GRPOTrainer.{name} no longer exists (trl {_trl_version()}); the PODS hook in pods/trainer/ "
                f"uses it ({owner}.{name}). Pin trl==1.16.0 or port pods.PODSGRPOTrainer to the new TRL."
            )
        _check_params(f"trl.GRPOTrainer.{name}", fn, expected)
    init_src = _source(cls.__init__)
    if init_src is not None:
        for attr in TRL_INIT_ATTRS:
            if not re.search(rf"self\.{re.escape(attr)}\s*(:[^=\n]*)?=", init_src):
                raise TRLCompatError(
                    f"trl.GRPOTrainer.__init__ no longer sets self.{attr} (trl {_trl_version()}); the PODS hook in "
                    "pods/trainer/hook.py reads it. Pin trl==1.16.0 or port pods.PODSGRPOTrainer."
                )
    for name, text, why in TRL_SOURCE_FACTS:
        src = _source(getattr(cls, name, None))
        if src is not None and text not in src:
            raise TRLCompatError(
                f"trl.GRPOTrainer.{name} no longer contains {text!r} (trl {_trl_version()}): {why}, and the PODS "
                "fidelity hooks in pods/trainer/hook.py rely on it. Pin trl==1.16.0 or port pods.PODSGRPOTrainer."
            )
    if not callable(getattr(_trl_grpo, "shuffle_sequence_dict", None)):
        raise TRLCompatError(
            f"trl.trainer.grpo_trainer.shuffle_sequence_dict is gone (trl {_trl_version()}); "
            "optim.aggregation=token_group switches it off. Pin trl==1.16.0 or port pods.PODSGRPOTrainer._prepare_inputs."
        )
    fused_params = tuple(inspect.signature(add_fused_lm_head).parameters)
    if fused_params[: len(ADD_FUSED_LM_HEAD_PARAMS)] != ADD_FUSED_LM_HEAD_PARAMS:
        raise TRLCompatError(
            f"trl.trainer.utils.add_fused_lm_head changed signature (trl {_trl_version()}): expected "
            f"{ADD_FUSED_LM_HEAD_PARAMS}, found {fused_params}; optim.logprob_temperature=none re-installs the "
            "head with it. Pin trl==1.16.0 or port pods.trainer.reinstall_lm_head."
        )
    _check_params("trl.trainer.utils.RepeatSampler.__init__", sampler_cls.__init__, REPEAT_SAMPLER_PARAMS)
    params = tuple(inspect.signature(unwrap).parameters)
    missing = [p for p in UNWRAP_PARAMS if p not in params]
    if missing:
        raise TRLCompatError(
            f"trl.models.unwrap_model_for_generation lost parameters {missing} (trl {_trl_version()}); "
            "pods.PODSGRPOTrainer.eval_generator passes them. Pin trl==1.16.0 or port it."
        )


def _check_params(qualname: str, fn: Any, expected: tuple[str, ...]) -> None:
    params = tuple(inspect.signature(fn).parameters)
    if params[: len(expected)] != expected:
        name = qualname.rsplit(".", 1)[-1]
        raise TRLCompatError(
            f"{qualname} changed signature (trl {_trl_version()}): expected parameters {expected}, found "
            f"{params}. Pin trl==1.16.0 or port pods.PODSGRPOTrainer.{name}."
        )


def _source(fn: Any) -> str | None:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):  # a builtin or C-level __init__: nothing to read
        return None


def _trl_version() -> str:
    import trl

    return trl.__version__
