"""Evaluation: sampling backends, the accuracy of a policy on a task, post-hoc ``pods eval``.

The paper's protocol (docs/paper.md#evaluation-protocol): each test prompt gets ``eval.repeats``
completions at ``eval.temperature``; accuracy, format accuracy and completion length are averaged over
all of them. During training the run controller (:mod:`pods_repro.run`) asks the trainer for a generator with synced weights
(:meth:`pods.trainer.PODSGRPOTrainer.eval_generator`) and calls :func:`evaluate_policy`; after
training ``pods eval RUN_DIR`` calls :func:`evaluate` on the saved final policy. This module never
imports TRL (``pods eval`` does not load the trainer).

``PODS_EVAL_BATCH_ROWS`` sets the completions per ``generate()`` call (default 256); it fixes the
evaluation's seeding blocks, so results depend on it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import torch

from pods.base import mix_seed  # noqa: F401  (the trainer's seed mixer; evaluation draws with it too)
from pods_repro import fastgen
from pods_repro.config import TrainConfig
from pods_repro.runlog import RunLogger, final_missing_message

__all__ = [
    "EVAL_BATCH_ROWS",
    "Generator",
    "HFGenerator",
    "VLLMGenerator",
    "evaluate",
    "evaluate_policy",
    "left_pad",
    "load_eval_sets",
    "mix_seed",
    "pin_cpu_threads",
    "resolve_use_cuda",
]

# Completions per HF generate() call during evaluation ($PODS_EVAL_BATCH_ROWS; the tests shrink it to
# spread a few prompts over two processes). Evaluation results depend on it (it sets the seeding blocks).
EVAL_BATCH_ROWS = int(os.environ.get("PODS_EVAL_BATCH_ROWS", "256"))


def resolve_use_cuda(cfg: TrainConfig) -> bool:
    """Whether ``cfg.hardware.device`` means the GPU on this machine (``cuda`` without one is an error)."""
    dev = cfg.hardware.device
    if dev == "cuda" and not torch.cuda.is_available():
        raise ValueError("hardware.device=cuda but no CUDA GPU is visible; set hardware.device=cpu or auto")
    return dev == "cuda" or (dev == "auto" and torch.cuda.is_available())


def pin_cpu_threads(cfg: TrainConfig, use_cuda: bool) -> None:
    """CPU runs use ``hardware.threads`` torch threads (default 1).

    Measured on a 2-core machine with other jobs running: 64 tiny rollouts took 0.31 s with 1 thread and
    47 s with 2, because torch's OpenMP pool spins when its threads compete with other processes.
    """
    if not use_cuda:
        torch.set_num_threads(getattr(cfg.hardware, "threads", None) or 1)


def load_eval_sets(cfg: TrainConfig, tokenizer: Any) -> list[tuple[str, list[dict]]]:
    """``[(dataset name, test examples)]`` for every name in ``cfg.eval.datasets``."""
    from pods_repro.data import load_task

    return [
        (
            name,
            load_task(
                name,
                "test",
                path=cfg.task.test if name == cfg.task.name else None,
                prompt_style=cfg.task.prompt_style,
                tokenizer=tokenizer,
                max_prompt_length=cfg.task.max_prompt_length,
                limit=cfg.eval.max_examples,
                seed=cfg.seed,
            ),
        )
        for name in cfg.eval.datasets
    ]


# --------------------------------------------------------------------------------------------
# Generation backends
# --------------------------------------------------------------------------------------------
class Generator(Protocol):
    """``generate(prompts, n, temperature, max_tokens, seed) -> [[completion] * n] * len(prompts)``."""

    def generate(
        self, prompts: Sequence[Any], n: int, temperature: float, max_tokens: int, seed: int | None = None
    ) -> list[list[str]]: ...


def _is_chat(prompt: Any) -> bool:
    return isinstance(prompt, list) and bool(prompt) and isinstance(prompt[0], dict) and "role" in prompt[0]


def _encode_prompts(tokenizer: Any, prompts: Sequence[Any]) -> list[list[int]]:
    # The same encoding as GRPOTrainer._tokenize_prompts, so evaluation sees the training prompts.
    if _is_chat(prompts[0]):
        enc = tokenizer.apply_chat_template(list(prompts), add_generation_prompt=True, tokenize=True, return_dict=True)
        return [list(x) for x in enc["input_ids"]]
    return [list(x) for x in tokenizer(text=list(prompts))["input_ids"]]


def left_pad(rows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(ids, attention mask, width): token rows left-padded to the longest, as TRL pads prompts."""
    width = max(len(x) for x in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attn = torch.zeros((len(rows), width), dtype=torch.long)
    for i, x in enumerate(rows):
        ids[i, width - len(x) :] = torch.tensor(x, dtype=torch.long)
        attn[i, width - len(x) :] = 1
    return ids, attn, width


class HFGenerator:
    """Batched sampling with ``model.generate`` (any device); tested on CPU.

    Completions end at the first EOS token (kept out of the text) or at ``max_tokens``; the token
    counts of the last call are in ``self.last_lengths`` (same layout as the return value).
    ``fast_decode``: sample with :func:`pods_repro.fastgen.sample` (token-identical) where it covers the model and
    settings (``rollout.fast_decode``).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        top_p: float = 1.0,
        batch_rows: int | None = None,
        top_k: int = 0,
        fast_decode: bool = False,
    ):
        self.model = model
        self.fast_decode = fast_decode
        self.tokenizer = tokenizer
        self.top_p = top_p
        self.top_k = top_k  # 0 = off
        self.batch_rows = batch_rows or EVAL_BATCH_ROWS
        self.last_lengths: list[list[int]] = []
        eos = getattr(model.generation_config, "eos_token_id", None) or tokenizer.eos_token_id
        self.eos_ids = [eos] if isinstance(eos, int) else list(eos or [])
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (self.eos_ids or [0])[0]

    def _generation_config(self, temperature: float, max_tokens: int) -> Any:
        from transformers import GenerationConfig

        sampling = temperature > 0
        return GenerationConfig(
            max_new_tokens=max_tokens,
            do_sample=sampling,
            temperature=temperature if sampling else None,
            top_p=self.top_p if sampling else None,
            top_k=self.top_k if sampling else None,
            pad_token_id=self.pad_id,
            eos_token_id=self.eos_ids or None,
            bos_token_id=self.tokenizer.bos_token_id,
        )

    def _left_pad(self, rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor, int]:
        return left_pad(rows, self.pad_id)

    def _cut(self, toks: list[int]) -> tuple[list[int], int]:
        """(completion tokens without EOS, generated length counting EOS, as TRL does)."""
        cut = next((k for k, t in enumerate(toks) if t in self.eos_ids), None)
        if cut is not None:
            return toks[:cut], cut + 1
        length = len(toks)  # no EOS: the completion ran to max_tokens (or stopped with the batch)
        while length and toks[length - 1] == self.pad_id and self.pad_id not in self.eos_ids:
            length -= 1
        return toks[:length], length

    @torch.no_grad()
    def generate(
        self, prompts: Sequence[Any], n: int, temperature: float, max_tokens: int, seed: int | None = None
    ) -> list[list[str]]:
        if n < 1 or max_tokens < 1:
            raise ValueError(f"n and max_tokens must be >= 1, got n={n}, max_tokens={max_tokens}")
        gen_cfg = self._generation_config(temperature, max_tokens)
        fast = self.fast_decode and fastgen.unsupported_reason(self.model, gen_cfg) is None
        device = next(self.model.parameters()).device
        prompt_ids = _encode_prompts(self.tokenizer, prompts)
        per_call = max(1, self.batch_rows // n)  # prompts per generate() call
        texts: list[list[str]] = []
        self.last_lengths = []
        devices = [device.index or 0] if device.type == "cuda" else []
        for start in range(0, len(prompt_ids), per_call):
            rows = [x for x in prompt_ids[start : start + per_call] for _ in range(n)]  # each prompt n times
            ids, attn, width = self._left_pad(rows)
            with torch.random.fork_rng(devices=devices):
                if seed is not None:
                    torch.manual_seed(mix_seed(seed, start))
                if fast:
                    out = fastgen.sample(self.model, ids.to(device), attn.to(device), gen_cfg)
                else:
                    out = self.model.generate(
                        input_ids=ids.to(device), attention_mask=attn.to(device), generation_config=gen_cfg
                    )
            comp = out[:, width:].cpu().tolist()
            for p in range(len(rows) // n):
                cuts = [self._cut(toks) for toks in comp[p * n : (p + 1) * n]]
                texts.append([self.tokenizer.decode(body, skip_special_tokens=True) for body, _ in cuts])
                self.last_lengths.append([length for _, length in cuts])
        return texts


class VLLMGenerator:
    """Sampling with vLLM (GPU only; imported lazily). ``llm`` is a ``vllm.LLM`` or a model path.

    Inside training with ``rollout.backend: vllm`` it reuses TRL's colocated engine, whose weights the
    trainer syncs first (:meth:`pods.trainer.PODSGRPOTrainer.eval_generator`). Not tested on CPU
    machines (vLLM cannot be installed there).
    """

    def __init__(
        self, llm: Any, tokenizer: Any, top_p: float = 1.0, gpu_memory_utilization: float = 0.5, top_k: int = 0
    ):
        try:
            import vllm
        except ImportError as e:
            raise ImportError(
                "the vllm backend needs the 'vllm' package, which runs only on CUDA GPUs: install it on a GPU "
                "machine (pip install vllm) or set rollout.backend=hf"
            ) from e
        self._vllm = vllm
        self.tokenizer = tokenizer
        self.top_p = top_p
        self.top_k = top_k  # 0 = off (vLLM: 0 or -1 disables top-k)
        self.llm = (
            llm
            if not isinstance(llm, (str, os.PathLike))
            else vllm.LLM(model=str(llm), gpu_memory_utilization=gpu_memory_utilization)
        )
        self.last_lengths: list[list[int]] = []

    def generate(
        self, prompts: Sequence[Any], n: int, temperature: float, max_tokens: int, seed: int | None = None
    ) -> list[list[str]]:
        params = self._vllm.SamplingParams(
            n=n,
            temperature=temperature,
            top_p=self.top_p,
            max_tokens=max_tokens,
            seed=seed,
            **({"top_k": self.top_k} if self.top_k else {}),
        )
        token_prompts = [{"prompt_token_ids": ids} for ids in _encode_prompts(self.tokenizer, prompts)]
        outs = self.llm.generate(token_prompts, sampling_params=params, use_tqdm=False)
        self.last_lengths = [[len(o.token_ids) for o in out.outputs] for out in outs]
        return [[o.text for o in out.outputs] for out in outs]


# --------------------------------------------------------------------------------------------
# Accuracy of a policy (docs/paper.md#evaluation-protocol: `repeats` samples per test prompt, average)
# --------------------------------------------------------------------------------------------
def evaluate_policy(
    generator: Generator,
    examples: Sequence[dict],
    task: str,
    repeats: int,
    temperature: float,
    max_tokens: int,
    seed: int = 0,
    variant: str = "paper",
    metric: str = "paper",
    process_index: int = 0,
    num_processes: int = 1,
    gather: Any = None,
) -> dict[str, float]:
    """Mean accuracy / format accuracy / both / completion length over ``repeats`` samples per example.

    Batches of prompts are spread round-robin over processes and seeded by their global position, so
    the result does not depend on the number of processes; ``gather`` (accelerate's gather_object)
    collects the per-example scores.
    """
    from pods_repro.rewards import eval_metrics

    if not examples:
        raise ValueError(f"no evaluation examples for task {task!r}; check eval.datasets and eval.max_examples")
    per_call = max(1, EVAL_BATCH_ROWS // repeats)
    mine: list[tuple[int, float, float, float, float]] = []
    for b, start in enumerate(range(0, len(examples), per_call)):
        if b % num_processes != process_index:
            continue
        chunk = examples[start : start + per_call]
        texts = generator.generate(
            [e["prompt"] for e in chunk], repeats, temperature, max_tokens, seed=mix_seed(seed, b)
        )
        lengths = getattr(generator, "last_lengths", None) or [[0] * repeats for _ in chunk]
        for i, (ex, outs) in enumerate(zip(chunk, texts, strict=True)):
            for j, text in enumerate(outs):
                d = eval_metrics(text, ex["answer"], task, variant, metric)
                scores = (d["accuracy"], d["format_accuracy"], d["both_accuracy"], lengths[i][j])
                mine.append((start + i, *(float(s) for s in scores)))
    rows = gather(mine) if gather is not None and num_processes > 1 else mine
    if len(rows) != len(examples) * repeats:
        raise RuntimeError(f"evaluation scored {len(rows)} completions, expected {len(examples) * repeats}")
    k = len(rows)
    return {
        "accuracy": sum(r[1] for r in rows) / k,
        "format_accuracy": sum(r[2] for r in rows) / k,
        "both_accuracy": sum(r[3] for r in rows) / k,
        "completion_len_mean": sum(r[4] for r in rows) / k,
        "n_examples": len(examples),
        "repeats": repeats,
    }


# --------------------------------------------------------------------------------------------
# Post-hoc evaluation of a finished run (`pods eval RUN_DIR`)
# --------------------------------------------------------------------------------------------
def evaluate(run_dir: str | os.PathLike, overrides: Sequence[str] = ()) -> dict:
    """Evaluate the final policy of a finished run (``run_dir/final``) on its eval datasets.

    ``overrides`` are dotted ``key=value`` strings applied to the run's config (e.g.
    ``eval.repeats=1``, ``eval.max_examples=100``). Returns ``{dataset: metrics}`` and appends one line
    per dataset to ``run_dir/posthoc_eval.jsonl``.
    """
    from pods_repro.config import apply_overrides, from_dict, to_dict

    run_dir = Path(run_dir)
    cfg_path = run_dir / "config.json"
    if not cfg_path.exists():
        raise FileNotFoundError(f"{cfg_path} not found: pass the directory of a run made by `pods train`")
    final = run_dir / "final"
    if not final.exists():
        if (run_dir / "summary.json").exists():
            raise FileNotFoundError(final_missing_message(run_dir))
        raise FileNotFoundError(f"{final} not found: the run has not finished; rerun `pods train` to complete it")
    raw = {k: v for k, v in (RunLogger(run_dir).read_config() or {}).items() if k != "meta"}
    cfg = from_dict(raw)
    if overrides:
        cfg = from_dict(apply_overrides(to_dict(cfg), list(overrides)))
    use_cuda = resolve_use_cuda(cfg)
    pin_cpu_threads(cfg, use_cuda)
    model, tokenizer = _load_final(final, cfg, use_cuda)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.eval()
    gen: Generator
    top_k = cfg.rollout.top_k
    gen = (
        VLLMGenerator(str(final), tokenizer, top_k=top_k)
        if cfg.rollout.backend == "vllm"
        else HFGenerator(model, tokenizer, top_k=top_k, fast_decode=cfg.rollout.fast_decode)
    )
    logger = RunLogger(run_dir)
    out = {}
    for name, examples in load_eval_sets(cfg, tokenizer):
        t0 = time.perf_counter()
        res = evaluate_policy(
            gen,
            examples,
            name,
            cfg.eval.repeats,
            cfg.eval.temperature,
            cfg.eval.max_completion_length,
            seed=mix_seed(cfg.seed, 0xF1),
            variant=cfg.task.reward,
            metric=cfg.eval.metric,
        )
        res["eval_time_s"] = time.perf_counter() - t0
        out[name] = res
        logger.log_posthoc_eval({"dataset": name, **res, "overrides": list(overrides)})
    return out


def _load_final(final: Path, cfg: TrainConfig, use_cuda: bool) -> tuple[Any, Any]:
    """Load the saved final policy: a LoRA adapter on the configured base model, or full weights.

    The tokenizer always comes from the configured spec (a tiny model's character tokenizer must not
    be re-guessed by AutoTokenizer from the saved directory).
    """
    from transformers import AutoModelForCausalLM

    from pods_repro.models import DTYPES, load_policy

    device = "cuda" if use_cuda else "cpu"
    base, tokenizer = load_policy(
        cfg.policy.model,
        dtype=cfg.policy.dtype,
        device=device,
        lora=None,
        attn_implementation=cfg.policy.attn_implementation,
    )
    if (final / "adapter_config.json").exists():
        from peft import PeftModel

        return PeftModel.from_pretrained(base, str(final)).to(device), tokenizer
    del base
    model = AutoModelForCausalLM.from_pretrained(str(final), dtype=DTYPES[cfg.policy.dtype]).to(device)
    return model, tokenizer
