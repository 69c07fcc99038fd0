"""GRPO, GRPO-GA and GRPO-PODS training on TRL 1.16's ``GRPOTrainer``, with the paper's wall clock.

Run it through the CLI (``python -m pods train experiments/tiny_a.yaml budget.max_steps=20``) or
from Python (``pods.trainer.train(cfg) -> run_dir``); ``pods eval RUN_DIR`` calls :func:`evaluate`.

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
per-prompt seeding, ``_get_train_sampler`` only to repeat each prompt n x GA times.
:func:`check_trl_compat` and tests/test_trl_hook.py fail loudly, naming the TRL internal that
moved, if a TRL upgrade breaks these assumptions.

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

Wall clock (PAPER.md §3.3, §3.5, §5): ``time_s`` is training time only: the sum of the optimizer
steps' wall time (generation + scoring + update); evaluation, logging and checkpointing are excluded.
Evaluations run at t = 0 (the base model), then whenever training time crosses the next point of the
grid ``eval.every_s`` (or every ``eval.every_steps`` steps), and once more at the end if the last
step was not on the grid. Training stops at ``budget.max_time_s`` and/or ``budget.max_steps``.

Resume: a checkpoint (HF Trainer state + optimizer + RNG) carries ``pods_state.json`` (training
clock, eval-grid position, log byte offsets) written last; a checkpoint without it is incomplete and
ignored. A restarted run resumes from the newest complete checkpoint and cuts the JSONL logs back to
the recorded offsets, so no line is duplicated; a finished run (summary.json present) is not rerun.

Environment variables: ``PODS_DEBUG_DUMP=DIR`` writes each step's gathered rewards, selection and
advantages per process to ``DIR/selection_rank{r}.jsonl`` (tests/test_distributed.py compares them);
``PODS_EVAL_BATCH_ROWS`` sets completions per evaluation ``generate()`` call (default 256; it fixes the
evaluation's seeding blocks); ``PODS_NO_PROGRESS=1`` hides the progress bar. On a busy CPU,
``OMP_NUM_THREADS=1`` makes step times far less erratic (torch's spinning threads suffer most from
oversubscription).

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
- With ``beta != 0`` TRL computes reference log-probs for all n rollouts before the hook drops n - m
  of them: extra compute, same result. Padding columns of the dropped rows are kept (as in the
  authors' code), so the update's tensors are as wide as the longest of the n completions.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
import re
import shutil
import sys
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import torch
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer
from trl.trainer.utils import RepeatSampler

from pods.grpo import pods_advantages
from pods.runlog import RunLogger, atomic_write_json, jsonable, peak_memory_mb, run_meta
from pods.selectors import select

__all__ = [
    "Generator",
    "HFGenerator",
    "NonFiniteRewardError",
    "PODSGRPOTrainer",
    "TRLCompatError",
    "VLLMGenerator",
    "build_grpo_config",
    "check_trl_compat",
    "downsample_rows",
    "evaluate",
    "evaluate_policy",
    "latest_checkpoint",
    "train",
]

STATE_FILE = "pods_state.json"  # written last into each checkpoint directory; marks it complete
DEBUG_ENV = "PODS_DEBUG_DUMP"  # directory: per-step selection dumps (selection_rank{r}.jsonl)
LOSS_TYPES = {"sequence": "grpo", "token": "bnpo"}  # pods aggregation -> TRL loss_type
ADV_EPS = 1e-4  # std epsilon of the authors' code and of TRL
# Completions per HF generate() call during evaluation ($PODS_EVAL_BATCH_ROWS; the tests shrink it to
# spread a few prompts over two processes). Evaluation results depend on it (it sets the seeding blocks).
EVAL_BATCH_ROWS = int(os.environ.get("PODS_EVAL_BATCH_ROWS", "256"))
_BIG_STEPS = 10**7
_BAR_FMT = "{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} s [{elapsed}<{remaining}] {postfix}"  # "no step cap" for time-budgeted runs (HF needs a finite max_steps)

# --------------------------------------------------------------------------------------------
# The TRL internals the hook relies on. check_trl_compat() verifies them at construction time and
# tests/test_trl_hook.py at test time; a TRL upgrade that moves one fails with its name.
# --------------------------------------------------------------------------------------------
TRL_HOOKS: dict[str, tuple[str, ...]] = {
    "_calculate_rewards": ("self", "inputs", "prompts", "completions", "completion_ids_list"),
    "_generate_and_score_completions": ("self", "inputs"),
    "_generate": ("self", "prompts"),
    "_generate_single_turn": ("self", "prompt_ids", "images", "multimodal_fields", "num_generations"),
    "_compute_loss": ("self", "model", "inputs"),
    "_get_train_sampler": ("self", "dataset"),
}
# Keys of the dict returned by _generate_and_score_completions: per-row (cut to the kept rows) and
# batch-level scalars (recomputed). Any other key is an error: we would not know how to cut it.
ROW_KEYS = (
    "prompt_ids",
    "prompt_mask",
    "completion_ids",
    "completion_mask",
    "advantages",
    "old_per_token_logps",
    "importance_sampling_ratio",
    "sampling_per_token_logps",
    "ref_per_token_logps",
    "tool_mask",
)
SCALAR_KEYS = ("num_items_in_batch",)
# TRL's attributes read by the hook.
TRL_ATTRS = ("num_generations", "reward_weights", "reward_func_names", "accelerator", "_metrics", "use_vllm")


class TRLCompatError(RuntimeError):
    """The installed TRL no longer matches what the PODS hook was written against (TRL 1.16.0)."""


class NonFiniteRewardError(ValueError):
    """A reward function returned NaN, inf or None."""


def check_trl_compat(cls: type = GRPOTrainer) -> None:
    """Raise :class:`TRLCompatError` naming the first TRL internal whose name or signature moved."""
    for name, expected in TRL_HOOKS.items():
        fn = getattr(cls, name, None)
        if fn is None:
            raise TRLCompatError(
                f"trl.GRPOTrainer.{name} no longer exists (trl {_trl_version()}); the PODS hook in pods/trainer.py "
                f"overrides it. Pin trl==1.16.0 or port PODSGRPOTrainer.{name} to the new TRL."
            )
        params = tuple(inspect.signature(fn).parameters)
        if params[: len(expected)] != expected:
            raise TRLCompatError(
                f"trl.GRPOTrainer.{name} changed signature (trl {_trl_version()}): expected parameters "
                f"{expected}, found {params}. Pin trl==1.16.0 or port PODSGRPOTrainer.{name}."
            )


def _trl_version() -> str:
    import trl

    return trl.__version__


def _mix_seed(*parts: int) -> int:
    """A 63-bit seed from integers (stable across runs, processes and Python versions)."""
    h = hashlib.blake2b(",".join(str(int(p)) for p in parts).encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") & ((1 << 63) - 1)


def _sync(device: torch.device | None = None) -> None:
    # Timers must not read CUDA's asynchronous queue as "done".
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


class _EpochRepeatSampler(RepeatSampler):
    """TRL's RepeatSampler over many data epochs in one pass, each epoch's order seeded by (seed, epoch).

    HF's resume fast-forwards through one long "epoch" with ``skip_first_batches``, so the prompt order
    of a resumed run equals the uninterrupted one (TRL's sampler would replay epoch 0's order after
    resuming in a later epoch). ``total_rows`` bounds ``__len__`` (HF derives max_steps from it).
    """

    def __init__(
        self,
        data_source,
        mini_repeat_count: int,
        batch_size: int,
        repeat_count: int,
        shuffle: bool,
        seed: int,
        total_rows: int,
    ):
        super().__init__(data_source, mini_repeat_count, batch_size, repeat_count, shuffle, seed)
        self.total_rows = total_rows
        if self.num_samples < batch_size:
            raise ValueError(
                f"the training set has {self.num_samples} prompts but one step needs {batch_size} distinct prompts; "
                "lower rollout.prompts_per_step or use a larger training set"
            )

    def __iter__(self) -> Iterator[int]:
        emitted, epoch = 0, 0
        while True:
            if self.shuffle:
                g = torch.Generator().manual_seed(_mix_seed(self.seed or 0, epoch, 0x5A3))
                order = torch.randperm(self.num_samples, generator=g).tolist()
            else:
                order = list(range(self.num_samples))
            for start in range(0, self.num_samples - self.batch_size + 1, self.batch_size):
                chunk = order[start : start + self.batch_size]
                for _ in range(self.repeat_count):
                    for index in chunk:
                        for _ in range(self.mini_repeat_count):
                            if emitted >= self.total_rows:
                                return
                            emitted += 1
                            yield index
            epoch += 1

    def __len__(self) -> int:
        return self.total_rows


# --------------------------------------------------------------------------------------------
# The trainer
# --------------------------------------------------------------------------------------------
class PODSGRPOTrainer(GRPOTrainer):
    """TRL's GRPOTrainer with PODS down-sampling between the rewards and the advantages.

    Extra keyword arguments (everything else goes to ``GRPOTrainer``):
        pods_m: rollouts kept per group of n (``args.num_generations``); m == n is vanilla GRPO.
        pods_rule: a :data:`pods.selectors.RULES` name.
        pods_normalize: "after" (kept-subset statistics) or "before" (all-n statistics).
        pods_grad_accum: GA groups of n per prompt per optimizer step (must equal
            ``args.gradient_accumulation_steps`` and ``args.steps_per_generation``).
        pods_seed: seeds selection (random rule) and per-prompt rollout sampling.
        pods_max_steps: bounds the sampler length (the run's max_steps).
        pods_scheduler_steps: horizon of the LR schedule (default: max_steps).
        pods_seeded_generation: sample each prompt group under its own seed (HF backend only).
    """

    def __init__(
        self,
        *args: Any,
        pods_m: int,
        pods_rule: str = "max_variance",
        pods_normalize: str = "after",
        pods_grad_accum: int = 1,
        pods_seed: int = 0,
        pods_max_steps: int | None = None,
        pods_scheduler_steps: int | None = None,
        pods_seeded_generation: bool = True,
        **kwargs: Any,
    ):
        check_trl_compat()
        self.pods_m = int(pods_m)
        self.pods_rule = pods_rule
        self.pods_normalize = pods_normalize
        self.pods_grad_accum = int(pods_grad_accum)
        self.pods_seed = int(pods_seed)
        self.pods_seeded_generation = pods_seeded_generation
        self.pods_scheduler_steps = pods_scheduler_steps
        self._pods_rewards_per_func: torch.Tensor | None = None
        self.pods_timing: dict[str, float] = defaultdict(float)  # per optimizer step; reset by the controller
        self.pods_last_selection: dict[str, Any] = {}
        super().__init__(*args, **kwargs)
        for attr in TRL_ATTRS:
            if not hasattr(self, attr):
                raise TRLCompatError(
                    f"GRPOTrainer no longer sets self.{attr} (trl {_trl_version()}); port pods/trainer.py"
                )
        self.pods_max_steps = int(pods_max_steps or self.args.max_steps)
        n, m, ga = self.num_generations, self.pods_m, self.pods_grad_accum
        if not 1 <= m <= n:
            raise ValueError(f"rollout.m={m} must be between 1 and rollout.n={n}; m == n is vanilla GRPO")
        if self.args.per_device_train_batch_size % n:
            raise ValueError(
                f"per_device_train_batch_size={self.args.per_device_train_batch_size} must be a multiple of "
                f"num_generations={n} so that each process holds whole prompt groups"
            )
        if self.args.gradient_accumulation_steps != ga or self.args.steps_per_generation != ga:
            raise ValueError(
                f"PODS needs gradient_accumulation_steps == steps_per_generation == pods_grad_accum ({ga}); got "
                f"{self.args.gradient_accumulation_steps} and {self.args.steps_per_generation} (use build_grpo_config)"
            )
        if self.multi_objective_aggregation != "sum_then_normalize":
            raise ValueError("PODS selects on the summed reward; use multi_objective_aggregation='sum_then_normalize'")
        if self.num_iterations != 1:
            raise ValueError("PODS runs one update per generation (num_iterations=1), as every setting of the paper")

    def create_scheduler(self, num_training_steps: int, optimizer=None):
        # The LR schedule may span a different horizon than the step cap (see _step_plan).
        return super().create_scheduler(self.pods_scheduler_steps or num_training_steps, optimizer)

    # -- data: each prompt repeated n x GA times per generation round --------------------------
    def _get_train_sampler(self, dataset=None):
        dataset = self.train_dataset if dataset is None else dataset
        rows_per_prompt = self.num_generations * self.pods_grad_accum  # PODS/GA: GA groups of n, same prompt
        prompts = self.args.generation_batch_size // rows_per_prompt  # distinct prompts per round, all processes
        # HF fetches GA dataloader batches of generation_batch_size / num_processes rows per optimizer step
        total_rows = self.pods_max_steps * self.args.steps_per_generation * self.args.generation_batch_size
        return _EpochRepeatSampler(
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
        _sync(self.accelerator.device)
        t0 = time.perf_counter()
        out = super()._generate(prompts)
        _sync(self.accelerator.device)
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
                torch.manual_seed(_mix_seed(self.pods_seed, self.state.global_step, offset + g))
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
    def _generate_and_score_completions(self, inputs):
        self._pods_rewards_per_func = None
        batch = super()._generate_and_score_completions(inputs)
        if not self.model.training:
            return batch
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
        gen = torch.Generator().manual_seed(_mix_seed(self.pods_seed, self.state.global_step, 0x5E1))
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


# --------------------------------------------------------------------------------------------
# Generation backends for evaluation
# --------------------------------------------------------------------------------------------
class Generator(Protocol):
    """``generate(prompts, n, temperature, max_tokens, seed) -> [[completion] * n] * len(prompts)``."""

    def generate(
        self, prompts: Sequence[Any], n: int, temperature: float, max_tokens: int, seed: int | None = None
    ) -> list[list[str]]: ...


def _is_chat(prompt: Any) -> bool:
    return isinstance(prompt, list) and bool(prompt) and isinstance(prompt[0], dict) and "role" in prompt[0]


def _encode_prompts(tokenizer: Any, prompts: Sequence[Any]) -> list[list[int]]:
    # The same encoding as GRPOTrainer._tokenize_prompts, so evaluation sees the training prompts.
    if _is_chat(prompts[0]):
        enc = tokenizer.apply_chat_template(list(prompts), add_generation_prompt=True, tokenize=True, return_dict=True)
        return [list(x) for x in enc["input_ids"]]
    return [list(x) for x in tokenizer(text=list(prompts))["input_ids"]]


class HFGenerator:
    """Batched sampling with ``model.generate`` (any device); tested on CPU.

    Completions end at the first EOS token (kept out of the text) or at ``max_tokens``; the token
    counts of the last call are in ``self.last_lengths`` (same layout as the return value).
    """

    def __init__(self, model: Any, tokenizer: Any, top_p: float = 1.0, batch_rows: int | None = None):
        self.model = model
        self.tokenizer = tokenizer
        self.top_p = top_p
        self.batch_rows = batch_rows or EVAL_BATCH_ROWS
        self.last_lengths: list[list[int]] = []
        eos = getattr(model.generation_config, "eos_token_id", None) or tokenizer.eos_token_id
        self.eos_ids = [eos] if isinstance(eos, int) else list(eos or [])
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (self.eos_ids or [0])[0]

    @torch.no_grad()
    def generate(
        self, prompts: Sequence[Any], n: int, temperature: float, max_tokens: int, seed: int | None = None
    ) -> list[list[str]]:
        from transformers import GenerationConfig

        if n < 1 or max_tokens < 1:
            raise ValueError(f"n and max_tokens must be >= 1, got n={n}, max_tokens={max_tokens}")
        sampling = temperature > 0
        gen_cfg = GenerationConfig(
            max_new_tokens=max_tokens,
            do_sample=sampling,
            temperature=temperature if sampling else None,
            top_p=self.top_p if sampling else None,
            top_k=0 if sampling else None,
            pad_token_id=self.pad_id,
            eos_token_id=self.eos_ids or None,
            bos_token_id=self.tokenizer.bos_token_id,
        )
        device = next(self.model.parameters()).device
        prompt_ids = _encode_prompts(self.tokenizer, prompts)
        per_call = max(1, self.batch_rows // n)  # prompts per generate() call
        texts: list[list[str]] = []
        self.last_lengths = []
        devices = [device.index or 0] if device.type == "cuda" else []
        for start in range(0, len(prompt_ids), per_call):
            rows = [x for x in prompt_ids[start : start + per_call] for _ in range(n)]  # each prompt n times
            width = max(len(x) for x in rows)
            ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
            attn = torch.zeros((len(rows), width), dtype=torch.long)
            for i, x in enumerate(rows):  # left padding, as TRL
                ids[i, width - len(x) :] = torch.tensor(x, dtype=torch.long)
                attn[i, width - len(x) :] = 1
            with torch.random.fork_rng(devices=devices):
                if seed is not None:
                    torch.manual_seed(_mix_seed(seed, start))
                out = self.model.generate(
                    input_ids=ids.to(device), attention_mask=attn.to(device), generation_config=gen_cfg
                )
            comp = out[:, width:].cpu().tolist()
            for p in range(len(rows) // n):
                row_txt, row_len = [], []
                for toks in comp[p * n : (p + 1) * n]:
                    cut = next((k for k, t in enumerate(toks) if t in self.eos_ids), None)
                    if cut is None:  # no EOS: the completion ran to max_tokens (or stopped with the batch)
                        length = len(toks)
                        while length and toks[length - 1] == self.pad_id and self.pad_id not in self.eos_ids:
                            length -= 1
                        body = toks[:length]
                    else:
                        length, body = cut + 1, toks[:cut]  # EOS counts as a generated token, as in TRL
                    row_txt.append(self.tokenizer.decode(body, skip_special_tokens=True))
                    row_len.append(length)
                texts.append(row_txt)
                self.last_lengths.append(row_len)
        return texts


class VLLMGenerator:
    """Sampling with vLLM (GPU only; imported lazily). ``llm`` is a ``vllm.LLM`` or a model path.

    Inside training with ``rollout.backend: vllm`` it reuses TRL's colocated engine, whose weights TRL
    syncs before each use. Not tested on CPU machines (vLLM cannot be installed there).
    """

    def __init__(self, llm: Any, tokenizer: Any, top_p: float = 1.0, gpu_memory_utilization: float = 0.5):
        try:
            import vllm
        except ImportError as e:
            raise ImportError(
                "the vllm backend needs the 'vllm' package, which runs only on CUDA GPUs: install it on a GPU "
                "machine (pip install vllm) or set rollout.backend=hf"
            ) from e
        self._vllm = vllm
        self.tokenizer = tokenizer
        self.top_p = top_p
        self.llm = (
            llm
            if not isinstance(llm, (str, os.PathLike))
            else vllm.LLM(model=str(llm), gpu_memory_utilization=gpu_memory_utilization)
        )
        self.last_lengths: list[list[int]] = []

    def generate(
        self, prompts: Sequence[Any], n: int, temperature: float, max_tokens: int, seed: int | None = None
    ) -> list[list[str]]:
        params = self._vllm.SamplingParams(
            n=n, temperature=temperature, top_p=self.top_p, max_tokens=max_tokens, seed=seed
        )
        token_prompts = [{"prompt_token_ids": ids} for ids in _encode_prompts(self.tokenizer, prompts)]
        outs = self.llm.generate(token_prompts, sampling_params=params, use_tqdm=False)
        self.last_lengths = [[len(o.token_ids) for o in out.outputs] for out in outs]
        return [[o.text for o in out.outputs] for out in outs]


# --------------------------------------------------------------------------------------------
# Evaluation (PAPER.md §3.5: sample `repeats` completions per test prompt at `temperature`, average)
# --------------------------------------------------------------------------------------------
def evaluate_policy(
    generator: Any,
    examples: Sequence[dict],
    task: str,
    repeats: int,
    temperature: float,
    max_tokens: int,
    seed: int = 0,
    variant: str = "paper",
    process_index: int = 0,
    num_processes: int = 1,
    gather: Any = None,
) -> dict[str, float]:
    """Mean accuracy / format accuracy / both / completion length over ``repeats`` samples per example.

    Batches of prompts are spread round-robin over processes and seeded by their global position, so
    the result does not depend on the number of processes; ``gather`` (accelerate's gather_object)
    collects the per-example scores.
    """
    from pods.rewards import eval_metrics

    if not examples:
        raise ValueError(f"no evaluation examples for task {task!r}; check eval.datasets and eval.max_examples")
    per_call = max(1, EVAL_BATCH_ROWS // repeats)
    mine: list[tuple[int, float, float, float, float]] = []
    for b, start in enumerate(range(0, len(examples), per_call)):
        if b % num_processes != process_index:
            continue
        chunk = examples[start : start + per_call]
        texts = generator.generate(
            [e["prompt"] for e in chunk], repeats, temperature, max_tokens, seed=_mix_seed(seed, b)
        )
        lengths = getattr(generator, "last_lengths", None) or [[0] * repeats for _ in chunk]
        for i, (ex, outs) in enumerate(zip(chunk, texts, strict=True)):
            for j, text in enumerate(outs):
                d = eval_metrics(text, ex["answer"], task, variant)
                mine.append(
                    (
                        start + i,
                        float(d["accuracy"]),
                        float(d["format_accuracy"]),
                        float(d["both_accuracy"]),
                        float(lengths[i][j]),
                    )
                )
    rows = gather(mine) if gather is not None and num_processes > 1 else mine
    if len(rows) != len(examples) * repeats:
        raise RuntimeError(f"evaluation scored {len(rows)} completions, expected {len(examples) * repeats}")
    k = len(rows)
    return {
        "accuracy": sum(r[1] for r in rows) / k,
        "format_accuracy": sum(r[2] for r in rows) / k,
        "both_accuracy": sum(r[3] for r in rows) / k,
        "completion_len_mean": sum(r[4] for r in rows) / k,
        "n_examples": len(examples),
        "repeats": repeats,
    }


# --------------------------------------------------------------------------------------------
# Run control: wall clock, evaluation grid, logs, checkpoints (boilerplate around the algorithm)
# --------------------------------------------------------------------------------------------
_CKPT_RE = re.compile(r"^checkpoint-(\d+)$")


def latest_checkpoint(ckpt_root: str | os.PathLike) -> tuple[Path | None, dict | None]:
    """The newest *complete* checkpoint under ``ckpt_root`` (one holding pods_state.json) and its state."""
    root = Path(ckpt_root)
    if not root.is_dir():
        return None, None
    found = []
    for d in root.iterdir():
        mt = _CKPT_RE.match(d.name)
        if mt and d.is_dir() and (d / STATE_FILE).exists():
            try:
                found.append((int(mt.group(1)), d, json.loads((d / STATE_FILE).read_text())))
            except (json.JSONDecodeError, OSError):
                continue
    if not found:
        return None, None
    _, path, state = max(found, key=lambda t: t[0])
    return path, state


def _prune_checkpoints(ckpt_root: Path, keep: Path | None) -> None:
    """Delete every checkpoint directory except ``keep`` (incomplete ones included)."""
    if not ckpt_root.is_dir():
        return
    for d in ckpt_root.iterdir():
        if d.is_dir() and _CKPT_RE.match(d.name) and (keep is None or d.resolve() != keep.resolve()):
            shutil.rmtree(d, ignore_errors=True)


class _RunController(TrainerCallback):
    """Training clock, evaluation grid, metrics/eval logging, checkpoint state, progress bar."""

    def __init__(
        self, cfg: Any, logger: RunLogger, eval_sets: list[tuple[str, list[dict]]], state: dict | None, use_cuda: bool
    ):
        self.cfg = cfg
        self.log = logger
        self.eval_sets = eval_sets
        self.use_cuda = use_cuda
        self.trainer: PODSGRPOTrainer | None = None
        st = state or {}
        self.train_time_s = float(st.get("train_time_s", 0.0))
        self.next_grid = int(st.get("next_grid", 1))  # next eval point: next_grid * every (s or steps)
        self.evals_done = int(st.get("evals_done", 0))
        self.last_eval_step = st.get("last_eval_step")
        self.stop_reason = st.get("stop_reason")
        self.totals = defaultdict(float, st.get("totals", {}))
        self._t0 = 0.0
        self._pending: dict[str, float] = {}
        self._bar = None

    # -- helpers -------------------------------------------------------------------------------
    @property
    def acc(self):
        return self.trainer.accelerator

    def state_dict(self) -> dict:
        return {
            "train_time_s": self.train_time_s,
            "next_grid": self.next_grid,
            "evals_done": self.evals_done,
            "last_eval_step": self.last_eval_step,
            "stop_reason": self.stop_reason,
            "totals": dict(self.totals),
            "offsets": self.log.offsets(),
        }

    def _shared_time(self, t: float) -> float:
        # Every process must take the same eval/stop decisions: use the main process's clock.
        if self.acc.num_processes == 1:
            return t
        from accelerate.utils import broadcast

        return float(broadcast(torch.tensor([t], dtype=torch.float64, device=self.acc.device), 0).item())

    def run_eval(self, step: int, final: bool = False, grid_index: int | None = None) -> None:
        tr = self.trainer
        ecfg = self.cfg.eval
        t0 = time.perf_counter()
        model = tr.model
        was_training = model.training
        model.eval()
        try:
            from accelerate.utils import gather_object
            from trl.models import unwrap_model_for_generation

            ctx = (
                contextlib.nullcontext(tr.accelerator.unwrap_model(model))
                if tr.use_vllm
                else unwrap_model_for_generation(
                    tr.model_wrapped,
                    tr.accelerator,
                    gradient_checkpointing_kwargs=tr.args.gradient_checkpointing_kwargs,
                )
            )
            with ctx as unwrapped:
                if tr.use_vllm:
                    if tr.state.global_step != getattr(tr, "_last_loaded_step", -1):
                        tr.vllm_generation.sync_weights()
                        tr._last_loaded_step = tr.state.global_step
                    gen = VLLMGenerator(tr.vllm_generation.llm, tr.processing_class, top_p=1.0)
                else:
                    gen = HFGenerator(unwrapped, tr.processing_class, top_p=1.0)
                results = []
                for d_idx, (name, examples) in enumerate(self.eval_sets):
                    t1 = time.perf_counter()
                    res = evaluate_policy(
                        gen,
                        examples,
                        name,
                        ecfg.repeats,
                        ecfg.temperature,
                        ecfg.max_completion_length,
                        seed=_mix_seed(self.cfg.seed, step, d_idx, 0xE7),
                        variant=self.cfg.task.reward,
                        process_index=tr.accelerator.process_index,
                        num_processes=tr.accelerator.num_processes,
                        gather=gather_object,
                    )
                    results.append((name, res, time.perf_counter() - t1))
        finally:
            if was_training:
                model.train()
        for name, res, dt in results:
            self.log.log_eval(
                {
                    "step": step,
                    "time_s": self.train_time_s,
                    "dataset": name,
                    **res,
                    "eval_time_s": dt,
                    "grid_index": grid_index,
                    "final": final,
                }
            )
        self.evals_done += 1
        self.last_eval_step = step
        self.totals["eval_time_s"] += time.perf_counter() - t0
        if self._bar is not None and results:
            self._bar.set_postfix_str(f"step {step} acc {results[0][1]['accuracy']:.3f}", refresh=False)

    # -- callback events -----------------------------------------------------------------------
    def on_train_begin(self, args, state, control, **kwargs):
        if self.acc.is_main_process and not os.environ.get("PODS_NO_PROGRESS"):
            from tqdm.auto import tqdm

            budget = self.cfg.budget
            if budget.max_time_s is not None:
                self._bar = tqdm(
                    total=float(budget.max_time_s),
                    initial=min(self.train_time_s, budget.max_time_s),
                    unit="s",
                    desc="train time",
                    dynamic_ncols=True,
                    bar_format=_BAR_FMT,
                )
            else:
                self._bar = tqdm(
                    total=budget.max_steps, initial=state.global_step, unit="step", desc="train", dynamic_ncols=True
                )
        if self.evals_done == 0:  # PAPER §3.5: the base model at t = 0
            self.run_eval(step=state.global_step, grid_index=0)

    def on_step_begin(self, args, state, control, **kwargs):
        _sync()
        if self.use_cuda:
            torch.cuda.reset_peak_memory_stats()
        self.trainer.pods_timing.clear()
        self._t0 = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        _sync()
        dt = time.perf_counter() - self._t0
        self.train_time_s = self._shared_time(self.train_time_s + dt)
        timing = self.trainer.pods_timing
        gen = timing.get("gen_s", 0.0)
        self._pending = {
            "step_time_s": dt,
            "gen_time_s": gen,
            "update_time_s": max(dt - gen, 0.0),
            "reward_time_s": timing.get("reward_s", 0.0),
            "peak_mem_mb": peak_memory_mb(self.use_cuda),
        }
        self.totals["gen_time_s"] += gen
        self.totals["update_time_s"] += max(dt - gen, 0.0)
        step = state.global_step
        budget, ecfg = self.cfg.budget, self.cfg.eval
        # Evaluation grid: in steps (deterministic tests) or in seconds of training time (the paper).
        due, grid_index = False, None
        if ecfg.every_steps:
            if step >= self.next_grid * ecfg.every_steps:
                due, grid_index = True, self.next_grid
                self.next_grid = step // ecfg.every_steps + 1
        elif ecfg.every_s:
            if self.train_time_s >= self.next_grid * ecfg.every_s:
                due, grid_index = True, self.next_grid
                self.next_grid = int(self.train_time_s // ecfg.every_s) + 1  # a long step can skip points
        if budget.max_time_s is not None and self.train_time_s >= budget.max_time_s:
            self.stop_reason = "max_time"
        elif step >= state.max_steps:
            self.stop_reason = "max_steps"
        if self.stop_reason:
            control.should_training_stop = True
            control.should_save = True  # a kill after this point resumes straight to the summary
        if due or (self.stop_reason and self.last_eval_step != step):
            self.run_eval(step=step, grid_index=grid_index, final=not due)
        if self._bar is not None:
            if budget.max_time_s is not None:
                self._bar.n = min(self.train_time_s, float(budget.max_time_s))
                self._bar.refresh()
            else:
                self._bar.update(1)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs is None or "loss" not in logs or not self.acc.is_main_process:
            return  # the final train() summary log has "train_loss", not "loss"
        g = logs.get
        row = {
            "step": state.global_step,
            "time_s": self.train_time_s,
            **{k: self._pending.get(k) for k in ("gen_time_s", "update_time_s", "reward_time_s", "step_time_s")},
            "reward_mean": g("reward"),
            "reward_std": g("reward_std"),
            "kept_reward_mean": g("kept_reward"),
            "kept_reward_std": g("kept_reward_std"),
            "frac_zero_std": g("frac_reward_zero_std"),
            "kept_frac_zero_std": g("kept_frac_reward_zero_std"),
            "completion_len_mean": g("completions/mean_length"),
            "kept_completion_len_mean": g("kept_completion_length"),
            "clipped_ratio": g("completions/clipped_ratio"),
            "loss": g("loss"),
            "grad_norm": g("grad_norm"),
            "lr": g("learning_rate"),
            "entropy": g("entropy"),
            "peak_mem_mb": self._pending.get("peak_mem_mb"),
        }
        for key, val in logs.items():
            mt = re.match(r"^rewards/(.+)/mean$", key)
            if mt:
                row[f"reward_{mt.group(1)}_mean"] = val
        self.log.log_metrics(row)

    def on_save(self, args, state, control, **kwargs):
        self.acc.wait_for_everyone()  # every process has written its part of the checkpoint
        ckpt = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if self.acc.is_main_process:
            atomic_write_json(ckpt / STATE_FILE, {"global_step": state.global_step, **self.state_dict()})
            _prune_checkpoints(Path(args.output_dir), keep=ckpt)
        self.acc.wait_for_everyone()

    def on_train_end(self, args, state, control, **kwargs):
        if self._bar is not None:
            self._bar.close()


# --------------------------------------------------------------------------------------------
# Config -> TRL
# --------------------------------------------------------------------------------------------
def _use_cuda(cfg: Any) -> bool:
    dev = cfg.hardware.device
    if dev == "cuda" and not torch.cuda.is_available():
        raise ValueError("hardware.device=cuda but no CUDA GPU is visible; set hardware.device=cpu or auto")
    return dev == "cuda" or (dev == "auto" and torch.cuda.is_available())


def build_grpo_config(
    cfg: Any, output_dir: str | os.PathLike, num_processes: int, use_cuda: bool, max_steps: int
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
    return GRPOConfig(
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
        top_k=0,
        max_completion_length=ro.max_completion_length,
        use_vllm=ro.backend == "vllm",
        vllm_mode="colocate",
        vllm_gpu_memory_utilization=ro.vllm_gpu_memory_utilization,
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
        gradient_checkpointing=bool(cfg.policy.gradient_checkpointing) and use_cuda,
        use_cpu=not use_cuda,
        # bookkeeping
        seed=cfg.seed,
        logging_steps=1,
        save_strategy="steps",
        save_steps=cfg.checkpoint.every_steps,
        save_total_limit=None,  # pruned by _RunController.on_save once pods_state.json is written
        report_to=[],
        disable_tqdm=True,
        log_completions=False,
        remove_unused_columns=False,
        dataloader_num_workers=0,
        shuffle_dataset=True,
    )


def _run_dir(cfg: Any) -> Path:
    from pods.config import resolve_run_dir

    return Path(resolve_run_dir(cfg))


def _config_dict(cfg: Any) -> dict:
    from pods.config import to_dict

    return to_dict(cfg)


def _load_eval_sets(cfg: Any, tokenizer: Any) -> list[tuple[str, list[dict]]]:
    from pods.data import load_task

    sets = []
    for name in cfg.eval.datasets:
        sets.append(
            (
                name,
                load_task(
                    name,
                    "test",
                    path=cfg.task.test if name == cfg.task.name else None,
                    prompt_style=cfg.task.prompt_style,
                    tokenizer=tokenizer,
                    max_prompt_length=cfg.task.max_prompt_length,
                    limit=cfg.eval.max_examples,
                    seed=cfg.seed,
                ),
            )
        )
    return sets


def _train_dataset(records: list[dict]):
    from datasets import Dataset

    # Columns present in every record (reward functions receive them as keyword arguments).
    keys = [k for k in records[0] if all(k in r for r in records)]
    return Dataset.from_list([{k: r[k] for k in keys} for r in records])


def _step_plan(cfg: Any, n_train: int) -> tuple[int, int]:
    """(max_steps for HF, horizon of the LR schedule) in optimizer steps.

    A constant schedule runs until the time budget (or budget.max_steps). A decaying schedule needs a
    horizon: optim.scheduler_steps, else budget.max_steps, else one pass over the training prompts (the
    authors' (e) recipe: num_train_epochs 1); without budget.max_steps training stops at that horizon.
    """
    epoch = max(1, n_train // cfg.rollout.prompts_per_step)
    if cfg.optim.scheduler == "constant":
        max_steps = int(cfg.budget.max_steps or _BIG_STEPS)
        return max_steps, max_steps
    horizon = int(cfg.optim.scheduler_steps or cfg.budget.max_steps or epoch)
    return int(cfg.budget.max_steps or horizon), horizon


def pin_cpu_threads(cfg: Any, use_cuda: bool) -> None:
    """CPU runs use ``hardware.threads`` torch threads (default 1).

    Measured on a 2-core machine with other jobs running: 64 tiny rollouts took 0.31 s with 1 thread and
    47 s with 2, because torch's OpenMP pool spins when its threads compete with other processes.
    """
    if not use_cuda:
        torch.set_num_threads(getattr(cfg.hardware, "threads", None) or 1)


def pods_trainer_kwargs(cfg: Any, max_steps: int, scheduler_steps: int | None) -> dict[str, Any]:
    """The PODS arguments of :class:`PODSGRPOTrainer`, read from a ``TrainConfig``."""
    return {
        "pods_m": cfg.rollout.m,
        "pods_rule": cfg.rollout.rule,
        "pods_normalize": cfg.rollout.normalize,
        "pods_grad_accum": cfg.optim.grad_accum,
        "pods_seed": cfg.seed,
        "pods_max_steps": max_steps,
        "pods_scheduler_steps": scheduler_steps,
    }


def train(cfg: Any) -> Path:
    """Train one run described by ``cfg`` (a ``pods.config.TrainConfig``); returns its run directory.

    Resumes from the newest complete checkpoint if the run directory has one; returns at once if the
    run already finished (summary.json present).
    """
    from accelerate import PartialState
    from transformers import set_seed

    from pods.data import load_task
    from pods.models import load_policy
    from pods.rewards import trl_reward_funcs

    use_cuda = _use_cuda(cfg)
    # cpu=True matters under `accelerate launch` on a CPU machine: without it the shared state comes up
    # as one non-distributed process, before TrainingArguments(use_cpu=True) could join the gloo group.
    dist = PartialState(cpu=not use_cuda)
    if dist.num_processes != cfg.hardware.num_processes:
        raise ValueError(
            f"the run was launched with {dist.num_processes} process(es) but hardware.num_processes="
            f"{cfg.hardware.num_processes}; set hardware.num_processes={dist.num_processes} or launch with "
            f"accelerate launch --num_processes {cfg.hardware.num_processes}"
        )
    if getattr(cfg.policy, "load_in_4bit", False):
        raise ValueError(
            "policy.load_in_4bit=true is not supported by pods.models.load_policy yet; set "
            "policy.load_in_4bit=false (bf16 LoRA, as the paper describes)"
        )
    run_dir = _run_dir(cfg)
    logger = RunLogger(run_dir, enabled=dist.is_main_process)
    if logger.finished:
        if dist.is_main_process:
            print(f"[pods] {run_dir} already finished (summary.json present); not rerunning", file=sys.stderr)
        return run_dir
    cfg_dict = _config_dict(cfg)
    old = logger.read_config()
    if old is not None:
        old = {k: v for k, v in old.items() if k != "meta"}
        if jsonable(old) != jsonable(cfg_dict):
            diff = sorted(k for k in set(old) | set(cfg_dict) if old.get(k) != cfg_dict.get(k))
            raise ValueError(
                f"{run_dir} holds a run with a different config (sections differ: {diff}); choose another out_dir "
                "or delete that directory to start over"
            )
    ckpt_root = run_dir / "checkpoints"
    ckpt, state = latest_checkpoint(ckpt_root)
    dist.wait_for_everyone()
    if dist.is_main_process:
        if ckpt is None:
            _prune_checkpoints(ckpt_root, keep=None)
            logger.truncate(None)  # a fresh start: no line from an earlier, uncheckpointed attempt survives
        else:
            _prune_checkpoints(ckpt_root, keep=ckpt)  # incomplete newer checkpoints
            logger.truncate(state["offsets"])
        if old is None:
            logger.write_config(cfg_dict, run_meta(dist.num_processes))
    dist.wait_for_everyone()

    pin_cpu_threads(cfg, use_cuda)
    set_seed(cfg.seed)
    device = "cuda" if use_cuda else "cpu"
    model, tokenizer = load_policy(
        cfg.policy.model,
        dtype=cfg.policy.dtype,
        device=device,
        lora=cfg.policy.lora,
        attn_implementation=cfg.policy.attn_implementation,
    )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    train_records = load_task(
        cfg.task.name,
        "train",
        path=cfg.task.train,
        prompt_style=cfg.task.prompt_style,
        tokenizer=tokenizer,
        max_prompt_length=cfg.task.max_prompt_length,
        seed=cfg.seed,
    )
    eval_sets = _load_eval_sets(cfg, tokenizer)
    max_steps, scheduler_steps = _step_plan(cfg, len(train_records))
    args = build_grpo_config(cfg, ckpt_root, dist.num_processes, use_cuda, max_steps)
    controller = _RunController(cfg, logger, eval_sets, state, use_cuda)
    trainer = PODSGRPOTrainer(
        model=model,
        reward_funcs=trl_reward_funcs(cfg.task.name, cfg.task.reward),
        args=args,
        train_dataset=_train_dataset(train_records),
        processing_class=tokenizer,
        callbacks=[controller],
        **pods_trainer_kwargs(cfg, max_steps, scheduler_steps),
    )
    controller.trainer = trainer
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    for cb in (PrinterCallback, ProgressCallback):  # our progress bar and metrics.jsonl replace them
        trainer.remove_callback(cb)
    wall0 = time.time()
    if state and state.get("stop_reason"):
        # Killed after the stop step was checkpointed: no more training, only the final weights and summary.
        trainer._load_from_checkpoint(str(ckpt))
    else:
        trainer.train(resume_from_checkpoint=str(ckpt) if ckpt is not None else None)
    if controller.stop_reason is None:
        controller.stop_reason = "data_exhausted"
    trainer.save_model(str(run_dir / "final"))  # the final policy (LoRA adapter or full weights); all ranks
    trainer.accelerator.wait_for_everyone()
    if dist.is_main_process:
        _write_summary(logger, cfg, controller, trainer, time.time() - wall0)
    trainer.accelerator.wait_for_everyone()
    return run_dir


def _write_summary(logger: RunLogger, cfg: Any, ctl: _RunController, trainer: PODSGRPOTrainer, wall_s: float) -> None:
    metrics = logger.metrics()
    evals = logger.evals()
    steps = metrics[-1]["step"] if metrics else trainer.state.global_step
    final = {}
    best = {}
    for row in evals:
        final[row["dataset"]] = row["accuracy"]
        best[row["dataset"]] = max(best.get(row["dataset"], -1.0), row["accuracy"])
    logger.write_summary(
        {
            "status": "finished",
            "stop_reason": ctl.stop_reason,
            "steps": steps,
            "time_s": ctl.train_time_s,
            "s_per_step": ctl.train_time_s / steps if steps else None,
            "gen_time_s": ctl.totals.get("gen_time_s", 0.0),
            "update_time_s": ctl.totals.get("update_time_s", 0.0),
            "eval_time_s": ctl.totals.get("eval_time_s", 0.0),
            "wall_s_last_session": wall_s,
            "n_evals": len(evals),
            "final_accuracy": final,
            "best_accuracy": best,
            "peak_mem_mb": max((m.get("peak_mem_mb") or 0.0 for m in metrics), default=None),
            "n": cfg.rollout.n,
            "m": cfg.rollout.m,
            "rule": cfg.rollout.rule,
            "seed": cfg.seed,
        }
    )


def evaluate(run_dir: str | os.PathLike, overrides: Sequence[str] = ()) -> dict:
    """Evaluate the final policy of a finished run (``run_dir/final``) on its eval datasets.

    ``overrides`` are dotted ``key=value`` strings applied to the run's config (e.g.
    ``eval.repeats=1``, ``eval.max_examples=100``). Returns ``{dataset: metrics}`` and appends one line
    per dataset to ``run_dir/posthoc_eval.jsonl``.
    """
    from pods.config import from_dict
    from pods.models import load_policy

    run_dir = Path(run_dir)
    cfg_path = run_dir / "config.json"
    if not cfg_path.exists():
        raise FileNotFoundError(f"{cfg_path} not found: pass the directory of a run made by `pods train`")
    final = run_dir / "final"
    if not final.exists():
        raise FileNotFoundError(f"{final} not found: the run has not finished; rerun `pods train` to complete it")
    raw = {k: v for k, v in json.loads(cfg_path.read_text()).items() if k != "meta"}
    cfg = _apply_overrides(from_dict(raw), overrides)
    use_cuda = _use_cuda(cfg)
    pin_cpu_threads(cfg, use_cuda)
    model, tokenizer = _load_final(final, cfg, use_cuda, load_policy)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.eval()
    if cfg.rollout.backend == "vllm":
        gen: Any = VLLMGenerator(str(final), tokenizer)
    else:
        gen = HFGenerator(model, tokenizer)
    out = {}
    for name, examples in _load_eval_sets(cfg, tokenizer):
        t0 = time.perf_counter()
        res = evaluate_policy(
            gen,
            examples,
            name,
            cfg.eval.repeats,
            cfg.eval.temperature,
            cfg.eval.max_completion_length,
            seed=_mix_seed(cfg.seed, 0xF1),
            variant=cfg.task.reward,
        )
        res["eval_time_s"] = time.perf_counter() - t0
        out[name] = res
        RunLogger(run_dir)._append(
            run_dir / "posthoc_eval.jsonl", {"dataset": name, **res, "overrides": list(overrides)}
        )
    return out


def _apply_overrides(cfg: Any, overrides: Sequence[str]) -> Any:
    from pods.config import apply_overrides, from_dict, to_dict

    return from_dict(apply_overrides(to_dict(cfg), list(overrides))) if overrides else cfg


def _load_final(final: Path, cfg: Any, use_cuda: bool, load_policy: Any):
    """Load the saved final policy: a LoRA adapter on the configured base model, or full weights.

    The tokenizer always comes from the configured spec (a tiny model's character tokenizer must not
    be re-guessed by AutoTokenizer from the saved directory).
    """
    from transformers import AutoModelForCausalLM

    from pods.models import DTYPES

    device = "cuda" if use_cuda else "cpu"
    base, tokenizer = load_policy(
        cfg.policy.model,
        dtype=cfg.policy.dtype,
        device=device,
        lora=None,
        attn_implementation=cfg.policy.attn_implementation,
    )
    if (final / "adapter_config.json").exists():
        from peft import PeftModel

        return PeftModel.from_pretrained(base, str(final)).to(device), tokenizer
    del base
    model = AutoModelForCausalLM.from_pretrained(str(final), dtype=DTYPES[cfg.policy.dtype]).to(device)
    return model, tokenizer
