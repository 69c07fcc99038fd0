"""The trainer's batch helpers: kept-row indices, down-sampling of TRL's batch dict, reward checks, the sampler.

Part of :mod:`pods.trainer` (the one place that touches TRL or HF Trainer internals); the pure
helpers are tested directly in tests/trainer/test_trainer.py.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from trl.trainer.utils import RepeatSampler, is_async_callable

from pods.base import mix_seed
from pods.trainer.compat import ROW_KEYS, SCALAR_KEYS, TRLCompatError

__all__ = [
    "EpochRepeatSampler",
    "NonFiniteRewardError",
    "RewardOutputError",
    "check_finite_rewards",
    "check_reward_output",
    "checked_reward_func",
    "concat_rows",
    "downsample_rows",
    "local_kept_rows",
    "sync_device",
]


class NonFiniteRewardError(ValueError):
    """A reward function returned NaN, inf or None."""


class RewardOutputError(TypeError):
    """A reward function returned something other than one number (or None) per completion."""


REWARD_CONTRACT = "a list of floats, one per completion (None for a completion it does not apply to)"


def check_reward_output(name: str, output: Any, expected: int) -> None:
    """Raise :class:`RewardOutputError` naming the reward function when ``output`` is not a sequence of
    ``expected`` numbers or ``None`` (TRL would stop later in ``torch.tensor`` without naming it)."""
    if isinstance(output, str | bytes) or not isinstance(output, Sequence | torch.Tensor):
        raise RewardOutputError(
            f"reward function {name!r} returned {type(output).__name__} {_short(output)}; it must return "
            f"{REWARD_CONTRACT}"
        )
    for i, value in enumerate(output):
        number = isinstance(value, numbers.Real) or (isinstance(value, torch.Tensor) and value.numel() == 1)
        if value is not None and not number:
            raise RewardOutputError(
                f"reward function {name!r} returned {type(value).__name__} {_short(value)} for completion {i} of "
                f"{expected}; it must return {REWARD_CONTRACT}, e.g. float(score)"
            )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def checked_reward_func(func: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``func`` (a TRL reward function, sync or async) with its output checked by :func:`check_reward_output`."""
    if is_async_callable(func):  # TRL awaits these; keep it so

        @functools.wraps(func)
        async def checked_async(*args: Any, **kwargs: Any) -> Any:
            out = await func(*args, **kwargs)
            check_reward_output(name, out, len(kwargs.get("completions") or ()))
            return out

        return checked_async

    @functools.wraps(func)
    def checked(*args: Any, **kwargs: Any) -> Any:
        out = func(*args, **kwargs)
        check_reward_output(name, out, len(kwargs.get("completions") or ()))
        return out

    return checked


def sync_device(device: torch.device | None = None) -> None:
    """Wait for CUDA's asynchronous queue (timers must not read it as "done"); a no-op on CPU."""
    if torch.cuda.is_available() and (device is None or device.type == "cuda"):
        torch.cuda.synchronize()


# --------------------------------------------------------------------------------------------
# ALGO LOGIC: pure helpers of the PODS hook (tested directly in tests/trainer/test_trainer.py)
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
            f"trl.GRPOTrainer._generate_and_score_completions returned keys {unknown} that the PODS hook does not "
            f"know how to down-sample (known per-row keys: {ROW_KEYS}; scalars: {SCALAR_KEYS}). Multimodal and "
            "tool-calling batches are not supported; for a new TRL field, add it to ROW_KEYS or SCALAR_KEYS in "
            "pods/trainer/compat.py."
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


def concat_rows(batches: Sequence[dict[str, Any]], pad_token_id: int) -> dict[str, Any]:
    """TRL batch dicts of several generation rounds as one, rows in order (the refill filter's rounds).

    Per-row tensors of two dimensions are padded to the widest round: prompt tensors (``prompt_*``, left-padded
    by TRL) on the left, completion-aligned ones on the right; ids with ``pad_token_id``, everything else with
    0 (a padded position is masked). Scalars (``num_items_in_batch``) come from the first round (the hook
    recomputes it). An entry that is None in one round must be None in all.
    """
    first = batches[0]
    unknown = sorted(set(first) - set(ROW_KEYS) - set(SCALAR_KEYS))
    if unknown:
        raise TRLCompatError(
            f"cannot concatenate the unknown batch keys {unknown}; add them to ROW_KEYS or SCALAR_KEYS"
        )
    out: dict[str, Any] = {}
    for key in first:
        vals = [b.get(key) for b in batches]
        if key in SCALAR_KEYS or all(v is None for v in vals):
            out[key] = vals[0]
            continue
        if any(v is None for v in vals):
            raise TRLCompatError(f"batch key {key!r} is None in some generation rounds only; cannot concatenate")
        if not isinstance(vals[0], torch.Tensor):
            out[key] = [x for v in vals for x in v]
            continue
        if vals[0].dim() == 2:
            width = max(v.shape[1] for v in vals)
            fill = pad_token_id if key.endswith("_ids") else 0
            left = key.startswith("prompt")
            padded = []
            for v in vals:
                extra = v.new_full((v.shape[0], width - v.shape[1]), fill)
                padded.append(torch.cat([extra, v] if left else [v, extra], dim=1))
            vals = padded
        out[key] = torch.cat(vals, dim=0)
    return out


