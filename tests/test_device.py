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
