"""Fig. 7 (App. A.5): the (a) and (b) models, baseline vs GRPO-PODS, evaluated on other test sets
(GSM8K Platinum and MATH-500) over training time. The released logs have MATH-500 for (a) only.

At the tiny and smoke scales each paper set is replaced by its analogue (pods_repro.registry
TRANSFER_ANALOGUES), which experiments/tiny_a.yaml and tiny_b.yaml evaluate during the runs:
arith_heldout (2-digit problems in no training set) for GSM8K Platinum, the 3-digit arith_hard test
set for MATH-500. A panel whose set was not evaluated says so.

    python figures/fig_7_transfer.py --curves results/tables/curves.csv \
        --out results/figures/fig_7_transfer.pdf [--settings a b] [--datasets gsm8k_platinum math]
"""

import figlib as F

ap = F.parser(__doc__)
ap.add_argument("--settings", nargs="+", default=["a", "b"])
ap.add_argument("--datasets", nargs="+", default=["gsm8k_platinum", "math"])
args = ap.parse_args()
curves, _ = F.load(args)


def evaluated_set(setting: str, paper_set: str) -> str | None:
    """The paper's set if the setting's runs were evaluated on it, else its tiny analogue, else None."""
    if curves is None:
        return None
    for ds in (paper_set, F.R.TRANSFER_ANALOGUES.get(paper_set)):
        if ds and len(F.T.select(curves, setting=setting, dataset=ds)) > 0:
            return ds
    return None


fig, axes = F.plt.subplots(
    len(args.settings),
    len(args.datasets),
    squeeze=False,
    figsize=(4.5 * len(args.datasets), 2.8 * len(args.settings)),
    constrained_layout=True,
)
for row, s in zip(axes, args.settings, strict=False):
    groups = F.main_groups(curves, s)
    for ax, paper_set in zip(row, args.datasets, strict=False):
        ds = evaluated_set(s, paper_set)
        label = F.DATASET_LABEL.get(paper_set, paper_set)
        if ds is None:
            analogue = F.R.TRANSFER_ANALOGUES.get(paper_set)
            names = f"{paper_set} (or its analogue {analogue})" if analogue else paper_set
            F.placeholder(
                ax,
                f"({s}) {label}: not evaluated at this scale. Add {names} to eval.datasets "
                f"of setting ({s}) to fill this panel",
            )
            continue
        if not groups:
            F.placeholder(ax, f"({s}) on {F.DATASET_LABEL.get(ds, ds)}: no baseline and GRPO-PODS runs")
            continue
        F.curve_panel(ax, curves, s, groups, dataset=ds)
        ax.set_title(f"{F.title(curves, s)}\non {F.DATASET_LABEL.get(ds, ds)}")
F.save(fig, args.out)
