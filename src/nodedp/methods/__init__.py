"""Methods: one file per family, each registering its ids on import."""

from nodedp.methods import dp_gnn, dpar, dpdgc, edgerand, gap, gnn, mlp, nip_gnn, progap  # noqa: F401  (registration)
from nodedp.methods.base import MethodInfo, RunInputs, RunResult, RunSpec
from nodedp.methods.registry import (
    UnknownMethodError,
    get_method,
    method_names,
    register_method,
)

__all__ = [
    "MethodInfo",
    "RunInputs",
    "RunResult",
    "RunSpec",
    "UnknownMethodError",
    "get_method",
    "method_names",
    "register_method",
]
