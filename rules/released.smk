# Re-analysis of the authors' released evaluation logs (Table 3 for a, b, c, e, f) through the same
# pods.analysis code as our own runs. The first target a new user can run, in seconds:
#   snakemake -c1 results/released/time_to_peak.csv --config released_logs=DIR


rule download_released:
    # Only used when neither --config released_logs=DIR nor released.local_copy exists. The GitHub
    # tarball of the pinned commit, keeping only the files of its top-level results/ folder
    # (per-run evaluation JSONs and the wandb CSV exports).
    output:
        logs=directory(RELEASED_DOWNLOAD),
    log:
        "resources/released/download.log",
    params:
        url=get_released_url,
        dest=lambda wildcards, output: os.path.dirname(output.logs),
    conda:
        "../envs/pods.yaml"
    shell:
        "(mkdir -p {params.dest} && curl -fsSL --connect-timeout 30 --max-time 900 {params.url:q}"
        " | tar -xz -C {params.dest} --strip-components=1 --no-wildcards-match-slash --wildcards '*/results/*')"
        " > {log} 2>&1"


rule released_time_to_peak:
    input:
        logs=get_released_logs,
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
    params:
        out_dir=lambda wildcards, output: os.path.dirname(output.csv),
    conda:
        "../envs/pods.yaml"
    shell:
        "python -m pods.analysis released --logs {input.logs:q} --sheet {input.sheet:q} --out-dir {params.out_dir}"
        " > {log} 2>&1"


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
    params:
        caption=figure_caption,
    conda:
        "../envs/pods.yaml"
    shell:
        "python {input.script} --curves {input.curves} --steps {input.steps} --out {output.pdf} > {log} 2>&1"
