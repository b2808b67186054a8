import subprocess
import sys

import pytest
import torch

from replikit.core.device import choose_device, set_threads


def test_device_choice():
    assert choose_device("cpu") == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert choose_device("auto").type == expected
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="no CUDA device"):
            choose_device("cuda")
    with pytest.raises(ValueError):
        choose_device("tpu")


def test_set_threads():
    before = torch.get_num_threads()
    set_threads(1)
    assert torch.get_num_threads() == 1
    set_threads(before)


EAGER_SCRIPT = """
import sys, torch
from replikit.core.device import eager_only
if sys.argv[1] == "eager":
    eager_only()
torch.manual_seed(0)
net = torch.nn.Linear(8, 8)
params = list(net.parameters())
for opt in (torch.optim.Adam(params, lr=0.1), torch.optim.SGD(params, lr=0.1, momentum=0.9)):
    for _ in range(3):
        opt.zero_grad()
        net(torch.ones(2, 8)).square().sum().backward()
        opt.step()
    opt.load_state_dict(opt.state_dict())
before = type(sys.modules["torch._dynamo"]).__name__
from torch.utils.checkpoint import checkpoint
checkpoint(net, torch.ones(2, 8, requires_grad=True), use_reentrant=False).sum().backward()
print(before, type(sys.modules["torch._dynamo"]).__name__, net.weight.sum().item().hex())
"""


def test_eager_only_trains_as_the_real_compiler_module_and_imports_it_when_asked():
    """Optimizers run on the stand-in (torch's compiler is not imported), their numbers are bitwise the
    real module's, and activation checkpointing, which reads the compiler's config, gets the real one."""
    def run(mode: str) -> list[str]:
        res = subprocess.run([sys.executable, "-c", EAGER_SCRIPT, mode], capture_output=True, text=True,
                             check=True)
        return res.stdout.split()

    eager, real = run("eager"), run("real")
    assert eager[:2] == ["_EagerDynamo", "module"] and real[:2] == ["module", "module"]
    assert eager[2] == real[2]
