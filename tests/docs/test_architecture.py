"""The architecture: two packages, and which part of the code may import which.

``pods`` is the method library (the rules and their registry, the objective, the trainer on TRL); it
imports torch, TRL and what TRL brings, and nothing of the reproduction. ``pods_repro`` is the
reproduction, cut into parts (the vocabulary, the rules from other papers, the rewards, the config, the
inputs, the run directory, the run loop, the analysis, the command line), with the figures and the
benchmarks beside it; some directions between them are forbidden: loading a config must not import the
trainer, the analysis must read run directories and tables without torch, TRL, datasets or the
benchmarks, and the lower parts never reach up into the ones built on them.

Every ``import`` / ``from ... import`` statement under pods/, pods_repro/, figures/ and benchmarks/
counts, those inside functions (lazy imports) included, and so does ``importlib.import_module("...")``
with a literal name. A new module must be placed in exactly one part below; an import of a ``pods`` or
``pods_repro`` module that does not exist (a lazy import left behind by a move) fails too.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("pods", "pods_repro", "figures", "benchmarks")
PACKAGES = ("pods", "pods_repro")

# Part -> the files it holds: a path relative to the repository, or a folder (ending in "/") and all below it.
PARTS: dict[str, tuple[str, ...]] = {
    "Library": ("pods/",),
    # pods_repro/__init__.py names the package, its version and pins the CPU kernels: every part may import it.
    "Vocabulary": ("pods_repro/__init__.py", "pods_repro/registry.py", "pods_repro/textutil.py"),
    "Rules": ("pods_repro/rules.py",),
    "Rewards": ("pods_repro/rewards.py", "pods_repro/reward_conditions.py", "pods_repro/verifier.py"),
    "Config": ("pods_repro/config/", "pods_repro/arena.py"),
    "Inputs": ("pods_repro/data.py", "pods_repro/models.py", "pods_repro/tiny.py"),
    "Machine": ("pods_repro/kernels.py",),
    "RunDir": ("pods_repro/runlog.py",),
    "Trainer": (
        "pods_repro/trainer/",
        "pods_repro/run.py",
        "pods_repro/evaluation.py",
        "pods_repro/fastgen.py",
        "pods_repro/evalcache.py",
    ),
    "Analysis": ("pods_repro/analysis/",),
    "Face": ("pods_repro/cli.py", "pods_repro/__main__.py", "pods_repro/quickstart.py"),
    "Figures": ("figures/",),
    "Benchmarks": ("benchmarks/", "pods_repro/bench/"),
}
REPRODUCTION_PARTS = tuple(part for part in PARTS if part != "Library")

# (importer, imported) -> why the importer must not import it, directly or lazily.
NEVER: dict[tuple[str, str], str] = {
    **{
        ("Library", part): "the method library stands alone: it imports nothing of the reproduction"
        for part in REPRODUCTION_PARTS
    },
    ("Rules", "Trainer"): "a rule is a pure tensor function that the trainer calls",
    ("Rules", "Config"): "the rules take plain arguments, so they are used and tested without a config",
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
# The torch-free modules of the library: the only ones the parts that must load without torch may import.
LIBRARY_TORCH_FREE = ("pods/__init__.py", "pods/base.py")
TORCH_FREE_PARTS = ("Vocabulary", "Config", "RunDir", "Analysis")
# What the library may import besides the standard library and itself (pyproject.toml's core dependencies).
LIBRARY_THIRD_PARTY = {"torch", "trl", "transformers", "accelerate"}
# ...and what those bring (the model card's YAML front matter: pyyaml is a requirement of transformers).
LIBRARY_BROUGHT = {"yaml"}


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
            target_rel = target.relative_to(REPO).as_posix() if target else ""
            for dst in part_of(target_rel) if target else []:
                why = NEVER.get((src, dst))
                if not why and dst == "Library" and src in TORCH_FREE_PARTS and target_rel not in LIBRARY_TORCH_FREE:
                    why = (
                        f"{src} loads without torch: of the library it may import only {', '.join(LIBRARY_TORCH_FREE)}"
                    )
                if why:
                    out.append(f"{rel}:{line}: {src} -> {dst} ({name}): {why}")
    return out


def test_every_module_of_both_packages_belongs_to_exactly_one_part():
    files = [
        p.relative_to(REPO).as_posix() for p in scanned_files() if any(p.is_relative_to(REPO / k) for k in PACKAGES)
    ]
    assert len(files) > 30
    wrong = [f"{rel}: {', '.join(part_of(rel)) or 'no part'}" for rel in files if len(part_of(rel)) != 1]
    assert not wrong, "place each module in exactly one part of PARTS (tests/docs/test_architecture.py):\n" + (
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
            if name.split(".")[0] in PACKAGES and module_file(name, path) is None:
                missing.append(f"{path.relative_to(REPO)}:{line}: {name}")
    assert not missing, "imports of pods modules that do not exist:\n" + "\n".join(missing)


@pytest.mark.parametrize(
    ("source", "module", "part"),
    [
        ("def f():\n    import pods_repro.trainer\n", "pods_repro.trainer", "Trainer"),
        ("def f():\n    from pods_repro.trainer import check_trl_compat\n", "pods_repro.trainer", "Trainer"),
        ("from pods_repro import run\n", "pods_repro.run", "Trainer"),
        ("from . import levels\n", "pods_repro.analysis.levels", "Analysis"),
        ("from .tidy import select\n", "pods_repro.analysis.tidy", "Analysis"),
        ("import importlib\nimportlib.import_module('pods_repro.evaluation')\n", "pods_repro.evaluation", "Trainer"),
    ],
)
def test_the_scan_sees_every_kind_of_import(source, module, part):
    path = REPO / "pods_repro" / "analysis" / "tidy.py"
    assert module in {name for _, name in imports_of(path, source)}
    assert part_of(module_file(module, path).relative_to(REPO).as_posix()) == [part]
    edges = forbidden_edges(path, source)
    assert [e.split(": ", 2)[1] for e in edges] == (
        ["Analysis -> Trainer (" + module + ")"] if part == "Trainer" else []
    )


def test_a_script_outside_a_package_imports_its_neighbours_by_plain_name():
    fig = REPO / "figures" / "fig_3_main.py"
    assert module_file("figlib", fig) == REPO / "figures" / "figlib.py"
    assert (
        module_file("trl", REPO / "pods_repro" / "config" / "__init__.py") is None
    )  # the library, not pods_repro/config/trl.py


def _run_probe(code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter from the repository; its own asserts are the check."""
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    return res


