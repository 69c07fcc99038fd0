# PODS reproduction workflow: every run of the paper, its figures, and the time-to-peak table.
#
#   snakemake                                   # tiny scale (default): CPU, this machine
#   snakemake --config scale=paper              # the paper's 200 runs (GPUs, see docs/reproduce.md)
#   snakemake -c1 results/released/time_to_peak.csv --config released_logs=DIR
#
# Runs are declared once in config/runs.tsv (arms; `role` marks each setting's main comparison),
# settings once in pods_repro/registry.py (SETTINGS: experiment YAML per scale, metric, titles, ...);
# config/config.yaml holds the workflow knobs of each scale: seeds, budgets, resources.
# How to run a single experiment, use a cluster, and build the report: docs/reproduce.md.
import os
import sys

from snakemake.utils import min_version, validate

min_version("9.0")


# The workflow keeps its built tiny models inside the project (resources/models, gitignored) unless
# $PODS_CACHE says otherwise; its jobs inherit the variable, so the build rule's output and the
# runs' model loading (pods_repro.models.cache_root) name the same folder.
os.environ.setdefault("PODS_CACHE", os.path.join(workflow.basedir, "resources", "models"))


envvars:
    "PATH",
    "PODS_CACHE",


# Rules run `python -m pods_repro ...`: make that the interpreter Snakemake itself runs under (the project's
# .venv when started as .venv/bin/snakemake), whether or not the environment was activated.
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
# rules/common.smk imports pods_repro.registry (settings, run names, the sheet parser) from this checkout.
sys.path.insert(0, workflow.basedir)


configfile: "config/config.yaml"


validate(config, "config/config.schema.yaml")


report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/train.smk"
include: "rules/aggregate.smk"
include: "rules/figures.smk"
include: "rules/released.smk"
include: "rules/arena.smk"


# Cheap, or needing the internet (the download): never sent to a cluster node.
localrules:
    all,
    collect,
    time_to_peak,
    figure,
    figure_asymmetry,
    download_released,
    released_time_to_peak,
    released_figure,
    arena,
    arena_tables,
    arena_figure,


# `snakemake --report FILE` reports on the outputs that exist, so it works after a partial run (only
# the released logs, or one setting): every figure and table built so far is in it, nothing is run.
REPORTING = any(arg == "--report" or arg.startswith("--report=") for arg in sys.argv)


rule all:
    default_target: True
    input:
        [f for f in get_final_outputs() if os.path.exists(f)] if REPORTING else get_final_outputs(),
