"""Which CPU kernels torch runs: pinned to one instruction set, so that CPU results are the same bits on
the x86-64 machines of one CPU vendor that have it (AMD and Intel differ, below).

torch picks its CPU kernels at the first operation: its own (ATen) vectorised kernels by the best
instruction set the CPU has (``torch.backends.cpu.get_cpu_capability()``: AVX2, AVX512, ...), and MKL's
matrix products by MKL's own dispatch. Float rounding differs between those code paths. For most work
that is harmless; for the tiny scale it is not: its warm start (pods.tiny) is a chaotic SFT run stopped
at a sampled-accuracy check, and measured on two AMD EPYC hosts, the unpinned builds of
``tiny:llama-arith_warm`` stopped at 450 SFT steps (AVX512 kernels, 62.4% sampled test accuracy) and at
650 (AVX2, 79.4%): two different models, and every tiny table after them differed.

``pin_cpu_kernels()`` sets, for this process, ``ATEN_CPU_CAPABILITY=avx2`` (ATen's AVX2 kernels, also on a
CPU with AVX512) and ``MKL_CBWR=AVX2`` (MKL's conditional bitwise reproducibility on its AVX2 path). Both
are read at torch's first operation, so it must run before any tensor is made; the ``pods`` command
(pods/cli.py), ``python -m pods.models`` and the test suite call it first. AVX2 is the choice because
nearly every x86-64 CPU of the last decade has it (Intel since 2013, AMD since 2015), and for the tiny
models it costs no time: the pinned-to-baseline alternative (``default`` / ``COMPATIBLE``) made a tiny
training step 1.6x slower here. Measured on this AVX2-only host: a build under the pins is byte-identical
to the unpinned one, and one under ``MKL_CBWR`` with MKL limited to SSE4.2 is byte-identical to one without
the limit; the AVX512 host's build under ``ATEN_CPU_CAPABILITY=avx2`` stopped, like this host's, at 650
steps with the same test accuracies (notebook/LOG.md#2026-11-25-torchs-cpu-kernels-pinned-to-avx2).

Across vendors the pin does not hold
(notebook/LOG.md#2026-11-26-a-second-kind-of-cpu-the-h200-machines-intel-xeon): on an Intel
Xeon (AVX512, AMX) under the same two variables MKL's matrix-vector product, some matrix shapes and its
vector ``exp``/``log`` round otherwise than on the AMD EPYC hosts, and the warm build stopped at 550
steps, not 650 (notebook/scripts/kernel_fingerprint.py locates such differences). ``MKL_CBWR=COMPATIBLE`` makes
every probed operation agree but the AdamW step, gives another model on AMD and costs a tiny step 1.14x,
so the pin stays AVX2 and the tables are the same bits per vendor, not everywhere.

``PODS_KERNELS=native`` leaves torch's own choice (e.g. to time AVX512 kernels); a variable the user set
is kept, once it is checked (:func:`kernel_env_problem`): torch ignores an ``ATEN_CPU_CAPABILITY`` it does
not know (a warning at its first operation), MKL an unknown ``MKL_CBWR`` without a word, so a typo would run
kernels nobody chose and rebuild the tiny models under them. An unknown value of either, or of
``PODS_KERNELS``, is refused (:class:`KernelsError`, exit 2) before torch runs or a model is moved or built. On a CPU without AVX2 (or not x86-64) nothing is pinned and the run's record says so: its bits
then match only machines of its own kind. Each run's ``config.json`` ``meta.cpu`` and each tiny model's
card record ``kernels`` (pods.runlog.cpu_info), and a cached tiny model built under other kernels is
rebuilt (pods.tiny.ensure_tiny).
"""

from __future__ import annotations

import os
import platform
import sys

PINNED = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"}
OPT_OUT = "PODS_KERNELS"  # =native: torch's own dispatch

# The values torch's dispatcher reads (aten/src/ATen/native/DispatchStub.cpp: exact, lower case), by machine;
# another machine may take any of them.
ATEN_VALUES = {
    "x86_64": ("default", "avx2", "avx512"),
    "amd64": ("default", "avx2", "avx512"),
    "aarch64": ("default", "sve128", "sve256"),
    "arm64": ("default", "sve128", "sve256"),
    "ppc64le": ("default", "vsx"),
    "s390x": ("default", "zvector"),
}
# MKL's conditional-reproducibility branches (oneMKL developer guide, "Specifying Code Branches"), written
# ``<branch>`` or ``BRANCH=<branch>``, optionally followed by ``,STRICT``.
MKL_BRANCHES = (
    "AUTO",
    "COMPATIBLE",
    "SSE2",
    "SSE3",
    "SSSE3",
    "SSE4_1",
    "SSE4_2",
    "AVX",
    "AVX2",
    "AVX512",
    "AVX512_E1",
    "AVX512_MIC",
    "AVX512_MIC_E1",
)


