"""The package's architecture: which part of the code may import which.

The code is cut into parts (the vocabulary, the PODS math, the rewards, the config, the inputs, the
run directory, the trainer, the analysis, the command line, the figures, the benchmarks), and some
directions between them are forbidden: the math must run without the trainer or a config, loading a
config must not import the trainer, the analysis must read run directories and tables without torch,
TRL, datasets or the benchmarks, and the lower parts never reach up into the ones built on them.

Every ``import`` / ``from ... import`` statement under pods/, figures/ and benchmarks/ counts, those
inside functions (lazy imports) included, and so does ``importlib.import_module("...")`` with a
literal name. A new module of pods/ must be placed in exactly one part below; an import of a
``pods`` module that does not exist (a lazy import left behind by a move) fails too.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("pods", "figures", "benchmarks")

# Part -> the files it holds: a path relative to the repository, or a folder (ending in "/") and all below it.
PARTS: dict[str, tuple[str, ...]] = {
    # pods/__init__.py only names the package and its version: every part may import it.
    "Vocabulary": ("pods/__init__.py", "pods/registry.py", "pods/textutil.py"),
    "Math": ("pods/selectors.py", "pods/grpo.py"),
    "Rewards": ("pods/rewards.py", "pods/reward_conditions.py", "pods/verifier.py"),
    "Config": ("pods/config/", "pods/arena.py"),
    "Inputs": ("pods/data.py", "pods/models.py", "pods/tiny.py"),
    "Machine": ("pods/kernels.py",),
    "RunDir": ("pods/runlog.py",),
    "Trainer": ("pods/trainer/", "pods/run.py", "pods/evaluation.py", "pods/fastgen.py", "pods/evalcache.py"),
    "Analysis": ("pods/analysis/",),
    "Face": ("pods/cli.py", "pods/__main__.py", "pods/quickstart.py"),
    "Figures": ("figures/",),
    "Benchmarks": ("benchmarks/", "pods/bench/"),
}

# (importer, imported) -> why the importer must not import it, directly or lazily.
NEVER: dict[tuple[str, str], str] = {
    ("Math", "Trainer"): "the selection rules and the GRPO objective are pure tensor code that the trainer calls",
    ("Math", "Config"): "the math takes plain arguments, so it is used and tested without a config",
    ("Math", "Face"): "the math is a library; the command line is built on top of it",
    ("Rewards", "Trainer"): "rewards score text for the trainer and the evaluation, never the other way round",
    ("Rewards", "Inputs"): "scoring needs no dataset or model loading (the verifier's workers stay light)",
    ("Config", "Trainer"): "a config loads and validates without the trainer (the `trl:` check needs TRL alone)",
    ("Analysis", "Trainer"): "the analysis reads run directories and tables; it needs neither the trainer nor TRL",
    ("Analysis", "Inputs"): "the analysis reads tables, not datasets or models",
    ("Analysis", "Benchmarks"): "the analysis owns what it computes with (the cost model); benchmarks sit on top",
    ("Figures", "Trainer"): "figures only select and plot the analysis's tables",
    ("Inputs", "Analysis"): "data and models are below the analysis, which reads what runs made of them",
    ("Inputs", "Trainer"): "the trainer loads data and models, never the other way round",
    ("RunDir", "Trainer"): "the run directory's format is read by the analysis and the CLI without the trainer",
    ("RunDir", "Analysis"): "the run directory's writer sits below the analysis that reads it",
}


def part_of(rel: str) -> list[str]:
    """The parts whose files include `rel` (a path relative to the repository)."""
    return [
        part
        for part, places in PARTS.items()
        if any(rel.startswith(p) if p.endswith("/") else rel == p for p in places)
    ]


def module_name(path: Path) -> str:
    """The dotted name of a module file of the repository (a package's __init__.py: the package)."""
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_file(name: str, importer: Path) -> Path | None:
    """The repository file that module `name` is, seen from `importer`; None for anything outside the
    repository. A script outside a package (figures/*.py) also imports its neighbours by plain name."""
    roots = [REPO]
    if not (importer.parent / "__init__.py").exists():
        roots.append(importer.parent)
    for root in roots:
        base = root.joinpath(*name.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def imports_of(path: Path, source: str | None = None) -> list[tuple[int, str]]:
    """(line, dotted module name) of every import in a file, at any depth: ``import a.b``, ``from a import
    b`` (a.b where b is a module, else a), relative imports, ``importlib.import_module("a.b")``."""
    tree = ast.parse(path.read_text() if source is None else source, filename=str(path))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, node.module] if node.module else up)
            else:
                base = node.module or ""
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append((node.lineno, sub if module_file(sub, path) else base))
        elif isinstance(node, ast.Call) and node.args:
            fn = node.func
            called = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            arg = node.args[0]
            if called == "import_module" and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.append((node.lineno, arg.value))
    return sorted(set(found))


def scanned_files() -> list[Path]:
    return sorted(p for top in SCANNED for p in (REPO / top).rglob("*.py") if "__pycache__" not in p.parts)


