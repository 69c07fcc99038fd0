"""The PODS hook: :class:`PODSGRPOTrainer`, TRL's ``GRPOTrainer`` with down-sampling between rewards and advantages.

Part of :mod:`pods.trainer` (the one place that touches TRL or HF Trainer internals); how the hook
differs from vanilla GRPO, and why, is that package's docstring.
"""

from __future__ import annotations

import copy
import os
import re
import time
import warnings
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

import torch
from trl import GRPOTrainer
from trl.trainer import grpo_trainer as _trl_grpo
from trl.trainer.utils import add_fused_lm_head

from pods.base import mix_seed, writing
from pods.grpo import pods_advantages
from pods.selectors import select, uses_lengths
from pods.trainer.batch import (
    EpochRepeatSampler,
    check_finite_rewards,
    checked_reward_func,
    downsample_rows,
    local_kept_rows,
    sync_device,
)
from pods.trainer.card import _config_model_id, pods_model_card
from pods.trainer.compat import (
    TRL_ATTRS,
    TRL_INIT_ATTRS,
    VLLM_ONLY_ATTRS,
    TRLCompatError,
    _trl_version,
    check_trl_compat,
)
from pods.trainer.filters import SKIP_MAX_DRAWS as SKIP_MAX_DRAWS
from pods.trainer.filters import GroupFilters, _prompt_key, check_filter_support
from pods.trainer.forwards import KeptForwards
from pods.trainer.options import _check_group_filters, _check_pods_geometry, _pods_option, check_bool
from pods.trainer.round_logs import DEBUG_ENV, RoundLogs

__all__ = ["PODSGRPOTrainer", "reinstall_lm_head"]

ADV_EPS = 1e-4  # std epsilon of the authors' code and of TRL
LIVE_KEY = "pods_live"  # per kept row of the batch: 1.0 unless pods_filter_zero_std dropped its group
# TRL losses that average over the rows of a micro-batch (a masked row still counts in the mean): their loss
# is rescaled to the mean over the live rows when pods_filter_zero_std masks some out (_compute_loss).
ROW_MEAN_LOSSES = ("grpo", "sapo", "dr_grpo", "luspo")
STEP_COUNTS = ("gen_rollouts", "gen_tokens", "trained_rollouts", "trained_tokens", "refill_rounds", "skipped_prompts")
"""Per optimizer step (:attr:`PODSGRPOTrainer.pods_step_counts`): rollouts and completion tokens generated
(every round, refill included) and trained on (kept rows of the groups that enter the update), extra
generation rounds of the refill filter, prompts skipped before generation."""


