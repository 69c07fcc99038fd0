"""A linear cost model of one GRPO / GRPO-PODS / GRPO-GA step, fitted to bench_asymmetry.py output.

Run:  python -m pods_repro.bench.cost_model results/bench/asymmetry_tiny.csv --out results/bench/cost_model_tiny.csv
      python -m pods_repro.bench.cost_model A.csv B.csv --m 4 16 --ratio 4      (one fit per model in the CSVs)
      python -m pods_repro.bench.cost_model --paper-only                         (only the inversion of the paper's numbers)

Model (seconds per optimizer step, one prompt, n rollouts generated, m of them in the update,
``k = ceil(rows / micro_batch)`` backward passes)::

    t(n, m) = g0 + g1 * n            generation: fixed cost per generate call + marginal cost per rollout
            + u0 * k + u1 * rows     update: fixed cost per backward pass + cost per updated row

so GRPO (n = m) costs ``g0 + u0 + (g1 + u1) m``, GRPO-PODS (n = r m) ``g0 + u0 + (r g1 + u1) m`` and
GRPO-GA over the same r m rollouts in r micro-batches of m ``g0 + r u0 + r (g1 + u1) m``.
(g0, g1) are fitted to the ``gen_time_s`` column and (u0, u1) to ``update_time_s`` by least squares on
*relative* errors (R spans two orders of magnitude; plain least squares would fit only the largest
R), with the coefficients kept non-negative.

When PODS pays off in wall-clock. Let S be how many GRPO steps one PODS step is worth, i.e. the ratio
of the steps each needs to reach the target accuracy (the paper's (a): GRPO reaches 0.99 x its peak at
3.0 h at 7.53 s/step, about 1430 steps; PODS at 1.5 h at 10.08 s/step, about 540 steps: S ~ 2.7).
PODS at n = r m is faster to the target iff ``S > t_PODS / t_GRPO``, i.e. iff

    (u1 + (g0 + u0) / m) / g1  >  (r - S) / (S - 1)          (for S > 1)

the update-plus-overhead cost per kept rollout, in units of the marginal generation cost of one rollout,
must exceed a threshold that falls as the per-step benefit S grows (r = 4: S = 2 needs > 2, S = 2.7 > 0.8).
Against GRPO-GA (same r m rollouts, settings (e)-(f)) PODS is always cheaper per step; it pays off
iff S_GA > t_PODS / t_GA, where S_GA (< 1 allowed) is GA's steps-to-target over PODS's.

The script also inverts the model for the paper's GPUs (the released logs' seconds per step; docs/paper.md):
- (a), 1 L40S: fit ``c + g1 n + u1 m`` (c = g0 + u0, k = 1) to the eight s/step values of the n and m sweeps;
- (e)/(f), 8 GPUs, per global step: each GPU generates n * GA = 512 rollouts in one round (one prompt,
  arXiv 2504.13818 §4.1) and then runs GA micro-batches of 32 rows, so PODS = G + 4 U and GA = G + 16 U with
  G = g0 + 512 g1 and U = u0 + 32 u1: two equations, two unknowns.

Departures: the model ignores sequence-length differences between arms (the paper's completion lengths
differ by arm and over training) and memory effects on generation speed beyond linearity (the paper's
n = 256 point sits above the line); S comes from training runs, not from this benchmark.
"""

from __future__ import annotations

import argparse
import csv
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

REQUIRED = ("rollouts", "gen_time_s", "update_time_s")

# Setting (a) on one L40S: (n, m, seconds per step) of the released n and m sweeps (6 h / mean steps at 6 h).
PAPER_A_SWEEP = [(16, 16, 7.53), (32, 16, 7.89), (64, 16, 10.08), (128, 16, 13.57), (256, 16, 21.23),
                 (64, 8, 9.13), (64, 4, 8.94), (64, 2, 7.91)]  # fmt: skip
# Seconds per optimizer step on 8 GPUs of the released (e)/(f) runs (1800 s / mean optimizer steps at 30 min,
# the steps counted from wandb's `_step` as pods_repro.analysis.released.optimizer_steps settles it; the paper's
# Fig. 3(e)/(f) bars, 21.85 / 10.09 and 39.82 / 9.50, divide by `_step / GA` instead). PODS = 4 micro-batches
# of 32, GA = 16 of 32.
PAPER_GLOBAL = {"e": {"ga": 76.92, "pods": 48.13, "gpus": "8xH100, Qwen2.5-3B"},
                "f": {"ga": 243.24, "pods": 145.16, "gpus": "8xA100, Qwen2.5-7B"}}  # fmt: skip
