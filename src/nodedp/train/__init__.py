"""The one training engine: per-example clipping, samplers, the DP-SGD loop, evaluation, seeding."""

from __future__ import annotations

from nodedp.train.clip_thresholds import percentile_clip_norms
from nodedp.train.evaluate import evaluate, majority_class_accuracy, metrics_from_logits
from nodedp.train.loop import (
    OptimConfig,
    PrivacyConfig,
    TrainStats,
    build_optimizer,
    total_clip_norm,
    train_model,
)
from nodedp.train.per_sample import PerSampleGradients, trainable_layer_names
from nodedp.train.sampling import Batches, fixed_size_batches, full_batches, poisson_batches, shuffled_epochs
from nodedp.train.seeding import make_generator, resolve_device, seed_everything

__all__ = [
    "Batches",
    "OptimConfig",
    "PerSampleGradients",
    "PrivacyConfig",
    "TrainStats",
    "build_optimizer",
    "evaluate",
    "fixed_size_batches",
    "full_batches",
    "majority_class_accuracy",
    "make_generator",
    "metrics_from_logits",
    "percentile_clip_norms",
    "poisson_batches",
    "resolve_device",
    "seed_everything",
    "shuffled_epochs",
    "total_clip_norm",
    "train_model",
    "trainable_layer_names",
]