def check_finite_rewards(
    rewards_per_func_B_F: torch.Tensor,
    func_names: Sequence[str],
    completions: Sequence[Any] | None = None,
    row_offset: int = 0,
    strict: bool = True,
) -> None:
    """Raise :class:`NonFiniteRewardError` naming the reward function and row of the first bad reward.

    ``strict`` (what ``pods train`` uses: its reward functions score every completion): any NaN or inf
    is an error. ``strict=False`` follows TRL's multi-task convention: a reward function may return
    ``None`` (NaN here) for a completion it does not apply to, and the row's reward is the sum of the
    others; inf, and a row that no reward function scored (PODS needs a reward to rank every
    rollout), are still errors.
    """
    inf = torch.isinf(rewards_per_func_B_F)
    nan = torch.isnan(rewards_per_func_B_F)
    bad = inf | nan if strict else inf | (nan & nan.all(dim=1, keepdim=True))
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
    if not strict and not inf[row, col]:
        silent = [func_names[f] for f in range(nan.shape[1]) if nan[:, f].all()]
        who = (
            f"reward function{'s' if len(silent) > 1 else ''} {', '.join(repr(f) for f in silent)} returned None (or "
            "NaN) for every completion of the batch"
            if len(silent) == nan.shape[1]
            else f"every reward function ({', '.join(repr(f) for f in func_names)}) returned None (or NaN) for it"
        )
        raise NonFiniteRewardError(
            f"no reward function scored rollout {row} of the batch{text}: {who}; {int(nan.all(dim=1).sum())} such "
            f"rollout(s) in total. PODS ranks every rollout by its reward, so at least one reward function must "
            f"return a finite float for each completion."
        )
    raise NonFiniteRewardError(
        f"reward function {func_names[col]!r} returned {value} (NaN also stands for None) for rollout {row} of "
        f"the batch{text}; {int(bad.sum())} non-finite value(s) in total. Reward functions must return a finite "
        "float for every completion, e.g. 0.0 for an unparseable one."
    )


class EpochRepeatSampler(RepeatSampler):
    """TRL's RepeatSampler with each epoch's order a function of (seed, epoch).

    With ``total_rows`` (step-capped runs, ``max_steps > 0``) one iteration streams as many data
    epochs as needed, so HF's resume fast-forwards through one long "epoch" with
    ``skip_first_batches`` and the prompt order of a resumed run equals the uninterrupted one (TRL's
    sampler would replay epoch 0's order after resuming in a later epoch); ``total_rows`` bounds
    ``__len__`` (HF derives max_steps from it). With ``total_rows=None`` (epoch-based training,
    ``max_steps=-1``) one iteration is one epoch, TRL's length, and HF's ``set_epoch`` picks its order.

    ``trl_order=True``: epoch e is TRL's (e+1)-th iteration, the (e+1)-th ``randperm`` of one generator
    seeded with ``seed``, so an uninterrupted run sees the prompts in ``trl.GRPOTrainer``'s order.
    ``trl_order=False`` (``pods train``): each epoch's permutation is seeded by ``mix_seed(seed, epoch)``.
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
        trl_order: bool = False,
    ):
        super().__init__(data_source, mini_repeat_count, batch_size, repeat_count, shuffle, seed)
        self.trl_order = bool(trl_order)
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

    def _permutation(self, epoch: int) -> list[int]:
        if not self.trl_order:
            g = torch.Generator().manual_seed(mix_seed(self.seed or 0, epoch, 0x5A3))
            return torch.randperm(self.num_samples, generator=g).tolist()
        g = torch.Generator()  # TRL's: one generator, seeded once (unseeded: torch's default seed, as TRL's)
        if self.seed is not None:
            g.manual_seed(self.seed)
        for _ in range(epoch):  # TRL draws one permutation per iteration of its sampler, i.e. per epoch
            torch.randperm(self.num_samples, generator=g)
        return torch.randperm(self.num_samples, generator=g).tolist()

    def _epoch_rows(self, epoch: int) -> Iterator[int]:
        if self.shuffle:
            order = self._permutation(epoch)
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

    @property
    def epoch_rows(self) -> int:
        """Indices of one data epoch (TRL's ``RepeatSampler`` length)."""
        return super().__len__()

    def __len__(self) -> int:
        return super().__len__() if self.total_rows is None else self.total_rows
