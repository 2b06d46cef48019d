from __future__ import annotations

import pytest

from nodedp.config.check import check_config
from nodedp.config.read import ConfigError


def sweep_grid(sweeps: list[str], *methods: str) -> dict:
    return {
        "studies": {
            "s": {
                "datasets": ["csbm-tiny"],
                "methods": ["mlp", *methods],
                "epsilons": [1],
                "seeds": [0],
                "sweeps": sweeps,
            }
        },
        "methods": {
            "dp-mlp": {"batch_size": 16, "hidden_dim": 64},
            "dp-mlp-wide": {"base": "dp-mlp", "hidden_dim": 96},
            "mlp": {"hidden_dim": 128},
        },
    }


def test_a_sweep_over_two_private_values_passes():
    check_config(sweep_grid(["hidden_dim"], "dp-mlp", "dp-mlp-wide"))
    check_config(sweep_grid([], "dp-mlp"))  # no sweep: nothing to check


@pytest.mark.parametrize(
    ("sweeps", "methods", "message"),
    [
        # the non-private mlp's 128 is no second value: a sweep is over the private methods
        (["hidden_dim"], ("dp-mlp",), r"'hidden_dim' takes 1 numeric value\(s\)"),
        (["no_such"], ("dp-mlp", "dp-mlp-wide"), r"'no_such' takes 0 numeric value\(s\).*'hidden_dim'"),
        (["hidden_dim", "optimizer"], ("dp-mlp", "dp-mlp-wide"), r"'optimizer' takes 0 numeric"),
    ],
)
def test_a_sweep_without_two_values_names_the_study(sweeps, methods, message):
    with pytest.raises(ConfigError, match=rf"^studies\.s\.sweeps: {message}"):
        check_config(sweep_grid(sweeps, *methods))


@pytest.mark.parametrize(
    ("regime", "message"),
    [
        ("nope", r"^studies\.t\.regime: no study 'nope' to draw from; true \(this study\) or one of \['s', 't'\]"),
        ("t", r"^studies\.t\.regime: .* study 't' has no dp-mlp \(its methods: \['mlp'\]\)"),
    ],
)
def test_a_regime_figure_needs_a_study_with_dp_mlp(regime, message):
    grid = sweep_grid([], "dp-mlp")
    grid["studies"]["t"] = {**grid["studies"]["s"], "methods": ["mlp"], "regime": regime}
    with pytest.raises(ConfigError, match=message):
        check_config(grid)
    grid["studies"]["t"]["regime"] = "s"  # the other study has dp-mlp: fine
    check_config(grid)
