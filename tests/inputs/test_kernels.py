"""pods_repro.kernels: the CPU kernels torch runs are pinned to AVX2 (the same bits on AVX2 machines of one vendor)."""

import json
import os
import subprocess
import sys

import pytest

from pods_repro import kernels

PROBE = (
    "import json, os, sys\n"
    "{pin}"
    "import torch\n"
    "x = torch.randn(64, 64)\n"
    "(x @ x).softmax(-1).sum().item()\n"  # torch's first operations: ATen and MKL read their variables here
    "from pods_repro.kernels import kernels_label\n"
    "print(json.dumps({{'capability': torch.backends.cpu.get_cpu_capability(), 'label': kernels_label(),"
    " 'mkl_cbwr': os.environ.get('MKL_CBWR')}}))\n"
)
needs_avx2 = pytest.mark.skipif(not kernels._cpu_has_avx2(), reason="pinning applies to x86-64 CPUs with AVX2")


def _probe(pin: str, **env) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in (*kernels.PINNED, kernels.OPT_OUT)}
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(pin=pin)], env={**base, **env}, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@needs_avx2
def test_pinning_before_the_first_operation_runs_avx2_kernels_even_after_import_torch():
    pinned = _probe("import torch\nfrom pods_repro.kernels import pin_cpu_kernels\npin_cpu_kernels()\n")
    assert pinned == {"capability": "AVX2", "label": "avx2", "mkl_cbwr": "AVX2"}


@needs_avx2
def test_opt_out_and_no_pin_run_torch_s_own_choice():
    native = _probe("from pods_repro.kernels import pin_cpu_kernels\npin_cpu_kernels()\n", PODS_KERNELS="native")
    assert native["label"] == "native"
    assert native["mkl_cbwr"] is None
    assert _probe("")["label"] == "native"  # nothing set: torch's own dispatch, and the record says so


@needs_avx2
def test_pinning_after_the_first_operation_is_not_claimed():
    """ATEN_CPU_CAPABILITY=default read by torch's first operation, then the AVX2 pin: the label must not say avx2."""
    late = _probe(
        "os.environ['ATEN_CPU_CAPABILITY'] = 'default'\nimport torch\ntorch.ones(2).add(1)\n"
        "del os.environ['ATEN_CPU_CAPABILITY']\nfrom pods_repro.kernels import pin_cpu_kernels\npin_cpu_kernels()\n"
    )
    assert late["capability"] == "DEFAULT"
    assert late["label"] == "native"


@needs_avx2
def test_the_pods_command_and_the_test_session_pin_before_torch_runs():
    """`pods` pins first thing (pods_repro/cli.py), and so does this test session (conftest.py)."""
    assert kernels.kernels_label() == "avx2"
    base = {k: v for k, v in os.environ.items() if k not in (*kernels.PINNED, kernels.OPT_OUT)}
    code = (
        "import os, sys\nfrom pods_repro.cli import main\nmain(['config', 'eval'])\nprint(os.environ.get('MKL_CBWR'))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=base, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "AVX2"


def test_a_user_s_own_variable_is_kept(monkeypatch):
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx512")
    monkeypatch.setattr(kernels, "_cpu_has_avx2", lambda: True)
    kernels.pin_cpu_kernels()
    assert os.environ["ATEN_CPU_CAPABILITY"] == "avx512"
    assert kernels.kernels_label() == "native"


def test_no_avx2_pins_nothing(monkeypatch):
    for key in kernels.PINNED:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(kernels, "_cpu_has_avx2", lambda: False)
    assert kernels.pin_cpu_kernels() == "native"
    assert not any(key in os.environ for key in kernels.PINNED)


def test_cpuinfo_field_reads_the_first_line_of_a_name(tmp_path, monkeypatch):
    """pods_repro.kernels.cpuinfo_field, behind both the AVX2 check and the run record's CPU model
    (pods_repro.runlog.cpu_info): the first line whose key is the name, stripped; None without it."""
    fake = tmp_path / "cpuinfo"
    fake.write_text(
        "processor\t: 0\nmodel name\t: Test CPU @ 2GHz\nflags\t\t: fpu sse avx avx2\n\nmodel name\t: other\n"
    )
    real_open = open
    monkeypatch.setattr("builtins.open", lambda f, *a, **k: real_open(fake if f == "/proc/cpuinfo" else f, *a, **k))
    assert kernels.cpuinfo_field("model name") == "Test CPU @ 2GHz"
    assert kernels.cpuinfo_field("flags").split()[-1] == "avx2"
    assert kernels.cpuinfo_field("model") is None  # a key, not a prefix
    from pods_repro.runlog import cpu_info

    assert cpu_info()["model"] == "Test CPU @ 2GHz"
    monkeypatch.setattr("platform.machine", lambda: "x86_64")
    assert kernels._cpu_has_avx2()
    fake.write_text("flags\t: fpu sse avx\n")
    assert not kernels._cpu_has_avx2()


def test_the_run_record_names_the_device_the_run_used_not_the_one_visible(monkeypatch):
    """pods_repro.runlog.run_meta: a CPU run on a machine with a GPU (``hardware.device=cpu``) records "cpu" as
    ``meta.device``, not the name of the GPU it left idle."""
    import torch

    from pods_repro.runlog import run_meta

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "Some GPU")
    assert run_meta(use_cuda=False)["device"] == "cpu"
    assert run_meta(use_cuda=True)["device"] == "Some GPU"
    assert run_meta()["device"] == "Some GPU"  # callers that do not say: the visible GPU, as before


