"""Training jobs' progress lines: plain text, one per epoch/evaluation/network, with elapsed and ETA."""

import io

from replikit.core.progress import Progress, duration
from replikit.core.training import LoopConfig, train_loop


def test_duration_and_line_shape():
    assert (duration(5), duration(187), duration(7500)) == ("5s", "3m07s", "2h05m")
    out = io.StringIO()
    p = Progress("epoch", 10, start=2, stream=out)
    p.update(4, loss=0.5, test_nll=float("nan"), skipped=None)
    line = out.getvalue()
    assert line.startswith("[progress] epoch 4/10 | loss 0.5 | test_nll nan | elapsed ")
    assert "ETA " in line and "skipped" not in line and "\r" not in line and line.count("\n") == 1
    assert p.line(10).endswith("ETA 0s")


def test_train_loop_prints_one_plain_line_per_epoch(capsys):
    import torch

    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 2)
    history = train_loop(model, opt, lambda idx: model(x[idx]).pow(2).mean(), 8,
                         LoopConfig(3, 4, eval_every=1), torch.Generator().manual_seed(0),
                         evaluate=lambda e: {"metric": float(e)})
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("[progress]")]
    assert [ln.split(" | ")[0] for ln in lines] == ["[progress] epoch 1/3", "[progress] epoch 2/3",
                                                    "[progress] epoch 3/3"]
    assert all("| loss " in ln and "| metric " in ln and "ETA" in ln for ln in lines)
    assert len(history) == 4
