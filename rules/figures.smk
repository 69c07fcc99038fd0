# One rule per kind of figure; each script (figures/<name>.py) writes <name>.pdf and <name>.png and
# only selects and plots: the statistics come from pods_repro.analysis through the tables.


rule figure_asymmetry:
    input:
        script=f"figures/{BENCH_FIGURE}.py",
        lib="figures/figlib.py",
        bench=f"{ROOT}/bench/asymmetry.csv",
    output:
        pdf=f"{ROOT}/figures/{BENCH_FIGURE}.pdf",
        png=report(
            f"{ROOT}/figures/{BENCH_FIGURE}.png",
            caption="../report/figure.rst",
            category="Figures",
            subcategory=f"scale {SCALE_NAME}",
            labels={"figure": BENCH_FIGURE},
        ),
    log:
        f"{ROOT}/logs/figures/{BENCH_FIGURE}.log",
    conda:
        "../envs/pods.yaml"
    params:
        caption=FIGURES[BENCH_FIGURE],
    shell:
        "python {input.script} --bench {input.bench} --out {output.pdf} > {log} 2>&1"


rule figure:
    input:
        unpack(get_figure_input),
    output:
        pdf=f"{ROOT}/figures/{{name}}.pdf",
        png=report(
            f"{ROOT}/figures/{{name}}.png",
            caption="../report/figure.rst",
            category="Figures",
            subcategory=f"scale {SCALE_NAME}",
            labels={"figure": "{name}"},
        ),
    log:
        f"{ROOT}/logs/figures/{{name}}.log",
    conda:
        "../envs/pods.yaml"
    params:
        caption=figure_caption,
        # step budgets (tiny, smoke): curves against optimizer steps, the same whatever the machine's load
        x=FIGURE_X,
    shell:
        "python {input.script} --curves {input.curves} --steps {input.steps} --x {params.x}"
        " --out {output.pdf} > {log} 2>&1"
