"""Fig. 3 (a)-(f): test accuracy vs training wall-clock (mean +- 1.96 SEM over seeds) and seconds
per (global) step, baseline (GRPO, or GRPO-GA for e-f) vs GRPO-PODS, one row per setting present.

    python figures/fig_3_main.py --curves results/tables/curves.csv --steps results/tables/steps.csv \
        --out results/figures/fig_3_main.pdf
"""

import figlib as F

args = F.parser(__doc__).parse_args()
curves, steps = F.load(args)
settings = [] if curves is None else sorted(s for s in curves["setting"].unique() if F.S.main_comparison(curves, s))
rows = max(len(settings), 1)
fig, axes = F.plt.subplots(
    rows, 2, figsize=(9, 2.6 * rows), squeeze=False, gridspec_kw={"width_ratios": [3, 1]}, constrained_layout=True
)
if not settings:
    F.placeholder(
        axes[0, 0],
        "no setting has both a baseline (n == m) and a PODS arm (n > m, "
        "max-variance): train the main runs of settings a-f",
    )
    F.placeholder(axes[0, 1], "no runs")
for row, s in zip(axes, settings, strict=False):
    groups = F.main_groups(curves, s)
    metric = F.R.setting_metric(s)
    F.curve_panel(row[0], curves, s, groups, metric=metric)
    row[0].set_title(F.title(curves, s) + ("  [format + answer correct]" if metric != "accuracy" else ""))
    F.bar_panel(row[1], steps, s, groups)
F.save(fig, args.out)
