"""pods_repro.evalcache: a run that reuses the stored step-0 evaluation logs what evaluating would have logged."""

from __future__ import annotations

import json

import pytest

import pods_repro.trainer.controller as controller
from pods_repro import evalcache
from pods_repro.run import train
from pods_repro.runlog import read_jsonl

RUN = ("budget.max_steps=2", "eval.every_steps=2", "eval.max_examples=6", "checkpoint.every_steps=10")
COMMON = (*RUN, "eval.noise=common", "eval.datasets=[arith,arith_heldout]")
TIMING = {"time_s", "eval_time_s", "cpu_time_s", "step_cpu_s", "gen_time_s", "update_time_s", "reward_time_s"}
TIMING |= {"step_time_s", "peak_mem_mb"}
SEEDS = [11, 12]


def _strip(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh model cache with the step-0 cache on, and a count of the evaluations each run samples."""
    root = tmp_path / "cache"
    monkeypatch.setenv("PODS_CACHE", str(root))
    monkeypatch.delenv(evalcache.ENV, raising=False)
    calls = []
    real = controller.evaluate_policy
    monkeypatch.setattr(
        controller, "evaluate_policy", lambda gen, ex, name, *a, **k: calls.append(name) or real(gen, ex, name, *a, **k)
    )
    return root, calls


def test_a_reused_step0_evaluation_logs_the_same_rows(tiny_cfg, tmp_path, cache, monkeypatch):
    root, calls = cache
    first = train(tiny_cfg(tmp_path / "first", *COMMON, "seed=0"))
    assert calls == ["arith", "arith_heldout", "arith", "arith_heldout"]  # step 0 (stored), step 2 (the stop)
    (stored,) = (root / "evals").glob("step0-*.json")
    calls.clear()
    reused = train(tiny_cfg(tmp_path / "reused", *COMMON, "seed=1"))
    assert calls == ["arith", "arith_heldout"], "the other run of the setting evaluated step 0 again"
    monkeypatch.setenv(evalcache.ENV, "off")
    calls.clear()
    computed = train(tiny_cfg(tmp_path / "computed", *COMMON, "seed=1"))
    assert calls == ["arith", "arith_heldout", "arith", "arith_heldout"]
    for name in ("eval.jsonl", "metrics.jsonl"):
        a, b = read_jsonl(reused / name), read_jsonl(computed / name)
        assert a
        assert [list(r) for r in a] == [list(r) for r in b], "the same keys in the same order"
        assert _strip(a) == _strip(b), name
    step0 = [r for r in read_jsonl(first / "eval.jsonl") if r["step"] == 0]
    assert _strip(step0) == _strip([r for r in read_jsonl(reused / "eval.jsonl") if r["step"] == 0])
    assert [r["dataset"] for r in json.loads(stored.read_text())["rows"]] == ["arith", "arith_heldout"]


def test_another_setting_or_damaged_file_evaluates_again(tiny_cfg, tmp_path, cache):
    root, calls = cache
    train(tiny_cfg(tmp_path / "a", *COMMON))
    calls.clear()
    train(tiny_cfg(tmp_path / "b", *COMMON, "eval.temperature=0.7"))  # another evaluation: another key
    assert calls == ["arith", "arith_heldout"] * 2
    files = sorted((root / "evals").glob("step0-*.json"))
    assert len(files) == 2
    for path in files:
        path.write_text(path.read_text()[:40])  # a torn file (not written by the atomic writer) is a miss
    calls.clear()
    train(tiny_cfg(tmp_path / "c", *COMMON))
    assert calls == ["arith", "arith_heldout"] * 2
    for seed in (0, 1):  # eval.noise=fresh: each run draws its own step-0 evaluation, and none is stored
        calls.clear()
        train(tiny_cfg(tmp_path / f"fresh{seed}", *RUN, f"seed={seed}"))
        assert calls == ["arith", "arith"]
    assert len(list((root / "evals").glob("step0-*.json"))) == 2


def test_the_key_follows_the_weights_the_sets_and_the_settings(tiny_cfg, tmp_path, tiny_policy_dir):
    import torch

    from pods_repro.evaluation import load_eval_sets
    from pods_repro.models import load_policy

    cfg = tiny_cfg(tmp_path / "k", *COMMON)
    model, tok = load_policy(str(tiny_policy_dir))
    sets = load_eval_sets(cfg, tok)
    key = evalcache.step0_key(cfg, model, tok, sets, SEEDS)
    assert key == evalcache.step0_key(cfg, model, tok, sets, SEEDS)
    assert key == evalcache.step0_key(
        tiny_cfg(tmp_path / "k", *COMMON, "seed=5", "rollout.m=2"), model, tok, sets, SEEDS
    )
    changed = [
        evalcache.step0_key(tiny_cfg(tmp_path / "k", *COMMON, "eval.repeats=2"), model, tok, sets, SEEDS),
        evalcache.step0_key(tiny_cfg(tmp_path / "k", *COMMON, "rollout.fast_decode=false"), model, tok, sets, SEEDS),
        evalcache.step0_key(cfg, model, tok, [(sets[0][0], sets[0][1][:-1]), sets[1]], SEEDS),
        evalcache.step0_key(
            cfg, model, tok, [(sets[0][0], [{**sets[0][1][0], "answer": "x"}, *sets[0][1][1:]]), sets[1]], SEEDS
        ),
    ]
    changed.append(evalcache.step0_key(cfg, model, tok, sets, [SEEDS[0], SEEDS[1] + 1]))
    with torch.no_grad():
        param = next(model.parameters())
        param.view(-1)[0] = torch.nextafter(param.view(-1)[0], torch.tensor(1e9))  # one weight, one ulp
    changed.append(evalcache.step0_key(cfg, model, tok, sets, SEEDS))
    assert len({key, *changed}) == len(changed) + 1


def test_the_key_follows_the_code_a_run_runs(tmp_path, monkeypatch):
    """Editing a module that training runs changes the key; editing the analysis or a benchmark does not."""
    for rel in ("fastgen.py", "trainer/hook.py", "analysis/tables.py", "bench/bench_x.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    monkeypatch.setattr(evalcache, "_PKG", tmp_path)
    base = evalcache._source_sha()
    for rel in ("analysis/tables.py", "bench/bench_x.py"):
        (tmp_path / rel).write_text("x = 2\n")
        assert evalcache._source_sha() == base, rel
    for rel in ("fastgen.py", "trainer/hook.py"):
        (tmp_path / rel).write_text("x = 2\n")
        assert evalcache._source_sha() != base, rel
        base = evalcache._source_sha()
