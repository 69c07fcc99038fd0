"""The Snakemake workflow: lint, dry runs of every scale, the released-logs target, config validation.

Every Snakemake call runs in a scratch folder that links the workflow files of the repository, so
the tests never write to the repository's results/ or .snakemake/. Dry runs only, plus one real
job (the re-analysis of the authors' released logs, a few seconds).

    pytest tests/workflow/test_workflow.py

Checks: `snakemake --lint` is clean; the paper scale schedules exactly the 200 training runs of the
paper (100 main + 30 n-sweep + 30 m-sweep + 30 rules + 10 normalisation, config/README.md), (e)/(f)
through `accelerate launch` on 8 GPUs and (a)-(d) on 1; every run scheduled by every profile is a
config the trainer accepts and its directory is named `pods_repro.config.run_name`; the released target
gives Table 3's 2.0/3.0/2.0/1.7/1.7; bad config values and bad sheet rows fail before any job runs;
the recipe "add a setting (g)" of docs/design.md (a YAML, sheet rows, one record) is enough.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from pods_repro import registry

REPO = Path(__file__).resolve().parents[2]
RELEASED = REPO.parent / "shared" / "reference" / "pods-released-results"
LINKED = ["Snakefile", "rules", "config", "profiles", "report", "envs", "experiments", "figures", "pods", "pods_repro"]
SNAKEMAKE = shutil.which("snakemake", path=str(Path(sys.executable).parent)) or "snakemake"
CONFIG = yaml.safe_load((REPO / "config" / "config.yaml").read_text())

pytestmark = pytest.mark.skipif(
    not (REPO / "experiments").is_dir() or not (REPO / "figures").is_dir(),
    reason="experiments/ and figures/ are inputs of the workflow",
)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A scratch copy of the workflow made of links to the repository's files."""
    wd = tmp_path_factory.mktemp("wf")
    for name in LINKED:
        if (REPO / name).exists():
            (wd / name).symlink_to(REPO / name)
    return wd


def snakemake(workdir: Path, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    # The rules run `python -m pods_repro ...`; an empty model cache makes every tiny model's build a job.
    cache = workdir / "empty_model_cache"
    cache.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO), "PODS_CACHE": str(cache)}
    return subprocess.run([SNAKEMAKE, *args], cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)


def dry_run(workdir: Path, scale: str, *extra: str) -> str:
    """Output of a dry run that prints every job with its shell command (fails the test on error)."""
    res = snakemake(workdir, "-n", "-p", *extra, "--config", f"scale={scale}")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res.stdout + res.stderr


def job_counts(output: str) -> Counter:
    """The "Job stats" table of a dry run: rule -> number of jobs."""
    table = output.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    return Counter({m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M) if m[1] != "total"})


def shell_command(output: str, fragment: str) -> str:
    """The first shell command of a dry run (`-p`) that contains `fragment`."""
    return next(c for c in re.findall(r"^Shell command: (.*)$", output, re.M) if fragment in c)


def train_jobs(output: str) -> list[dict]:
    """Every train job of a dry run: its output, resources and parsed command line."""
    jobs = []
    for block in re.split(r"\n(?=\[[^\]]+\]\n(?:local)?rule )", output):
        if not re.search(r"^rule train:", block, re.M):
            continue
        resources = dict(re.findall(r"(\w+)=([^,\s]+)", re.search(r"resources: (.*)", block)[1]))
        command = re.search(r"^Shell command: (.*)$", block, re.M)[1]
        argv = shlex.split(command.split(">>")[0])
        cut = argv.index("train")
        jobs.append({
            "summary": re.search(r"output: (\S+)", block)[1],
            "input": re.search(r"input: (.*)", block)[1].split(", "),
            "gpu": int(resources["gpu"]),
            "launcher": argv[:cut],
            "experiment": argv[cut + 1],
            "args": argv[cut + 2:],
        })  # fmt: skip
    return jobs


def test_lint_is_clean(workdir):
    res = snakemake(workdir, "--lint")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "Congratulations, your workflow is in a good condition!" in out, out


@pytest.fixture(scope="module")
def dry_runs(workdir) -> dict:
    """One dry run per scale, shared by the tests below (each costs seconds)."""
    return {}


@pytest.fixture
def paper_dry_run(workdir, dry_runs) -> str:
    return scale_dry_run(workdir, dry_runs, "paper")


def scale_dry_run(workdir: Path, cache: dict, scale: str) -> str:
    if scale not in cache:
        cache[scale] = dry_run(workdir, scale)
    return cache[scale]


