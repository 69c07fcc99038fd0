# Run sheet x profile -> the set of training runs, and the input/params functions of every rule.
#
# A run is one row of config/runs.tsv (an arm: setting, rule, n, m, extra overrides) times one seed
# of the row's seed set in the active profile. Its directory is
#   {root}/runs/{setting}/sel~{rule}_n~{n}_m~{m}[_{extra}]/seed~{seed}/
# (Paramspace-like `key~value` names, STYLE.md §3.3). Its `summary.json` is what the train step
# declares as output: the trainer writes it last, so its presence means "finished".
import os
import shlex

import pandas as pd
import yaml
from snakemake.utils import validate

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
ARM_PATTERN = r"sel~[a-z_]+_n~\d+_m~\d+(?:_[a-z]+~[^_/~]+)*"


def _fail(message):
    raise ValueError(message)


# ---------------------------------------------------------------------------- active profile
PROFILE_NAME = config["profile"]
if PROFILE_NAME not in config["profiles"]:
    _fail(
        f"unknown profile {PROFILE_NAME!r}: choose one of {sorted(config['profiles'])} "
        "(snakemake --config profile=NAME; profiles are defined in config/config.yaml)"
    )
PROFILE = config["profiles"][PROFILE_NAME]
ROOT = PROFILE["root"]


# ---------------------------------------------------------------------------- run sheet
def load_sheet(path):
    """The run sheet as a DataFrame, schema-validated and cross-checked against the profile."""
    if not os.path.exists(path):
        _fail(f"run sheet {path} not found: set profiles.{PROFILE_NAME}.runs in config/config.yaml to a TSV of runs")
    sheet = pd.read_csv(path, sep="\t", keep_default_na=False, dtype=str)
    for column in ("n", "m"):
        # One bad cell would turn the whole column into text; name that cell instead.
        for i, value in sheet.get(column, pd.Series(dtype=str)).items():
            if not value.isdigit():
                _fail(f"{path} line {i + 2}: {column}={value!r} is not a whole number of rollouts")
        if column in sheet:
            sheet[column] = sheet[column].astype(int)
    validate(sheet, "../config/runs.schema.yaml")
    seen = {}
    for i, row in enumerate(sheet.itertuples(index=False), start=2):  # line 1 is the header
        where = f"{path} line {i}"
        if row.m > row.n:
            _fail(f"{where}: m={row.m} > n={row.n}; down-sampling keeps m <= n rollouts per prompt")
        if row.setting not in PROFILE["settings"]:
            _fail(f"{where}: setting {row.setting!r} has no entry in profiles.{PROFILE_NAME}.settings")
        if row.seeds not in PROFILE["seeds"]:
            _fail(
                f"{where}: seed set {row.seeds!r} is not defined in profiles.{PROFILE_NAME}.seeds "
                f"(defined: {sorted(PROFILE['seeds'])})"
            )
        for token in filter(None, row.extra.split("_")):
            key = token.split("~")[0]
            if key not in config["extra_keys"]:
                _fail(f"{where}: extra key {key!r} unknown; known: {sorted(config['extra_keys'])} (extra_keys)")
        for name in row.figures.split(","):
            if name not in FIGURES:
                _fail(f"{where}: figure {name!r} unknown; known: {sorted(FIGURES)}")
        arm = arm_name(row.rule, row.n, row.m, row.extra)
        if (row.setting, arm) in seen:
            _fail(
                f"{where} repeats the run of line {seen[(row.setting, arm)]} ({row.setting}/{arm}): "
                "declare each run once and list every figure it feeds in its `figures` column"
            )
        seen[(row.setting, arm)] = i
    return sheet


def arm_name(rule, n, m, extra=""):
    """Run-dir name of an arm: sel~{rule}_n~{n}_m~{m}[_{extra}]."""
    return f"sel~{rule}_n~{n}_m~{m}" + (f"_{extra}" if extra else "")


def _override_value(value):
    # YAML spelling, so that the trainer's YAML-typed parsing reads back the same value.
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


def _run_overrides(row):
    """Trainer overrides of one arm: the sheet's n/m/rule/extra, then the profile's budgets."""
    sheet_part = {"rollout.rule": row.rule, "rollout.n": row.n, "rollout.m": row.m}
    for token in filter(None, row.extra.split("_")):
        key, value = token.split("~", 1)
        sheet_part[config["extra_keys"][key]] = value
    profile_part = {**PROFILE["overrides"], **PROFILE["settings"][row.setting]["overrides"]}
    clash = sorted(set(sheet_part) & set(profile_part))
    if clash:
        _fail(
            f"profiles.{PROFILE_NAME} overrides {clash}, which the run sheet sets per arm: "
            "remove them from the profile (hyperparameters belong to the sheet or experiments/*.yaml)"
        )
    return [f"{k}={_override_value(v)}" for k, v in {**sheet_part, **profile_part}.items()]


