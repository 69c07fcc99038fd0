"""The reproduction's side of the trainer: configs to TRL, the run controller, fast generation.

:class:`ReproTrainer` is :class:`pods.PODSGRPOTrainer` with the reproduction's samplers: rollouts
decoded by :mod:`pods_repro.fastgen` where it covers the model (``pods_fast_decode``,
token-identical to ``generate``) and the evaluation generator (:meth:`ReproTrainer.eval_generator`).
:mod:`~pods_repro.trainer.grpo_config` maps a :class:`pods_repro.config.TrainConfig` to TRL's
``GRPOConfig`` and the trainer's keywords; :mod:`~pods_repro.trainer.controller` runs evaluations,
logs and checkpoints during ``pods train``. The library's names are re-exported, so
``from pods_repro.trainer import PODSGRPOTrainer`` is the library's class.
"""

from __future__ import annotations

from typing import Any

import pods_repro.rules  # noqa: F401  (registers the rules from other papers)
from pods.trainer import *  # noqa: F403  (the library's trainer names)
from pods.trainer import PODSGRPOTrainer
from pods.trainer import __all__ as _LIBRARY_NAMES
from pods.trainer.options import check_bool
from pods_repro.trainer.generation import GenerationHelpers
from pods_repro.trainer.grpo_config import (
    BIG_STEPS,
    LOSS_TYPES,
    build_grpo_config,
    check_trl_passthrough,
    grpo_config_with_passthrough,
    pods_trainer_kwargs,
    records_to_dataset,
    step_plan,
)


class ReproTrainer(GenerationHelpers, PODSGRPOTrainer):
    """:class:`pods.PODSGRPOTrainer` with fast decoding and the evaluation generator of ``pods train``.

    ``pods_fast_decode=True`` samples with :mod:`pods_repro.fastgen` where it covers the model and the
    sampling settings (token-identical to ``generate``; the seeded prompt groups in one batched call),
    evaluation too; everything else is the library's trainer.
    """

    def __init__(self, *args: Any, pods_fast_decode: bool = False, **kwargs: Any):
        check_bool("pods_repro.ReproTrainer", "pods_fast_decode", pods_fast_decode)
        self.pods_fast_decode = bool(pods_fast_decode)
        super().__init__(*args, **kwargs)


__all__ = [
    *_LIBRARY_NAMES,
    "BIG_STEPS",
    "LOSS_TYPES",
    "ReproTrainer",
    "build_grpo_config",
    "check_trl_passthrough",
    "grpo_config_with_passthrough",
    "pods_trainer_kwargs",
    "records_to_dataset",
    "step_plan",
]
