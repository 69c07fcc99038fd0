"""GRPO, GRPO-GA and GRPO-PODS on TRL 1.16's ``GRPOTrainer``: the PODS hook and the config-to-TRL mapping.

This is the one module that touches TRL or HF Trainer internals. Runs are driven by
:func:`pods.run.train` (``python -m pods train experiments/tiny_a.yaml budget.max_steps=20``);
evaluation during training gets its generator, weights synced, from
:meth:`PODSGRPOTrainer.eval_generator`.

How GRPO-PODS differs from vanilla GRPO (PAPER.md §3.2, Algorithm 1); lines tagged ``# PODS:``:

1. Each prompt gets n rollouts (``rollout.n``); after the rewards are computed and gathered across
   processes, :func:`pods.selectors.select` keeps m of each group of n (``rollout.m``,
   ``rollout.rule``), per prompt group ("apply the same procedure to each prompt and concatenate").
2. The advantages are recomputed on the kept subset (:func:`pods.grpo.pods_advantages`,
   ``rollout.normalize``: "after" = kept-subset statistics, the paper's default; "before" = App. A.3).
3. Every per-row tensor of the batch (ids, masks, old/ref log-probs) is cut to the kept rows before
   the loss, and the loss normaliser (``num_items_in_batch``) is recomputed on them, so the update is
   exactly the m-rollout objective ``L_PODS``. TRL's own advantages over all n are discarded.
4. Both the reward statistics over all n (TRL's ``reward``) and over the kept m (``kept_reward``) are
   logged. Vanilla GRPO is the same trainer with n == m (the rule is then irrelevant).

The override is narrow: :class:`PODSGRPOTrainer` wraps TRL's ``_calculate_rewards`` (to capture the
raw gathered rewards, which the batch dict does not carry) and ``_generate_and_score_completions``
(to down-sample its output); ``_generate`` and ``_generate_single_turn`` only for timing and for
per-prompt seeding, ``_get_train_sampler`` only to repeat each prompt n x GA times, HF's
``_save_checkpoint`` only to name a full disk; the run reaches ``_load_from_checkpoint`` through
:meth:`PODSGRPOTrainer.load_checkpoint_weights`.
:func:`check_trl_compat` and tests/test_trl_hook.py fail loudly, naming the TRL internal that
moved, if a TRL upgrade breaks these assumptions (every TRL/HF private this module uses is listed
in ``TRL_HOOKS``, ``HF_PRIVATE_METHODS``, ``TRL_INIT_ATTRS`` and ``REPEAT_SAMPLER_PARAMS``).

Batch geometry (why the dataloader batch is prompts x n, measured on TRL 1.16): TRL splits each
generation batch into ``steps_per_generation`` micro-batches *after* scoring. We therefore set
``per_device_train_batch_size = P x n`` (P = prompt groups per process), ``num_generations = n`` and
``steps_per_generation = gradient_accumulation_steps = GA``; down-sampling turns the P x n x GA
generated rows into P x m x GA kept rows, which TRL splits into GA micro-batches of P x m. (Setting
the batch to P x m instead makes TRL split the kept rows into n/m micro-steps.)

GRPO-GA (settings (e)-(f), PAPER.md §1.4): ``optim.grad_accum = GA`` generates GA groups of n for the
*same* prompt in one generation round (our sampler repeats each prompt n x GA times, as the authors'
``RepeatSampler(mini_repeat_count = n x GA)`` did), normalises each group of n separately (GRPO-GA:
16 groups of 32 with n = m = 32; PODS: 4 groups of 128, 32 kept from each), and accumulates the GA
micro-batches into one optimizer step. TRL's generation-aligned GA means no old log-probs are needed
(the ratio is 1, clipping inactive), as in the paper.

Built from a user's own ``GRPOConfig``/:class:`PODSConfig` (TRL users), gradient accumulation keeps
TRL's meaning (different prompts in each micro-batch, one group of n each) unless
``pods_ga_same_prompt=True`` asks for the GRPO-GA grouping above, which :func:`pods_trainer_kwargs`
(every ``pods train`` run) sets; epoch-based training (``max_steps=-1``) samples one epoch per HF
epoch, each in its own seeded order (:class:`EpochRepeatSampler`). The config's ``trl:`` section
reaches any other ``GRPOConfig`` field (:func:`grpo_config_with_passthrough`).

Environment variable: ``PODS_DEBUG_DUMP=DIR`` writes each step's gathered rewards, selection and
advantages per process to ``DIR/selection_rank{r}.jsonl`` (tests/test_distributed.py compares them).

Departures from the paper / official code, and choices where the sources are silent:

- Rollouts of each prompt group are sampled under their own RNG seed (derived from the run seed, the
  step and the prompt's global position), so the rollouts do not depend on how prompts are split
  across processes or batched; with one prompt per process (every paper setting) this costs nothing.
- A non-finite reward (NaN or inf, including ``None`` from a reward function) is an error naming the
  reward function: the paper's rewards are always finite, so a NaN is a bug to fix, not a signal.
- With ``aggregation: token`` and GA > 1, TRL shuffles kept rows across the GA micro-batches before
  the per-micro-batch token normalisation; the authors' code kept one group per micro-batch. The
  sequence aggregation (the paper's formula) is unaffected.
- TRL 1.16's default ``use_bias_correction_kl=True`` (KL term times the importance ratio) is turned
  off: the authors' loss adds the plain k3 estimator, ``beta * KL_k3`` (PAPER.md §1.4);
  tests/test_trl_hook.py found the difference.
- The authors' (e)-(f) LR schedule spans one data epoch (``num_train_epochs: 1``); a non-constant
  schedule here spans ``optim.scheduler_steps``, else ``budget.max_steps``, else one epoch of the
  training prompts (where training then stops); a constant schedule runs until the time budget.
- No forward pass runs over rollouts that PODS discards (the authors' code computed the reference
  log-probs on the m kept rows only): TRL's no-grad forwards (reference log-probs when ``beta != 0``;
  old log-probs and the vLLM importance-sampling ratio when ``rollout.vllm_is_correction`` is on) are
  switched off for the duration of TRL's scoring and run by :meth:`PODSGRPOTrainer._pods_kept_forwards`
  on the kept rows after down-sampling. The importance-sampling correction is off by default (the
  authors' code has no such term; TRL 1.16 turns it on for vLLM). Padding columns of the dropped rows
  are kept (as in the authors' code), so the update's tensors are as wide as the longest of the n
  completions.
- ``optim.logprob_temperature=none`` scores log-probs on the raw logits (the authors' (a)-(d) code);
  TRL divides by the sampling temperature, which it bakes into the fused LM head it installs at
  construction, so the trainer re-installs that head with temperature 1 (:func:`reinstall_lm_head`).
- ``optim.aggregation=token_group`` is the token mean per micro-batch with whole prompt groups per
  micro-batch (the authors' (e)-(f) code): TRL's shuffle of the rows across micro-batches is skipped.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import json
import os
import re
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from trl import GRPOConfig, GRPOTrainer
from trl.models import unwrap_model_for_generation
from trl.models.utils import disable_gradient_checkpointing
from trl.trainer import grpo_trainer as _trl_grpo
from trl.trainer.utils import RepeatSampler, add_fused_lm_head, use_adapter

from pods.config import TrainConfig
from pods.evaluation import Generator, HFGenerator, VLLMGenerator, mix_seed
from pods.grpo import pods_advantages
from pods.runlog import writing
from pods.selectors import select

__all__ = [
    "EpochRepeatSampler",
    "NonFiniteRewardError",
    "PODSConfig",
    "PODSGRPOTrainer",
    "TRLCompatError",
    "build_grpo_config",
    "check_finite_rewards",
    "check_trl_compat",
    "check_trl_passthrough",
    "grpo_config_with_passthrough",
    "downsample_rows",
    "local_kept_rows",
    "pods_trainer_kwargs",
    "records_to_dataset",
    "step_plan",
    "sync_device",
]

DEBUG_ENV = "PODS_DEBUG_DUMP"  # directory: per-step selection dumps (selection_rank{r}.jsonl)
LOSS_TYPES = {"sequence": "grpo", "token": "bnpo", "token_group": "bnpo"}  # pods aggregation -> TRL loss_type
ADV_EPS = 1e-4  # std epsilon of the authors' code and of TRL
BIG_STEPS = 10**7  # "no step cap" for time-budgeted runs (HF needs a finite max_steps)

# --------------------------------------------------------------------------------------------
# The TRL internals the hook relies on. check_trl_compat() verifies them at construction time and
# tests/test_trl_hook.py at test time; a TRL upgrade that moves one fails with its name.
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
    ("__init__", "temperature=self.temperature", "the fused LM head bakes the sampling temperature in at init"),
    ("_prepare_inputs", "shuffle_sequence_dict(generation_batch)", "rows are shuffled across micro-batches there"),
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
}
# Attributes GRPOTrainer.__init__ sets that the hook reads (vllm_generation and _last_loaded_step only
# with use_vllm=True); checked in the source of __init__ and, after construction, on the instance.
TRL_INIT_ATTRS = tuple(
    "num_generations reward_weights reward_func_names use_vllm use_transformers_continuous_batching "
    "multi_objective_aggregation shuffle_dataset num_iterations _metrics vllm_generation _last_loaded_step "
    "beta ref_model top_k vllm_importance_sampling_correction vllm_importance_sampling_mode "
    "vllm_importance_sampling_clip_min vllm_importance_sampling_clip_max".split()
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


class NonFiniteRewardError(ValueError):
    """A reward function returned NaN, inf or None."""


def check_trl_compat(
    cls: type = GRPOTrainer, sampler_cls: type = RepeatSampler, unwrap: Any = unwrap_model_for_generation
) -> None:
    """Raise :class:`TRLCompatError` naming the first TRL/HF internal whose name or signature moved.

    Checks the methods the hook overrides (``TRL_HOOKS``) or calls (``HF_PRIVATE_METHODS``), the
    attributes ``cls.__init__`` must set (``TRL_INIT_ATTRS``), ``RepeatSampler``'s constructor and
    ``unwrap_model_for_generation``'s parameters.
    """
    for name, expected in {**TRL_HOOKS, **HF_PRIVATE_METHODS}.items():
        owner = "GRPOTrainer" if name in TRL_HOOKS else "Trainer"
        fn = getattr(cls, name, None)
        if fn is None:
            raise TRLCompatError(
                f"trl.GRPOTrainer.{name} no longer exists (trl {_trl_version()}); the PODS hook in pods/trainer.py "
                f"uses it ({owner}.{name}). Pin trl==1.16.0 or port PODSGRPOTrainer to the new TRL."
            )
        _check_params(f"trl.GRPOTrainer.{name}", fn, expected)
    init_src = _source(cls.__init__)
    if init_src is not None:
        for attr in TRL_INIT_ATTRS:
            if not re.search(rf"self\.{re.escape(attr)}\s*(:[^=\n]*)?=", init_src):
                raise TRLCompatError(
                    f"trl.GRPOTrainer.__init__ no longer sets self.{attr} (trl {_trl_version()}); the PODS hook in "
                    "pods/trainer.py reads it. Pin trl==1.16.0 or port PODSGRPOTrainer."
                )
    for name, text, why in TRL_SOURCE_FACTS:
        src = _source(getattr(cls, name, None))
        if src is not None and text not in src:
            raise TRLCompatError(
                f"trl.GRPOTrainer.{name} no longer contains {text!r} (trl {_trl_version()}): {why}, and the PODS "
                "fidelity hooks in pods/trainer.py rely on it. Pin trl==1.16.0 or port PODSGRPOTrainer."
            )
    if not callable(getattr(_trl_grpo, "shuffle_sequence_dict", None)):
        raise TRLCompatError(
            f"trl.trainer.grpo_trainer.shuffle_sequence_dict is gone (trl {_trl_version()}); "
            "optim.aggregation=token_group switches it off. Pin trl==1.16.0 or port PODSGRPOTrainer._prepare_inputs."
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
            "PODSGRPOTrainer.eval_generator passes them. Pin trl==1.16.0 or port it."
        )


def _check_params(qualname: str, fn: Any, expected: tuple[str, ...]) -> None:
    params = tuple(inspect.signature(fn).parameters)
    if params[: len(expected)] != expected:
        name = qualname.rsplit(".", 1)[-1]
        raise TRLCompatError(
            f"{qualname} changed signature (trl {_trl_version()}): expected parameters {expected}, found "
            f"{params}. Pin trl==1.16.0 or port PODSGRPOTrainer.{name}."
        )


def _source(fn: Any) -> str | None:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):  # a builtin or C-level __init__: nothing to read
        return None


def _trl_version() -> str:
    import trl

    return trl.__version__


def sync_device(device: torch.device | None = None) -> None:
    """Wait for CUDA's asynchronous queue (timers must not read it as "done"); a no-op on CPU."""
    if torch.cuda.is_available() and (device is None or device.type == "cuda"):
        torch.cuda.synchronize()