def test_paper_scale_schedules_the_200_runs_of_the_paper(paper_dry_run):
    counts = job_counts(paper_dry_run)
    assert counts["train"] == 200
    jobs = train_jobs(paper_dry_run)
    assert len(jobs) == 200
    assert len({j["summary"] for j in jobs}) == 200
    runs = [Path(j["summary"]).parts[-4:-1] for j in jobs]  # (setting, arm, seed~s)
    per_setting = Counter(setting for setting, _, _ in runs)
    # (a): main 2 arms x 10 + n sweep 3 + m sweep 3 + rules 3 + normalisation 1, 10 seeds each.
    assert per_setting == {"a": 120, "b": 20, "c": 20, "d": 20, "e": 10, "f": 10}
    arms = {(s, a) for s, a, _ in runs}
    for n in (16, 32, 64, 128, 256):
        assert ("a", f"sel~max_variance_n~{n}_m~16") in arms
    for m in (16, 8, 4, 2):
        assert ("a", f"sel~max_variance_n~64_m~{m}") in arms
    for rule in ("max_reward", "random", "percentile"):
        assert ("a", f"sel~{rule}_n~64_m~16") in arms
    assert ("a", "sel~max_variance_n~64_m~16_norm~before") in arms
    # The released runs: Llama GRPO 16/16, MATH GRPO 8/8 (v5 Table 2 swaps b/c: docs/paper.md#hyperparameters).
    assert {("b", "sel~max_variance_n~16_m~16"), ("c", "sel~max_variance_n~8_m~8")} <= arms
    # (e)/(f): the authors' per-arm seeds.
    seeds = {(s, a): sorted(int(x.split("~")[1]) for s2, a2, x in runs if (s2, a2) == (s, a)) for s, a in arms}
    assert seeds[("e", "sel~max_variance_n~32_m~32_ga~16")] == [21, 22, 23, 24, 25]
    assert seeds[("f", "sel~max_variance_n~128_m~32")] == [13, 15, 21, 22, 23]


def test_paper_launchers_and_gpus(paper_dry_run):
    for job in train_jobs(paper_dry_run):
        setting = Path(job["summary"]).parts[-4]
        hardware = yaml.safe_load((REPO / job["experiment"]).read_text())["hardware"]
        if setting in "ef":
            assert job["gpu"] == 8 == hardware["num_processes"]
            assert job["launcher"][:2] == ["accelerate", "launch"]
            assert job["launcher"][job["launcher"].index("--num_processes") + 1] == "8"
            assert job["launcher"][job["launcher"].index("--config_file") + 1] == hardware["accelerate_config"]
        else:
            assert job["gpu"] == 1
            assert job["launcher"] == ["python", "-m", "pods_repro"]


@pytest.mark.parametrize("scale", ["tiny", "smoke"])
def test_cpu_scales_have_the_same_dag_shape(workdir, dry_runs, paper_dry_run, scale):
    out = scale_dry_run(workdir, dry_runs, scale)
    counts, paper = job_counts(out), job_counts(paper_dry_run)
    prof = CONFIG["scales"][scale]
    lines = [line.split("\t") for line in (REPO / prof["runs"]).read_text().splitlines()]
    sheet = dict(zip(lines[0], zip(*lines[1:], strict=True), strict=True))
    assert counts["train"] == sum(len(prof["seeds"][name]) for name in sheet["seeds"])
    own = {"train", "build_tiny_model"}  # the tiny models are built by jobs of the DAG (below)
    assert {k: v for k, v in counts.items() if k not in own} == {k: v for k, v in paper.items() if k != "train"}
    for job in train_jobs(out):
        assert job["launcher"] == ["python", "-m", "pods_repro"]
        assert job["gpu"] == 0


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="pods_repro.config needs torch")
@pytest.mark.parametrize("scale", ["paper", "tiny"])
def test_every_scheduled_run_is_a_valid_config_named_like_the_trainer_names_it(workdir, dry_runs, scale):
    from pods_repro.config import apply_overrides, from_dict, read_yaml, run_name, validate

    out = scale_dry_run(workdir, dry_runs, scale)
    prof = CONFIG["scales"][scale]
    from pods_repro.registry import read_sheet

    with_role = {(arm.setting, arm.run_name) for arm in read_sheet(REPO / prof["runs"]) if arm.role}
    yamls, bases = {}, {}
    for job in train_jobs(out):
        # = pods_repro.config.load_config(experiment, args, check_machine=False), reading each YAML once;
        # check_machine=False: the paper's GPU configs are validated on this CPU machine.
        summary = Path(job["summary"])
        letter = summary.parts[-4]
        # the setting's step budget: its experiment file, or the scale's overrides of it
        exp = read_yaml(REPO / job["experiment"])
        over = {"budget.max_steps": exp["budget"].get("max_steps"), "eval.every_steps": exp["eval"].get("every_steps")}
        over.update({**prof.get("overrides", {}), **prof.get("settings", {}).get(letter, {}).get("overrides", {})})
        ablation = (letter, summary.parts[-3]) not in with_role
        if ablation:  # the sweeps and ablations: the scale's ablation_overrides come last
            over.update(prof.get("ablation_overrides", {}))
        budget = [f"{k}={'null' if v is None else v}" for k, v in over.items()]
        if job["experiment"] not in yamls:
            yamls[job["experiment"]] = read_yaml(REPO / job["experiment"])
        key = (job["experiment"], letter, ablation)
        if key not in bases:
            bases[key] = from_dict(apply_overrides(yamls[job["experiment"]], budget))
        cfg = validate(from_dict(apply_overrides(yamls[job["experiment"]], job["args"])), check_machine=False)
        assert str(cfg.out_dir) == str(summary.parent)
        assert f"seed~{cfg.seed}" == summary.parent.name
        assert run_name(cfg, base=bases[key]) == summary.parts[-3]
        if scale == "tiny":  # the tiny runs count steps (load-independent): no wall-clock budget or time grid
            assert cfg.budget.max_time_s is None, job["args"]
            assert cfg.eval.every_s is None, job["args"]
            assert cfg.budget.max_steps == over["budget.max_steps"], job["args"]
            assert cfg.eval.every_steps == over["eval.every_steps"], job["args"]


