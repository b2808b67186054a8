"""Why does SP's optimum not move at smoke? One seed (100, never a verdict seed), plain branches, depth 2,
the smoke grid and budget; widths 32, 128, 512; muP against SP. Prints each sweep's losses and argmin.

    python sp_probe.py <tree>/resources/data/cifar10 out.json
"""

import json
import sys
import time

import torch

from replikit.data.prepare import load_prepared
from replikit.papers import depthwise_transfer as dt
from replikit.plan.bill import load

torch.set_num_threads(1)
cfg = load(["config/smoke.yaml"])["depthwise_transfer"]
root = sys.argv[1]  # a prepared CIFAR-10: <tree>/resources/data/cifar10
data = load_prepared(f"{root}/tensors.pt", f"{root}/manifest.json")
out = {}
for width in (32, 128, 512):
    for param in ("mup", "sp"):
        t = time.time()
        r = dt.run_sweep(dt.sweep("one", 2, width, param=param), cfg, data, 100)
        losses = {it["lr"]: it["train_loss"] for it in r["items"]}
        ok = {k: v for k, v in losses.items() if v is not None}
        best = min(ok, key=ok.get) if ok else None
        out[f"{param}-{width}"] = {"losses": losses, "best": best}
        print(param, width, "best eta0", best, f"{time.time() - t:.0f}s", flush=True)
with open(sys.argv[2], "w") as f:
    json.dump(out, f, indent=1)
