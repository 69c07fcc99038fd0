"""Where a tiny training step's time goes: generation, reward scoring, the policy
update, TRL/HF bookkeeping, plus evaluation and start-up, for the arms of tiny setting (a).

    OMP_NUM_THREADS=1 python benchmarks/profile_tiny_step.py (= pods bench profile_tiny_step) [--steps 6] [--arms baseline pods]
        [--eval-examples 200] [--cprofile 25]

Each arm is one short run of experiments/tiny_a.yaml exactly as the workflow trains it (the run
sheet's n/m/rule for the arm, the tiny scale's overrides from config/config.yaml) shrunk to
``--steps`` optimizer steps with one evaluation at the end, trained in this process through
pods_repro.run (build_run, run_training). The split of a step:

- gen: TRL ``_generate`` (HF ``generate`` of the n rollouts), as metrics.jsonl logs it (gen_time_s);
- reward: ``_calculate_rewards`` (reward_time_s);
- update: ``compute_loss`` (the policy forward) + ``accelerator.backward`` + ``optimizer.step``,
  timed by wrappers installed here;
- bookkeeping: the rest of the step (TRL's batch preparation, advantages, the PODS selection,
  logging, the scheduler, callbacks) = step - gen - reward - update.

Evaluation: seconds per evaluated set per evaluation (eval.jsonl). Start-up: a fresh interpreter
importing what ``python -m pods_repro train`` imports, and, in this process, building the run (model,
data, trainer). The first step is reported apart (warm-up); the table averages the others.
On a shared machine only ratios measured side by side in one process mean much, and the arm that
runs first in the process has measured slower than the same arm run second (warm-up, load): use
``--repeats 2`` (A B A B) and compare the later repeats.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import yaml

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("PODS_NO_PROGRESS", "1")
os.environ.setdefault("PODS_EVAL_CACHE", "off")  # time every evaluation, step 0's too (pods_repro.evalcache)
REPO = Path(__file__).resolve().parents[2]  # the checkout (config/config.yaml holds the tiny scale's overrides)

IMPORTS = "import pods_repro.cli, pods_repro.run, pods.trainer, pods_repro.rewards, pods_repro.data, pods_repro.models, trl, transformers"


def scale_overrides(letter: str = "a", scale: str = "tiny") -> dict:
    """The trainer overrides the workflow adds to a run of `letter` at `scale` (rules/common.smk)."""
    path = REPO / "config" / "config.yaml"
    if not path.is_file():
        raise SystemExit(f"{path} not found: profile_tiny_step reads the workflow's tiny scale; run it in a checkout")
    prof = yaml.safe_load(path.read_text())["scales"][scale]
    return {**prof.get("overrides", {}), **prof.get("settings", {}).get(letter, {}).get("overrides", {})}


def startup_imports_s() -> float:
    code = f"import time; t = time.perf_counter(); {IMPORTS}; print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


class Timers:
    """Per-step accumulators for the update's parts (reset at every step begin)."""

    def __init__(self):
        self.now: dict[str, float] = defaultdict(float)
        self.steps: list[dict[str, float]] = []

    def wrap(self, key: str, fn):
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.now[key] += time.perf_counter() - t0

        return timed


def _arm_config(role, steps, eval_examples, out_root, model, fast_decode):
    """The tiny (a) arm `role` shrunk to `steps` steps and one evaluation at the end; (arm, run_dir, cfg)."""
    from pods_repro.config import load_config
    from pods_repro.registry import main_arms, read_sheet, repo_file

    arm = main_arms(read_sheet(repo_file("config/runs_tiny.tsv")))["a"][role]
    over = {
        **arm.overrides,
        **scale_overrides("a"),
        "budget.max_steps": steps,
        "eval.every_steps": steps,
        "eval.max_examples": eval_examples,
        "checkpoint.every_steps": 10 * steps,
        **({"policy.model": model} if model else {}),
        **({"rollout.fast_decode": str(fast_decode).lower()} if fast_decode is not None else {}),
    }
    args = [f"{k}={'null' if v is None else v}" for k, v in over.items()]
    run_dir = out_root / f"{role}_n{arm.n}_m{arm.m}"
    return arm, run_dir, load_config(repo_file("experiments/tiny_a.yaml"), [*args, f"out_dir={run_dir}"])