def _build_runs(sheet):
    runs = {}
    for row in sheet.itertuples(index=False):
        arm = arm_name(row.rule, row.n, row.m, row.extra)
        for seed in PROFILE["seeds"][row.seeds]:
            runs[f"{row.setting}/{arm}/seed~{seed}"] = _run_overrides(row)
    return runs


RUNS = _build_runs(load_sheet(PROFILE["runs"]))  # "{setting}/{arm}/seed~{seed}" -> trainer overrides


wildcard_constraints:
    setting="|".join(sorted(PROFILE["settings"])),
    arm=ARM_PATTERN,
    seed=r"\d+",
    name="|".join(RUN_FIGURES),


# ---------------------------------------------------------------------------- train rule
def run_overrides(wildcards):
    key = f"{wildcards.setting}/{wildcards.arm}/seed~{wildcards.seed}"
    if key not in RUNS:
        _fail(
            f"{ROOT}/runs/{key} is not a run of profile {PROFILE_NAME!r}: runs are the rows of "
            f"{PROFILE['runs']} times the seeds of profiles.{PROFILE_NAME}.seeds; "
            "`snakemake -n` lists them (add a row to train another arm)"
        )
    return RUNS[key]


def setting_of(wildcards):
    return PROFILE["settings"][wildcards.setting]


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
    experiment = setting_of(wildcards)["experiment"]
    files = {"experiment": experiment}
    accelerate_config = experiment_hardware(experiment).get("accelerate_config")
    if accelerate_config:
        files["accelerate_config"] = accelerate_config
    return files


def get_launcher(wildcards, input):
    """`python -m pods`, or `accelerate launch ... -m pods` for a YAML that names an accelerate config."""
    if "accelerate_config" not in input.keys():
        return "python -m pods"
    processes = experiment_hardware(input.experiment).get("num_processes", 1)
    return f"accelerate launch --config_file {input.accelerate_config} --num_processes {processes} -m pods"


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


# ---------------------------------------------------------------------------- aggregation
def get_run_summaries(wildcards=None):
    """summary.json of exactly the runs of the active profile: collect waits for all of them."""
    return [f"{ROOT}/runs/{key}/summary.json" for key in sorted(RUNS)]


def get_letters(wildcards):
    """--letters for `pods.analysis collect`: each experiment's `setting:` name -> its paper letter."""
    letters = {}
    for letter, setting in sorted(PROFILE["settings"].items()):
        name = str(read_experiment(setting["experiment"]).get("setting", letter))
        if letters.get(name, letter) != letter:
            _fail(
                f"settings {letters[name]} and {letter} of profile {PROFILE_NAME!r} both use "
                f"setting name {name!r}: give each experiments/*.yaml its own `setting:`"
            )
        letters[name] = letter
    return ",".join(f"{name}={letter}" for name, letter in letters.items())


def get_experiments(wildcards=None):
    return sorted({s["experiment"] for s in PROFILE["settings"].values()})


# ---------------------------------------------------------------------------- released logs
RELEASED_DOWNLOAD = f"resources/released/pods-{config['released']['commit'][:7]}/results"


def get_released_logs(wildcards=None):
    """The authors' results/ folder: --config released_logs=DIR, else the local copy, else download."""
    if config["released_logs"]:
        if not os.path.isdir(config["released_logs"]):
            _fail(
                f"released_logs={config['released_logs']} is not a folder: point it at the "
                "authors' results/ folder, or leave it unset to download it"
            )
        return config["released_logs"]
    if os.path.isdir(config["released"]["local_copy"]):
        return config["released"]["local_copy"]
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
    """Targets of `snakemake` (the `all` target): every figure, the time-to-peak table, the released re-analysis."""
    tables = [f"{ROOT}/tables/time_to_peak.{ext}" for ext in ("csv", "md", "tex")]
    released = [f"results/released/time_to_peak.{ext}" for ext in ("csv", "md", "tex")]
    return (
        figure_files(f"{ROOT}/figures", FIGURES)
        + tables
        + released
        + figure_files("results/released/figures", config["released"]["figures"])
    )
