# The selection arena (docs/arena.md): every rule and group filter of config/runs_arena.tsv under the conditions of
# config/arena.yaml, on the tiny analogue of setting (a). Not part of `all`: `snakemake arena` builds it, at the
# scale `--config arena=NAME` picks (full by default; pilot is the small grid docs/arena.md reports).
#
# Runs: {root}/runs/{condition}/{arm}/seed~{seed}/ with summary.json as the declared output (rules/train.smk says why).
# Tables: `pods analysis arena` ({root}/tables/arena_*.csv); one figure per condition (figures/fig_arena.py).
from pods_repro.arena import ArenaError, load_arena

ARENA_SCALE = config.get("arena", "full")
try:
    ARENA = load_arena(ARENA_SCALE)
except ArenaError as err:
    _fail(str(err))
ARENA_ROOT = ARENA.root
with open(ARENA.experiment) as _fh:
    _ARENA_POLICY = yaml.safe_load(_fh)["policy"]["model"]
ARENA_TINY = _ARENA_POLICY.removeprefix("tiny:") if _ARENA_POLICY.startswith("tiny:") else None
ARENA_TABLES = ["arena_curves", "arena_steps", "arena_arms", "arena_vs", "arena_tokens"]


ARENA_SUMMARIES = [f"{ARENA_ROOT}/runs/{run.folder}/summary.json" for run in ARENA.runs()]
# the build_tiny_model job of its model (rules/train.smk)
ARENA_MODEL_CARD = [tiny_model_card(ARENA_TINY)] if ARENA_TINY else []


rule arena:
    input:
        tables=expand(f"{ARENA_ROOT}/tables/{{table}}.csv", table=ARENA_TABLES),
        figures=expand(f"{ARENA_ROOT}/figures/fig_arena_{{condition}}.pdf", condition=list(ARENA.conditions)),


rule arena_train:
    input:
        experiment=ARENA.experiment,
        tiny_model=ARENA_MODEL_CARD,
    output:
        summary=f"{ARENA_ROOT}/runs/{{condition}}/{{arm}}/seed~{{seed}}/summary.json",
    log:
        f"{ARENA_ROOT}/logs/train/{{condition}}/{{arm}}/seed~{{seed}}.log",
    benchmark:
        f"{ARENA_ROOT}/logs/train/{{condition}}/{{arm}}/seed~{{seed}}.benchmark.tsv"
    wildcard_constraints:
        condition="|".join(ARENA.conditions),
        arm="|".join(ARENA.arms),
        seed=r"\d+",
    conda:
        "../envs/pods.yaml"
    threads: 1
    params:
        run_dir=lambda wildcards, output: os.path.dirname(output.summary),
        overrides=lambda wildcards: shlex.join(ARENA.run_overrides(wildcards.condition, wildcards.arm)),
    shell:
        "python -m pods_repro train {input.experiment} seed={wildcards.seed} out_dir={params.run_dir}"
        " {params.overrides} >> {log} 2>&1"


rule arena_tables:
    input:
        ARENA_SUMMARIES,
    output:
        expand(f"{ARENA_ROOT}/tables/{{table}}.csv", table=ARENA_TABLES),
    log:
        f"{ARENA_ROOT}/logs/arena_tables.log",
    conda:
        "../envs/pods.yaml"
    params:
        scale=ARENA_SCALE,
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "python -m pods_repro analysis arena --scale {params.scale} --out-dir {params.out_dir} > {log} 2>&1"


rule arena_figure:
    input:
        script="figures/fig_arena.py",
        lib="figures/figlib.py",
        curves=f"{ARENA_ROOT}/tables/arena_curves.csv",
        steps=f"{ARENA_ROOT}/tables/arena_steps.csv",
    output:
        pdf=f"{ARENA_ROOT}/figures/fig_arena_{{condition}}.pdf",
    log:
        f"{ARENA_ROOT}/logs/figures/fig_arena_{{condition}}.log",
    wildcard_constraints:
        condition="|".join(ARENA.conditions),
    conda:
        "../envs/pods.yaml"
    shell:
        "python {input.script} --curves {input.curves} --steps {input.steps}"
        " --condition {wildcards.condition} --out {output.pdf} > {log} 2>&1"