# (a): hours to reach 0.99 x GRPO's peak (arXiv 2504.13818 Table 3, the released logs), for the steps-based benefit S.
PAPER_A_TIME_TO_TARGET_H = {"grpo": 3.0, "pods": 1.5}


@dataclass(frozen=True)
class CostParams:
    """Seconds: g0 per generate call, g1 per generated rollout, u0 per backward pass, u1 per updated row."""

    g0: float
    g1: float
    u0: float
    u1: float


def _nnls2(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares with non-negative coefficients for 1-2 columns (exhaustive over active sets)."""
    best, best_err = np.zeros(X.shape[1]), float(np.sum(y**2))
    for cols in ([0, 1], [0], [1]) if X.shape[1] == 2 else ([0],):
        coef_c = np.linalg.lstsq(X[:, cols], y, rcond=None)[0]
        if np.any(coef_c < 0):
            continue
        coef = np.zeros(X.shape[1])
        coef[cols] = coef_c
        err = float(np.sum((X @ coef - y) ** 2))
        if err < best_err - 1e-15:
            best, best_err = coef, err
    return best


def fit_line(x_cols: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative coefficients of ``y ~ x_cols @ coef`` minimising squared *relative* error."""
    w = 1.0 / np.maximum(y, 1e-12)
    return _nnls2(x_cols * w[:, None], y * w)


def read_rows(path: Path) -> list[dict]:
    with Path(path).open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"{path} has no data rows; run pods_repro/bench/bench_asymmetry.py --out {path} first")
    missing = [c for c in REQUIRED if c not in rows[0]]
    if missing:
        raise ValueError(
            f"{path} lacks columns {missing}; expected the CSV written by pods_repro/bench/bench_asymmetry.py"
        )
    return rows


def fit(rows: list[dict]) -> CostParams:
    """Fit (g0, g1) to gen_time_s and (u0, u1) to update_time_s; needs >= 2 distinct rollout counts."""
    R = np.array([float(r["rollouts"]) for r in rows])
    if len(set(R.tolist())) < 2:
        raise ValueError(
            "the cost model needs at least two different rollout counts (bench_asymmetry.py --rollouts 8 16 ...)"
        )
    gen = np.array([float(r["gen_time_s"]) for r in rows])
    upd = np.array([float(r["update_time_s"]) for r in rows])
    chunk = np.array([float(r.get("update_chunk") or r["rollouts"]) for r in rows])
    k = np.ceil(R / chunk)  # backward passes in the timed update (1 unless it was run as GA)
    g0, g1 = fit_line(np.stack([np.ones_like(R), R], 1), gen)
    u0, u1 = fit_line(np.stack([k, R], 1), upd)
    return CostParams(float(g0), float(g1), float(u0), float(u1))


def step_time(p: CostParams, n: int, m: int, micro: int | None = None) -> float:
    """Seconds per step generating n rollouts and updating on m rows in micro-batches of ``micro``."""
    k = math.ceil(m / (micro or m))
    return p.g0 + p.g1 * n + p.u0 * k + p.u1 * m


def predict(p: CostParams, m: int, r: int) -> dict:
    """Predicted s/step of GRPO (n = m), PODS (n = r m, keep m), GRPO-GA (r m rollouts, micro m) and
    the break-even benefits: PODS beats GRPO iff S > pods/grpo, and GA iff S_GA > pods/ga."""
    grpo, pods, ga = step_time(p, m, m), step_time(p, r * m, m), step_time(p, r * m, r * m, micro=m)
    kappa = (p.u1 + (p.g0 + p.u0) / m) / p.g1 if p.g1 > 0 else math.inf
    return {"m": m, "r": r, "grpo_s": grpo, "pods_s": pods, "ga_s": ga, "pods_over_grpo": pods / grpo,
            "ga_over_pods": ga / pods, "breakeven_S_vs_grpo": pods / grpo, "breakeven_S_vs_ga": pods / ga,
            "kappa": kappa, "gen_share_grpo": (p.g0 + p.g1 * m) / grpo}  # fmt: skip


