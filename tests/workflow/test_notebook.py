"""notebook/: the measurement history kept beside the product (notebook/LOG.md, its records, the overlays
that made them and one-off investigation scripts).

Checks: every overlay still builds the DAG its header's command names, with exactly the runs it
declares (its sheet x its seeds, under its own root, with its overrides); the wheel ships no overlay and
no record sheet; every record is cited by a LOG.md entry and every notebook/ path named in the
repository's text exists; the kernel-fingerprint script still runs.
"""

from __future__ import annotations

import copy
import fnmatch
import importlib.util
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from pods_repro import registry

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebook"
OVERLAYS = sorted((NOTEBOOK / "overlays").glob("*.yaml"))
PRODUCT_SHEETS = {
    "runs.tsv",
    "runs_tiny.tsv",
    "runs_smol.tsv",
    "runs_arena.tsv",
    "config.yaml",
    "arena.yaml",
}  # config.yaml: the scales, for pods train --scale; arena.yaml and its sheet: the selection arena's grid


def _load(name: str):
    """A sibling test module by path (its helpers), in any pytest import mode."""
    spec = importlib.util.spec_from_file_location(f"_pods_{name}", Path(__file__).with_name(f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


wf = _load("test_workflow")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """The workflow's scratch copy (links to the repository's files), with notebook/ beside it."""
    wd = tmp_path_factory.mktemp("nb")
    for name in [*wf.LINKED, "notebook"]:
        if (REPO / name).exists():
            (wd / name).symlink_to(REPO / name)
    return wd


def header_command(overlay: Path) -> list[str]:
    """The words of the first `snakemake` command line of an overlay's header comment (continued lines joined)."""
    lines = [line[1:].strip() for line in overlay.read_text().splitlines() if line.startswith("#")]
    first = next((i for i, line in enumerate(lines) if line.startswith("snakemake ")), None)
    assert first is not None, f"{overlay.name}: its header names no `snakemake` command"
    command = lines[first]
    for line in lines[first + 1 :]:
        if not command.endswith("\\"):
            break
        command = command[:-1] + " " + line
    return shlex.split(command)[1:]


def merged_scale(overlay: Path) -> dict:
    """scales.tiny of config/config.yaml with the overlay merged in key by key, as Snakemake merges it."""

    def merge(base: dict, over: dict) -> dict:
        out = copy.deepcopy(base)
        for key, value in over.items():
            out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        return out

    return merge(wf.CONFIG, yaml.safe_load(overlay.read_text()))["scales"]["tiny"]


# One overlay's dry run stays in the fast tier (each is a Snakemake DAG of ~2 s); every other overlay's is in
# the slow tier, where the claim "every overlay dry-runs" is checked in full.
FAST_OVERLAY = "tiny_a64"


def test_the_fast_tier_dry_runs_an_overlay():
    assert FAST_OVERLAY in {p.stem for p in OVERLAYS}, f"rename FAST_OVERLAY to an overlay of {NOTEBOOK}/overlays"


@pytest.mark.parametrize(
    "overlay",
    [pytest.param(p, marks=() if p.stem == FAST_OVERLAY else pytest.mark.slow) for p in OVERLAYS],
    ids=[p.stem for p in OVERLAYS],
)
def test_every_overlay_dry_runs(workdir, overlay):
    """The overlay's header command (its targets and `--configfile`, this file's own path) builds the DAG,
    and the DAG trains exactly the overlay's runs: its sheet's arms x its seeds under its root, each with
    the overrides the overlay names (the scale's, its setting's, and the ablation budget for role-less arms)."""
    words = header_command(overlay)
    rel = str(overlay.relative_to(REPO))
    assert words[words.index("--configfile") + 1] == rel, f"{overlay.name}: its header names another overlay"
    targets = [w for w in words[: words.index("--configfile")] if not w.startswith("-")]
    res = wf.snakemake(workdir, "-n", "-p", *targets, "--configfile", rel, "--config", "scale=tiny", timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]

    scale = merged_scale(overlay)
    root = scale["root"]
    assert root != wf.CONFIG["scales"]["tiny"]["root"], f"{overlay.name} writes into the default root"
    assert all(t.startswith(f"{root}/") for t in targets), targets
    sheet = REPO / scale["runs"]
    assert sheet.is_file(), f"{overlay.name}: runs: {scale['runs']} does not exist"
    arms = {f"{a.setting}/{a.run_name}": a for a in registry.read_sheet(sheet)}
    want = {f"{root}/runs/{key}/seed~{s}/summary.json" for key, a in arms.items() for s in scale["seeds"][a.seeds]}
    jobs = wf.train_jobs(out)
    assert {j["summary"] for j in jobs} == want
    assert len(jobs) == len(want)  # each run once

    for job in jobs:
        key = job["summary"][len(f"{root}/runs/") :].rsplit("/seed~", 1)[0]
        arm = arms[key]
        named = {**scale["overrides"], **scale.get("settings", {}).get(arm.setting, {}).get("overrides", {})}
        if not arm.role:
            named.update(scale.get("ablation_overrides") or {})
        missing = {f"{k}={_yaml_word(v)}" for k, v in named.items()} - set(job["args"])
        assert not missing, f"{key}: the overlay's {sorted(missing)} are not on its command line"


def test_the_wheel_ships_no_overlay_and_no_record_sheet():
    """pyproject's package data, applied to the folders it maps, gives the product's run sheets and the
    experiment YAMLs only: no overlay and no sheet of notebook/overlays/ goes into an installed wheel."""
    tool = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    dirs = tool.get("package-dir", {})

    def folder(package: str) -> Path:  # setuptools' mapping: the longest mapped parent package, then the rest
        parts = package.split(".")
        mapped = next(i for i in range(len(parts), -1, -1) if i == 0 or ".".join(parts[:i]) in dirs)
        return REPO.joinpath(dirs[".".join(parts[:mapped])] if mapped else "", *parts[mapped:])

    shipped = set()
    for package, patterns in tool["package-data"].items():
        files = folder(package).iterdir()
        shipped |= {p.resolve() for p in files for pat in patterns if fnmatch.fnmatch(p.name, pat)}
    assert all(NOTEBOOK not in p.parents for p in shipped)
    sheets = {p.name for p in shipped if p.parent == REPO / "config"}
    assert sheets == PRODUCT_SHEETS, f"the wheel would ship {sorted(sheets)}"
    own = [yaml.safe_load(o.read_text())["scales"]["tiny"].get("runs") for o in OVERLAYS]
    record_sheets = {(REPO / sheet).resolve() for sheet in own if sheet}
    assert record_sheets, "no overlay names a sheet of its own"
    assert all(NOTEBOOK / "overlays" in s.parents for s in record_sheets), sorted(record_sheets)
    assert not record_sheets & shipped
    assert not list((REPO / "config").glob("tiny_*.yaml")), "record overlays belong in notebook/overlays/"


def test_every_record_is_in_the_log_and_every_notebook_path_exists():
    """notebook/LOG.md cites every file of notebook/records/ in a Data line; every notebook/ path named in
    the repository's tracked text files (docs, tests, configs, overlays, the log itself) exists."""
    log = (NOTEBOOK / "LOG.md").read_text()
    headings = re.findall(r"^## (\d{4}-\d{2}-\d{2}): .+$", log, re.M)
    assert headings, "LOG.md: no entry headed '## YYYY-MM-DD: topic'"
    assert headings == sorted(headings, reverse=True), "LOG.md: dated entries, newest first"
    cited = set(re.findall(r"records/([\w.@-]*\w)", log))
    records = {p.name for p in (NOTEBOOK / "records").iterdir()}
    assert records - cited == set(), f"records no LOG.md entry cites: {sorted(records - cited)}"
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    if not files:
        pytest.skip("not a git checkout")
    broken = []
    for name in files:
        path = REPO / name
        if path.suffix in {".png", ".csv", ".json", ".safetensors"} or not path.is_file():
            continue
        for ref in re.findall(r"notebook/(?:records|overlays|scripts)/[\w.@-]*\w", path.read_text(errors="ignore")):
            if not (REPO / ref).exists():
                broken.append(f"{name}: {ref}")
    assert not broken, broken


def test_kernel_fingerprint_is_stable_in_one_process_and_covers_the_tiny_ops(tiny_policy_dir):
    """notebook/scripts/kernel_fingerprint.py, the tool that located where an Intel Xeon and an AMD EPYC
    part under the AVX2 pin: its inputs come from integer arithmetic, so two calls on one machine give the
    same digests; the whole-model entries appear with a model. Its shell drivers parse as bash."""
    fingerprint = _load_script("kernel_fingerprint").fingerprint
    a, b = fingerprint(str(tiny_policy_dir)), fingerprint(str(tiny_policy_dir))
    assert a == b
    assert {"mm 1x96 @ 96x256 (gemv)", "exp", "AdamW step", "model logits", "model grads"} <= set(a)
    assert all(len(v) == 16 and int(v, 16) >= 0 for v in a.values())
    for script in (NOTEBOOK / "scripts").glob("*.sh"):
        subprocess.run(["bash", "-n", str(script)], check=True)


def _yaml_word(value) -> str:
    """A config value as the workflow writes it on a run's command line (rules/common.smk)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


def _load_script(name: str):
    spec = importlib.util.spec_from_file_location(f"_nb_{name}", NOTEBOOK / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
