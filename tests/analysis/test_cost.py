"""pods_repro.analysis.cost: the paper scale's GPU-hours from the run sheet, the seeds and the budgets, and the README
table that `pods cost` generates (kept equal to the command's output)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from pods_repro import cli
from pods_repro.analysis import cost

REPO = Path(__file__).resolve().parents[2]
CONFIG = yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def by_setting(rows):
    return {r["setting"]: r for r in rows}


def test_paper_scale_cost():
    rows = by_setting(cost.scale_cost(CONFIG, "paper", REPO))
    assert [k for k in rows] == ["a", "b", "c", "d", "e", "f", "total"]
    assert {k: r["runs"] for k, r in rows.items()} == {
        "a": 120,
        "b": 20,
        "c": 20,
        "d": 20,
        "e": 10,
        "f": 10,
        "total": 200,
    }
    # runs x GPUs x the YAML's budget.max_time_s (6 h, 1.5 h, 6 h, 12 h, 40 min, 40 min; docs/paper.md#hyperparameters)
    expected = {"a": 120 * 6, "b": 20 * 1.5, "c": 20 * 6, "d": 20 * 12, "e": 10 * 8 * 2 / 3, "f": 10 * 8 * 2 / 3}
    for k, gpu_h in expected.items():
        assert rows[k]["train_gpu_h"] == pytest.approx(gpu_h)
    assert rows["total"]["train_gpu_h"] == pytest.approx(sum(expected.values()))
    # reserved: runs x GPUs x runtime_min of scales.paper.settings
    assert rows["e"]["reserved_gpu_h"] == pytest.approx(10 * 8 * 150 / 60)


def test_cost_follows_seeds_budgets_and_the_sheet(tmp_path):
    config = copy.deepcopy(CONFIG)
    config["scales"]["paper"]["seeds"]["main_a"] = [0, 1, 2]  # (a)'s main arms: 3 seeds instead of 10
    config["scales"]["paper"]["settings"]["b"]["overrides"] = {"budget.max_time_s": 3600}
    rows = by_setting(cost.scale_cost(config, "paper", REPO))
    assert rows["a"]["runs"] == 120 - 2 * 7
    assert rows["b"]["train_gpu_h"] == pytest.approx(20 * 1.0)
    config["scales"]["paper"]["seeds"] = {"main_a": [0]}
    with pytest.raises(cost.CostError, match="is not in scales.paper.seeds"):
        cost.scale_cost(config, "paper", REPO)
    with pytest.raises(cost.CostError, match="unknown scale"):
        cost.scale_cost(CONFIG, "huge", REPO)


def test_readme_table_is_the_generated_one():
    readme = (REPO / "README.md").read_text()
    table = cost.readme_table(readme)
    assert table is not None, "README.md lost the `pods cost` markers"
    assert table == cost.markdown(cost.scale_cost(CONFIG, "paper", REPO)), (
        "README table is stale: run `pods cost --write-readme README.md`"
    )


def test_cli(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert cli.main(["cost", "--format", "csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ",".join(cost.COLUMNS)
    assert out[-1].startswith("total,,22,200,")
    assert cli.main(["cost", "--scale", "huge"]) == 2
    assert "unknown scale" in capsys.readouterr().err
    assert cli.main(["cost", "--scale", "tiny"]) == 2  # step budgets: one line, not a TypeError
    err = capsys.readouterr().err
    assert "no wall-clock budget" in err
    assert "job-time" in err
    assert len(err.strip().splitlines()) == 1
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{cost.README_START}old table\n{cost.README_END}\nrest\n")
    assert cli.main(["cost", "--write-readme", str(readme)]) == 0
    text = readme.read_text()
    assert "old table" not in text
    assert text.startswith("intro\n")
    assert text.endswith(f"{cost.README_END}\nrest\n")
    assert "| **total** | **200**" in text
    monkeypatch.chdir(tmp_path)  # no config/config.yaml here
    assert cli.main(["cost"]) == 2
    assert "run from the repository root" in capsys.readouterr().err