# --------------------------------------------------------------------------------------------
# ALGO LOGIC: pure helpers of the PODS hook (tested directly in tests/test_trainer.py)
# --------------------------------------------------------------------------------------------
def local_kept_rows(keep_G_M: torch.Tensor, n: int, group_offset: int, local_groups: int) -> torch.Tensor:
    """Flat row indices, into this process's batch of ``local_groups x n`` rows, of the kept rollouts.

    ``keep_G_M`` indexes into each group of the *global* (gathered) batch; this process holds groups
    ``group_offset .. group_offset + local_groups - 1`` as consecutive blocks of n rows.
    """
    keep_L_M = keep_G_M[group_offset : group_offset + local_groups].to(torch.long)
    base_L1 = torch.arange(local_groups, dtype=torch.long, device=keep_L_M.device).unsqueeze(1) * n
    return (base_L1 + keep_L_M).reshape(-1)  # (L*M,)


def downsample_rows(batch: dict[str, Any], rows_B: torch.Tensor) -> dict[str, Any]:
    """Keep rows ``rows_B`` of every per-row entry of TRL's batch dict; scalars pass through.

    Raises :class:`TRLCompatError` for a key it does not know (a new TRL field could be per-row, and
    silently keeping all n rows of it would mis-align the batch).
    """
    unknown = sorted(set(batch) - set(ROW_KEYS) - set(SCALAR_KEYS))
    if unknown:
        raise TRLCompatError(
            f"GRPOTrainer._generate_and_score_completions returned keys {unknown} that the PODS hook does not "
            f"know how to down-sample (known per-row keys: {ROW_KEYS}; scalars: {SCALAR_KEYS}). Multimodal and "
            "tool-calling batches are not supported; for a new TRL field, add it to ROW_KEYS or SCALAR_KEYS in "
            "pods/trainer.py."
        )
    out: dict[str, Any] = {}
    for key, val in batch.items():
        if val is None or key in SCALAR_KEYS:
            out[key] = val
        elif isinstance(val, torch.Tensor):
            out[key] = val[rows_B.to(val.device)]
        else:  # a per-row list
            out[key] = [val[i] for i in rows_B.tolist()]
    return out


