"""GRPO, GRPO-GA and GRPO-PODS on TRL 1.16's ``GRPOTrainer``.

:class:`PODSGRPOTrainer` is a drop-in for TRL's trainer that keeps m of each group of n rollouts
between the rewards and the advantages (arXiv 2504.13818 §3.2, Algorithm 1); :class:`PODSConfig` is
TRL's ``GRPOConfig`` with the PODS fields. The modules, by job: :mod:`~pods.trainer.hook` (the
trainer; every departure from TRL tagged ``# PODS:``), :mod:`~pods.trainer.compat` (every TRL/HF
private relied on, :func:`check_trl_compat`), :mod:`~pods.trainer.batch` (kept rows, reward checks,
the sampler), :mod:`~pods.trainer.options` (:class:`PODSConfig`, geometry checks),
:mod:`~pods.trainer.filters` (the zero-variance filter, the refill, the pre-generation skip),
:mod:`~pods.trainer.forwards` (no-grad forwards on the kept rows only),
:mod:`~pods.trainer.round_logs` (per-round logs) and :mod:`~pods.trainer.card` (the model card).

How the hook works, the batch geometry, GRPO-GA and every departure from the paper and from TRL:
docs/method.md. The user guide, with every keyword: docs/trl.md.
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
from pods.trainer.hook import ADV_EPS, DEBUG_ENV, STEP_COUNTS, PODSGRPOTrainer, reinstall_lm_head
from pods.trainer.options import PODSConfig

# fmt: off
__all__ = [
    "EpochRepeatSampler", "NonFiniteRewardError", "PODSConfig", "RewardOutputError", "PODSGRPOTrainer",
    "TRLCompatError", "check_finite_rewards", "concat_rows", "check_trl_compat", "downsample_rows",
    "local_kept_rows", "sync_device", "ADD_FUSED_LM_HEAD_PARAMS", "ADV_EPS", "DEBUG_ENV", "GRPO_BIBTEX",
    "HF_PRIVATE_METHODS", "PODS_BIBTEX", "REPEAT_SAMPLER_PARAMS", "ROW_KEYS", "SCALAR_KEYS", "STEP_COUNTS",
    "TRL_ATTRS", "TRL_BIBTEX", "TRL_HOOKS", "TRL_INIT_ATTRS", "TRL_SOURCE_FACTS", "UNWRAP_PARAMS",
    "VLLM_ONLY_ATTRS", "pods_model_card", "reinstall_lm_head"
]
# fmt: on
