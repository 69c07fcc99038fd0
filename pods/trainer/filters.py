"""The trainer's group filters: DAPO-style refill of uninformative groups and GRESO-style pre-generation skip.

Part of :mod:`pods.trainer`; :class:`GroupFilters` is a base of :class:`pods.trainer.hook.PODSGRPOTrainer`,
whose ``pods_refill_max_rounds``, ``pods_skip_after`` and ``pods_skip_prob`` (its docstring) drive these
methods. They read the trainer's state and generate through its ``_pods_score_round``.
"""

from __future__ import annotations

import json

import torch

from pods.base import mix_seed
from pods.trainer.batch import concat_rows, downsample_rows

__all__ = ["SKIP_MAX_DRAWS", "GroupFilters", "check_filter_support"]

SKIP_MAX_DRAWS = 8  # GRESO skip: prompts drawn for one slot at most (the last one drawn is generated)


class GroupFilters:
    """The refill and skip filters of :class:`pods.trainer.hook.PODSGRPOTrainer` (a mixin of it)."""

    def _pods_draw_prompt(self, gen: torch.Generator, calls: dict) -> dict:
        """A training prompt drawn uniformly (``gen``); with the GRESO skip, one it does not skip (at most
        SKIP_MAX_DRAWS draws, the last one kept)."""
        dataset = self.train_dataset
        row = dataset[int(torch.randint(len(dataset), (1,), generator=gen))]
        for _ in range(SKIP_MAX_DRAWS - 1):
            if not (self.pods_skip_after and self._pods_skips(row, gen)):
                break
            calls["skipped_prompts"] += 1
            row = dataset[int(torch.randint(len(dataset), (1,), generator=gen))]
        return row

    def _pods_skips(self, row: dict, gen: torch.Generator) -> bool:
        """GRESO: whether to skip ``row``'s prompt, whose last ``pods_skip_after`` groups all had zero variance
        (a draw of ``gen`` below ``pods_skip_prob``); a prompt with a shorter history is never skipped."""
        history = self._pods_history.get(_prompt_key(row))
        if history is None or len(history) < self.pods_skip_after or not all(history):
            return False
        return float(torch.rand((), generator=gen, dtype=torch.float64)) < self.pods_skip_prob

    def _pods_skip_prompts(self, inputs: list, calls: dict) -> list:
        """GRESO's pre-generation skip over the round's prompts: a skipped prompt's rows are replaced by those of
        a prompt drawn from the training set (seeded by the run seed and the step)."""
        rows = self.num_generations * self.pods_grad_accum
        gen = torch.Generator().manual_seed(mix_seed(self.pods_seed, self.state.global_step, 0x6E5))
        out = []
        for j in range(len(inputs) // rows):
            row = inputs[j * rows]
            if self._pods_skips(row, gen):
                calls["skipped_prompts"] += 1
                row = self._pods_draw_prompt(gen, calls)
                out.extend(dict(row) for _ in range(rows))
            else:
                out.extend(inputs[j * rows : (j + 1) * rows])
        return out

    def _pods_refill(
        self, batch: dict, rewards_G_N: torch.Tensor, lengths_B: torch.Tensor, calls: dict
    ) -> tuple[dict, torch.Tensor, torch.Tensor, list[int], int]:
        """DAPO-style dynamic sampling with refill (``pods_refill_max_rounds``).

        The round's G groups are G slots. While a slot holds a group of zero reward variance and fewer than
        ``pods_refill_max_rounds`` extra rounds ran, one extra round generates n rollouts (n x GA with
        GRPO-GA) for as many fresh prompts as are needed, drawn uniformly from the training set (seeded by the
        run seed, the step and the round; the GRESO skip applies to them), under their own sampling seeds; its
        informative groups fill the uninformative slots in order. Returns the batch of the slots' groups, their
        rewards and lengths, each slot's index among all generated groups, and the number generated.
        """
        n, ga = self.num_generations, self.pods_grad_accum
        batches, rewards, lengths = [batch], [rewards_G_N], [lengths_B]
        live = (rewards_G_N.amax(1) > rewards_G_N.amin(1)).tolist()
        slots = list(range(len(live)))
        rounds = 0
        try:
            while rounds < self.pods_refill_max_rounds:
                missing = [i for i, g in enumerate(slots) if not live[g]]
                if not missing:
                    break
                rounds += 1
                self._pods_round = rounds
                gen = torch.Generator().manual_seed(mix_seed(self.pods_seed, self.state.global_step, rounds, 0x2EF))
                prompts = [self._pods_draw_prompt(gen, calls) for _ in range(-(-len(missing) // ga))]
                extra = [dict(row) for row in prompts for _ in range(n * ga)]
                b, r, ln = self._pods_score_round(extra, calls)
                first = len(live)
                live.extend((r.amax(1) > r.amin(1)).tolist())
                batches.append(b)
                rewards.append(r)
                lengths.append(ln)
                fresh = [g for g in range(first, len(live)) if live[g]]
                for slot, g in zip(missing, fresh, strict=False):
                    slots[slot] = g
        finally:
            self._pods_round = 0
        calls["refill_rounds"] += rounds
        if rounds == 0:
            return batch, rewards_G_N, lengths_B, slots, len(live)
        rows_B = torch.cat([torch.arange(g * n, (g + 1) * n) for g in slots])
        merged = downsample_rows(concat_rows(batches, self._tokenizer.pad_token_id), rows_B)
        width = int(merged["completion_mask"].sum(1).max().item()) if rows_B.numel() else 0
        for key, val in merged.items():  # drop the padding columns no slot's completion reaches
            if isinstance(val, torch.Tensor) and val.dim() == 2 and not key.startswith("prompt"):
                merged[key] = val[:, : max(width, 1)]
        return merged, torch.cat(rewards)[slots], torch.cat(lengths)[rows_B], slots, len(live)


def _prompt_key(row: dict) -> str:
    """A prompt's identity for the GRESO history: its text (a chat prompt as its JSON)."""
    prompt = row.get("prompt")
    return prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, default=str)


def check_filter_support(trainer: GroupFilters) -> None:
    """Refill and skip draw and generate further prompts on one process, by index from a map-style dataset."""
    if (trainer.pods_refill_max_rounds or trainer.pods_skip_after) and trainer.accelerator.num_processes > 1:
        raise ValueError(
            "pods_refill_max_rounds and pods_skip_after draw and generate further prompts on one process, but "
            f"this run has {trainer.accelerator.num_processes}; launch one process, or set both to 0"
        )
    if (trainer.pods_refill_max_rounds or trainer.pods_skip_after) and not hasattr(
        trainer.train_dataset, "__getitem__"
    ):
        raise ValueError(
            "pods_refill_max_rounds and pods_skip_after draw further prompts by index from train_dataset, which "
            "has none (an iterable dataset); pass a map-style datasets.Dataset, or set both to 0"
        )
