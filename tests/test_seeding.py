import torch

from replikit.seeding import deterministic_default, seed_everything


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