def _instrument(trainer, timers: Timers) -> list:
    """Time the loss forward, the backward and the optimizer step of every step; returns the hooks to remove."""
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
    from transformers import TrainerCallback

    trainer.compute_loss = timers.wrap("loss_fwd", trainer.compute_loss)
    trainer.accelerator.backward = timers.wrap("backward", trainer.accelerator.backward)
    starts: dict[int, float] = {}

    def pre(opt, *_):
        starts[id(opt)] = time.perf_counter()

    def post(opt, *_):
        timers.now["optim"] += time.perf_counter() - starts.pop(id(opt), time.perf_counter())

    class Collect(TrainerCallback):
        def on_step_begin(self, *a, **k):
            timers.now.clear()

        def on_step_end(self, *a, **k):
            timers.steps.append(dict(timers.now))

    trainer.add_callback(Collect())
    return [register_optimizer_step_pre_hook(pre), register_optimizer_step_post_hook(post)]


def _step_rows(run_dir: Path, timers: Timers) -> list[dict]:
    from pods_repro.runlog import read_jsonl

    rows = []
    for m, t in zip(read_jsonl(run_dir / "metrics.jsonl"), timers.steps, strict=True):
        update = t.get("loss_fwd", 0.0) + t.get("backward", 0.0) + t.get("optim", 0.0)
        step, gen, reward = m["step_time_s"], m["gen_time_s"], m["reward_time_s"] or 0.0
        rows.append({"step": step, "gen": gen, "reward": reward, "update": update,
                     "bookkeeping": step - gen - reward - update, "loss_fwd": t.get("loss_fwd", 0.0),
                     "backward": t.get("backward", 0.0), "optim": t.get("optim", 0.0),
                     "completion_len": m.get("completion_len_mean")})  # fmt: skip
    return rows


