"""Pinned numerics: the same kernels, so the same numbers, on every Intel x86-64 CPU with AVX2.

PyTorch picks its CPU kernels by the widest instruction set the CPU offers (AVX512 on one machine,
AVX2 on another), and so do the libraries it calls (MKL for matrix products, oneDNN for
convolutions). Their results differ in the last bits, and a learning-rate sweep near divergence
turns such bits into another optimum, so a verdict would depend on the vector width of the CPU it
ran on; NumPy dispatches its loops the same way. `pin_environment` fixes every library at AVX2,
the widest level that every supported x86-64 CPU has; it runs when `replikit` is imported
(`replikit/__init__.py`), so in every job and every test before torch computes anything, and
Snakemake's jobs inherit it from the workflow.

`REPLIKIT_NUMERICS=native` lets each library pick its own kernels again (faster on some CPUs, and
every result is then marked "computed at another kernel level"). On a CPU without AVX2, or not
x86-64, the pins cannot hold, and on another vendor's CPU MKL ignores its pin: the run goes on, and
its results are marked the same way (`kernels`).
"""

from __future__ import annotations

import functools
import os
import platform
from pathlib import Path

# The one kernel level every result is computed at, as torch names it.
PINNED_LEVEL = "AVX2"

# Set before torch computes anything (each library reads its variable once, at its first call).
PINNED_ENV = {
    "ATEN_CPU_CAPABILITY": "avx2",  # PyTorch's own kernels (elementwise, reductions, softmax ...)
    "MKL_CBWR": "AVX2,STRICT",  # MKL's conditional numerical reproducibility: its AVX2 branch
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",  # MKL dispatches nothing wider, also where CBWR cannot hold
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN's JIT kernels (convolutions)
    "DNNL_MAX_CPU_ISA": "AVX2",  # the same, by its older name
    "NPY_ENABLE_CPU_FEATURES": "X86_V3",  # NumPy's dispatched loops (exp, log, sums ...) at AVX2 too
}
SWITCH = "REPLIKIT_NUMERICS"  # "native": no pins


def pinning_wanted(environ: os._Environ | dict = os.environ) -> bool:
    """Pins unless `REPLIKIT_NUMERICS=native`."""
    return environ.get(SWITCH, "pinned").strip().lower() != "native"


def pin_environment(environ: os._Environ | dict = os.environ) -> None:
    """Set every variable of PINNED_ENV (overriding a caller's own value: a pin is not a default);
    nothing under `REPLIKIT_NUMERICS=native`, nor on a CPU without AVX2 (NumPy refuses to start when
    asked for a level its CPU lacks; there the results are marked as of another kernel level)."""
    if pinning_wanted(environ) and cpu()["avx2"]:
        environ.update(PINNED_ENV)


@functools.lru_cache(maxsize=1)
def cpu() -> dict[str, str | bool]:
    """The CPU: its model, vendor, and whether it has AVX2 and AVX512 (from /proc/cpuinfo)."""
    info: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    flags = set(info.get("flags", "").split())
    return {"model": info.get("model name") or platform.processor() or platform.machine() or "unknown",
            "vendor": info.get("vendor_id", "unknown"), "machine": platform.machine(),
            "avx2": "avx2" in flags, "avx512": "avx512f" in flags}


def kernel_level() -> str:
    """The kernel level in force, as torch names it (`AVX2` when pinned on an x86-64 CPU with AVX2)."""
    import torch

    return str(torch.backends.cpu.get_cpu_capability())


@functools.lru_cache(maxsize=1)
def library_versions() -> dict[str, str]:
    """torch, the MKL and oneDNN it was built with (from `torch.__config__.show()`), and NumPy with
    the widest of its dispatched CPU levels in force."""
    import numpy
    import torch

    out = {"torch": torch.__version__, "numpy": numpy.__version__, "numpy_dispatch": numpy_dispatch()}
    for line in torch.__config__.show().splitlines():
        text = line.strip(" -")
        if "Math Kernel Library Version" in text:
            out["mkl"] = text.split("Version", 1)[1].split("-")[0].strip()
        elif text.startswith(("Intel(R) MKL-DNN", "oneDNN")):
            out["onednn"] = text.split()[-3] if "(Git" in text else text.split()[-1]
    return out


def numpy_dispatch() -> str:
    """NumPy's dispatched CPU levels in force, e.g. `X86_V3` when pinned on an AVX512 CPU."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # another NumPy layout: unknown
        return "unknown"
    return " ".join(k for k in __cpu_dispatch__ if __cpu_features__.get(k)) or "baseline"


def pinned() -> bool:
    """Every library at the pinned level (`kernels` says PINNED_LEVEL)."""
    return kernels() == PINNED_LEVEL


def kernels() -> str:
    """The kernel level a result is computed at: PINNED_LEVEL where every pin holds (pins wanted and
    set, torch at PINNED_LEVEL, NumPy dispatching nothing wider, an Intel CPU), else torch's level and
    why it is not the pinned one, e.g. `AVX512, not pinned`. MKL runs its reproducible AVX2 branch on
    Intel CPUs only (Intel's documentation; on an emulated AMD EPYC the pinned weights differed from an
    Intel CPU's, docs/measurements/2026-12-07-pinned-numerics), so another vendor's results are of
    another level. NumPy reads its variable when imported: one imported before `replikit` is not
    pinned."""
    level = kernel_level()
    if not pinning_wanted():
        return f"{level}, not pinned"
    if not (all(os.environ.get(k) == v for k, v in PINNED_ENV.items()) and level == PINNED_LEVEL
            and numpy_dispatch() == PINNED_ENV["NPY_ENABLE_CPU_FEATURES"]):
        return f"{level}, pins do not hold on this CPU"
    if cpu()["vendor"] != "GenuineIntel":
        return f"{level}, MKL unpinned on a non-Intel CPU"
    return PINNED_LEVEL


def record() -> dict:
    """What a result's provenance says about its numerics: the CPU, the kernel level in force (torch's
    own and `kernels`), the libraries' versions and the pins set."""
    import torch

    return {"cpu": cpu()["model"], "kernels": kernels(), "torch_capability": kernel_level(),
            "deterministic": bool(torch.are_deterministic_algorithms_enabled()),
            **library_versions(), "env": {k: os.environ.get(k, "") for k in PINNED_ENV}}


def other_level_note(kernels: str | None, n_runs: int) -> str | None:
    """The report's line for runs computed at another kernel level than the pinned one; None when
    they were computed at it, or recorded none (runs from before the pins: their code is stale too)."""
    if kernels is None or kernels == PINNED_LEVEL:
        return None
    return (f"{n_runs} run(s) computed at another kernel level ({kernels}, not the pinned {PINNED_LEVEL}): "
            "their numbers may differ in the last bits from a pinned run's, and a verdict near its "
            f"margin may read otherwise; rerun them where the pins hold (not `{SWITCH}=native`, an "
            "x86-64 CPU with AVX2) to compare")
