"""The trainer's records of a generation round: ``kept_*`` metrics, TRL's completions table, selection dumps.

Part of :mod:`pods.trainer`; :class:`RoundLogs` is a base of :class:`pods.trainer.hook.PODSGRPOTrainer`.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import torch

from pods.trainer.compat import TRLCompatError, _trl_version

__all__ = ["DEBUG_ENV", "RoundLogs"]

DEBUG_ENV = "PODS_DEBUG_DUMP"  # directory: per-step selection dumps (selection_rank{r}.jsonl)


class RoundLogs:
    """What :class:`pods.trainer.hook.PODSGRPOTrainer` records of each generation round (a mixin of it)."""

    def _pods_log_kept(self, kept_rewards_G_M: torch.Tensor, kept_len_B: torch.Tensor, live_G: torch.Tensor | None):
        """The ``kept_*`` metrics of a generation round, over the groups that enter the update: with the
        zero-variance filter, the live groups only (none logged when every group dropped)."""
        if live_G is not None:
            if not live_G.any():
                return
            kept_rewards_G_M = kept_rewards_G_M[live_G]
            kept_len_B = kept_len_B.view(live_G.numel(), -1)[live_G.to(kept_len_B.device)]
        metrics = self._metrics["train"]
        metrics["kept_reward"].append(kept_rewards_G_M.mean().item())
        metrics["kept_reward_std"].append(
            kept_rewards_G_M.reshape(-1).std().item() if kept_rewards_G_M.numel() > 1 else 0.0
        )
        metrics["kept_frac_reward_zero_std"].append(
            (kept_rewards_G_M.amax(1) == kept_rewards_G_M.amin(1)).double().mean().item()
        )
        metrics["kept_completion_length"].append(kept_len_B.mean().item())

    def _pods_log_completions(
        self,
        keep_G_M: torch.Tensor,
        adv_G_M: torch.Tensor,
        live_G: torch.Tensor | None,
        gen_G: list[int] | None = None,
        generated: int | None = None,
    ) -> None:
        """What was trained, in TRL's completions table (``log_completions``): TRL logged every rollout with
        its advantage over all n; the rows of this round get the advantage they were trained with instead
        (NaN for a rollout left out, by the rule, the zero-variance filter or a refill) and a ``kept`` column.
        ``gen_G``: with refill, each trained group's index among the ``generated`` groups of the step's rounds."""
        G, n = keep_G_M.shape[0], self.num_generations
        kept_G_N = torch.zeros(G, n, dtype=torch.bool).scatter_(1, keep_G_M.cpu(), True)
        if live_G is not None:
            kept_G_N &= live_G.unsqueeze(1)
        adv_G_N = torch.full((G, n), float("nan"), dtype=torch.float64)
        adv_G_N.scatter_(1, keep_G_M.cpu(), adv_G_M.to("cpu", torch.float64))
        adv_G_N[~kept_G_N] = float("nan")
        if gen_G is not None and generated is not None and generated != G:  # refill: place the slots' groups
            index = torch.tensor(gen_G, dtype=torch.long)
            all_kept = torch.zeros(generated, n, dtype=torch.bool)
            all_adv = torch.full((generated, n), float("nan"), dtype=torch.float64)
            all_kept[index], all_adv[index] = kept_G_N, adv_G_N
            G, kept_G_N, adv_G_N = generated, all_kept, all_adv
        logged = self._logs["advantages"]
        if G * n > len(logged) == getattr(logged, "maxlen", None):  # refill rounds overran TRL's bounded table
            G, kept_G_N, adv_G_N = len(logged) // n, kept_G_N[-(len(logged) // n) :], adv_G_N[-(len(logged) // n) :]
        if len(logged) < G * n:
            raise TRLCompatError(
                f"trl.GRPOTrainer logged {len(logged)} advantages for a round of {G * n} rollouts (trl {_trl_version()}); "
                "the completions table cannot be marked. Port pods.PODSGRPOTrainer._pods_log_completions."
            )
        for _ in range(G * n):  # TRL's all-n advantages of this round, the last G x n entries
            logged.pop()
        logged.extend(adv_G_N.reshape(-1).tolist())
        self._logs["extra"]["kept"].extend(kept_G_N.reshape(-1).tolist())

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
