import torch

from replikit.models import build_model


def test_cnn4_stages_and_output():
    m = build_model("cnn4", num_classes=10, width=8, projector_width=32)
    feats = m.stage_outputs(torch.rand(2, 3, 32, 32))
    assert list(feats) == m.stage_names
    assert feats["stem"].shape == (2, 8 * 4) and feats["pooled"].shape == (2, 64)
    assert feats["block3"].shape == (2, 64 * 4)  # 2x2-pooled conv map, not the same as `pooled`
    assert feats["projector"].shape == (2, 32) and feats["output"].shape == (2, 10)
    assert m.head.hidden.bias is None and m.head.out.bias is None


def test_resnet18_has_cifar_stem_and_bias_free_head():
    m = build_model("resnet18", num_classes=10, width=64, projector_width=128)
    assert m.encoder.conv1.stride == (1, 1) and m.encoder.conv1.kernel_size == (3, 3)
    assert isinstance(m.encoder.maxpool, torch.nn.Identity)
    stages = dict(m.stages(torch.rand(2, 3, 32, 32)))
    assert stages["stem"].shape[-1] == 32  # no down-sampling in the stem
    assert stages["pooled"].shape == (2, 512) and stages["output"].shape == (2, 10)
    assert m.head.hidden.bias is None


def test_unknown_model_is_rejected():
    try:
        build_model("vgg", 10, 8, 8)
    except ValueError as e:
        assert "vgg" in str(e)
    else:
        raise AssertionError


def test_build_model_is_channels_last_and_layout_does_not_change_the_output():
    torch.manual_seed(0)
    model = build_model("cnn4", num_classes=10, width=8, projector_width=32).eval()
    conv = model.stem[0].weight
    assert conv.is_contiguous(memory_format=torch.channels_last) and not conv.is_contiguous()
    plain = build_model("cnn4", num_classes=10, width=8, projector_width=32).eval()
    plain.load_state_dict(model.state_dict())
    plain = plain.to(memory_format=torch.contiguous_format)
    x = torch.rand(4, 3, 32, 32)
    torch.testing.assert_close(model(x), plain(x), rtol=1e-4, atol=1e-5)