def check_finite_rewards(
    rewards_per_func_B_F: torch.Tensor,
    func_names: Sequence[str],
    completions: Sequence[Any] | None = None,
    row_offset: int = 0,
) -> None:
    """Raise :class:`NonFiniteRewardError` naming the reward function and row of the first NaN/inf."""
    bad = ~torch.isfinite(rewards_per_func_B_F)
    if not bad.any():
        return
    row, col = (int(i) for i in bad.nonzero()[0])
    value = rewards_per_func_B_F[row, col].item()
    text = ""
    local = row - row_offset
    if completions is not None and 0 <= local < len(completions):
        comp = completions[local]
        comp = comp[-1]["content"] if isinstance(comp, list) and comp and isinstance(comp[-1], dict) else comp
        text = f" (completion starts {str(comp)[:80]!r})"
    raise NonFiniteRewardError(
        f"reward function {func_names[col]!r} returned {value} (NaN also stands for None) for rollout {row} of "
        f"the batch{text}; {int(bad.sum())} non-finite value(s) in total. Reward functions must return a finite "
        "float for every completion, e.g. 0.0 for an unparseable one."
    )


class EpochRepeatSampler(RepeatSampler):
    """TRL's RepeatSampler with each epoch's order seeded by (seed, epoch).

    With ``total_rows`` (step-capped runs, ``max_steps > 0``) one iteration streams as many data
    epochs as needed, so HF's resume fast-forwards through one long "epoch" with
    ``skip_first_batches`` and the prompt order of a resumed run equals the uninterrupted one (TRL's
    sampler would replay epoch 0's order after resuming in a later epoch); ``total_rows`` bounds
    ``__len__`` (HF derives max_steps from it). With ``total_rows=None`` (epoch-based training,
    ``max_steps=-1``) one iteration is one epoch, TRL's length, and HF's ``set_epoch`` picks its order.
    """

    def __init__(
        self,
        data_source,
        mini_repeat_count: int,
        batch_size: int,
        repeat_count: int,
        shuffle: bool,
        seed: int,
        total_rows: int | None = None,
    ):
        super().__init__(data_source, mini_repeat_count, batch_size, repeat_count, shuffle, seed)
        if total_rows is not None and total_rows < 0:
            raise ValueError(f"total_rows={total_rows} must be >= 0 (None = one epoch per iteration)")
        self.total_rows = total_rows
        self.epoch = 0
        if self.num_samples < batch_size:
            raise ValueError(
                f"the training set has {self.num_samples} prompts but one step needs {batch_size} distinct prompts; "
                "lower rollout.prompts_per_step (per_device_train_batch_size) or use a larger training set"
            )

    def set_epoch(self, epoch: int) -> None:
        """Called by HF's Trainer at the start of each epoch (epoch-based training)."""
        self.epoch = int(epoch)

    def _epoch_rows(self, epoch: int) -> Iterator[int]:
        if self.shuffle:
            g = torch.Generator().manual_seed(mix_seed(self.seed or 0, epoch, 0x5A3))
            order = torch.randperm(self.num_samples, generator=g).tolist()
        else:
            order = list(range(self.num_samples))
        for start in range(0, self.num_samples - self.batch_size + 1, self.batch_size):
            chunk = order[start : start + self.batch_size]
            for _ in range(self.repeat_count):
                for index in chunk:
                    for _ in range(self.mini_repeat_count):
                        yield index

    def __iter__(self) -> Iterator[int]:
        if self.total_rows is None:
            yield from self._epoch_rows(self.epoch)
            return
        emitted, epoch = 0, 0
        while emitted < self.total_rows:
            for index in self._epoch_rows(epoch):
                if emitted >= self.total_rows:
                    return
                emitted += 1
                yield index
            epoch += 1

    def __len__(self) -> int:
        return super().__len__() if self.total_rows is None else self.total_rows


