"""What a study asks beyond its cells: sweeps (a variant differs from its base in one hyperparameter), the regime
figure's size sweep, and the audit plan."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodedp.config.read import ConfigError
from nodedp.config.variants import resolve_method


def check_sweeps(config: Mapping[str, Any], study: str, spec: Mapping[str, Any]) -> None:
    """A sweep's hyperparameter must be numeric in at least two of the study's private methods' settings."""
    import dataclasses

    from nodedp.contract.registry import get_method

    for parameter in spec.get("sweeps") or []:
        values = set()
        fields: set[str] = set()
        for method in spec["methods"]:
            base, hparams = resolve_method(config, method)
            if not get_method(base).private:
                continue
            parsed = get_method(base).parse_hparams(hparams)
            fields |= {f.name for f in dataclasses.fields(parsed)}
            value = getattr(parsed, parameter, None)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                values.add(value)
        if len(values) < 2:
            raise ConfigError(
                f"studies.{study}.sweeps: {parameter!r} takes {len(values)} numeric value(s) over the "
                f"study's private methods; a sweep needs variants setting it to at least two values "
                f"(their hyperparameters: {sorted(fields)})"
            )


def regime_study(config: Mapping[str, Any], study: str) -> str | None:
    """The study whose runs feed ``study``'s regime figure: ``regime: true`` its own, ``regime: <study>`` that one's
    (a headline study drawing the size sweep of another); None without ``regime``."""
    value = config["studies"][study].get("regime")
    if value is None or value is False:
        return None
    return study if value is True else str(value)


def check_regime(config: Mapping[str, Any], study: str) -> None:
    source = regime_study(config, study)
    if source is None:
        return
    if source not in config["studies"]:
        raise ConfigError(
            f"studies.{study}.regime: no study {source!r} to draw from; true (this study) or one of "
            f"{sorted(config['studies'])}"
        )
    methods = config["studies"][source]["methods"]
    if "dp-mlp" not in methods:
        raise ConfigError(
            f"studies.{study}.regime: the figure is each graph method minus dp-mlp, but study {source!r} has no dp-mlp "
            f"(its methods: {methods})"
        )


def audit_plan(config: Mapping[str, Any], study: str) -> dict[str, Any]:
    """A study's ``audit:`` block with its defaults filled in: datasets, methods (its node-level private ones,
    reference runs included), epsilons, seeds (its first), canaries (0: the default count), confidence (0.95).
    Raises ConfigError naming the field when an audited dataset or method is not the study's, or a method has no
    node-level ε to audit (the canaries are nodes)."""
    from nodedp.contract.registry import get_method

    spec = config["studies"][study]
    audit = spec.get("audit") or {}
    field = f"studies.{study}.audit"

    def node_private(name: str) -> bool:
        info = get_method(resolve_method(config, name)[0])
        return info.private and info.level == "node"

    plan: dict[str, Any] = {
        "datasets": list(audit.get("datasets") or spec["datasets"]),
        "methods": list(audit.get("methods") or [m for m in spec["methods"] if node_private(m)]),
        "epsilons": list(audit.get("epsilons") or spec["epsilons"]),
        "seeds": list(audit.get("seeds") or spec["seeds"][:1]),
        "canaries": int(audit.get("canaries", 0)),
        "confidence": float(audit.get("confidence", 0.95)),
    }
    for key in ("datasets", "methods"):
        foreign = [v for v in plan[key] if v not in spec[key]]
        if foreign:
            raise ConfigError(f"{field}.{key}: {foreign} not among the study's {key} {spec[key]}")
    bad = [m for m in plan["methods"] if not node_private(m)]
    if bad:
        raise ConfigError(
            f"{field}.methods: {bad} have no node-level ε to audit; audited: node-level private "
            f"methods of the study ({[m for m in spec['methods'] if node_private(m)]})"
        )
    if not plan["methods"]:
        raise ConfigError(f"{field}: the study has no node-level private method to audit")
    if plan["canaries"] and plan["canaries"] < 20:
        raise ConfigError(
            f"{field}.canaries: {plan['canaries']} is too few for a bound (at least 20, or 0 for the default)"
        )
    return plan