def kappa_threshold(S: float, r: int) -> float:
    """PODS at n = r m beats GRPO at m iff kappa = (u1 + (g0+u0)/m)/g1 > (r - S)/(S - 1) (S > 1)."""
    if S <= 1:
        return math.inf
    return max((r - S) / (S - 1), 0.0)


def paper_benefit_a() -> float:
    """S for setting (a): GRPO steps to the target over PODS steps (time to target / s per step)."""
    t = PAPER_A_TIME_TO_TARGET_H
    return (t["grpo"] * 3600 / 7.53) / (t["pods"] * 3600 / 10.08)


def invert_paper() -> list[dict]:
    """Cost parameters implied by the paper's s/step numbers (see the module docstring)."""
    out = []
    A = np.array([[1.0, n, m] for n, m, _ in PAPER_A_SWEEP])
    y = np.array([t for *_, t in PAPER_A_SWEEP])
    c, g1, u1 = np.linalg.lstsq(A, y, rcond=None)[0]
    resid = float(np.sqrt(np.mean((A @ np.array([c, g1, u1]) - y) ** 2)))
    out.append({"setting": "a", "hardware": "1xL40S, Qwen2.5-3B LoRA", "fixed_s": c, "g1_s": g1, "u1_s": u1,
                "u1_over_g1": u1 / g1, "kappa_m16": (u1 + c / 16) / g1, "rms_resid_s": resid,
                "pred_grpo_16": c + 16 * g1 + 16 * u1, "pred_pods_64_16": c + 64 * g1 + 16 * u1,
                "note": "least squares over the 8 (n, m) s/step values of the released sweeps"})  # fmt: skip
    for s, v in PAPER_GLOBAL.items():
        U = (v["ga"] - v["pods"]) / 12  # one GA micro-batch of 32 rows: u0 + 32 u1
        G = v["pods"] - 4 * U  # one generation round of 512 rollouts per GPU: g0 + 512 g1
        out.append({"setting": s, "hardware": v["gpus"], "update_per_microbatch_s": U, "gen_round_s": G,
                    "u1_upper_s": U / 32, "g1_upper_s": G / 512 if G > 0 else float("nan"),
                    "u1_over_g1_if_no_fixed": (U / 32) / (G / 512) if G > 0 else float("nan"),
                    "ga_over_pods": v["ga"] / v["pods"],
                    "note": "PODS = G + 4U, GA = G + 16U per global step" + ("" if G > 0 else
                            "; G < 0: the linear model cannot explain (f) (arms differ in more than the update count,"
                            " e.g. completion lengths)")})  # fmt: skip
    return out


