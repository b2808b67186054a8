"""Batched image augmentations as tensor ops on the device (no per-sample Python).

Every random choice is read from a tensor of uniforms `u` of shape (batch, N_UNIFORMS).
Fresh augmentations draw `u` from a generator; a fixed set of K augmentations per
image reads `u` from a counter-based hash of (image index, augmentation index), so
augmentation k of image i is the same crop, flip and colour change every epoch.
Images are float tensors in [0, 1], shape (batch, channels, height, width).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

N_UNIFORMS = 11  # crop: 4, flip: 1, colour jitter: 1 gate + 4 factors, grayscale: 1
_GRAY = (0.299, 0.587, 0.114)


@dataclass(frozen=True)
class AugmentSpec:
    """Which augmentations to apply; `crop` is `none`, `pad` (pad + random crop) or `resized`."""

    crop: str = "none"
    pad: int = 4
    scale: tuple[float, float] = (0.08, 1.0)
    ratio: tuple[float, float] = (3 / 4, 4 / 3)
    flip: bool = False
    jitter_p: float = 0.0
    brightness: float = 0.0
    contrast: float = 0.0
    saturation: float = 0.0
    hue: float = 0.0
    grayscale_p: float = 0.0

    def __post_init__(self) -> None:
        if self.crop not in ("none", "pad", "resized"):
            raise ValueError(f"augmentation crop must be none, pad or resized, not {self.crop!r}")

    @property
    def is_identity(self) -> bool:
        return (
            self.crop == "none" and not self.flip and self.jitter_p == 0 and self.grayscale_p == 0
        )


PRESETS: dict[str, AugmentSpec] = {
    "none": AugmentSpec(),
    "crop_flip": AugmentSpec(crop="pad", pad=4, flip=True),
    # A milder SimCLR-style mix for CPU scales: pad-crop + flip + jitter p=.8 + grayscale p=.2.
    "light": AugmentSpec(
        crop="pad", pad=4, flip=True, jitter_p=0.8, brightness=0.4, contrast=0.4,
        saturation=0.4, hue=0.1, grayscale_p=0.2,
    ),
    # Anagnostidis et al. "full": RandomResizedCrop(0.08-1) + flip + ColorJitter(.8,.8,.8,.2) p=.8
    # + grayscale p=.2 (SimCLR-style).
    "full": AugmentSpec(
        crop="resized", flip=True, jitter_p=0.8, brightness=0.8, contrast=0.8,
        saturation=0.8, hue=0.2, grayscale_p=0.2,
    ),
}


def gray(x: torch.Tensor) -> torch.Tensor:
    """Luma of RGB images, shape (batch, 1, H, W)."""
    w = torch.tensor(_GRAY, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    return (x * w).sum(1, keepdim=True)


def resized_crop(x: torch.Tensor, u: torch.Tensor, scale: tuple[float, float],
                 ratio: tuple[float, float]) -> torch.Tensor:
    """Crop a box of random area fraction and aspect ratio, resize it back (bilinear)."""
    area = scale[0] + u[:, 0] * (scale[1] - scale[0])
    log_r = math.log(ratio[0]) + u[:, 1] * (math.log(ratio[1]) - math.log(ratio[0]))
    r = torch.exp(log_r)
    w = torch.sqrt(area * r).clamp(max=1.0)  # box sides as fractions of the image side
    h = torch.sqrt(area / r).clamp(max=1.0)
    cx = (w / 2 + u[:, 2] * (1 - w)) * 2 - 1  # box centre in [-1, 1] coordinates
    cy = (h / 2 + u[:, 3] * (1 - h)) * 2 - 1
    theta = torch.zeros(x.shape[0], 2, 3, dtype=x.dtype, device=x.device)
    theta[:, 0, 0], theta[:, 0, 2] = w, cx
    theta[:, 1, 1], theta[:, 1, 2] = h, cy
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)


def pad_crop(x: torch.Tensor, u: torch.Tensor, pad: int) -> torch.Tensor:
    """Zero-pad by `pad` pixels and take a random crop of the original size."""
    b, _, hgt, wid = x.shape
    xp = F.pad(x, (pad, pad, pad, pad))
    oy = (u[:, 0] * (2 * pad + 1)).long().clamp(max=2 * pad)
    ox = (u[:, 1] * (2 * pad + 1)).long().clamp(max=2 * pad)
    rows = (oy[:, None] + torch.arange(hgt, device=x.device))[:, None, :, None]
    cols = (ox[:, None] + torch.arange(wid, device=x.device))[:, None, None, :]
    bidx = torch.arange(b, device=x.device)[:, None, None, None]
    cidx = torch.arange(x.shape[1], device=x.device)[None, :, None, None]
    return xp[bidx, cidx, rows, cols]


def _rotate_hue(x: torch.Tensor, turns: torch.Tensor) -> torch.Tensor:
    """Rotate hue by `turns` of a full circle (rotation of the chroma plane in YIQ space)."""
    to_yiq = torch.tensor([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322],
                           [0.211, -0.523, 0.312]], dtype=x.dtype, device=x.device)
    from_yiq = torch.linalg.inv(to_yiq)
    ang = turns * 2 * math.pi
    cos, sin = torch.cos(ang), torch.sin(ang)
    rot = torch.zeros(x.shape[0], 3, 3, dtype=x.dtype, device=x.device)
    rot[:, 0, 0] = 1
    rot[:, 1, 1], rot[:, 1, 2], rot[:, 2, 1], rot[:, 2, 2] = cos, -sin, sin, cos
    mat = from_yiq @ rot @ to_yiq  # (batch, 3, 3)
    return torch.einsum("bij,bjhw->bihw", mat, x)


def color_jitter(x: torch.Tensor, u: torch.Tensor, spec: AugmentSpec) -> torch.Tensor:
    """With probability `jitter_p`: brightness, contrast, saturation, hue (fixed order)."""
    def factor(col: int, strength: float) -> torch.Tensor:
        return (1 + strength * (2 * u[:, col] - 1)).clamp(min=0).view(-1, 1, 1, 1)

    y = (x * factor(1, spec.brightness)).clamp(0, 1)
    mean = gray(y).mean(dim=(1, 2, 3), keepdim=True)
    y = ((y - mean) * factor(2, spec.contrast) + mean).clamp(0, 1)
    g = gray(y)
    y = ((y - g) * factor(3, spec.saturation) + g).clamp(0, 1)
    if spec.hue > 0:
        y = _rotate_hue(y, spec.hue * (2 * u[:, 4] - 1)).clamp(0, 1)
    apply = (u[:, 0] < spec.jitter_p).view(-1, 1, 1, 1)
    return torch.where(apply, y, x)


def augment(x: torch.Tensor, u: torch.Tensor, spec: AugmentSpec) -> torch.Tensor:
    """Apply `spec` to a batch, reading every random choice from `u` (batch, N_UNIFORMS)."""
    if u.shape != (x.shape[0], N_UNIFORMS):
        raise ValueError(f"expected uniforms of shape {(x.shape[0], N_UNIFORMS)}, got {tuple(u.shape)}")
    u = u.to(device=x.device, dtype=x.dtype)
    if spec.crop == "resized":
        x = resized_crop(x, u[:, 0:4], spec.scale, spec.ratio)
    elif spec.crop == "pad":
        x = pad_crop(x, u[:, 0:2], spec.pad)
    if spec.flip:
        x = torch.where((u[:, 4] < 0.5).view(-1, 1, 1, 1), x.flip(3), x)
    if spec.jitter_p > 0:
        x = color_jitter(x, u[:, 5:10], spec)
    if spec.grayscale_p > 0 and x.shape[1] == 3:
        x = torch.where((u[:, 10] < spec.grayscale_p).view(-1, 1, 1, 1), gray(x).expand_as(x), x)
    return x


def _hash32(v: torch.Tensor) -> torch.Tensor:
    """lowbias32 integer hash on int64 tensors holding 32-bit values."""
    mask = 0xFFFFFFFF
    v = v & mask
    v = v ^ (v >> 16)
    v = (v * 0x7FEB352D) & mask
    v = v ^ (v >> 15)
    v = (v * 0x846CA68B) & mask
    return v ^ (v >> 16)


def hashed_uniforms(seed: int, ids: torch.Tensor, n: int = N_UNIFORMS) -> torch.Tensor:
    """Uniforms in [0, 1) that depend only on (seed, id, column): counter-based randomness."""
    ids = ids.long().view(-1, 1)
    cols = torch.arange(n, device=ids.device).view(1, -1)
    key = _hash32(torch.full_like(ids, seed & 0xFFFFFFFF) ^ _hash32(torch.full_like(ids, seed >> 32)))
    v = _hash32(key ^ _hash32(ids * n + cols))
    return v.double().div(2.0**32).float()


def random_uniforms(batch: int, generator: torch.Generator) -> torch.Tensor:
    """Fresh uniforms for `batch` augmentations from `generator` (CPU)."""
    return torch.rand(batch, N_UNIFORMS, generator=generator)
