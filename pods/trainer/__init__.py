"""GRPO, GRPO-GA and GRPO-PODS on TRL 1.16's ``GRPOTrainer``: the PODS hook and the config-to-TRL mapping.

This package is the one place that touches TRL or HF Trainer internals; its modules, by job:
:mod:`~pods.trainer.compat` (the TRL/HF internals relied on, :func:`check_trl_compat`),
:mod:`~pods.trainer.hook` (:class:`PODSGRPOTrainer`), :mod:`~pods.trainer.batch` (kept rows,
down-sampling, reward checks, :class:`EpochRepeatSampler`), :mod:`~pods.trainer.options`
(:class:`PODSConfig`, geometry checks), :mod:`~pods.trainer.grpo_config` (config -> ``GRPOConfig``,
the ``trl:`` pass-through, :func:`step_plan`) and :mod:`~pods.trainer.card` (the model card). Import
from ``pods.trainer``. Runs are driven by :func:`pods.run.train`
(``python -m pods train experiments/tiny_a.yaml budget.max_steps=20``); evaluation during training
gets its generator, weights synced, from :meth:`PODSGRPOTrainer.eval_generator`.

How GRPO-PODS differs from vanilla GRPO (arXiv 2504.13818 §3.2, Algorithm 1); lines tagged ``# PODS:``:

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
``_save_checkpoint`` only to name a full disk, ``_save`` to write the PODS model card before a model is
saved, ``log`` to count ``epoch`` in data epochs, and ``_compute_loss`` only where the zero-variance
group filter masked rows; the run reaches ``_load_from_checkpoint`` through
:meth:`PODSGRPOTrainer.load_checkpoint_weights`.
:func:`check_trl_compat` and tests/trainer/test_trl_hook.py fail loudly, naming the TRL internal that
moved, if a TRL upgrade breaks these assumptions (every TRL/HF private this package uses is listed
in ``TRL_HOOKS``, ``HF_PRIVATE_METHODS``, ``TRL_INIT_ATTRS`` and ``REPEAT_SAMPLER_PARAMS``).

Batch geometry (why the dataloader batch is prompts x n, measured on TRL 1.16): TRL splits each
generation batch into ``steps_per_generation`` micro-batches *after* scoring. We therefore set
``per_device_train_batch_size = P x n`` (P = prompt groups per process), ``num_generations = n`` and
``steps_per_generation = gradient_accumulation_steps = GA``; down-sampling turns the P x n x GA
generated rows into P x m x GA kept rows, which TRL splits into GA micro-batches of P x m. (Setting
the batch to P x m instead makes TRL split the kept rows into n/m micro-steps.)

GRPO-GA (settings (e)-(f), docs/paper.md#code-differences): ``optim.grad_accum = GA`` generates GA groups of n for the
*same* prompt in one generation round (our sampler repeats each prompt n x GA times, as the authors'
``RepeatSampler(mini_repeat_count = n x GA)`` did), normalises each group of n separately (GRPO-GA:
16 groups of 32 with n = m = 32; PODS: 4 groups of 128, 32 kept from each), and accumulates the GA
micro-batches into one optimizer step. TRL's generation-aligned GA means no old log-probs are needed
(the ratio is 1, clipping inactive), as in the paper.

Built from a user's own ``GRPOConfig``/:class:`PODSConfig` (TRL users), gradient accumulation keeps
TRL's meaning (different prompts in each micro-batch, one group of n each) unless
``pods_ga_same_prompt=True`` asks for the GRPO-GA grouping above, which :func:`pods_trainer_kwargs`
(every ``pods train`` run) sets. With TRL's grouping the prompts come in ``trl.GRPOTrainer``'s order (the
same seeded permutation per data epoch), so at m == n the trainer replays it; with
``pods_ga_same_prompt=True`` a step-capped run streams its epochs in one pass, each in its own seeded order
(:class:`EpochRepeatSampler`). The config's ``trl:`` section
reaches any other ``GRPOConfig`` field (:func:`grpo_config_with_passthrough`).

Environment variable: ``PODS_DEBUG_DUMP=DIR`` writes each step's gathered rewards, selection and
advantages per process to ``DIR/selection_rank{r}.jsonl`` (tests/trainer/test_distributed.py compares them).

Departures from the paper / official code, and choices where the sources are silent:

- In ``pods train`` (``pods_seeded_generation=True``) the rollouts of each prompt group are sampled under
  their own RNG seed (derived from the run seed, the step and the prompt's global position), so they do
  not depend on how prompts are split across processes or batched; with one prompt per process (every
  paper setting) this costs nothing. It costs one ``generate`` call per prompt group, so the library's
  default is TRL's: one call per generation round, drawing from the global RNG
  (benchmarks/bench_trl_generation.py compares the two with ``trl.GRPOTrainer``).
- A non-finite reward (NaN or inf, including ``None`` from a reward function) is an error naming the
  reward function in ``pods train`` (``pods_strict_rewards=True``): the paper's rewards are always
  finite, so a NaN is a bug to fix, not a signal. Built by a TRL user, the trainer follows TRL's
  multi-task convention instead: ``None`` from one reward function counts as nothing in the row's sum;
  a row that no function scored is still an error (PODS ranks every rollout; TRL gives such rows a
  zero advantage).
- ``GRPOConfig.scale_rewards`` ("group", "batch", "none") scales the recomputed advantages as it does
  TRL's: by the std of each kept group (the paper), of all kept rewards of the batch, or not at all.
- With ``aggregation: token`` and GA > 1, TRL shuffles kept rows across the GA micro-batches before
  the per-micro-batch token normalisation; the authors' code kept one group per micro-batch. The
  sequence aggregation (the paper's formula) is unaffected.
- TRL 1.16's default ``use_bias_correction_kl=True`` (KL term times the importance ratio) is turned
  off: the authors' loss adds the plain k3 estimator, ``beta * KL_k3`` (docs/paper.md#grpo);
  tests/trainer/test_trl_hook.py found the difference.
- The authors' (e)-(f) LR schedule spans one data epoch (``num_train_epochs: 1``); a non-constant
  schedule here spans ``optim.scheduler_steps``, else ``budget.max_steps``, else one epoch of the
  training prompts (where training then stops); a constant schedule runs until the time budget.
- No forward pass runs over rollouts that PODS discards (the authors' code computed the reference
  log-probs on the m kept rows only): TRL's no-grad forwards (reference log-probs when ``beta != 0``;
  old log-probs and the vLLM importance-sampling ratio when ``rollout.vllm_is_correction`` is on; old
  log-probs when ``gradient_accumulation_steps`` is not a multiple of ``steps_per_generation``) are
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

from pods.trainer.batch import (
    EpochRepeatSampler,
    NonFiniteRewardError,
    RewardOutputError,
    check_finite_rewards,
    concat_rows,
    downsample_rows,
    local_kept_rows,
    sync_device,
)
from pods.trainer.card import GRPO_BIBTEX, PODS_BIBTEX, TRL_BIBTEX, pods_model_card
from pods.trainer.compat import (
    ADD_FUSED_LM_HEAD_PARAMS,
    HF_PRIVATE_METHODS,
    REPEAT_SAMPLER_PARAMS,
    ROW_KEYS,
    SCALAR_KEYS,
    TRL_ATTRS,
    TRL_HOOKS,
    TRL_INIT_ATTRS,
    TRL_SOURCE_FACTS,
    UNWRAP_PARAMS,
    VLLM_ONLY_ATTRS,
    TRLCompatError,
    check_trl_compat,
)
from pods.trainer.grpo_config import (
    BIG_STEPS,
    LOSS_TYPES,
    build_grpo_config,
    check_trl_passthrough,
    grpo_config_with_passthrough,
    pods_trainer_kwargs,
    records_to_dataset,
    step_plan,
)
from pods.trainer.hook import ADV_EPS, DEBUG_ENV, STEP_COUNTS, PODSGRPOTrainer, reinstall_lm_head
from pods.trainer.options import PODSConfig

__all__ = [
    "EpochRepeatSampler",
    "NonFiniteRewardError",
    "PODSConfig",
    "RewardOutputError",
    "PODSGRPOTrainer",
    "TRLCompatError",
    "build_grpo_config",
    "check_finite_rewards",
    "concat_rows",
    "check_trl_compat",
    "check_trl_passthrough",
    "grpo_config_with_passthrough",
    "downsample_rows",
    "local_kept_rows",
    "pods_trainer_kwargs",
    "records_to_dataset",
    "step_plan",
    "sync_device",
    # the guard tables, module constants and helpers, re-exported from the submodules
    "ADD_FUSED_LM_HEAD_PARAMS",
    "ADV_EPS",
    "BIG_STEPS",
    "DEBUG_ENV",
    "GRPO_BIBTEX",
    "HF_PRIVATE_METHODS",
    "LOSS_TYPES",
    "PODS_BIBTEX",
    "REPEAT_SAMPLER_PARAMS",
    "ROW_KEYS",
    "SCALAR_KEYS",
    "STEP_COUNTS",
    "TRL_ATTRS",
    "TRL_BIBTEX",
    "TRL_HOOKS",
    "TRL_INIT_ATTRS",
    "TRL_SOURCE_FACTS",
    "UNWRAP_PARAMS",
    "VLLM_ONLY_ATTRS",
    "pods_model_card",
    "reinstall_lm_head",
]
