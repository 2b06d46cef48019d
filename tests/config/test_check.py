from __future__ import annotations

from nodedp.config.check import check_config


def test_the_shipped_config_passes(config):
    check_config(config)


def test_an_accountant_a_methods_pair_has_no_curve_for_is_refused_naming_the_field():
    import pytest

    from nodedp.config.read import ConfigError
    from tests.config._grids import tiny_grid

    grid = tiny_grid(**{"sparse-sage": {"batch_size": 16}, "heterpoisson": {"batch_size": 16}})
    check_config({**grid, "privacy": {"accountant": "pld"}})
    with pytest.raises(ConfigError, match=r"methods\.sparse-sage: method 'sparse-sage' is accounted by 'pld' only"):
        check_config({**grid, "privacy": {"accountant": "rdp"}})