GARBAGE = [("ATEN_CPU_CAPABILITY", "bogus"), ("MKL_CBWR", "bogus"), ("PODS_KERNELS", "natvie")]


@pytest.mark.parametrize(("var", "value"), GARBAGE)
def test_an_unknown_kernel_variable_is_refused_by_the_pods_command(var, value, monkeypatch, capsys):
    """torch ignores an invalid ATEN_CPU_CAPABILITY (a warning at its first operation), MKL an invalid MKL_CBWR
    (without a word), and the package a misspelt PODS_KERNELS: each ran under kernels nobody chose. Now the
    `pods` command exits 2 at once, saying what is accepted and how to fix it."""
    from pods_repro import cli

    monkeypatch.setenv(var, value)
    assert cli.main(["config", "eval"]) == 2
    err = capsys.readouterr().err
    assert f"{var}={value}" in err
    assert "Fix: " in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


@pytest.mark.parametrize(("var", "value"), GARBAGE)
def test_an_unknown_kernel_variable_neither_moves_nor_builds_a_tiny_model(var, value, tmp_path, monkeypatch):
    """A garbage ATEN_CPU_CAPABILITY or MKL_CBWR made kernels_label() say "native": ensure_tiny moved the pinned
    build aside and built another model. The variables are checked before anything in the cache is touched."""
    import dataclasses

    from pods_repro import data as pdata
    from pods_repro import tiny

    monkeypatch.setenv("PODS_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "cache" / "tiny" / "llama-arith"
    out.mkdir(parents=True)
    spec = dataclasses.asdict(tiny.resolve_tiny_spec("llama-arith"))
    card = {"spec": spec, "data_version": pdata.SYNTHETIC_VERSION, "cpu": {"kernels": kernels.kernels_label()}}
    (out / "pods_tiny.json").write_text(json.dumps(card))

    def no_build(*args, **kwargs):
        raise AssertionError("a tiny model was built")

    monkeypatch.setattr(tiny, "build_tiny", no_build)
    assert tiny.ensure_tiny("llama-arith") == out  # the pinned build, as it is
    monkeypatch.setenv(var, value)
    with pytest.raises(ValueError, match=f"{var}={value}"):  # pods_repro.kernels.KernelsError
        tiny.ensure_tiny("llama-arith")
    assert sorted(p.name for p in out.parent.iterdir()) == ["llama-arith"]  # nothing moved aside
    assert json.loads((out / "pods_tiny.json").read_text()) == card


def test_the_values_torch_and_mkl_accept_pass(monkeypatch):
    """Accepted: torch's own names (lower case), MKL's branches (upper case, BRANCH= and ,STRICT allowed),
    PODS_KERNELS=native in any case; a lower-case MKL branch is refused with the spelling that works."""
    monkeypatch.setattr("platform.machine", lambda: "x86_64")
    for var, value in [
        ("ATEN_CPU_CAPABILITY", "default"),
        ("ATEN_CPU_CAPABILITY", "avx512"),
        ("MKL_CBWR", "COMPATIBLE"),
        ("MKL_CBWR", "BRANCH=AVX2,STRICT"),
        ("MKL_CBWR", "SSE4_2"),
        ("PODS_KERNELS", "Native"),
        ("PODS_KERNELS", ""),
    ]:
        monkeypatch.setenv(var, value)
        assert kernels.kernel_env_problem() is None, (var, value)
        monkeypatch.delenv(var)
    monkeypatch.setenv("MKL_CBWR", "avx2")
    assert "MKL_CBWR=AVX2" in kernels.kernel_env_problem()
    monkeypatch.setenv("MKL_CBWR", "AVX2")
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "AVX2")
    assert "ATEN_CPU_CAPABILITY=avx2" in kernels.kernel_env_problem()


@pytest.mark.parametrize(("var", "value"), GARBAGE)
def test_the_installed_command_reports_an_unknown_kernel_variable_in_one_line(var, value, tmp_path):
    """`import pods_repro` pins the kernels, so a garbage variable used to raise at the command's own import, a
    traceback before `pods_repro.cli.main` could word it. The real console script now exits 2 with one line; a
    script gets the same error when it imports the run loop (`pods_repro.run`), and the library, which pins
    nothing, ignores the variable."""
    from pathlib import Path

    env = {**os.environ, var: value}
    exe = Path(sys.executable).with_name("pods")
    out = subprocess.run([str(exe), "config", "eval"], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert f"{var}={value}" in out.stderr
    code = "import pods_repro\ntry:\n    import pods_repro.run\nexcept ValueError as e:\n    print(type(e).__name__)"
    script = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert script.stdout.strip() == "KernelsError", script.stderr[-2000:]
    code = "import os\nenv = dict(os.environ)\nimport pods\npods.select\nassert dict(os.environ) == env\nprint('ok')"
    library = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert library.stdout.strip() == "ok", library.stderr[-2000:]