@pytest.mark.parametrize("sheet", ["runs.tsv", "runs_tiny.tsv"])
def test_every_setting_has_one_main_comparison_in_the_sheet(sheet):
    """The sheet's `role` column is the only declaration of each setting's baseline and PODS arm."""
    main = registry.main_arms(registry.read_sheet(REPO / "config" / sheet))
    assert set(main) == set(registry.SETTINGS)
    for arms in main.values():
        assert arms["baseline"].n == arms["baseline"].m
        assert arms["pods"].n > arms["pods"].m


# The tiny models each scale builds: the tiny scale trains (a), its sweeps and (e), and benchmarks Fig. 1,
# on the warm-started model; the smoke scale keeps the experiment YAMLs' cheaper models.
SCALE_MODELS = {
    "tiny": (["llama-arith_hard", "llama-arith_mc", "llama-arith_warm_tt", "qwen2-arith"], "llama-arith_warm_tt"),
    "smoke": (["llama-arith", "llama-arith_hard", "llama-arith_mc", "qwen2-arith"], "llama-arith"),
}


@pytest.mark.parametrize("scale", ["tiny", "smoke"])
def test_tiny_models_are_built_by_jobs_of_the_dag(workdir, dry_runs, paper_dry_run, scale):
    """One build_tiny_model job per tiny model of the scale; every run and the benchmark wait for
    their model's card; the paper scale (hub models) has none."""
    out = scale_dry_run(workdir, dry_runs, scale)
    cards = {
        m[1]: m[0]
        for m in re.finditer(r"\S+/tiny/([\w.-]+)/pods_tiny\.json", out)
    }  # fmt: skip
    models, bench_model = SCALE_MODELS[scale]
    assert job_counts(out)["build_tiny_model"] == 4
    assert sorted(cards) == models
    built = re.findall(r"python -m pods_repro.models build tiny:([\w.-]+)", out)
    assert sorted(built) == models
    yamls = {}
    for job in train_jobs(out):
        if job["experiment"] not in yamls:
            yamls[job["experiment"]] = yaml.safe_load((REPO / job["experiment"]).read_text())
        args = dict(a.split("=", 1) for a in job["args"] if "=" in a)
        model = args.get("policy.model", yamls[job["experiment"]]["policy"]["model"])
        assert model.startswith("tiny:")
        assert cards[model[len("tiny:") :]] in job["input"], job
    bench = re.search(r"rule bench_asymmetry:\n\s+input: (.*)", out)[1]
    assert cards[bench_model] in bench.split(", ")
    assert "build_tiny_model" not in job_counts(paper_dry_run)


def test_single_run_target(workdir):
    target = "results/runs/a/sel~max_variance_n~64_m~16/seed~0/summary.json"
    out = dry_run(workdir, "tiny", target)
    assert job_counts(out) == {"train": 1, "build_tiny_model": 1}  # the model cache of the tests is empty
    (job,) = train_jobs(out)
    assert job["experiment"] == registry.SETTINGS["a"].experiments["tiny"]
    assert {"seed=0", "rollout.n=64", "rollout.m=16", "rollout.rule=max_variance"} <= set(job["args"])


# run directory of a tiny job -> the command line that names the same run ("pods train tiny_x seed=S ... --scale tiny")
SCALE_RUNS = {
    "a/sel~max_variance_n~64_m~16/seed~0": ("tiny_a", ["seed=0"]),  # the README's one run
    "a/sel~max_variance_n~16_m~16/seed~3": ("tiny_a", ["seed=3", "rollout.n=16", "rollout.m=16"]),
    "a/sel~random_n~64_m~16/seed~1": ("tiny_a", ["seed=1", "rollout.rule=random"]),  # an ablation: its own budget
    "a/sel~max_variance_n~64_m~16_norm~before/seed~2": ("tiny_a", ["seed=2", "rollout.normalize=before"]),
    "e/sel~max_variance_n~8_m~8_ga~8/seed~0": (
        "tiny_e",
        ["seed=0", "rollout.n=8", "rollout.m=8", "optim.grad_accum=8"],
    ),
    "b/sel~max_variance_n~64_m~16/seed~0": ("tiny_b", ["seed=0"]),
}


