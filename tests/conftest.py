"""Shared fixtures: a small, quickly trained tiny policy and tiny training configs.

``tiny_policy_dir`` is a Llama-layout model with the project's character tokenizer, warm-started
for a few supervised steps on the synthetic ``arith`` task: enough that it writes the
``<think>/<answer>`` format part of the time, so rewards vary within a group (the trainer tests need
non-constant rewards), while staying far from solving the task. It is built once per machine into
``resources/test_models/`` (gitignored; override with $PODS_TEST_CACHE), keyed by a hash of its
recipe, under a file lock; a fresh checkout pays about 10-60 s once, depending on CPU load.

``tiny_cfg(tmp_path, *overrides)`` returns a validated ``TrainConfig`` of experiments/tiny_a.yaml
shrunk to a few steps of n=8 / m=4 on that model, writing into ``tmp_path``.

The test session runs torch single-threaded (``OMP_NUM_THREADS=1`` unless already set, inherited by
the subprocess runs): on a shared 2-core machine torch's two intra-op threads wait on each other's
time slices for every small op, which made tiny-model steps and evaluations 30-100x slower (measured:
a 200-prompt evaluation took 330 s with 2 threads under load and 8.5 s with 1). Resume and
determinism comparisons also need the in-process and subprocess runs to use the same thread count.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch is imported; see the module docstring
# Every test run evaluates its step 0 itself (tests/trainer/test_evalcache.py turns pods_repro.evalcache's reuse on), and
# no test writes evaluations into the user's model cache.
os.environ.setdefault("PODS_EVAL_CACHE", "off")
from pods_repro.kernels import pin_cpu_kernels  # noqa: E402

pin_cpu_kernels()  # the workflow's CPU kernels (pods_repro.kernels), before any tensor is made

REPO = Path(__file__).resolve().parents[1]
TINY_RECIPE = {"hidden": 48, "layers": 2, "heads": 4, "steps": 100, "batch": 32, "lr": 3e-3, "seed": 0, "v": 1}

# Overrides that shrink experiments/tiny_a.yaml to a seconds-long CPU run (order matters: later wins).
FAST_OVERRIDES = (
    "rollout.n=8",
    "rollout.m=4",
    "rollout.max_completion_length=64",
    "budget.max_time_s=null",
    "budget.max_steps=4",
    "eval.every_s=null",
    "eval.every_steps=2",
    "eval.max_examples=8",
    "eval.datasets=[arith]",  # tiny_a.yaml also evaluates Fig. 7's sets; the tests need only one
    "eval.repeats=1",
    "eval.max_completion_length=64",
    "checkpoint.every_steps=2",
    "optim.lr=1e-3",
    "eval.others_every=1",  # tiny_a.yaml, the default job's run, evaluates its other sets at every 4th point
    "eval.noise=fresh",  # and with common evaluation noise; the tests' base is the trainer's defaults
)


# TRL trainer arguments of a quiet CPU run in tests: no mixed precision, checkpointing, reporting, saving or bars.
QUIET_CPU_ARGS = dict(
    use_cpu=True,
    bf16=False,
    activation_checkpointing=False,
    report_to=[],
    logging_steps=1,
    save_strategy="no",
    disable_tqdm=True,
)


def _build_tiny(out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig

    from pods_repro import data as pdata
    from pods_repro.models import build_char_tokenizer

    r = TINY_RECIPE
    torch.manual_seed(r["seed"])
    tok = build_char_tokenizer()
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=r["hidden"],
        intermediate_size=4 * r["hidden"],
        num_hidden_layers=r["layers"],
        num_attention_heads=r["heads"],
        num_key_value_heads=r["heads"],
        max_position_embeddings=256,
        tie_word_embeddings=True,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    rows = []
    for rec in pdata.load_task("arith", "train", prompt_style="plain", seed=r["seed"])[:4000]:
        p = tok(rec["prompt"])["input_ids"]
        c = tok(rec["solution"], add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        rows.append((p + c, [-100] * len(p) + c))
    opt = torch.optim.AdamW(model.parameters(), lr=r["lr"])
    gen = torch.Generator().manual_seed(r["seed"])
    bs = r["batch"]
    for _ in range(r["steps"]):
        idx = torch.randint(len(rows), (bs,), generator=gen).tolist()
        width = max(len(rows[i][0]) for i in idx)
        ids = torch.full((bs, width), tok.pad_token_id)
        labels = torch.full((bs, width), -100)
        mask = torch.zeros((bs, width), dtype=torch.long)
        for b, i in enumerate(idx):
            x, y = rows[i]
            ids[b, : len(x)] = torch.tensor(x)
            labels[b, : len(y)] = torch.tensor(y)
            mask[b, : len(x)] = 1
        model(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
        opt.step()
        opt.zero_grad()
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(out)
    tok.save_pretrained(out)
    # pods_repro.models.load_tokenizer keys the character tokenizer on this file.
    (out / "pods_tiny.json").write_text(json.dumps({"name": "tests-tiny", "recipe": r}) + "\n")


@pytest.fixture(autouse=True, scope="session")
def _torch_threads():
    import torch

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


@pytest.fixture(scope="session")
def tiny_policy_dir() -> Path:
    """Directory of the cached small test policy (built on first use)."""
    root = Path(os.environ.get("PODS_TEST_CACHE") or REPO / "resources" / "test_models")
    key = hashlib.sha1(json.dumps(TINY_RECIPE, sort_keys=True).encode()).hexdigest()[:10]
    out = root / f"tiny-llama-{key}"
    if (out / "pods_tiny.json").is_file():
        return out
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "pods_tiny.json").is_file():
            tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=root))
            _build_tiny(tmp)
            shutil.rmtree(out, ignore_errors=True)
            tmp.rename(out)
    return out


def one_per_key(*overrides: str) -> list[str]:
    """``key=value`` overrides with the last value of each key, for the command line, which refuses a
    key given twice with two values (tests compose a base list with extras that replace some of it)."""
    merged: dict[str, str] = {}
    for item in overrides:
        key = item.partition("=")[0].strip()
        merged.pop(key, None)
        merged[key] = item
    return list(merged.values())


@pytest.fixture(scope="session")
def tiny_overrides(tiny_policy_dir: Path) -> tuple[str, ...]:
    """Overrides of experiments/tiny_a.yaml for a seconds-long run on the test policy."""
    return (f"policy.model={tiny_policy_dir}", *FAST_OVERRIDES)


@pytest.fixture
def tiny_cfg(tiny_overrides):
    """``tiny_cfg(out_dir, *extra_overrides) -> TrainConfig`` (validated)."""
    from pods_repro.config import load_config

    def make(out_dir: Path, *extra: str):
        return load_config(REPO / "experiments" / "tiny_a.yaml", [*tiny_overrides, f"out_dir={out_dir}", *extra])

    return make


@pytest.fixture
def make_trainer(tiny_cfg, tmp_path):
    """``make_trainer(reward_funcs, *overrides, grpo_kwargs={}) -> (trainer, cfg)``: a PODSGRPOTrainer on
    the test policy and the arith training prompts, built exactly as ``pods_repro.run.train`` builds it
    (same GRPOConfig), but with any reward functions, for driving single steps by hand."""
    from pods_repro.data import load_task
    from pods_repro.models import load_policy
    from pods_repro.trainer import ReproTrainer, build_grpo_config, pods_trainer_kwargs, records_to_dataset, step_plan

    def make(reward_funcs, *overrides: str, grpo_kwargs: dict | None = None):
        cfg = tiny_cfg(tmp_path / "run", *overrides)
        model, tok = load_policy(cfg.policy.model, dtype="float32", device="cpu", lora=cfg.policy.lora)
        records = load_task("arith", "train", prompt_style="plain", seed=cfg.seed)[:64]
        max_steps, sched = step_plan(cfg, len(records))
        args = build_grpo_config(cfg, tmp_path / "ckpt", 1, False, max_steps)
        for key, val in (grpo_kwargs or {}).items():  # e.g. generation_kwargs, read at trainer init
            setattr(args, key, val)
        trainer = ReproTrainer(
            model=model,
            reward_funcs=reward_funcs,
            args=args,
            train_dataset=records_to_dataset(records),
            processing_class=tok,
            **pods_trainer_kwargs(cfg, max_steps, sched),
        )
        return trainer, cfg

    return make


def _batch_inputs(trainer, k: int = 0) -> list[dict]:
    rows = trainer.num_generations * trainer.pods_grad_accum
    prompts = trainer.args.per_device_train_batch_size * trainer.args.steps_per_generation // rows
    ds = trainer.train_dataset
    return [dict(ds[k + p]) for p in range(prompts) for _ in range(rows)]


@pytest.fixture
def batch_inputs():
    """``batch_inputs(trainer, k=0)``: one generation batch as TRL's dataloader yields it (prompts k, k+1,
    ... each repeated n x GA times)."""
    return _batch_inputs


@pytest.fixture(scope="session")
def analysis_helpers():
    """tests/analysis/test_analysis.py as a module (its fake-run writers `fake_tree`, `fake_sheet`, `write_run`,
    `_tidy_arm`), loaded by path so that it works in any pytest import mode."""
    path = Path(__file__).parent / "analysis" / "test_analysis.py"
    spec = importlib.util.spec_from_file_location("_pods_test_analysis", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# Logged values that measure the machine (seconds, memory), not what a run computed: left out when two runs are
# compared row for row.
def build_user_trainer(
    tiny_policy_dir, args, reward_funcs, *, records=8, model=None, trainer_cls=None, quiet=True, **pods_kw
):
    """A TRL user's trainer on the test policy: ``(trainer, records)``. The one builder of the TRL-side tests.

    ``records``: the first N arith training prompts (an int) or the records themselves; ``model``: the policy to
    train instead of a fresh load (a PEFT-wrapped one, say); ``trainer_cls``: default the library's
    ``PODSGRPOTrainer`` (``trl.GRPOTrainer`` for a replay); ``quiet``: no console callbacks.
    """
    from pods import PODSGRPOTrainer
    from pods_repro.data import load_task
    from pods_repro.models import load_policy, load_tokenizer
    from pods_repro.trainer import records_to_dataset

    if model is None:
        model, tok = load_policy(str(tiny_policy_dir), dtype="float32", device="cpu")
    else:  # the given policy's tokenizer: the one load_policy would pair with it
        tok = load_tokenizer(str(tiny_policy_dir))
    if isinstance(records, int):
        records = load_task("arith", "train", prompt_style="plain", seed=0)[:records]
    trainer = (trainer_cls or PODSGRPOTrainer)(
        model=model, reward_funcs=reward_funcs, args=args, train_dataset=records_to_dataset(records),
        processing_class=tok, **pods_kw,
    )  # fmt: skip
    if quiet and hasattr(trainer, "remove_console_callbacks"):
        trainer.remove_console_callbacks()
    return trainer, records


TIMING_KEYS = frozenset(
    {
        "time_s",
        "gen_time_s",
        "update_time_s",
        "reward_time_s",
        "step_time_s",
        "peak_mem_mb",
        "eval_time_s",
        "cpu_time_s",
        "step_cpu_s",
    }
)


def strip_timing(rows: list[dict]) -> list[dict]:
    """Log rows without their machine-bound values (:data:`TIMING_KEYS`)."""
    return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in rows]