# --------------------------------------------------------------------------------------------
# PODSConfig: the PODS parameters as GRPOConfig fields (TRL's way; HfArgumentParser/TrlParser read them)
# --------------------------------------------------------------------------------------------
@dataclass
class PODSConfig(GRPOConfig):
    """``GRPOConfig`` plus the PODS parameters; ``num_generations`` is n, the rollouts generated per prompt.

    Example (an open-r1-style recipe with PODS, n = 16 generated, m = 4 kept)::

        args = PODSConfig(output_dir="out", num_generations=16, pods_m=4, per_device_train_batch_size=16,
                          gradient_accumulation_steps=4, num_train_epochs=1, report_to=["tensorboard"])
        trainer = PODSGRPOTrainer(model=..., reward_funcs=..., args=args, train_dataset=...)
    """

    pods_m: int | None = field(
        default=None,
        metadata={"help": "Rollouts kept per prompt for the update (PODS m), 2 <= pods_m <= num_generations (n)."},
    )
    pods_rule: str = field(
        default="max_variance",
        metadata={"help": "Down-sampling rule (pods.selectors.RULES): max_variance (the paper), random, ..."},
    )
    pods_normalize: str = field(
        default="after",
        metadata={"help": "Advantage statistics of the kept m ('after', the paper) or of all n ('before', App. A.3)."},
    )
    pods_ga_same_prompt: bool = field(
        default=False,
        metadata={
            "help": "False: gradient accumulation as in TRL (different prompts in each micro-batch). True: the "
            "paper's GRPO-GA, gradient_accumulation_steps groups of n rollouts of the same prompt per step."
        },
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        from pods.registry import RULES, RuleError, check_rule

        if self.pods_m is None:
            raise ValueError(
                "PODSConfig needs pods_m, the rollouts kept per prompt (2 <= pods_m <= num_generations="
                f"{self.num_generations}); pods_m == num_generations is vanilla GRPO"
            )
        try:
            check_rule(self.pods_rule, self.num_generations, self.pods_m, RULES)
        except RuleError as err:
            names = {"rollout.n": "num_generations", "rollout.m": "pods_m", "rollout.rule": "pods_rule"}
            msg = f"{err.problem}; fix: {err.fix}"
            for old, new in names.items():
                msg = msg.replace(old, new)
            raise ValueError(f"PODSConfig: {names.get(err.key, err.key)}: {msg}") from None
        if self.pods_normalize not in ("after", "before"):
            raise ValueError(
                f"PODSConfig: pods_normalize={self.pods_normalize!r} must be 'after' (the paper) or 'before' (App. A.3)"
            )


def _pods_option(args: Any, name: str, given: Any, default: Any) -> Any:
    """A PODS parameter from the trainer keyword or a :class:`PODSConfig` field (which must agree).

    A PODSConfig field left at its default counts as unset, so a keyword may set it.
    """
    from_args = None
    if isinstance(args, PODSConfig):
        default = next(f.default for f in dataclasses.fields(PODSConfig) if f.name == name)
        from_args = getattr(args, name, None)
        from_args = None if from_args == default else from_args
    if given is not None and from_args is not None and given != from_args:
        raise ValueError(
            f"{name}={given!r} was passed to PODSGRPOTrainer but args.{name}={from_args!r}; set it in one place "
            "(the PODSConfig field or the keyword argument)"
        )
    value = given if given is not None else from_args if from_args is not None else default
    if value is None:
        raise ValueError(
            f"PODSGRPOTrainer needs {name} (rollouts kept per prompt group, 2 <= {name} <= num_generations): pass "
            f"args=PODSConfig(..., {name}=M) or PODSGRPOTrainer(..., {name}=M); {name} == num_generations is GRPO"
        )
    return value


def _check_pods_geometry(tr: Any) -> None:
    """Raise ValueError, naming the GRPOConfig field to change, if the batch cannot be down-sampled."""
    from pods.selectors import RULES

    a = tr.args
    n, m, ga, spg = tr.num_generations, tr.pods_m, a.gradient_accumulation_steps, a.steps_per_generation
    if isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= n:
        raise ValueError(f"pods_m={m!r} must be an integer between 1 and num_generations={n}; m == n is vanilla GRPO")
    if tr.pods_rule not in RULES:
        raise ValueError(f"pods_rule={tr.pods_rule!r} is not a down-sampling rule; use one of {', '.join(RULES)}")
    if tr.pods_normalize not in ("after", "before"):
        raise ValueError(f"pods_normalize={tr.pods_normalize!r} must be 'after' (the paper) or 'before' (App. A.3)")
    local_rows = a.per_device_train_batch_size * spg  # rows one process generates per round
    rows_per_prompt = n * tr.pods_grad_accum
    if local_rows % rows_per_prompt:
        what = (
            f"num_generations x gradient_accumulation_steps = {rows_per_prompt}"
            if tr.pods_grad_accum > 1
            else f"num_generations={n}"
        )
        raise ValueError(
            f"per_device_train_batch_size x steps_per_generation = {local_rows} rows per process is not a multiple of "
            f"{what}, so a prompt group would be split across processes; PODS selects within whole groups. Set "
            f"per_device_train_batch_size to a multiple of num_generations={n} (e.g. {n})"
        )
    kept_rows = local_rows // n * m
    if kept_rows % spg:
        raise ValueError(
            f"the {kept_rows} kept rows per process (pods_m={m} of every {n}) do not split into steps_per_generation="
            f"{spg} equal micro-batches; set per_device_train_batch_size to a multiple of num_generations={n}"
        )
    if tr.pods_ga_same_prompt and spg != ga:
        raise ValueError(
            f"pods_ga_same_prompt=True generates the GA groups of a prompt in one round, so steps_per_generation "
            f"({spg}) must equal gradient_accumulation_steps ({ga}); leave steps_per_generation and "
            "generation_batch_size unset"
        )
    if tr.multi_objective_aggregation != "sum_then_normalize":
        raise ValueError("PODS selects on the summed reward; use multi_objective_aggregation='sum_then_normalize'")
    if tr.num_iterations != 1:
        raise ValueError("PODS runs one update per generation (num_iterations=1), as every setting of the paper")


# --------------------------------------------------------------------------------------------
# The trainer
# --------------------------------------------------------------------------------------------
class PODSGRPOTrainer(GRPOTrainer):
    """TRL's GRPOTrainer with PODS down-sampling between the rewards and the advantages.

    A drop-in for ``GRPOTrainer``: every ``GRPOConfig`` works as it does in TRL (``max_steps`` or
    ``num_train_epochs``, ``gradient_accumulation_steps``, ``report_to``, ...), with
    ``num_generations`` = n rollouts generated per prompt, of which m are kept for the update. The
    PODS parameters come from a :class:`PODSConfig` (``args=PODSConfig(pods_m=4, ...)``) or from the
    keyword arguments below (a keyword given in both places must agree).

    Keyword arguments (everything else goes to ``GRPOTrainer``):
        pods_m: rollouts kept per group of n (``args.num_generations``); m == n is vanilla GRPO.
        pods_rule: a :data:`pods.selectors.RULES` name (default max_variance).
        pods_normalize: "after" (kept-subset statistics, default) or "before" (all-n statistics).
        pods_ga_same_prompt: False (default, TRL's meaning): the ``gradient_accumulation_steps``
            micro-batches of an optimizer step hold different prompts, one group of n each. True (the
            paper's GRPO-GA, settings (e)-(f), what ``pods train`` uses): each prompt is generated
            GA x n times in one round and normalised as GA separate groups of n, so an optimizer step
            holds ``per_device_train_batch_size / n`` distinct prompts per process, GA groups each.
        pods_seed: seeds selection (random rule) and per-prompt rollout sampling (default args.seed).
        pods_max_steps: bounds the sampler length (default ``args.max_steps``; none for epoch-based
            training, ``max_steps=-1``).
        pods_scheduler_steps: horizon of the LR schedule (default: HF's number of training steps).
        pods_seeded_generation: sample each prompt group under its own seed (HF backend only).
        pods_logprob_temperature: "sampling" (TRL: log-probs of logits / T) or "none" (raw logits).
        pods_keep_groups: keep prompt groups whole in the GA micro-batches (no row shuffle; token_group).
        pods_base_model: the base model's name for the model card (default: the model config's
            ``_name_or_path``).
        pods_grad_accum: legacy spelling of ``pods_ga_same_prompt=True``; must equal
            ``args.gradient_accumulation_steps``.

    Batch geometry: ``per_device_train_batch_size`` counts *generated* rows (P x n per process and
    micro-batch, as in TRL); after down-sampling a micro-batch holds P x m rows.
    """

    _tag_names = ["trl", "grpo", "pods"]
    _name = "GRPO-PODS"

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
        pods_seeded_generation: bool = True,
        pods_base_model: str | None = None,
        pods_grad_accum: int | None = None,
        pods_logprob_temperature: str = "sampling",
        pods_keep_groups: bool = False,
        **kwargs: Any,
    ):
        check_trl_compat()
        if pods_logprob_temperature not in ("sampling", "none"):
            raise ValueError(
                f"pods_logprob_temperature={pods_logprob_temperature!r}: use 'sampling' (TRL: log-probs of the "
                "logits divided by the sampling temperature) or 'none' (raw logits, the authors' (a)-(d) code)"
            )
        self.pods_logprob_temperature = pods_logprob_temperature
        self.pods_keep_groups = bool(pods_keep_groups)
        self.pods_seeded_generation = pods_seeded_generation
        self.pods_scheduler_steps = pods_scheduler_steps
        self.pods_base_model = pods_base_model
        self._pods_rewards_per_func: torch.Tensor | None = None
        self.pods_timing: dict[str, float] = defaultdict(float)  # per optimizer step; reset by the controller
        self.pods_last_selection: dict[str, Any] = {}
        super().__init__(*args, **kwargs)
        for attr in TRL_ATTRS + tuple(a for a in TRL_INIT_ATTRS if self.use_vllm or a not in VLLM_ONLY_ATTRS):
            if not hasattr(self, attr):
                raise TRLCompatError(
                    f"GRPOTrainer no longer sets self.{attr} (trl {_trl_version()}); port pods/trainer.py"
                )
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
        total_rows = None
        if self.pods_max_steps is not None:
            total_rows = self.pods_max_steps * self.args.gradient_accumulation_steps * self.args.generation_batch_size
        return EpochRepeatSampler(
            dataset,
            mini_repeat_count=rows_per_prompt,
            batch_size=prompts,
            repeat_count=self.num_iterations * self.args.steps_per_generation,
            shuffle=self.shuffle_dataset,
            seed=self.args.seed,
            total_rows=total_rows,
        )

    # -- generation: timed; each prompt group sampled under its own seed ----------------------
    def _generate(self, prompts):
        sync_device(self.accelerator.device)
        t0 = time.perf_counter()
        out = super()._generate(prompts)
        sync_device(self.accelerator.device)
        self.pods_timing["gen_s"] += time.perf_counter() - t0
        return out

    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        rows = self.num_generations * self.pods_grad_accum
        if (
            not self.pods_seeded_generation
            or not self.model.training
            or self.use_vllm
            or self.use_transformers_continuous_batching
            or images is not None
            or multimodal_fields
            or len(prompt_ids) % rows
        ):
            return super()._generate_single_turn(
                prompt_ids, images, multimodal_fields, num_generations, has_tool_images
            )
        groups = len(prompt_ids) // rows
        offset = self.accelerator.process_index * groups  # global index of this process's first prompt
        devices = [torch.cuda.current_device()] if self.accelerator.device.type == "cuda" else []
        completion_ids: list = []
        for g in range(groups):
            # One seed per (run seed, step, global prompt position): the same rollouts whatever the
            # number of processes or prompts per generate() call; the training RNG stream is untouched.
            with torch.random.fork_rng(devices=devices):
                torch.manual_seed(mix_seed(self.pods_seed, self.state.global_step, offset + g))
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
        )
        self._pods_rewards_per_func = rewards_per_func
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
            return super()._generate_and_score_completions(inputs)
        # PODS: no forward over rollouts that are about to be dropped. TRL's no-grad forwards (reference
        # log-probs, vLLM old log-probs / IS ratio) are switched off while it generates and scores, and run
        # on the kept rows below (_pods_kept_forwards).
        beta, is_correction = self.beta, self.vllm_importance_sampling_correction
        self.beta, self.vllm_importance_sampling_correction = 0.0, False
        try:
            batch = super()._generate_and_score_completions(inputs)
        finally:
            self.beta, self.vllm_importance_sampling_correction = beta, is_correction
        rewards_per_func = self._pods_rewards_per_func
        if rewards_per_func is None:
            raise TRLCompatError(
                "GRPOTrainer._generate_and_score_completions no longer calls self._calculate_rewards "
                f"(trl {_trl_version()}); the PODS hook cannot see the rewards. Port pods/trainer.py."
            )
        n, m = self.num_generations, self.pods_m
        device = batch["completion_ids"].device
        # PODS: the weighted sum of the reward functions, exactly TRL's "sum_then_normalize" reward.
        rewards_B = (rewards_per_func * self.reward_weights.to(rewards_per_func.device).unsqueeze(0)).sum(dim=1)
        if rewards_B.numel() % n:
            raise TRLCompatError(f"gathered {rewards_B.numel()} rewards, not a multiple of the group size n={n}")
        rewards_G_N = rewards_B.detach().to("cpu", torch.float64).view(-1, n)  # all processes' groups, in order
        # PODS: select per prompt group on the gathered rewards (identical on every process).
        gen = torch.Generator().manual_seed(mix_seed(self.pods_seed, self.state.global_step, 0x5E1))
        keep_G_M = select(rewards_G_N, m, rule=self.pods_rule, generator=gen)
        adv_G_M = pods_advantages(rewards_G_N, keep_G_M, normalize=self.pods_normalize, eps=ADV_EPS)
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
        kept["num_items_in_batch"] = self.accelerator.gather(loss_mask.sum()).sum()
        self._pods_kept_forwards(kept)

        kept_rewards_G_M = rewards_G_N.gather(1, keep_G_M)
        kept_len = self.accelerator.gather(kept["completion_mask"].sum(1).float()).mean().item()
        metrics = self._metrics["train"]
        metrics["kept_reward"].append(kept_rewards_G_M.mean().item())
        metrics["kept_reward_std"].append(
            kept_rewards_G_M.reshape(-1).std().item() if kept_rewards_G_M.numel() > 1 else 0.0
        )
        metrics["kept_frac_reward_zero_std"].append(
            (kept_rewards_G_M.amax(1) == kept_rewards_G_M.amin(1)).double().mean().item()
        )
        metrics["kept_completion_length"].append(kept_len)
        self.pods_last_selection = {
            "rewards_G_N": rewards_G_N,
            "keep_G_M": keep_G_M,
            "adv_G_M": adv_G_M,
            "group_offset": offset,
            "local_groups": local_groups,
        }
        if os.environ.get(DEBUG_ENV):
            self._dump_selection(kept, rows_B)
        return kept

    def _pods_kept_forwards(self, kept: dict) -> None:
        """The no-grad forwards TRL would have run over all n rollouts, on the kept rows only (in place).

        Reference log-probs when ``beta != 0`` (as the authors' code: m rows per group); with vLLM and the
        importance-sampling correction on, the current policy's log-probs and TRL's truncated/masked ratio
        exp(logp_train - logp_vLLM), per token or per sequence as ``vllm_importance_sampling_mode`` says.
        """
        use_is = bool(self.use_vllm and self.vllm_importance_sampling_correction)
        if self.beta == 0.0 and not use_is:
            return
        ids = torch.cat([kept["prompt_ids"], kept["completion_ids"]], dim=1)
        mask = torch.cat([kept["prompt_mask"], kept["completion_mask"]], dim=1)
        width = kept["completion_ids"].size(1)
        chunk = self.args.per_device_train_batch_size
        with torch.no_grad(), disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs):
            if use_is:
                old_logps, _, _ = self._get_per_token_logps_and_entropies(self.model, ids, mask, width, chunk)
                kept["old_per_token_logps"] = old_logps
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

    def _dump_selection(self, kept: dict, rows_B: torch.Tensor) -> None:
        """Append this step's selection to $PODS_DEBUG_DUMP/selection_rank{r}.jsonl (tests, debugging)."""
        sel = self.pods_last_selection
        ids = kept["completion_ids"].cpu()
        mask = kept["completion_mask"].cpu().bool()
        digests = [hashlib.sha1(str(ids[i][mask[i]].tolist()).encode()).hexdigest()[:16] for i in range(ids.shape[0])]
        row = {
            "step": self.state.global_step,
            "process_index": self.accelerator.process_index,
            "num_processes": self.accelerator.num_processes,
            "group_offset": sel["group_offset"],
            "local_groups": sel["local_groups"],
            "rewards_G_N": sel["rewards_G_N"].tolist(),
            "keep_G_M": sel["keep_G_M"].tolist(),
            "adv_G_M": sel["adv_G_M"].tolist(),
            "local_rows": rows_B.tolist(),
            "local_advantages": kept["advantages"].cpu().tolist(),
            "local_completion_sha": digests,
        }
        path = Path(os.environ[DEBUG_ENV]) / f"selection_rank{self.accelerator.process_index}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")

    # -- the run's access to TRL/HF internals ----------------------------------------------
    @contextlib.contextmanager
    def eval_generator(self) -> Iterator[Generator]:
        """A :class:`pods.evaluation.Generator` sampling from the current policy, in eval mode.

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
                    yield HFGenerator(unwrapped, self.processing_class, top_p=1.0, top_k=self.top_k)
        finally:
            if was_training:
                model.train()

    def _save_checkpoint(self, model, trial):
        # torch.save reports a full disk as RuntimeError("... unexpected pos ..."): name the disk and path.
        ckpt = Path(self.args.output_dir) / f"checkpoint-{self.state.global_step}"
        with writing(ckpt, (OSError, RuntimeError)):
            super()._save_checkpoint(model, trial)

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
        out = Path(self.args.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "README.md").write_text(text, encoding="utf-8")


# --------------------------------------------------------------------------------------------
# Model card
# --------------------------------------------------------------------------------------------
PODS_BIBTEX = """@article{xu2025pods,
    title   = {{Not All Rollouts are Useful: Down-Sampling Rollouts in LLM Reinforcement Learning}},
    author  = {Yixuan Even Xu and Yash Savani and Fei Fang and J. Zico Kolter},
    journal = {arXiv preprint arXiv:2504.13818},
    year    = {2025},
    url     = {https://arxiv.org/abs/2504.13818},
}"""
GRPO_BIBTEX = """@article{shao2024deepseekmath,
    title   = {{DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open Language Models}},
    author  = {Zhihong Shao and Peiyi Wang and Qihao Zhu and Runxin Xu and Junxiao Song and Mingchuan Zhang and Y. K. Li and Y. Wu and Daya Guo},
    journal = {arXiv preprint arXiv:2402.03300},
    year    = {2024},
}"""
TRL_BIBTEX = """@software{vonwerra2020trl,
    title   = {{TRL: Transformer Reinforcement Learning}},
    author  = {Leandro von Werra and Younes Belkada and Lewis Tunstall and Edward Beeching and Tristan Thrush and Nathan Lambert and Shengyi Huang and Kashif Rasul and Quentin Gallou{\\'e}dec},
    year    = {2020},
    url     = {https://github.com/huggingface/trl},
}"""


def _config_model_id(model: Any) -> str | None:
    config = getattr(model, "config", None)
    return getattr(config, "_name_or_path", None) or None


def pods_model_card(
    base_model: str | None,
    model_name: str,
    dataset_name: str | None,
    tags: Sequence[str],
    n: int,
    m: int,
    rule: str,
    normalize: str,
    ga: int,
    ga_same_prompt: bool,
    tag_names: Sequence[str] = ("trl", "grpo", "pods"),
) -> str:
    """The model card (README.md) of a PODS checkpoint: front matter, base model, method, citations."""
    import yaml
    from transformers import __version__ as tf_version

    import pods

    hub_id = (
        base_model
        if base_model and not Path(base_model).exists() and re.fullmatch(r"[\w.-]+/[\w.-]+", base_model)
        else None
    )
    meta: dict[str, Any] = {"library_name": "transformers", "tags": sorted(set(tags) | set(tag_names))}
    if hub_id:
        meta["base_model"] = hub_id
    if dataset_name:
        meta["datasets"] = [dataset_name]
    base = (
        f"[{hub_id}](https://huggingface.co/{hub_id})"
        if hub_id
        else f"`{base_model}`"
        if base_model
        else "an unnamed model"
    )
    ga_text = (
        f"{ga} groups of n rollouts of the same prompt per optimizer step (the paper's GRPO-GA)"
        if ga_same_prompt and ga > 1
        else f"{ga} micro-batch(es) of different prompts per optimizer step"
    )
    rule_text = "the max-variance rule of the paper" if rule == "max_variance" else f"the `{rule}` rule"
    data_text = f" on `{dataset_name}`" if dataset_name else ""
    return f"""---
{yaml.safe_dump(meta, sort_keys=False).strip()}
---

# {model_name}

This model is a fine-tuned version of {base}{data_text}, trained with **GRPO-PODS** (policy optimization
with down-sampling; Xu et al., [arXiv:2504.13818](https://arxiv.org/abs/2504.13818)) using
[TRL](https://github.com/huggingface/trl) and the `pods` package (pods-rl {pods.__version__}).

## Training procedure

GRPO-PODS generates n = {n} rollouts per prompt and updates the policy on the m = {m} of them selected by
{rule_text}; advantages are normalised over the {"kept m" if normalize == "after" else "all n"} rollouts
(`pods_normalize={normalize}`). Gradient accumulation: {ga_text}.
{"With n == m this is vanilla GRPO." if n == m else ""}

Framework versions: TRL {_trl_version()}, Transformers {tf_version}, PyTorch {torch.__version__}.

## Citations

Cite PODS:

```bibtex
{PODS_BIBTEX}
```

GRPO:

```bibtex
{GRPO_BIBTEX}
```

TRL:

```bibtex
{TRL_BIBTEX}
```
"""


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
        # the KL gradient even on-policy; the paper's code adds plain beta * k3 (PAPER.md §1.4).
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
        save_total_limit=None,  # pruned by pods.run.RunController.on_save once pods_state.json is written
        report_to=[],
        disable_tqdm=True,
        log_completions=False,
        remove_unused_columns=False,
        dataloader_num_workers=0,
        shuffle_dataset=True,
    )
    return grpo_config_with_passthrough(kwargs, getattr(cfg, "trl", None) or {})


# --------------------------------------------------------------------------------------------
# The config's `trl:` pass-through section (pods.config.TRL_CONTROLLED / TRL_FIXED / TRL_OPEN)
# --------------------------------------------------------------------------------------------
def check_trl_passthrough(section: dict[str, Any]) -> None:
    """Raise ConfigError for a `trl:` field GRPOConfig does not have or a value it refuses.

    Builds a throw-away GRPOConfig with the fields on top of CPU-safe defaults, so TRL's and HF's own
    checks run; ``report_to`` names must be installed integrations.
    """
    import difflib
    import tempfile

    from pods.config import ConfigError, check_trl_keys

    check_trl_keys(section)
    names = [f.name for f in dataclasses.fields(GRPOConfig) if f.init]
    for name, value in section.items():
        if name not in names:
            close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
            hint = f"did you mean trl.{close[0]}?" if close else "see the fields of trl.GRPOConfig (TRL docs)"
            raise ConfigError(f"trl.{name}", value, f"is not a field of trl.GRPOConfig (trl {_trl_version()})", hint)
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

    from pods.config import ConfigError

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


def grpo_config_with_passthrough(kwargs: dict[str, Any], section: dict[str, Any]) -> GRPOConfig:
    """The GRPOConfig of ``kwargs`` (build_grpo_config's) updated with the config's `trl:` section."""
    from pods.config import ConfigError, check_trl_keys

    check_trl_keys(section)
    args = {**kwargs, **section}
    try:
        return GRPOConfig(**args)
    except TypeError as e:  # an unknown field: the load-time check names the closest one
        check_trl_passthrough(section)
        raise ConfigError("trl", section, f"is refused by GRPOConfig: {e}", "fix or remove the field") from None


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
    }
