"""Fig. 7 (App. A.5): the (a) and (b) models, baseline vs GRPO-PODS, evaluated on other test sets
(GSM8K Platinum and MATH-500) over training time. The released logs have MATH-500 for (a) only.

    python figures/fig_7_transfer.py --curves results/tables/curves.csv \
        --out results/figures/fig_7_transfer.pdf [--settings a b] [--datasets gsm8k_platinum math]
"""

import figlib as F

ap = F.parser(__doc__)
ap.add_argument("--settings", nargs="+", default=["a", "b"])
ap.add_argument("--datasets", nargs="+", default=["gsm8k_platinum", "math"])
args = ap.parse_args()
curves, _ = F.load(args)
fig, axes = F.plt.subplots(
    len(args.settings),
    len(args.datasets),
    squeeze=False,
    figsize=(4.5 * len(args.datasets), 2.8 * len(args.settings)),
    constrained_layout=True,
)
for row, s in zip(axes, args.settings, strict=False):
    groups = F.main_groups(curves, s)
    for ax, ds in zip(row, args.datasets, strict=False):
        have = curves is not None and len(F.A.select(curves, setting=s, dataset=ds)) > 0
        if not groups or not have:
            F.placeholder(
                ax,
                f"({s}) no GRPO and GRPO-PODS runs evaluated on {ds}: add {ds} to "
                f"eval.datasets of setting ({s}) and run `pods eval`",
            )
            continue
        F.curve_panel(ax, curves, s, groups, dataset=ds)
        ax.set_title(f"{F.title(curves, s)} on {F.DATASET_LABEL.get(ds, ds)}")
F.save(fig, args.out)
