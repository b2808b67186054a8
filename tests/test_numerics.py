"""Pinned numerics (replikit.core.numerics): every job and every test computes at one kernel level,
and a result's provenance says which level computed it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from replikit.core import numerics
from replikit.reporting.provenance import computed_by, other_kernels, runs_computed_by

HAS_AVX2 = bool(numerics.cpu()["avx2"])
needs_avx2 = pytest.mark.skipif(not HAS_AVX2, reason="the pins hold only on an x86-64 CPU with AVX2")

# What a job script does first (workflow/scripts/paper_stage.py), then what it computes with.
JOB = """
import json, os
from replikit.core.jobs import job  # noqa: F401  (the job wrapper's import pins the numerics)
import torch
torch.ones(8) @ torch.ones(8)
from replikit.core import numerics
print(json.dumps({"capability": str(torch.backends.cpu.get_cpu_capability()),
                  "env": {k: os.environ.get(k) for k in numerics.PINNED_ENV}, "kernels": numerics.kernels()}))
"""


def _job(**env: str) -> dict:
    """Run JOB in a fresh interpreter whose environment holds none of the pins (as a user's shell)."""
    clean = {k: v for k, v in os.environ.items() if k not in numerics.PINNED_ENV and k != numerics.SWITCH}
    out = subprocess.run([sys.executable, "-c", JOB], env={**clean, **env}, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@needs_avx2
def test_a_job_computes_at_the_pinned_kernels_from_a_shell_that_set_none():
    seen = _job()
    assert seen["capability"] == numerics.PINNED_LEVEL == seen["kernels"]
    assert seen["env"] == numerics.PINNED_ENV


@needs_avx2
def test_a_pin_overrides_a_callers_own_value():
    """A pin is not a default: a shell's wider setting does not reach the kernels."""
    seen = _job(ATEN_CPU_CAPABILITY="avx512", MKL_CBWR="AUTO")
    assert seen["capability"] == "AVX2" and seen["env"]["MKL_CBWR"] == numerics.PINNED_ENV["MKL_CBWR"]


def test_native_numerics_are_marked_as_another_kernel_level():
    seen = _job(REPLIKIT_NUMERICS="native")
    assert seen["env"] == {k: None for k in numerics.PINNED_ENV}
    assert seen["kernels"] == f"{seen['capability']}, not pinned"
    note = numerics.other_level_note(seen["kernels"], 3)
    assert note.startswith("3 run(s) computed at another kernel level")


@needs_avx2
def test_the_tests_themselves_run_pinned():
    """conftest.py pins before torch is imported, so every test computes as the jobs do."""
    assert numerics.pinned() and numerics.kernels() == "AVX2"
    record = numerics.record()
    assert record["kernels"] == "AVX2" and record["cpu"] and record["torch"] and record["mkl"]


def test_a_runs_provenance_names_its_kernels_and_the_report_flags_another_level():
    record = computed_by("replikit.core.numerics")
    assert record["kernels"] == numerics.kernels() and record["cpu"] == numerics.cpu()["model"]
    pinned = {"computed_by": {**record, "kernels": "AVX2", "module": "m", "rule": "r"}}
    wide = {"computed_by": {**record, "kernels": "AVX512, not pinned", "module": "m", "rule": "r"}}
    groups = runs_computed_by([pinned, pinned, wide])
    assert sorted((g["kernels"], g["n_runs"]) for g in groups) == [("AVX2", 2), ("AVX512, not pinned", 1)]
    notes = other_kernels({"runs": groups + ["results/p/runs/x/seed0/metrics.json"]})
    assert len(notes) == 1 and notes[0].startswith("m: 1 run(s) computed at another kernel level "
                                                   "(AVX512, not pinned, not the pinned AVX2)")
    assert other_kernels({"runs": runs_computed_by([pinned])}) == []


def test_on_a_cpu_without_avx2_the_run_goes_on_unpinned_and_says_so(monkeypatch):
    """No AVX2 (or not x86-64): nothing is pinned (NumPy would refuse to start), and every result is
    marked as computed at another kernel level."""
    monkeypatch.setattr(numerics, "cpu", lambda: {"model": "old CPU", "vendor": "x", "machine": "x86_64",
                                                   "avx2": False, "avx512": False})
    environ: dict[str, str] = {}
    numerics.pin_environment(environ)
    assert environ == {}
    monkeypatch.setattr(numerics, "kernel_level", lambda: "DEFAULT")
    assert numerics.kernels() == "DEFAULT, pins do not hold on this CPU" and not numerics.pinned()
    note = numerics.other_level_note(numerics.kernels(), 1)
    assert "another kernel level (DEFAULT, pins do not hold" in note


@needs_avx2
def test_another_vendors_cpu_is_marked_as_another_level(monkeypatch):
    """MKL keeps its reproducible AVX2 branch for Intel CPUs: pinned weights on an emulated AMD EPYC
    differed from an Intel CPU's (docs/measurements/2026-12-07-pinned-numerics), so the pins hold only
    on Intel, and another vendor's results say so."""
    assert numerics.kernels() == "AVX2" or numerics.cpu()["vendor"] != "GenuineIntel"
    amd = {**numerics.cpu(), "vendor": "AuthenticAMD"}
    monkeypatch.setattr(numerics, "cpu", lambda: amd)
    assert numerics.kernels() == "AVX2, MKL unpinned on a non-Intel CPU" and not numerics.pinned()