def test_loading_a_config_imports_no_trainer():
    """The import-time view of the Config -> Trainer direction: importing the config, loading a shipped YAML and
    checking a `trl:` section (which builds a GRPOConfig) leave pods.trainer unimported."""
    code = (
        "import sys\n"
        "import pods_repro.config\n"
        "assert not [m for m in sys.modules if m.startswith('pods.trainer')], 'import pods_repro.config'\n"
        "pods_repro.config.load_config('experiments/tiny_a.yaml')\n"
        "pods_repro.config.load_config('experiments/tiny_a.yaml', ['trl.dataloader_num_workers=0'])\n"
        "assert 'trl' in sys.modules, 'the trl: section was not checked'\n"
        "bad = [m for m in sys.modules if m.startswith('pods.trainer')]\n"
        "assert not bad, bad\n"
    )
    _run_probe(code)


def test_the_light_analysis_modules_load_without_pandas():
    """pods_repro/analysis/__init__.py imports nothing, so `python -m pods_repro.analysis.released_logs` and the cost model
    (`pods bench cost_model`) run on the core dependencies."""
    code = (
        "import sys\n"
        "import pods_repro.analysis.released_logs, pods_repro.analysis.cost_model, pods_repro.bench.cost_model\n"
        "assert 'pandas' not in sys.modules, 'pandas was imported'\n"
    )
    _run_probe(code)