def forbidden_edges(path: Path, source: str | None = None) -> list[str]:
    """One line per forbidden import of a file: file:line: importer part -> imported part (module): why."""
    rel = path.relative_to(REPO).as_posix()
    out = []
    for src in part_of(rel):
        for line, name in imports_of(path, source):
            target = module_file(name, path)
            for dst in part_of(target.relative_to(REPO).as_posix()) if target else []:
                why = NEVER.get((src, dst))
                if why:
                    out.append(f"{rel}:{line}: {src} -> {dst} ({name}): {why}")
    return out


def test_every_module_of_pods_belongs_to_exactly_one_part():
    files = [p.relative_to(REPO).as_posix() for p in scanned_files() if p.is_relative_to(REPO / "pods")]
    assert len(files) > 30
    wrong = [f"{rel}: {', '.join(part_of(rel)) or 'no part'}" for rel in files if len(part_of(rel)) != 1]
    assert not wrong, "place each module of pods/ in exactly one part of PARTS (tests/docs/test_architecture.py):\n" + (
        "\n".join(wrong)
    )


def test_the_forbidden_directions_name_declared_parts():
    assert {part for edge in NEVER for part in edge} <= set(PARTS)


def test_no_import_crosses_a_forbidden_direction():
    files = scanned_files()
    assert any(p.is_relative_to(REPO / "figures") for p in files)
    assert any(p.is_relative_to(REPO / "benchmarks") for p in files)
    edges = [edge for path in files for edge in forbidden_edges(path)]
    assert not edges, f"{len(edges)} forbidden import(s):\n" + "\n".join(edges)


def test_every_import_of_pods_names_a_module_of_the_repository():
    """A lazy import inside a function runs only when that function does: after a module moves, a stale
    one would pass every test that does not reach it."""
    missing = []
    for path in scanned_files():
        for line, name in imports_of(path):
            if name.split(".")[0] == "pods" and module_file(name, path) is None:
                missing.append(f"{path.relative_to(REPO)}:{line}: {name}")
    assert not missing, "imports of pods modules that do not exist:\n" + "\n".join(missing)


@pytest.mark.parametrize(
    ("source", "module", "part"),
    [
        ("def f():\n    import pods.trainer\n", "pods.trainer", "Trainer"),
        ("def f():\n    from pods.trainer import check_trl_compat\n", "pods.trainer", "Trainer"),
        ("from pods import run\n", "pods.run", "Trainer"),
        ("from . import levels\n", "pods.analysis.levels", "Analysis"),
        ("from .tidy import select\n", "pods.analysis.tidy", "Analysis"),
        ("import importlib\nimportlib.import_module('pods.evaluation')\n", "pods.evaluation", "Trainer"),
    ],
)
def test_the_scan_sees_every_kind_of_import(source, module, part):
    path = REPO / "pods" / "analysis" / "tidy.py"
    assert module in {name for _, name in imports_of(path, source)}
    assert part_of(module_file(module, path).relative_to(REPO).as_posix()) == [part]
    edges = forbidden_edges(path, source)
    assert [e.split(": ", 2)[1] for e in edges] == (
        ["Analysis -> Trainer (" + module + ")"] if part == "Trainer" else []
    )


def test_a_script_outside_a_package_imports_its_neighbours_by_plain_name():
    fig = REPO / "figures" / "fig_3_main.py"
    assert module_file("figlib", fig) == REPO / "figures" / "figlib.py"
    assert module_file("trl", REPO / "pods" / "config" / "__init__.py") is None  # the library, not pods/config/trl.py


def test_loading_a_config_imports_no_trainer():
    """The import-time view of the Config -> Trainer direction: importing the config, loading a shipped YAML and
    checking a `trl:` section (which builds a GRPOConfig) leave pods.trainer unimported."""
    code = (
        "import sys\n"
        "import pods.config\n"
        "assert not [m for m in sys.modules if m.startswith('pods.trainer')], 'import pods.config'\n"
        "pods.config.load_config('experiments/tiny_a.yaml')\n"
        "pods.config.load_config('experiments/tiny_a.yaml', ['trl.dataloader_num_workers=0'])\n"
        "assert 'trl' in sys.modules, 'the trl: section was not checked'\n"
        "bad = [m for m in sys.modules if m.startswith('pods.trainer')]\n"
        "assert not bad, bad\n"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]


def test_the_light_analysis_modules_load_without_pandas():
    """pods/analysis/__init__.py imports nothing, so `python -m pods.analysis.released_logs` and the cost model
    (`pods bench cost_model`) run on the core dependencies."""
    code = (
        "import sys\n"
        "import pods.analysis.released_logs, pods.analysis.cost_model, pods.bench.cost_model\n"
        "assert 'pandas' not in sys.modules, 'pandas was imported'\n"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]


def test_the_module_map_lists_every_analysis_module():
    """docs/design.md's module map has a row for every module of pods/analysis/, and each it names exists."""
    text = (REPO / "docs" / "design.md").read_text()
    section = text.split("## Module map", 1)[1].split("\n## ", 1)[0]
    first_cells = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `pods/analysis/")]
    listed = {name for cell in first_cells for name in re.findall(r"`(pods/analysis/[\w/]+\.py)`", cell)}
    present = {p.relative_to(REPO).as_posix() for p in (REPO / "pods" / "analysis").glob("*.py")}
    assert not present - listed, f"add a row to docs/design.md's module map for {sorted(present - listed)}"
    assert not listed - present, (
        f"docs/design.md's module map names modules that do not exist: {sorted(listed - present)}"
    )
