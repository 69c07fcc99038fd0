"""Every figure script renders a PDF and a PNG, from the released logs, from fake run directories,
and (as placeholder panels) from missing inputs. Scripts run in-process (runpy) to share imports."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

from pods_repro.analysis.cli import main as analysis_main

REPO = Path(__file__).resolve().parents[2]
FIGURES = REPO / "figures"
RELEASED = REPO.parent / "shared" / "reference" / "pods-released-results"
CURVE_SCRIPTS = ["fig_3_main", "fig_4_sweeps", "fig_5_rules", "fig_6_normalization", "fig_7_transfer", "fig_8_lengths"]


def render(monkeypatch, script: str, *args: str, out: Path) -> Path:
    monkeypatch.setattr(sys, "argv", [f"{script}.py", *args, "--out", str(out)])
    monkeypatch.syspath_prepend(str(FIGURES))
    runpy.run_path(str(FIGURES / f"{script}.py"), run_name="__main__")
    for suffix in (".pdf", ".png"):
        path = out.with_suffix(suffix)
        assert path.exists(), path
        assert path.stat().st_size > 1000, path
    return out


@pytest.fixture(scope="module")
def released_tables(tmp_path_factory):
    if not RELEASED.is_dir():
        pytest.skip(f"authors' released logs not found at {RELEASED} (../shared/reference)")
    out = tmp_path_factory.mktemp("released")
    assert analysis_main(["released", "--logs", str(RELEASED), "--out-dir", str(out), "--n-boot", "100"]) == 0
    return out


@pytest.fixture(scope="module")
def fake_tables(tmp_path_factory, analysis_helpers):
    helpers = analysis_helpers
    root = helpers.fake_tree(tmp_path_factory.mktemp("runs"))
    out = tmp_path_factory.mktemp("tables")
    sheet = helpers.fake_sheet(out / "runs.tsv")
    assert analysis_main(["collect", "--runs", str(root), "--out-dir", str(out), "--sheet", str(sheet)]) == 0
    return out


@pytest.mark.parametrize("script", CURVE_SCRIPTS)
def test_curve_figures_on_released_logs(monkeypatch, tmp_path, released_tables, script):
    args = ["--curves", str(released_tables / "curves.csv")]
    if script != "fig_7_transfer" and script != "fig_8_lengths":
        args += ["--steps", str(released_tables / "steps.csv")]
    render(monkeypatch, script, *args, out=tmp_path / f"{script}.pdf")


@pytest.mark.parametrize("script", CURVE_SCRIPTS)
def test_curve_figures_on_fake_runs(monkeypatch, tmp_path, fake_tables, script):
    args = ["--curves", str(fake_tables / "curves.csv"), "--steps", str(fake_tables / "steps.csv")]
    if script == "fig_7_transfer":
        args = [*args[:2], "--settings", "a", "e"]
    render(monkeypatch, script, *args, out=tmp_path / "out" / f"{script}.pdf")


@pytest.mark.parametrize("script", CURVE_SCRIPTS)
def test_curve_figures_placeholder_when_curves_missing(monkeypatch, tmp_path, script):
    render(monkeypatch, script, "--curves", str(tmp_path / "absent.csv"), out=tmp_path / f"{script}.pdf")


def test_fig_1_asymmetry(monkeypatch, tmp_path):
    bench = tmp_path / "bench.csv"
    bench.write_text(
        "rollouts,step_time_s,gen_time_s,update_time_s,gen_tokens,per_token_gen_ms,update_oom\n"
        "8,2.0,1.5,0.5,800,1.9,False\n8,2.2,1.7,0.5,800,2.1,False\n64,4.0,3.0,1.0,6400,0.5,False\n"
        "256,9.0,9.0,,25600,0.3,True\n"
    )
    render(monkeypatch, "fig_1_asymmetry", "--bench", str(bench), out=tmp_path / "fig_1.pdf")
    render(monkeypatch, "fig_1_asymmetry", "--bench", str(tmp_path / "none.csv"), out=tmp_path / "fig_1b.pdf")


# ---------------------------------------------------------------------------------------------------
# The tiny scale's figures are real: Fig. 7 plots the tiny analogues of GSM8K
# Platinum and MATH-500, titles name the analogue, Fig. 8's length axis shows the whole range.


@pytest.fixture(scope="module")
def tiny_tables(tmp_path_factory, analysis_helpers):
    helpers = analysis_helpers
    root = tmp_path_factory.mktemp("tiny_runs")
    sets = ("arith", "arith_heldout", "arith_hard")
    for name in ("tiny_a", "tiny_b"):
        for seed in (0, 1):
            for n, accs, lengths in ((16, [0.3, 0.32, 0.35, 0.36], [60.0, 60.4, 60.8, 61.0]),
                                     (64, [0.3, 0.36, 0.38, 0.38], [60.0, 60.2, 60.5, 60.9])):  # fmt: skip
                helpers.write_run(root, name, n, 16, seed, accs, datasets=sets, lengths=lengths, every_s=10.0)
    out = tmp_path_factory.mktemp("tiny_tables")
    sheet = out / "runs.tsv"
    rows = [f"{s}\tmax_variance\t{n}\t16\t\t{role}\tmain\tfig_3_main\tfake" for s in "ab"
            for n, role in ((16, "baseline"), (64, "pods"))]  # fmt: skip
    sheet.write_text("setting\trule\tn\tm\textra\trole\tseeds\tfigures\tnote\n" + "\n".join(rows) + "\n")
    args = [
        "collect",
        "--runs",
        str(root),
        "--out-dir",
        str(out),
        "--sheet",
        str(sheet),
        "--letters",
        "tiny_a=a,tiny_b=b",
    ]
    assert analysis_main(args) == 0
    return out


def _drawn(monkeypatch, script, *args, out):
    """Render `script`, returning (its figure, the placeholder texts it drew)."""
    monkeypatch.syspath_prepend(str(FIGURES))
    import figlib

    placeholders, figs = [], []
    real_placeholder, real_save = figlib.placeholder, figlib.save
    monkeypatch.setattr(figlib, "placeholder", lambda ax, text: (placeholders.append(text), real_placeholder(ax, text)))
    monkeypatch.setattr(figlib, "save", lambda fig, path: (figs.append(fig), real_save(fig, path)))
    render(monkeypatch, script, *args, out=out)
    (fig,) = figs
    return fig, placeholders


def test_fig_7_plots_the_tiny_analogues(monkeypatch, tmp_path, tiny_tables):
    fig, placeholders = _drawn(
        monkeypatch, "fig_7_transfer", "--curves", str(tiny_tables / "curves.csv"), out=tmp_path / "f7.pdf"
    )
    assert placeholders == []
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert len(titles) == 4
    assert sum("(a) 2-digit arithmetic, Llama layout" in t for t in titles) == 2
    assert sum("(b) 2-digit arithmetic, Qwen2 layout, KL" in t for t in titles) == 2
    assert sum("GSM8K Platinum analogue" in t for t in titles) == 2
    assert sum("MATH-500 analogue" in t for t in titles) == 2


def test_fig_7_says_not_evaluated_where_a_set_is_absent(monkeypatch, tmp_path, fake_tables):
    _, placeholders = _drawn(
        monkeypatch, "fig_7_transfer", "--curves", str(fake_tables / "curves.csv"), out=tmp_path / "f7.pdf"
    )
    # a_toy evaluated MATH-500 (PODS arm) but not GSM8K Platinum; there is no (b)
    assert any("not evaluated at this scale" in p and "GSM8K Platinum" in p for p in placeholders), placeholders


def test_fig_8_length_axis_shows_the_whole_range(monkeypatch, tmp_path, tiny_tables):
    fig, placeholders = _drawn(
        monkeypatch, "fig_8_lengths", "--curves", str(tiny_tables / "curves.csv"), out=tmp_path / "f8.pdf"
    )
    assert placeholders == []
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert len(panels) == 2
    for ax in panels:
        lo, hi = ax.get_ylim()
        assert lo == 0, (ax.get_title(), lo, hi)  # lengths of 60-61 tokens, drawn from 0
        assert hi >= 61.0, (ax.get_title(), lo, hi)
        assert "(a) 2-digit" in ax.get_title() or "(b) 2-digit" in ax.get_title()


def test_ablation_figures_compare_arms_over_the_shortest_arms_span(
    monkeypatch, tmp_path_factory, tmp_path, analysis_helpers
):
    """Figs. 4-6 cut every curve at the shortest arm's last evaluation (the tiny scale trains its sweeps
    60 steps, the main arms they share 600) and say so on the x axis; Fig. 3 keeps whole curves."""
    helpers = analysis_helpers
    root = tmp_path_factory.mktemp("ragged_runs")
    for seed in (0, 1):
        helpers.write_run(root, "tiny_a", 16, 16, seed, [0.3, 0.32, 0.35, 0.36, 0.37, 0.38], every_s=10.0)
        helpers.write_run(root, "tiny_a", 64, 16, seed, [0.3, 0.36, 0.38, 0.39, 0.40, 0.41], every_s=10.0)
        helpers.write_run(root, "tiny_a", 32, 16, seed, [0.3, 0.33, 0.37], every_s=10.0)
    out = tmp_path_factory.mktemp("ragged_tables")
    sheet = out / "runs.tsv"
    rows = [
        "a\tmax_variance\t16\t16\t\tbaseline\tmain\tfig_3_main,fig_4_sweeps\tfake",
        "a\tmax_variance\t64\t16\t\tpods\tmain\tfig_3_main,fig_4_sweeps\tfake",
        "a\tmax_variance\t32\t16\t\t\tablation\tfig_4_sweeps\tfake",
    ]
    sheet.write_text("setting\trule\tn\tm\textra\trole\tseeds\tfigures\tnote\n" + "\n".join(rows) + "\n")
    args = ["collect", "--runs", str(root), "--out-dir", str(out), "--sheet", str(sheet), "--letters", "tiny_a=a"]
    assert analysis_main(args) == 0
    curves = str(out / "curves.csv")
    fig, _ = _drawn(monkeypatch, "fig_4_sweeps", "--curves", curves, "--x", "steps", out=tmp_path / "f4.pdf")
    n_sweep = next(ax for ax in fig.axes if ax.get_title().startswith("(a) n sweep"))
    ends = {line.get_label(): max(line.get_xdata()) for line in n_sweep.get_lines()}
    assert set(ends) == {"$N = 16$", "$N = 32$", "$N = 64$"}
    assert len(set(ends.values())) == 1, ends  # all cut at the n=32 sweep's last evaluation
    assert "cut at" in n_sweep.get_xlabel()
    fig, _ = _drawn(monkeypatch, "fig_3_main", "--curves", curves, "--x", "steps", out=tmp_path / "f3.pdf")
    main = next(ax for ax in fig.axes if ax.get_title().startswith("(a)"))
    assert max(max(line.get_xdata()) for line in main.get_lines()) > max(ends.values())
    assert "cut at" not in main.get_xlabel()


def test_the_cut_label_rounds_a_measured_time_and_keeps_steps_whole(monkeypatch):
    """figlib.cut_text: Figs. 4-6's x label read "cut at 67.2167 seconds" for a measured training time."""
    monkeypatch.syspath_prepend(str(FIGURES))
    import figlib

    assert figlib.cut_text(67.2167, 1.0, "seconds", "time_s") == "67.2 seconds"
    assert figlib.cut_text(21600.0, 3600.0, "hours", "time_s") == "6 hours"
    assert figlib.cut_text(1000.0, 1.0, "", "step") == "1000"
    assert figlib.cut_text(200.0, 1.0, "", "step") == "200"
