# Re-analysis of the authors' released evaluation logs (Table 3 for a, b, c, e, f) through the same
# pods_repro.analysis code as our own runs. The first target a new user can run, in seconds:
#   snakemake -c1 results/released/time_to_peak.csv                          # downloads the pinned release
#   snakemake -c1 results/released/time_to_peak.csv --config released_logs=DIR   # or a local copy


rule download_released:
    # The default source (no --config released_logs=DIR): the GitHub tarball of the pinned commit,
    # keeping only the files of its top-level results/ folder (per-run evaluation JSONs and the wandb
    # CSV exports), verified against the manifest before the folder appears. Why a download failed is
    # printed (and appended to the log), with the local-copy alternative.
    input:
        manifest=RELEASED_MANIFEST,
    output:
        logs=directory(RELEASED_DOWNLOAD),
    log:
        "resources/released/download.log",
    conda:
        "../envs/pods.yaml"
    params:
        url=get_released_url,
    shell:
        "python -m pods_repro.analysis.released_logs download --url {params.url:q} --dest {output.logs:q}"
        " --manifest {input.manifest:q} --log {log:q}"


rule released_time_to_peak:
    input:
        logs=get_released_logs,
        manifest=RELEASED_MANIFEST,  # a download or a local copy is checked file by file first
        sheet="config/runs.tsv",  # the paper sheet: its `role` rows are the Table 3 comparisons
    output:
        csv=report(
            "results/released/time_to_peak.csv",
            caption="../report/released_time_to_peak.rst",
            category="Time-to-peak (Table 3)",
            subcategory="authors' released logs",
        ),
        md="results/released/time_to_peak.md",
        tex="results/released/time_to_peak.tex",
        curves="results/released/curves.csv",
        steps="results/released/steps.csv",
    log:
        "results/released/logs/time_to_peak.log",
    conda:
        "../envs/pods.yaml"
    params:
        out_dir=lambda wildcards, output: os.path.dirname(output.csv),
    shell:
        # A failed verification is printed (stderr is not redirected), not only logged.
        "python -m pods_repro.analysis.released_logs verify {input.logs:q} --manifest {input.manifest:q} > {log}"
        " && python -m pods_repro.analysis released --logs {input.logs:q} --manifest {input.manifest:q}"
        " --sheet {input.sheet:q} --out-dir {params.out_dir} >> {log} 2>&1"


rule released_ablations:
    # Figs. 4-5 of the authors' logs as numbers: each sweep/rule arm of setting (a) minus GRPO-PODS 64/16
    # over the second half of the run, per hour (the paper's axis) and per optimizer step (pods_repro/analysis/ablations.py).
    input:
        curves="results/released/curves.csv",
    output:
        csv="results/released/ablations.csv",
        md="results/released/ablations.md",
    log:
        "results/released/logs/ablations.log",
    conda:
        "../envs/pods.yaml"
    params:
        out_dir=lambda wildcards, output: os.path.dirname(output.csv),
    shell:
        "python -m pods_repro.analysis ablations --released {input.curves} --out-dir {params.out_dir} > {log} 2>&1"


rule released_figure:
    input:
        script="figures/{name}.py",
        lib="figures/figlib.py",
        curves="results/released/curves.csv",
        steps="results/released/steps.csv",
    output:
        pdf="results/released/figures/{name}.pdf",
        png=report(
            "results/released/figures/{name}.png",
            caption="../report/figure.rst",
            category="Figures",
            subcategory="authors' released logs",
            labels={"figure": "{name}"},
        ),
    log:
        "results/released/logs/{name}.log",
    conda:
        "../envs/pods.yaml"
    params:
        caption=figure_caption,
    shell:
        "python {input.script} --curves {input.curves} --steps {input.steps} --out {output.pdf} > {log} 2>&1"