def test_the_module_map_lists_every_analysis_module():
    """docs/design.md's module map has a row for every module of pods_repro/analysis/, and each it names exists."""
    text = (REPO / "docs" / "design.md").read_text()
    section = text.split("## Module map", 1)[1].split("\n## ", 1)[0]
    first_cells = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `pods_repro/analysis/")]
    listed = {name for cell in first_cells for name in re.findall(r"`(pods_repro/analysis/[\w/]+\.py)`", cell)}
    present = {p.relative_to(REPO).as_posix() for p in (REPO / "pods_repro" / "analysis").glob("*.py")}
    assert not present - listed, f"add a row to docs/design.md's module map for {sorted(present - listed)}"
    assert not listed - present, (
        f"docs/design.md's module map names modules that do not exist: {sorted(listed - present)}"
    )


def third_party_imports(path: Path) -> set[str]:
    """The top-level names of a file's imports that are neither the standard library nor this repository."""
    tops = {name.split(".")[0] for _, name in imports_of(path)}
    return {t for t in tops if t not in sys.stdlib_module_names and t not in PACKAGES and t != "__future__"}


def test_the_library_imports_only_torch_trl_and_what_trl_brings():
    library = [p for p in scanned_files() if p.is_relative_to(REPO / "pods")]
    assert len(library) >= 10
    extra = {
        p.relative_to(REPO).as_posix(): third_party_imports(p) - LIBRARY_THIRD_PARTY - LIBRARY_BROUGHT for p in library
    }
    extra = {k: v for k, v in extra.items() if v}
    assert not extra, f"the library imports packages outside its core dependencies: {extra}"


def test_the_wheel_s_core_dependencies_are_the_library_s():
    """pyproject.toml's core `dependencies` name exactly what the library imports (no extra)."""
    import tomllib

    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=!~\[ ]", d, maxsplit=1)[0] for d in deps}
    assert names == LIBRARY_THIRD_PARTY, names


@pytest.mark.parametrize(
    "source",
    [
        "def f():\n    import pods_repro.data\n",
        "from pods_repro import registry\n",
        "import importlib\nimportlib.import_module('pods_repro.config')\n",
    ],
)
def test_a_library_import_of_the_reproduction_is_refused(source):
    edges = forbidden_edges(REPO / "pods" / "trainer" / "hook.py", source)
    assert edges, source
    assert all("Library ->" in e for e in edges), edges
    assert all("stands alone" in e for e in edges), edges


def test_a_torch_free_part_may_import_only_the_library_s_torch_free_modules():
    path = REPO / "pods_repro" / "analysis" / "tidy.py"
    assert not forbidden_edges(path, "from pods.base import mix_seed\n")
    edges = forbidden_edges(path, "def f():\n    from pods.selectors import select\n")
    assert edges, "an analysis module imported the library's torch code unseen"
    assert "loads without torch" in edges[0], edges


_LIBRARY_IMPORT_PROBE = """
import json, os, sys, time
from trl import GRPOTrainer  # TRL itself sets TORCHINDUCTOR_CACHE_DIR on this import: not the library's doing
env = dict(os.environ)
t = time.process_time()
from pods import PODSGRPOTrainer, PODSConfig, select
cpu_s = time.process_time() - t
mods = sorted(m for m in sys.modules if m == "pods" or m.startswith(("pods.", "pods_repro")))
lines = sum(len(open(sys.modules[m].__file__, encoding="utf-8").read().splitlines()) for m in mods)
changed = sorted(k for k in set(env) | set(os.environ) if env.get(k) != os.environ.get(k))
print(json.dumps({"modules": mods, "lines": lines, "changed": changed, "cpu_s": cpu_s}))
"""


def test_the_library_loads_small_and_changes_nothing_in_the_process():
    """`from pods import PODSGRPOTrainer, PODSConfig, select` in a fresh process: at most 15 modules of the
    library and 2,500 of its lines, none of the reproduction, and os.environ as it was."""
    got = json.loads(_run_probe(_LIBRARY_IMPORT_PROBE).stdout.strip().splitlines()[-1])
    assert not [m for m in got["modules"] if m.startswith("pods_repro")], got["modules"]
    assert len(got["modules"]) <= 15, got["modules"]
    assert got["lines"] <= 2500, got["lines"]
    assert got["changed"] == [], got["changed"]


def test_import_pods_alone_imports_neither_torch_nor_trl_and_pins_nothing():
    code = (
        "import os, sys\nenv = dict(os.environ)\nimport pods\n"
        "assert 'torch' not in sys.modules and 'trl' not in sys.modules, 'import pods loaded torch or trl'\n"
        "assert dict(os.environ) == env, 'import pods changed the environment'\n"
        "assert pods.__version__\n"
    )
    _run_probe(code)


def test_the_records_fingerprint_runs_without_torch_or_the_models():
    """The analysis reads and checks records torch-free: the expected runs of the default job and of the arena
    are fingerprinted from their configs without importing torch, TRL or the tiny models."""
    code = (
        "import sys\n"
        "from pods_repro.analysis.record import expected_runs\n"
        "from pods_repro.analysis.arena_record import expected_fingerprints\n"
        "from pods_repro.arena import load_arena\n"
        "assert len(expected_runs()) > 100\n"
        "assert len(expected_fingerprints(load_arena('full'))) > 100\n"
        "bad = [m for m in ('torch', 'trl', 'transformers', 'pods_repro.models', 'pods_repro.tiny') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    _run_probe(code)


def import_graph() -> dict[str, set[str]]:
    """File -> the files of both packages it imports (lazy imports and `importlib` included)."""
    graph = {}
    for path in scanned_files():
        if not any(path.is_relative_to(REPO / k) for k in PACKAGES):
            continue
        rel = path.relative_to(REPO).as_posix()
        targets = {module_file(name, path) for _, name in imports_of(path)}
        graph[rel] = {t.relative_to(REPO).as_posix() for t in targets if t} - {rel}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one file (Tarjan): each is an import circle."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle():
    found = circles(import_graph())
    assert not found, "import circles (break each: move what both need into one, or a third module):\n" + "\n".join(
        " <-> ".join(c) for c in found
    )


def test_the_circle_check_sees_a_two_file_circle():
    assert circles({"a.py": {"b.py"}, "b.py": {"a.py"}, "c.py": {"a.py"}}) == [["a.py", "b.py"]]
    assert circles({"a.py": {"b.py"}, "b.py": set()}) == []
