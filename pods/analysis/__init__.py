"""The analysis: run directories and the authors' released logs -> tidy tables -> the paper's statistics.

Everything the figures and the time-to-peak table show is computed here, so it can be tested; the
scripts in `figures/` only select and plot. The work is split by job:
- pods.analysis.tidy: the tidy-table contract (columns, input checks, arm labels, sheet roles, table readers);
- pods.analysis.collect: our run directories -> tidy tables (`load_runs`, `load_run_steps`);
- pods.analysis.released: the authors' released logs -> tidy tables;
- pods.analysis.released_logs: the released logs' download and SHA-256 verification;
- pods.analysis.curves: mean curves over seeds, first reach of a target, one arm's seed matrices;
- pods.analysis.speedups: time-to-peak, bootstrap, the speed-up table and its comparisons;
- pods.analysis.plateau: has an arm's mean curve stopped rising (the plateau table, the baseline's columns);
- pods.analysis.levels: the speed-up at fixed accuracy levels (budget-free where both arms reach a level);
- pods.analysis.power: the projected interval width with N seeds per arm;
- pods.analysis.ablations: what the sweeps and ablations show (Figs. 4-6), beside the released logs;
- pods.analysis.gradsignal: the share of steps without a gradient, per arm;
- pods.analysis.cost: the GPU-hours of a scale (`pods cost`);
- pods.analysis.cli: the command line, ``python -m pods.analysis`` and ``pods analysis``.
This module imports none of them, so that a light one (released_logs) does not load pandas.
"""