def profile_arm(
    role: str,
    steps: int,
    eval_examples: int,
    out_root: Path,
    cprofile: int,
    model: str | None = None,
    fast_decode: bool | None = None,
) -> dict:
    from pods_repro.evaluation import resolve_use_cuda
    from pods_repro.run import _distributed_state, build_run, open_run_dir, run_training
    from pods_repro.runlog import RunLogger, read_jsonl

    arm, run_dir, cfg = _arm_config(role, steps, eval_examples, out_root, model, fast_decode)
    t0 = time.perf_counter()
    use_cuda = resolve_use_cuda(cfg)
    dist = _distributed_state(cfg, use_cuda)
    logger = RunLogger(run_dir, enabled=True)
    open_run_dir(cfg, logger, dist)
    trainer, _controller = build_run(cfg, logger, None, dist.num_processes, use_cuda)
    build_s = time.perf_counter() - t0
    timers = Timers()
    hooks = _instrument(trainer, timers)
    prof = cProfile.Profile() if cprofile else None
    try:
        with prof or contextlib.nullcontext():
            run_training(trainer, None, None, run_dir / "final")
    finally:
        for h in hooks:
            h.remove()
    rows = _step_rows(run_dir, timers)
    later = rows[1:] or rows
    mean = {k: sum(r[k] or 0.0 for r in later) / len(later) for k in rows[0]}
    per_set: dict[str, list[float]] = defaultdict(list)
    for e in read_jsonl(run_dir / "eval.jsonl"):
        per_set[e["dataset"]].append(e["eval_time_s"])
    out = {
        "arm": f"{role} n={arm.n} m={arm.m}",
        "build_run_s": build_s,
        "first_step": rows[0],
        "mean_step": mean,
        "eval_s_per_set": {k: sum(v) / len(v) for k, v in per_set.items()},
        "eval_examples": eval_examples,
    }
    if prof is not None:
        stats = pstats.Stats(prof).sort_stats("cumulative")
        print(f"\n--- cProfile of {out['arm']} ({steps} steps + evaluations), top {cprofile} by cumulative time")
        stats.print_stats(cprofile)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        allow_abbrev=False, description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--steps", type=int, default=6, help="optimizer steps per arm (the first is reported apart)")
    ap.add_argument("--arms", nargs="+", default=["baseline", "pods"], choices=["baseline", "pods"])
    ap.add_argument("--eval-examples", type=int, default=200, help="examples per evaluated set (the YAML: 200)")
    ap.add_argument("--repeats", type=int, default=1, help="run the arms this many times, interleaved (A B A B ...)")
    ap.add_argument("--cprofile", type=int, default=0, help="also print the top N functions of a cProfile")
    ap.add_argument("--model", help="policy.model instead of the YAML's tiny:llama-arith (tests)")
    ap.add_argument(
        "--fast-decode",
        choices=("yaml", "on", "off", "both"),
        default="yaml",
        help="rollout.fast_decode (pods_repro.fastgen vs transformers' generate): the YAML's, on, off, or both "
        "interleaved (on, off) per arm and repeat, with the generation ratio printed",
    )
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    modes = {"yaml": [None], "on": [True], "off": [False], "both": [True, False]}[args.fast_decode]

    imports = startup_imports_s()
    results = []
    with tempfile.TemporaryDirectory(prefix="pods-profile-") as tmp:
        for rep in range(args.repeats):
            for role in args.arms:
                for fast in modes:
                    out = Path(tmp) / f"rep{rep}" / f"fast{fast}"
                    res = profile_arm(role, args.steps, args.eval_examples, out, args.cprofile, args.model, fast)
                    res["arm"] += {None: "", True: " fastgen", False: " generate"}[fast]
                    res["arm"] += f" #{rep + 1}" if args.repeats > 1 else ""
                    res["fast_decode"] = fast
                    results.append(res)

    print(f"\nstart-up: imports of `python -m pods_repro train` in a fresh interpreter {imports:.1f} s")
    keys = ("step", "gen", "reward", "update", "bookkeeping")
    print(f"\n{'arm':<22}" + "".join(f"{k:>13}" for k in keys) + "   (s per step, mean of steps 2..)")
    for r in results:
        s = r["mean_step"]
        cells = "".join(f"{s[k]:>8.3f} {100 * s[k] / s['step']:>3.0f}%" for k in keys)
        print(f"{r['arm']:<22}{cells}")
    for r in results:
        s = r["mean_step"]
        print(
            f"{r['arm']}: update = forward {s['loss_fwd']:.3f} + backward {s['backward']:.3f} + optimizer "
            f"{s['optim']:.3f} s; first step {r['first_step']['step']:.2f} s; completion length "
            f"{s['completion_len']:.1f}; building the run {r['build_run_s']:.1f} s; evaluation per set "
            f"({r['eval_examples']} examples): " + ", ".join(f"{k} {v:.2f} s" for k, v in r["eval_s_per_set"].items())
        )
    if args.fast_decode == "both":
        print("\ngeneration s/step, transformers' generate / pods_repro.fastgen (same rollouts, side by side):")
        pairs = list(zip(results[::2], results[1::2], strict=True))
        for on, off in pairs:
            g_on, g_off = on["mean_step"]["gen"], off["mean_step"]["gen"]
            st_on, st_off = on["mean_step"]["step"], off["mean_step"]["step"]
            print(
                f"  {off['arm']:<30} gen {g_off:.3f} / {g_on:.3f} = {g_off / g_on:.2f}x;"
                f" whole step {st_off:.3f} / {st_on:.3f} = {st_off / st_on:.2f}x"
            )
    if args.json:
        Path(args.json).write_text(json.dumps({"imports_s": imports, "arms": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    from pods_repro.bench import run_cli

    run_cli(main, "profile_tiny_step")
