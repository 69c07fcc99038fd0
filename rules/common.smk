# Run sheet x scale -> the set of training runs, and the input/params functions of every rule.
#
# A run is one row of config/runs.tsv (an arm: setting, rule, n, m, extra overrides) times one seed
# of the row's seed set in the active scale. The settings themselves (experiment YAML per scale,
# metric, titles, ...) are the records of pods_repro.registry.SETTINGS. Its directory is
#   {root}/runs/{setting}/sel~{rule}_n~{n}_m~{m}[_{extra}]/seed~{seed}/
# (Paramspace-like `key~value` names). Its `summary.json` is what the train step
# declares as output: the trainer writes it last, so its presence means "finished".
import os
import re
import shlex

import pandas as pd
import yaml
from snakemake.utils import validate

from pods_repro import registry
from pods_repro.config import scales

# Figure scripts (figures/<name>.py) -> what the report says about them. fig_1 plots the benchmark
# CSV (--bench); every other figure plots the tidy tables of the runs (--curves, --steps).
FIGURES = {
    "fig_1_asymmetry": "Fig. 1: wall-clock per step and per-token inference time vs rollouts per device.",
    "fig_3_main": "Fig. 3 (a)-(f): test accuracy vs training wall-clock (mean +- 1.96 SEM) and seconds per step.",
    "fig_4_sweeps": "Fig. 4: n sweep (m = 16) and m sweep (n = 64) on setting (a).",
    "fig_5_rules": "Fig. 5: down-sampling rules (max-variance, max-reward, random, percentile) at n = 64, m = 16.",
    "fig_6_normalization": "Fig. 6: advantages normalised after (default) vs before down-sampling.",
    "fig_7_transfer": "Fig. 7: the (a) and (b) models on GSM8K Platinum and MATH-500.",
    "fig_8_lengths": "Figs. 8-10: mean completion length over training time.",
}
BENCH_FIGURE = "fig_1_asymmetry"
RUN_FIGURES = [name for name in FIGURES if name != BENCH_FIGURE]
RUN_NAME_PATTERN = registry.RUN_NAME_PATTERN


def _fail(message):
    raise ValueError(message)


# ---------------------------------------------------------------------------- active scale
SCALE_NAME = config["scale"]
if SCALE_NAME not in config["scales"]:
    _fail(
        f"unknown scale {SCALE_NAME!r}: choose one of {sorted(config['scales'])} "
        "(snakemake --config scale=NAME; scales are defined in config/config.yaml)"
    )
SCALE = config["scales"][SCALE_NAME]
ROOT = SCALE["root"]

# ---------------------------------------------------------------------------- fidelity switch
# fidelity=code: every run as the authors' code ran it (pods_repro/config/fidelity.py), under its own root.
FIDELITY = config.get("fidelity", "paper")
if FIDELITY not in registry.FIDELITY:
    _fail(f"unknown fidelity {FIDELITY!r}: choose one of {list(registry.FIDELITY)} (snakemake --config fidelity=code)")
if FIDELITY != "paper":
    if SCALE_NAME != "paper":
        _fail(
            f"fidelity={FIDELITY} is defined for the paper settings only (the tiny analogues have no 4-bit "
            "kernels, GSM8K/MATH or 8 GPUs): use --config scale=paper fidelity=code, or fidelity=paper"
        )
    ROOT = f"{ROOT}-{FIDELITY}"
for _letter in SCALE.get("settings", {}):
    if _letter not in registry.SETTINGS:
        _fail(f"scales.{SCALE_NAME}.settings.{_letter}: no such setting in pods_repro.registry.SETTINGS")