class PODSGRPOTrainer(GroupFilters, KeptForwards, RoundLogs, GRPOTrainer):
    """TRL's GRPOTrainer with PODS down-sampling between the rewards and the advantages.

    A drop-in for ``GRPOTrainer``: every ``GRPOConfig`` works as it does in TRL (``max_steps`` or
    ``num_train_epochs``, ``gradient_accumulation_steps``, ``report_to``, ...), with
    ``num_generations`` = n rollouts generated per prompt, of which m are kept for the update. The
    PODS parameters come from a :class:`PODSConfig` (``args=PODSConfig(pods_m=4, ...)``) or from the
    keyword arguments below (a keyword given in both places must agree).

    The keywords (``pods_m``, ``pods_rule``, ``pods_normalize``, ``pods_ga_same_prompt``, the filters, ...)
    are documented once, in docs/trl.md ("Config fields"); everything else goes to ``GRPOTrainer``.
    A misspelt ``pods_*`` keyword is refused naming the closest valid one.

    Batch geometry: ``per_device_train_batch_size`` counts *generated* rows (P x n per process and
    micro-batch, as in TRL); after down-sampling a micro-batch holds P x m rows.
    """

    _tag_names = ["trl", "grpo", "pods"]
    _name = "GRPO-PODS"
    reads_pods_fields = True  # PODSConfig refuses to configure a Trainer without this mark (options.py)

    def __init__(
        self,
        *args: Any,
        pods_m: int | None = None,
        pods_rule: str | None = None,
        pods_normalize: str | None = None,
        pods_ga_same_prompt: bool | None = None,
        pods_seed: int | None = None,
        pods_max_steps: int | None = None,
        pods_scheduler_steps: int | None = None,
        pods_seeded_generation: bool | None = None,
        pods_base_model: str | None = None,
        pods_grad_accum: int | None = None,
        pods_logprob_temperature: str = "sampling",
        pods_keep_groups: bool = False,
        pods_strict_rewards: bool = False,
        pods_filter_zero_std: bool | None = None,
        pods_refill_max_rounds: int | None = None,
        pods_skip_after: int | None = None,
        pods_skip_prob: float | None = None,
        **kwargs: Any,
    ):
        check_trl_compat()
        _refuse_unknown_pods_keywords(kwargs)
        for name, value in (("pods_ga_same_prompt", pods_ga_same_prompt), ("pods_seeded_generation",
                            pods_seeded_generation), ("pods_filter_zero_std", pods_filter_zero_std)):  # fmt: skip
            check_bool("pods.PODSGRPOTrainer", name, value, none_ok=True)
        for name, value in (("pods_keep_groups", pods_keep_groups), ("pods_strict_rewards", pods_strict_rewards)):
            check_bool("pods.PODSGRPOTrainer", name, value)
        _quiet_trl_gradient_checkpointing_warning()
        if pods_logprob_temperature not in ("sampling", "none"):
            raise ValueError(
                f"pods_logprob_temperature={pods_logprob_temperature!r}: use 'sampling' (TRL: log-probs of the "
                "logits divided by the sampling temperature) or 'none' (raw logits, the authors' (a)-(d) code)"
            )
        self.pods_logprob_temperature = pods_logprob_temperature
        self.pods_keep_groups = bool(pods_keep_groups)
        self.pods_seeded_generation = False  # resolved below, once args is known
        self.pods_strict_rewards = bool(pods_strict_rewards)
        self.pods_scheduler_steps = pods_scheduler_steps
        self.pods_base_model = pods_base_model
        _init_run_state(self)
        super().__init__(*args, **kwargs)
        # A reward function's output is checked where it returns, naming it (TRL's torch.tensor(...) would not).
        self.reward_funcs = [
            f if isinstance(f, torch.nn.Module) or not callable(f) else checked_reward_func(f, name)
            for f, name in zip(self.reward_funcs, self.reward_func_names, strict=True)
        ]
        _check_trl_attrs(self)
        a = self.args
        ga = a.gradient_accumulation_steps
        if pods_grad_accum is not None:
            if int(pods_grad_accum) != ga:
                raise ValueError(
                    f"pods_grad_accum={pods_grad_accum} differs from args.gradient_accumulation_steps={ga}; drop "
                    "pods_grad_accum (legacy) and pass pods_ga_same_prompt=True for the paper's GRPO-GA grouping"
                )
            pods_ga_same_prompt = True if pods_ga_same_prompt is None else pods_ga_same_prompt
        self.pods_m = _pods_option(a, "pods_m", pods_m, None)
        self.pods_rule = _pods_option(a, "pods_rule", pods_rule, "max_variance")
        self.pods_normalize = _pods_option(a, "pods_normalize", pods_normalize, "after")
        self.pods_ga_same_prompt = bool(_pods_option(a, "pods_ga_same_prompt", pods_ga_same_prompt, False))
        self.pods_seeded_generation = bool(_pods_option(a, "pods_seeded_generation", pods_seeded_generation, False))
        self.pods_filter_zero_std = bool(_pods_option(a, "pods_filter_zero_std", pods_filter_zero_std, False))
        self.pods_refill_max_rounds = _pods_option(a, "pods_refill_max_rounds", pods_refill_max_rounds, 0)
        self.pods_skip_after = _pods_option(a, "pods_skip_after", pods_skip_after, 0)
        self.pods_skip_prob = _pods_option(a, "pods_skip_prob", pods_skip_prob, 0.5)
        _check_group_filters(
            "pods.PODSGRPOTrainer", self.pods_refill_max_rounds, self.pods_skip_after, self.pods_skip_prob
        )
        check_filter_support(self)
        if self.pods_refill_max_rounds:
            self.pods_filter_zero_std = True  # a slot still uninformative after the last round leaves the update
        self.pods_seed = int(a.seed if pods_seed is None else pods_seed)
        # groups of n rollouts of the same prompt in one generation round (GA in GRPO-GA mode, else 1)
        self.pods_grad_accum = ga if self.pods_ga_same_prompt else 1
        max_steps = pods_max_steps if pods_max_steps is not None else a.max_steps
        self.pods_max_steps = int(max_steps) if max_steps is not None and max_steps > 0 else None
        _check_pods_geometry(self)
        if self.pods_logprob_temperature == "none":
            reinstall_lm_head(self, temperature=1.0)

    def create_scheduler(self, num_training_steps: int, optimizer=None):
        # The LR schedule may span a different horizon than the step cap (see step_plan).
        return super().create_scheduler(self.pods_scheduler_steps or num_training_steps, optimizer)

    # -- data: each prompt repeated n times (n x GA in GRPO-GA mode) per generation round -----
    def _get_train_sampler(self, dataset=None):
        dataset = self.train_dataset if dataset is None else dataset
        rows_per_prompt = self.num_generations * self.pods_grad_accum
        prompts = self.args.generation_batch_size // rows_per_prompt  # distinct prompts per round, all processes
        # HF fetches GA dataloader batches of generation_batch_size / num_processes rows per process per
        # optimizer step (TRL repeats each generation batch steps_per_generation times in the sampler).
        # TRL's grouping: TRL's sampler (one data epoch per pass, TRL's permutations), so at m == n the trainer
        # replays trl.GRPOTrainer (HF draws from the global RNG at every pass, which the sampling then sees). The
        # paper's GRPO-GA grouping, which every pods train run uses, streams the whole run in one pass, in the
        # order its runs were made with.
        trl_order = not self.pods_ga_same_prompt
        total_rows = None
        if self.pods_max_steps is not None and not trl_order:
            total_rows = self.pods_max_steps * self.args.gradient_accumulation_steps * self.args.generation_batch_size
        self._pods_sampler = EpochRepeatSampler(
            dataset,
            mini_repeat_count=rows_per_prompt,
            batch_size=prompts,
            repeat_count=self.num_iterations * self.args.steps_per_generation,
            shuffle=self.shuffle_dataset,
            seed=self.args.seed,
            total_rows=total_rows,
            trl_order=trl_order,
        )
        return self._pods_sampler

    # -- generation: timed; with pods_seeded_generation, each prompt group under its own seed --
    def _generate(self, prompts):
        sync_device(self.accelerator.device)
        t0 = time.perf_counter()
        out = super()._generate(prompts)
        sync_device(self.accelerator.device)
        self.pods_timing["gen_s"] += time.perf_counter() - t0
        return out

    def _fast_decode_model(self) -> Any:
        """A model a faster sampler may decode for (None: TRL's ``generate``). A subclass with such a sampler
        overrides this and :meth:`_fast_generate`; its tokens must equal ``generate``'s under the same seed."""
        return None

    def _fast_generate(self, model: Any, prompt_ids: list[list[int]], seeds: list[int] | None) -> list[list[int]]:
        raise NotImplementedError("a subclass that returns a model from _fast_decode_model samples here")

    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        rows = self.num_generations * self.pods_grad_accum
        plain = self.model.training and not (
            self.use_vllm or self.use_transformers_continuous_batching or images is not None or multimodal_fields
        )
        fast = self._fast_decode_model() if plain else None
        if not (plain and self.pods_seeded_generation and len(prompt_ids) % rows == 0):
            # TRL's way: one generate() call for the whole round (draws from the global RNG).
            if fast is not None:
                return self._fast_generate(fast, prompt_ids, None), None
            return super()._generate_single_turn(
                prompt_ids, images, multimodal_fields, num_generations, has_tool_images
            )
        groups = len(prompt_ids) // rows
        offset = self.accelerator.process_index * groups  # global index of this process's first prompt
        seeds = [mix_seed(self.pods_seed, self.state.global_step, offset + g) for g in range(groups)]
        if self._pods_round:  # a refill round: its own seeds (round 0 keeps the seeds every run had)
            seeds = [mix_seed(seed, self._pods_round, 0x2EF) for seed in seeds]
        if fast is not None:
            return self._fast_generate(fast, prompt_ids, seeds), None
        devices = [torch.cuda.current_device()] if self.accelerator.device.type == "cuda" else []
        completion_ids: list = []
        for g in range(groups):
            # One seed per (run seed, step, global prompt position): the same rollouts whatever the
            # number of processes or prompts per generate() call; the training RNG stream is untouched.
            with torch.random.fork_rng(devices=devices):
                torch.manual_seed(seeds[g])
                ids, _ = super()._generate_single_turn(
                    prompt_ids[g * rows : (g + 1) * rows], None, {}, num_generations, has_tool_images
                )
            completion_ids.extend(ids)
        return completion_ids, None

    # -- rewards: capture the raw gathered rewards (TRL's batch dict does not carry them) -----
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        t0 = time.perf_counter()
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        check_finite_rewards(
            rewards_per_func,
            self.reward_func_names,
            completions,
            row_offset=self.accelerator.process_index * len(prompts),
            strict=self.pods_strict_rewards,
        )
        self._pods_rewards_per_func = rewards_per_func
        # completion lengths in tokens, for the length-aware rules (TRL may zero a truncated row's mask)
        self._pods_lengths = torch.tensor([len(ids) for ids in completion_ids_list], dtype=torch.float64)
        self.pods_timing["reward_s"] += time.perf_counter() - t0
        return rewards_per_func

    # -- PODS: down-sample the scored batch, recompute advantages -----------------------------
    def _prepare_inputs(self, generation_batch):
        if not (self.pods_keep_groups and self.model.training):
            return super()._prepare_inputs(generation_batch)
        # token_group: TRL shuffles the kept rows across the GA micro-batches before splitting them; without
        # the shuffle, micro-batch k holds the k-th kept group of each local prompt (one group with one prompt
        # per process, as in every paper setting), as the authors' (e)-(f) code split them.
        shuffle = _trl_grpo.shuffle_sequence_dict
        _trl_grpo.shuffle_sequence_dict = _identity
        try:
            return super()._prepare_inputs(generation_batch)
        finally:
            _trl_grpo.shuffle_sequence_dict = shuffle

    def _generate_and_score_completions(self, inputs):
        self._pods_rewards_per_func = None
        if not self.model.training:
            batch = super()._generate_and_score_completions(inputs)
            # nothing is down-sampled in evaluation; the completions table's "kept" column stays aligned
            self._logs["extra"]["kept"].extend(
                [None] * (batch["completion_ids"].shape[0] * self.accelerator.num_processes)
            )
            return batch
        calls = defaultdict(float)  # this generation round's STEP_COUNTS
        if self.pods_skip_after:
            inputs = self._pods_skip_prompts(inputs, calls)
        batch, rewards_G_N, lengths_B = self._pods_score_round(inputs, calls)
        n, m = self.num_generations, self.pods_m
        device = batch["completion_ids"].device
        gen_G, generated = None, rewards_G_N.shape[0]
        if self.pods_refill_max_rounds:
            batch, rewards_G_N, lengths_B, gen_G, generated = self._pods_refill(batch, rewards_G_N, lengths_B, calls)
        lengths_G_N = None
        if uses_lengths(self.pods_rule):  # a length-aware rule: every process's completion lengths, in order
            lengths_G_N = self.accelerator.gather(lengths_B.to(device)).to("cpu", torch.float64).view(-1, n)
        # PODS: select per prompt group on the gathered rewards (identical on every process).
        gen = torch.Generator().manual_seed(mix_seed(self.pods_seed, self.state.global_step, 0x5E1))
        keep_G_M = select(rewards_G_N, m, rule=self.pods_rule, generator=gen, lengths=lengths_G_N)
        # Zero-variance filter (off by default): groups whose n rewards are all equal leave the update, and
        # the advantage statistics ("batch" scale) are taken over the remaining groups only.
        live_G = (rewards_G_N.amax(1) > rewards_G_N.amin(1)) if self.pods_filter_zero_std else None
        adv_G_M = self._pods_group_advantages(rewards_G_N, keep_G_M, live_G)
        local_rows = batch["completion_ids"].shape[0]
        if local_rows % n:
            raise ValueError(f"this process holds {local_rows} rollouts, not whole groups of n={n}")
        local_groups = local_rows // n
        offset = self.accelerator.process_index * local_groups
        rows_B = local_kept_rows(keep_G_M, n, offset, local_groups)
        kept = downsample_rows(batch, rows_B)
        # PODS: advantages of the kept rows from kept-subset (or all-n) statistics.
        kept["advantages"] = adv_G_M[offset : offset + local_groups].reshape(-1).to(device, torch.float32)
        loss_mask = (
            kept["completion_mask"] if kept.get("tool_mask") is None else kept["completion_mask"] * kept["tool_mask"]
        )
        # PODS: the loss normaliser counts only kept tokens (used by TRL's dapo/cispo losses).
        kept_len_B = self.accelerator.gather(kept["completion_mask"].sum(1).float())  # every process's kept rows
        if live_G is not None:
            live_B = live_G[offset : offset + local_groups].repeat_interleave(m).to(device)
            kept[LIVE_KEY] = live_B.float()
            kept["completion_mask"] = kept["completion_mask"] * live_B.unsqueeze(1).to(kept["completion_mask"].dtype)
            loss_mask = loss_mask * live_B.unsqueeze(1).to(loss_mask.dtype)
            self._metrics["train"]["pods/filtered_groups"].append(float((~live_G).sum().item()))
        kept["num_items_in_batch"] = self.accelerator.gather(loss_mask.sum()).sum()
        self._pods_kept_forwards(kept)
        self._pods_log_completions(keep_G_M, adv_G_M, live_G, gen_G, generated)
        live_rows_B = (
            torch.ones(kept_len_B.numel(), dtype=torch.bool) if live_G is None else live_G.repeat_interleave(m)
        )
        calls["trained_rollouts"] += float(live_rows_B.sum().item())
        calls["trained_tokens"] += float(kept_len_B.cpu()[live_rows_B].sum().item())
        for key in STEP_COUNTS:
            self.pods_step_counts[key] += calls[key]
            self._metrics["train"][f"pods/{key}"].append(calls[key])

        self._pods_log_kept(rewards_G_N.gather(1, keep_G_M), kept_len_B, live_G)
        self.pods_last_selection = {
            "rewards_G_N": rewards_G_N,
            "keep_G_M": keep_G_M,
            "adv_G_M": adv_G_M,
            "lengths_G_N": lengths_G_N,
            "live_G": live_G,
            "group_offset": offset,
            "local_groups": local_groups,
        }
        if os.environ.get(DEBUG_ENV):
            self._dump_selection(kept, rows_B)
        return kept

    def _pods_score_round(self, inputs: list, calls: dict) -> tuple[dict, torch.Tensor, torch.Tensor]:
        """One generation round through TRL: (batch, gathered rewards (G, n) float64 on the CPU, this process's
        completion lengths in tokens); counts the round's rollouts and tokens into ``calls``."""
        # PODS: no forward over rollouts that are about to be dropped. TRL's no-grad forwards (reference
        # log-probs; old log-probs for the vLLM IS ratio, or because generation and optimizer steps are
        # misaligned, gradient_accumulation_steps % steps_per_generation != 0) are switched off while it
        # generates and scores, and run on the kept rows below (_pods_kept_forwards). TRL reads
        # args.steps_per_generation in that function only for that decision (TRL_SOURCE_FACTS).
        self._pods_rewards_per_func = None
        beta, is_correction, args = self.beta, self.vllm_importance_sampling_correction, self.args
        self.beta, self.vllm_importance_sampling_correction = 0.0, False
        self.args = copy.copy(args)
        self.args.steps_per_generation = 1
        try:
            batch = super()._generate_and_score_completions(inputs)
        finally:
            self.beta, self.vllm_importance_sampling_correction, self.args = beta, is_correction, args
        rewards_per_func = self._pods_rewards_per_func
        if rewards_per_func is None:
            raise TRLCompatError(
                "trl.GRPOTrainer._generate_and_score_completions no longer calls self._calculate_rewards "
                f"(trl {_trl_version()}); the PODS hook cannot see the rewards. Port pods/trainer/hook.py."
            )
        n = self.num_generations
        # PODS: the weighted sum of the reward functions, exactly TRL's "sum_then_normalize" reward (nansum:
        # a function's None for a row it does not apply to counts as nothing, as in TRL).
        rewards_B = (rewards_per_func * self.reward_weights.to(rewards_per_func.device).unsqueeze(0)).nansum(dim=1)
        if rewards_B.numel() % n:
            raise TRLCompatError(f"gathered {rewards_B.numel()} rewards, not a multiple of the group size n={n}")
        rewards_G_N = rewards_B.detach().to("cpu", torch.float64).view(-1, n)  # all processes' groups, in order
        lengths_B = self._pods_lengths.clone()
        calls["gen_rollouts"] += rewards_G_N.numel()
        device = batch["completion_ids"].device
        calls["gen_tokens"] += float(self.accelerator.gather(lengths_B.sum().reshape(1).to(device)).sum().item())
        if self.pods_skip_after:  # GRESO: remember whether each group of each prompt had zero variance
            flags = (rewards_G_N.amax(1) == rewards_G_N.amin(1)).tolist()
            for g, zero in enumerate(flags):
                key = _prompt_key(inputs[g * n])
                self._pods_history.setdefault(key, deque(maxlen=self.pods_skip_after)).append(bool(zero))
        return batch, rewards_G_N, lengths_B

    def _pods_group_advantages(
        self, rewards_G_N: torch.Tensor, keep_G_M: torch.Tensor, live_G: torch.Tensor | None
    ) -> torch.Tensor:
        """Advantages of the kept rollouts (:func:`pods.grpo.pods_advantages`); with the zero-variance filter,
        computed over the live groups only (a filtered group's are 0, and it is masked out of the loss)."""
        kwargs = dict(normalize=self.pods_normalize, eps=ADV_EPS, scale=self.args.scale_rewards)
        if live_G is None:
            return pods_advantages(rewards_G_N, keep_G_M, **kwargs)
        adv_G_M = torch.zeros(keep_G_M.shape, dtype=torch.float64)
        if live_G.any():
            adv_G_M[live_G] = pods_advantages(rewards_G_N[live_G], keep_G_M[live_G], **kwargs).to(torch.float64)
        return adv_G_M

    def _compute_loss(self, model, inputs):
        live = inputs.get(LIVE_KEY)
        if live is None:
            return super()._compute_loss(model, inputs)
        loss = super()._compute_loss(model, {k: v for k, v in inputs.items() if k != LIVE_KEY})
        rows, n_live = live.numel(), float(live.sum().item())
        if self.loss_type in ROW_MEAN_LOSSES and 0 < n_live < rows:
            # the filtered rows' tokens are masked, so they add 0; the mean over rows becomes a mean over live rows
            loss = loss * (rows / n_live)
        return loss

    # -- the run's access to TRL/HF internals ----------------------------------------------
    def _save_checkpoint(self, model, trial):
        # torch.save reports a full disk as RuntimeError("... unexpected pos ..."): name the disk and path.
        self._pods_trl_epoch()  # trainer_state.json records the epoch as TRL counts it
        ckpt = Path(self.args.output_dir) / f"checkpoint-{self.state.global_step}"
        with writing(ckpt, (OSError, RuntimeError)):
            super()._save_checkpoint(model, trial)

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        self._pods_trl_epoch()
        super().log(logs, start_time)

    def _pods_trl_epoch(self) -> None:
        """``state.epoch`` in TRL's unit: data epochs of the training prompts.

        HF counts an epoch as one pass over the sampler's length; a ``max_steps`` run's
        :class:`EpochRepeatSampler` streams the whole run (several data epochs, or part of one) as one
        pass, so HF's epoch reads 1.0 at ``max_steps`` wherever the data stands. TRL's sampler is one data
        epoch long; HF sets ``state.epoch`` afresh every optimizer step, and this rescales it once per step.
        """
        sampler, epoch, step = self._pods_sampler, self.state.epoch, self.state.global_step
        if sampler is None or sampler.total_rows is None or epoch is None or step == self._pods_epoch_step:
            return
        self.state.epoch = epoch * sampler.total_rows / sampler.epoch_rows
        self._pods_epoch_step = step

    def _issue_warnings_after_load(self, load_result: Any) -> None:
        # A checkpoint of a model with tied embeddings stores the shared tensor once (under
        # model.embed_tokens.weight), so loading it restores lm_head.weight too; transformers still
        # warns "missing keys ... ['lm_head.weight']" (unless the model lists it in
        # _keys_to_ignore_on_save). Only a name whose tensor no loaded name shares stays missing.
        if hasattr(load_result, "_replace"):  # torch's _IncompatibleKeys, a named tuple
            load_result = load_result._replace(missing_keys=really_missing(self.model, load_result.missing_keys))
        super()._issue_warnings_after_load(load_result)

    def load_checkpoint_weights(self, checkpoint: str | os.PathLike) -> None:
        """Load only the model weights of ``checkpoint`` (HF ``Trainer._load_from_checkpoint``)."""
        self._load_from_checkpoint(str(checkpoint))

    def remove_console_callbacks(self) -> None:
        """Drop HF's printer callback and, unless ``disable_tqdm=False`` was asked for (``trl.disable_tqdm``),
        its progress bar (the run's own progress line and logs replace them)."""
        from transformers.trainer_callback import PrinterCallback, ProgressCallback

        self.remove_callback(PrinterCallback)
        if self.args.disable_tqdm:
            self.remove_callback(ProgressCallback)

    # -- model card: cites PODS (TRL's card would cite only GRPO and, for a local model, name no base) --
    def create_model_card(
        self,
        model_name: str | None = None,
        dataset_name: str | None = None,
        tags: str | list[str] | None = None,
    ) -> None:
        """Write ``README.md`` into ``args.output_dir``: base model, the PODS parameters, PODS/GRPO/TRL citations."""
        if not self.is_world_process_zero():
            return
        self._write_model_card(Path(self.args.output_dir), model_name, dataset_name, tags)

    def _write_model_card(
        self,
        out: Path,
        model_name: str | None = None,
        dataset_name: str | None = None,
        tags: str | list[str] | None = None,
    ) -> None:
        text = pods_model_card(
            base_model=self.pods_base_model or _config_model_id(self.model),
            model_name=model_name or Path(self.args.output_dir).name,
            dataset_name=dataset_name,
            tags=[tags] if isinstance(tags, str) else list(tags or []),
            n=self.num_generations,
            m=self.pods_m,
            rule=self.pods_rule,
            normalize=self.pods_normalize,
            ga=self.args.gradient_accumulation_steps,
            ga_same_prompt=self.pods_ga_same_prompt,
            tag_names=self._tag_names,
        )
        out.mkdir(parents=True, exist_ok=True)
        (out / "README.md").write_text(text, encoding="utf-8")

    def _save(self, output_dir: str | None = None, state_dict: dict | None = None) -> None:
        # Every saved model (checkpoints, save_model) gets the PODS card first: a PEFT model's save_pretrained
        # then adds its metadata to that card instead of writing its blank template (HF_PRIVATE_METHODS).
        if self.args.should_save:
            self._write_model_card(Path(output_dir if output_dir is not None else self.args.output_dir))
        super()._save(output_dir, state_dict)


