import torch

from replikit.data import augment as aug


def _batch(n: int = 8) -> torch.Tensor:
    return torch.rand(n, 3, 16, 16, generator=torch.Generator().manual_seed(1))


def test_identity_spec_leaves_images_unchanged():
    x = _batch()
    u = torch.rand(8, aug.N_UNIFORMS)
    assert torch.equal(aug.augment(x, u, aug.PRESETS["none"]), x)


def test_flip_follows_uniforms():
    x = _batch(2)
    u = torch.full((2, aug.N_UNIFORMS), 0.9)
    u[0, 4] = 0.1  # flip the first image only
    out = aug.augment(x, u, aug.AugmentSpec(flip=True))
    assert torch.equal(out[0], x[0].flip(2))
    assert torch.equal(out[1], x[1])


def test_pad_crop_centre_is_identity_and_offsets_shift():
    x = _batch(2)
    centred = aug.pad_crop(x, torch.full((2, 2), 0.5), pad=4)
    assert torch.equal(centred, x)
    shifted = aug.pad_crop(x, torch.zeros(2, 2), pad=4)  # offset 0: image moves down-right by 4
    assert torch.equal(shifted[:, :, 4:, 4:], x[:, :, :-4, :-4])
    assert torch.all(shifted[:, :, :4, :] == 0)


def test_resized_crop_full_box_is_identity():
    x = _batch(3)
    out = aug.resized_crop(x, torch.rand(3, 4), scale=(1.0, 1.0), ratio=(1.0, 1.0))
    assert torch.allclose(out, x, atol=1e-5)


def test_resized_crop_small_box_zooms_in():
    x = torch.zeros(1, 3, 16, 16)
    x[..., :8, :8] = 1.0  # top-left quadrant white
    u = torch.tensor([[0.0, 0.5, 0.0, 0.0]])  # area 1/4, square, top-left
    out = aug.resized_crop(x, u, scale=(0.25, 0.25), ratio=(1.0, 1.0))
    assert out.mean() > 0.95


def test_grayscale_and_jitter_gates():
    x = _batch()
    u = torch.zeros(8, aug.N_UNIFORMS)  # every gate open
    gray = aug.augment(x, u, aug.AugmentSpec(grayscale_p=1.0))
    assert torch.allclose(gray[:, 0], gray[:, 1]) and torch.allclose(gray[:, 1], gray[:, 2])
    closed = torch.ones(8, aug.N_UNIFORMS) * 0.99
    spec = aug.AugmentSpec(jitter_p=0.5, brightness=0.8, contrast=0.8, saturation=0.8, hue=0.2)
    assert torch.equal(aug.augment(x, closed, spec), x)
    jittered = aug.augment(x, u, spec)
    assert not torch.equal(jittered, x)
    assert jittered.min() >= 0 and jittered.max() <= 1


def test_full_preset_keeps_shape_and_range():
    x = _batch(16)
    out = aug.augment(x, aug.random_uniforms(16, torch.Generator().manual_seed(0)), aug.PRESETS["full"])
    assert out.shape == x.shape
    assert out.min() >= 0 and out.max() <= 1


def test_hashed_uniforms_are_deterministic_and_uniform():
    ids = torch.arange(20000)
    a = aug.hashed_uniforms(123, ids)
    assert torch.equal(a, aug.hashed_uniforms(123, ids))
    assert not torch.equal(a, aug.hashed_uniforms(124, ids))
    assert a.min() >= 0 and a.max() < 1
    assert abs(a.mean().item() - 0.5) < 0.01
    hist = torch.histc(a.flatten(), bins=10, min=0, max=1) / a.numel()
    assert torch.all((hist - 0.1).abs() < 0.01)
    # the same id gives the same row whatever batch it is in
    assert torch.equal(aug.hashed_uniforms(123, torch.tensor([7, 3]))[1], a[3])


def test_bad_uniform_shape_is_rejected():
    try:
        aug.augment(_batch(4), torch.rand(3, aug.N_UNIFORMS), aug.PRESETS["full"])
    except ValueError as e:
        assert "uniforms" in str(e)
    else:
        raise AssertionError("expected ValueError")
