# From run directories to tidy tables and the time-to-peak table (pods_repro.analysis does the work): the
# eval-grid speed-up and three more (optimizer steps, this machine's wall-clock, the paper's hardware).


rule collect:
    input:
        # Exactly the runs of the active scale: the tables are never built from a partial DAG.
        summaries=get_run_summaries,
        experiments=get_experiments,
        sheet=SCALE["runs"],  # its `role` column: each setting's baseline and PODS runs
    output:
        curves=f"{ROOT}/tables/curves.csv",
        steps=f"{ROOT}/tables/steps.csv",
    log:
        f"{ROOT}/logs/collect.log",
    conda:
        "../envs/pods.yaml"
    params:
        # The run directories of the sheet, listed: a manual `pods train` run under the same root
        # (e.g. results/runs/tiny_a/...) is never merged in as an extra seed.
        run_dirs=lambda wildcards, input: [os.path.dirname(s) for s in input.summaries],
        out_dir=lambda wildcards, output: os.path.dirname(output.curves),
        letters=get_letters,
    shell:
        "python -m pods_repro.analysis collect --run-dirs {params.run_dirs:q} --out-dir {params.out_dir}"
        " --letters {params.letters:q} --sheet {input.sheet:q} > {log} 2>&1"


rule time_to_peak:
    input:
        # curves, this machine's steps.csv and (unless released_logs: none) the released steps.csv
        unpack(get_time_to_peak_input),
    output:
        csv=report(
            f"{ROOT}/tables/time_to_peak.csv",
            caption="../report/time_to_peak.rst",
            category="Time-to-peak (Table 3)",
            subcategory=f"scale {SCALE_NAME}",
        ),
        md=f"{ROOT}/tables/time_to_peak.md",
        tex=f"{ROOT}/tables/time_to_peak.tex",
    log:
        f"{ROOT}/logs/time_to_peak.log",
    conda:
        "../envs/pods.yaml"
    params:
        out_dir=lambda wildcards, output: os.path.dirname(output.csv),
        paper_steps=lambda wildcards, input: (
            f"--paper-steps {input.paper_steps} --paper-curves {input.paper_curves}"
            if "paper_steps" in input.keys()
            else ""
        ),
    shell:
        "python -m pods_repro.analysis time-to-peak --curves {input.curves} --steps {input.steps}"
        " {params.paper_steps} --out-dir {params.out_dir} > {log} 2>&1"


rule plateau:
    # Has each arm's mean curve stopped rising (its peak before the last 20% of the budget, for every arm, with the
    # share of seed resamples that agree, the late gain and the second-half trend)? For our runs and
    # for the authors' released logs alike.
    input:
        curves="{tables}/curves.csv",
    output:
        csv="{tables}/plateau.csv",
        md="{tables}/plateau.md",
    log:
        "{tables}/logs/plateau.log",
    wildcard_constraints:
        tables=f"{re.escape(ROOT)}/tables|results/released",
    conda:
        "../envs/pods.yaml"
    params:
        out_dir=lambda wildcards, output: os.path.dirname(output.csv),
    shell:
        "python -m pods_repro.analysis plateau --curves {input.curves} --out-dir {params.out_dir} > {log} 2>&1"


rule levels:
    # The speed-up at fixed accuracy levels (pods_repro/analysis/levels.py): the steps each arm's mean curve needs to
    # first reach fractions of the baseline's rise, and their ratio, with intervals over seeds. Unlike
    # time-to-peak it does not move with the budget at a level both arms reach.
    input:
        curves="{tables}/curves.csv",
    output:
        csv="{tables}/levels.csv",
        md="{tables}/levels.md",
    log:
        "{tables}/logs/levels.log",
    wildcard_constraints:
        tables=f"{re.escape(ROOT)}/tables|results/released",
    conda:
        "../envs/pods.yaml"
    params:
        out_dir=lambda wildcards, output: os.path.dirname(output.csv),
    shell:
        "python -m pods_repro.analysis levels --curves {input.curves} --out-dir {params.out_dir} > {log} 2>&1"


rule seeds:
    # How wide would (a)'s and (e)'s steps-to-peak intervals be with N seeds per arm (the tiny scale aims at
    # 1.0 or less)? The time-to-peak table's interval over experiments simulated from a trend + noise model
    # fitted to the runs (pods_repro/analysis/power.py); optimistic, so a width it cannot reach is out of reach.
    # Settings with one seed per arm are skipped. 200 experiments per N: each is a bootstrap of its own, and
    # 200 fix the median width to about 0.1.
    input:
        curves=f"{ROOT}/tables/curves.csv",
    output:
        csv=f"{ROOT}/tables/seeds.csv",
        md=f"{ROOT}/tables/seeds.md",
    log:
        f"{ROOT}/logs/seeds.log",
    conda:
        "../envs/pods.yaml"
    params:
        out_dir=lambda wildcards, output: os.path.dirname(output.csv),
    shell:
        "python -m pods_repro.analysis seeds --curves {input.curves} --out-dir {params.out_dir} --sims 200 > {log} 2>&1"


rule ablations:
    # What the n/m sweeps and the rule/normalisation ablations show (Figs. 4-6) as numbers: each arm's
    # late-window accuracy minus GRPO-PODS's, with intervals over seeds, beside the same arms of the
    # authors' released logs (per hour and per step) and the paper's text (pods_repro/analysis/ablations.py).
    input:
        unpack(get_ablations_input),
    output:
        csv=f"{ROOT}/tables/ablations.csv",
        md=f"{ROOT}/tables/ablations.md",
    log:
        f"{ROOT}/logs/ablations.log",
    conda:
        "../envs/pods.yaml"
    params:
        out_dir=lambda wildcards, output: os.path.dirname(output.csv),
        released=lambda wildcards, input: (f"--released {input.released}" if "released" in input.keys() else ""),
    shell:
        "python -m pods_repro.analysis ablations --curves {input.curves} {params.released}"
        " --out-dir {params.out_dir} > {log} 2>&1"


rule signal:
    # How many optimizer steps carry a gradient: per arm, the share of steps whose trained rollouts all got
    # one reward (zero advantages), over the run and by quarter, and the same over all n generated
    # rollouts (pods_repro/analysis/gradsignal.py). From our runs' metrics.jsonl; the released logs have no such column.
    input:
        curves=f"{ROOT}/tables/curves.csv",
    output:
        csv=f"{ROOT}/tables/signal.csv",
        md=f"{ROOT}/tables/signal.md",
    log:
        f"{ROOT}/logs/signal.log",
    conda:
        "../envs/pods.yaml"
    params:
        out_dir=lambda wildcards, output: os.path.dirname(output.csv),
    shell:
        "python -m pods_repro.analysis signal --curves {input.curves} --out-dir {params.out_dir} > {log} 2>&1"
