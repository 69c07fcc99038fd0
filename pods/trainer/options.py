"""The PODS parameters of the trainer: :class:`PODSConfig` (GRPOConfig fields), keyword resolution, geometry checks.

Part of :mod:`pods.trainer` (the one place that touches TRL or HF Trainer internals).
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from typing import Any

from trl import GRPOConfig

from pods.selectors import RULES

__all__ = ["PODSConfig"]


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
        metadata={
            "help": f"Down-sampling rule: {', '.join(RULES)} (pods.selectors.RULES; max_variance is the paper's), or "
            "one registered with pods.register_selector."
        },
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

    pods_seeded_generation: bool = field(
        default=False,
        metadata={
            "help": "False (default): one generate() call per generation round, as TRL. True: each prompt group "
            "sampled under its own seed (run seed, step, prompt position), so the rollouts do not depend on the "
            "number of processes or prompts per call; one generate() call per prompt group (what pods train uses)."
        },
    )

    pods_filter_zero_std: bool = field(
        default=False,
        metadata={
            "help": "True: a prompt group whose num_generations rewards are all equal leaves the update (DAPO's "
            "dynamic sampling without refill); the count per generation round is logged as pods/filtered_groups."
        },
    )

    pods_refill_max_rounds: int = field(
        default=0,
        metadata={
            "help": "0 (default): off. K > 0: DAPO-style refill. While the generation round has fewer informative "
            "groups (nonzero reward variance) than groups, generate n rollouts for further prompts drawn from the "
            "training set (seeded), at most K extra rounds; uninformative groups are replaced, and a group still "
            "uninformative after K rounds is filtered as pods_filter_zero_std. One process only."
        },
    )
    pods_skip_after: int = field(
        default=0,
        metadata={
            "help": "0 (default): off. k > 0: GRESO-style pre-generation skip. A prompt whose last k groups all had "
            "zero reward variance is skipped before generation with probability pods_skip_prob (seeded) and another "
            "prompt drawn from the training set in its place. One process only."
        },
    )
    pods_skip_prob: float = field(
        default=0.5,
        metadata={"help": "The skip probability of pods_skip_after, in [0, 1]."},
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in BOOL_FIELDS:
            check_bool("pods.PODSConfig", name, getattr(self, name))
        if self.pods_m is None:
            raise ValueError(
                "pods.PODSConfig needs pods_m, the rollouts kept per prompt (2 <= pods_m <= num_generations="
                f"{self.num_generations}); pods_m == num_generations is vanilla GRPO"
            )
        _check_rule("pods.PODSConfig", self.pods_rule, self.num_generations, self.pods_m)
        if self.pods_normalize not in ("after", "before"):
            raise ValueError(
                f"pods.PODSConfig: pods_normalize={self.pods_normalize!r} must be 'after' (the paper) or 'before' (App. A.3)"
            )
        _check_group_filters("pods.PODSConfig", self.pods_refill_max_rounds, self.pods_skip_after, self.pods_skip_prob)

    def get_process_log_level(self) -> int:
        # transformers.Trainer.__init__ asks its args for this once, early (before any training); a trainer other
        # than PODSGRPOTrainer (trl.GRPOTrainer itself) would ignore every pods_* field and train vanilla GRPO on
        # all num_generations rollouts, so it is refused here. Callers that are not trainers (an HF-style script
        # setting up logging) are not affected.
        _refuse_foreign_trainer(self, sys._getframe(1).f_locals.get("self"))
        return super().get_process_log_level()


BOOL_FIELDS = ("pods_ga_same_prompt", "pods_seeded_generation", "pods_filter_zero_std")
"""The PODSConfig fields that are True or False (a string "false" would be truthy)."""


def check_bool(who: str, name: str, value: Any, none_ok: bool = False) -> None:
    """ValueError unless ``value`` is True or False (or None where the option may be unset)."""
    if isinstance(value, bool) or (none_ok and value is None):
        return
    raise ValueError(f"{who}: {name}={value!r} must be True or False (a bool, not {type(value).__name__})")


def _with_keyword_hint(init):
    """PODSConfig's dataclass __init__, a misspelt field (``pods_M=4``) named with the closest one, as the trainer's
    keywords are (a bare TypeError otherwise)."""
    import difflib
    import functools

    @functools.wraps(init)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        known = {f.name for f in dataclasses.fields(PODSConfig) if f.init}
        for name in kwargs:
            if name not in known:
                by_lower = {k.lower(): k for k in known if k.startswith("pods_") or not name.lower().startswith("pods")}
                close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
                hint = f"; did you mean {by_lower[close[0]]}?" if close else ""
                raise TypeError(f"pods.PODSConfig got an unknown keyword argument {name!r}{hint}")
        init(self, *args, **kwargs)

    return __init__


PODSConfig.__init__ = _with_keyword_hint(PODSConfig.__init__)


def _check_group_filters(who: str, refill_max_rounds: Any, skip_after: Any, skip_prob: Any) -> None:
    """The refill and skip parameters: integers >= 0 and a probability; ValueError saying the fix."""
    for name, value in (("pods_refill_max_rounds", refill_max_rounds), ("pods_skip_after", skip_after)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{who}: {name}={value!r} must be an integer >= 0 (0 = off); use e.g. {name}=4")
    if isinstance(skip_prob, bool) or not isinstance(skip_prob, int | float) or not 0 <= skip_prob <= 1:
        raise ValueError(f"{who}: pods_skip_prob={skip_prob!r} must be a probability in [0, 1]; use e.g. 0.5")
    if skip_after == 0 and skip_prob != 0.5:  # 0.5: the default, PODSConfig's and the keyword's
        raise ValueError(
            f"{who}: pods_skip_prob={skip_prob!r} is the skip probability of pods_skip_after, but pods_skip_after=0 "
            "(the skip is off); set pods_skip_after (e.g. 1), or drop pods_skip_prob"
        )


def _refuse_foreign_trainer(args: PODSConfig, owner: Any) -> None:
    """Raise if ``owner`` is a transformers ``Trainer`` that is not a :class:`~pods.trainer.PODSGRPOTrainer`."""
    from transformers import Trainer

    # The trainer class marks itself (hook.py imports this module, so this one does not import it back).
    if isinstance(owner, Trainer) and not getattr(type(owner), "reads_pods_fields", False):
        raise TypeError(
            f"pods.PODSConfig(pods_m={args.pods_m}) was given to {type(owner).__module__}.{type(owner).__name__}, which "
            "ignores the pods_* fields: it would train vanilla GRPO on all "
            f"num_generations={args.num_generations} rollouts per prompt. Build pods.PODSGRPOTrainer (a drop-in "
            "subclass of trl.GRPOTrainer, same arguments) instead, or pass a plain trl.GRPOConfig for GRPO"
        )


def _check_rule(who: str, rule: Any, n: int, m: Any) -> None:
    """:func:`pods_repro.registry.check_rule` (m >= 2, m <= n, the rule's own needs) in the trainer's names."""
    from pods.base import RuleError
    from pods.selectors import check_rule  # the live registry: rules added with register_selector count

    try:
        check_rule(rule, n, m)
    except RuleError as err:
        names = {"rollout.n": "num_generations", "rollout.m": "pods_m", "rollout.rule": "pods_rule"}
        msg = f"{err.problem}; fix: {err.fix}"
        for old, new in names.items():
            msg = msg.replace(old, new)
        raise ValueError(f"{who}: {names.get(err.key, err.key)}: {msg}") from None


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
            f"{name}={given!r} was passed to pods.PODSGRPOTrainer but args.{name}={from_args!r}; set it in one place "
            "(the pods.PODSConfig field or the keyword argument)"
        )
    value = given if given is not None else from_args if from_args is not None else default
    if value is None:
        raise ValueError(
            f"pods.PODSGRPOTrainer needs {name} (rollouts kept per prompt group, 2 <= {name} <= num_generations): pass "
            f"args=pods.PODSConfig(..., {name}=M) or pods.PODSGRPOTrainer(..., {name}=M); {name} == num_generations is GRPO"
        )
    return value


def _check_pods_geometry(tr: Any) -> None:
    """Raise ValueError, naming the GRPOConfig field to change, if the batch cannot be down-sampled."""
    from pods.grpo import SCALES

    a = tr.args
    n, m, ga, spg = tr.num_generations, tr.pods_m, a.gradient_accumulation_steps, a.steps_per_generation
    _check_rule("pods.PODSGRPOTrainer", tr.pods_rule, n, m)  # an integer 2 <= m <= n, as PODSConfig checks it
    if a.scale_rewards not in SCALES:
        raise ValueError(f"scale_rewards={a.scale_rewards!r}: use one of {', '.join(SCALES)} (TRL's values)")
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
