"""One training run: its directory, the model and data, the trainer, the wall clock, the summary.

The details: docs/design.md, "Module notes" (`pods_repro/run.py`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pods_repro
from pods_repro.config import ConfigError, TrainConfig, from_dict, resolve_run_dir, to_dict
from pods_repro.config.fingerprint import (  # noqa: F401 - re-exported: pods_repro.run is where resume code looks for them
    FINGERPRINT_EXCLUDED,
    config_digest,
    config_fingerprint,
    flat_config,
)
from pods_repro.evaluation import load_eval_sets, pin_cpu_threads, resolve_use_cuda
from pods_repro.runlog import (
    STATE_FILE,
    RunDirError,
    RunLogger,
    final_missing_message,
    jsonable,
    latest_checkpoint,
    prune_checkpoints,
    resumable_checkpoint,
    run_dir_lock,
    run_meta,
    writable_dir_problem,
    writing,
)
from pods_repro.trainer import (
    STEP_COUNTS,
    ReproTrainer,
    build_grpo_config,
    pods_trainer_kwargs,
    records_to_dataset,
    step_plan,
)
from pods_repro.trainer.controller import RunController, progress_enabled, quiet_library_progress

# A kernel variable `import pods_repro` could not honour: a run would train on other kernels than it records.
if pods_repro._KERNEL_ENV_ERROR is not None:
    raise pods_repro._KERNEL_ENV_ERROR

__all__ = ["RunController", "build_run", "open_run_dir", "preflight", "run_training", "train", "write_summary"]
HUB_TIMEOUT_S = 10.0  # how long preflight waits for the hub to confirm a model id


# --------------------------------------------------------------------------------------------
# The run, step by step
# --------------------------------------------------------------------------------------------
def preflight(cfg: TrainConfig) -> Path:
    """The run directory, once it is known that it can be written and the policy can be found;
    :class:`pods_repro.config.ConfigError` (exit 2) otherwise, before any file is written."""
    run_dir = Path(resolve_run_dir(cfg))
    problem = writable_dir_problem(run_dir)
    if problem:
        raise ConfigError("out_dir", str(run_dir), problem, "choose a directory this process can create and write")
    problem = _hub_model_problem(cfg.policy.model)
    if problem:
        raise ConfigError("policy.model", cfg.policy.model, *problem)
    return run_dir


def _hub_model_problem(spec: str) -> tuple[str, str] | None:
    """(problem, fix) if ``spec`` is a hub id that is neither cached nor confirmed by the hub within
    HUB_TIMEOUT_S (offline first: nothing is asked when it is cached or HF_HUB_OFFLINE is set)."""
    from huggingface_hub import HfApi, try_to_load_from_cache
    from huggingface_hub.errors import RepositoryNotFoundError

    from pods_repro.models import describe_policy

    if describe_policy(spec)["source"] != "hub" or isinstance(try_to_load_from_cache(spec, "config.json"), str):
        return None
    download = f"download it first (huggingface-cli download {spec}) or pass a local model directory"
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return (
            "is not in the local Hugging Face cache and HF_HUB_OFFLINE is set",
            f"{download}, or unset HF_HUB_OFFLINE",
        )
    try:
        HfApi().model_info(spec, timeout=HUB_TIMEOUT_S)
    except RepositoryNotFoundError:
        return "is not a model on the Hugging Face hub (or a private one)", "check the id, or log in (hf auth login)"
    except Exception as e:  # no network, DNS, timeout, proxy: the load would retry for a minute, then fail
        why = " ".join(str(e).split())[:120]
        return f"is not cached and the Hugging Face hub did not answer within {HUB_TIMEOUT_S:.0f} s ({why})", download
    return None


def _distributed_state(cfg: TrainConfig, use_cuda: bool) -> Any:
    from accelerate import PartialState

    # cpu=True matters under `accelerate launch` on a CPU machine: without it the shared state comes up
    # as one non-distributed process, before TrainingArguments(use_cpu=True) could join the gloo group.
    dist = PartialState(cpu=not use_cuda)
    if dist.num_processes != cfg.hardware.num_processes:
        raise ValueError(
            f"the run was launched with {dist.num_processes} process(es) but hardware.num_processes="
            f"{cfg.hardware.num_processes}; set hardware.num_processes={dist.num_processes} or launch with "
            f"accelerate launch --num_processes {cfg.hardware.num_processes}"
        )
    return dist


def open_run_dir(cfg: TrainConfig, logger: RunLogger, dist: Any) -> tuple[Path | None, dict | None]:
    """Check the run directory against ``cfg`` and cut its logs back to the newest complete checkpoint
    (or empty them); returns ``(checkpoint or None, its state)``."""
    run_dir = logger.run_dir
    if not check_same_config(cfg, logger):
        # No config.json: nothing here may belong to another run, or it would be resumed or emptied blindly.
        found = [p.name for p in (logger.metrics_path, logger.eval_path) if p.is_file() and p.stat().st_size]
        found += [f"checkpoints/{d.name}" for d in sorted((run_dir / "checkpoints").glob("checkpoint-*"))]
        if found:
            raise RunDirError(
                f"{run_dir} has no config.json but holds {', '.join(found)}: it cannot tell which config those "
                "belong to, and resuming or emptying them under this one could mix two runs or lose data. Fix: "
                "choose another out_dir, restore that run's config.json, or delete the directory to start over"
            )
    ckpt_root = run_dir / "checkpoints"
    ckpt, state = resumable_checkpoint(ckpt_root, dist.num_processes)  # refuses a damaged one, naming it
    if ckpt is not None:  # before anything is pruned or cut: a refusal loses nothing
        check_checkpoint_config(cfg, ckpt, state)
    dist.wait_for_everyone()
    if dist.is_main_process:
        prune_checkpoints(ckpt_root, keep=ckpt)  # incomplete newer checkpoints (all of them on a fresh start)
        # A fresh start: no line from an earlier, uncheckpointed attempt survives.
        logger.truncate(None if ckpt is None else state["offsets"])
    dist.wait_for_everyone()
    return ckpt, state


def describe_changes(old: dict, new: dict, keys: list[str]) -> tuple[str, str]:
    """The differing dotted ``keys`` in words: ("k old -> new; ..." (at most 8, then "and N more"), "k=old ...",
    the values that continue the run)."""

    def show(flat: dict, key: str) -> str:
        return json.dumps(flat[key]) if key in flat else "(absent)"

    changes = "; ".join(f"{k} {show(old, k)} -> {show(new, k)}" for k in keys[:8])
    more = f"; and {len(keys) - 8} more" if len(keys) > 8 else ""
    original = " ".join(f"{k}={show(old, k)}" for k in keys[:8] if k in old)
    return changes + more, original


def check_same_config(cfg: TrainConfig, logger: RunLogger) -> bool:
    """True if the run directory's config.json is ``cfg`` up to what a run may change when it continues
    (False: there is none); :class:`RunDirError` naming each key that differs (``rollout.m 8 -> 4``)
    otherwise. ``out_dir``, ``meta``, the budget and the checkpoint interval do not count
    (:data:`FINGERPRINT_EXCLUDED`): a run copied elsewhere resumes there, and a longer budget continues it."""
    old = logger.read_config()
    if old is None:
        return False
    try:  # a key added to the schema since the run was written takes its default: the same run
        old = to_dict(from_dict(old))
    except (ConfigError, TypeError):  # a key since renamed or removed: compared as written
        pass
    old.pop("meta", None)
    free = set(FINGERPRINT_EXCLUDED)
    old_flat = {k: v for k, v in flat_config(jsonable(old)).items() if k not in free}
    new_flat = {k: v for k, v in flat_config(jsonable(to_dict(cfg))).items() if k not in free}
    if old_flat != new_flat:
        missing = object()
        keys = sorted(k for k in set(old_flat) | set(new_flat) if old_flat.get(k, missing) != new_flat.get(k, missing))

        changes, original = describe_changes(old_flat, new_flat, keys)
        raise RunDirError(
            f"{logger.run_dir} holds a run with a different config ({changes}). Fix: choose another out_dir, "
            f"or continue that run with its values ({original}), or delete the directory to start over"
        )
    return True


# Keys a resume may change without changing what the checkpoint's steps computed, and the fingerprint of
# the rest: pods_repro.config.fingerprint (torch-free: the job's record checks its runs with it too).
_flat = flat_config


def check_checkpoint_config(cfg: TrainConfig, ckpt: Path, state: dict | None) -> None:
    """:class:`RunDirError` unless ``cfg`` has the training-relevant config that trained ``ckpt`` (its
    pods_state.json fingerprint); the run directory's config.json, which can be edited, does not count.
    A checkpoint written before checkpoints carried one is resumed with a warning."""
    state = state or {}
    old, digest = state.get("config"), state.get("config_sha256")
    if old is None and digest is None:
        print(
            f"[pods] warning: {ckpt} carries no config fingerprint (written by an older pods); only config.json "
            "vouches for the config it was trained under",
            file=sys.stderr,
        )
        return
    if not isinstance(old, dict) or not isinstance(digest, str) or config_digest(old) != digest:
        raise RunDirError(
            f"{ckpt / STATE_FILE} is damaged (its config does not match its config_sha256): it cannot say which "
            "config trained the checkpoint. Fix: restore it, or delete the run directory to start over"
        )
    new, new_digest = config_fingerprint(cfg)
    if new_digest == digest:
        return
    missing = object()
    defaults = _flat(to_dict(TrainConfig()))  # a key added to the schema since: its default is the same run
    keys = sorted(
        k
        for k in set(old) | set(new)
        if old.get(k, missing) != new.get(k, missing) and not (k not in old and new[k] == defaults.get(k, missing))
    )
    if not keys:
        return

    changes, original = describe_changes(old, new, keys)
    raise RunDirError(
        f"{ckpt} was trained under another config ({changes}); its weights, optimizer and logs are that "
        "run's (the run directory's config.json does not count: its checkpoint says what trained it). Fix: "
        f"start a new run directory (another out_dir), or resume with the original values ({original})"
    )


def budget_left(cfg: TrainConfig, stop_reason: str | None, steps: int, time_s: float | None) -> bool:
    """True when a run that stopped for ``stop_reason`` after ``steps`` steps and ``time_s`` training seconds
    has budget left under ``cfg`` (a longer budget than the one it stopped at continues it)."""
    if stop_reason not in ("max_steps", "max_time"):
        return False  # finished its data, or never stopped
    budget = cfg.budget
    if budget.max_steps is not None and steps >= budget.max_steps:
        return False
    return budget.max_time_s is None or (time_s or 0.0) < budget.max_time_s


def continue_state(logger: RunLogger, state: dict, main: bool, cfg: TrainConfig | None = None) -> dict:
    """The checkpoint state of a run stopped by its budget, made to continue under a longer one: no stop
    reason, and the evaluations that the stop added dropped from eval.jsonl, since a run of the longer budget
    does not make them: the closing one off the grid (``final``) and, at a point on the grid, the other sets
    (``eval.datasets`` after the first) where that point is off their coarser grid (``eval.others_every``)."""
    step = state.get("global_step")
    primary = cfg.eval.datasets[0] if cfg is not None and cfg.eval.datasets else None
    every = cfg.eval.others_every if cfg is not None else 1

    def closing(row: dict) -> bool:
        if row.get("step") != step:
            return False
        grid = row.get("grid_index")
        off_coarse = primary is not None and row.get("dataset") != primary and isinstance(grid, int) and grid % every
        return bool(row.get("final") or off_coarse)

    if main and logger.eval_path.exists():
        lines = logger.eval_path.read_text(encoding="utf-8").splitlines(keepends=True)
        keep = []
        for line in lines:
            try:
                row = json.loads(line)
            except ValueError:
                row = {}
            if not (isinstance(row, dict) and closing(row)):
                keep.append(line)
        if len(keep) != len(lines):
            logger.eval_path.write_text("".join(keep), encoding="utf-8")
    return {**state, "stop_reason": None}


def build_run(
    cfg: TrainConfig, logger: RunLogger, state: dict | None, num_processes: int, use_cuda: bool
) -> tuple[ReproTrainer, RunController]:
    """The policy, the data, the trainer and its run controller, as ``cfg`` describes them."""
    from transformers import set_seed

    from pods_repro.data import DataError, load_task
    from pods_repro.models import load_policy
    from pods_repro.rewards import trl_reward_funcs

    pin_cpu_threads(cfg, use_cuda)
    if not progress_enabled():
        quiet_library_progress()
    set_seed(cfg.seed)
    model, tokenizer = load_policy(
        cfg.policy.model,
        dtype=cfg.policy.dtype,
        device="cuda" if use_cuda else "cpu",
        lora=cfg.policy.lora,
        attn_implementation=cfg.policy.attn_implementation,
        load_in_4bit=cfg.policy.load_in_4bit,
        gradient_checkpointing=cfg.policy.gradient_checkpointing and use_cuda,
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
        math_gold=cfg.task.math_gold,
    )
    if len(train_records) < cfg.rollout.prompts_per_step:  # here, not in the sampler: before config.json binds
        raise DataError(
            f"the training set has {len(train_records)} prompt(s) but one step needs rollout.prompts_per_step="
            f"{cfg.rollout.prompts_per_step} distinct prompts; lower rollout.prompts_per_step or use a larger "
            "training set"
        )
    eval_sets = load_eval_sets(cfg, tokenizer)
    max_steps, scheduler_steps = step_plan(cfg, len(train_records))
    args = build_grpo_config(cfg, logger.run_dir / "checkpoints", num_processes, use_cuda, max_steps)
    controller = RunController(cfg, logger, eval_sets, state, use_cuda)
    trainer = ReproTrainer(
        model=model,
        reward_funcs=trl_reward_funcs(cfg.task.name, cfg.task.reward, cfg.task.reward_noise, cfg.seed),
        args=args,
        train_dataset=records_to_dataset(train_records),
        processing_class=tokenizer,
        callbacks=[controller],
        **pods_trainer_kwargs(cfg, max_steps, scheduler_steps),
    )
    controller.trainer = trainer
    trainer.remove_console_callbacks()  # our progress bar and metrics.jsonl replace them
    return trainer, controller


def run_training(trainer: ReproTrainer, ckpt: Path | None, state: dict | None, final_dir: Path) -> None:
    """Train from ``ckpt`` (or the start) until the controller stops, then save the final policy."""
    if state and state.get("stop_reason"):
        # Killed after the stop step was checkpointed: no more training, only the final weights and summary.
        trainer.load_checkpoint_weights(ckpt)
    else:
        trainer.train(resume_from_checkpoint=str(ckpt) if ckpt is not None else None)
    with writing(final_dir, (OSError, RuntimeError)):
        trainer.save_model(str(final_dir))  # the final policy (LoRA adapter or full weights); all ranks
    trainer.accelerator.wait_for_everyone()


def launch_info(trainer: Any) -> dict:
    """How the trainer's accelerator runs it: ``{"type": "NO" | "MULTI_GPU" | "DEEPSPEED" | ...,
    "deepspeed_zero_stage": 2 | None, "mixed_precision": "bf16" | "no" | ...}`` (config.json meta)."""
    acc = trainer.accelerator
    plugin = acc.state.deepspeed_plugin if getattr(trainer, "is_deepspeed_enabled", False) else None
    return {
        "type": str(getattr(acc.distributed_type, "value", acc.distributed_type)),
        "deepspeed_zero_stage": plugin.zero_stage if plugin is not None else None,
        "mixed_precision": str(acc.mixed_precision),
    }


def summary_identity(cfg: TrainConfig) -> dict:
    """The summary.json fields that tie a summary to its config."""
    return {"n": cfg.rollout.n, "m": cfg.rollout.m, "rule": cfg.rollout.rule, "seed": cfg.seed}


def write_summary(
    logger: RunLogger, cfg: TrainConfig, ctl: RunController, global_step: int, wall_s: float, engine: str | None = None
) -> None:
    """Write summary.json (last): stop reason, steps, training time, accuracies, peak memory.

    Seconds per step and its split (the measurement beside a step budget): ``s_per_step`` =
    ``gen_s_per_step`` (generation) + ``update_s_per_step`` (everything else in the step: reward
    scoring, ``reward_s_per_step``, is part of it, with the update and TRL's bookkeeping); evaluation
    (``eval_time_s``) and start-up (``startup_s``: process start to the first step of the last
    session) are outside the steps. Each has its CPU seconds (``time.process_time``) beside it:
    ``train_cpu_s``, ``eval_cpu_s``, ``startup_cpu_s``, ``cpu_s_last_session``. ``engine``: the class that wrapped the model for training
    (``DeepSpeedEngine`` under DeepSpeed, the model's own class in one plain process).
    """
    metrics = logger.metrics()
    evals = logger.evals()
    steps = metrics[-1]["step"] if metrics else global_step
    totals = {k: ctl.totals.get(k, 0.0) for k in ("gen_time_s", "update_time_s", "reward_time_s")}

    def per_step(total: float) -> float | None:
        return total / steps if steps else None

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
            "s_per_step": per_step(ctl.train_time_s),
            "gen_s_per_step": per_step(totals["gen_time_s"]),
            "update_s_per_step": per_step(totals["update_time_s"]),
            "reward_s_per_step": per_step(totals["reward_time_s"]),
            **totals,
            # rollouts and completion tokens generated and trained on, refill rounds, skipped prompts: all steps
            **{f"total_{k}": ctl.totals.get(k, 0.0) for k in STEP_COUNTS},
            "eval_time_s": ctl.totals.get("eval_time_s", 0.0),
            "startup_s": ctl.startup_s,
            "wall_s_last_session": wall_s,
            # CPU seconds (time.process_time): training steps over all sessions, evaluations over all
            # sessions, start-up of the last session, and the whole of the last session's process
            "train_cpu_s": ctl.train_cpu_s,
            "eval_cpu_s": ctl.totals.get("eval_cpu_s", 0.0),
            "startup_cpu_s": ctl.startup_cpu_s,
            "cpu_s_last_session": time.process_time(),
            "n_evals": len(evals),
            "final_accuracy": final,
            "best_accuracy": best,
            "peak_mem_mb": max((m.get("peak_mem_mb") or 0.0 for m in metrics), default=None),
            "engine": engine,
            **summary_identity(cfg),
        }
    )


def summary_line(summary: dict, cfg: TrainConfig, primary: str | None, run_dir: Path) -> str:
    """The run's last line on stderr: steps and why it stopped, against the budget in force (steps when
    ``budget.max_steps`` is set, as the progress bar counts them, else seconds), the primary test set's best
    and final accuracy, training and CPU seconds, and the run directory."""
    budget, steps = cfg.budget, summary.get("steps")
    if budget.max_steps is not None:
        done = f"{steps}/{budget.max_steps} steps"
    elif budget.max_time_s is not None:
        done = f"{steps} steps in {summary.get('time_s') or 0.0:.1f}/{budget.max_time_s:g} s"
    else:
        done = f"{steps} steps"

    def acc(key: str) -> str:
        value = (summary.get(key) or {}).get(primary)
        return "n/a" if value is None else f"{value:.4f}"

    accuracy = f"{primary} accuracy best {acc('best_accuracy')} final {acc('final_accuracy')}; " if primary else ""
    cpu = summary.get("train_cpu_s")
    cpu_text = f" (CPU {cpu:.1f} s)" if isinstance(cpu, int | float) else ""
    return (
        f"[pods] done: {done} (stop: {summary.get('stop_reason')}); {accuracy}"
        f"training {summary.get('time_s') or 0.0:.1f} s{cpu_text}; {run_dir}"
    )


def train(cfg: TrainConfig) -> Path:
    """Train one run described by ``cfg``; returns its run directory.

    Resumes from the newest complete checkpoint if the run directory has one; returns at once if the
    run already finished (summary.json present).
    """
    run_dir = preflight(cfg)  # before any work or file
    use_cuda = resolve_use_cuda(cfg)
    dist = _distributed_state(cfg, use_cuda)
    logger = RunLogger(run_dir, enabled=dist.is_main_process)
    with run_dir_lock(run_dir, enabled=dist.is_main_process):  # one writer per run directory
        return _train_locked(cfg, logger, dist, use_cuda)


def _train_locked(cfg: TrainConfig, logger: RunLogger, dist: Any, use_cuda: bool) -> Path:
    run_dir = logger.run_dir
    if logger.finished:
        check_same_config(cfg, logger)  # a finished run with another config is not this run either
        ckpt, state = latest_checkpoint(run_dir / "checkpoints")
        if ckpt is not None:  # its last checkpoint says what trained it, whatever config.json says now
            check_checkpoint_config(cfg, ckpt, state)
        summary = logger.check_finished(summary_identity(cfg))  # names a damaged file
        if not (run_dir / "final").is_dir():
            raise RunDirError(final_missing_message(run_dir))
        if not budget_left(cfg, summary.get("stop_reason"), summary["steps"], summary.get("time_s")):
            if dist.is_main_process:
                more = cfg.budget.max_steps is not None and summary["steps"] > cfg.budget.max_steps
                shorter = (
                    f", more than budget.max_steps={cfg.budget.max_steps}: a shorter budget does not shorten a "
                    "finished run (train it in another out_dir)"
                    if more
                    else ""
                )
                print(
                    f"[pods] {run_dir} already finished ({summary['steps']} steps{shorter}); not rerunning",
                    file=sys.stderr,
                )
            return run_dir
        if ckpt is None or (state or {}).get("global_step") != summary["steps"]:
            raise RunDirError(
                f"{run_dir} finished at step {summary['steps']} but keeps no checkpoint of that step, so a longer "
                f"budget cannot continue it. Fix: train the longer budget in another out_dir"
            )
        dist.wait_for_everyone()
        if dist.is_main_process:  # unfinished again until the longer budget's summary is written
            logger.summary_path.unlink()
        dist.wait_for_everyone()
    ckpt, state = open_run_dir(cfg, logger, dist)
    if state and state.get("stop_reason"):
        if budget_left(cfg, state["stop_reason"], state.get("global_step", 0), state.get("train_time_s")):
            state = continue_state(logger, state, dist.is_main_process, cfg)
    if ckpt is not None and dist.is_main_process:
        print(
            f"[pods] resuming {run_dir} from step {(state or {}).get('global_step')} ({ckpt.name})",
            file=sys.stderr,
            flush=True,
        )
    trainer, controller = build_run(cfg, logger, state, dist.num_processes, use_cuda)
    written = logger.read_config() if dist.is_main_process else None
    if dist.is_main_process and written is None:  # only once the run could be built: a failed
        meta = run_meta(dist.num_processes, launch_info(trainer), use_cuda)  # start does not bind the directory
        from pods_repro.models import policy_identity

        meta["policy"] = policy_identity(cfg.policy.model)  # which weights (a tiny build differs by CPU)
        logger.write_config(to_dict(cfg), meta)
    elif dist.is_main_process and {k: v for k, v in written.items() if k != "meta"} != jsonable(to_dict(cfg)):
        logger.write_config(to_dict(cfg), written.get("meta"))  # continued under a longer budget: say so
    wall0 = time.time()
    run_training(trainer, ckpt, state, run_dir / "final")
    if controller.stop_reason is None:
        controller.stop_reason = "data_exhausted"
    if dist.is_main_process:
        engine = type(trainer.model_wrapped).__name__
        write_summary(logger, cfg, controller, trainer.state.global_step, time.time() - wall0, engine)
        primary = controller.eval_sets[0][0] if controller.eval_sets else None
        print(summary_line(logger.read_summary(), cfg, primary, run_dir), file=sys.stderr, flush=True)
    trainer.accelerator.wait_for_everyone()
    return run_dir
