"""The step-0 evaluation, computed once per setting and reused by its other runs.

With ``eval.noise: common`` (the tiny scale) every evaluation samples with one seed per test set, the same in
every run (:meth:`pods_repro.run.RunController._eval_seed`). At step 0 every run of a setting also holds the same
policy (the base model, before any update), so its evaluation at step 0 gives the same numbers, bit for
bit, in all of them: the tiny default job evaluated the same model on the same problems with the same draws
128 times for (a). This module keeps that evaluation in the model cache (``$PODS_CACHE/evals/``, beside the
built models: :func:`pods_repro.tiny.cache_root`) under a key that holds everything its bits depend on, and a
run whose key is there logs the stored rows instead of sampling them again.

The key (:func:`step0_key`) is a SHA-256 over

- the policy as loaded: every tensor of its ``state_dict`` (names, dtypes, shapes, bytes), its model config
  and generation config;
- the tokenizer: its class, vocabulary and special tokens, and the token ids of every evaluation prompt;
- the evaluation sets' content (every example, in order), their sampling seeds, and the config sections
  that the evaluation reads (``eval``, ``task``, and the generator's rollout keys ``top_k``, ``fast_decode``
  and ``backend``);
- what computes it: the source of the ``pods`` package (all but ``pods_repro/analysis`` and ``pods_repro/bench``), the
  torch and transformers versions, torch's thread count and CPU kernels (:mod:`pods_repro.kernels`), the CPU
  model, and the evaluation batch size (``PODS_EVAL_BATCH_ROWS``).

Anything else gives another key, and the evaluation runs (and is stored for the next run). Only plain
single-process CPU runs with the ``hf`` backend use the cache; ``PODS_EVAL_CACHE=off`` turns it off. A run
that reuses a stored evaluation logs the same ``eval.jsonl`` rows (same keys, same values) except
``eval_time_s``, which is the seconds this run spent on the step-0 evaluation (reading the file); the
stored file keeps the seconds and CPU seconds of the run that computed it. Files are written atomically
(a temporary file renamed into place), so concurrent runs of the workflow never read a partial one; two
runs that compute the same key at once write the same content.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["enabled", "load", "step0_key", "store"]

ENV = "PODS_EVAL_CACHE"
FORMAT = 1
_PKG = Path(__file__).resolve().parent
_NOT_RUN = ("analysis", "bench")


def enabled(cfg: Any, use_cuda: bool, num_processes: int) -> bool:
    """Whether this run may reuse (and store) its step-0 evaluation."""
    if os.environ.get(ENV, "").strip().lower() in ("off", "0", "false", "no"):
        return False
    return cfg.eval.noise == "common" and not use_cuda and num_processes == 1 and cfg.rollout.backend == "hf"


def _source_sha() -> str:
    """SHA-256 of the package source a training process runs: every module but the analysis and the
    benchmarks (which no run imports), so that editing those keeps the stored evaluations."""
    h = hashlib.sha256()
    for path in sorted(_PKG.rglob("*.py")):
        if path.relative_to(_PKG).parts[0] in _NOT_RUN:
            continue
        h.update(path.relative_to(_PKG).as_posix().encode())
        h.update(b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()


def _update_tensors(h: Any, model: Any) -> None:
    import torch

    for name, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().cpu().contiguous().view(-1)
        h.update(f"{name}|{t.dtype}|{tuple(tensor.shape)}\0".encode())
        if t.numel():
            h.update(t.view(torch.uint8).numpy().tobytes())


def step0_key(cfg: Any, model: Any, tokenizer: Any, eval_sets: list[tuple[str, list[dict]]], seeds: list[int]) -> str:
    """The key of the step-0 evaluation of ``model`` on ``eval_sets`` under ``cfg``, sampled with ``seeds`` (one
    per set), as a hex SHA-256."""
    import torch
    import transformers

    from pods_repro.config import to_dict
    from pods_repro.evaluation import EVAL_BATCH_ROWS, _encode_prompts
    from pods_repro.kernels import cpuinfo_field, kernels_label

    h = hashlib.sha256()
    _update_tensors(h, model)
    conf = to_dict(cfg)
    rollout = conf["rollout"]
    material = {
        "format": FORMAT,
        "model_config": model.config.to_dict(),
        "generation_config": getattr(model, "generation_config", None) and model.generation_config.to_dict(),
        "tokenizer": {
            "class": type(tokenizer).__name__,
            "vocab": sorted(tokenizer.get_vocab().items()),
            "special": [tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.bos_token_id],
            "all_special_ids": list(tokenizer.all_special_ids),
        },
        "eval_sets": [
            [name, examples, _encode_prompts(tokenizer, [e["prompt"] for e in examples]) if examples else []]
            for name, examples in eval_sets
        ],
        "seeds": list(seeds),
        "eval": conf["eval"],
        "task": conf["task"],
        "generator": {k: rollout.get(k) for k in ("top_k", "fast_decode", "backend")},
        "pods_source": _source_sha(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "threads": torch.get_num_threads(),
        "kernels": kernels_label(),
        "cpu": cpuinfo_field("model name"),
        "eval_batch_rows": EVAL_BATCH_ROWS,
    }
    h.update(json.dumps(material, sort_keys=True, default=str).encode())
    return h.hexdigest()


def _path(key: str) -> Path:
    from pods_repro.tiny import cache_root

    return cache_root() / "evals" / f"step0-{key[:40]}.json"


def load(key: str, datasets: list[str]) -> list[tuple[str, dict]] | None:
    """The stored ``[(dataset, result)]`` of ``key`` for ``datasets`` (in that order), or None (not stored,
    unreadable, another key or other sets)."""
    try:
        data = json.loads(_path(key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != key or data.get("format") != FORMAT:
        return None
    rows = data.get("rows")
    if not isinstance(rows, list) or not all(isinstance(r, dict) and isinstance(r.get("result"), dict) for r in rows):
        return None
    if [r.get("dataset") for r in rows] != list(datasets):
        return None
    return [(r["dataset"], r["result"]) for r in rows]


def store(key: str, results: list[tuple[str, dict, float]], cpu_s: float) -> None:
    """Keep ``[(dataset, result, seconds)]`` under ``key``, written atomically; a failure to write is ignored
    (the cache is an optimisation: the run has its results either way)."""
    path = _path(key)
    data = {
        "format": FORMAT,
        "key": key,
        "rows": [{"dataset": name, "result": res, "eval_time_s": dt} for name, res, dt in results],
        "eval_cpu_s": cpu_s,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f)  # the results' key order kept: eval.jsonl rows as logged
                f.write("\n")
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass
