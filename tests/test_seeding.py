import subprocess
import sys

import torch

from replikit.core.seeding import deterministic_default, seed_everything


def test_deterministic_on_cpu_and_configurable(monkeypatch):
    monkeypatch.delenv("REPLIKIT_DETERMINISTIC", raising=False)
    assert deterministic_default("cpu") is True
    assert deterministic_default(torch.device("cuda")) is False
    assert deterministic_default() is (not torch.cuda.is_available())
    monkeypatch.setenv("REPLIKIT_DETERMINISTIC", "1")
    assert deterministic_default("cuda") is True
    monkeypatch.setenv("REPLIKIT_DETERMINISTIC", "0")
    assert deterministic_default("cpu") is False
    monkeypatch.delenv("REPLIKIT_DETERMINISTIC")
    seed_everything(0)
    if not torch.cuda.is_available():  # CPU runs: as before, deterministic algorithms on
        assert torch.are_deterministic_algorithms_enabled()
    a = torch.randn(3, generator=seed_everything(5, device="cpu"))
    assert torch.equal(a, torch.randn(3, generator=seed_everything(5)))


def test_deterministic_switch_sets_what_torch_sets_without_loading_the_compiler():
    """The switch sets the eager flag as `torch.use_deterministic_algorithms(mode, warn_only=True)`
    would, in a fresh interpreter that has not loaded torch's compiler (which costs a job about 1.3 s
    of start-up), and sets the compiler's flag too once the compiler is loaded."""
    code = (
        "import sys, torch\n"
        "from replikit.core.seeding import seed_everything, set_deterministic_algorithms\n"
        "seed_everything(0, device='cpu')\n"
        "print(torch.are_deterministic_algorithms_enabled(),\n"
        "      torch.is_deterministic_algorithms_warn_only_enabled(),\n"
        "      'torch._inductor.config' in sys.modules)\n"
        "import torch._inductor.config as c\n"
        "set_deterministic_algorithms(True); a = c.deterministic\n"
        "set_deterministic_algorithms(False)\n"
        "print(a, c.deterministic, torch.are_deterministic_algorithms_enabled())\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    out = run.stdout.split()
    assert out == ["True", "True", "False", "True", "False", "False"], out