def test_pods_train_with_scale_resolves_the_workflow_job_s_config(workdir):
    """The README's one run without Snakemake trained another model on a 300 s budget: `--scale tiny` gives
    the workflow's job exactly (its experiment, seed, budgets, evaluation grid, model and run directory)."""
    from pods_repro.config import load_config, to_dict
    from pods_repro.config.scales import workflow_overrides

    out = dry_run(workdir, "tiny", *(f"results/runs/{run}/summary.json" for run in SCALE_RUNS))
    jobs = train_jobs(out)
    assert len(jobs) == len(SCALE_RUNS)
    for job in jobs:
        run = str(Path(job["summary"]).parent.relative_to("results/runs"))
        name, args = SCALE_RUNS[run]
        want = to_dict(load_config(REPO / job["experiment"], job["args"], check_machine=False))
        overrides, note = workflow_overrides(name, args, "tiny")
        got = to_dict(load_config(name, overrides, check_machine=False))
        assert got == want, (run, {k: (got[k], want[k]) for k in want if got[k] != want[k]})
        assert f"the workflow's run {run}" in note
    # and the command itself: `pods validate tiny_a seed=0 --scale tiny` prints that config
    res = subprocess.run([sys.executable, "-m", "pods_repro", "validate", "tiny_a", "seed=0", "--scale", "tiny"],
                         cwd=workdir, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr
    printed = yaml.safe_load(res.stdout)
    (job,) = [j for j in jobs if "n~64_m~16/seed~0" in j["summary"] and "/a/" in j["summary"]]
    assert printed == to_dict(load_config(REPO / job["experiment"], job["args"], check_machine=False))
    assert "# run_dir: results/runs/a/sel~max_variance_n~64_m~16/seed~0" in res.stdout
    assert printed["budget"]["max_steps"] == 600  # experiments/tiny_a.yaml: what the default job trains


def test_scale_refuses_an_experiment_of_another_scale():
    from pods_repro.config import ConfigError
    from pods_repro.config.scales import workflow_overrides

    with pytest.raises(ConfigError, match=r"is not the experiment of a setting at scale tiny.*tiny_a \(a\)"):
        workflow_overrides("a_gsm8k_qwen3b", [], "tiny")
    with pytest.raises(ConfigError, match="is not a scale of config/config.yaml"):
        workflow_overrides("tiny_a", [], "huge")
    overrides, note = workflow_overrides("tiny_a", ["rollout.n=48"], "tiny")
    assert "is not a run of runs_tiny.tsv" in note
    assert "out_dir=results/runs/a/sel~max_variance_n~48_m~16/seed~0" in overrides


def test_a_run_outside_the_sheet_is_refused(workdir):
    res = snakemake(workdir, "-n", "results/runs/a/sel~max_variance_n~48_m~16/seed~0/summary.json")
    assert res.returncode != 0
    assert "is not a run of scale 'tiny'" in res.stdout + res.stderr


def test_collect_waits_for_exactly_the_scale_runs(workdir, dry_runs):
    out = scale_dry_run(workdir, dry_runs, "smoke")
    block = re.search(r"rule collect:\n\s+input: (.*)", out)[1]
    inputs = [p for p in block.split(", ") if p.endswith("summary.json")]
    assert sorted(inputs) == sorted(j["summary"] for j in train_jobs(out))
    assert len(inputs) == job_counts(out)["train"] == 22


def fake_finished_run(run_dir: Path, setting: str, n: int, m: int, seed: int) -> None:
    """The files `collect` reads, as a finished run writes them (docs/design.md); the rule, normalisation and
    gradient accumulation come from the run-directory name (`collect` tells the arms apart by them)."""
    run_dir.mkdir(parents=True)
    name = run_dir.parent.name
    rule = re.match(r"sel~(\w+?)_n~", name).group(1)
    normalize = "before" if "_norm~before" in name else "after"
    ga = int(re.search(r"_ga~(\d+)", name).group(1)) if "_ga~" in name else 1
    cfg = {"setting": setting, "seed": seed, "rollout": {"n": n, "m": m, "rule": rule, "normalize": normalize},
           "optim": {"grad_accum": ga}, "eval": {"every_s": 8}}  # fmt: skip
    (run_dir / "config.json").write_text(json.dumps(cfg))
    evals = [{"step": k, "time_s": 8.0 * k, "dataset": "arith", "accuracy": 0.1 * k} for k in range(3)]
    (run_dir / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
    (run_dir / "metrics.jsonl").write_text(json.dumps({"step": 1, "time_s": 8.0}) + "\n")
    (run_dir / "summary.json").write_text(json.dumps({"status": "finished", "steps": 1, "n_evals": len(evals)}))


def test_collect_ignores_a_manual_run_under_the_results_root(tmp_path, workdir, dry_runs):
    """`pods train experiments/tiny_a.yaml` writes results/runs/tiny_a/...; the
    workflow's tables hold only the runs of its sheet, whatever else lies under the root."""
    out = scale_dry_run(workdir, dry_runs, "smoke")
    command = shell_command(out, "pods_repro.analysis collect")
    argv = shlex.split(command.split(">")[0])
    listed = argv[argv.index("--run-dirs") + 1 : argv.index("--out-dir")]
    assert sorted(listed) == sorted(str(Path(j["summary"]).parent) for j in train_jobs(out))
    assert "--runs" not in argv
    # For real, on fake finished runs (only `collect` may run: nothing is trained).
    wd = tmp_path / "wf"
    wd.mkdir()
    for name in LINKED:
        (wd / name).symlink_to(REPO / name)
    for d in listed:
        setting, run, seed = Path(d).parts[-3:]
        n, m = (int(x) for x in re.search(r"_n~(\d+)_m~(\d+)", run).groups())
        fake_finished_run(wd / d, f"tiny_{setting}", n, m, int(seed.split("~")[1]))
    fake_finished_run(wd / "results/smoke/runs/tiny_a/sel~max_variance_n~64_m~16/seed~7", "tiny_a", 64, 16, 7)
    res = snakemake(wd, "-c1", "--allowed-rules", "collect", "--config", "scale=smoke", "--",
                    "results/smoke/tables/curves.csv")  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    import pandas as pd

    curves = pd.read_csv(wd / "results/smoke/tables/curves.csv")
    assert set(curves["seed"]) == {0}
    assert len(pd.read_csv(wd / "results/smoke/tables/steps.csv")) == len(listed) == 22


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def merged(base: dict, override: dict) -> dict:
    """`override` merged into a deep copy of `base`, as Snakemake merges a --configfile."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"scales": {"tiny": {"seeds": {"main_a": [-1]}}}}, "-1 is less than the minimum of 0"),
        ({"scales": {"tiny": {"root": "output"}}}, "does not match"),
        ({"scales": {"tiny": {"overrides": {"budget": 3}}}}, "does not match"),
        ({"scales": {"paper": {"settings": {"e": {"gpus": "eight"}}}}}, "is not of type 'integer'"),
        ({"released": {"commit": "187f43b"}}, "does not match"),
    ],
)
def test_bad_config_values_fail_schema_validation(override, message):
    from snakemake.utils import validate

    schema = str(REPO / "config" / "config.schema.yaml")
    validate(merged(CONFIG, {}), schema)  # the shipped config is valid
    with pytest.raises(Exception, match=re.escape(message)):
        validate(merged(CONFIG, override), schema)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"scale": "huge"}, "unknown scale 'huge'"),
        ({"scales": {"tiny": {"overrides": {"rollout.n": 8}}}}, "which the run sheet sets per arm"),
    ],
)
def test_bad_config_fails_before_any_job(workdir, tmp_path, override, message):
    res = snakemake(workdir, "-n", "--configfile", str(write(tmp_path / "bad.yaml", yaml.safe_dump(override))))
    assert res.returncode != 0
    assert message in res.stdout + res.stderr


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda rows: rows + [rows[1]], "declare each run once"),
        (lambda rows: rows + [rows[2].replace("\t64\t16\t", "\t8\t16\t")], "m=16 > n=8"),
        (lambda rows: rows + [rows[2].replace("\t64\t", "\tsixty-four\t")], "n='sixty-four' is not a whole number"),
        (lambda rows: rows + [rows[1].replace("\t\t", "\tgrad~16\t")], "extra key 'grad' unknown"),
    ],
)
def test_bad_sheet_rows_fail(workdir, tmp_path, edit, message):
    rows = (REPO / "config" / "runs_tiny.tsv").read_text().splitlines()
    sheet = write(tmp_path / "runs.tsv", "\n".join(edit(rows)) + "\n")
    cfg = write(tmp_path / "sheet.yaml", yaml.safe_dump({"scales": {"tiny": {"runs": str(sheet)}}}))
    res = snakemake(workdir, "-n", "--configfile", str(cfg))
    assert res.returncode != 0
    assert message in res.stdout + res.stderr


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="pods.selectors needs torch")
def test_sheet_rules_are_registered_selectors():
    import pods_repro.rules  # noqa: F401  (the rules from other papers register on import)
    from pods.selectors import registered_rules

    RULES = registered_rules()
    for sheet in ("runs.tsv", "runs_tiny.tsv"):
        rules = {line.split("\t")[1] for line in (REPO / "config" / sheet).read_text().splitlines()[1:]}
        assert rules <= set(RULES), sorted(rules - set(RULES))


@pytest.mark.skipif(
    importlib.util.find_spec("pods_repro.analysis") is None, reason="pods_repro.analysis is not written yet"
)
@pytest.mark.skipif(not RELEASED.is_dir(), reason=f"{RELEASED} (the authors' released logs) is not here")
def test_released_target_reproduces_table_3(workdir):
    target = "results/released/time_to_peak.csv"
    res = snakemake(workdir, "-c1", target, "--config", f"released_logs={RELEASED}")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    import pandas as pd

    table = pd.read_csv(workdir / target, dtype={"setting": str}).set_index("setting")
    assert table["speedup"].to_dict() == {"a": 2.0, "b": 3.0, "c": 2.0, "e": 1.7, "f": 1.7}


@pytest.mark.slow
@pytest.mark.skipif(not RELEASED.is_dir(), reason=f"{RELEASED} (the authors' released logs) is not here")
def test_the_report_of_a_partial_released_run_holds_what_exists(workdir):
    target = "results/released/time_to_peak.csv"
    res = snakemake(workdir, "-c1", target, "--config", f"released_logs={RELEASED}")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    # After this partial run (no training, no figure yet), the default report works: it holds what
    # exists, the table with its caption. One released figure later, that figure too.
    res = snakemake(workdir, "--report", "partial.html", "--config", f"released_logs={RELEASED}")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    html = (workdir / "partial.html").read_text()
    assert "recomputed from the authors" in html
    assert "fig_3_main.png" not in html
    figure = "results/released/figures/fig_3_main.png"
    res = snakemake(workdir, "-c1", figure, "--config", f"released_logs={RELEASED}")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    res = snakemake(workdir, "--report", "partial.html", "--config", f"released_logs={RELEASED}")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "fig_3_main.png;base64," in (workdir / "partial.html").read_text()


def test_released_logs_default_to_the_verified_download(workdir):
    """No released_logs: the pinned tarball is downloaded (and verified) before the re-analysis."""
    out = dry_run(workdir, "tiny", "results/released/time_to_peak.csv")
    assert job_counts(out) == {"download_released": 1, "released_time_to_peak": 1}
    download = shell_command(out, "pods_repro.analysis.released_logs download")
    assert "https://github.com/YixuanEvenXu/pods/archive/187f43b648f69385103029c2dd0934521e17bb71.tar.gz" in download
    assert "--manifest pods_repro/analysis/released_logs.sha256" in download
    analysis = shell_command(out, "pods_repro.analysis released")
    assert analysis.startswith(
        "python -m pods_repro.analysis.released_logs verify resources/released/pods-187f43b/results"
    )


def test_released_logs_none_runs_the_workflow_without_the_authors_logs(workdir, dry_runs):
    """released_logs=none (an offline machine without a copy): no download, no re-analysis, (iii) without them."""
    res = snakemake(workdir, "-n", "-p", "--config", "scale=smoke", "released_logs=none")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    out = res.stdout + res.stderr
    counts = job_counts(out)
    assert not {"download_released", "released_time_to_peak", "released_figure", "released_ablations"} & set(counts)
    assert counts["time_to_peak"] == 1
    assert counts["plateau"] == counts["levels"] == 1  # ours only: results/smoke/tables/{plateau,levels}.{csv,md}
    assert counts["figure"] > 0
    assert "--paper-steps" not in shell_command(out, "time-to-peak")
    assert counts["ablations"] == 1
    assert "--released" not in shell_command(out, "pods_repro.analysis ablations")
    # By default the table reads the released steps.csv (speed-up (iii) from the authors' s/step),
    # and the plateau table is made for the released runs too.
    default = scale_dry_run(workdir, dry_runs, "smoke")
    assert "--paper-steps results/released/steps.csv" in shell_command(default, "time-to-peak")
    assert job_counts(default)["plateau"] == job_counts(default)["levels"] == 2
    for name in ("plateau", "levels"):
        assert "--out-dir results/smoke/tables" in shell_command(
            default, f"{name} --curves results/smoke/tables/curves.csv"
        )
    # The ablations table sets the released runs of the same arms beside ours; the released logs get their own.
    assert job_counts(default)["released_ablations"] == 1
    assert shell_command(default, "pods_repro.analysis ablations --released").startswith(
        "python -m pods_repro.analysis ablations --released results/released/curves.csv --out-dir results/released "
    )
    assert shell_command(default, "pods_repro.analysis ablations --curves").startswith(
        "python -m pods_repro.analysis ablations --curves results/smoke/tables/curves.csv "
        "--released results/released/curves.csv --out-dir results/smoke/tables"
    )
    # Asking for the re-analysis itself with the logs off is refused before any job runs, saying how to fix it.
    res = snakemake(workdir, "-n", "results/released/time_to_peak.csv", "--config", "released_logs=none")
    assert res.returncode != 0
    assert "released_logs=none turns the authors' released logs off" in res.stdout + res.stderr
    assert "--config released_logs=DIR" in res.stdout + res.stderr


@pytest.mark.skipif(not RELEASED.is_dir(), reason=f"{RELEASED} (the authors' released logs) is not here")
def test_an_altered_local_copy_is_refused_with_a_printed_reason(tmp_path):
    workdir = tmp_path / "wf"  # its own: the failed job removes its outputs
    workdir.mkdir()
    for name in LINKED:
        (workdir / name).symlink_to(REPO / name)
    copy_dir = tmp_path / "copy"
    copy_dir.mkdir()
    for f in RELEASED.iterdir():
        (copy_dir / f.name).symlink_to(f)
    (copy_dir / "h100s-acc.csv").unlink()
    (copy_dir / "h100s-acc.csv").write_text("step,acc\n")
    res = snakemake(workdir, "-c1", "results/released/time_to_peak.csv", "--config", f"released_logs={copy_dir}")
    assert res.returncode != 0
    assert "1 altered (SHA-256 differs): h100s-acc.csv" in res.stdout + res.stderr


# The recipe of docs/design.md, "Add a setting (g)": nothing else is edited.
RECORD_G = (
    '\nSETTINGS["g"] = Setting("g", "g_new_task", "New task, 1 GPU", "3-digit arithmetic, Qwen2 layout", "accuracy",'
    ' "arith_hard", 30, 300, 1.5, {"tiny": "experiments/tiny_g.yaml", "smoke": "experiments/tiny_g.yaml"})\n'
)
ROWS_G = (
    "g\tmax_variance\t8\t8\t\tbaseline\tmain_bcd\tfig_3_main\tGRPO of (g)\n"
    "g\tmax_variance\t32\t8\t\tpods\tmain_bcd\tfig_3_main\tGRPO-PODS of (g)\n"
    "g\tmax_variance\t64\t8\t\t\tablation\tfig_4_sweeps\tan ablation row of (g)\n"
)


def test_recipe_add_a_setting_g(tmp_path, monkeypatch):
    wd = tmp_path / "wf"
    wd.mkdir()
    for name in LINKED:
        if name not in ("pods_repro", "experiments", "config") and (REPO / name).exists():
            (wd / name).symlink_to(REPO / name)
    (wd / "Snakefile").unlink()
    shutil.copy(REPO / "Snakefile", wd / "Snakefile")  # its folder goes first on sys.path: our pods_repro copy
    for name in ("pods_repro", "experiments", "config"):
        shutil.copytree(REPO / name, wd / name, ignore=shutil.ignore_patterns("__pycache__"))
    # 1. an experiment YAML; 2. rows in the run sheet; 3. one record.
    tiny_a = (wd / "experiments" / "tiny_a.yaml").read_text()
    (wd / "experiments" / "tiny_g.yaml").write_text(tiny_a.replace("setting: tiny_a", "setting: tiny_g"))
    with (wd / "config" / "runs_tiny.tsv").open("a") as fh:
        fh.write(ROWS_G)
    with (wd / "pods_repro" / "registry.py").open("a") as fh:
        fh.write(RECORD_G)

    # The dry run schedules (g)'s runs (the main_bcd seeds x 2 main arms + the ablation seeds of its ablation
    # row) and nothing else changes.
    out = dry_run(wd, "tiny")
    runs = [Path(j["summary"]).parts[-4:-1] for j in train_jobs(out)]
    g = sorted((arm, seed) for s, arm, seed in runs if s == "g")
    seeds = CONFIG["scales"]["tiny"]["seeds"]
    assert g == sorted(
        [
            (arm, f"seed~{s}")
            for arm in ("sel~max_variance_n~32_m~8", "sel~max_variance_n~8_m~8")
            for s in seeds["main_bcd"]
        ]
        + [("sel~max_variance_n~64_m~8", f"seed~{s}") for s in seeds["ablation"]]
    )
    assert {j["experiment"] for j in train_jobs(out) if Path(j["summary"]).parts[-4] == "g"} == {
        "experiments/tiny_g.yaml"
    }
    assert "tiny_g=g" in out  # collect maps the YAML's setting name to its letter

    # The sheet parser and the analysis pick it up (the record added in-process as in the file).
    monkeypatch.setattr(registry, "SETTINGS", dict(registry.SETTINGS))  # restored after the test
    exec(RECORD_G, vars(registry))  # noqa: S102  the same line the recipe appends to pods_repro/registry.py
    sheet = wd / "config" / "runs_tiny.tsv"
    main = registry.main_arms(registry.read_sheet(sheet))
    assert (main["g"]["baseline"].run_name, main["g"]["pods"].run_name) == (
        "sel~max_variance_n~8_m~8",
        "sel~max_variance_n~32_m~8",
    )
    from pods_repro.analysis.collect import load_runs
    from pods_repro.analysis.speedups import default_comparisons, speedup_table

    spec = importlib.util.spec_from_file_location(
        "_pods_test_analysis", REPO / "tests" / "analysis" / "test_analysis.py"
    )
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    root = tmp_path / "runs"
    for seed in (0, 1):
        helpers.write_run(root, "tiny_g", 8, 8, seed, [0.1, 0.3, 0.5, 0.6, 0.6], datasets=("arith_hard",))
        helpers.write_run(root, "tiny_g", 32, 8, seed, [0.1, 0.6, 0.6, 0.6, 0.6], datasets=("arith_hard",))
    df = load_runs(root, sheet=sheet)
    (comp,) = default_comparisons(df)
    assert (comp.setting, comp.metric, comp.dataset, comp.paper) == ("g", "accuracy", "arith_hard", 1.5)
    assert (comp.baseline["n"], comp.pods["n"]) == (8, 32)
    assert speedup_table(df, n_boot=50)["speedup"].tolist() == [3.0]


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="pods_repro.config needs torch")
def test_fidelity_code_schedules_the_200_runs_as_the_authors_code_ran_them(workdir):
    """`--config scale=paper fidelity=code`: the same 200 runs, under results/paper-code/, each resolved by
    pods_repro.config.fidelity and named as the trainer names it at that fidelity."""
    from pods_repro.config import load_config, run_name

    res = snakemake(workdir, "-n", "-p", "--config", "scale=paper", "fidelity=code")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert job_counts(out)["train"] == 200
    jobs = train_jobs(out)
    assert len({j["summary"] for j in jobs}) == 200
    seen = set()
    for job in jobs:
        summary = Path(job["summary"])
        assert summary.parts[:3] == ("results", "paper-code", "runs"), summary
        assert "fidelity=code" in job["args"]
        key = (job["experiment"], tuple(a for a in job["args"] if not a.startswith(("seed=", "out_dir="))))
        if key in seen:
            continue
        seen.add(key)
        cfg = load_config(REPO / job["experiment"], job["args"], check_machine=False)
        assert cfg.fidelity == "code"
        assert run_name(cfg) == summary.parts[-3]
    res = snakemake(workdir, "-n", "--config", "scale=tiny", "fidelity=code")
    assert res.returncode != 0
    assert "paper settings only" in res.stdout + res.stderr


def parsed_train_jobs(out: str, root: str) -> list[tuple[str, dict, dict]]:
    """Per train job of a dry run's output (each checked to write under `root`): the setting letter,
    the key=value arguments and the job."""
    jobs = []
    for job in train_jobs(out):
        assert job["summary"].startswith(f"{root}/runs/"), job["summary"]
        args = dict(a.split("=", 1) for a in job["args"] if "=" in a)
        jobs.append((job["summary"][len(f"{root}/runs/") :].split("/")[0], args, job))
    return jobs


def test_tiny_default_trains_a_and_e_on_the_warm_model(workdir, dry_runs):
    """The tiny scale: (a) with its sweeps/ablations and (e) train tiny:llama-arith_warm_tt (built
    by a job of the DAG), (a) 600 steps on 64 seeds per main arm and (e) 150 steps, both on 400-problem
    evaluations; (b)-(d), (f) keep their experiment YAML's model, (b)-(d) the scale's evaluation size,
    and (f) runs 100 steps on 3 seeds per arm with 400-problem evaluations."""
    from pods_repro.config import load_config

    seen, seeds, cfgs = {}, {}, {}
    for letter, args, job in parsed_train_jobs(scale_dry_run(workdir, dry_runs, "tiny"), "results"):
        key = (job["experiment"], tuple(v for v in job["args"] if not v.startswith(("seed=", "out_dir="))))
        if key not in cfgs:  # what the job trains: its experiment file with the job's arguments
            cfgs[key] = load_config(REPO / job["experiment"], job["args"], check_machine=False)
        cfg = cfgs[key]
        model = cfg.policy.model
        if model == "tiny:llama-arith_warm_tt":
            assert any(i.endswith("tiny/llama-arith_warm_tt/pods_tiny.json") for i in job["input"]), job["input"]
        seen.setdefault(letter, set()).add((model, cfg.budget.max_steps, cfg.eval.max_examples))
        seeds.setdefault((letter, cfg.budget.max_steps), set()).add(args["seed"])
    assert seen["a"] == {("tiny:llama-arith_warm_tt", 600, 400), ("tiny:llama-arith_warm_tt", 200, 400)}
    assert seen["e"] == {("tiny:llama-arith_warm_tt", 150, 400)}
    assert seeds[("a", 600)] == {str(s) for s in range(64)}
    assert seeds[("a", 200)] == {"0", "1", "2"}
    for letter in "bcdf":
        assert "warm" not in str({model for model, _, _ in seen[letter]}), seen[letter]
    for letter in "bcd":
        assert {examples for _, _, examples in seen[letter]} == {200}, seen[letter]
    assert {(steps, examples) for _, steps, examples in seen["f"]} == {(100, 400)}
    assert seeds[("f", 100)] == {"0", "1", "2"}


def test_a_longer_budget_names_the_workflow_s_run_so_that_it_continues():
    """`pods train tiny_a seed=0 --scale tiny budget.max_steps=900` is the workflow's run with more steps, in its
    directory (the budget does not make another arm), so that training the missing steps continues it."""
    from pods_repro.config.scales import workflow_overrides

    for extra in (["budget.max_steps=900"], ["budget.max_steps=900", "checkpoint.every_steps=10"]):
        overrides, note = workflow_overrides("tiny_a", ["seed=0", *extra], "tiny")
        assert "the workflow's run a/sel~max_variance_n~64_m~16/seed~0" in note, note
        assert "out_dir=results/runs/a/sel~max_variance_n~64_m~16/seed~0" in overrides
        assert overrides[-1 - len(extra) : -1] == extra  # the command line's budget is applied last
