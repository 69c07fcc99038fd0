"""The run controller of ``pods train``: the training clock, the evaluation grid, the logs and the progress bar.

A :class:`RunController` is a TRL/HF trainer callback that :func:`pods_repro.run.build_run` attaches to each run.
It times every optimizer step (wall and CPU seconds), evaluates at t = 0 and whenever the evaluation grid is
crossed (``eval.every_steps`` or ``eval.every_s``), decides the stop (``budget.max_steps`` /
``budget.max_time_s``), writes metrics.jsonl and eval.jsonl, and stores its state in every checkpoint
(``pods_state.json``, with the config fingerprint a resume is checked against).
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch
from transformers import TrainerCallback

from pods.trainer import STEP_COUNTS, PODSGRPOTrainer, sync_device
from pods_repro import evalcache
from pods_repro.config import TrainConfig
from pods_repro.config.fingerprint import config_fingerprint
from pods_repro.evaluation import evaluate_policy, mix_seed
from pods_repro.runlog import STATE_FILE, RunLogger, atomic_write_json, peak_memory_mb, prune_checkpoints

__all__ = ["RunController", "progress_enabled", "quiet_library_progress"]


def progress_enabled() -> bool:
    """Draw progress bars: stderr is an interactive terminal and PODS_NO_PROGRESS is not set."""
    if os.environ.get("PODS_NO_PROGRESS"):
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stderr
        return False


def quiet_library_progress() -> None:
    """Turn off transformers' and datasets' progress bars (e.g. "Loading weights") for plain logs."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    try:
        import datasets

        datasets.disable_progress_bars()
    except ImportError:  # datasets is a TRL dependency; nothing to silence without it
        pass


_BAR_FMT = "{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} s [{elapsed}<{remaining}] {postfix}"