def _init_run_state(trainer: PODSGRPOTrainer) -> None:
    """The trainer's per-run state, set before ``GRPOTrainer.__init__`` runs (which may call the hooks)."""
    trainer._pods_rewards_per_func: torch.Tensor | None = None
    trainer._pods_lengths: torch.Tensor | None = None  # completion tokens of this process's rows (rewards' call)
    trainer.pods_filter_zero_std = False  # resolved in __init__, once args is known
    trainer.pods_timing: dict[str, float] = defaultdict(float)  # per optimizer step; reset by the controller
    trainer.pods_step_counts: dict[str, float] = defaultdict(float)  # STEP_COUNTS per optimizer step; likewise
    trainer._pods_round = 0  # generation round within a step (refill rounds > 0 sample under their own seeds)
    trainer._pods_history: dict[str, deque] = {}  # prompt -> zero-variance flags of its last groups (GRESO skip)
    trainer.pods_last_selection: dict[str, Any] = {}
    trainer._pods_sampler: EpochRepeatSampler | None = None  # the training sampler (epoch bookkeeping)
    trainer._pods_epoch_step: int | None = None  # the optimizer step whose state.epoch was rescaled


def _check_trl_attrs(trainer: PODSGRPOTrainer) -> None:
    """Every TRL/HF attribute the hook reads is set on the constructed trainer (``TRL_ATTRS``, ``TRL_INIT_ATTRS``)."""
    for attr in TRL_ATTRS + tuple(a for a in TRL_INIT_ATTRS if trainer.use_vllm or a not in VLLM_ONLY_ATTRS):
        if not hasattr(trainer, attr):
            raise TRLCompatError(
                f"trl.GRPOTrainer no longer sets self.{attr} (trl {_trl_version()}); port pods/trainer/hook.py"
            )


