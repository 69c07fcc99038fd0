"""The trainer's no-grad forwards on the kept rows: reference and old log-probs, the vLLM importance ratio.

Part of :mod:`pods.trainer`; :class:`KeptForwards` is a base of :class:`pods.trainer.hook.PODSGRPOTrainer`.
TRL runs these forwards over all n rollouts while it scores a round; the hook switches them off there
(``_pods_score_round``) and runs them here on the m kept rows of each group.
"""

from __future__ import annotations

import torch
from trl.models.utils import disable_gradient_checkpointing
from trl.trainer.utils import use_adapter

from pods.trainer.compat import TRLCompatError

__all__ = ["KeptForwards"]


class KeptForwards:
    """The kept-row forwards of :class:`pods.trainer.hook.PODSGRPOTrainer` (a mixin of it)."""

    def _pods_kept_forwards(self, kept: dict) -> None:
        """The no-grad forwards TRL would have run over all n rollouts, on the kept rows only (in place).

        Reference log-probs when ``beta != 0`` (as the authors' code: m rows per group); the current
        policy's (old) log-probs when these rows will be trained on after a later optimizer step
        (``gradient_accumulation_steps`` not a multiple of ``steps_per_generation``, TRL's rule) or for
        the vLLM importance-sampling correction, and then TRL's truncated/masked ratio
        exp(logp_train - logp_vLLM), per token or per sequence as ``vllm_importance_sampling_mode`` says.
        """
        use_is = bool(self.use_vllm and self.vllm_importance_sampling_correction)
        off_policy = self.args.gradient_accumulation_steps % (self.args.steps_per_generation * self.num_iterations) != 0
        if self.beta == 0.0 and not (use_is or off_policy):
            return
        ids = torch.cat([kept["prompt_ids"], kept["completion_ids"]], dim=1)
        mask = torch.cat([kept["prompt_mask"], kept["completion_mask"]], dim=1)
        width = kept["completion_ids"].size(1)
        chunk = self.args.per_device_train_batch_size
        with torch.no_grad(), disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs):
            if use_is or off_policy:
                old_logps, _, _ = self._get_per_token_logps_and_entropies(self.model, ids, mask, width, chunk)
                kept["old_per_token_logps"] = old_logps
                if use_is:
                    kept["importance_sampling_ratio"] = self._pods_is_ratio(kept, old_logps)
            if self.beta != 0.0:
                if self.ref_model is not None:
                    ref, _, _ = self._get_per_token_logps_and_entropies(self.ref_model, ids, mask, width, chunk)
                else:  # a PEFT policy: the base (adapters off) or an initial "ref" adapter is the reference
                    unwrapped = self.accelerator.unwrap_model(self.model)
                    name = "ref" if "ref" in unwrapped.peft_config else None
                    with use_adapter(unwrapped, adapter_name=name):
                        ref, _, _ = self._get_per_token_logps_and_entropies(self.model, ids, mask, width, chunk)
                kept["ref_per_token_logps"] = ref

    def _pods_is_ratio(self, kept: dict, old_logps: torch.Tensor) -> torch.Tensor:
        """TRL 1.16's vLLM importance-sampling ratio on the kept rows (its four modes)."""
        sampling = kept.get("sampling_per_token_logps")
        if sampling is None:
            raise TRLCompatError("vLLM returned no sampling log-probs; turn rollout.vllm_is_correction off")
        loss_mask = (
            kept["completion_mask"] if kept.get("tool_mask") is None else kept["completion_mask"] * kept["tool_mask"]
        )
        diff = torch.nan_to_num((old_logps - sampling) * loss_mask, nan=0.0)  # unscored tokens: ratio 1
        mode = self.vllm_importance_sampling_mode
        if mode not in ("sequence_mask", "sequence_truncate", "token_mask", "token_truncate"):
            raise ValueError(f"unknown vllm_importance_sampling_mode {mode!r}")
        ratio = torch.exp(diff.sum(dim=-1, keepdim=True) if mode.startswith("sequence") else diff)
        lo, hi = self.vllm_importance_sampling_clip_min, self.vllm_importance_sampling_clip_max
        if mode.endswith("truncate"):
            return torch.clamp(ratio, min=lo, max=hi)
        lo = -float("inf") if lo is None else lo
        hi = float("inf") if hi is None else hi
        return ratio.masked_fill((ratio < lo) | (ratio > hi), 0.0)
