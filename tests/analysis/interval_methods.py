"""The interval methods the coverage study compared and the analysis does not use (pods_repro/analysis/intervals.py
keeps the recommended ones): the basic, BCa and bootstrap-t intervals, and any of the six on a statistic of one
arm's mean curve (`curve_stat_interval`). tests/analysis/test_intervals.py checks that each gives ordered bounds."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from pods_repro.analysis import intervals as I
from pods_repro.analysis.intervals import (
    _batch,
    _both_ends,
    _check_ci,
    _order_stat,
    _out,
    expanded_ends,
    jackknife_se,
    jackknife_t_ends,
    jackknife_weights,
    normal_cdf,
    normal_quantile,
    percentile_ends,
    resample_counts,
    weighted_curves,
)

METHODS = ("percentile", "basic", "expanded", "bca", "jackknife_t", "studentized")


def ratio_ends(method: str, base_S_T, pods_S_T, steps_T, *, rng, n_boot: int, ci: float = 0.95) -> tuple:
    """(point, low, high) of the steps-to-target speed-up (`intervals.ratio_interval`'s statistic and resamples)
    under any of the methods but "studentized"."""
    point, boot, jack_b, jack_p, n = I.ratio_resamples(base_S_T, pods_S_T, steps_T, rng=rng, n_boot=n_boot, ci=ci)
    if method == "basic":
        low, high = basic_ends(boot, point, ci, log=True)
    elif method == "bca":
        low, high = bca_ends(boot, point, [jack_b, jack_p], ci)
    else:
        low, high = I._ratio_ends(method, point, boot, jack_b, jack_p, ci, n)
    return _out(point), _out(low), _out(high)


def basic_ends(samples, point, ci: float, log: bool) -> tuple[np.ndarray, np.ndarray]:
    """Basic (reflected) bootstrap: 2 point - q_{1-a}, 2 point - q_a; on the log scale for ratios."""
    lo, hi = percentile_ends(samples, ci)
    if log:
        with np.errstate(divide="ignore", invalid="ignore"):
            return point**2 / hi, np.where(lo > 0, point**2 / np.where(lo > 0, lo, 1.0), np.inf)
    return 2 * point - hi, 2 * point - lo


def _acceleration(jack_groups: Sequence[np.ndarray]) -> np.ndarray:
    """BCa acceleration from leave-one-seed-out values of each independent arm ((E, n) each)."""
    num = 0.0
    den = 0.0
    for jack in jack_groups:
        n = jack.shape[-1]
        u = (n - 1) * (jack.mean(axis=-1, keepdims=True) - jack)
        num = num + (u**3).sum(axis=-1) / n**3
        den = den + (u**2).sum(axis=-1) / n**2
    with np.errstate(invalid="ignore", divide="ignore"):
        a = num / (6.0 * den**1.5)
    return np.where(np.isfinite(a), a, 0.0)


def bca_ends(samples, point, jack_groups, ci: float) -> tuple[np.ndarray, np.ndarray]:
    """Bias-corrected and accelerated percentile interval (ties with the point count half)."""
    b = samples.shape[-1]
    p0 = (np.sum(samples < point[..., None], axis=-1) + 0.5 * np.sum(samples == point[..., None], axis=-1)) / b
    p0 = np.clip(p0, 0.5 / b, 1 - 0.5 / b)
    z0 = np.vectorize(normal_quantile)(p0)
    a = _acceleration([np.where(np.isfinite(j), j, np.nan) for j in jack_groups])
    a = np.where(np.isfinite(a), a, 0.0)
    za = normal_quantile((1.0 - ci) / 2.0)
    ends = []
    for z in (za, -za):
        w = z0 + (z0 + z) / (1.0 - a * (z0 + z))
        ends.append(np.vectorize(normal_cdf)(w))
    return _both_ends(samples, ends[0], 1.0 - ends[1])


def studentized_ends(samples, point, boot_se, se, ci: float) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap-t: point - q_{1-a}(t*) se, point - q_a(t*) se with t* = (theta* - point) / se*
    (se*: the jackknife SE inside each resample; 0 / 0 counts as unbounded on both sides)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (samples - point[..., None]) / boot_se
    a = (1.0 - ci) / 2.0
    t_lo = _order_stat(np.where(np.isnan(t), -np.inf, t), a, upper=False)
    t_hi = _order_stat(np.where(np.isnan(t), np.inf, t), a, upper=True)
    return point - t_hi * se, point - t_lo * se


def curve_stat_interval(
    values_S_T,
    stat: Callable[[np.ndarray], np.ndarray],
    *,
    rng: np.random.Generator,
    n_boot: int = 4000,
    ci: float = 0.95,
    method: str | Sequence[str] = "expanded",
) -> dict:
    """A statistic of one arm's mean curve over seeds (`stat`: curves (..., T) -> (...), e.g.
    `late_gain_from_curves`) with its bootstrap interval over the arm's seeds. Methods as in
    `ratio_interval`, plus "studentized" (bootstrap-t with a jackknife SE inside each resample: S times
    the work). Returns point, low, high, method."""
    v = _batch(values_S_T, "values")
    _check_ci(ci)
    e, n, t = v.shape
    if n < 2:
        raise ValueError(f"curve_stat_interval: {n} seed(s); an interval over seeds needs at least 2")
    for m in [method] if isinstance(method, str) else method:
        if m not in METHODS:
            raise ValueError(f"method={m!r}: choose one of {', '.join(METHODS)}")
    w = resample_counts(rng, n, n_boot, e)
    point = stat(weighted_curves(v, np.ones((e, 1, n)))[:, 0])
    boot = stat(weighted_curves(v, w))
    jack = stat(weighted_curves(v, np.broadcast_to(jackknife_weights(n), (e, n, n))))

    def finish(m: str) -> dict:
        if m == "percentile":
            lo, hi = percentile_ends(boot, ci)
        elif m == "expanded":
            lo, hi = expanded_ends(boot, ci, n)
        elif m == "basic":
            lo, hi = basic_ends(boot, point, ci, log=False)
        elif m == "bca":
            lo, hi = bca_ends(boot, point, [jack], ci)
        elif m == "jackknife_t":
            lo, hi = jackknife_t_ends(point, [jack], ci, log=False)
        else:
            lo, hi = studentized_ends(boot, point, _resample_jackknife_se(v, w, stat), jackknife_se([jack]), ci)
        return {"point": _out(point), "low": _out(lo), "high": _out(hi), "method": m}

    return finish(method) if isinstance(method, str) else {m: finish(m) for m in method}


def _resample_jackknife_se(v, w, stat) -> np.ndarray:
    """(E, B) jackknife SE inside each resample: leave out one draw of each drawn seed in turn."""
    e, n_boot, n = w.shape
    out = np.empty((e, n_boot))
    for i in range(e):
        loo = np.maximum(w[i][:, None, :] - np.eye(n)[None], 0.0).reshape(1, -1, n)  # (1, B S, S)
        vals = stat(weighted_curves(v[i : i + 1], loo)).reshape(n_boot, n)
        mean = (w[i] * vals).sum(-1) / n
        out[i] = np.sqrt((n - 1) / n * (w[i] * (vals - mean[:, None]) ** 2).sum(-1))
    return out
