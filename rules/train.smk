# Training: one job per run of the sheet (rules/common.smk RUNS), and the Fig. 1 benchmark.
#
# Only summary.json is declared as output, on purpose:
# - the trainer writes it last and atomically, so Snakemake reruns exactly the unfinished runs;
# - the run directory's other files (config.json, metrics.jsonl, eval.jsonl, checkpoints/) are not
#   outputs, so Snakemake never deletes them: a failed or killed run keeps its checkpoints and the
#   next attempt resumes from them (the trainer resumes by itself). `directory()` output would be
#   wiped before every attempt and `shadow:` would run in a scratch copy that vanishes on failure;
# - a run killed with Snakemake is marked incomplete; profiles/default sets `rerun-incomplete` so
#   the next `snakemake` restarts it (from its checkpoint) instead of stopping.


rule train:
    input:
        unpack(get_train_input),
    output:
        summary=f"{ROOT}/runs/{{setting}}/{{run}}/seed~{{seed}}/summary.json",
    log:
        f"{ROOT}/logs/train/{{setting}}/{{run}}/seed~{{seed}}.log",
    benchmark:
        # wall time, peak RSS and CPU time of the (last) attempt: the tiny budget's measurement
        f"{ROOT}/logs/train/{{setting}}/{{run}}/seed~{{seed}}.benchmark.tsv"
    conda:
        "../envs/pods.yaml"
    threads: get_threads
    resources:
        gpu=get_gpus,
        mem_mb=get_mem_mb,
        runtime=get_runtime,
    params:
        launch=get_launcher,
        run_dir=get_run_dir,
        overrides=get_overrides,
    shell:
        # >> keeps the log of earlier attempts of a resumed run.
        "{params.launch} train {input.experiment} seed={wildcards.seed} out_dir={params.run_dir}"
        " {params.overrides} >> {log} 2>&1"


rule bench_asymmetry:
    input:
        unpack(get_bench_input),
    output:
        csv=f"{ROOT}/bench/asymmetry.csv",
    log:
        f"{ROOT}/logs/bench/asymmetry.log",
    benchmark:
        f"{ROOT}/logs/bench/asymmetry.benchmark.tsv"
    conda:
        "../envs/pods.yaml"
    threads: SCALE["bench"]["threads"]
    resources:
        gpu=SCALE["bench"]["gpus"],
    params:
        args=shlex.join(SCALE["bench"]["args"]),
    shell:
        "python -m pods_repro bench asymmetry --out {output.csv} {params.args} > {log} 2>&1"


# The project-built model of the tiny/smoke runs (pods_repro.models TINY_MODELS), built once into the model
# cache before any run that uses it; its card pods_tiny.json is written last, atomically, so its
# presence means "built". A cached card is not rebuilt here; a run whose cached model is stale (its
# recipe changed) still rebuilds it through pods_repro.models.ensure_tiny.
rule build_tiny_model:
    output:
        card=tiny_model_card("{tiny_model}"),
    log:
        f"{ROOT}/logs/models/{{tiny_model}}.log",
    benchmark:
        f"{ROOT}/logs/models/{{tiny_model}}.benchmark.tsv"
    wildcard_constraints:
        tiny_model="|".join(re.escape(name) for name in TINY_MODELS) or "(?!)",
    conda:
        "../envs/pods.yaml"
    threads: 1  # the build is single-threaded so that its bytes do not depend on the machine
    resources:
        runtime=60,
    shell:
        "python -m pods_repro.models build tiny:{wildcards.tiny_model} > {log} 2>&1"