class RunController(TrainerCallback):
    """Training clock, evaluation grid, metrics/eval logging, checkpoint state, progress bar."""

    def __init__(
        self,
        cfg: TrainConfig,
        logger: RunLogger,
        eval_sets: list[tuple[str, list[dict]]],
        state: dict | None,
        use_cuda: bool,
    ):
        self.cfg = cfg
        self.log = logger
        self.eval_sets = eval_sets
        self.use_cuda = use_cuda
        self.trainer: PODSGRPOTrainer | None = None
        st = state or {}
        self.train_time_s = float(st.get("train_time_s", 0.0))
        # CPU seconds of this process (time.process_time) beside the wall clock: on a shared host the wall
        # clock measures the neighbours as much as the code; CPU seconds measure the code.
        self.train_cpu_s = float(st.get("train_cpu_s", 0.0))
        self.next_grid = int(st.get("next_grid", 1))  # next eval point: next_grid * every (s or steps)
        self.evals_done = int(st.get("evals_done", 0))
        self.last_eval_step = st.get("last_eval_step")
        self.stop_reason = st.get("stop_reason")
        self.totals = defaultdict(float, st.get("totals", {}))
        self._t0 = 0.0
        self._c0 = 0.0
        self._pending: dict[str, float] = {}
        self.startup_s: float | None = None  # process start -> first step of this session (imports, loading)
        self.startup_cpu_s: float | None = None  # the same, in CPU seconds of this process
        self._bar = None

    # -- helpers -------------------------------------------------------------------------------
    @property
    def acc(self):
        return self.trainer.accelerator

    def state_dict(self) -> dict:
        return {
            "train_time_s": self.train_time_s,
            "train_cpu_s": self.train_cpu_s,
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

    def _eval_seed(self, step: int, d_idx: int) -> int:
        """The sampling seed of test set ``d_idx`` at ``step`` (eval.noise: fresh per run and step, or common)."""
        if self.cfg.eval.noise == "common":
            return mix_seed(d_idx, 0xC0)
        return mix_seed(self.cfg.seed, step, d_idx, 0xE7)

    def run_eval(self, step: int, final: bool = False, grid_index: int | None = None) -> None:
        from accelerate.utils import gather_object

        tr, ecfg = self.trainer, self.cfg.eval
        t0, c0 = time.perf_counter(), time.process_time()
        results = []
        cache_key = None
        if (
            step == 0 and grid_index == 0 and not final and self.evals_done == 0
        ):  # the base model (pods_repro.evalcache)
            if evalcache.enabled(self.cfg, self.use_cuda, tr.accelerator.num_processes):
                policy = tr.accelerator.unwrap_model(tr.model)
                seeds = [self._eval_seed(step, d_idx) for d_idx in range(len(self.eval_sets))]
                cache_key = evalcache.step0_key(self.cfg, policy, tr.processing_class, self.eval_sets, seeds)
                stored = evalcache.load(cache_key, [name for name, _ in self.eval_sets])
                if stored:
                    dt = (time.perf_counter() - t0) / len(stored)  # this run's seconds: the look-up
                    results = [(name, res, dt) for name, res in stored]
        if not results:
            with tr.eval_generator() as gen:
                for d_idx, (name, examples) in enumerate(self.eval_sets):
                    if d_idx and grid_index is not None and grid_index % ecfg.others_every and not self.stop_reason:
                        continue  # eval.others_every: a set other than the primary one, off its coarser grid
                    t1 = time.perf_counter()
                    res = evaluate_policy(
                        gen,
                        examples,
                        name,
                        ecfg.repeats,
                        ecfg.temperature,
                        ecfg.max_completion_length,
                        seed=self._eval_seed(step, d_idx),
                        variant=self.cfg.task.reward,
                        metric=self.cfg.eval.metric,
                        process_index=tr.accelerator.process_index,
                        num_processes=tr.accelerator.num_processes,
                        gather=gather_object,
                    )
                    results.append((name, res, time.perf_counter() - t1))
            if cache_key is not None:
                evalcache.store(cache_key, results, time.process_time() - c0)
        for name, res, dt in results:
            row = {"step": step, "time_s": self.train_time_s, "cpu_time_s": self.train_cpu_s, "dataset": name, **res}
            self.log.log_eval({**row, "eval_time_s": dt, "grid_index": grid_index, "final": final})
        self._report_eval(results)
        self.evals_done += 1
        self.last_eval_step = step
        self.totals["eval_time_s"] += time.perf_counter() - t0
        self.totals["eval_cpu_s"] += time.process_time() - c0
        if self._bar is not None and results:
            self._bar.set_postfix_str(f"step {step} acc {results[0][1]['accuracy']:.3f}", refresh=False)
        elif results and tr.accelerator.is_main_process:  # no bar (not a terminal): one plain line per evaluation
            accs = " ".join(f"{name} accuracy {res['accuracy']:.4f}" for name, res, _ in results)
            print(
                f"[pods] eval step {step} train_time_s {self.train_time_s:.1f} {accs} "
                f"eval_time_s {sum(dt for _, _, dt in results):.1f}",
                file=sys.stderr,
                flush=True,
            )

    def _report_eval(self, results: list[tuple[str, dict, float]]) -> None:
        """Send an evaluation to the trainer's ``report_to`` backends (TensorBoard, W&B, ...) as
        ``eval/{dataset}/{metric}`` at the current step: HF's integrations name a key ``eval_X`` ``eval/X``.
        Only the reporting callbacks see these logs (this controller's on_log skips them: no "loss")."""
        tr = self.trainer
        if not results or not tr.args.report_to:
            return
        logs = {
            f"eval_{name}/{key}": float(value)
            for name, res, _ in results
            for key, value in res.items()
            if key not in ("n_examples", "repeats") and isinstance(value, int | float) and not isinstance(value, bool)
        }
        # CallbackHandler.on_log clears control.should_log (it is the trainer's "logged" hand-off); called from
        # on_step_end it would skip the step's own log (its metrics.jsonl row): the flag is restored after it
        should_log = tr.control.should_log
        tr.callback_handler.on_log(tr.args, tr.state, tr.control, logs)
        tr.control.should_log = should_log

    def _bar_in_steps(self) -> bool:
        """The progress bar counts steps when a step budget is set (a tiny run's ``budget.max_steps``, whatever
        ``budget.max_time_s`` its YAML keeps) or no time budget is, and training seconds otherwise."""
        budget = self.cfg.budget
        return budget.max_steps is not None or budget.max_time_s is None

    def _open_bar(self, global_step: int, max_steps: int) -> None:
        from tqdm.auto import tqdm

        budget = self.cfg.budget
        if not self._bar_in_steps():
            self._bar = tqdm(
                total=float(budget.max_time_s),
                initial=min(self.train_time_s, budget.max_time_s),
                unit="s",
                desc="train time",
                dynamic_ncols=True,
                bar_format=_BAR_FMT,
            )
        else:
            total = budget.max_steps if budget.max_steps is not None else max_steps  # else: one epoch (step_plan)
            self._bar = tqdm(total=total, initial=global_step, unit="step", desc="train", dynamic_ncols=True)

    def _eval_due(self, step: int) -> tuple[bool, int | None]:
        """Whether the evaluation grid (in steps: the tiny scale, tests; or in training seconds) is crossed."""
        ecfg = self.cfg.eval
        if ecfg.every_steps:
            if step >= self.next_grid * ecfg.every_steps:
                grid_index = self.next_grid
                self.next_grid = step // ecfg.every_steps + 1
                return True, grid_index
        elif ecfg.every_s:
            if self.train_time_s >= self.next_grid * ecfg.every_s:
                grid_index = self.next_grid
                self.next_grid = int(self.train_time_s // ecfg.every_s) + 1  # a long step can skip points
                return True, grid_index
        return False, None

    # -- callback events -----------------------------------------------------------------------
    def on_train_begin(self, args, state, control, **kwargs):
        self.startup_s = _seconds_since_process_start()
        self.startup_cpu_s = time.process_time()
        if self.acc.is_main_process and progress_enabled():
            self._open_bar(state.global_step, state.max_steps)
        if self.evals_done == 0:  # the base model at t = 0 (docs/paper.md#evaluation-protocol)
            self.run_eval(step=state.global_step, grid_index=0)

    def on_step_begin(self, args, state, control, **kwargs):
        sync_device()
        if self.use_cuda:
            torch.cuda.reset_peak_memory_stats()
        self.trainer.pods_timing.clear()
        getattr(self.trainer, "pods_step_counts", {}).clear()  # a trainer that counts nothing (tests) logs zeros
        self._t0, self._c0 = time.perf_counter(), time.process_time()

    def on_step_end(self, args, state, control, **kwargs):
        sync_device()
        dt, dc = time.perf_counter() - self._t0, time.process_time() - self._c0
        self.train_time_s = self._shared_time(self.train_time_s + dt)
        self.train_cpu_s += dc
        timing = self.trainer.pods_timing
        gen = timing.get("gen_s", 0.0)
        self._pending = {
            "step_time_s": dt,
            "step_cpu_s": dc,
            "gen_time_s": gen,
            "update_time_s": max(dt - gen, 0.0),
            "reward_time_s": timing.get("reward_s", 0.0),
            "peak_mem_mb": peak_memory_mb(self.use_cuda),
            **{k: getattr(self.trainer, "pods_step_counts", {}).get(k, 0.0) for k in STEP_COUNTS},
        }
        for key in STEP_COUNTS:
            self.totals[key] += self._pending[key]
        self.totals["gen_time_s"] += gen
        self.totals["update_time_s"] += max(dt - gen, 0.0)
        self.totals["reward_time_s"] += timing.get("reward_s", 0.0)
        step = state.global_step
        budget = self.cfg.budget
        due, grid_index = self._eval_due(step)
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
            if not self._bar_in_steps():
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
            "cpu_time_s": self.train_cpu_s,
            **{
                k: self._pending.get(k)
                for k in ("gen_time_s", "update_time_s", "reward_time_s", "step_time_s", "step_cpu_s")
            },
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
            # what the step generated and trained on (rollouts, completion tokens), refill rounds, skipped prompts
            **{k: self._pending.get(k) for k in STEP_COUNTS},
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
            flat, digest = config_fingerprint(self.cfg)  # what trained this checkpoint (resume checks it)
            atomic_write_json(
                ckpt / STATE_FILE,
                {"global_step": state.global_step, **self.state_dict(), "config": flat, "config_sha256": digest},
            )
            prune_checkpoints(Path(args.output_dir), keep=ckpt)
        self.acc.wait_for_everyone()

    def on_train_end(self, args, state, control, **kwargs):
        if self._bar is not None:
            self._bar.close()


def _seconds_since_process_start() -> float | None:
    try:
        import psutil

        return time.time() - psutil.Process().create_time()
    except Exception:  # noqa: BLE001 - a measurement only: never fail a run over it
        return None