def report(fits: dict[str, CostParams], ms: list[int], r: int, S: float) -> tuple[str, list[dict]]:
    """Text report and long-format CSV rows (source, quantity, value, unit)."""
    lines, rows = [], []

    def add(source: str, quantity: str, value: float, unit: str) -> None:
        rows.append({"source": source, "quantity": quantity, "value": value, "unit": unit})

    for name, p in fits.items():
        lines.append(f"== fit: {name}")
        lines.append(f"   generation: g0 = {p.g0:.4g} s/call + g1 = {p.g1 * 1e3:.4g} ms/rollout")
        lines.append(
            f"   update:     u0 = {p.u0:.4g} s/backward + u1 = {p.u1 * 1e3:.4g} ms/row;  u1/g1 = "
            f"{p.u1 / p.g1 if p.g1 else math.inf:.3g}"
        )
        for k, v in asdict(p).items():
            add(name, k, v, "s")
        for m in ms:
            q = predict(p, m, r)
            lines.append(
                f"   m={m}, n={r * m}: GRPO(n=m) {q['grpo_s']:.3g} s/step, PODS {q['pods_s']:.3g}, GRPO-GA "
                f"{q['ga_s']:.3g}; PODS/GRPO = {q['pods_over_grpo']:.2f}, GA/PODS = {q['ga_over_pods']:.2f}; "
                f"kappa = {q['kappa']:.3g} vs threshold {kappa_threshold(S, r):.3g} at S = {S:.2f} -> PODS "
                f"{'pays off' if q['kappa'] > kappa_threshold(S, r) else 'does not pay off'} against GRPO "
                f"(predicted time-to-target speed-up S / (PODS/GRPO) = {S / q['pods_over_grpo']:.2f})"
            )
            for key in ("grpo_s", "pods_s", "ga_s", "pods_over_grpo", "ga_over_pods", "kappa"):
                add(name, f"{key}@m={m},r={r}", q[key], "s" if key.endswith("_s") else "ratio")
            add(name, f"speedup_at_S@m={m},r={r}", S / q["pods_over_grpo"], "ratio")
    lines.append(
        f"== paper, inverted (the released logs' s/step); S for (a) = {S:.2f} GRPO steps per PODS step, "
        f"threshold on kappa at r={r}: {kappa_threshold(S, r):.2f}"
    )
    for inv in invert_paper():
        if inv["setting"] == "a":
            lines.append(
                f"   (a) {inv['hardware']}: fixed g0+u0 = {inv['fixed_s']:.2f} s, g1 = {inv['g1_s'] * 1e3:.1f} "
                f"ms/rollout, u1 = {inv['u1_s'] * 1e3:.1f} ms/row (u1/g1 = {inv['u1_over_g1']:.2f}), kappa(m=16)"
                f" = {inv['kappa_m16']:.2f}; predicts 16/16 {inv['pred_grpo_16']:.2f} s (paper 7.53), 64/16 "
                f"{inv['pred_pods_64_16']:.2f} s (paper 10.08); rms residual {inv['rms_resid_s']:.2f} s; "
                f"speed-up S / (PODS/GRPO) = {S * inv['pred_grpo_16'] / inv['pred_pods_64_16']:.2f} (Table 3: 2.0)"
            )
        else:
            g1u = inv["g1_upper_s"]
            lines.append(
                f"   ({inv['setting']}) {inv['hardware']}: U = u0 + 32 u1 = {inv['update_per_microbatch_s']:.2f} s "
                f"per micro-batch, G = g0 + 512 g1 = {inv['gen_round_s']:.2f} s per round; u1 <= "
                f"{inv['u1_upper_s'] * 1e3:.1f} ms/row, g1 <= {g1u * 1e3:.1f} ms/rollout; GA/PODS = "
                f"{inv['ga_over_pods']:.2f}"
                + ("" if inv["gen_round_s"] > 0 else "  [" + inv["note"].split("; ")[1] + "]")
            )
        for k, v in inv.items():
            if isinstance(v, float):
                add(f"paper_{inv['setting']}", k, v, "s" if k.endswith("_s") else "ratio")
    add("paper_a", "S_steps_benefit", S, "ratio")
    add("paper_a", f"kappa_threshold@r={r}", kappa_threshold(S, r), "ratio")
    return "\n".join(lines), rows


def main(argv: list[str] | None = None) -> tuple[str, list[dict]]:
    ap = argparse.ArgumentParser(
        allow_abbrev=False,
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[1:]),
    )
    ap.add_argument("csv", nargs="*", type=Path, help="CSV(s) written by bench_asymmetry.py")
    ap.add_argument("--m", type=int, nargs="+", default=[16], help="update sizes m to predict for")
    ap.add_argument("--ratio", type=int, default=4, help="down-sampling ratio r = n/m (paper: 4)")
    ap.add_argument(
        "--benefit",
        type=float,
        default=None,
        help="S, GRPO steps per PODS step to reach the target (default: the paper's (a), ~2.7)",
    )
    ap.add_argument("--paper-only", action="store_true", help="skip fitting; print only the paper inversion")
    ap.add_argument("--out", type=Path, default=None, help="CSV output; the text goes next to it as .txt")
    args = ap.parse_args(argv)
    if not args.csv and not args.paper_only:
        ap.error("give at least one bench_asymmetry.py CSV, or --paper-only")
    if args.ratio < 1 or min(args.m) < 1:
        ap.error("--ratio and --m must be >= 1")
    fits: dict[str, CostParams] = {}
    for path in [] if args.paper_only else args.csv:
        rows = read_rows(path)
        by_model: dict[str, list[dict]] = {}
        for r in rows:
            by_model.setdefault(r.get("model") or path.stem, []).append(r)
        for model, rs in by_model.items():
            fits[f"{path.stem}:{model}" if len(args.csv) > 1 or len(by_model) > 1 else model] = fit(rs)
    S = args.benefit if args.benefit is not None else paper_benefit_a()
    text, rows = report(fits, args.m, args.ratio, S)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["source", "quantity", "value", "unit"])
            w.writeheader()
            w.writerows(rows)
        args.out.with_suffix(".txt").write_text(text + "\n")
        print(f"wrote {args.out} and {args.out.with_suffix('.txt')}")
    return text, rows