def _refuse_unknown_pods_keywords(kwargs: dict[str, Any]) -> None:
    """A misspelt PODS keyword (``pods_M=4``) would reach ``GRPOTrainer.__init__`` as a bare TypeError: name it
    and the closest keyword this trainer takes."""
    import difflib
    import inspect

    known = [p for p in inspect.signature(PODSGRPOTrainer.__init__).parameters if p.startswith("pods_")]
    for name in kwargs:
        if not name.lower().startswith("pods"):
            continue  # not ours: GRPOTrainer's own error names it
        by_lower = {k.lower(): k for k in known}
        close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
        hint = f"did you mean {by_lower[close[0]]}?" if close else f"the PODS keywords are {', '.join(known)}"
        raise TypeError(f"pods.PODSGRPOTrainer got an unknown keyword argument {name!r}; {hint}")


# transformers 5 deprecated ``PreTrainedModel.is_gradient_checkpointing`` (FutureWarning at every read); TRL 1.16's
# unwrap_model_for_generation and disable_gradient_checkpointing read it for every generation round and
# evaluation. The warning is about TRL's code, which no user setting changes, and it is printed again after
# every checkpoint (HF saves the scheduler under warnings.catch_warnings, which resets the once-per-location
# registry). Exactly that message from exactly that module is ignored; every other warning keeps its filters.
_TRL_GC_WARNING = re.escape("`is_gradient_checkpointing` is deprecated")


