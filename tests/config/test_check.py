from __future__ import annotations

from nodedp.config.check import check_config


def test_the_shipped_config_passes(config):
    check_config(config)
