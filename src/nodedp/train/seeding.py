"""Seeds and devices."""

from __future__ import annotations

import random

import numpy as np
import torch


def make_generator(seed: int, *, device: torch.device | str = "cpu") -> torch.Generator:
    """A fresh generator on ``device`` seeded with ``seed``."""
    return torch.Generator(device=device).manual_seed(seed)


def seed_everything(seed: int) -> torch.Generator:
    """Seed Python, NumPy and torch (CPU and CUDA) and return a CPU generator for ``seed``.

    Global seeding covers what cannot take a generator (dropout, parameter
    initialisation). cuDNN is made deterministic; ``torch.use_deterministic_algorithms``
    is left off because it refuses common CUDA scatter ops.
    """
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    return make_generator(seed)


def resolve_device(name: str = "auto") -> torch.device:
    """``"auto"`` is CUDA when available, else CPU; other names are checked to exist."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} requested but CUDA is not available; use 'cpu' or 'auto'")
    return device