# ---------------------------------------------------------------------------- run sheet
def load_sheet(path):
    """The run sheet (pods_repro.registry.read_sheet), schema-validated and cross-checked against the scale."""
    if not os.path.exists(path):
        _fail(f"run sheet {path} not found: set scales.{SCALE_NAME}.runs in config/config.yaml to a TSV of runs")
    try:
        arms = registry.read_sheet(path)
    except registry.SheetError as err:
        _fail(str(err))
    table = pd.read_csv(path, sep="\t", keep_default_na=False, dtype=str).astype({"n": int, "m": int})
    validate(table, "../config/runs.schema.yaml")
    for arm in arms:
        where = f"{path} line {arm.line}"
        if SCALE_NAME not in registry.SETTINGS[arm.setting].experiments:
            _fail(
                f"{where}: setting {arm.setting!r} has no experiment for scale {SCALE_NAME!r} "
                f"(pods_repro.registry.SETTINGS[{arm.setting!r}].experiments)"
            )
        if arm.seeds not in SCALE["seeds"]:
            _fail(
                f"{where}: seed set {arm.seeds!r} is not defined in scales.{SCALE_NAME}.seeds "
                f"(defined: {sorted(SCALE['seeds'])})"
            )
        for name in arm.figures.split(","):
            if name not in FIGURES:
                _fail(f"{where}: figure {name!r} unknown; known: {sorted(FIGURES)}")
    return arms


def setting_knobs(letter):
    """Workflow knobs of a setting in the active scale (resources, overrides; schema defaults)."""
    defaults = {"gpus": 0, "threads": 1, "mem_mb": 4000, "runtime_min": 60, "overrides": {}}
    return {**defaults, **SCALE.get("settings", {}).get(letter, {})}


def _run_overrides(arm):
    """Trainer overrides of one arm: the sheet's n/m/rule/extra, then the scale's budgets (pods_repro.config.scales, which
    `pods train CONFIG --scale NAME` uses too: one run outside Snakemake is the same run)."""
    try:
        return scales.run_overrides(SCALE, arm, FIDELITY, SCALE_NAME)
    except ValueError as err:
        _fail(str(err))


def _build_runs(arms):
    runs = {}
    for arm in arms:
        for seed in SCALE["seeds"][arm.seeds]:
            runs[f"{arm.setting}/{arm.run_name}/seed~{seed}"] = _run_overrides(arm)
    return runs


SHEET = load_sheet(SCALE["runs"])


def _step_budgeted(letter):
    """Whether a setting's runs at this scale stop at a number of optimizer steps (its experiment or the scale)."""
    path = registry.repo_file(registry.SETTINGS[letter].experiments[SCALE_NAME])
    budget = (yaml.safe_load(open(path)) or {}).get("budget") or {} if os.path.exists(path) else {}
    return bool((SCALE.get("overrides") or {}).get("budget.max_steps", budget.get("max_steps")))


# Figures of step-budgeted scales (tiny, smoke) plot against optimizer steps: the same whatever the load.
FIGURE_X = "steps" if all(_step_budgeted(arm.setting) for arm in SHEET) else "time"
RUNS = _build_runs(SHEET)  # "{setting}/{run name}/seed~{seed}" -> trainer overrides
LETTERS = sorted({arm.setting for arm in SHEET})  # the settings this scale trains


wildcard_constraints:
    setting="|".join(LETTERS),
    run=RUN_NAME_PATTERN,
    seed=r"\d+",
    name="|".join(RUN_FIGURES),


# ---------------------------------------------------------------------------- train rule
def run_overrides(wildcards):
    key = f"{wildcards.setting}/{wildcards.run}/seed~{wildcards.seed}"
    if key not in RUNS:
        _fail(
            f"{ROOT}/runs/{key} is not a run of scale {SCALE_NAME!r}: runs are the rows of "
            f"{SCALE['runs']} times the seeds of scales.{SCALE_NAME}.seeds; "
            "`snakemake -n` lists them (add a row to train another arm)"
        )
    return RUNS[key]


def setting_of(wildcards):
    return setting_knobs(wildcards.setting)


def experiment_of(letter):
    """experiments/*.yaml of a setting at the active scale (its pods_repro.registry record)."""
    return registry.SETTINGS[letter].experiments[SCALE_NAME]


def read_experiment(path):
    """An experiment YAML as a dict; {} while it does not exist (the train job reports it missing)."""
    if not os.path.exists(path):
        return {}
    with open(path) as fh:
        return yaml.safe_load(fh) or {}


def experiment_hardware(path):
    """The `hardware` section of an experiment YAML: it says how the run is launched."""
    return read_experiment(path).get("hardware") or {}