class KernelsError(ValueError):
    """A kernel variable (ATEN_CPU_CAPABILITY, MKL_CBWR, PODS_KERNELS) holds a value nothing accepts; exit 2."""


def _mkl_branch(value: str) -> str | None:
    """The branch of an MKL_CBWR value (``AVX2``, ``BRANCH=AVX2,STRICT``), None if MKL would not take it."""
    branch, _, flag = value.partition(",")
    branch = branch.removeprefix("BRANCH=")
    return branch if branch in MKL_BRANCHES and flag in ("", "STRICT") else None


def kernel_env_problem() -> str | None:
    """What is wrong with this process's ATEN_CPU_CAPABILITY, MKL_CBWR or PODS_KERNELS, in one line with the
    fix (None: each is unset or a value it accepts)."""
    aten = os.environ.get("ATEN_CPU_CAPABILITY")
    if aten:
        machine = platform.machine().lower()
        known = ATEN_VALUES.get(machine) or tuple(dict.fromkeys(v for vs in ATEN_VALUES.values() for v in vs))
        if aten not in known:
            hint = f"ATEN_CPU_CAPABILITY={aten.lower()}" if aten.lower() in known else "one of those"
            return (
                f"ATEN_CPU_CAPABILITY={aten} is not a value torch accepts ({', '.join(known)} on {machine or 'this'} "
                "CPUs; torch would ignore it and pick its own kernels). Fix: unset it (the package pins avx2), or set "
                f"{hint}"
            )
    mkl = os.environ.get("MKL_CBWR")
    if mkl and _mkl_branch(mkl) is None:
        hint = f"MKL_CBWR={mkl.upper()}" if _mkl_branch(mkl.upper()) else "one of those"
        return (
            f"MKL_CBWR={mkl} is not an MKL branch as MKL spells them ({', '.join(MKL_BRANCHES)}, optionally as "
            "BRANCH=<branch> and with ,STRICT; MKL ignores a value it does not know without a word). Fix: unset it "
            f"(the package pins AVX2), or set {hint}"
        )
    opt_out = os.environ.get(OPT_OUT)
    if opt_out and opt_out.lower() != "native":
        return (
            f"{OPT_OUT}={opt_out} is not a setting (native: torch's own CPU kernels; unset: kernels pinned to "
            f"AVX2). Fix: set {OPT_OUT}=native or unset it"
        )
    return None


def check_kernel_env() -> None:
    """:class:`KernelsError` if :func:`kernel_env_problem` finds one."""
    problem = kernel_env_problem()
    if problem:
        raise KernelsError(problem)


def cpuinfo_field(name: str) -> str | None:
    """The value of the first ``name`` line of /proc/cpuinfo ("model name", "flags"), stripped; None where
    there is no such line or no /proc/cpuinfo (not Linux)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for ln in fh:
                key, sep, value = ln.partition(":")
                if sep and key.strip() == name:
                    return value.strip()
    except OSError:
        pass
    return None


def _cpu_has_avx2() -> bool:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    return "avx2" in (cpuinfo_field("flags") or "").split()


def pin_cpu_kernels() -> str:
    """Pin this process's CPU kernels to AVX2 (see the module docstring) unless PODS_KERNELS=native or the CPU
    has no AVX2; returns kernels_label(). torch reads both variables at its first operation, not at import,
    so this works after ``import torch`` but not after a tensor was made (the label then says "native").
    :class:`KernelsError` first if one of the variables holds an unknown value."""
    check_kernel_env()
    if os.environ.get(OPT_OUT, "").lower() != "native" and _cpu_has_avx2():
        for key, value in PINNED.items():
            os.environ.setdefault(key, value)
    return kernels_label()


def kernels_label() -> str:
    """ "avx2" when this process's kernels are pinned as PINNED, else "native" (torch's own choice, or a
    user's own variables): what the run's record and the tiny model's card say."""
    if not all(os.environ.get(key, "").lower() == value.lower() for key, value in PINNED.items()):
        return "native"
    if "torch" in sys.modules:  # the variables count only if torch's first operation came after them
        torch = sys.modules["torch"]
        if torch.backends.cpu.get_cpu_capability() != "AVX2":
            return "native"
    return "avx2"
