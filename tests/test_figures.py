"""Every figure script renders a PDF and a PNG, from the released logs, from fake run directories,
and (as placeholder panels) from missing inputs. Scripts run in-process (runpy) to share imports."""

from __future__ import annotations

import importlib.util
import runpy
import sys
from pathlib import Path

import pytest

from pods import analysis as A

REPO = Path(__file__).resolve().parents[1]
FIGURES = REPO / "figures"
RELEASED = REPO.parent / "shared" / "reference" / "pods-released-results"
CURVE_SCRIPTS = ["fig_3_main", "fig_4_sweeps", "fig_5_rules", "fig_6_normalization", "fig_7_transfer", "fig_8_lengths"]


def _helpers():
    # test_analysis.py holds the fake-run writer; load it by path (works in any pytest import mode).
    spec = importlib.util.spec_from_file_location("_pods_test_analysis", Path(__file__).with_name("test_analysis.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


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
    assert A.main(["released", "--logs", str(RELEASED), "--out-dir", str(out), "--n-boot", "20"]) == 0
    return out


@pytest.fixture(scope="module")
def fake_tables(tmp_path_factory):
    helpers = _helpers()
    root = helpers.fake_tree(tmp_path_factory.mktemp("runs"))
    out = tmp_path_factory.mktemp("tables")
    sheet = helpers.fake_sheet(out / "runs.tsv")
    assert A.main(["collect", "--runs", str(root), "--out-dir", str(out), "--sheet", str(sheet)]) == 0
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
