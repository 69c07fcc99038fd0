"""Which CPU kernels torch runs: pinned to one instruction set, so that CPU results are the same bits on
the x86-64 machines of one CPU vendor that have it (AMD and Intel differ, below).

The details: docs/design.md, "Module notes" (`pods_repro/kernels.py`).
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
