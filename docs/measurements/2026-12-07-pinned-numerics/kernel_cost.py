"""What pinning the kernels costs, and whether it changes the numbers: one training step of an MLP, a
small CNN and a small attention block, 1 thread, in a fresh process per setting (each library reads
its variable once). Prints per setting the ms per step and a digest of the weights after 16 steps.

    python docs/measurements/2026-12-07-pinned-numerics/kernel_cost.py
    python docs/measurements/2026-12-07-pinned-numerics/kernel_cost.py --cpu EPYC-Rome pinned native

KERNEL_COST_NETS (default: all six) picks the networks.
With --cpu MODEL each setting runs under QEMU's user-mode emulation of that CPU (Debian's qemu-user):
the libraries see its CPUID (another vendor, no AVX512), so the digests tell whether the pinned
numbers depend on the CPU. Its times are the emulator's, not the CPU's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

SETTINGS = {
    "native": {"REPLIKIT_NUMERICS": "native"},
    "pinned (MKL AVX2,STRICT)": {},
    "pinned again": {},
    "pinned, MKL AVX2 not strict": {"MKL_CBWR": "AVX2"},
    "pinned, MKL COMPATIBLE": {"MKL_CBWR": "COMPATIBLE,STRICT"},
    "pinned ATen only (MKL, oneDNN free)": {"MKL_CBWR": "AUTO", "MKL_ENABLE_INSTRUCTIONS": "AVX512",
                                           "ONEDNN_MAX_CPU_ISA": "ALL", "DNNL_MAX_CPU_ISA": "ALL"},
}

CHILD = r"""
import hashlib, json, os, sys, time
import replikit  # pins (unless REPLIKIT_NUMERICS=native); then the overrides below win
for k, v in json.loads(sys.argv[1]).items():
    os.environ[k] = v
import torch
from torch import nn
torch.set_num_threads(1)
torch.manual_seed(0)

class Attn(nn.Module):
    def __init__(self, d=128, t=64):
        super().__init__()
        self.emb = nn.Embedding(64, d); self.qkv = nn.Linear(d, 3 * d); self.out = nn.Linear(d, 64)
        self.ln = nn.LayerNorm(d)
    def forward(self, x):
        h = self.ln(self.emb(x)); q, k, v = self.qkv(h).chunk(3, -1)
        a = torch.softmax(q @ k.transpose(1, 2) / 11.3, -1) @ v
        return self.out(h + a)

nets = {
  "mlp": (nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                        nn.Linear(512, 10)),
          lambda: torch.randn(128, 1, 28, 28), lambda: torch.randint(0, 10, (128,))),
  "cnn": (nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)),
          lambda: torch.randn(64, 3, 32, 32), lambda: torch.randint(0, 10, (64,))),
  "attention": (Attn(), lambda: torch.randint(0, 64, (32, 64)), lambda: torch.randint(0, 64, (32, 64))),
  # the same three at a size an emulated CPU trains in minutes
  "mlp_small": (nn.Sequential(nn.Flatten(), nn.Linear(64, 48), nn.Tanh(), nn.Linear(48, 10)),
                lambda: torch.randn(16, 1, 8, 8), lambda: torch.randint(0, 10, (16,))),
  "cnn_small": (nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                              nn.Linear(8, 10)),
                lambda: torch.randn(8, 3, 8, 8), lambda: torch.randint(0, 10, (8,))),
  "attention_small": (Attn(d=16), lambda: torch.randint(0, 64, (4, 16)),
                      lambda: torch.randint(0, 64, (4, 16))),
}
out = {"capability": str(torch.backends.cpu.get_cpu_capability())}
chosen = os.environ.get("KERNEL_COST_NETS", "mlp cnn attention mlp_small cnn_small attention_small").split()
for i, (name, (net, xs, ys)) in enumerate(nets.items()):
    if name not in chosen:
        continue
    torch.manual_seed(100 + i)  # each network's data its own: a digest does not depend on the others run
    opt = torch.optim.Adam(net.parameters(), 1e-3)
    data = [(xs(), ys()) for _ in range(8)]
    def step(x, y):
        opt.zero_grad(); logits = net(x)
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward(); opt.step()
    for x, y in data * 2:  # a fixed number of steps: the digest compares settings
        step(x, y)
    digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in net.parameters())).hexdigest()[:12]
    t = time.perf_counter(); n = 0
    while time.perf_counter() - t < 3 and n < int(os.environ.get("KERNEL_COST_MAX_STEPS", "100000")):
        for x, y in data:
            step(x, y); n += 1
    ms = 1000 * (time.perf_counter() - t) / n
    out[name] = {"ms_per_step": round(ms, 2), "weights": digest}
print(json.dumps(out))
"""


def main(argv: list[str]) -> None:
    prefix = []
    if argv[:1] == ["--cpu"]:
        prefix, argv = ["qemu-x86_64", "-cpu", argv[1]], argv[2:]
    wanted = {name: env for name, env in SETTINGS.items() if not argv or name.split(" (")[0] in argv}
    clean = {k: v for k, v in os.environ.items()
             if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA",
                          "DNNL_MAX_CPU_ISA", "REPLIKIT_NUMERICS")}
    for name, env in wanted.items():
        switch = {k: v for k, v in env.items() if k == "REPLIKIT_NUMERICS"}
        overrides = {k: v for k, v in env.items() if k != "REPLIKIT_NUMERICS"}
        steps = {"KERNEL_COST_MAX_STEPS": "8"} if prefix else {}
        res = subprocess.run([*prefix, sys.executable, "-c", CHILD, json.dumps(overrides)],
                             env={**clean, **switch, **steps}, capture_output=True, text=True, check=True)
        cpu = {"cpu": prefix[-1]} if prefix else {}
        print(json.dumps({"setting": name, **cpu, **json.loads(res.stdout.strip().splitlines()[-1])}))


if __name__ == "__main__":
    main(sys.argv[1:])
