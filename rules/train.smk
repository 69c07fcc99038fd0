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
        "python -m pods bench asymmetry --out {output.csv} {params.args} > {log} 2>&1"
