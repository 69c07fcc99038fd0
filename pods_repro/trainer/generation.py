"""The trainer's generation helpers: sampling with :mod:`pods_repro.fastgen`, and the evaluation generator.

Part of :mod:`pods.trainer`; :class:`GenerationHelpers` is a base of :class:`pods.trainer.hook.PODSGRPOTrainer`,
whose ``_generate_single_turn`` (a TRL hook, kept on the class) calls them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from trl.models import unwrap_model_for_generation

from pods_repro import fastgen
from pods_repro.evaluation import Generator, HFGenerator, VLLMGenerator, left_pad

__all__ = ["GenerationHelpers"]


class GenerationHelpers:
    """Fast decoding and the evaluation generator of :class:`pods.trainer.hook.PODSGRPOTrainer` (a mixin of it)."""

    def _fast_decode_model(self) -> Any:
        """The unwrapped policy when :mod:`pods_repro.fastgen` may sample for it (``pods_fast_decode``), else None."""
        if not self.pods_fast_decode or self.is_deepspeed_enabled or self.is_fsdp_enabled:
            return None
        model = self.accelerator.unwrap_model(self.model)
        return model if fastgen.unsupported_reason(model, self.generation_config) is None else None

    def _fast_generate(self, model: Any, prompt_ids: list[list[int]], seeds: list[int] | None) -> list[list[int]]:
        """``_generate_single_turn`` in one batched :func:`pods_repro.fastgen.sample` call.

        With ``seeds``, each group's tokens are those of ``torch.manual_seed(seed); generate(group)``
        (tests/trainer/test_fastgen.py); without, those of one ``generate`` call over all rows. Completions keep
        their first EOS and lose what follows, as TRL's regular path returns them.
        """
        ids, mask, width = left_pad(prompt_ids, self._tokenizer.pad_token_id)
        device = self.accelerator.device
        out = fastgen.sample(model, ids.to(device), mask.to(device), self.generation_config, group_seeds=seeds)
        eos = set(self.eos_token_ids)
        completions = []
        for row in out[:, width:].tolist():
            cut = next((k for k, t in enumerate(row) if t in eos), None)
            completions.append(row[: cut + 1] if cut is not None else row)
        return completions

    @contextlib.contextmanager
    def eval_generator(self) -> Iterator[Generator]:
        """A :class:`pods_repro.evaluation.Generator` sampling from the current policy, in eval mode.

        With vLLM, TRL's colocated engine gets the current weights first (once per optimizer step, as
        TRL itself does); with HF generation, the model is unwrapped from DDP/DeepSpeed. Training mode
        is restored on exit.
        """
        model = self.model
        was_training = model.training
        model.eval()
        try:
            if self.use_vllm:
                if self.state.global_step != getattr(self, "_last_loaded_step", -1):
                    self.vllm_generation.sync_weights()
                    self._last_loaded_step = self.state.global_step
                yield VLLMGenerator(self.vllm_generation.llm, self.processing_class, top_p=1.0, top_k=self.top_k)
            else:
                with unwrap_model_for_generation(
                    self.model_wrapped,
                    self.accelerator,
                    gradient_checkpointing_kwargs=self.args.gradient_checkpointing_kwargs,
                ) as unwrapped:
                    yield HFGenerator(
                        unwrapped,
                        self.processing_class,
                        top_p=1.0,
                        top_k=self.top_k,
                        fast_decode=self.pods_fast_decode and not (self.is_deepspeed_enabled or self.is_fsdp_enabled),
                    )
        finally:
            if was_training:
                model.train()
