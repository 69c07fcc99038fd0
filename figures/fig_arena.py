"""The selection arena, one condition: accuracy of every arm against optimizer steps and against compute (completion
tokens generated + trained), mean over seeds, and each arm's tokens per step.

    python figures/fig_arena.py --curves results/arena/tables/arena_curves.csv \
        --steps results/arena/tables/arena_steps.csv --condition base --out results/arena/figures/fig_arena_base.pdf
"""

import argparse

import figlib as F
import pandas as pd

ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.strip().splitlines()[0])
ap.add_argument("--curves", required=True, help="arena_curves.csv (pods analysis arena)")
ap.add_argument("--steps", required=True, help="arena_steps.csv (pods analysis arena)")
ap.add_argument("--condition", required=True, help="a condition of the arena, e.g. base")
ap.add_argument("--out", required=True, help="output .pdf (a .png is written beside it)")
args = ap.parse_args()
curves = pd.read_csv(args.curves)
steps = pd.read_csv(args.steps)
curves = curves[curves.condition == args.condition]
steps = steps[steps.condition == args.condition]
fig, (ax_s, ax_t, ax_b) = F.plt.subplots(
    1, 3, figsize=(12, 3.4), gridspec_kw={"width_ratios": [3, 3, 2]}, constrained_layout=True
)
if curves.empty:
    for ax in (ax_s, ax_t, ax_b):
        F.placeholder(ax, f"condition {args.condition} has no arena runs: snakemake arena")
else:
    arms = list(dict.fromkeys(curves.arm))
    steps = steps.assign(compute=steps.gen_tokens.fillna(0) + steps.trained_tokens.fillna(0))
    steps = steps.sort_values("step")
    steps["cum"] = steps.groupby(["arm", "seed"]).compute.cumsum()
    cmap = F.plt.get_cmap("tab20")
    for i, arm in enumerate(arms):
        c = curves[curves.arm == arm]
        mean = c.groupby("step").accuracy.mean()
        style = dict(color=cmap(i % 20), lw=2.0 if arm in ("grpo", "pods") else 1.0, label=arm)
        ax_s.plot(mean.index, mean.values, **style)
        cum = steps[steps.arm == arm].groupby("step").cum.mean()
        x = [0.0] + [float(cum.get(s, float("nan"))) for s in mean.index[1:]]
        ax_t.plot(x, mean.values, **style)
    ax_s.set_xlabel("optimizer step")
    ax_t.set_xlabel("completion tokens generated + trained")
    for ax in (ax_s, ax_t):
        ax.set_ylabel("test accuracy (mean over seeds)")
    ax_s.set_title(f"arena, condition {args.condition}: per step")
    ax_t.set_title("per unit of compute")
    per_step = steps.groupby("arm")[["gen_tokens", "trained_tokens"]].mean().reindex(arms)
    ax_b.barh(arms, per_step.gen_tokens, color="0.7", label="generated")
    ax_b.barh(arms, per_step.trained_tokens, color="0.3", label="trained")
    ax_b.set_xlabel("tokens per step")
    ax_b.invert_yaxis()
    ax_b.legend(fontsize=7)
    ax_s.legend(fontsize=6, ncol=2)
F.save(fig, args.out)