def get_train_input(wildcards):
    run_overrides(wildcards)  # an unknown run fails here, before anything is scheduled
    experiment = experiment_of(wildcards.setting)
    files = {"experiment": experiment}
    tiny = tiny_model_of(wildcards)
    if tiny:  # the build_tiny_model job of its model (rules/train.smk)
        files["tiny_model"] = tiny_model_card(tiny)
    accelerate_config = experiment_hardware(experiment).get("accelerate_config")
    if accelerate_config:
        files["accelerate_config"] = accelerate_config
    return files


def get_launcher(wildcards, input):
    """`python -m pods_repro`, or `accelerate launch ... -m pods_repro` for a YAML that names an accelerate config."""
    if "accelerate_config" not in input.keys():
        return "python -m pods_repro"
    processes = experiment_hardware(input.experiment).get("num_processes", 1)
    return f"accelerate launch --config_file {input.accelerate_config} --num_processes {processes} -m pods_repro"


def get_overrides(wildcards):
    return shlex.join(run_overrides(wildcards))


def get_run_dir(wildcards, output):
    return os.path.dirname(output.summary)


def get_threads(wildcards):
    return setting_of(wildcards)["threads"]


def get_gpus(wildcards):
    return setting_of(wildcards)["gpus"]


def get_mem_mb(wildcards):
    return setting_of(wildcards)["mem_mb"]


def get_runtime(wildcards):
    return setting_of(wildcards)["runtime_min"]


# ---------------------------------------------------------------------------- tiny models
# A run whose policy is `tiny:<name>` (the tiny and smoke scales) needs the project-built model in the
# cache of pods_repro.models (cache_root(): $PODS_CACHE, which the Snakefile sets to resources/models unless
# it is set already). Building it is a job of
# the DAG (rule build_tiny_model), whose output is the model's card, written last by the build.
# Relative to the working directory, as Snakemake prefers paths (--lint flags absolute ones).
TINY_CACHE = os.path.relpath(os.environ["PODS_CACHE"])


def tiny_model_card(name):
    return f"{TINY_CACHE}/tiny/{name}/pods_tiny.json"


def tiny_model_of_run(setting, overrides):
    """`<name>` of a run's `tiny:<name>` policy (its overrides, else its experiment YAML), else None."""
    spec = None
    for item in overrides:
        if item.startswith("policy.model="):
            spec = item.split("=", 1)[1]
    if spec is None:
        spec = (read_experiment(experiment_of(setting)).get("policy") or {}).get("model")
    spec = str(spec or "")
    return spec[len("tiny:") :] if spec.startswith("tiny:") else None


def tiny_model_of(wildcards):
    return tiny_model_of_run(wildcards.setting, run_overrides(wildcards))


def bench_tiny_model():
    """`<name>` of the Fig. 1 benchmark's `tiny:<name>` model (--model, default tiny:llama-arith), else None."""
    args = list(SCALE["bench"].get("args", []))
    spec = args[args.index("--model") + 1] if "--model" in args[:-1] else "tiny:llama-arith"
    return spec[len("tiny:") :] if spec.startswith("tiny:") else None


def get_bench_input(wildcards):
    tiny = bench_tiny_model()
    return {"tiny_model": tiny_model_card(tiny)} if tiny else {}


# The tiny models this scale's runs and benchmark use (one build job each).
_USED = [tiny_model_of_run(arm.setting, _run_overrides(arm)) for arm in SHEET] + [bench_tiny_model()]
TINY_MODELS = sorted({name for name in _USED if name})


# ---------------------------------------------------------------------------- aggregation
def get_run_summaries(wildcards=None):
    """summary.json of exactly the runs of the active scale: collect waits for all of them."""
    return [f"{ROOT}/runs/{key}/summary.json" for key in sorted(RUNS)]


def get_letters(wildcards):
    """--letters for `pods_repro.analysis collect`: each experiment's `setting:` name -> its paper letter."""
    letters = {}
    for letter in LETTERS:
        name = str(read_experiment(experiment_of(letter)).get("setting", letter))
        if letters.get(name, letter) != letter:
            _fail(
                f"settings {letters[name]} and {letter} of scale {SCALE_NAME!r} both use "
                f"setting name {name!r}: give each experiments/*.yaml its own `setting:`"
            )
        letters[name] = letter
    return ",".join(f"{name}={letter}" for name, letter in letters.items())


