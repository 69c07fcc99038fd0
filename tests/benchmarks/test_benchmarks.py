"""Smoke and correctness tests of pods_repro/bench/bench_memory.py, bench_asymmetry.py and cost_model.py.

The benchmarks run here on a randomly initialised micro Llama (built in a temp dir in a second), at
sizes where one run takes a few seconds; they check the CSV contract (fig_1_asymmetry.py reads the
asymmetry columns), the memory ordering the benchmark exists to show, and that the cost model
recovers known parameters.
"""

from __future__ import annotations

import csv
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pods_repro.analysis import cost_model
from pods_repro.bench import bench_asymmetry, bench_memory

REPO = Path(__file__).resolve().parents[2]

FIG1_COLUMNS = [
    "rollouts",
    "step_time_s",
    "gen_time_s",
    "update_time_s",
    "gen_tokens",
    "per_token_gen_ms",
    "update_oom",
]


@pytest.fixture(scope="module")
def micro_model(tmp_path_factory) -> str:
    """A random 2-layer Llama with the project's character tokenizer, saved as a local model dir."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from pods_repro.models import build_char_tokenizer

    tok = build_char_tokenizer()
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4, tie_word_embeddings=True,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)  # fmt: skip
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("micro_llama")
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)


def _read(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


# ----------------------------------------------------------------------------- bench_memory


def test_memory_arms_in_process(micro_model, tmp_path):
    out = tmp_path / "mem.csv"
    bench_memory.main(["--model", micro_model, "--n", "8", "--m", "2", "--prompt-len", "8", "--completion-len", "32",
                       "--in-process", "--out", str(out)])  # fmt: skip
    rows = {r["arm"]: r for r in _read(out)}
    assert list(rows) == list(bench_memory.ARMS)
    peak = {a: float(r["peak_mb"]) for a, r in rows.items()}
    assert rows["grpo_n"]["rows_per_backward"] == "8"
    assert rows["grpo_ga"]["micro_batches"] == "4"
    assert rows["pods"]["rows_per_backward"] == "2"
    assert rows["pods"]["rollouts_generated"] == "8"
    # The benchmark's claim: PODS pays GRPO-at-m memory, well below all n rows in one backward.
    assert peak["pods"] < 0.6 * peak["grpo_n"]
    assert peak["pods"] == pytest.approx(peak["grpo_m"], rel=0.05)
    assert peak["grpo_ga"] < 0.6 * peak["grpo_n"]
    assert float(rows["pods"]["ratio_to_pods"]) == pytest.approx(1.0)


@pytest.mark.slow  # four fresh interpreters importing torch + transformers: ~30 s on 2 busy cores
def test_memory_fresh_subprocess_rss(micro_model, tmp_path):
    """The default path: each arm in its own process, with peak RSS and allocator peaks."""
    out = tmp_path / "mem_sub.csv"
    bench_memory.main(["--model", micro_model, "--n", "8", "--m", "2", "--prompt-len", "8", "--completion-len", "64",
                       "--arms", "grpo_n", "pods", "--out", str(out)])  # fmt: skip
    rows = {r["arm"]: r for r in _read(out)}
    assert rows["pods"]["in_process"] == "False"
    assert float(rows["pods"]["alloc_peak_mb"]) < float(rows["grpo_n"]["alloc_peak_mb"])
    assert float(rows["grpo_n"]["rss_peak_mb"]) > 0


def test_profiled_alloc_peak_counts_temporaries():
    def fn():
        keep = torch.empty(2**18)  # 1 MiB, alive at the end
        tmp = torch.empty(2**19)  # 2 MiB, freed before the end
        del tmp
        return keep

    assert bench_memory.profiled_alloc_peak_mb(fn) == pytest.approx(3.0, abs=0.05)


def test_ga_update_equals_one_batch_update(micro_model):
    """Gradient accumulation over micro-batches gives the same step as one batch (loss weighting)."""
    model, _ = bench_memory.load_model(micro_model)
    g = torch.Generator().manual_seed(1)
    prompt_T, comp_B_T = torch.randint(4, 100, (5,), generator=g), torch.randint(4, 100, (6, 7), generator=g)
    mask_B_T, adv_B = torch.ones_like(comp_B_T), torch.randn(6, generator=g)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    after = []
    for micro in (None, 2):
        model.load_state_dict(start)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        bench_memory.policy_update(
            model, opt, prompt_T, comp_B_T, mask_B_T, adv_B, micro_batch=micro, max_grad_norm=1e9
        )
        after.append({k: v.clone() for k, v in model.state_dict().items()})
    assert any(not torch.equal(after[0][k], start[k]) for k in start)
    for k in start:
        torch.testing.assert_close(after[0][k], after[1][k], atol=1e-6, rtol=1e-5)


def test_memory_rejects_bad_sizes(capsys):
    with pytest.raises(SystemExit):
        bench_memory.main(["--n", "10", "--m", "4"])
    assert "multiple of m" in capsys.readouterr().err


# ----------------------------------------------------------------------------- bench_asymmetry


def test_asymmetry_csv_contract_and_oom(micro_model, tmp_path):
    base = [
        "--model",
        micro_model,
        "--rollouts",
        "2",
        "32",
        "--prompt-len",
        "4",
        "--completion-len",
        "16",
        "--threads",
        "1",
    ]
    out = tmp_path / "asym.csv"
    bench_asymmetry.main([*base, "--out", str(out)])
    rows = _read(out)
    assert list(rows[0])[: len(FIG1_COLUMNS)] == FIG1_COLUMNS
    assert [int(r["rollouts"]) for r in rows] == [2, 32]
    for r in rows:
        assert int(r["gen_tokens"]) == int(r["rollouts"]) * 16
        assert float(r["step_time_s"]) == pytest.approx(float(r["gen_time_s"]) + float(r["update_time_s"]))
        assert float(r["per_token_gen_ms"]) == pytest.approx(1e3 * float(r["gen_time_s"]) / int(r["gen_tokens"]))
        assert r["update_oom"] == "False"
        assert r["update_chunk"] == r["rollouts"]
    # A limit between the predicted peaks of 2 and 32 rows: R = 32 must be marked OOM and run as GA.
    est = [float(r["est_update_peak_mb"]) for r in rows]
    assert est[0] < est[1]
    out2 = tmp_path / "asym_oom.csv"
    bench_asymmetry.main([*base, "--mem-limit-mb", str((est[0] + est[1]) / 2), "--out", str(out2)])
    rows2 = _read(out2)
    assert [r["update_oom"] for r in rows2] == ["False", "True"]
    assert 2 <= int(rows2[1]["update_chunk"]) < 32
    assert all(math.isnan(float(r["update_peak_mb"])) for r in rows)  # measured on CUDA only


def test_asymmetry_memory_prediction_matches_the_memory_bench(micro_model, tmp_path):
    """The predicted update peak at R rows equals the measured peak of an R-row update (bench memory),
    also for a full-parameter update of short rows, where the gradient buffers outweigh a row's
    activations (probes of 1 and 2 rows once predicted 20 MB/row for 133 measured on an H100)."""
    lens = ["--prompt-len", "4", "--completion-len", "4", "--threads", "1"]
    out = tmp_path / "asym.csv"
    bench_asymmetry.main(["--model", micro_model, "--rollouts", "64", *lens, "--out", str(out)])
    est = float(_read(out)[0]["est_update_peak_mb"])
    mem = tmp_path / "mem.csv"
    bench_memory.main(["--model", micro_model, "--n", "64", "--m", "16", "--arms", "grpo_n", *lens, "--out", str(mem)])
    measured = float(_read(mem)[0]["peak_mb"])
    assert est == pytest.approx(measured, rel=0.1), (est, measured)


# ----------------------------------------------------------------------------- cost_model


def _synthetic_csv(path: Path, p: cost_model.CostParams, Rs: list[int], chunk_cap: int | None = None) -> None:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[*FIG1_COLUMNS, "update_chunk", "model"])
        w.writeheader()
        for R in Rs:
            chunk = min(R, chunk_cap or R)
            gen = p.g0 + p.g1 * R
            upd = p.u0 * math.ceil(R / chunk) + p.u1 * R
            w.writerow({"rollouts": R, "step_time_s": gen + upd, "gen_time_s": gen, "update_time_s": upd,
                        "gen_tokens": R * 10, "per_token_gen_ms": 100 * gen / R, "update_oom": chunk < R,
                        "update_chunk": chunk, "model": "synthetic"})  # fmt: skip


def test_cost_model_recovers_known_parameters(tmp_path):
    truth = cost_model.CostParams(g0=1.5, g1=0.02, u0=0.3, u1=0.11)
    path = tmp_path / "syn.csv"
    _synthetic_csv(path, truth, [8, 16, 32, 64, 128, 256], chunk_cap=32)  # GA rows separate u0 from u1
    fitted = cost_model.fit(cost_model.read_rows(path))
    for k in ("g0", "g1", "u0", "u1"):
        assert getattr(fitted, k) == pytest.approx(getattr(truth, k), rel=1e-6)
    text, rows = cost_model.main([str(path), "--m", "16", "--out", str(tmp_path / "cm.csv")])
    assert (tmp_path / "cm.txt").read_text().strip() == text
    q = {r["quantity"]: r["value"] for r in rows if r["source"] == "synthetic"}
    assert q["pods_s@m=16,r=4"] == pytest.approx(1.5 + 0.02 * 64 + 0.3 + 0.11 * 16)
    assert q["ga_s@m=16,r=4"] == pytest.approx(1.5 + 0.02 * 64 + 4 * 0.3 + 0.11 * 64)


def test_cost_model_keeps_coefficients_nonnegative(tmp_path):
    path = tmp_path / "neg.csv"
    _synthetic_csv(path, cost_model.CostParams(g0=0.0, g1=0.05, u0=0.0, u1=0.1), [8, 16, 32])
    rows = cost_model.read_rows(path)
    rows[0]["gen_time_s"] = str(float(rows[0]["gen_time_s"]) * 0.5)  # pulls the OLS intercept below 0
    p = cost_model.fit(rows)
    assert min(p.g0, p.g1, p.u0, p.u1) >= 0.0


def test_breakeven_condition_matches_step_time_ratio():
    """kappa > (r - S)/(S - 1)  <=>  S > t_PODS / t_GRPO, for random parameters."""
    rng = random.Random(0)
    for _ in range(500):
        p = cost_model.CostParams(*(rng.uniform(0.0, 2.0) * 10 ** rng.uniform(-3, 0) for _ in range(4)))
        if p.g1 == 0:
            continue
        m, r, S = rng.choice([2, 4, 16]), rng.choice([2, 4, 8]), rng.uniform(1.01, 5.0)
        q = cost_model.predict(p, m, r)
        if abs(q["pods_over_grpo"] - S) > 1e-9:
            assert (q["kappa"] > cost_model.kappa_threshold(S, r)) == (S > q["pods_over_grpo"])


def test_paper_inversion_reproduces_paper_step_times():
    inv = {d["setting"]: d for d in cost_model.invert_paper()}
    for s, v in cost_model.PAPER_GLOBAL.items():
        G, U = inv[s]["gen_round_s"], inv[s]["update_per_microbatch_s"]
        assert G + 4 * U == pytest.approx(v["pods"])
        assert G + 16 * U == pytest.approx(v["ga"])
    a = inv["a"]  # a least-squares fit: close to, not equal to, the eight sweep values
    assert a["pred_pods_64_16"] == pytest.approx(10.08, abs=0.5)
    assert a["g1_s"] > 0
    assert a["u1_s"] > 0


def test_cost_model_bad_input(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("rollouts,foo\n8,1\n")
    with pytest.raises(ValueError, match="bench_asymmetry"):
        cost_model.read_rows(bad)
    one = tmp_path / "one.csv"
    _synthetic_csv(one, cost_model.CostParams(1, 1, 1, 1), [8])
    with pytest.raises(ValueError, match="two different rollout counts"):
        cost_model.fit(cost_model.read_rows(one))


@pytest.mark.parametrize("mod", [bench_memory, bench_asymmetry, cost_model])
def test_help(mod, capsys):
    with pytest.raises(SystemExit) as e:
        mod.main(["--help"])
    assert e.value.code == 0
    assert "usage" in capsys.readouterr().out


@pytest.mark.parametrize(
    "name",
    [
        "bench_memory",
        "bench_asymmetry",
        "bench_select",
        "cost_model",
        "profile_tiny_step",
        "bench_trl_generation",
        "bench_job_levers",
    ],
)
def test_benchmarks_folder_holds_thin_entry_points(name):
    """benchmarks/*.py only forward to the package, so that an installed wheel has every benchmark's code."""
    text = (REPO / "benchmarks" / f"{name}.py").read_text()
    assert f"from pods_repro.bench.{name} import main" in text
    assert len(text.splitlines()) < 20


def test_entry_point_runs_the_package_benchmark(tmp_path):
    res = subprocess.run([sys.executable, str(REPO / "benchmarks" / "cost_model.py"), "--paper-only"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "kappa" in res.stdout


# ----------------------------------------------------------------------------- profile_tiny_step


def test_profile_tiny_step_splits_the_step(tiny_policy_dir, tmp_path):
    """The profile trains the tiny (a) baseline arm under the tiny scale's overrides and splits each
    step into generation + reward + update + bookkeeping (which add up to the step)."""
    import json

    from pods_repro.bench import profile_tiny_step

    out = tmp_path / "profile.json"
    args = ["--steps", "2", "--arms", "baseline", "--eval-examples", "2", "--model", str(tiny_policy_dir)]
    assert profile_tiny_step.main([*args, "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["imports_s"] > 0
    (arm,) = res["arms"]
    assert arm["arm"] == "baseline n=16 m=16"
    step = arm["mean_step"]
    parts = step["gen"] + step["reward"] + step["update"] + step["bookkeeping"]
    assert parts == pytest.approx(step["step"])
    assert step["gen"] > 0
    assert step["update"] > 0
    assert set(arm["eval_s_per_set"]) == {"arith", "arith_heldout", "arith_hard"}


def test_profile_tiny_step_compares_fastgen_with_generate_on_the_same_rollouts(tiny_policy_dir, tmp_path, capsys):
    """--fast-decode both: each arm twice (pods_repro.fastgen, then transformers' generate), the same rollouts
    (equal completion lengths), and the generation ratio printed."""
    import json

    from pods_repro.bench import profile_tiny_step

    out = tmp_path / "profile.json"
    args = ["--steps", "2", "--arms", "baseline", "--eval-examples", "2", "--model", str(tiny_policy_dir)]
    assert profile_tiny_step.main([*args, "--fast-decode", "both", "--json", str(out)]) == 0
    fast, slow = json.loads(out.read_text())["arms"]
    assert (fast["arm"], slow["arm"]) == ("baseline n=16 m=16 fastgen", "baseline n=16 m=16 generate")
    assert (fast["fast_decode"], slow["fast_decode"]) == (True, False)
    assert fast["mean_step"]["completion_len"] == slow["mean_step"]["completion_len"]
    assert "transformers' generate / pods_repro.fastgen" in capsys.readouterr().out


# ----------------------------------------------------------------------------- bench_job_levers


def test_same_bits_ignores_seconds_and_sees_any_other_value(tmp_path):
    """The levers benchmark's check that two runs computed the same thing: machine-bound seconds may differ,
    any logged value may not (hand-made logs; the slow test below runs the whole benchmark)."""
    import json

    from pods_repro.bench import bench_job_levers

    rows = [{"step": s, "reward_mean": 0.25 * s, "loss": 0.1 / s, "time_s": 0.5 * s} for s in (1, 2)]
    evals = [{"step": 0, "dataset": "arith", "accuracy": 0.2, "eval_time_s": 1.0}]
    for name in ("old", "new"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (tmp_path / name / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
    old, new = tmp_path / "old", tmp_path / "new"
    assert bench_job_levers.same_bits(old, new)
    changed = [dict(r) for r in rows]
    changed[-1]["time_s"] = -1.0
    (new / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in changed))
    assert bench_job_levers.same_bits(old, new)
    changed[-1]["reward_mean"] += 1e-12
    (new / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in changed))
    assert not bench_job_levers.same_bits(old, new)
    (new / "metrics.jsonl").write_text("")
    (old / "metrics.jsonl").write_text("")
    assert not bench_job_levers.same_bits(old, new)  # nothing logged is no evidence


@pytest.mark.slow
def test_job_levers_times_both_codes_and_checks_their_bits(tiny_policy_dir, tmp_path, capsys):
    """Old and new code (here the same checkout, and the new one also without the step-0 reuse) train the
    same short run side by side; the CSV has every run's CPU seconds by phase and the ratios, and a pair
    that logged different values is told apart."""
    import csv
    import json

    from pods_repro.bench import bench_job_levers

    out, keep = tmp_path / "levers.csv", tmp_path / "runs"
    sets = [
        "--set",
        f"policy.model={tiny_policy_dir}",
        "--set",
        "eval.max_examples=3",
        "--set",
        "rollout.max_completion_length=16",
    ]
    args = ["--old", str(REPO), "--steps", "1", "--repeats", "1", "--arms", "baseline", "--per-lever", *sets]
    assert bench_job_levers.main([*args, "--keep", str(keep), "--out", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    runs = [r for r in rows if r["kind"] == "run"]
    assert [r["code"] for r in runs] == ["old", "new", "noreuse"]
    assert all(r["identical"] == "True" and float(r["total_cpu_s"]) > float(r["train_cpu_s"]) > 0 for r in runs)
    assert {r["code"] for r in rows if r["kind"] == "ratio"} == {"old/new", "old/noreuse", "noreuse/new"}
    assert len({r["host_cpu"] for r in rows}) == 1
    assert rows[0]["host_cpu"]
    assert "every pair the same bits" in capsys.readouterr().out
    old, new = keep / "baseline_r0" / "old", keep / "baseline_r0" / "new"
    assert bench_job_levers.same_bits(old, new)
    lines = (new / "metrics.jsonl").read_text().splitlines()
    rec = json.loads(lines[-1])
    rec["time_s"] = -1.0  # seconds: machine-bound, not compared
    (new / "metrics.jsonl").write_text("\n".join([*lines[:-1], json.dumps(rec)]) + "\n")
    assert bench_job_levers.same_bits(old, new)
    rec["reward_mean"] = rec["reward_mean"] + 1e-12
    (new / "metrics.jsonl").write_text("\n".join([*lines[:-1], json.dumps(rec)]) + "\n")
    assert not bench_job_levers.same_bits(old, new)


# ----------------------------------------------------------------------------- committed GPU results


def _assert_table_equal_but_paper_hw(got_csv, want_csv):
    """A recomputed analysis table equals the committed one in every column but the paper-hardware ones
    (committed from the released logs' steps.csv, a workflow output; recomputed here from the paper's s/step)."""
    import pandas as pd

    got, want = pd.read_csv(got_csv), pd.read_csv(want_csv)
    cols = [c for c in want.columns if not c.startswith(("paper_sps", "paper_elapsed", "speedup_paper_hw"))]
    pd.testing.assert_frame_equal(got[cols], want[cols])


def test_committed_gpu_tables_recompute_from_their_curves(tmp_path):
    """benchmarks/results/gpu_h100_tiny_time_to_peak.csv is what `pods analysis time-to-peak` makes of the
    committed curves and steps: every number but the paper-hardware columns, which there came from the
    released logs' steps.csv (a workflow output) and here from the paper's s/step
    (docs/paper.md#seconds-per-step)."""
    import pandas as pd

    from pods_repro.analysis.cli import main as analysis_main

    res = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    for steps, table in (("steps", "time_to_peak"), ("steps_alone", "time_to_peak_alone")):
        out = tmp_path / steps
        analysis_main(["time-to-peak", "--curves", str(res / "gpu_h100_tiny_curves.csv"),
                       "--steps", str(res / f"gpu_h100_tiny_{steps}.csv"), "--out-dir", str(out)])  # fmt: skip
        _assert_table_equal_but_paper_hw(out / "time_to_peak.csv", res / f"gpu_h100_tiny_{table}.csv")
    steps = pd.read_csv(res / "gpu_h100_tiny_steps.csv")
    assert sorted(steps.groupby(["setting", "arm"]).size().items()) == [
        (("a", "grpo"), 3), (("a", "pods"), 3), (("e", "grpo_ga"), 3), (("e", "pods"), 3)
    ]  # fmt: skip


def test_committed_gpu_tag_token_tables_recompute_from_their_curves(tmp_path):
    """benchmarks/results/gpu_h100_tt_*.csv (the tag-token default's (a) on 8 + 8 seeds and (e) on
    4 + 4, one H100) are what `pods analysis time-to-peak`, `levels` and `plateau` make of the committed
    curves and steps: every number but the paper-hardware columns (there from the released logs' steps.csv)."""
    import pandas as pd

    from pods_repro.analysis.cli import main as analysis_main

    res = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    curves, steps = str(res / "gpu_h100_tt_curves.csv"), str(res / "gpu_h100_tt_steps.csv")
    for cmd, extra in (("time-to-peak", ["--steps", steps]), ("levels", []), ("plateau", [])):
        analysis_main([cmd, "--curves", curves, *extra, "--out-dir", str(tmp_path / cmd)])
        table = cmd.replace("-", "_")
        _assert_table_equal_but_paper_hw(tmp_path / cmd / f"{table}.csv", res / f"gpu_h100_tt_{table}.csv")
    runs = pd.read_csv(steps)
    assert sorted(runs.groupby(["setting", "arm"]).size().items()) == [
        (("a", "grpo"), 8), (("a", "pods"), 8), (("e", "grpo_ga"), 4), (("e", "pods"), 4)
    ]  # fmt: skip
    assert runs["completion_len_mean"].between(22, 25).all()  # the tag-token model: 23 tokens per gold completion


def test_gpu_env_report_runs_as_a_module_from_the_repository_root():
    """benchmarks/gpu/checks.sh's first step (`python3 -m benchmarks.gpu.env_report`) on this machine: the
    versions come from pods_repro.runlog.package_versions, as in every run's config.json meta."""
    import json

    from pods_repro.runlog import package_versions

    res = subprocess.run([sys.executable, "-m", "benchmarks.gpu.env_report"], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["cuda_available"] == torch.cuda.is_available()
    assert report["packages"]["torch"] == package_versions()["torch"]
    assert set(report["packages"]) >= {"transformers", "trl", "bitsandbytes", "pods"}


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["memory", "--model", "nope"], "bench_memory: error: policy.model 'nope' is neither"),
        (["asymmetry", "--model", "nope"], "bench_asymmetry: error: policy.model 'nope' is neither"),
        (["cost_model", "/nonexistent/steps.csv"], "cost_model: error: [Errno 2] No such file"),
    ],
)
def test_bench_bad_input_exits_2_with_one_line(argv, why):
    # They used to end in a traceback (bench memory: one per arm subprocess, then a RuntimeError).
    proc = subprocess.run(
        [sys.executable, "-m", "pods_repro", "bench", *argv], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert why in proc.stderr
    assert "Traceback" not in proc.stderr


# ----------------------------------------------------------------------------- bench_trl_generation


def test_trl_generation_bench_prints_trl_s_calls_for_pods(tiny_policy_dir, capsys, tmp_path):
    """PODSGRPOTrainer's default makes TRL's one generate() call per round; the seeded mode one per group.
    --out writes the same medians as CSV (the results page reads it)."""
    import pandas as pd

    from pods_repro.bench import bench_trl_generation

    argv = ["--model", str(tiny_policy_dir), "--steps", "1", "--repeats", "1", "--prompts", "2", "--n", "4",
            "--m", "2", "--max-completion-length", "8", "--out", str(tmp_path / "trl.csv")]  # fmt: skip
    assert bench_trl_generation.main(argv) == 0
    csv = pd.read_csv(tmp_path / "trl.csv").set_index("trainer")
    assert csv.loc["trl.GRPOTrainer", "generate_calls_per_step"] == 1.0
    assert csv.loc["PODSGRPOTrainer, seeded", "generate_calls_per_step"] == 2.0
    out = capsys.readouterr().out
    rows = {ln[:30].strip(): ln[30:].split() for ln in out.splitlines() if ln.startswith(("trl.", "PODS"))}
    assert rows["trl.GRPOTrainer"][0] == "1.00"  # generate calls per step
    assert rows["PODSGRPOTrainer"][0] == "1.00"
    assert rows["PODSGRPOTrainer, seeded"][0] == "2.00"  # one per prompt group
    assert rows["PODSGRPOTrainer / TRL"][0] == "1.00x"
    assert "first step's rollouts, PODSGRPOTrainer (default) vs trl.GRPOTrainer: the same tokens" in out