def _quiet_trl_gradient_checkpointing_warning() -> None:
    warnings.filterwarnings(
        "ignore", message=_TRL_GC_WARNING, category=FutureWarning, module=r"transformers\.modeling_utils"
    )


def really_missing(model: torch.nn.Module, missing_keys: list[str]) -> list[str]:
    """The keys of ``missing_keys`` that a load really left unset: a missing name whose parameter is
    also registered under a name that was loaded (tied embeddings) holds the loaded values."""
    params = dict(model.named_parameters(remove_duplicate=False))
    missing = set(missing_keys)
    loaded = {id(p) for name, p in params.items() if name not in missing}
    return [k for k in missing_keys if k not in params or id(params[k]) not in loaded]


def _identity(batch: dict) -> dict:
    return batch


def reinstall_lm_head(trainer: GRPOTrainer, temperature: float) -> None:
    """Re-install TRL's fused LM head on the policy (and reference) with another log-prob temperature.

    TRL 1.16 installs it in ``GRPOTrainer.__init__`` with the *sampling* temperature, so every log-prob
    (loss, KL, IS ratio) is of softmax(z / T). The new head wraps the old forward; generation
    (``fused_lm_head=False``) still reaches the model's own forward and samples at T.
    """
    from accelerate.utils import is_peft_model

    model = trainer.accelerator.unwrap_model(trainer.model)
    base = model.get_base_model() if is_peft_model(model) else model  # where TRL installed it
    cast = bool(getattr(trainer.args, "cast_lm_head_to_fp32", False))
    add_fused_lm_head(base, temperature=temperature, cast_lm_head_to_fp32=cast, outputs=("log_probs", "entropy"))
    if trainer.ref_model is not None:
        ref = trainer.accelerator.unwrap_model(trainer.ref_model)
        add_fused_lm_head(ref, temperature=temperature, cast_lm_head_to_fp32=cast)