def get_experiments(wildcards=None):
    return sorted({experiment_of(letter) for letter in LETTERS})


# ---------------------------------------------------------------------------- released logs
RELEASED_DOWNLOAD = f"resources/released/pods-{config['released']['commit'][:7]}/results"
RELEASED_MANIFEST = (
    "pods_repro/analysis/released_logs.sha256"  # SHA-256 of every released file (pods_repro.analysis.released_logs)
)


# released_logs: none -> no authors' logs at all (an offline machine without a copy): the `all`
# target leaves out their re-analysis, and speed-up (iii) takes the paper hardware's s/step from
# the paper's values (docs/paper.md#seconds-per-step) and the cost model
# (pods_repro.analysis.paper_clock.paper_seconds_per_step).
RELEASED_OFF = isinstance(config["released_logs"], str) and config["released_logs"].strip().lower() == "none"


def get_released_logs(wildcards=None):
    """The authors' results/ folder: --config released_logs=DIR (a local copy), else the download."""
    if RELEASED_OFF:
        _fail(
            "released_logs=none turns the authors' released logs off, but this target re-analyses them "
            "(results/released/...): pass --config released_logs=DIR with a local copy of their results/ "
            "folder, or leave released_logs unset to download it"
        )
    if config["released_logs"]:
        if not os.path.isdir(config["released_logs"]):
            _fail(
                f"released_logs={config['released_logs']} is not a folder: point it at a local copy of the "
                "authors' results/ folder, or leave it unset to download it"
            )
        return config["released_logs"]
    return RELEASED_DOWNLOAD


def get_released_url(wildcards):
    return f"{config['released']['repository']}/archive/{config['released']['commit']}.tar.gz"


# ---------------------------------------------------------------------------- figures, targets
def get_figure_input(wildcards):
    return {
        "script": f"figures/{wildcards.name}.py",
        "lib": "figures/figlib.py",  # shared plotting code: a change redraws every figure
        "curves": f"{ROOT}/tables/curves.csv",
        "steps": f"{ROOT}/tables/steps.csv",
    }


def figure_caption(wildcards):
    return FIGURES[wildcards.name]


def figure_files(folder, names):
    return [f"{folder}/{name}.{ext}" for name in names for ext in ("pdf", "png")]


def get_final_outputs(wildcards=None):
    """Targets of `snakemake` (the `all` target): every figure, the time-to-peak, plateau, levels, seeds, ablations and signal tables, the released re-analysis."""
    outputs = figure_files(f"{ROOT}/figures", FIGURES)
    outputs += [f"{ROOT}/tables/time_to_peak.{ext}" for ext in ("csv", "md", "tex")]
    outputs += [
        f"{ROOT}/tables/{name}.{ext}"
        for name in ("plateau", "levels", "seeds", "ablations", "signal")
        for ext in ("csv", "md")
    ]
    if not RELEASED_OFF:
        outputs += [f"results/released/time_to_peak.{ext}" for ext in ("csv", "md", "tex")]
        outputs += [
            f"results/released/{name}.{ext}" for name in ("plateau", "levels", "ablations") for ext in ("csv", "md")
        ]
        outputs += figure_files("results/released/figures", config["released"]["figures"])
    return outputs


def get_ablations_input(wildcards=None):
    inputs = {"curves": f"{ROOT}/tables/curves.csv"}
    if not RELEASED_OFF:
        inputs["released"] = "results/released/curves.csv"  # the authors' runs of the same arms, beside ours
    return inputs


def get_time_to_peak_input(wildcards=None):
    inputs = {
        "curves": f"{ROOT}/tables/curves.csv",
        "steps": f"{ROOT}/tables/steps.csv",  # this machine's seconds per step: speed-up (ii)
    }
    if not RELEASED_OFF:
        # the authors' seconds per step of each setting's arms: speed-up (iii) (without it, under
        # released_logs: none, the paper's values and the cost model)
        inputs["paper_steps"] = "results/released/steps.csv"
        inputs["paper_curves"] = "results/released/curves.csv"
    return inputs
